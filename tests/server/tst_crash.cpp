// SPDX-License-Identifier: GPL-2.0-or-later
// What a crash of Tether does to its sessions (issue 24; docs/architecture.md
// "When Tether crashes"): the session keeper (`tether keeper`, started by
// `tether serve`) holds a copy of every session's PTY master, so a SIGKILL
// or SIGSEGV of the host hangs up no shell, and the next `tether serve`
// adopts the sessions: same ids, pids and names, typing works, the recovery
// is reported, a viewer that resumes gets a reset replay. Without a keeper
// (TETHER_KEEPER=0, or the keeper killed too) the kernel hangs up the
// terminal when its last master closes: the shell and its foreground job get
// SIGHUP and end; jobs in process groups of their own live on, orphaned.
#include "serveprocess.h"
#include "servertestutil.h"
#include "testutil.h"

#include <QTest>

#include <csignal>

using namespace ServerTest;

namespace {
/// The parent of `pid` (/proc/PID/stat field 4); -1 when it is gone or a
/// zombie (a zombie has ended: only its exit status waits to be reaped).
qint64 liveParent(qint64 pid)
{
    const QByteArray st = readFile(QStringLiteral("/proc/%1/stat").arg(pid));
    const QList<QByteArray> fields = st.mid(st.lastIndexOf(')') + 2).split(' ');
    if (fields.size() < 2 || fields.at(0) == "Z" || fields.at(0) == "X")
        return -1;
    return fields.at(1).toLongLong();
}

qint64 pidIn(const QString &file)
{
    return readFile(file).trimmed().toLongLong();
}

/// GET /api/restart of `s` (the server's status).
QJsonObject status(const ServeProcess &s)
{
    return s.http("GET", "/api/restart").json();
}

qint64 keeperPid(const ServeProcess &s)
{
    return qint64(status(s).value(QStringLiteral("keeper_pid")).toDouble(0));
}

/// Starts `s` again after it ended (the same directories: the same user).
bool startAgain(ServeProcess &s)
{
    s.out.clear();
    s.err.clear();
    return s.start();
}

/// A session named `name` running bash that writes its pid to DIR/NAME.pid.
QString createShell(const ServeProcess &s, const QString &name)
{
    const QString script = QStringLiteral("echo $$ > %1/%2.pid; exec bash --norc --noprofile -i").arg(s.dir.path(), name);
    const QByteArray body = QJsonDocument(QJsonObject{
                                              {QStringLiteral("command"),
                                               QJsonArray{QStringLiteral("bash"), QStringLiteral("-c"), script}},
                                              {QStringLiteral("name"), name},
                                          })
                                .toJson(QJsonDocument::Compact);
    return s.http("POST", "/api/sessions", body).json().value(QStringLiteral("id")).toString();
}

/// Types `command` and Enter into session `id`; true once `file` exists.
bool typeAndSee(const ServeProcess &s, const QString &id, const QByteArray &command, const QString &file)
{
    const QByteArray body = QJsonDocument(QJsonObject{{QStringLiteral("data"), QString::fromUtf8(command + '\r')}})
                                .toJson(QJsonDocument::Compact);
    if (s.http("POST", "/api/sessions/" + id.toLatin1() + "/input", body).status != 204)
        return false;
    return QTest::qWaitFor([&] { return QFile::exists(file); }, 10000);
}

/// Context switches of `pid` so far (voluntary and not): its wakeups.
qint64 contextSwitches(qint64 pid)
{
    qint64 n = 0;
    for (const QByteArray &line : readFile(QStringLiteral("/proc/%1/status").arg(pid)).split('\n'))
        if (line.startsWith("voluntary_ctxt_switches:") || line.startsWith("nonvoluntary_ctxt_switches:"))
            n += line.mid(line.indexOf(':') + 1).trimmed().toLongLong();
    return n;
}

/// Whether any process has `pid` as parent and is a zombie.
int zombiesOf(qint64 pid)
{
    return childrenOf(pid, 'Z');
}
} // namespace

class TestCrash : public QObject
{
    Q_OBJECT
private Q_SLOTS:
    void initTestCase() { registerProcessTypes(); }
    void crashKeepsTheSessions_data();
    void crashKeepsTheSessions();
    void crashKeepsLinksAndNotifySettings();
    void endedSessionLeavesNothingInTheKeeper();
    void crashLoopLeaksNothing();
    void keeperKilledWhileTheHostRuns();
    void keeperKilledTooHangsUp();
    void keeperThatFallsBehindMissesNothing();
    void orderlyStopEndsTheKeeper();
    void restartInPlaceReusesTheKeeper();
    void sigkillWithoutAKeeper();
    void keeperIsNotStartedByHand();
};

void TestCrash::crashKeepsTheSessions_data()
{
    QTest::addColumn<int>("signo");
    QTest::newRow("SIGKILL") << int(SIGKILL);
    QTest::newRow("SIGSEGV") << int(SIGSEGV);
}

void TestCrash::crashKeepsTheSessions()
{
    QFETCH(int, signo);
    if (tetherBinary().isEmpty())
        QSKIP("no tether executable in this build");
    ServeProcess s;
    // The SIGSEGV row stands for a crash: the signal's default action ends
    // the host, as a real fault would, not ASan's report-and-exit(1).
    QProcessEnvironment env = s.environment();
    TestUtil::leaveSigsegvToTheKernel(env);
    s.proc.setProcessEnvironment(env);
    QVERIFY(s.start());
    const QString d = s.dir.path();
    const QString id = createShell(s, QStringLiteral("work"));
    QVERIFY(!id.isEmpty());
    QTRY_VERIFY(pidIn(d + QStringLiteral("/work.pid")) > 0);
    const qint64 shell = pidIn(d + QStringLiteral("/work.pid"));
    const qint64 server = s.proc.processId();
    QCOMPARE(liveParent(shell), server);
    const qint64 keeper = keeperPid(s);
    QVERIFY(keeper > 0);
    QVERIFY(liveParent(keeper) != server); // not the host's child: it outlives it
    QCOMPARE(status(s).value(QStringLiteral("recovered_after_crash")).toInt(-1), 0);
    QVERIFY(status(s).value(QStringLiteral("crashed_at")).isNull());

    // A viewer attached, with output it has seen.
    WsClient viewer;
    viewer.open(s.port, QStringLiteral("/ws/") + id, s.key);
    QTRY_VERIFY(viewer.gotAttached());
    QVERIFY(typeAndSee(s, id, "echo before-crash; touch " + d.toUtf8() + "/typed1", d + QStringLiteral("/typed1")));
    QTRY_VERIFY(viewer.bytes.contains("before-crash\r\n"));
    const qint64 seen = viewer.num("offset") + viewer.stream().size();
    // Its record on disk (written once output has been quiet 2 s) holds the
    // screen with that line: what the next server shows first.
    const QString record = d + QStringLiteral("/state/tether/sessions/%1.json").arg(id);
    QTRY_VERIFY_WITH_TIMEOUT(QByteArray::fromBase64(QJsonDocument::fromJson(readFile(record))
                                                        .object()
                                                        .value(QStringLiteral("screen"))
                                                        .toString()
                                                        .toLatin1())
                                 .contains("before-crash"),
                             15000);

    // crashed_at has seconds: the second of the kill at the earliest.
    const QDateTime killedAt = QDateTime::fromSecsSinceEpoch(QDateTime::currentSecsSinceEpoch(), Qt::UTC);
    QVERIFY(::kill(pid_t(server), signo) == 0);
    QVERIFY(s.waitFinished());
    const QDateTime deadAt = QDateTime::currentDateTimeUtc();
    QTRY_VERIFY(viewer.disconnected);
    // The keeper holds the terminal: no hangup, the same shell runs on.
    QVERIFY2(liveParent(shell) > 0, "the shell was hung up");

    QVERIFY(startAgain(s));
    QVERIFY2(s.err.contains("recovered 1 session after a crash"), s.err.constData());
    const QJsonObject st = status(s);
    QCOMPARE(st.value(QStringLiteral("recovered_after_crash")).toInt(), 1);
    QCOMPARE(qint64(st.value(QStringLiteral("keeper_pid")).toDouble()), keeper); // the same keeper
    // When the crash happened, as the keeper saw its host go: between the
    // kill and the moment the dead host was reaped, not when this one started.
    const QDateTime crashedAt = QDateTime::fromString(st.value(QStringLiteral("crashed_at")).toString(), Qt::ISODate);
    QVERIFY2(crashedAt.isValid(), qPrintable(st.value(QStringLiteral("crashed_at")).toString()));
    QCOMPARE(crashedAt.timeSpec(), Qt::UTC);
    QVERIFY2(crashedAt >= killedAt && crashedAt <= deadAt,
             qPrintable(crashedAt.toString(Qt::ISODateWithMs) + " not in " + killedAt.toString(Qt::ISODateWithMs) + " .. "
                        + deadAt.toString(Qt::ISODateWithMs)));
    const QJsonObject session = s.session(id);
    QCOMPARE(session.value(QStringLiteral("id")).toString(), id);
    QCOMPARE(qint64(session.value(QStringLiteral("pid")).toDouble()), shell);
    QCOMPARE(session.value(QStringLiteral("name")).toString(), QStringLiteral("work"));
    QCOMPARE(session.value(QStringLiteral("state")).toString(), QStringLiteral("running"));

    // The viewer comes back where it was: its offset is the dead server's,
    // so it gets a reset replay, never bytes from another place.
    WsClient back;
    back.open(s.port, QStringLiteral("/ws/%1?resume=%2").arg(id).arg(seen), s.key);
    QTRY_VERIFY(back.gotAttached());
    QCOMPARE(back.attachedMsg.value(QStringLiteral("reset")).toBool(), true);
    QVERIFY2(back.attachedMsg.value(QStringLiteral("reason")).toString() != QLatin1String("resume"),
             qPrintable(back.attachedMsg.value(QStringLiteral("reason")).toString()));
    QVERIFY(back.num("offset") > seen);
    // The saved screen comes first, then a line that says what happened.
    QTRY_VERIFY(back.bytes.contains("--- tether: Tether crashed; the screen as saved at "));
    // (Present, not only before it: a raw replay skipped the saved screen
    // as the tail of a line, and `tether attach` showed the marker alone.)
    QVERIFY2(back.bytes.contains("before-crash"), back.bytes.constData());
    QVERIFY(back.bytes.indexOf("before-crash") < back.bytes.indexOf("--- tether: Tether crashed"));
    // Typing works, and its output reaches the viewer.
    QVERIFY(typeAndSee(s, id, "echo after-crash; touch " + d.toUtf8() + "/typed2", d + QStringLiteral("/typed2")));
    QTRY_VERIFY(back.bytes.contains("after-crash\r\n"));

    // Ending it after the crash: the keeper lets go too.
    QCOMPARE(s.http("DELETE", "/api/sessions/" + id.toLatin1()).status, 204);
    QTRY_COMPARE(liveParent(shell), -1);
}

void TestCrash::crashKeepsLinksAndNotifySettings()
{
    // A session's read-only link and its notification settings, set after
    // it was handed to the keeper, work again after the crash; its TTL
    // clock (detached_since) goes on.
    if (tetherBinary().isEmpty())
        QSKIP("no tether executable in this build");
    ServeProcess s;
    QVERIFY(s.start({QStringLiteral("--ttl"), QStringLiteral("3600")}));
    const QString id = createShell(s, QStringLiteral("shared"));
    QVERIFY(!id.isEmpty());
    // Detached since a time the next host's start cannot be (seconds).
    WsClient viewer;
    viewer.open(s.port, QStringLiteral("/ws/") + id, s.key);
    QTRY_VERIFY(viewer.gotAttached());
    QVERIFY(s.session(id).value(QStringLiteral("detached_since")).isNull());
    viewer.ws.close();
    QTRY_VERIFY(!s.session(id).value(QStringLiteral("detached_since")).isNull());
    const QString detachedSince = s.session(id).value(QStringLiteral("detached_since")).toString();
    QTRY_VERIFY_WITH_TIMEOUT(QDateTime::currentDateTimeUtc().toString(Qt::ISODate) > detachedSince, 5000);
    const HttpReply shared = s.http("POST", "/api/shares", "{\"session\":\"" + id.toLatin1() + "\"}");
    QCOMPARE(shared.status, 201);
    const QByteArray token = shared.json().value(QStringLiteral("token")).toString().toLatin1();
    QVERIFY(!token.isEmpty());
    const QJsonObject notify{{QStringLiteral("muted"), true}, {QStringLiteral("next"), false},
                             {QStringLiteral("activity"), true}, {QStringLiteral("silence"), 45}};
    QCOMPARE(s.http("PATCH", "/api/sessions/" + id.toLatin1(),
                    QJsonDocument(QJsonObject{{QStringLiteral("notify"), notify}}).toJson(QJsonDocument::Compact))
                 .status,
             200);
    QCOMPARE(s.session(id).value(QStringLiteral("notify")).toObject(), notify);

    QVERIFY(::kill(pid_t(s.proc.processId()), SIGKILL) == 0);
    QVERIFY(s.waitFinished());
    QVERIFY(startAgain(s));
    QCOMPARE(status(s).value(QStringLiteral("recovered_after_crash")).toInt(), 1);
    QCOMPARE(s.session(id).value(QStringLiteral("notify")).toObject(), notify);
    QCOMPARE(s.session(id).value(QStringLiteral("detached_since")).toString(), detachedSince);
    const QJsonArray links = s.http("GET", "/api/shares").json().value(QStringLiteral("shares")).toArray();
    QCOMPARE(links.size(), 1);
    QCOMPARE(links.at(0).toObject().value(QStringLiteral("token")).toString().toLatin1(), token);
    QCOMPARE(links.at(0).toObject().value(QStringLiteral("session")).toString(), id);
    // The link lets its holder watch again.
    WsClient watcher;
    watcher.open(s.port, QStringLiteral("/ws/%1?mode=watch").arg(id), token);
    QTRY_VERIFY(watcher.gotAttached() || watcher.disconnected);
    QVERIFY2(watcher.gotAttached(), qPrintable(QStringLiteral("closed %1 %2").arg(watcher.closeCode).arg(watcher.closeReason)));
    // Revoked after the crash: the keeper is told, and a second crash
    // does not bring it back.
    QCOMPARE(s.http("DELETE", "/api/shares/" + token).status, 204);
    QTRY_VERIFY(watcher.disconnected);
    QVERIFY(::kill(pid_t(s.proc.processId()), SIGKILL) == 0);
    QVERIFY(s.waitFinished());
    QVERIFY(startAgain(s));
    QCOMPARE(status(s).value(QStringLiteral("recovered_after_crash")).toInt(), 1);
    QCOMPARE(s.http("GET", "/api/shares").json().value(QStringLiteral("shares")).toArray().size(), 0);
    QCOMPARE(s.session(id).value(QStringLiteral("notify")).toObject(), notify);
}

void TestCrash::endedSessionLeavesNothingInTheKeeper()
{
    if (tetherBinary().isEmpty())
        QSKIP("no tether executable in this build");
    ServeProcess s;
    QVERIFY(s.start());
    const qint64 keeper = keeperPid(s);
    QVERIFY(keeper > 0);
    const int idle = restingFdCount(keeper, 50);
    const QString killed = createShell(s, QStringLiteral("killed"));
    const QString exits = createShell(s, QStringLiteral("exits"));
    QVERIFY(!killed.isEmpty() && !exits.isEmpty());
    int seen = 0;
    // Master and pidfd of each.
    QVERIFY2(QTest::qWaitFor([&] { seen = fdCount(keeper); return seen == idle + 4; }, 10000),
             qPrintable(fdListing(keeper)));
    // Holding sessions, the keeper sleeps: no wakeup while nothing is said to it.
    // Settled first (its answers to the creations written: it slept through
    // 300 ms), polled however long a loaded machine takes.
    QTRY_VERIFY_WITH_TIMEOUT([&] {
        const qint64 at = contextSwitches(keeper);
        QTest::qWait(300);
        return contextSwitches(keeper) == at;
    }(), 20000);
    const qint64 before = contextSwitches(keeper);
    QTest::qWait(1000); // the window measured (a negative check: nothing wakes it)
    QCOMPARE(contextSwitches(keeper) - before, qint64(0));
    QCOMPARE(s.http("DELETE", "/api/sessions/" + killed.toLatin1()).status, 204);
    QVERIFY2(waitFdsAtMost(keeper, idle + 2, 10000, &seen), qPrintable(fdListing(keeper)));
    QVERIFY(typeAndSee(s, exits, "touch " + s.dir.path().toUtf8() + "/exiting; exit 3", s.dir.path() + QStringLiteral("/exiting")));
    QTRY_COMPARE(s.session(exits).value(QStringLiteral("state")).toString(), QStringLiteral("exited"));
    QVERIFY2(waitFdsAtMost(keeper, idle, 10000, &seen), qPrintable(fdListing(keeper)));
    QCOMPARE(restingFdCount(keeper, 50), idle);
}

void TestCrash::crashLoopLeaksNothing()
{
    if (tetherBinary().isEmpty())
        QSKIP("no tether executable in this build");
    ServeProcess s;
    QVERIFY(s.start());
    const QString d = s.dir.path();
    const qint64 keeper = keeperPid(s);
    QVERIFY(keeper > 0);
    const int idle = restingFdCount(keeper, 50);
    const QString id = createShell(s, QStringLiteral("loop"));
    QVERIFY(!id.isEmpty());
    QTRY_VERIFY(pidIn(d + QStringLiteral("/loop.pid")) > 0);
    const qint64 shell = pidIn(d + QStringLiteral("/loop.pid"));
    // The keeper holds the session (master and pidfd) once it has read the
    // host's message, which may come after the shell has started: under
    // load a count taken at once missed them (9 then, 7 first).
    int keeperFds = 0;
    QVERIFY2(QTest::qWaitFor([&] { keeperFds = fdCount(keeper); return keeperFds == idle + 2; }, 10000),
             qPrintable(fdListing(keeper)));
    int serverFds = -1;
    for (int i = 0; i < 10; ++i) {
        QVERIFY(::kill(pid_t(s.proc.processId()), SIGKILL) == 0);
        QVERIFY(s.waitFinished());
        QVERIFY(startAgain(s));
        QCOMPARE(s.session(id).value(QStringLiteral("pid")).toDouble(), double(shell));
        QCOMPARE(keeperPid(s), keeper);
        const int fds = restingFdCount(s.proc.processId(), 50);
        if (serverFds < 0)
            serverFds = fds;
        QCOMPARE(fds, serverFds); // every new server holds the same
        QVERIFY2(liveParent(shell) > 0, "the shell ended");
        QVERIFY2(restingFdCount(keeper, 50) == keeperFds, qPrintable(fdListing(keeper)));
        QCOMPARE(zombiesOf(keeper), 0);
        QCOMPARE(zombiesOf(::getpid()), 0);
    }
    QVERIFY(liveParent(shell) > 0);
    QVERIFY(typeAndSee(s, id, "touch " + d.toUtf8() + "/after-loop", d + QStringLiteral("/after-loop")));
}

void TestCrash::keeperKilledWhileTheHostRuns()
{
    if (tetherBinary().isEmpty())
        QSKIP("no tether executable in this build");
    ServeProcess s;
    QVERIFY(s.start());
    const QString d = s.dir.path();
    const QString id = createShell(s, QStringLiteral("k"));
    QTRY_VERIFY(pidIn(d + QStringLiteral("/k.pid")) > 0);
    const qint64 shell = pidIn(d + QStringLiteral("/k.pid"));
    const qint64 keeper = keeperPid(s);
    QVERIFY(keeper > 0);
    QVERIFY(::kill(pid_t(keeper), SIGKILL) == 0);
    // The host goes on with its sessions, and starts another keeper.
    qint64 second = 0;
    QVERIFY(QTest::qWaitFor([&] { second = keeperPid(s); return second > 0 && second != keeper; }, 10000));
    QVERIFY(typeAndSee(s, id, "touch " + d.toUtf8() + "/still", d + QStringLiteral("/still")));
    QTRY_COMPARE(fdCount(second) >= 2, true);
    // ... which holds the session: a crash now keeps it as before.
    QVERIFY(::kill(pid_t(s.proc.processId()), SIGKILL) == 0);
    QVERIFY(s.waitFinished());
    QVERIFY(startAgain(s));
    QCOMPARE(s.session(id).value(QStringLiteral("pid")).toDouble(), double(shell));
    // Not the new server's child: its exit is seen, its status unknown.
    QVERIFY(typeAndSee(s, id, "touch " + d.toUtf8() + "/leaving; exit 5", d + QStringLiteral("/leaving")));
    QTRY_COMPARE(s.session(id).value(QStringLiteral("state")).toString(), QStringLiteral("exited"));
    QCOMPARE(s.session(id).value(QStringLiteral("exit_code")).toInt(), -1);
    QVERIFY(s.session(id).value(QStringLiteral("exit_signal")).isNull());
}

void TestCrash::keeperKilledTooHangsUp()
{
    if (tetherBinary().isEmpty())
        QSKIP("no tether executable in this build");
    ServeProcess s;
    QVERIFY(s.start());
    const QString d = s.dir.path();
    const QString id = createShell(s, QStringLiteral("both"));
    QTRY_VERIFY(pidIn(d + QStringLiteral("/both.pid")) > 0);
    const qint64 shell = pidIn(d + QStringLiteral("/both.pid"));
    // Its record (written once output has been quiet 2 s): what Revive uses.
    QTRY_VERIFY_WITH_TIMEOUT(QFile::exists(d + QStringLiteral("/state/tether/sessions/%1.json").arg(id)), 15000);
    const qint64 keeper = keeperPid(s);
    QVERIFY(keeper > 0);
    QVERIFY(::kill(pid_t(s.proc.processId()), SIGKILL) == 0);
    QVERIFY(s.waitFinished());
    QVERIFY(liveParent(shell) > 0);
    QVERIFY(::kill(pid_t(keeper), SIGKILL) == 0);
    // The last master is closed: the kernel hangs the shell up.
    QTRY_COMPARE(liveParent(shell), -1);
    // And the next server has nothing to adopt: the record is an ended session.
    QVERIFY(startAgain(s));
    QCOMPARE(status(s).value(QStringLiteral("recovered_after_crash")).toInt(-1), 0);
    const QJsonObject ended = s.session(id);
    QCOMPARE(ended.value(QStringLiteral("state")).toString(), QStringLiteral("ended"));
    QCOMPARE(ended.value(QStringLiteral("ended")).toString(), QStringLiteral("crash"));
}

void TestCrash::keeperThatFallsBehindMissesNothing()
{
    if (tetherBinary().isEmpty())
        QSKIP("no tether executable in this build");
    ServeProcess s;
    QVERIFY(s.start());
    const QString d = s.dir.path();
    const qint64 keeper = keeperPid(s);
    QVERIFY(keeper > 0);
    const int idle = restingFdCount(keeper, 50);
    const QString id = createShell(s, QStringLiteral("renamed"));
    QTRY_VERIFY(pidIn(d + QStringLiteral("/renamed.pid")) > 0);
    const qint64 shell = pidIn(d + QStringLiteral("/renamed.pid"));
    // The keeper holds this session (master and pidfd) before it is stopped:
    // it reads the host's message in its own time, and stopped before, it
    // would take these two with the barrier's below (counted early, 9 not 7).
    QVERIFY2(QTest::qWaitFor([&] { return fdCount(keeper) == idle + 2; }, 10000), qPrintable(fdListing(keeper)));
    // A stopped keeper takes nothing: more renames (a message each) than
    // its socket holds wait in the host, and are sent once it runs again.
    QCOMPARE(::kill(pid_t(keeper), SIGSTOP), 0);
    struct Resume { // also when a check fails: a stopped keeper would never end
        qint64 pid;
        ~Resume() { ::kill(pid_t(pid), SIGCONT); }
    } resume{keeper};
    const QByteArray path = "/api/sessions/" + id.toLatin1();
    for (int i = 0; i < 800; ++i) {
        const QByteArray body = "{\"name\":\"n" + QByteArray::number(i) + "\"}";
        QCOMPARE(s.http("PATCH", path, body).status, 200);
    }
    const int fdsBefore = idle + 2;
    // A session started now is handed over behind the queued renames (the
    // queue keeps the order): once the keeper holds its descriptors, it
    // has taken every rename.
    QVERIFY(!createShell(s, QStringLiteral("barrier")).isEmpty());
    QCOMPARE(::kill(pid_t(keeper), SIGCONT), 0);
    int seen = 0;
    QVERIFY2(QTest::qWaitFor([&] { seen = fdCount(keeper); return seen == fdsBefore + 2; }, 15000),
             qPrintable(fdListing(keeper)));
    // Still the same keeper, with the last name.
    QCOMPARE(keeperPid(s), keeper);
    QVERIFY(::kill(pid_t(s.proc.processId()), SIGKILL) == 0);
    QVERIFY(s.waitFinished());
    QVERIFY(startAgain(s));
    QCOMPARE(s.session(id).value(QStringLiteral("pid")).toDouble(), double(shell));
    QCOMPARE(s.session(id).value(QStringLiteral("name")).toString(), QStringLiteral("n799"));
}

void TestCrash::orderlyStopEndsTheKeeper()
{
    if (tetherBinary().isEmpty())
        QSKIP("no tether executable in this build");
    ServeProcess s;
    QVERIFY(s.start());
    const QString d = s.dir.path();
    QVERIFY(!createShell(s, QStringLiteral("stop")).isEmpty());
    QTRY_VERIFY(pidIn(d + QStringLiteral("/stop.pid")) > 0);
    const qint64 shell = pidIn(d + QStringLiteral("/stop.pid"));
    const qint64 keeper = keeperPid(s);
    QVERIFY(keeper > 0);
    s.proc.terminate();
    QVERIFY(s.waitFinished());
    QCOMPARE(s.proc.exitCode(), 0);
    QTRY_COMPARE(liveParent(shell), -1);
    QTRY_COMPARE(liveParent(keeper), -1);
}

void TestCrash::restartInPlaceReusesTheKeeper()
{
    if (tetherBinary().isEmpty())
        QSKIP("no tether executable in this build");
    ServeProcess s;
    QVERIFY(s.start());
    const QString d = s.dir.path();
    const qint64 keeper = keeperPid(s);
    QVERIFY(keeper > 0);
    const int idle = restingFdCount(keeper, 50);
    const QString id = createShell(s, QStringLiteral("r"));
    QTRY_VERIFY(pidIn(d + QStringLiteral("/r.pid")) > 0);
    const qint64 shell = pidIn(d + QStringLiteral("/r.pid"));
    // Once the keeper took the session's master and pidfd (it reads its
    // socket in its own time: the shell may run before).
    const int keeperFds = idle + 2;
    QTRY_COMPARE(fdCount(keeper), keeperFds);
    const QString instance = status(s).value(QStringLiteral("instance")).toString();
    QCOMPARE(s.http("POST", "/api/restart").status, 202);
    QVERIFY(QTest::qWaitFor([&] {
        const QJsonObject st = status(s);
        return !st.isEmpty() && st.value(QStringLiteral("instance")).toString() != instance;
    }, 15000));
    QCOMPARE(keeperPid(s), keeper);
    QCOMPARE(status(s).value(QStringLiteral("recovered_after_crash")).toInt(-1), 0);
    QVERIFY(status(s).value(QStringLiteral("crashed_at")).isNull()); // a restart is no crash
    QCOMPARE(restingFdCount(keeper, 50), keeperFds); // the same copies, none twice
    // A crash after the restart keeps the session as before.
    QVERIFY(::kill(pid_t(s.proc.processId()), SIGKILL) == 0);
    QVERIFY(s.waitFinished());
    QVERIFY(startAgain(s));
    QCOMPARE(s.session(id).value(QStringLiteral("pid")).toDouble(), double(shell));
    QVERIFY(typeAndSee(s, id, "touch " + d.toUtf8() + "/restarted", d + QStringLiteral("/restarted")));
}

void TestCrash::sigkillWithoutAKeeper()
{
    if (tetherBinary().isEmpty())
        QSKIP("no tether executable in this build");
    ServeProcess s;
    s.proc.setProcessEnvironment(s.environment({QStringLiteral("TETHER_KEEPER=0")}));
    QVERIFY(s.start());
    const qint64 server = s.proc.processId();
    const QString d = s.dir.path();
    QCOMPARE(keeperPid(s), 0);
    // bash -m: job control, so `sleep 1001 &` runs in a process group of its
    // own and `sleep 1003` is the terminal's foreground job; ": " last keeps
    // bash itself running (it would exec its last command otherwise).
    const QString script = QStringLiteral("sleep 1001 & echo $! > %1/bg; sleep 1002 & disown; echo $! > %1/disowned; "
                                          "echo $$ > %1/shell; exec 3>%1/fg-started; sleep 1003; :").arg(d);
    QVERIFY(!s.create({QStringLiteral("bash"), QStringLiteral("-m"), QStringLiteral("-c"), script}).isEmpty());
    QTRY_VERIFY(QFile::exists(d + QStringLiteral("/fg-started")));
    const qint64 shell = pidIn(d + QStringLiteral("/shell"));
    const qint64 bg = pidIn(d + QStringLiteral("/bg"));
    const qint64 disowned = pidIn(d + QStringLiteral("/disowned"));
    QVERIFY(shell > 0 && bg > 0 && disowned > 0);
    QTRY_COMPARE(childrenOf(shell, 0, "1003"), 1); // the foreground job
    QCOMPARE(liveParent(shell), server);
    QCOMPARE(liveParent(bg), shell);
    QCOMPARE(liveParent(disowned), shell);
    qint64 fg = -1;
    for (const QString &e : QDir(QStringLiteral("/proc")).entryList(QDir::Dirs | QDir::NoDotAndDotDot))
        if (liveParent(e.toLongLong()) == shell && readFile(QStringLiteral("/proc/%1/cmdline").arg(e)).contains("1003"))
            fg = e.toLongLong();
    QVERIFY(fg > 0);

    QVERIFY(::kill(pid_t(server), SIGKILL) == 0);
    QVERIFY(s.waitFinished());
    // Hung up by the kernel: the shell and its foreground job end.
    QTRY_COMPARE(liveParent(shell), -1);
    QTRY_COMPARE(liveParent(fg), -1);
    // In process groups of their own: alive, orphaned.
    QTest::qWait(300); // a negative check, after the sync point above: a SIGHUP would have arrived with the others
    const qint64 bgParent = liveParent(bg);
    const qint64 disownedParent = liveParent(disowned);
    ::kill(pid_t(bg), SIGKILL);
    ::kill(pid_t(disowned), SIGKILL);
    QVERIFY2(bgParent > 0 && bgParent != shell && bgParent != server, qPrintable(QString::number(bgParent)));
    QVERIFY2(disownedParent > 0 && disownedParent != shell && disownedParent != server,
             qPrintable(QString::number(disownedParent)));
}

void TestCrash::keeperIsNotStartedByHand()
{
    if (tetherBinary().isEmpty())
        QSKIP("no tether executable in this build");
    ServeProcess s;
    const TetherRun r = runTether(s, {QStringLiteral("keeper")});
    QCOMPARE(r.code, 2);
    QVERIFY2(r.err.contains("internal command, started by `tether serve`"), r.err.constData());
    QVERIFY(!QFile::exists(s.runDir + QStringLiteral("/tether/keeper.sock")));
}

QTEST_GUILESS_MAIN(TestCrash)
#include "tst_crash.moc"
