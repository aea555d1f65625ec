// SPDX-License-Identifier: GPL-2.0-or-later
#include "procinfo.h"

#include <QFile>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

namespace Tether {

QString processName(pid_t pid)
{
    if (pid <= 0)
        return QString();
    QFile f(QStringLiteral("/proc/%1/comm").arg(pid));
    if (!f.open(QIODevice::ReadOnly))
        return QString();
    return QString::fromUtf8(f.read(64)).trimmed();
}

QStringList processCommandLine(pid_t pid)
{
    QStringList out;
    if (pid <= 0)
        return out;
    QFile f(QStringLiteral("/proc/%1/cmdline").arg(pid));
    if (!f.open(QIODevice::ReadOnly))
        return out;
    QByteArray all = f.read(128 * 1024);
    if (all.endsWith('\0'))
        all.chop(1);
    if (all.isEmpty())
        return out;
    for (const QByteArray &a : all.split('\0'))
        out.append(QFile::decodeName(a));
    return out;
}

QString processCwd(pid_t pid)
{
    if (pid <= 0)
        return QString();
    char path[64];
    std::snprintf(path, sizeof path, "/proc/%d/cwd", int(pid));
    char buf[4096];
    const ssize_t n = ::readlink(path, buf, sizeof buf - 1);
    return n > 0 ? QFile::decodeName(QByteArray(buf, int(n))) : QString();
}

namespace {

/// Calls f(pid, state, session) for every process in /proc.
template<typename F>
void forEachProcess(F f)
{
    DIR *dir = ::opendir("/proc");
    if (!dir)
        return;
    while (const dirent *e = ::readdir(dir)) {
        const char *name = e->d_name;
        if (*name < '1' || *name > '9')
            continue;
        char *end = nullptr;
        const long pid = std::strtol(name, &end, 10);
        if (*end)
            continue;
        char path[64];
        std::snprintf(path, sizeof path, "/proc/%ld/stat", pid);
        const int fd = ::open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
            continue;
        char buf[512];
        const ssize_t n = ::read(fd, buf, sizeof buf - 1);
        ::close(fd);
        if (n <= 0)
            continue;
        buf[n] = 0;
        // "pid (comm) state ppid pgrp session ...": comm may contain spaces
        // and parentheses, so parse after the last ')'.
        const char *close = std::strrchr(buf, ')');
        if (!close)
            continue;
        char state = 0;
        int ppid = 0, pgrp = 0, session = 0;
        if (std::sscanf(close + 1, " %c %d %d %d", &state, &ppid, &pgrp, &session) != 4)
            continue;
        f(pid_t(pid), state, pid_t(session));
    }
    ::closedir(dir);
}

bool isZombie(char state)
{
    return state == 'Z' || state == 'X' || state == 'x';
}

} // namespace

QList<pid_t> processesInSession(pid_t sid, bool includeZombies)
{
    QList<pid_t> result;
    if (sid <= 0)
        return result;
    forEachProcess([&](pid_t pid, char state, pid_t session) {
        if (session == sid && (includeZombies || !isZombie(state)))
            result.append(pid);
    });
    return result;
}

QHash<pid_t, QList<pid_t>> processesBySession()
{
    QHash<pid_t, QList<pid_t>> result;
    forEachProcess([&](pid_t pid, char state, pid_t session) {
        if (session > 0 && !isZombie(state))
            result[session].append(pid);
    });
    return result;
}

} // namespace Tether
