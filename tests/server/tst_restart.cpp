// SPDX-License-Identifier: GPL-2.0-or-later
// Restart in place (issue 13) with the real binary: `tether restart` and
// SIGUSR2 keep the pid, the sessions (a shell with a background job, a
// program on the alternate screen whose start rolled out of the ring, a
// flood, an exited session within its TTL), ids, offsets, TTL deadlines and
// the key; viewers are closed 1012 and resume with no byte lost or repeated;
// shells never see SIGHUP; a hundred restarts in a row under a flood lose
// and repeat no byte and leave no zombie, no extra fd and no extra memory;
// and each way a restart can fail leaves every session alive.
#include "fulldisk.h"
#include "restartutil.h"
#include "serveprocess.h"
#include "sanitizer.h"
#include "servertestutil.h"
#include "testutil.h"
#include "vtrender.h"

#include <QDir>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QTemporaryDir>
#include <QTest>
#include <QWebSocket>
#include <QtEndian>

#include <csignal>
#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

using namespace ServerTest;

namespace {

/// A WebSocket viewer that, like AttachClient and the dashboard, reconnects
/// with resume=OFFSET whenever its connection ends (1012 included, which
/// QWebSocket reports as 1002). `stream` is every output byte it received,
/// prelude excluded: across restarts it must be the program's output, whole.
class ResumingViewer : public QObject
{
public:
    /// `retryMs`: how long it waits before reconnecting (AttachClient's
    /// first backoff is 125-250 ms).
    ResumingViewer(quint16 port, const QByteArray &key, const QString &id, const QString &mode = QStringLiteral("control"),
                   int retryMs = 20)
        : m_port(port), m_key(key), m_id(id), m_mode(mode), m_retryMs(retryMs)
    {
        open();
    }
    ~ResumingViewer() override { stop(); }

    QByteArray stream;
    quint64 offset = 0;
    QList<QJsonObject> attaches;
    QList<int> closeCodes;
    bool live() const { return m_ws && !attaches.isEmpty() && m_attachedNow; }

    /// Types `bytes` (control mode, while attached).
    void type(const QByteArray &bytes)
    {
        if (m_ws && m_attachedNow)
            m_ws->sendBinaryMessage(bytes);
    }

    void stop()
    {
        m_stopped = true;
        if (m_ws) {
            m_ws->disconnect(this);
            m_ws->abort();
            m_ws->deleteLater();
            m_ws = nullptr;
        }
    }

private:
    void open()
    {
        m_ws = new QWebSocket(QString(), QWebSocketProtocol::VersionLatest, this);
        m_attachedNow = false;
        QString q = QStringLiteral("?mode=") + m_mode;
        if (!attaches.isEmpty())
            q += QStringLiteral("&resume=") + QString::number(offset);
        QNetworkRequest req(QUrl(QStringLiteral("ws://127.0.0.1:%1/ws/%2%3").arg(m_port).arg(m_id, q)));
        req.setRawHeader("Authorization", "Bearer " + m_key);
        QWebSocket *ws = m_ws;
        connect(ws, &QWebSocket::textMessageReceived, this, [this](const QString &t) {
            const QJsonObject o = QJsonDocument::fromJson(t.toUtf8()).object();
            if (o.value(QStringLiteral("type")).toString() != QLatin1String("attached"))
                return;
            attaches.append(o);
            m_attachedNow = true;
            offset = quint64(o.value(QStringLiteral("replay_from")).toDouble());
            m_preludeLeft = qint64(o.value(QStringLiteral("prelude_bytes")).toDouble());
        });
        connect(ws, &QWebSocket::binaryMessageReceived, this, [this](const QByteArray &b) {
            const qint64 skip = qMin<qint64>(m_preludeLeft, b.size());
            m_preludeLeft -= skip;
            stream += b.mid(int(skip));
            offset += quint64(b.size() - skip);
        });
        connect(ws, &QWebSocket::disconnected, this, [this, ws]() {
            closeCodes.append(int(ws->closeCode()));
            ws->disconnect(this);
            ws->deleteLater();
            if (m_ws == ws)
                m_ws = nullptr;
            m_attachedNow = false;
            // Endings a real client does not retry (protocol.md, close codes).
            const int code = closeCodes.last();
            if (code == 4409 || code == 4404 || code == 4410 || code == 1001)
                m_stopped = true;
            if (!m_stopped)
                QTimer::singleShot(m_retryMs, this, [this]() {
                    if (!m_stopped && !m_ws)
                        open();
                });
        });
        ws->open(req);
    }

    quint16 m_port;
    QByteArray m_key;
    QString m_id;
    QString m_mode;
    int m_retryMs = 20;
    QWebSocket *m_ws = nullptr;
    qint64 m_preludeLeft = 0;
    bool m_attachedNow = false;
    bool m_stopped = false;
};

/// Numbers "N\r\n" in `stream` must run 1, 2, 3... with nothing missing or
/// repeated; returns the count (0 and a warning when they do not).
int consecutiveLines(const QByteArray &stream)
{
    const QList<QByteArray> lines = stream.split('\n');
    int expected = 1;
    for (int i = 0; i + 1 < lines.size(); ++i) { // the last piece may be a partial line
        const QByteArray l = lines.at(i).trimmed();
        if (l.toInt() != expected) {
            qWarning("line %d is \"%s\", expected %d", i, l.constData(), expected);
            return 0;
        }
        ++expected;
    }
    return expected - 1;
}

/// A program writing numbered lines, about 25000 a second (`seq` in steps).
QStringList flood()
{
    return {QStringLiteral("/bin/sh"), QStringLiteral("-c"),
            QStringLiteral("i=1; while :; do seq $i $((i+499)); i=$((i+500)); sleep 0.02; done")};
}

/// Children of `pid` that are zombies (printed).
int zombiesOf(qint64 pid)
{
    return childrenOf(pid, 'Z');
}

/// Fds of `pid` above 2 without close-on-exec (they would leak into a shell
/// or a failed restart's next attempt), as "fd -> target".
QStringList inheritableFds(qint64 pid)
{
    QStringList out;
    const QString dir = QStringLiteral("/proc/%1/fdinfo").arg(pid);
    for (const QString &e : QDir(dir).entryList(QDir::Files | QDir::NoDotAndDotDot)) {
        if (e.toInt() <= 2)
            continue;
        QFile f(dir + QLatin1Char('/') + e);
        if (!f.open(QIODevice::ReadOnly))
            continue;
        for (const QByteArray &line : f.readAll().split('\n')) {
            if (!line.startsWith("flags:"))
                continue;
            const uint flags = line.mid(6).trimmed().toUInt(nullptr, 8);
            if (!(flags & O_CLOEXEC))
                out.append(e + QStringLiteral(" -> ") + QFile::symLinkTarget(QStringLiteral("/proc/%1/fd/%2").arg(pid).arg(e)));
        }
    }
    return out;
}

/// A failure message for a descriptor count above its limit: the count seen,
/// the limit, and which descriptors `pid` holds now.
QString fdsLeft(qint64 pid, int seen, int limit)
{
    return QStringLiteral("%1 fds, at most %2 expected; the server's now:\n%3").arg(seen).arg(limit).arg(fdListing(pid));
}

/// Output retained by every session of `s` (buffer_bytes), bytes.
qint64 retainedBytes(const ServeProcess &s)
{
    qint64 n = 0;
    for (const QJsonValue &v : s.http("GET", "/api/sessions").json().value(QStringLiteral("sessions")).toArray())
        n += qint64(v.toObject().value(QStringLiteral("buffer_bytes")).toDouble());
    return n;
}

QString instanceOf(const ServeProcess &s)
{
    return s.http("GET", "/api/restart").json().value(QStringLiteral("instance")).toString();
}

QStringList idsOf(const ServeProcess &s)
{
    QStringList ids;
    for (const QJsonValue &v : s.http("GET", "/api/sessions").json().value(QStringLiteral("sessions")).toArray())
        ids.append(v.toObject().value(QStringLiteral("id")).toString());
    return ids;
}

/// Restarts `s` by `how` ("SIGUSR2", "tether restart", "POST") and waits for
/// the new process image to answer.
bool restart(ServeProcess &s, const QString &how)
{
    const QString before = instanceOf(s);
    if (before.isEmpty())
        return false;
    if (how == QLatin1String("SIGUSR2")) {
        if (::kill(pid_t(s.proc.processId()), SIGUSR2) != 0)
            return false;
    } else if (how == QLatin1String("tether restart")) {
        const TetherRun r = runTether(s, {QStringLiteral("restart")});
        if (r.code != 0 || !r.out.startsWith("Tether restarted in place (pid " + QByteArray::number(s.proc.processId()))) {
            qWarning("tether restart: %d %s %s", r.code, r.out.constData(), r.err.constData());
            return false;
        }
    } else {
        if (s.http("POST", "/api/restart").status != 202)
            return false;
    }
    QElapsedTimer t;
    t.start();
    while (t.elapsed() < 15000) {
        const QString now = instanceOf(s);
        if (!now.isEmpty() && now != before)
            return true;
        QTest::qWait(20);
    }
    return false;
}

/// Everything of a fresh (reset) attach: the `attached` message and every
/// byte of its prelude and replay.
struct Snapshot {
    QJsonObject attached;
    QByteArray bytes;
};
Snapshot snapshot(const ServeProcess &s, const QString &id, const QString &query = QString())
{
    WsClient c;
    c.open(s.port, QStringLiteral("/ws/%1?mode=watch").arg(id) + query, s.key);
    if (!QTest::qWaitFor([&]() {
            return c.gotAttached()
                && c.bytes.size() >= c.num("prelude_bytes") + c.num("replay_bytes") + qMax<qint64>(0, c.num("snapshot_bytes"));
        }, 10000))
        return Snapshot();
    c.ws.close();
    return Snapshot{c.attachedMsg, c.bytes};
}

} // namespace

/// Empty when the ring a snapshot replayed (the whole ring, from its
/// `replay_from`) holds what a viewer received (from its first attach's
/// `replay_from` on), where the two overlap, and they do overlap and end
/// together or the ring goes on; else what differs. A flood fills the 1 MiB
/// ring in seconds, sooner or later as the machine is loaded, so the ring's
/// start is not assumed to be offset 0: only that nothing in it differs
/// from the stream and that it reaches the stream's end.
QString ringAgrees(const Snapshot &all, const ResumingViewer &viewer)
{
    if (viewer.attaches.isEmpty())
        return QStringLiteral("the viewer never attached");
    // Offsets as the session's: the viewer's stream starts at its first
    // attach's replay_from, the ring's bytes at the snapshot's.
    const qint64 start = qint64(viewer.attaches.first().value(QStringLiteral("replay_from")).toDouble());
    const qint64 end = start + viewer.stream.size();
    const qint64 ringFrom = qint64(all.attached.value(QStringLiteral("replay_from")).toDouble());
    const qint64 from = qMax(start, ringFrom);
    if (from > end)
        return QStringLiteral("the ring starts at %1, past the viewer's end at %2").arg(ringFrom).arg(end);
    if (ringFrom + all.bytes.size() < end)
        return QStringLiteral("the ring ends at %1, before the viewer's end at %2").arg(ringFrom + all.bytes.size()).arg(end);
    if (all.bytes.mid(int(from - ringFrom), int(end - from)) != viewer.stream.mid(int(from - start)))
        return QStringLiteral("the ring differs from what the viewer received between %1 and %2").arg(from).arg(end);
    return QString();
}

class TestRestart : public QObject
{
    Q_OBJECT
private Q_SLOTS:
    void initTestCase()
    {
        if (tetherBinary().isEmpty())
            QSKIP("the tether executable is not built in this tree");
    }
    void keepsEverything_data();
    void keepsEverything();
    void restartsInARowWhileFlooding();
    void screenSurvivesTheRestart();
    void floodThroughASmallRingResumesWhole();
    void holdEndsWhenTheViewerDoesNotComeBack();
    void missingBinaryIsRefusedWithTheReason();
    void failedExecCarriesOn();
    void fullDiskKeepsTheSessions();
    void unreadableStateAdoptsThePtys();
    void badSuccessorIsTakenOverByTheGuardian_data();
    void badSuccessorIsTakenOverByTheGuardian();
};

void TestRestart::keepsEverything_data()
{
    QTest::addColumn<QString>("how");
    QTest::newRow("tether restart") << QStringLiteral("tether restart");
    QTest::newRow("SIGUSR2") << QStringLiteral("SIGUSR2");
}

void TestRestart::keepsEverything()
{
    QFETCH(QString, how);
    ServeProcess s("[sessions]\nttl=3600\nexitedTtl=600\n");
    QVERIFY(s.start());
    const qint64 pid = s.proc.processId();
    const QString hup = s.dir.filePath(QStringLiteral("hup"));
    const QString bgFile = s.dir.filePath(QStringLiteral("bg"));

    // A shell with a background job, which would note a SIGHUP.
    const QString shell = s.create({QStringLiteral("/bin/sh"), QStringLiteral("-c"),
                                    QStringLiteral("trap 'echo HUP >> %1' HUP; sleep 1000 & echo $! > %2; "
                                                   "echo ready; while read l; do echo \"got:$l\"; done").arg(hup, bgFile)});
    // On the alternate screen, cursor hidden, titled; its start then rolls
    // out of the 1 MiB ring, so only the saved terminal state knows.
    const QString alt = s.create({QStringLiteral("/bin/sh"), QStringLiteral("-c"),
                                  QStringLiteral("trap 'echo HUP >> %1' HUP; printf '\\033]2;alt title\\007\\033[?1049h\\033[?25l'; "
                                                 "head -c 1500000 /dev/zero | tr '\\\\0' x; echo; echo end; exec sleep 1000").arg(hup)});
    const QString flooding = s.create(flood());
    const QString exited = s.create({QStringLiteral("/bin/sh"), QStringLiteral("-c"), QStringLiteral("echo bye; exit 3")});
    QVERIFY(!shell.isEmpty() && !alt.isEmpty() && !flooding.isEmpty() && !exited.isEmpty());
    QTRY_VERIFY(QFile::exists(bgFile) && !readFile(bgFile).trimmed().isEmpty());
    const pid_t bg = pid_t(readFile(bgFile).trimmed().toInt());
    QTRY_COMPARE(s.session(exited).value(QStringLiteral("state")).toString(), QStringLiteral("exited"));
    QTRY_VERIFY_WITH_TIMEOUT(s.session(alt).value(QStringLiteral("offset")).toDouble() > 1500000, 20000);
    QVERIFY(s.session(alt).value(QStringLiteral("buffer_bytes")).toDouble() < s.session(alt).value(QStringLiteral("offset")).toDouble());
    // Named sessions keep their names (appended to the handed-over metadata).
    QCOMPARE(s.http("PATCH", "/api/sessions/" + alt.toLatin1(), R"({"name": "alt screen \u00e9"})").status, 200);
    QCOMPARE(s.http("PATCH", "/api/sessions/" + exited.toLatin1(), R"({"name": "done"})").status, 200);

    // Viewers: a control viewer on the flood and on the shell (it types),
    // a raw one that records the exact close frame.
    ResumingViewer floodViewer(s.port, s.key, flooding);
    ResumingViewer shellViewer(s.port, s.key, shell);
    QTRY_VERIFY(floodViewer.live() && shellViewer.live());
    QTRY_VERIFY(floodViewer.stream.size() > 10000);
    RawWs raw;
    QVERIFY(raw.handshake(s.port, "/ws/" + shell.toLatin1() + "?mode=watch", s.key));
    // A read-only link of the shell, watched through it (its token, not the key).
    const QJsonObject shareBefore = s.http("POST", "/api/shares", "{\"session\":\"" + shell.toLatin1() + "\"}").json();
    const QByteArray shareToken = shareBefore.value(QStringLiteral("token")).toString().toLatin1();
    QVERIFY(!shareToken.isEmpty());
    ResumingViewer linkViewer(s.port, shareToken, shell, QStringLiteral("watch"));
    QTRY_VERIFY(linkViewer.live());

    const Snapshot altBefore = snapshot(s, alt);
    QVERIFY(!altBefore.bytes.isEmpty());
    QVERIFY(altBefore.bytes.startsWith("\x1b[?1049h")); // the prelude
    QTRY_COMPARE(s.session(alt).value(QStringLiteral("viewers")).toInt(), 0);
    const QStringList ids = idsOf(s);
    const QJsonObject exitedBefore = s.session(exited);
    const QJsonObject altJsonBefore = s.session(alt);
    QVERIFY(!exitedBefore.value(QStringLiteral("detached_since")).toString().isEmpty());
    QElapsedTimer sinceBefore;
    sinceBefore.start();
    const QByteArray runtimeBefore = readFile(s.runtimeFile());
    const QStringList inherited = inheritableFds(pid); // from the test harness

    QVERIFY(restart(s, how));

    // The same process, the same server.
    QCOMPARE(s.proc.processId(), pid);
    QCOMPARE(s.proc.state(), QProcess::Running);
    QCOMPARE(idsOf(s), ids);
    QCOMPARE(s.http("GET", "/api/sessions").status, 200); // the same key
    QCOMPARE(readFile(s.runtimeFile()), runtimeBefore);
    QCOMPARE(s.out.count('\n'), 1); // "Tether is serving" once
    QVERIFY2(s.err.contains("restarted in place (pid " + QByteArray::number(pid) + "): 4 sessions kept"), s.err.constData());
    const QJsonObject status = s.http("GET", "/api/restart").json();
    QCOMPARE(status.value(QStringLiteral("restarts")).toInt(), 1);
    QVERIFY(status.value(QStringLiteral("last_error")).isNull());
    QCOMPARE(status.value(QStringLiteral("version")).toString(), QStringLiteral(TETHER_PROJECT_VERSION));

    // The raw viewer got 1012 "server restarting".
    RawWs::Frame f;
    bool sawClose = false;
    QTRY_VERIFY([&]() {
        while (raw.nextFrame(&f))
            if (f.opcode == 8)
                sawClose = true;
        return sawClose;
    }());
    QCOMPARE(qFromBigEndian<quint16>(f.payload.constData()), quint16(1012));
    QCOMPARE(f.payload.mid(2), QByteArray("server restarting"));

    // TTL deadlines: the exited one keeps its detached_since and counts on.
    const QJsonObject exitedAfter = s.session(exited);
    QCOMPARE(exitedAfter.value(QStringLiteral("detached_since")), exitedBefore.value(QStringLiteral("detached_since")));
    QCOMPARE(exitedAfter.value(QStringLiteral("exit_code")).toInt(), 3);
    QCOMPARE(exitedAfter.value(QStringLiteral("offset")), exitedBefore.value(QStringLiteral("offset")));
    const int leftBefore = exitedBefore.value(QStringLiteral("expires_in")).toInt();
    const int leftAfter = exitedAfter.value(QStringLiteral("expires_in")).toInt();
    QVERIFY2(leftAfter <= leftBefore && leftAfter >= leftBefore - 1 - int(sinceBefore.elapsed() / 1000),
             qPrintable(QStringLiteral("%1 then %2").arg(leftBefore).arg(leftAfter)));
    const QJsonObject altJsonAfter = s.session(alt); // detached, running, TTL 3600
    for (const char *field : {"detached_since", "created", "pid", "offset", "title", "command", "cwd", "cols", "rows", "name"})
        QCOMPARE(altJsonAfter.value(QLatin1String(field)), altJsonBefore.value(QLatin1String(field)));
    QCOMPARE(altJsonAfter.value(QStringLiteral("name")).toString(), QStringLiteral("alt screen \u00e9"));
    QCOMPARE(exitedAfter.value(QStringLiteral("name")).toString(), QStringLiteral("done"));
    QVERIFY(s.session(shell).value(QStringLiteral("name")).toString().isEmpty());
    // Still unique after the restart.
    QCOMPARE(s.http("PATCH", "/api/sessions/" + shell.toLatin1(), R"({"name": "done"})").status, 409);
    QVERIFY(altJsonAfter.value(QStringLiteral("expires_in")).isDouble());

    // A fresh attach to the alternate-screen session replays exactly as
    // before: same start, same prelude, same bytes.
    const Snapshot altAfter = snapshot(s, alt);
    for (const char *field : {"replay_from", "prelude_bytes", "replay_bytes", "offset", "title", "reason"})
        QCOMPARE(altAfter.attached.value(QLatin1String(field)), altBefore.attached.value(QLatin1String(field)));
    QCOMPARE(altAfter.bytes, altBefore.bytes);

    // Viewers resumed: nothing lost, nothing twice.
    QTRY_VERIFY(floodViewer.live() && shellViewer.live());
    const int linesAtRestart = consecutiveLines(floodViewer.stream);
    QTRY_VERIFY(consecutiveLines(floodViewer.stream) > linesAtRestart + 1000);
    QVERIFY(floodViewer.attaches.size() >= 2);
    // Qt 5.15 and 6.4 report the 1012 close as 1002 (protocol.md, "Note for Qt clients").
    QVERIFY2(floodViewer.closeCodes.first() == 1012 || floodViewer.closeCodes.first() == 1002,
             qPrintable(QString::number(floodViewer.closeCodes.first())));
    for (int i = 1; i < floodViewer.attaches.size(); ++i)
        QCOMPARE(floodViewer.attaches.at(i).value(QStringLiteral("reason")).toString(), QStringLiteral("resume"));
    floodViewer.stop();
    const Snapshot all = snapshot(s, flooding); // the whole ring: the program's output
    const QString floodDiffers = ringAgrees(all, floodViewer);
    QVERIFY2(floodDiffers.isEmpty(), qPrintable(floodDiffers));

    // The shell still reads and answers, and never saw a hangup; its
    // background job lives.
    QTRY_VERIFY(shellViewer.live());
    shellViewer.type("after restart\r");
    QTRY_VERIFY(shellViewer.stream.contains("got:after restart"));

    // The read-only link was kept (same token, session and time) and its
    // viewer resumed through it; the link still grants only what it did.
    const QJsonArray sharesAfter = s.http("GET", "/api/shares").json().value(QStringLiteral("shares")).toArray();
    QCOMPARE(sharesAfter.size(), 1);
    for (const char *field : {"token", "session", "created", "url"})
        QCOMPARE(sharesAfter.at(0).toObject().value(QLatin1String(field)), shareBefore.value(QLatin1String(field)));
    QTRY_VERIFY(linkViewer.live());
    QVERIFY(linkViewer.attaches.size() >= 2);
    QCOMPARE(linkViewer.attaches.last().value(QStringLiteral("reason")).toString(), QStringLiteral("resume"));
    QTRY_VERIFY(linkViewer.stream.contains("got:after restart"));
    QCOMPARE(linkViewer.stream.count("ready"), 1);
    const QByteArray asLink = "Host: 127.0.0.1:" + QByteArray::number(s.port) + "\r\nAuthorization: Bearer " + shareToken + "\r\n\r\n";
    QCOMPARE(rawHttp(s.port, "GET /api/sessions/" + shell.toLatin1() + " HTTP/1.1\r\n" + asLink).status, 200);
    QCOMPARE(rawHttp(s.port, "GET /api/sessions HTTP/1.1\r\n" + asLink).status, 403);
    linkViewer.stop();
    QVERIFY(shellViewer.stream.startsWith("ready\r\n"));
    QCOMPARE(shellViewer.stream.count("ready"), 1);
    QVERIFY(!QFile::exists(hup));
    QCOMPARE(::kill(bg, 0), 0);
    QVERIFY(TestUtil::processState(bg) != 'Z');
    QCOMPARE(zombiesOf(pid), 0);
    QCOMPARE(inheritableFds(pid), inherited); // masters, pidfds, socket: close-on-exec again

    // The trap does note a hangup: stopping Tether (not restarting it) ends
    // the sessions with SIGHUP.
    s.proc.terminate();
    QVERIFY(s.waitFinished());
    QTRY_VERIFY(QFile::exists(hup));
}

void TestRestart::screenSurvivesTheRestart()
{
    // A program that draws once and then updates a few cells, past the
    // 64 KiB ring: after a restart in place the server's screen is the same
    // (carried in the state), so a reattach gets the same exact snapshot.
    ServeProcess s;
    QVERIFY(s.start({QStringLiteral("--buffer-size"), QStringLiteral("64K")}));
    const QString id = s.create({QStringLiteral("/bin/sh"), QStringLiteral("-c"), QStringLiteral(
        "printf '\\033[?1049h\\033[2J\\033[H\\033[1;44m TOP \\033[0m\\033[24;1H\\033[7mbar\\033[0m\\033]2;drawn\\007';"
        "i=0; while [ $i -lt 6000 ]; do i=$((i+1)); [ $((i%50)) -ne 0 ] || sleep 0.01; printf '\\033[5;3H\\033[33m%05d\\033[0m' $i; done;"
        "printf '\\033[7;1Hdone\\033]2;finished\\007'; exec sleep 1000")});
    QVERIFY(!id.isEmpty());
    auto caughtUp = [&]() {
        const QJsonObject o = s.session(id);
        const QJsonObject scr = o.value(QStringLiteral("screen")).toObject();
        return o.value(QStringLiteral("offset")).toDouble() > 100000 && scr.value(QStringLiteral("synced")).toBool()
            && scr.value(QStringLiteral("offset")) == o.value(QStringLiteral("offset"));
    };
    // Caught up with all of it: the program has finished writing (its last
    // bytes set the title "finished", then it sleeps).
    QTRY_VERIFY_WITH_TIMEOUT(s.session(id).value(QStringLiteral("title")).toString() == QStringLiteral("finished")
                                 && caughtUp(),
                             30000);
    const QJsonObject before = s.session(id);
    QVERIFY(before.value(QStringLiteral("screen_bytes")).toDouble() > 0);
    const Snapshot rawBefore = snapshot(s, id);
    const Snapshot screenBefore = snapshot(s, id, QStringLiteral("&replay=screen&lines=10"));
    QVERIFY(rawBefore.attached.value(QStringLiteral("snapshot_at")).isDouble());
    QCOMPARE(screenBefore.attached.value(QStringLiteral("replay_mode")).toString(), QStringLiteral("screen"));

    QVERIFY(restart(s, QStringLiteral("SIGUSR2")));

    const QJsonObject after = s.session(id);
    QCOMPARE(after.value(QStringLiteral("screen")), before.value(QStringLiteral("screen")));
    const Snapshot rawAfter = snapshot(s, id);
    const Snapshot screenAfter = snapshot(s, id, QStringLiteral("&replay=screen&lines=10"));
    for (const char *field : {"replay_from", "prelude_bytes", "replay_bytes", "offset", "snapshot_at", "snapshot_bytes",
                              "replay_mode"}) {
        QCOMPARE(rawAfter.attached.value(QLatin1String(field)), rawBefore.attached.value(QLatin1String(field)));
        QCOMPARE(screenAfter.attached.value(QLatin1String(field)), screenBefore.attached.value(QLatin1String(field)));
    }
    QCOMPARE(rawAfter.bytes, rawBefore.bytes);
    QCOMPARE(screenAfter.bytes, screenBefore.bytes);
    // And what they show is the program's screen.
    TestUtil::VtRender shown(80, 24);
    shown.feed(screenAfter.bytes);
    QCOMPARE(shown.rowText(0), QStringLiteral(" TOP"));
    QCOMPARE(shown.rowText(4), QStringLiteral("  06000"));
    QCOMPARE(shown.rowText(6), QStringLiteral("done"));
    QCOMPARE(shown.rowText(23), QStringLiteral("bar"));
    QCOMPARE(shown.title(), QStringLiteral("finished"));
    s.proc.terminate();
    QVERIFY(s.waitFinished());
}

void TestRestart::floodThroughASmallRingResumesWhole()
{
    // D3 (a new user, 2 runs of 2): a control viewer of a flood through a
    // 64 KiB ring, a restart in place, the viewer back with resume= after
    // 250 ms as `tether attach` does. Between the close and the resume no
    // viewer held the program back, so the next image drained the PTY past
    // the viewer's offset and the resume was a reset replay (rolled_out),
    // thousands of lines short. Now the session keeps the viewer's bytes
    // (the old image from the close, the next from the handed-over hold):
    // every line exactly once, every reattach a resume.
    ServeProcess s;
    QVERIFY(s.start({QStringLiteral("--buffer-size"), QStringLiteral("64K")}));
    // Bursts of 10,000 lines (about 69 KB, more than the ring) every 100 ms,
    // once the viewer is attached (the file `go`: the stream is the numbers
    // alone, from 1).
    constexpr int kLines = 200000;
    const QString go = s.dir.filePath(QStringLiteral("go"));
    const QString id = s.create({QStringLiteral("/bin/sh"), QStringLiteral("-c"),
                                 QStringLiteral("while [ ! -e %1 ]; do sleep 0.02; done; i=1; while [ $i -le %2 ]; do "
                                                "seq $i $((i+9999)); i=$((i+10000)); sleep 0.1; done; exec sleep 1000")
                                     .arg(go).arg(kLines)});
    QVERIFY(!id.isEmpty());
    ResumingViewer viewer(s.port, s.key, id, QStringLiteral("control"), 250);
    QTRY_VERIFY(viewer.live());
    QVERIFY(QFile(go).open(QIODevice::WriteOnly));
    QTRY_VERIFY_WITH_TIMEOUT(consecutiveLines(viewer.stream) > 20000, 20000);
    QVERIFY(restart(s, QStringLiteral("SIGUSR2")));
    QTRY_VERIFY_WITH_TIMEOUT(viewer.stream.endsWith(QByteArray::number(kLines) + "\r\n"), 60000);
    viewer.stop();
    QVERIFY(viewer.attaches.size() >= 2);
    // The restart came in the middle of the flood (else this tests nothing):
    // its resume was at least 300,000 bytes (about 43,000 lines) before the end.
    const qint64 resumedAt = qint64(viewer.attaches.at(1).value(QStringLiteral("replay_from")).toDouble());
    QVERIFY2(resumedAt + 300000 < viewer.stream.size(),
             qPrintable(QStringLiteral("resumed at %1 of %2").arg(resumedAt).arg(viewer.stream.size())));
    for (int i = 1; i < viewer.attaches.size(); ++i)
        QCOMPARE(viewer.attaches.at(i).value(QStringLiteral("reason")).toString(), QStringLiteral("resume"));
    QCOMPARE(consecutiveLines(viewer.stream), kLines);
    s.proc.terminate();
    QVERIFY(s.waitFinished());
}

void TestRestart::holdEndsWhenTheViewerDoesNotComeBack()
{
    // The control viewer of a flood is closed by the restart and never
    // comes back: the session holds its output (the program blocks once the
    // ring is full from the viewer's offset on) for Session's 5 s grace
    // period only, then drains again. A vanished client does not block a
    // session for good.
    ServeProcess s;
    QVERIFY(s.start({QStringLiteral("--buffer-size"), QStringLiteral("64K")}));
    // Bursts of 10,000 lines (about 69 KB, more than the ring) every 100 ms:
    // a flood that keeps what the test's client holds small.
    const QString id = s.create({QStringLiteral("/bin/sh"), QStringLiteral("-c"),
                                 QStringLiteral("i=1; while :; do seq $i $((i+9999)); i=$((i+10000)); sleep 0.1; done")});
    QVERIFY(!id.isEmpty());
    WsClient c; // does not reconnect
    c.open(s.port, QStringLiteral("/ws/%1?mode=control").arg(id), s.key);
    QTRY_VERIFY(c.gotAttached() && c.bytes.size() > 100000);
    QElapsedTimer sinceRestart;
    sinceRestart.start();
    QVERIFY(restart(s, QStringLiteral("SIGUSR2")));
    QTRY_VERIFY(c.disconnected);
    auto offset = [&]() { return qint64(s.session(id).value(QStringLiteral("offset")).toDouble()); };
    // Held: the ring fills from the viewer's offset and reading stops. A
    // negative check (the offset does not move while the program writes
    // every 100 ms), each try after a round trip that read the offset; it
    // must be seen within the grace period, after which the flood goes on
    // and no try succeeds.
    qint64 held = -1;
    QTRY_VERIFY2_WITH_TIMEOUT([&] {
        held = offset();
        QTest::qWait(400);
        return offset() == held;
    }(), "the session went on reading: its output is not held", 20000);
    QVERIFY(s.session(id).value(QStringLiteral("viewers")).toInt() == 0);
    // Then the grace period ends and the program goes on.
    QTRY_VERIFY_WITH_TIMEOUT(offset() > held + 1024 * 1024, 20000);
    QVERIFY(sinceRestart.elapsed() >= 5000);
    s.proc.terminate();
    QVERIFY(s.waitFinished());
}

void TestRestart::restartsInARowWhileFlooding()
{
    // Issue 13: restarts in a row while a session floods output and a
    // viewer reads it: every byte arrives once, no fd or memory growth, no
    // zombie. make test runs 10 (a descriptor or zombie left per restart
    // shows at once: the counts are compared exactly, both ways of
    // restarting 5 times each); make soak runs 500 (TETHER_TEST_RESTARTS),
    // where slow memory growth shows.
    bool ok = false;
    int count = qEnvironmentVariableIntValue("TETHER_TEST_RESTARTS", &ok);
    if (!ok || count < 1)
        count = 10;
    ServeProcess s;
    // Large enough that nothing rolls out of the ring during the run, so the
    // whole stream can be compared with the ring at the end.
    QVERIFY(s.start({QStringLiteral("--buffer-size"), QStringLiteral("64M")}));
    const qint64 pid = s.proc.processId();
    const QString flooding = s.create(flood());
    const QString idle = s.create({QStringLiteral("/bin/sh"), QStringLiteral("-c"), QStringLiteral("exec sleep 1000")});
    QVERIFY(!flooding.isEmpty() && !idle.isEmpty());
    ResumingViewer viewer(s.port, s.key, flooding);
    ResumingViewer watcher(s.port, s.key, flooding, QStringLiteral("watch"));
    QTRY_VERIFY(viewer.live() && watcher.live());
    QTRY_VERIFY(viewer.stream.size() > 10000);

    // Settle on the first restart (the first image started differently).
    QVERIFY(restart(s, QStringLiteral("SIGUSR2")));
    QTRY_VERIFY(viewer.live() && watcher.live());
    // At rest, not one reading: the restart's HTTP requests may still be
    // closing (servertestutil.h, restingFdCount).
    const int fds = restingFdCount(pid);
    const qint64 rssBefore = rssBytes(pid);
    const qint64 retainedBefore = retainedBytes(s);
    QElapsedTimer clock;
    clock.start();
    for (int i = 0; i < count - 1; ++i) {
        QVERIFY2(restart(s, i % 2 ? QStringLiteral("SIGUSR2") : QStringLiteral("POST")), qPrintable(QString::number(i)));
        QTRY_VERIFY_WITH_TIMEOUT(viewer.live() && watcher.live(), 10000);
    }
    qInfo("%d restarts in place in %lld ms", count - 1, qint64(clock.elapsed()));
    // No growth (see failedExecCarriesOn for why not equality). Each try
    // reads the count once and the answer is that reading: a QTRY_VERIFY
    // reads it again after its loop, and the count moves (servertestutil.h,
    // waitFdsAtMost).
    int seen = 0;
    QVERIFY2(waitFdsAtMost(pid, fds, 10000, &seen), qPrintable(fdsLeft(pid, seen, fds)));
    // Memory: every image starts afresh, so only what is handed over can
    // grow: the retained output (the flood goes on), which a restart holds
    // twice for a moment (the mapped state, then the new ring: the bytes are
    // not copied out of the mapping in between; the allocator may keep some
    // heap). Anything beyond that plus a little slack grew per restart.
    const qint64 rssGrown = rssBytes(pid) - rssBefore;
    const qint64 retainedGrown = retainedBytes(s) - retainedBefore;
    qInfo("resident memory %lld KiB more than after the first restart; retained output %lld KiB more",
          rssGrown / 1024, retainedGrown / 1024);
#ifndef TETHER_ASAN
    QVERIFY2(rssGrown <= 2 * retainedGrown + 4 * 1024 * 1024,
             qPrintable(QStringLiteral("resident memory %1 KiB more, retained output %2 KiB more")
                            .arg(rssGrown / 1024).arg(retainedGrown / 1024)));
#else
    // Not under ASan: its quarantine keeps up to 256 MiB of freed memory,
    // so an image's resident memory follows how much of the flood it
    // handled before the reading, not growth (seen beside a CPU hog: 15.9
    // MiB more with 263 KiB more retained). The plain Qt 5 tree asserts it.
#endif
    QCOMPARE(s.proc.processId(), pid);
    QCOMPARE(idsOf(s), (QStringList{flooding, idle}));
    QCOMPARE(zombiesOf(pid), 0);
    QCOMPARE(s.http("GET", "/api/restart").json().value(QStringLiteral("restarts")).toInt(), count);

    const int lines = consecutiveLines(viewer.stream);
    QTRY_VERIFY(consecutiveLines(viewer.stream) > lines + 500);
    viewer.stop();
    watcher.stop();
    QVERIFY(consecutiveLines(watcher.stream) > 0);
    QVERIFY(viewer.attaches.size() >= count + 1);
    const Snapshot all = snapshot(s, flooding);
    const QString viewerDiffers = ringAgrees(all, viewer);
    QVERIFY2(viewerDiffers.isEmpty(), qPrintable(viewerDiffers));
    const QString watcherDiffers = ringAgrees(all, watcher);
    QVERIFY2(watcherDiffers.isEmpty(), qPrintable(watcherDiffers));
}

void TestRestart::missingBinaryIsRefusedWithTheReason()
{
    ServeProcess s;
    s.proc.setProcessEnvironment(s.environment({QStringLiteral("TETHER_RESTART_BINARY=/nonexistent/tether")}));
    QVERIFY(s.start());
    const QString id = s.create({QStringLiteral("/bin/sh"), QStringLiteral("-c"), QStringLiteral("exec sleep 1000")});
    QVERIFY(!id.isEmpty());
    const QString instance = instanceOf(s);
    ResumingViewer viewer(s.port, s.key, id);
    QTRY_VERIFY(viewer.live());

    const HttpReply r = s.http("POST", "/api/restart");
    QCOMPARE(r.status, 500);
    QCOMPARE(r.json().value(QStringLiteral("error")).toString(),
             QStringLiteral("cannot restart: /nonexistent/tether: No such file or directory"));
    const TetherRun cli = runTether(s, {QStringLiteral("restart")});
    QCOMPARE(cli.code, 1);
    QVERIFY2(cli.err.contains("/nonexistent/tether: No such file or directory"), cli.err.constData());
    QCOMPARE(::kill(pid_t(s.proc.processId()), SIGUSR2), 0);
    QTRY_VERIFY(s.err.contains("cannot restart in place: /nonexistent/tether: No such file or directory"));

    // Nothing happened: the same image, the viewer never cut.
    QCOMPARE(instanceOf(s), instance);
    QVERIFY(viewer.live());
    QCOMPARE(viewer.closeCodes.size(), 0);
    QCOMPARE(s.session(id).value(QStringLiteral("state")).toString(), QStringLiteral("running"));
    QCOMPARE(s.http("GET", "/api/restart").json().value(QStringLiteral("last_error")).toString(),
             QStringLiteral("/nonexistent/tether: No such file or directory"));
}

void TestRestart::failedExecCarriesOn()
{
    // Executable, but not a program execve(2) can run (no #!, not ELF):
    // access(X_OK) passes, execve fails with ENOEXEC after the viewers were
    // closed. The old process must carry on exactly as before.
    ServeProcess s;
    const QString fake = s.dir.filePath(QStringLiteral("not-a-program"));
    writeNotAProgram(fake);
    s.proc.setProcessEnvironment(s.environment({QStringLiteral("TETHER_RESTART_BINARY=") + fake}));
    QVERIFY(s.start());
    const qint64 pid = s.proc.processId();
    const QString flooding = s.create(flood());
    QVERIFY(!flooding.isEmpty());
    ResumingViewer viewer(s.port, s.key, flooding);
    QTRY_VERIFY(viewer.live() && viewer.stream.size() > 10000);
    const QString instance = instanceOf(s);
    const int fds = restingFdCount(pid);
    // Fds the test harness passed on to the server (not ours to judge).
    const QStringList inherited = inheritableFds(pid);

    const TetherRun cli = runTether(s, {QStringLiteral("restart")});
    QCOMPARE(cli.code, 1);
    QVERIFY2(cli.err.contains("the restart failed, Tether carries on: cannot execute " + fake.toLocal8Bit()
                              + ": Exec format error"), cli.err.constData());
    QCOMPARE(instanceOf(s), instance);
    QCOMPARE(s.proc.processId(), pid);
    QTRY_VERIFY(s.err.contains("restart in place failed, carrying on"));

    // The viewer was closed (1012), came back to the same process and lost nothing.
    QTRY_VERIFY(viewer.live() && viewer.attaches.size() >= 2);
    const int lines = consecutiveLines(viewer.stream);
    QTRY_VERIFY(consecutiveLines(viewer.stream) > lines + 500);
    // Accepting again, every fd close-on-exec again, nothing leaked.
    QCOMPARE(s.http("GET", "/api/sessions").status, 200);
    QCOMPARE(inheritableFds(pid), inherited);
    // No growth. (Not equality: a connection of the test's own may still be
    // closing, and restingFdCount takes the lowest count it saw.)
    int seen = 0;
    QVERIFY2(waitFdsAtMost(pid, fds, 10000, &seen), qPrintable(fdsLeft(pid, seen, fds)));
    // And a second attempt fails the same way, no worse.
    QCOMPARE(s.http("POST", "/api/restart").status, 202);
    QTRY_VERIFY(s.http("GET", "/api/restart").json().value(QStringLiteral("last_error")).isString());
    QCOMPARE(instanceOf(s), instance);
    QCOMPARE(zombiesOf(pid), 0);
}

void TestRestart::fullDiskKeepsTheSessions()
{
    // The new image could not rewrite server.json on a full disk and exited
    // 1, taking every session with it. It carries on: the file written
    // before still names this server.
    ServeProcess s;
    const QString full = s.dir.filePath(QStringLiteral("full"));
    QVERIFY(QDir().mkpath(full));
    TestUtil::FullTmpfs disk(full);
    if (!disk.ok())
        QSKIP(qPrintable(QStringLiteral("needs root for a tmpfs: ") + disk.why()));
    QVERIFY(QDir(full).mkpath(QStringLiteral("run")));
    s.runDir = full + QStringLiteral("/run");
    s.proc.setProcessEnvironment(s.environment());
    QVERIFY(s.start());
    const qint64 pid = s.proc.processId();
    const QByteArray runtimeFile = readFile(s.runtimeFile());
    QVERIFY(!runtimeFile.isEmpty());
    const QString shell = s.create({QStringLiteral("/bin/sh"), QStringLiteral("-c"),
                                    QStringLiteral("echo ready; while read l; do echo \"got:$l\"; done")});
    QVERIFY(!shell.isEmpty());
    ResumingViewer viewer(s.port, s.key, shell);
    QTRY_VERIFY(viewer.live() && viewer.stream.contains("ready"));
    QVERIFY(disk.fill());

    QVERIFY(restart(s, QStringLiteral("SIGUSR2")));
    QTRY_VERIFY(s.err.contains("tether serve: warning: cannot rewrite the runtime file ("));
    QVERIFY2(s.err.contains("No space left on device); the one there still names this server"), s.err.constData());
    QCOMPARE(s.proc.processId(), pid);
    QCOMPARE(readFile(s.runtimeFile()), runtimeFile);
    QCOMPARE(idsOf(s), QStringList{shell});
    QTRY_VERIFY(viewer.live() && viewer.attaches.size() >= 2);
    viewer.type("after the restart\r");
    QTRY_VERIFY(viewer.stream.contains("got:after the restart"));
    // Local clients still find it through that file.
    const TetherRun list = runTether(s, {QStringLiteral("list")});
    QCOMPARE(list.code, 0);
    QVERIFY2(list.out.contains(shell.left(4).toLatin1()), list.out.constData());
    viewer.stop();
    QVERIFY(disk.makeRoom());
    s.proc.terminate();
    QVERIFY(s.waitFinished());
    QCOMPARE(s.proc.exitCode(), 0);
    QVERIFY(!QFile::exists(s.runtimeFile()));
}

void TestRestart::unreadableStateAdoptsThePtys()
{
    // A successor that cannot read the state (another format version after
    // an upgrade) still adopts every PTY from the bare fd list: same ids,
    // same processes, working shells; only the earlier output is gone.
    ServeProcess s;
    s.proc.setProcessEnvironment(s.environment({QStringLiteral("TETHER_TEST_IGNORE_HANDOVER_STATE=1")}));
    QVERIFY(s.start());
    const qint64 pid = s.proc.processId();
    const QString hup = s.dir.filePath(QStringLiteral("hup"));
    const QString shell = s.create({QStringLiteral("/bin/sh"), QStringLiteral("-c"),
                                    QStringLiteral("trap 'echo HUP >> %1' HUP; echo ready; while read l; do echo \"got:$l\"; done").arg(hup)});
    const QString exited = s.create({QStringLiteral("/bin/sh"), QStringLiteral("-c"), QStringLiteral("exit 3")});
    QVERIFY(!shell.isEmpty() && !exited.isEmpty());
    QTRY_VERIFY(s.session(shell).value(QStringLiteral("offset")).toInt() > 0);
    QTRY_COMPARE(s.session(exited).value(QStringLiteral("state")).toString(), QStringLiteral("exited"));
    const QJsonObject before = s.session(shell);
    ResumingViewer viewer(s.port, s.key, shell);
    QTRY_VERIFY(viewer.live());

    QVERIFY(restart(s, QStringLiteral("SIGUSR2")));
    QVERIFY2(s.err.contains("the restart state could not be read (ignored (TETHER_TEST_IGNORE_HANDOVER_STATE=1))"),
             s.err.constData());
    QCOMPARE(s.proc.processId(), pid);
    // The exited session had nothing left to adopt (its leader was reaped,
    // its terminal closed); the running shell is kept.
    QCOMPARE(idsOf(s), QStringList{shell});
    const QJsonObject after = s.session(shell);
    QCOMPARE(after.value(QStringLiteral("pid")), before.value(QStringLiteral("pid")));
    QCOMPARE(after.value(QStringLiteral("command")), before.value(QStringLiteral("command")));
    QCOMPARE(after.value(QStringLiteral("state")).toString(), QStringLiteral("running"));
    QCOMPARE(after.value(QStringLiteral("offset")).toInt(), 0);
    QCOMPARE(s.http("GET", "/api/sessions").status, 200); // the key (from its file)

    // The viewer is ahead of the new, empty stream: a reset replay.
    QTRY_VERIFY(viewer.live() && viewer.attaches.size() >= 2);
    QCOMPARE(viewer.attaches.last().value(QStringLiteral("reason")).toString(), QStringLiteral("ahead"));
    viewer.type("still here\r");
    QTRY_VERIFY(viewer.stream.contains("got:still here"));
    QVERIFY(!QFile::exists(hup));
    QCOMPARE(zombiesOf(pid), 0);
}

void TestRestart::badSuccessorIsTakenOverByTheGuardian_data()
{
    // What the "new binary" does once execve(2) has succeeded: each dies
    // before it adopted anything, with the PTY masters, pidfds, listening
    // socket and state in its hands.
    // `upgrade`: Tether runs from a copy, which is replaced (renamed over,
    // as a package manager does) by the failing binary: the guardian runs
    // the old, deleted image. Else TETHER_RESTART_BINARY names it.
    QTest::addColumn<QByteArray>("script");
    QTest::addColumn<bool>("crashes");
    QTest::addColumn<int>("code");
    QTest::addColumn<bool>("upgrade");
    // `hangs`: it never answers (nor dies): the guardian kills it at its
    // deadline (TETHER_RESTART_DEADLINE_MS, here 2 s instead of 60 s).
    QTest::addColumn<bool>("hangs");
    QTest::newRow("exits at once") << QByteArray("exit 3") << false << 3 << false << false;
    QTest::newRow("crashes at start (SIGSEGV)") << QByteArray("kill -SEGV $$") << true << 0 << false << false;
    QTest::newRow("rejects its command line")
        << ("exec '" + QFile::encodeName(tetherBinary()) + "' \"$@\" --no-such-option") << false << 2 << false << false;
    QTest::newRow("upgraded to a binary that crashes") << QByteArray("kill -SEGV $$") << true << 0 << true << false;
    QTest::newRow("hangs (exec sleep 100)") << QByteArray("exec sleep 100") << true << 0 << false << true;
}

void TestRestart::badSuccessorIsTakenOverByTheGuardian()
{
    QFETCH(QByteArray, script);
    QFETCH(bool, crashes);
    QFETCH(int, code);
    QFETCH(bool, upgrade);
    QFETCH(bool, hangs);
    Subreaper subreaper;
    QVERIFY(subreaper.ok);
    ServeProcess s;
    const QString next = s.dir.filePath(upgrade ? QStringLiteral("tether") : QStringLiteral("next-tether"));
    if (upgrade) {
        QVERIFY(QFile::copy(tetherBinary(), next));
        QCOMPARE(::chmod(QFile::encodeName(next).constData(), 0755), 0);
        s.program = next;
    } else {
        writeScript(next, script);
    }
    // A file, not a pipe: the pipe's reader (QProcess) goes when the process
    // it started dies, and the guardian's words come after that.
    const QString errFile = s.dir.filePath(QStringLiteral("stderr"));
    s.proc.setStandardErrorFile(errFile);
    QStringList env;
    if (!upgrade)
        env.append(QStringLiteral("TETHER_RESTART_BINARY=") + next);
    if (hangs)
        env.append(QStringLiteral("TETHER_RESTART_DEADLINE_MS=2000"));
    if (!env.isEmpty())
        s.proc.setProcessEnvironment(s.environment(env));
    QVERIFY(s.start());
    const qint64 pid = s.proc.processId();
    if (upgrade)
        writeScript(next, script);
    const QString hup = s.dir.filePath(QStringLiteral("hup"));
    const QString shell = s.create({QStringLiteral("/bin/sh"), QStringLiteral("-c"),
                                    QStringLiteral("trap 'echo HUP >> %1' HUP; echo ready; while read l; do echo \"got:$l\"; done").arg(hup)});
    const QString flooding = s.create(flood());
    // Ends (code 7) when told to, after the takeover.
    const QString quitter = s.create({QStringLiteral("/bin/sh"), QStringLiteral("-c"), QStringLiteral("read l; exit 7")});
    QVERIFY(!shell.isEmpty() && !flooding.isEmpty() && !quitter.isEmpty());
    ResumingViewer floodViewer(s.port, s.key, flooding);
    ResumingViewer shellViewer(s.port, s.key, shell);
    QTRY_VERIFY(floodViewer.live() && shellViewer.live());
    QTRY_VERIFY(floodViewer.stream.size() > 10000);
    const QStringList ids = idsOf(s);
    const QString instance = instanceOf(s);
    const QJsonObject shellBefore = s.session(shell);
    // From the test harness: the same in the guardian, which inherited them.
    const QStringList inherited = inheritableFds(pid).replaceInStrings(QStringLiteral("/proc/%1/").arg(pid), QString());
    const int fds = restingFdCount(pid);

    // `tether restart` says that it failed, and who carries on.
    const QByteArray why = hangs ? "the new image (pid " + QByteArray::number(pid)
            + ") had not adopted the sessions within 2 s and was killed"
                                 : "the new image (pid " + QByteArray::number(pid) + ") ended before it adopted the sessions";
    const TetherRun cli = runTether(s, {QStringLiteral("restart")});
    QCOMPARE(cli.code, 1);
    QVERIFY2(cli.err.contains("the restart failed, the previous binary carries on (pid "), cli.err.constData());
    QVERIFY2(cli.err.contains(why), cli.err.constData());
    // The process that ran the new binary is gone, as the row says.
    QVERIFY(s.waitFinished());
    QCOMPARE(s.proc.exitStatus(), crashes ? QProcess::CrashExit : QProcess::NormalExit);
    if (!crashes)
        QCOMPARE(s.proc.exitCode(), code);
    if (hangs) // killed by the guardian, not dead of itself
        QCOMPARE(s.proc.exitCode(), SIGKILL);

    // The guardian serves instead: the same port, the same key, another pid.
    QString now;
    QTRY_VERIFY_WITH_TIMEOUT((now = instanceOf(s), !now.isEmpty() && now != instance), 15000);
    const QJsonObject status = s.http("GET", "/api/restart").json();
    const qint64 guardian = qint64(status.value(QStringLiteral("pid")).toDouble());
    GuardianStop stop{guardian}; // the guardian is no QProcess: end it whatever happens
    QVERIFY(guardian > 0 && guardian != pid);
    QCOMPARE(parentOf(guardian), qint64(::getpid())); // an orphan, now the subreaper's
    if (upgrade) { // the previous binary, whose file the upgrade replaced
        char exe[4096] = {};
        QVERIFY(::readlink(QByteArray("/proc/" + QByteArray::number(guardian) + "/exe").constData(), exe, sizeof exe - 1) > 0);
        QCOMPARE(QByteArray(exe), QFile::encodeName(next) + " (deleted)");
    }
    QCOMPARE(status.value(QStringLiteral("restarts")).toInt(), 1);
    const QString lastError = status.value(QStringLiteral("last_error")).toString();
    QVERIFY2(lastError.contains(QString::fromLatin1(why)), qPrintable(lastError));
    QTRY_VERIFY(readFile(errFile).contains("taken over after a failed restart"));
    const QByteArray err = readFile(errFile);
    QVERIFY2(err.contains("tether: restart guardian (pid " + QByteArray::number(guardian) + "): the new image (pid "
                          + QByteArray::number(pid)
                          + (hangs ? ") has not adopted the sessions within 2 s; killing it and taking them over"
                                   : ") ended before it adopted the sessions")), err.constData());
    QVERIFY2(err.contains("taken over after a failed restart (pid " + QByteArray::number(guardian) + ", was "
                          + QByteArray::number(pid) + "): 3 sessions kept"), err.constData());
    if (QByteArray(QTest::currentDataTag()) == "rejects its command line")
        QVERIFY2(err.contains("Unknown option 'no-such-option'"), err.constData()); // the real tether said why
    QCOMPARE(idsOf(s), ids);
    const QJsonObject shellAfter = s.session(shell);
    for (const char *field : {"pid", "created", "command", "offset", "state"})
        QCOMPARE(shellAfter.value(QLatin1String(field)), shellBefore.value(QLatin1String(field)));
    QCOMPARE(qint64(QJsonDocument::fromJson(readFile(s.runtimeFile())).object().value(QStringLiteral("pid")).toDouble()),
             guardian);

    // Viewers resumed with nothing lost or twice; the shell answers and
    // never saw a hangup.
    QTRY_VERIFY(floodViewer.live() && shellViewer.live());
    const int linesAtTakeover = consecutiveLines(floodViewer.stream);
    QTRY_VERIFY(consecutiveLines(floodViewer.stream) > linesAtTakeover + 500);
    for (int i = 1; i < floodViewer.attaches.size(); ++i)
        QCOMPARE(floodViewer.attaches.at(i).value(QStringLiteral("reason")).toString(), QStringLiteral("resume"));
    shellViewer.type("after takeover\r");
    QTRY_VERIFY(shellViewer.stream.contains("got:after takeover"));
    QCOMPARE(shellViewer.stream.count("ready"), 1);
    QVERIFY(!QFile::exists(hup));
    QCOMPARE(zombiesOf(guardian), 0);
    // A shell that ends now is seen to end (its pidfd), but it is no child
    // of this process: its exit status is unknown (-1), and the subreaper
    // (here this test) reaps it.
    ResumingViewer quitterViewer(s.port, s.key, quitter);
    QTRY_VERIFY(quitterViewer.live());
    quitterViewer.type("bye\r");
    QTRY_COMPARE(s.session(quitter).value(QStringLiteral("state")).toString(), QStringLiteral("exited"));
    QCOMPARE(s.session(quitter).value(QStringLiteral("exit_code")).toInt(), -1);
    quitterViewer.stop();
    QCOMPARE(inheritableFds(guardian).replaceInStrings(QStringLiteral("/proc/%1/").arg(guardian), QString()), inherited);
    int seen = 0;
    QVERIFY2(waitFdsAtMost(guardian, fds, 10000, &seen), qPrintable(fdsLeft(guardian, seen, fds)));

    // The package is fixed: a normal restart now keeps the guardian's pid.
    // (Not after a hang: the 2 s deadline the guardian's image inherited
    // would be too short for a loaded machine; 60 s is not.)
    if (hangs)
        return;
    writeScript(next, "exec '" + QFile::encodeName(tetherBinary()) + "' \"$@\"");
    QVERIFY(QTest::qWaitFor([&]() { return s.http("POST", "/api/restart").status == 202; }, 5000));
    QTRY_VERIFY_WITH_TIMEOUT((now = instanceOf(s), !now.isEmpty() && now != instance
                              && s.http("GET", "/api/restart").json().value(QStringLiteral("restarts")).toInt() == 2), 15000);
    const QJsonObject again = s.http("GET", "/api/restart").json();
    QCOMPARE(qint64(again.value(QStringLiteral("pid")).toDouble()), guardian);
    QVERIFY(again.value(QStringLiteral("last_error")).isNull());
    QCOMPARE(idsOf(s), ids); // the exited one within its TTL
    QCOMPARE(s.session(quitter).value(QStringLiteral("exit_code")).toInt(), -1);
    QTRY_VERIFY(floodViewer.live() && shellViewer.live());
    const int linesAfter = consecutiveLines(floodViewer.stream);
    QTRY_VERIFY(consecutiveLines(floodViewer.stream) > linesAfter + 500);
    QTRY_COMPARE(zombiesOf(guardian), 0); // this restart's guardian stood down and was reaped
    QCOMPARE(inheritableFds(guardian).replaceInStrings(QStringLiteral("/proc/%1/").arg(guardian), QString()), inherited);
    floodViewer.stop();
    const Snapshot all = snapshot(s, flooding);
    const QString floodDiffers = ringAgrees(all, floodViewer);
    QVERIFY2(floodDiffers.isEmpty(), qPrintable(floodDiffers));
    QVERIFY(!QFile::exists(hup));
}

QTEST_GUILESS_MAIN(TestRestart)
#include "tst_restart.moc"
