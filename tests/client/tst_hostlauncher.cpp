// SPDX-License-Identifier: GPL-2.0-or-later
// HostLauncher: finding this user's Tether host, or starting a real `tether
// serve` that outlives its launcher (its own process session, not our
// child, stdio to the log); two launchers at once give one host (HostLock);
// a host that cannot start is reported with what it said.
#include "apiclient.h"
#include "hostlauncher.h"
#include "runtimefile.h"
#include "serveprocess.h"
#include "testutil.h"

#include <QJsonObject>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTest>

#include <csignal>
#include <memory>
#include <unistd.h>

using namespace Tether;
using ServerTest::tetherBinary;

Q_DECLARE_METATYPE(Tether::ServerEndpoint)

namespace {
/// Field 4 of /proc/PID/stat (the parent), -1 when unreadable.
qint64 parentOf(qint64 pid)
{
    QFile f(QStringLiteral("/proc/%1/stat").arg(pid));
    if (!f.open(QIODevice::ReadOnly))
        return -1;
    const QByteArray st = f.readAll();
    const QList<QByteArray> rest = st.mid(st.lastIndexOf(')') + 2).split(' ');
    return rest.size() > 1 ? rest.at(1).toLongLong() : -1;
}

QString fdTarget(qint64 pid, int fd)
{
    return QFileInfo(QStringLiteral("/proc/%1/fd/%2").arg(pid).arg(fd)).symLinkTarget();
}

bool gone(qint64 pid)
{
    const char st = TestUtil::processState(pid_t(pid));
    return st == 0 || st == 'Z';
}
} // namespace

class TestHostLauncher : public QObject
{
    Q_OBJECT
private:
    QTemporaryDir m_dir;
    std::unique_ptr<TestUtil::EnvGuard> m_guards[5];
    QList<qint64> m_hosts; ///< hosts to end in cleanup()

    /// Ends every host this test made (they are no children of ours).
    void endHosts()
    {
        const QJsonObject rt = RuntimeFile::read();
        if (const qint64 pid = qint64(rt.value(QStringLiteral("pid")).toDouble()))
            m_hosts.append(pid);
        for (const qint64 pid : std::as_const(m_hosts))
            if (!gone(pid))
                ::kill(pid_t(pid), SIGTERM);
        for (const qint64 pid : std::as_const(m_hosts))
            QTRY_VERIFY_WITH_TIMEOUT(gone(pid), 20000);
        m_hosts.clear();
    }

    void setUpLauncher(HostLauncher *l)
    {
        l->setProgram(tetherBinary());
        l->setArguments({QStringLiteral("--port"), QStringLiteral("0")});
        l->setTimeout(30000);
    }

private Q_SLOTS:
    void initTestCase()
    {
        if (tetherBinary().isEmpty() || !QFile::exists(tetherBinary()))
            QSKIP("the tether executable is not built");
        qRegisterMetaType<Tether::ServerEndpoint>();
        QVERIFY(m_dir.isValid());
        const char *names[] = {"XDG_RUNTIME_DIR", "XDG_CONFIG_HOME", "XDG_STATE_HOME", "HOME", "QT_LOGGING_RULES"};
        for (int i = 0; i < 5; ++i)
            m_guards[i].reset(new TestUtil::EnvGuard(names[i]));
        for (const char *d : {"run", "config", "state", "home"})
            QDir(m_dir.path()).mkpath(QString::fromLatin1(d));
        QFile::setPermissions(m_dir.filePath(QStringLiteral("run")), QFile::ReadOwner | QFile::WriteOwner | QFile::ExeOwner);
        qputenv("XDG_RUNTIME_DIR", QFile::encodeName(m_dir.filePath(QStringLiteral("run"))));
        qputenv("XDG_CONFIG_HOME", QFile::encodeName(m_dir.filePath(QStringLiteral("config"))));
        qputenv("XDG_STATE_HOME", QFile::encodeName(m_dir.filePath(QStringLiteral("state"))));
        qputenv("HOME", QFile::encodeName(m_dir.filePath(QStringLiteral("home"))));
        qputenv("QT_LOGGING_RULES", "tether.*.debug=false;tether.*.info=false");
    }
    void cleanup() { endHosts(); }

    void startsAHostThatOutlivesItsLauncher()
    {
        HostLauncher launcher;
        setUpLauncher(&launcher);
        QSignalSpy ready(&launcher, &HostLauncher::ready);
        QSignalSpy failed(&launcher, &HostLauncher::failed);
        launcher.start();
        QTRY_VERIFY_WITH_TIMEOUT(!ready.isEmpty() || !failed.isEmpty(), 30000);
        QVERIFY2(failed.isEmpty(), failed.isEmpty() ? "" : qPrintable(failed.first().first().toString()));
        QCOMPARE(ready.first().at(1).toBool(), true);
        const qint64 pid = launcher.startedPid();
        QVERIFY(pid > 0);
        m_hosts.append(pid);
        QCOMPARE(qint64(RuntimeFile::read().value(QStringLiteral("pid")).toDouble()), pid);
        // What makes it outlive us: its own process session (a SIGHUP to
        // ours, a kill of our process group miss it), not our child (our
        // death, even SIGKILL, is nothing to it), no terminal or display of
        // ours in its stdio.
        // (A session of its own, made by the middle process of the double
        // fork, so the host is no session leader and can never acquire a
        // controlling terminal: daemon(3)'s shape.)
        QVERIFY(::getsid(pid_t(pid)) > 0);
        QVERIFY(::getsid(pid_t(pid)) != ::getsid(0));
        QVERIFY(::getpgid(pid_t(pid)) != ::getpgid(0));
        QVERIFY(parentOf(pid) != qint64(::getpid()));
        QCOMPARE(fdTarget(pid, 0), QStringLiteral("/dev/null"));
        const QString log = QFileInfo(HostLauncher::logPath()).canonicalFilePath();
        QCOMPARE(log, m_dir.filePath(QStringLiteral("state/tether/host.log")));
        QCOMPARE(fdTarget(pid, 1), log);
        QCOMPARE(fdTarget(pid, 2), log);
        // It serves at the endpoint given.
        const ServerEndpoint ep = ready.first().first().value<ServerEndpoint>();
        ApiClient api(ep);
        int status = 0;
        api.get(QStringLiteral("api/sessions"), [&](const ApiReply &r) { status = r.status; });
        QTRY_COMPARE(status, 200);

        // A second launcher finds it and starts nothing.
        HostLauncher again;
        setUpLauncher(&again);
        QSignalSpy ready2(&again, &HostLauncher::ready);
        again.start();
        QTRY_COMPARE(ready2.size(), 1);
        QCOMPARE(ready2.first().at(1).toBool(), false);
        QCOMPARE(again.startedPid(), qint64(0));
        QCOMPARE(ready2.first().first().value<ServerEndpoint>().url, ep.url);
    }

    void twoLaunchesAtOnceGiveOneHost()
    {
        HostLauncher a;
        HostLauncher b;
        setUpLauncher(&a);
        setUpLauncher(&b);
        QSignalSpy readyA(&a, &HostLauncher::ready);
        QSignalSpy readyB(&b, &HostLauncher::ready);
        QSignalSpy failedA(&a, &HostLauncher::failed);
        QSignalSpy failedB(&b, &HostLauncher::failed);
        a.start();
        b.start();
        QVERIFY(a.startedPid() > 0 && b.startedPid() > 0); // both started one
        m_hosts << a.startedPid() << b.startedPid();
        QTRY_VERIFY_WITH_TIMEOUT((readyA.size() + failedA.size()) == 1 && (readyB.size() + failedB.size()) == 1, 30000);
        QVERIFY2(failedA.isEmpty(), failedA.isEmpty() ? "" : qPrintable(failedA.first().first().toString()));
        QVERIFY2(failedB.isEmpty(), failedB.isEmpty() ? "" : qPrintable(failedB.first().first().toString()));
        const ServerEndpoint epA = readyA.first().first().value<ServerEndpoint>();
        const ServerEndpoint epB = readyB.first().first().value<ServerEndpoint>();
        QCOMPARE(epA.url, epB.url);
        QCOMPARE(epA.key, epB.key);
        // Exactly one of the two serves; the other said why and left.
        QCOMPARE(readyA.first().at(1).toBool() + readyB.first().at(1).toBool(), 1);
        const qint64 winner = qint64(RuntimeFile::read().value(QStringLiteral("pid")).toDouble());
        const qint64 loser = winner == a.startedPid() ? b.startedPid() : a.startedPid();
        QVERIFY(winner == a.startedPid() || winner == b.startedPid());
        QTRY_VERIFY_WITH_TIMEOUT(gone(loser), 15000);
        QVERIFY(!gone(winner));
        QFile log(HostLauncher::logPath());
        QVERIFY(log.open(QIODevice::ReadOnly));
        const QByteArray text = log.readAll();
        QVERIFY2(text.contains("Tether is already running (pid "), text.constData());
    }

    void reportsAHostThatCannotStart()
    {
        HostLauncher launcher;
        setUpLauncher(&launcher);
        launcher.setArguments({QStringLiteral("--port"), QStringLiteral("not-a-port")});
        QSignalSpy ready(&launcher, &HostLauncher::ready);
        QSignalSpy failed(&launcher, &HostLauncher::failed);
        launcher.start();
        // Its exit is noticed (pidfd), not waited out: well before the 30 s timeout.
        QTRY_VERIFY_WITH_TIMEOUT(!failed.isEmpty() || !ready.isEmpty(), 20000);
        QVERIFY(ready.isEmpty());
        const QString why = failed.first().first().toString();
        QVERIFY2(why.contains(QStringLiteral("exited without serving")), qPrintable(why));
        QVERIFY2(why.contains(QStringLiteral("tether serve:")), qPrintable(why)); // its own words, from the log
        QVERIFY2(why.contains(QStringLiteral("not-a-port")), qPrintable(why));
    }
};

QTEST_GUILESS_MAIN(TestHostLauncher)
#include "tst_hostlauncher.moc"
