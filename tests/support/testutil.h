// SPDX-License-Identifier: GPL-2.0-or-later
// Small helpers shared by the tests.
#pragma once

// A test of a layer at or above the engine gets the spawn helpers.
#if __has_include("ptyprocess.h")
#include "ptyprocess.h"
#define TETHER_TEST_HAVE_ENGINE 1
#endif

#include <QDir>
#include <QFile>
#include <QProcessEnvironment>
#include <QString>
#include <QTest>
#include <cerrno>
#include <poll.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace TestUtil {

#ifdef TETHER_TEST_HAVE_ENGINE
/// Options running `script` with /bin/sh -c.
inline Tether::SpawnOptions shell(const QString &script)
{
    Tether::SpawnOptions o;
    o.argv = QStringList{QStringLiteral("/bin/sh"), QStringLiteral("-c"), script};
    return o;
}
#endif

/// Saves an environment variable and puts it back (or unsets it again) when
/// destroyed, so a test can change it freely.
class EnvGuard
{
public:
    explicit EnvGuard(const char *name)
        : m_name(name)
        , m_set(qEnvironmentVariableIsSet(name))
        , m_value(qgetenv(name))
    {
    }
    ~EnvGuard()
    {
        if (m_set)
            qputenv(m_name, m_value);
        else
            qunsetenv(m_name);
    }
    EnvGuard(const EnvGuard &) = delete;
    EnvGuard &operator=(const EnvGuard &) = delete;

private:
    const char *m_name;
    bool m_set;
    QByteArray m_value;
};

/// Makes a SIGSEGV that a test sends on purpose (to stand for a crash) do
/// what the signal's default action does: end the process. Under
/// AddressSanitizer (build-asan) its SIGSEGV handler would catch the signal,
/// write a report and exit(1), a report that fails the run
/// (tests/sanitizers/run.sh). Adds handle_segv=0 to ASAN_OPTIONS in `env`
/// (kept for every process started with it); a real fault still kills the
/// process, without a report. No effect in a tree built without ASan.
inline void leaveSigsegvToTheKernel(QProcessEnvironment &env)
{
    const QString asan = env.value(QStringLiteral("ASAN_OPTIONS"));
    env.insert(QStringLiteral("ASAN_OPTIONS"),
               asan + QLatin1String(asan.isEmpty() ? "" : ":") + QStringLiteral("handle_segv=0"));
}

/// Number of open file descriptors of this process (entries of /proc/self/fd).
inline int openFdCount()
{
    return int(QDir(QStringLiteral("/proc/self/fd")).entryList(QDir::Files | QDir::System | QDir::NoDotAndDotDot).size());
}

/// State letter of /proc/<pid>/stat ('Z' zombie, 'S', 'R', ...), or 0 if gone.
inline char processState(pid_t pid)
{
    QFile f(QStringLiteral("/proc/%1/stat").arg(pid));
    if (!f.open(QIODevice::ReadOnly))
        return 0;
    const QByteArray s = f.readAll();
    const int close = s.lastIndexOf(')');
    return close > 0 && close + 2 < s.size() ? s.at(close + 2) : 0;
}

/// Watches one process through a pidfd (pidfd_open(2), Linux 5.3), for
/// processes that are not our children (background jobs of a session). A pid
/// number can be reused once its process is reaped -- with pid_max 32768 and
/// CI building and testing in a fresh PID namespace, numbers wrap -- so
/// "/proc/<pid> is gone or a zombie" can wrongly read as "still running"
/// (seen in the CI mimic). A pidfd always means the process it was opened for.
class ProcessWatch
{
public:
    explicit ProcessWatch(pid_t pid)
        : m_pid(pid)
        , m_fd(int(::syscall(SYS_pidfd_open, pid, 0)))
        , m_goneAtOpen(m_fd < 0 && errno == ESRCH)
    {
    }
    ~ProcessWatch() { close(); }
    ProcessWatch(const ProcessWatch &) = delete;
    ProcessWatch &operator=(const ProcessWatch &) = delete;
    /// True once the process has exited (zombie or reaped). Without pidfd
    /// support (kernel < 5.3) it falls back to /proc, reuse and all.
    bool exited() const
    {
        if (m_goneAtOpen)
            return true;
        if (m_fd < 0)
            return processState(m_pid) == 0 || processState(m_pid) == 'Z';
        struct pollfd p = {m_fd, POLLIN, 0};
        return ::poll(&p, 1, 0) == 1;
    }
    /// Closes the pidfd early (before an fd-count comparison).
    void close()
    {
        if (m_fd >= 0)
            ::close(m_fd);
        m_fd = -1;
    }

private:
    pid_t m_pid;
    int m_fd;
    bool m_goneAtOpen;
};

/// Zombie children of this process (their /proc stat has state Z and ppid = us),
/// each printed with qDebug (a zombie seen for an instant, e.g. a leader just
/// killed by ~PtyProcess before the reaper's next event-loop pass, prints too).
/// Run as PID 1 of a PID namespace (`unshare --pid --fork ./tst_x`), a test is
/// also the parent of every orphan in the namespace: a session member whose
/// shell died is reparented to it, and only an init reaps such strangers (we
/// never waitpid(-1)). There only our own spawned children count: session
/// leaders (pid = session id, /proc stat field 6), which every PtyProcess
/// child is and no orphaned member can be.
inline int zombieChildren()
{
    int n = 0;
    const bool weAreInit = getpid() == 1;
    const QByteArray me = QByteArray::number(qint64(getpid()));
    const auto entries = QDir(QStringLiteral("/proc")).entryList(QDir::Dirs | QDir::NoDotAndDotDot);
    for (const QString &e : entries) {
        bool ok = false;
        e.toInt(&ok);
        if (!ok)
            continue;
        QFile f(QStringLiteral("/proc/%1/stat").arg(e));
        if (!f.open(QIODevice::ReadOnly))
            continue;
        const QByteArray s = f.readAll();
        const int close = s.lastIndexOf(')');
        // After "pid (comm) ": state ppid pgrp session ...
        const QList<QByteArray> fields = s.mid(close + 2).split(' ');
        if (fields.size() < 4 || fields.at(0) != "Z" || fields.at(1) != me)
            continue;
        if (weAreInit && fields.at(3) != e.toLatin1()) {
            qDebug("orphan zombie (not ours; we are PID 1): %s", s.constData());
            continue;
        }
        qDebug("zombie child: %s", s.constData());
        ++n;
    }
    return n;
}

} // namespace TestUtil
