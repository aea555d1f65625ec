// SPDX-License-Identifier: GPL-2.0-or-later
// Tether under systemd (issue 13): what the real binary tells the service
// manager (sd_notify(3)), read the way systemd reads it: a real AF_UNIX
// datagram socket set as NOTIFY_SOCKET, the sender's pid from the kernel
// (SCM_CREDENTIALS). READY=1 once serving; RELOADING=1, the restart
// guardian announced as the main process (MAINPID=) and handed back, and
// READY=1 around a restart in place; the guardian staying the main process
// when it takes over from a successor that died; STOPPING=1; and
// NOTIFY_SOCKET never reaching a session's programs.
// Then the same for real: the packaged unit under a systemd user manager
// (tests/support/usermanager.sh), skipped where none can run.
#include "notifylistener.h"
#include "restartutil.h"
#include "serveprocess.h"
#include "servertestutil.h"
#include "usermanager.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QTest>

#include <csignal>
#include <unistd.h>

using namespace ServerTest;
using TestUtil::NotifyListener;
using TestUtil::UserManager;

namespace {

/// The environment of process `pid` (/proc/PID/environ), NAME=value each.
QList<QByteArray> environmentOf(qint64 pid)
{
    QList<QByteArray> env = readFile(QStringLiteral("/proc/%1/environ").arg(pid)).split('\0');
    env.removeAll(QByteArray());
    return env;
}

/// The environment of `pid` once it runs `program` (/proc/PID/comm) and the
/// kernel has set its environment up; empty after 10 s. A session's
/// `sh -c 'exec sleep 1000'` execs twice, and /proc/PID/environ reads empty
/// while an execve is under way: a check that read it twice could see
/// PATH, then nothing (tst_systemd failed that way 1 run in 9 under load:
/// "5000 ms would have been sufficient this time" in a 1.2 s run).
QList<QByteArray> environmentOnceRunning(qint64 pid, const QByteArray &program)
{
    QList<QByteArray> env;
    (void)QTest::qWaitFor([&]() { // not running in time: the caller checks the empty list
        if (readFile(QStringLiteral("/proc/%1/comm").arg(pid)).trimmed() != program)
            return false;
        env = environmentOf(pid);
        return !env.isEmpty();
    }, 10000);
    return env;
}

bool hasVariable(const QList<QByteArray> &env, const QByteArray &name)
{
    for (const QByteArray &e : env)
        if (e.startsWith(name + '='))
            return true;
    return false;
}

qint64 sessionPid(const ServeProcess &s, const QString &id)
{
    return qint64(s.session(id).value(QStringLiteral("pid")).toDouble());
}

QString instanceOf(const ServeProcess &s)
{
    return s.http("GET", "/api/restart").json().value(QStringLiteral("instance")).toString();
}

/// Waits (by the clock: each request may take seconds when nobody
/// answers) until the server answers with another instance than `before`.
bool restarted(const ServeProcess &s, const QString &before, int ms = 20000)
{
    return QTest::qWaitFor([&]() {
        const QString now = instanceOf(s);
        return !now.isEmpty() && now != before;
    }, ms);
}

qint64 servingPid(const ServeProcess &s)
{
    return qint64(s.http("GET", "/api/restart").json().value(QStringLiteral("pid")).toDouble());
}

/// A server whose NOTIFY_SOCKET is `n`'s, with `extraEnv` (NAME=value).
bool startNotified(ServeProcess &s, const NotifyListener &n, const QStringList &extraEnv = {})
{
    s.proc.setProcessEnvironment(s.environment(QStringList{QStringLiteral("NOTIFY_SOCKET=") + n.address()} + extraEnv));
    return s.start();
}

/// The restart's messages from index `from` on: RELOADING=1 (with
/// MONOTONIC_USEC) from `pid`, then MAINPID=G from `pid` naming the guardian
/// (another process). Returns G, or 0 (with a failure) when they are not there.
qint64 reloadAndGuardian(NotifyListener &n, qint64 pid, int from, int *guardianAt)
{
    const int reloading = n.wait("RELOADING=1", from, pid);
    if (reloading < 0) {
        qWarning("no RELOADING=1 from %lld:\n%s", pid, n.dump().constData());
        return 0;
    }
    if (n.messages().at(reloading).value("MONOTONIC_USEC").toLongLong() <= 0) {
        qWarning("RELOADING=1 without MONOTONIC_USEC:\n%s", n.dump().constData());
        return 0;
    }
    const bool said = QTest::qWaitFor([&]() { return n.findName("MAINPID", reloading) >= 0; }, 15000);
    Q_UNUSED(said); // findName() says it again
    const int at = n.findName("MAINPID", reloading);
    if (at < 0 || n.messages().at(at).pid != pid) {
        qWarning("no MAINPID= from %lld after RELOADING=1:\n%s", pid, n.dump().constData());
        return 0;
    }
    const qint64 guardian = n.messages().at(at).value("MAINPID").toLongLong();
    if (guardian <= 0 || guardian == pid) {
        qWarning("MAINPID=%lld does not name the guardian:\n%s", guardian, n.dump().constData());
        return 0;
    }
    *guardianAt = at;
    return guardian;
}

/**
 * The packaged unit (packaging/tether.service.in as `cmake --install`
 * writes it, naming the binary under test) under a real systemd user
 * manager, with the test's settings in a drop-in: `s`'s directories (port 0
 * from its settings; clients use s.http()), TETHER_RESTART_BINARY=next (a
 * script: a good or a bad "new binary"), stdout and stderr to `log`
 * (printed when the test fails).
 */
struct PackagedUnit {
    ServeProcess s{"[server]\nport=0\n"};
    UserManager m; // ends first, and the unit with it, before s's directory goes
    QString unit = QStringLiteral("tether.service");
    QString next = s.dir.filePath(QStringLiteral("next-tether"));
    QString log = s.dir.filePath(QStringLiteral("tether.log"));
    qint64 pid = 0; ///< the main process once started

    ~PackagedUnit()
    {
        if (QTest::currentTestFailed())
            std::fprintf(stderr, "tether (the unit) said:\n%s\n", readFile(log).constData());
    }

    /// Writes the unit (`dropIn`: more [Service] lines), starts the manager
    /// and `systemctl --user start`s the unit, then reads port, key and pid
    /// from server.json. *skip says why when no manager can run here.
    void start(const QByteArray &dropIn, QString *skip)
    {
        writeScript(next, "exec '" + QFile::encodeName(tetherBinary()) + "' \"$@\"");
        QByteArray text = readFile(QStringLiteral(TETHER_SOURCE_DIR "/packaging/tether.service.in"));
        QVERIFY(text.contains("@TETHER_UNIT_BINARY@"));
        text.replace("@TETHER_UNIT_BINARY@", '"' + QFile::encodeName(tetherBinary()).replace("%", "%%") + '"');
        QFile unitFile(m.unitDir() + QLatin1Char('/') + unit);
        QVERIFY(unitFile.open(QIODevice::WriteOnly));
        unitFile.write(text);
        unitFile.close();
        QByteArray extra = "[Service]\n";
        for (const QString &v : s.envList() + QStringList{QStringLiteral("TETHER_RESTART_BINARY=") + next})
            if (!v.endsWith(QLatin1Char('=')))
                extra += "Environment=\"" + v.toUtf8() + "\"\n";
        extra += "StandardOutput=append:" + QFile::encodeName(log) + "\nStandardError=append:" + QFile::encodeName(log) + "\n";
        QVERIFY(QDir().mkpath(m.unitDir() + QLatin1Char('/') + unit + QStringLiteral(".d")));
        QFile dropInFile(m.unitDir() + QLatin1Char('/') + unit + QStringLiteral(".d/test.conf"));
        QVERIFY(dropInFile.open(QIODevice::WriteOnly));
        dropInFile.write(extra + dropIn);
        dropInFile.close();

        QString why;
        if (!m.start(&why)) {
            if (m.cannotRunHere()) {
                *skip = QStringLiteral("no systemd user manager can run here: ") + why;
                return;
            }
            QFAIL(qPrintable(why));
        }
        const UserManager::Run started = m.systemctl({QStringLiteral("start"), unit});
        QVERIFY2(started.code == 0, started.err.constData());
        // Type=notify: `start` returned after READY=1, so the server answers
        // now (Type=simple returns at once: wait for the file).
        QVERIFY(QTest::qWaitFor([this]() { return !readFile(s.runtimeFile()).isEmpty(); }, 10000));
        const QJsonObject info = QJsonDocument::fromJson(readFile(s.runtimeFile())).object();
        s.port = quint16(info.value(QStringLiteral("port")).toInt());
        s.key = info.value(QStringLiteral("key")).toString().toLatin1();
        pid = qint64(info.value(QStringLiteral("pid")).toDouble());
        QTRY_COMPARE(servingPid(s), pid);
        QCOMPARE(m.property(unit, QStringLiteral("MainPID")), QByteArray::number(pid));
        QCOMPARE(m.property(unit, QStringLiteral("ActiveState")), QByteArray("active"));
    }
};

} // namespace

class TestSystemd : public QObject
{
    Q_OBJECT
private Q_SLOTS:
    void initTestCase()
    {
        if (tetherBinary().isEmpty())
            QSKIP("the tether executable is not built in this tree");
    }
    void readyOnceServingAndNeverInSessions();
    void restartHandsTheMainPidToTheGuardianAndBack();
    void failedExecEndsTheReload();
    void guardianThatTakesOverStaysTheMainProcess();
    void stoppingOnSigterm();
    void packagedUnitUnderAUserManager_data();
    void packagedUnitUnderAUserManager();
    void crashUnderTheUnit();
};

void TestSystemd::readyOnceServingAndNeverInSessions()
{
    NotifyListener n;
    QVERIFY(n.isValid());
    ServeProcess s;
    QVERIFY(startNotified(s, n));
    const qint64 pid = s.proc.processId();
    const int ready = n.wait("READY=1", 0, pid);
    QVERIFY2(ready >= 0, n.dump().constData());
    // Said once serving: the printed line came first, and no key in STATUS=.
    QCOMPARE(n.messages().at(ready).value("STATUS"), "Serving http://127.0.0.1:" + QByteArray::number(s.port) + '/');
    QCOMPARE(n.messages().size(), 1);
    const QString id = s.create({QStringLiteral("/bin/sh"), QStringLiteral("-c"), QStringLiteral("exec sleep 1000")});
    QVERIFY(!id.isEmpty());
    const qint64 shell = sessionPid(s, id);
    QVERIFY(shell > 0);
    // Taken out of Tether's environment (/proc/PID/environ of Tether itself
    // still shows the one it was started with): the shells are in the
    // unit's cgroup, and with NotifyAccess=all whatever they send counts.
    const QList<QByteArray> env = environmentOnceRunning(shell, "sleep"); // exec'd: its own environment
    QVERIFY(hasVariable(env, "PATH"));
    QVERIFY(!hasVariable(env, "NOTIFY_SOCKET"));
}

void TestSystemd::restartHandsTheMainPidToTheGuardianAndBack()
{
    NotifyListener n;
    QVERIFY(n.isValid());
    ServeProcess s;
    QVERIFY(startNotified(s, n));
    const qint64 pid = s.proc.processId();
    QVERIFY(n.wait("READY=1", 0, pid) >= 0);
    const QString id = s.create({QStringLiteral("/bin/sh"), QStringLiteral("-c"), QStringLiteral("exec sleep 1000")});
    QVERIFY(!id.isEmpty());

    // Twice: the second proves the next image got NOTIFY_SOCKET back
    // (the first image had taken it out of its environment).
    int from = n.messages().size();
    for (int round = 0; round < 2; ++round) {
        QCOMPARE(::kill(pid_t(pid), SIGUSR2), 0);
        int guardianAt = -1;
        const qint64 guardian = reloadAndGuardian(n, pid, from, &guardianAt);
        QVERIFY(guardian > 0);
        // The guardian, the main process until then, names the new image
        // (the same pid) once it has the sessions; the new image says
        // READY=1 when it serves again.
        const int back = n.wait("MAINPID=" + QByteArray::number(pid), guardianAt + 1, guardian);
        QVERIFY2(back > guardianAt, n.dump().constData());
        // ...and waits until the manager has read that before it exits.
        const int barrier = n.wait("BARRIER=1", back + 1, guardian);
        QVERIFY2(barrier > back && n.messages().at(barrier).fds == 1, n.dump().constData());
        QVERIFY2(n.wait("READY=1", guardianAt + 1, pid) > guardianAt, n.dump().constData());
        QTRY_COMPARE(servingPid(s), pid);
        QCOMPARE(s.session(id).value(QStringLiteral("state")).toString(), QStringLiteral("running"));
        from = n.messages().size();
    }
    // A shell started by the restarted image does not get it either.
    const QString later = s.create({QStringLiteral("/bin/sh"), QStringLiteral("-c"), QStringLiteral("exec sleep 1000")});
    QVERIFY(!later.isEmpty());
    const QList<QByteArray> env = environmentOnceRunning(sessionPid(s, later), "sleep");
    QVERIFY(hasVariable(env, "PATH"));
    QVERIFY(!hasVariable(env, "NOTIFY_SOCKET"));
}

void TestSystemd::failedExecEndsTheReload()
{
    // Executable, but not a program execve(2) can run: the exec fails after
    // the guardian was announced; the old image carries on and is the main
    // process again, and the reload ends.
    NotifyListener n;
    QVERIFY(n.isValid());
    ServeProcess s;
    const QString fake = s.dir.filePath(QStringLiteral("not-a-program"));
    writeNotAProgram(fake);
    QVERIFY(startNotified(s, n, {QStringLiteral("TETHER_RESTART_BINARY=") + fake}));
    const qint64 pid = s.proc.processId();
    QVERIFY(n.wait("READY=1", 0, pid) >= 0);
    const int from = n.messages().size();
    QCOMPARE(s.http("POST", "/api/restart").status, 202);
    int guardianAt = -1;
    const qint64 guardian = reloadAndGuardian(n, pid, from, &guardianAt);
    QVERIFY(guardian > 0);
    QVERIFY2(n.wait("MAINPID=" + QByteArray::number(pid), guardianAt + 1, guardian) > guardianAt, n.dump().constData());
    QVERIFY2(n.wait("READY=1", guardianAt + 1, pid) > guardianAt, n.dump().constData());
    QTRY_VERIFY(!s.http("GET", "/api/restart").json().value(QStringLiteral("last_error")).toString().isEmpty());
    QCOMPARE(servingPid(s), pid);
}

void TestSystemd::guardianThatTakesOverStaysTheMainProcess()
{
    // The new binary dies before it adopted the sessions: the guardian,
    // already the main process, takes over and says READY=1; nobody hands
    // the main process back to the dead image.
    Subreaper subreaper;
    QVERIFY(subreaper.ok);
    NotifyListener n;
    QVERIFY(n.isValid());
    ServeProcess s;
    const QString next = s.dir.filePath(QStringLiteral("next-tether"));
    writeScript(next, "exit 3");
    // A file: the guardian writes after the QProcess's pipe reader is gone.
    s.proc.setStandardErrorFile(s.dir.filePath(QStringLiteral("stderr")));
    QVERIFY(startNotified(s, n, {QStringLiteral("TETHER_RESTART_BINARY=") + next}));
    const qint64 pid = s.proc.processId();
    QVERIFY(n.wait("READY=1", 0, pid) >= 0);
    const QString id = s.create({QStringLiteral("/bin/sh"), QStringLiteral("-c"), QStringLiteral("exec sleep 1000")});
    QVERIFY(!id.isEmpty());
    const qint64 shell = sessionPid(s, id);
    const QList<QByteArray> env = environmentOnceRunning(shell, "sleep");
    QVERIFY(hasVariable(env, "PATH"));
    QVERIFY(!hasVariable(env, "NOTIFY_SOCKET"));
    const int from = n.messages().size();
    QCOMPARE(::kill(pid_t(pid), SIGUSR2), 0);
    int guardianAt = -1;
    const qint64 guardian = reloadAndGuardian(n, pid, from, &guardianAt);
    QVERIFY(guardian > 0);
    GuardianStop stop{guardian};
    QVERIFY(s.waitFinished());
    QCOMPARE(s.proc.exitCode(), 3);
    // The image the guardian started (its own pid) serves and says so.
    const int ready = n.wait("READY=1", guardianAt + 1, guardian);
    QVERIFY2(ready > guardianAt, n.dump().constData());
    QTRY_COMPARE(servingPid(s), guardian);
    QCOMPARE(n.find("MAINPID=" + QByteArray::number(pid), guardianAt + 1), -1);
    QCOMPARE(sessionPid(s, id), shell);
    QCOMPARE(s.session(id).value(QStringLiteral("state")).toString(), QStringLiteral("running"));

    // It shuts down as the main process does.
    QCOMPARE(::kill(pid_t(guardian), SIGTERM), 0);
    QVERIFY2(n.wait("STOPPING=1", ready, guardian) > ready, n.dump().constData());
}

void TestSystemd::stoppingOnSigterm()
{
    NotifyListener n;
    QVERIFY(n.isValid());
    ServeProcess s;
    QVERIFY(startNotified(s, n));
    const qint64 pid = s.proc.processId();
    QVERIFY(n.wait("READY=1", 0, pid) >= 0);
    QCOMPARE(::kill(pid_t(pid), SIGTERM), 0);
    QVERIFY2(n.wait("STOPPING=1", 1, pid) >= 1, n.dump().constData());
    QVERIFY(s.waitFinished());
    QCOMPARE(s.proc.exitCode(), 0);
}

void TestSystemd::packagedUnitUnderAUserManager_data()
{
    // `shipped`: packaging/tether.service.in as installed. `before`: the same
    // with the Type=simple of earlier releases (no NOTIFY_SOCKET), where
    // the unit ended with its main process and took the sessions along: the
    // row that shows what the shipped unit changes.
    QTest::addColumn<bool>("shipped");
    QTest::newRow("Type=notify, NotifyAccess=all (shipped)") << true;
    QTest::newRow("Type=simple (before)") << false;
}

void TestSystemd::packagedUnitUnderAUserManager()
{
    QFETCH(bool, shipped);
    PackagedUnit u;
    QString skip;
    u.start(shipped ? QByteArray() : QByteArray("Type=simple\nNotifyAccess=none\n"), &skip);
    if (!skip.isEmpty())
        QSKIP(qPrintable(skip));
    if (QTest::currentTestFailed())
        return;
    ServeProcess &s = u.s;
    UserManager &m = u.m;
    const QString &next = u.next;
    const QString unitName = u.unit;
    const qint64 pid = u.pid;

    const QString hup = s.dir.filePath(QStringLiteral("hup"));
    const QString shell = s.create({QStringLiteral("/bin/sh"), QStringLiteral("-c"),
                                    QStringLiteral("trap 'echo HUP >> %1' HUP; while :; do sleep 1; done").arg(hup)});
    const QString ticker = s.create({QStringLiteral("/bin/sh"), QStringLiteral("-c"),
                                     QStringLiteral("i=0; while :; do i=$((i+1)); echo tick $i; sleep 0.05; done")});
    QVERIFY(!shell.isEmpty() && !ticker.isEmpty());
    const qint64 shellPid = sessionPid(s, shell);
    QVERIFY(shellPid > 0);
    QTRY_VERIFY(m.processesOf(unitName).contains(shellPid)); // in the unit's cgroup
    const auto ticks = [&]() { return s.session(ticker).value(QStringLiteral("offset")).toDouble(); };
    const auto alive = [](qint64 p) { return ::kill(pid_t(p), 0) == 0; };

    // `systemctl reload`: a restart in place, same main process.
    QString instance = instanceOf(s);
    QVERIFY(m.systemctl({QStringLiteral("reload"), unitName}).code == 0);
    QVERIFY2(restarted(s, instance), m.describe(unitName).constData());
    QVERIFY2(QTest::qWaitFor([&]() { return m.property(unitName, QStringLiteral("ActiveState")) == "active"; }, 10000),
             m.describe(unitName).constData());
    QCOMPARE(m.property(unitName, QStringLiteral("MainPID")), QByteArray::number(pid));
    QCOMPARE(servingPid(s), pid);
    QCOMPARE(sessionPid(s, shell), shellPid);

    // The new binary dies before it adopted the sessions.
    writeScript(next, "exit 3");
    instance = instanceOf(s);
    const UserManager::Run badReload = m.systemctl({QStringLiteral("reload"), unitName});
    if (shipped)
        QVERIFY2(badReload.code == 0, badReload.err.constData());
    if (!shipped) {
        // (The reload job may fail or not: the main process dies while the
        // job still runs.)
        // The unit ended with its main process: systemd killed the rest of
        // its cgroup (the guardian, the shells) and started an empty Tether.
        QTRY_VERIFY_WITH_TIMEOUT(!alive(shellPid), 20000);
        QTRY_VERIFY_WITH_TIMEOUT(m.property(unitName, QStringLiteral("NRestarts")).toInt() >= 1, 20000);
        QVERIFY(!readFile(hup).isEmpty() || !alive(shellPid));
        return;
    }
    qint64 guardian = 0;
    QVERIFY2(QTest::qWaitFor([&]() { return (guardian = servingPid(s)) > 0 && guardian != pid; }, 20000),
             m.describe(unitName).constData());
    // systemd agrees: the guardian is the main process, the unit runs on,
    // nothing was restarted, and the shells are where they were.
    QTRY_COMPARE(m.property(unitName, QStringLiteral("ActiveState")), QByteArray("active"));
    QCOMPARE(m.property(unitName, QStringLiteral("SubState")), QByteArray("running"));
    QCOMPARE(m.property(unitName, QStringLiteral("MainPID")), QByteArray::number(guardian));
    QCOMPARE(m.property(unitName, QStringLiteral("NRestarts")), QByteArray("0"));
    QVERIFY(!alive(pid));
    QVERIFY(alive(shellPid));
    QCOMPARE(sessionPid(s, shell), shellPid);
    const QList<qint64> inUnit = m.processesOf(unitName);
    QVERIFY(inUnit.contains(guardian) && inUnit.contains(shellPid));
    const double before = ticks();
    QTRY_VERIFY(ticks() > before + 100); // output still read
    QVERIFY(!QFile::exists(hup));

    // Fixed: the next reload keeps the guardian's pid as the main process.
    writeScript(next, "exec '" + QFile::encodeName(tetherBinary()) + "' \"$@\"");
    instance = instanceOf(s);
    QVERIFY(m.systemctl({QStringLiteral("reload"), unitName}).code == 0);
    QVERIFY2(restarted(s, instance), m.describe(unitName).constData());
    QTRY_COMPARE(m.property(unitName, QStringLiteral("ActiveState")), QByteArray("active"));
    QCOMPARE(m.property(unitName, QStringLiteral("MainPID")), QByteArray::number(guardian));
    QCOMPARE(servingPid(s), guardian);
    QVERIFY(alive(shellPid));

    // `systemctl stop` still ends every session.
    QVERIFY(m.systemctl({QStringLiteral("stop"), unitName}).code == 0);
    QCOMPARE(m.property(unitName, QStringLiteral("ActiveState")), QByteArray("inactive"));
    QTRY_VERIFY(!alive(shellPid));
    QVERIFY(!alive(guardian));
}

void TestSystemd::crashUnderTheUnit()
{
    // What the README's "Tether crashed" row says for the unit: the kernel
    // hangs the sessions up, systemd kills whatever is left in the unit's
    // cgroup (a `nohup` job that would outlive a crash of the desktop app
    // included) and starts an empty Tether.
    PackagedUnit u;
    QString skip;
    u.start(QByteArray(), &skip);
    if (!skip.isEmpty())
        QSKIP(qPrintable(skip));
    if (QTest::currentTestFailed())
        return;
    const QString bgFile = u.s.dir.filePath(QStringLiteral("bg"));
    const QString id = u.s.create({QStringLiteral("/bin/sh"), QStringLiteral("-c"),
                                   QStringLiteral("nohup sleep 1000 >/dev/null 2>&1 & echo $! > %1; while :; do sleep 1; done").arg(bgFile)});
    QVERIFY(!id.isEmpty());
    QTRY_VERIFY(!readFile(bgFile).trimmed().isEmpty());
    const qint64 bg = readFile(bgFile).trimmed().toLongLong();
    const qint64 shell = sessionPid(u.s, id);
    QVERIFY(bg > 0 && ::kill(pid_t(bg), 0) == 0);
    QCOMPARE(::kill(pid_t(u.pid), SIGKILL), 0);
    QVERIFY2(QTest::qWaitFor([&]() { return u.m.property(u.unit, QStringLiteral("NRestarts")) == "1"; }, 20000),
             u.m.describe(u.unit).constData());
    QTRY_VERIFY_WITH_TIMEOUT(::kill(pid_t(bg), 0) != 0 && ::kill(pid_t(shell), 0) != 0, 10000);
    // The new Tether: another pid, no session (port 0: another port too).
    qint64 now = 0;
    QVERIFY(QTest::qWaitFor([&]() {
        const QJsonObject info = QJsonDocument::fromJson(readFile(u.s.runtimeFile())).object();
        now = qint64(info.value(QStringLiteral("pid")).toDouble());
        u.s.port = quint16(info.value(QStringLiteral("port")).toInt());
        return now > 0 && now != u.pid && servingPid(u.s) == now;
    }, 20000));
    QCOMPARE(u.m.property(u.unit, QStringLiteral("MainPID")), QByteArray::number(now));
    QCOMPARE(u.s.http("GET", "/api/sessions").json().value(QStringLiteral("sessions")).toArray().size(), 0);
}

QTEST_GUILESS_MAIN(TestSystemd)
#include "tst_systemd.moc"
