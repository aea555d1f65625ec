// SPDX-License-Identifier: GPL-2.0-or-later
// A real systemd user manager for a test (tests/support/usermanager.sh: its
// own mount namespace and cgroup, so it runs where PID 1 is not systemd and
// touches nothing else), with `systemctl --user` against it. Where it cannot
// run (not root, no systemd, no cgroup hierarchy to delegate) start() says
// why, for a QSKIP.
#pragma once

#include <QDir>
#include <QElapsedTimer>
#include <QFile>
#include <QProcess>
#include <QProcessEnvironment>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QTest>

#include <csignal>
#include <unistd.h>

namespace TestUtil {

class UserManager
{
public:
    /// Outcome of one `systemctl --user ARGS`: exit status (-1 when it did
    /// not end in 60 s) and its output.
    struct Run {
        int code = -1;
        QByteArray out, err;
    };

    UserManager()
    {
        m_name = QStringLiteral("tether-test-%1").arg(::getpid());
        for (const char *d : {"run", "config/systemd/user"})
            QDir(m_dir.path()).mkpath(QString::fromLatin1(d));
        QFile::setPermissions(runtimeDir(), QFile::ReadOwner | QFile::WriteOwner | QFile::ExeOwner);
    }
    ~UserManager()
    {
        if (m_proc.state() != QProcess::NotRunning) {
            systemctl({QStringLiteral("exit")});
            if (!m_proc.waitForFinished(30000)) {
                m_proc.terminate();
                if (!m_proc.waitForFinished(15000)) {
                    m_proc.kill();
                    m_proc.waitForFinished(5000);
                }
            }
        }
        removeCgroups(m_name);
        if (QTest::currentTestFailed())
            std::fprintf(stderr, "systemd --user said:\n%s\n", readLog().constData());
    }
    UserManager(const UserManager &) = delete;
    UserManager &operator=(const UserManager &) = delete;

    /// Starts the manager and waits (30 s at most) until systemctl reaches it.
    /// False with *why when it cannot run here (the test skips) or did not come up.
    bool start(QString *why)
    {
        const QString script = QStringLiteral(TETHER_SOURCE_DIR "/tests/support/usermanager.sh");
        if (QStandardPaths::findExecutable(QStringLiteral("systemctl")).isEmpty()) {
            *why = QStringLiteral("systemctl is not installed");
            return false;
        }
        // Runs killed before they could remove theirs (the manager died
        // with them: setpriv --pdeathsig), this one's included.
        for (const char *h : {"/sys/fs/cgroup/systemd", "/sys/fs/cgroup/unified", "/sys/fs/cgroup"})
            for (const QString &d : QDir(QLatin1String(h)).entryList({QStringLiteral("tether-test-*")}, QDir::Dirs))
                if (::kill(pid_t(d.mid(12).toInt()), 0) != 0 || d == m_name)
                    removeCgroups(d);
        m_proc.setProcessChannelMode(QProcess::MergedChannels);
        m_proc.start(script, {m_name, runtimeDir(), configDir(), logFile()});
        if (!m_proc.waitForStarted(5000)) {
            *why = QStringLiteral("cannot run %1").arg(script);
            return false;
        }
        QElapsedTimer t;
        t.start();
        while (t.elapsed() < 30000) {
            if (m_proc.state() == QProcess::NotRunning) {
                const QByteArray said = m_proc.readAll().trimmed();
                *why = m_proc.exitCode() == 77 ? QString::fromLocal8Bit(said)
                                               : QStringLiteral("the user manager ended (%1): %2\n%3")
                                                     .arg(m_proc.exitCode()).arg(QString::fromLocal8Bit(said), QString::fromLocal8Bit(readLog()));
                m_skip = m_proc.exitCode() == 77;
                return false;
            }
            if (QFile::exists(runtimeDir() + QStringLiteral("/systemd/private"))
                && systemctl({QStringLiteral("is-system-running"), QStringLiteral("--wait")}).code >= 0)
                return true;
            QTest::qWait(100);
        }
        *why = QStringLiteral("the user manager did not come up in 30 s:\n") + QString::fromLocal8Bit(readLog());
        return false;
    }
    /// Whether start() failed because no manager can run here (skip), not by a defect.
    bool cannotRunHere() const { return m_skip; }

    /// `systemctl --user ARGS` against this manager.
    Run systemctl(const QStringList &args) const
    {
        QProcess p;
        QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
        env.insert(QStringLiteral("XDG_RUNTIME_DIR"), runtimeDir());
        env.remove(QStringLiteral("DBUS_SESSION_BUS_ADDRESS"));
        p.setProcessEnvironment(env);
        p.start(QStringLiteral("systemctl"), QStringList{QStringLiteral("--user"), QStringLiteral("--no-pager")} + args);
        Run r;
        if (!p.waitForStarted(5000))
            return r;
        if (!p.waitForFinished(60000)) {
            p.kill();
            p.waitForFinished(5000);
            return r;
        }
        r.code = p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1;
        r.out = p.readAllStandardOutput();
        r.err = p.readAllStandardError();
        return r;
    }
    /// One property of `unit` (`systemctl show -p NAME --value`), e.g. "MainPID".
    QByteArray property(const QString &unit, const QString &name) const
    {
        return systemctl({QStringLiteral("show"), unit, QStringLiteral("-p"), name, QStringLiteral("--value")}).out.trimmed();
    }

    /// Where units go: $XDG_CONFIG_HOME/systemd/user of the manager.
    QString unitDir() const { return m_dir.path() + QStringLiteral("/config/systemd/user"); }
    QString runtimeDir() const { return m_dir.path() + QStringLiteral("/run"); }
    /// The processes in `unit`'s cgroup (name=systemd or unified hierarchy).
    QList<qint64> processesOf(const QString &unit) const
    {
        const QByteArray cg = property(unit, QStringLiteral("ControlGroup"));
        QList<qint64> pids;
        for (const char *h : {"/sys/fs/cgroup/systemd", "/sys/fs/cgroup/unified", "/sys/fs/cgroup"}) {
            QFile f(QLatin1String(h) + QString::fromUtf8(cg) + QStringLiteral("/cgroup.procs"));
            if (cg.isEmpty() || !f.open(QIODevice::ReadOnly))
                continue;
            for (const QByteArray &l : f.readAll().split('\n'))
                if (!l.isEmpty())
                    pids.append(l.toLongLong());
            break;
        }
        return pids;
    }
    /// For a failure message: `unit`'s state as systemd sees it, and each
    /// process of its cgroup (pid, state, where it waits, command line).
    QByteArray describe(const QString &unit) const
    {
        QByteArray out = systemctl({QStringLiteral("show"), unit, QStringLiteral("-p"),
                                    QStringLiteral("ActiveState,SubState,Result,ReloadResult,MainPID,ExecMainPID,ExecMainStatus,NRestarts,StatusText")})
                             .out;
        for (const qint64 pid : processesOf(unit)) {
            const auto read = [pid](const char *what) {
                QFile f(QStringLiteral("/proc/%1/%2").arg(pid).arg(QLatin1String(what)));
                return f.open(QIODevice::ReadOnly) ? f.readAll() : QByteArray();
            };
            QByteArray state;
            for (const QByteArray &l : read("status").split('\n'))
                if (l.startsWith("State:") || l.startsWith("PPid:") || l.startsWith("SigBlk:"))
                    state += l.simplified() + ' ';
            out += QByteArray::number(pid) + ": " + state + "wchan " + read("wchan") + " | "
                + read("cmdline").replace('\0', ' ').left(120) + '\n';
        }
        return out;
    }
    QByteArray readLog() const
    {
        QFile f(logFile());
        return f.open(QIODevice::ReadOnly) ? f.readAll() : QByteArray();
    }

private:
    QString configDir() const { return m_dir.path() + QStringLiteral("/config"); }
    QString logFile() const { return m_dir.path() + QStringLiteral("/manager.log"); }
    /// Removes the cgroup directories `name` of a manager, deepest first
    /// (rmdir: only those left empty, i.e. once the manager has ended).
    static void removeCgroups(const QString &name)
    {
        for (const char *h : {"/sys/fs/cgroup/systemd/", "/sys/fs/cgroup/unified/", "/sys/fs/cgroup/"}) {
            const QString root = QLatin1String(h) + name;
            if (!QFileInfo(root).isDir())
                continue;
            QStringList dirs{root};
            for (int i = 0; i < dirs.size(); ++i)
                for (const QString &d : QDir(dirs.at(i)).entryList(QDir::Dirs | QDir::NoDotAndDotDot))
                    dirs.append(dirs.at(i) + QLatin1Char('/') + d);
            for (int i = int(dirs.size()) - 1; i >= 0; --i)
                ::rmdir(QFile::encodeName(dirs.at(i)).constData());
        }
    }

    QTemporaryDir m_dir;
    QString m_name;
    QProcess m_proc;
    bool m_skip = false;
};

} // namespace TestUtil
