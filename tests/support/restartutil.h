// SPDX-License-Identifier: GPL-2.0-or-later
// Helpers for the tests of a restart in place that goes wrong
// (tst_restart, tst_systemd): the test as the subreaper that a dead image's
// orphans go to, a "binary" replaced as a package manager does, and the end
// of a guardian that took over (no QProcess of ours).
#pragma once

#include "servertestutil.h"

#include <QDir>
#include <QFile>
#include <QTest>

#include <csignal>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

namespace ServerTest {

/// Makes the test process a child subreaper (prctl(2)) while it lives, as
/// systemd --user or init is for a real Tether: the orphans of a process
/// image that died (its shells, its restart guardian) become our children.
/// The destructor reaps those left as zombies, by pid (never wait(-1), which
/// would take QProcess's children), and stops being a subreaper.
struct Subreaper {
    Subreaper() { ok = ::prctl(PR_SET_CHILD_SUBREAPER, 1) == 0; }
    ~Subreaper()
    {
        ::prctl(PR_SET_CHILD_SUBREAPER, 0);
        reapZombies();
    }
    static void reapZombies()
    {
        const QByteArray self = QByteArray::number(::getpid());
        for (const QString &e : QDir(QStringLiteral("/proc")).entryList(QDir::Dirs | QDir::NoDotAndDotDot)) {
            const QByteArray st = readFile(QStringLiteral("/proc/%1/stat").arg(e));
            const QList<QByteArray> f = st.mid(st.lastIndexOf(')') + 2).split(' ');
            if (f.size() > 1 && f.at(0) == "Z" && f.at(1) == self)
                ::waitpid(pid_t(e.toInt()), nullptr, WNOHANG);
        }
    }
    bool ok = false;
};

/// Parent pid of `pid` (-1 when it is gone).
inline qint64 parentOf(qint64 pid)
{
    const QByteArray st = readFile(QStringLiteral("/proc/%1/stat").arg(pid));
    const QList<QByteArray> f = st.mid(st.lastIndexOf(')') + 2).split(' ');
    return f.size() > 1 ? f.at(1).toLongLong() : -1;
}

/// Makes `path` an executable `#!/bin/sh` script running `body`.
inline void writeScript(const QString &path, const QByteArray &body)
{
    QFile f(path + QStringLiteral(".new"));
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write("#!/bin/sh\n" + body + "\n");
    f.close();
    QCOMPARE(::chmod(QFile::encodeName(f.fileName()).constData(), 0755), 0);
    // Replaced by rename, as a package manager does: a running script is never rewritten.
    QCOMPARE(::rename(QFile::encodeName(f.fileName()).constData(), QFile::encodeName(path).constData()), 0);
}

/// Makes `path` a file that access(2) finds executable but execve(2)
/// refuses (ENOEXEC: no #!, not ELF): a restart that fails at the exec.
inline void writeNotAProgram(const QString &path)
{
    QFile f(path);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write("this is not a program\n");
    f.close();
    QCOMPARE(::chmod(QFile::encodeName(path).constData(), 0755), 0);
}

/// Ends a guardian that took over (it is no QProcess: SIGTERM, then reaped
/// by pid as the subreaper's child) whatever happens to the test.
struct GuardianStop {
    qint64 pid;
    ~GuardianStop()
    {
        if (pid <= 0 || ::kill(pid_t(pid), SIGTERM) != 0)
            return;
        const bool reaped = QTest::qWaitFor([this]() { return ::waitpid(pid_t(pid), nullptr, WNOHANG) == pid_t(pid); }, 15000);
        if (!reaped)
            qWarning("the guardian %lld did not end", pid);
    }
};

} // namespace ServerTest
