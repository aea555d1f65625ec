// SPDX-License-Identifier: GPL-2.0-or-later
// WebSocket lifetime and flow: keepalive drop, backpressure bound with a
// client that stops reading, watchers too far behind, input stall, clients
// leaving in the middle of their replay, server close / shutdown, and no fd
// leak over many connections.
#include "sanitizer.h"
#include "servertestutil.h"
#include "testutil.h"

#include <QCryptographicHash>
#include <QElapsedTimer>
#include <QTimer>

#include <termios.h>

using namespace Tether;
using namespace ServerTest;

namespace {
/// The input stall (Server::setInputStall) of the tests that wait for it:
/// shorter than the default 10 s, long enough that a loaded machine does
/// not mistake slowness for a stall.
constexpr int kStallMs = 3000;

QString wsPath(const Session *s, const QString &query = QString())
{
    return QStringLiteral("/ws/") + s->id() + (query.isEmpty() ? QString() : QStringLiteral("?") + query);
}

/// Spins the event loop for `ms` (no sleeping: timers, sockets and PTYs run).
void spin(int ms)
{
    QTimer t;
    t.setSingleShot(true);
    QSignalSpy spy(&t, &QTimer::timeout);
    t.start(ms);
    spy.wait(ms + 5000);
}

#ifdef TETHER_ASAN
extern "C" size_t __sanitizer_get_current_allocated_bytes();
#endif

/// What this process holds, in KiB: its resident memory; under
/// AddressSanitizer (build-asan) the heap in use, since ASan keeps freed
/// memory in quarantine (256 MiB) and adds shadow memory, both resident and
/// neither ours (compiler-rt's sanitizer/allocator_interface.h: GCC ships
/// the runtime, not the header).
qint64 rssKiB()
{
#ifdef TETHER_ASAN
    return qint64(__sanitizer_get_current_allocated_bytes() / 1024);
#endif
    const QByteArray status = readFile(QStringLiteral("/proc/self/status"));
    const int i = status.indexOf("VmRSS:");
    return i < 0 ? -1 : status.mid(i + 6, status.indexOf('\n', i) - i - 6).trimmed().split(' ').value(0).toLongLong();
}

/// Checks a stream of `yes` output ("y\r\n" repeated) chunk by chunk.
struct YesChecker {
    qint64 seen = 0;
    int phase = -1;
    bool ok = true;
    void feed(const QByteArray &d)
    {
        static const char pattern[3] = {'y', '\r', '\n'};
        for (char c : d) {
            if (phase < 0)
                phase = c == 'y' ? 0 : c == '\r' ? 1 : 2;
            if (c != pattern[(phase + seen) % 3])
                ok = false;
            ++seen;
        }
    }
};

/// A WebSocket client of a session whose program writes `yes` once it gets a
/// line of input (`stty -echo; read x; exec yes`: attached before the first
/// byte, so its stream is `yes` output only, no replay). It reads as fast as
/// it can, checks the stream as it arrives and keeps none of it; it can send
/// the flow-control messages (docs/protocol.md "Flow control").
struct YesClient : QObject {
    RawWs raw;
    YesChecker check;
    QJsonObject attached;
    qint64 bytes = 0;   ///< output received (= the client's offset: nothing replayed)
    int closeCode = -1;
    QByteArray closeReason;

    YesClient()
    {
        // Parsed as it comes (after RawWs's own pump): the buffer stays small.
        connect(&raw.sock, &QTcpSocket::readyRead, this, &YesClient::poll);
    }
    /// Connects, upgrades and waits for `attached`; false when any fails.
    bool open(quint16 port, const QString &path, const QByteArray &key)
    {
        if (!raw.handshake(port, path.toLatin1(), key))
            return false;
        poll();
        return QTest::qWaitFor([this]() { return !attached.isEmpty(); }, 5000);
    }
    void poll()
    {
        if (!raw.upgraded)
            return; // the handshake reads its answer itself
        raw.pump();
        RawWs::Frame fr;
        while (raw.nextFrame(&fr)) {
            if (fr.opcode == 0x1) {
                const QJsonObject o = QJsonDocument::fromJson(fr.payload).object();
                if (o.value(QStringLiteral("type")).toString() == QLatin1String("attached"))
                    attached = o;
            } else if (fr.opcode == 0x2 || fr.opcode == 0x0) {
                check.feed(fr.payload);
                bytes += fr.payload.size();
            } else if (fr.opcode == 0x8 && fr.payload.size() >= 2) {
                closeCode = (uchar(fr.payload.at(0)) << 8) | uchar(fr.payload.at(1));
                closeReason = fr.payload.mid(2);
            }
        }
    }
    void sendText(const QByteArray &json) { raw.sendFrame(0x1, json); }
};

/// `yes` once a line of input comes (see YesClient).
const QStringList kYesOnInput = {QStringLiteral("/bin/sh"), QStringLiteral("-c"),
                                 QStringLiteral("stty -echo; read x; exec yes")};

/// The session's terminal no longer echoes (its program ran `stty -echo`):
/// input sent from now on does not appear in the output. tcgetattr(3) of a
/// Linux PTY master reads the slave's modes.
bool echoOff(Session *s)
{
    termios t {};
    return ::tcgetattr(s->process()->masterFd(), &t) == 0 && !(t.c_lflag & ECHO);
}

/// Runs the event loop until `s`'s offset has not moved for `quietMs`
/// (false after `timeoutMs`).
bool offsetSettles(const Session *s, int quietMs = 300, int timeoutMs = 10000)
{
    quint64 last = s->offset();
    QElapsedTimer total, quiet;
    total.start();
    quiet.start();
    while (total.elapsed() < timeoutMs) {
        spin(20);
        if (s->offset() != last) {
            last = s->offset();
            quiet.restart();
        } else if (quiet.elapsed() >= quietMs) {
            return true;
        }
    }
    return false;
}
} // namespace

class TestServerFlow : public QObject
{
    Q_OBJECT
private:
    Fixture f;

private Q_SLOTS:
    void init() { QVERIFY(f.start()); }
    void cleanup() { f.stop(); }

    void keepaliveDropsSilentClient()
    {
        f.server->setKeepalive(100, 400);
        Session *s = f.spawn();
        QVERIFY(s);
        RawWs raw; // reads, but never answers a ping
        QVERIFY(raw.handshake(f.port, wsPath(s).toLatin1(), f.key));
        QTRY_COMPARE(s->viewerCount(), 1);
        QSignalSpy gone(&raw.sock, &QTcpSocket::disconnected);
        QVERIFY(gone.wait(3000));
        QCOMPARE(s->viewerCount(), 0);
        QVERIFY(!s->controlViewer());
        QCOMPARE(s->state(), Session::State::Running);
        QTRY_COMPARE(f.server->viewerCount(), 0);
        QCOMPARE(f.http("GET", "/api/sessions/" + s->id().toLatin1()).json().value(QStringLiteral("attached")).toBool(true), false);
        // It was pinged.
        int pings = 0;
        RawWs::Frame fr;
        while (raw.nextFrame(&fr))
            pings += fr.opcode == 0x9;
        QVERIFY(pings >= 2);

        // A client that answers pings (QWebSocket does so by itself) stays.
        WsClient alive;
        alive.open(f.port, wsPath(s), f.key);
        QTRY_VERIFY(alive.gotAttached());
        QSignalSpy aliveGone(&alive.ws, &QWebSocket::disconnected);
        QVERIFY(!aliveGone.wait(1500));
        QCOMPARE(s->viewerCount(), 1);
    }

    void keepaliveSurvivesServerStall()
    {
        // Our own event loop stalls (a long synchronous step, or the process
        // not scheduled on a loaded machine) for longer than the keepalive
        // timeout. A client that answers every ping must not be judged dead
        // for the time we could not hear it: its pong is still unread.
        f.server->setKeepalive(100, 400);
        Session *s = f.spawn();
        QVERIFY(s);
        WsClient alive;
        alive.open(f.port, wsPath(s), f.key);
        QTRY_VERIFY(alive.gotAttached());
        // Let a few pings be answered first.
        QSignalSpy gone(&alive.ws, &QWebSocket::disconnected);
        QVERIFY(!gone.wait(300));
        // The stall itself: this thread runs no event loop for 1.2 s. (Not a
        // wait for a condition: blocking is the point of this test.)
        QElapsedTimer stall;
        stall.start();
        while (stall.elapsed() < 1200) {
        }
        QVERIFY(!gone.wait(1000));
        QCOMPARE(s->viewerCount(), 1);
        QVERIFY(alive.ws.state() == QAbstractSocket::ConnectedState);

        // A silent client is still dropped after a stall, on the next tick.
        RawWs silent; // never answers a ping
        QVERIFY(silent.handshake(f.port, wsPath(s, QStringLiteral("mode=watch")).toLatin1(), f.key));
        QTRY_COMPARE(s->viewerCount(), 2);
        QSignalSpy silentGone(&silent.sock, &QTcpSocket::disconnected);
        stall.restart();
        while (stall.elapsed() < 1200) {
        }
        QTRY_VERIFY_WITH_TIMEOUT(silentGone.count() > 0, 10000);
        QCOMPARE(s->viewerCount(), 1);
    }

    void backpressureBoundsMemory()
    {
        f.server->setFlowWatermarks(256 * 1024, 64 * 1024);
        Session *s = f.spawn({QStringLiteral("/bin/sh"), QStringLiteral("-c"), QStringLiteral("exec yes")});
        QVERIFY(s);
        QTRY_VERIFY(s->offset() > 2 * 1024 * 1024); // no viewer: full speed into the ring

        RawWs raw;
        raw.sock.setReadBufferSize(64 * 1024);
        QVERIFY(raw.handshake(f.port, wsPath(s).toLatin1(), f.key));
        raw.reading = false; // the client stops reading
        const qint64 rss0 = rssKiB();
        // The session stops reading the PTY (`yes` blocks in write(2)) once the
        // kernel's socket buffers and the server's queue are full.
        quint64 last = s->offset();
        QElapsedTimer stable;
        stable.start();
        auto settled = [&]() {
            if (s->offset() != last) {
                last = s->offset();
                stable.restart();
            }
            return stable.elapsed() > 500;
        };
        QTRY_VERIFY_WITH_TIMEOUT(settled(), 15000);
        const quint64 paused = s->offset();
        QVERIFY(!s->process()->isReadEnabled());
        // In flight: the server's queue (<= high watermark + one read), the
        // kernel's socket buffers both ends, the client's 64 KiB buffer.
        const qint64 inFlight = qint64(paused) - raw.received;
        qInfo() << "in flight while paused:" << inFlight << "bytes; RSS growth" << rssKiB() - rss0 << "KiB";
        QVERIFY2(inFlight < 16 * 1024 * 1024, qPrintable(QString::number(inFlight)));
        QVERIFY2(rssKiB() - rss0 < 32 * 1024, qPrintable(QString::number(rssKiB() - rss0)));
        // It stays bounded (the kernel may still grow its buffers a little).
        spin(500);
        QVERIFY(qint64(s->offset()) - raw.received < 16 * 1024 * 1024);
        QCOMPARE(s->viewerCount(), 1); // still attached: nothing is dropped for the control viewer

        // Resume reading: everything arrives in order, and output flows again.
        raw.reading = true;
        raw.pump();
        YesChecker check;
        qint64 replayFrom = -1;
        // The server's screen snapshot (no offsets, not `yes` output) is cut
        // out: it comes at snapshot_at, snapshot_bytes long.
        qint64 binary = 0, snapshotFrom = -1, snapshotBytes = 0;
        auto feed = [&](const QByteArray &d) {
            // The part of [binary, binary + size) outside the snapshot.
            const qint64 cutFrom = qBound<qint64>(0, snapshotFrom - binary, d.size());
            const qint64 cutTo = qBound<qint64>(0, snapshotFrom + snapshotBytes - binary, d.size());
            check.feed(d.left(int(cutFrom)));
            check.feed(d.mid(int(qMax(cutFrom, cutTo))));
            binary += d.size();
        };
        auto drain = [&]() {
            raw.pump();
            RawWs::Frame fr;
            while (raw.nextFrame(&fr)) {
                if (fr.opcode == 0x1) {
                    const QJsonObject o = QJsonDocument::fromJson(fr.payload).object();
                    if (o.value(QStringLiteral("type")).toString() == QLatin1String("attached")) {
                        replayFrom = qint64(o.value(QStringLiteral("replay_from")).toDouble());
                        if (o.value(QStringLiteral("prelude_bytes")).toInt() != 0)
                            check.ok = false;
                        if (o.value(QStringLiteral("snapshot_at")).isDouble()) {
                            snapshotFrom = qint64(o.value(QStringLiteral("snapshot_at")).toDouble()) - replayFrom;
                            snapshotBytes = qint64(o.value(QStringLiteral("snapshot_bytes")).toDouble());
                        }
                    }
                } else if (fr.opcode == 0x2 || fr.opcode == 0x0) {
                    feed(fr.payload);
                }
            }
            return replayFrom >= 0 && quint64(replayFrom + check.seen) > paused + 4 * 1024 * 1024;
        };
        QTRY_VERIFY_WITH_TIMEOUT(drain(), 20000);
        QVERIFY(check.ok);
        QVERIFY(s->offset() > paused);

        // The client goes: reads resume at full speed.
        raw.sock.abort();
        QTRY_COMPARE(s->viewerCount(), 0);
        QTRY_VERIFY(s->process()->isReadEnabled());
    }

    void watcherTooFarBehind()
    {
        f.server->setFlowWatermarks(256 * 1024, 64 * 1024);
        Session *s = f.spawn({QStringLiteral("/bin/sh"), QStringLiteral("-c"), QStringLiteral("exec yes")});
        QVERIFY(s);
        RawWs raw;
        raw.sock.setReadBufferSize(64 * 1024);
        QVERIFY(raw.handshake(f.port, wsPath(s, QStringLiteral("mode=watch")).toLatin1(), f.key));
        raw.reading = false;
        // A watcher never pauses the session...
        QTRY_COMPARE_WITH_TIMEOUT(s->viewerCount(), 0, 10000);
        QVERIFY(s->process()->isReadEnabled());
        // ...it is closed 1013 once it falls behind.
        raw.reading = true;
        int closeCode = -1;
        QByteArray reason;
        auto readClose = [&]() {
            raw.pump();
            RawWs::Frame fr;
            while (raw.nextFrame(&fr)) {
                if (fr.opcode == 0x8 && fr.payload.size() >= 2) {
                    closeCode = (uchar(fr.payload.at(0)) << 8) | uchar(fr.payload.at(1));
                    reason = fr.payload.mid(2);
                }
            }
            return closeCode >= 0;
        };
        QTRY_VERIFY_WITH_TIMEOUT(readClose(), 60000);
        QCOMPARE(closeCode, 1013);
        QCOMPARE(reason, QByteArray("too far behind"));
        QTRY_COMPARE(f.server->viewerCount(), 0);
    }

    void stalledViewerLeavesOthersAlone()
    {
        // Issue 10: a control viewer that stops reading while `yes` floods
        // its session pauses that session only. The server's memory stays
        // bounded, a viewer of another flooding session keeps streaming at
        // full speed, and a third session still echoes at once.
        f.server->setFlowWatermarks(256 * 1024, 64 * 1024);
        Session *stalledSession = f.spawn({QStringLiteral("/bin/sh"), QStringLiteral("-c"), QStringLiteral("exec yes")});
        Session *flowing = f.spawn({QStringLiteral("/bin/sh"), QStringLiteral("-c"), QStringLiteral("exec yes")});
        Session *echoing = f.spawn({QStringLiteral("/bin/cat")});
        QVERIFY(stalledSession && flowing && echoing);
        RawWs stalled;
        stalled.sock.setReadBufferSize(64 * 1024);
        QVERIFY(stalled.handshake(f.port, wsPath(stalledSession).toLatin1(), f.key));
        stalled.reading = false;
        RawWs reader; // reads everything and keeps none of it
        QVERIFY(reader.handshake(f.port, wsPath(flowing).toLatin1(), f.key));
        qint64 streamed = 0;
        auto drain = [&]() {
            reader.pump();
            RawWs::Frame fr;
            while (reader.nextFrame(&fr))
                if (fr.opcode == 0x2 || fr.opcode == 0x0)
                    streamed += fr.payload.size();
        };
        WsClient echo;
        echo.open(f.port, wsPath(echoing), f.key);
        QTRY_VERIFY(echo.gotAttached());

        const qint64 rss0 = rssKiB();
        // Paused for good once the kernel's socket buffers are full too: the
        // first pauses are short (the kernel still takes bytes, the queue
        // drains under the low watermark, reading resumes), so wait until
        // the stalled session's output stops growing.
        quint64 last = stalledSession->offset();
        QElapsedTimer stable;
        stable.start();
        auto settled = [&]() {
            drain();
            if (stalledSession->offset() != last) {
                last = stalledSession->offset();
                stable.restart();
            }
            return stable.elapsed() > 500;
        };
        QTRY_VERIFY_WITH_TIMEOUT(settled(), 15000);
        QVERIFY(!stalledSession->process()->isReadEnabled());
        // Paused: the other flood goes on (4 MiB more), and cat answers.
        const qint64 streamedAtPause = streamed;
        QTRY_VERIFY_WITH_TIMEOUT((drain(), streamed > streamedAtPause + 4 * 1024 * 1024), 30000);
        echo.sendInput("still here\n");
        QTRY_VERIFY((drain(), echo.stream().contains("still here")));
        // Bounded: what is in flight to the stalled viewer, and this whole
        // process (server and clients) while 4 MiB more went through.
        const qint64 inFlight = qint64(stalledSession->offset()) - stalled.received;
        qInfo("stalled viewer: %lld bytes in flight, RSS growth %lld KiB, %lld bytes streamed to the other viewer",
              inFlight, rssKiB() - rss0, streamed);
        QVERIFY2(inFlight < 16 * 1024 * 1024, qPrintable(QString::number(inFlight)));
        QVERIFY2(rssKiB() - rss0 < 32 * 1024, qPrintable(QString::number(rssKiB() - rss0)));
        QCOMPARE(stalledSession->viewerCount(), 1);

        stalled.sock.abort();
        QTRY_COMPARE(stalledSession->viewerCount(), 0);
        QTRY_VERIFY(stalledSession->process()->isReadEnabled());
    }

    void clientPauseBlocksTheProgram()
    {
        // A control viewer that reads its socket at once but cannot show the
        // output as fast (`tether attach` in a slow terminal, xterm.js)
        // pauses the session: the server stops reading the PTY and `yes`
        // blocks in write(2), what was queued still arrives, and resume lets
        // it go on. Before, such a client could only close its socket (an
        // unknown type was closed 4400), and the session drained into the
        // ring past the client's offset: lost output.
        Session *s = f.spawn(kYesOnInput);
        QVERIFY(s);
        YesClient c;
        QVERIFY(c.open(f.port, wsPath(s), f.key));
        QCOMPARE(c.attached.value(QStringLiteral("flow_control")), QJsonValue(true));
        QCOMPARE(c.attached.value(QStringLiteral("replay_bytes")).toInt(-1), 0);
        QTRY_VERIFY(echoOff(s));
        c.raw.sendFrame(0x2, "go\n");
        QTRY_VERIFY_WITH_TIMEOUT(c.bytes > 1024 * 1024, 10000);

        c.sendText(R"({"type":"pause"})");
        QVERIFY(offsetSettles(s));
        const quint64 paused = s->offset();
        QVERIFY(!s->process()->isReadEnabled());
        // What was queued is still sent: the client gets up to the offset.
        QTRY_COMPARE(quint64(c.bytes), s->offset());
        // And stays blocked: not a byte more is read, however long (the
        // kernel's PTY buffer, a few KiB, is full and `yes` waits in write).
        spin(500);
        QCOMPARE(s->offset(), paused);
        QCOMPARE(quint64(c.bytes), paused);
        QCOMPARE(s->viewerCount(), 1);
        QCOMPARE(c.closeCode, -1);

        // A resize while paused is still a resize (the session is not stuck).
        c.sendText(R"({"type":"resize","cols":90,"rows":30})");
        QTRY_COMPARE(s->cols(), 90);
        QCOMPARE(s->offset(), paused);

        c.sendText(R"({"type":"resume"})");
        QTRY_VERIFY_WITH_TIMEOUT(c.bytes > qint64(paused) + 2 * 1024 * 1024, 10000);
        QVERIFY(s->process()->isReadEnabled());
        QVERIFY(c.check.ok); // in order, nothing lost, nothing twice
        QCOMPARE(c.closeCode, -1);
    }

    void watcherPauseIsIgnored()
    {
        // Watchers never slow a session down: a watcher's pause is ignored,
        // like its resize, and it is not closed for it either.
        f.server->setFlowWatermarks(8 * 1024 * 1024, 2 * 1024 * 1024); // the reader is in this thread
        Session *s = f.spawn(kYesOnInput);
        QVERIFY(s);
        YesClient w;
        QVERIFY(w.open(f.port, wsPath(s, QStringLiteral("mode=watch")), f.key));
        QCOMPARE(w.attached.value(QStringLiteral("flow_control")), QJsonValue(true));
        w.sendText(R"({"type":"pause"})");
        // Only a control viewer types: one says go and leaves.
        WsClient control;
        control.open(f.port, wsPath(s), f.key);
        QTRY_VERIFY(control.gotAttached());
        QTRY_VERIFY(echoOff(s));
        control.sendInput("go\n");
        control.ws.close();
        QTRY_COMPARE(s->viewerCount(), 1);
        // Far more than a blocked program could write into the PTY's buffer.
        QTRY_VERIFY_WITH_TIMEOUT(s->offset() > 8 * 1024 * 1024, 15000);
        QVERIFY(s->process()->isReadEnabled());
        QCOMPARE(s->viewerCount(), 1);
        QCOMPARE(w.closeCode, -1);
    }

    void pausedViewerThatGoesUnblocksTheSession()
    {
        // A paused control viewer that disconnects (or is taken over) must
        // not leave the session paused: it drains into the ring as with no
        // control viewer, and a new control viewer starts unpaused.
        Session *s = f.spawn(kYesOnInput);
        QVERIFY(s);
        {
            YesClient a;
            QVERIFY(a.open(f.port, wsPath(s), f.key));
            a.sendText(R"({"type":"pause"})");
            QVERIFY(offsetSettles(s));
            QVERIFY(!s->process()->isReadEnabled());
            QTRY_VERIFY(echoOff(s));
            a.raw.sendFrame(0x2, "go\n"); // input while paused is still taken
            spin(200);
            QVERIFY(!s->process()->isReadEnabled());
            // Taken over: the new control viewer has not paused.
            YesClient b;
            QVERIFY(b.open(f.port, wsPath(s, QStringLiteral("resume=%1").arg(s->offset())), f.key));
            QTRY_COMPARE(a.closeCode, 4409);
            const quint64 at = s->offset();
            QTRY_VERIFY_WITH_TIMEOUT(s->offset() > at + 2 * 1024 * 1024, 10000);
            QVERIFY(s->process()->isReadEnabled());
            QVERIFY(b.check.ok);
            // b pauses, then goes away without a word.
            b.sendText(R"({"type":"pause"})");
            QVERIFY(offsetSettles(s));
            QVERIFY(!s->process()->isReadEnabled());
            b.raw.sock.abort();
        }
        QTRY_COMPARE(s->viewerCount(), 0);
        QVERIFY(s->process()->isReadEnabled());
        const quint64 at = s->offset();
        QTRY_VERIFY_WITH_TIMEOUT(s->offset() > at + 2 * 1024 * 1024, 10000);
    }

    void serverWithoutFlowControl()
    {
        // A server from before flow control (Server::setFlowControl(false)):
        // no `flow_control` in `attached`, and a pause is an unknown type,
        // closed 4400: what clients must not send it (they let go instead).
        f.server->setFlowControl(false);
        Session *s = f.spawn();
        QVERIFY(s);
        WsClient c;
        c.open(f.port, wsPath(s), f.key);
        QTRY_VERIFY(c.gotAttached());
        QVERIFY(!c.attachedMsg.contains(QStringLiteral("flow_control")));
        c.sendText(R"({"type":"pause"})");
        QTRY_VERIFY(c.disconnected);
        QCOMPARE(c.closeCode, 4400);
        QCOMPARE(c.closeReason, QStringLiteral("bad control message"));
        QCOMPARE(s->state(), Session::State::Running);
        QTRY_COMPARE(s->viewerCount(), 0);
    }

    void tenMiBPasteIntoProgramThatNeverReads()
    {
        // Issue 10: a 10 MiB paste, sent at once as a browser sends it, into
        // a program that never reads. The paster is held back (input flow
        // control) and closed 1013 once its queue made no progress for a
        // while (10 s by default; 3 s here, which is what the test waits);
        // meanwhile the server answers requests and another session echoes;
        // the stuck program's session lives on.
        f.server->setInputStall(kStallMs);
        Session *stuck = f.spawn({QStringLiteral("/bin/sh"), QStringLiteral("-c"), QStringLiteral("stty raw -echo; exec sleep 60")});
        Session *other = f.spawn({QStringLiteral("/bin/cat")});
        QVERIFY(stuck && other);
        WsClient o;
        o.open(f.port, wsPath(other), f.key);
        QTRY_VERIFY(o.gotAttached());
        RawWs paster;
        QVERIFY(paster.handshake(f.port, wsPath(stuck).toLatin1(), f.key));
        QTRY_COMPARE(stuck->viewerCount(), 1);
        const QByteArray chunk(64 * 1024, 'p');
        for (int i = 0; i < 160; ++i)
            paster.sendFrame(0x2, chunk);

        QElapsedTimer t;
        t.start();
        QCOMPARE(f.http("GET", "/api/sessions").status, 200);
        o.sendInput("still here\n");
        QTRY_VERIFY(o.stream().contains("still here"));
        qInfo("during a 10 MiB paste: the API and another session answered within %lld ms", qint64(t.elapsed()));

        int closeCode = -1;
        QByteArray reason;
        auto readClose = [&]() {
            paster.pump();
            RawWs::Frame fr;
            while (paster.nextFrame(&fr)) {
                if (fr.opcode == 0x8 && fr.payload.size() >= 2) {
                    closeCode = (uchar(fr.payload.at(0)) << 8) | uchar(fr.payload.at(1));
                    reason = fr.payload.mid(2);
                }
            }
            return closeCode >= 0;
        };
        QTRY_VERIFY_WITH_TIMEOUT(readClose(), 60000);
        QCOMPARE(closeCode, 1013);
        QCOMPARE(reason, QByteArray("input stalled"));
        QCOMPARE(stuck->state(), Session::State::Running);
        QTRY_COMPARE(stuck->viewerCount(), 0);
        QVERIFY(stuck->process()->pendingInput() <= kMaxPendingInput);
        QCOMPARE(other->viewerCount(), 1);
        QVERIFY(!o.disconnected);
    }

    void pasteIntoASlowReaderArrivesWhole()
    {
        // A user pasted 1,470,000 bytes into `wc -c` through `tether attach`
        // and 1,262,023 arrived: past 1 MiB of queued input the server closed
        // 1013 "input stalled" although the program was reading, only slower
        // than the network, and what the client had sent was lost. Now the
        // server stops taking messages (input flow control) and TCP holds the
        // client back: 8 MiB in messages of every length encoding (RFC 6455
        // §5.2: 7-bit, 16-bit, 64-bit) and odd sizes, from a real QWebSocket
        // client, into dd reading 512-byte blocks, arrive whole and in order
        // (md5), on one connection.
        const int total = 8 * 1024 * 1024;
        Session *s = f.spawn({QStringLiteral("/bin/sh"), QStringLiteral("-c"),
                              QStringLiteral("stty raw -echo; echo ready; dd bs=512 count=%1 iflag=fullblock 2>/dev/null | md5sum; exec sleep 60")
                                  .arg(total / 512)});
        QVERIFY(s);
        WsClient c;
        c.open(f.port, wsPath(s), f.key);
        QTRY_VERIFY(c.gotAttached());
        QTRY_VERIFY(c.stream().contains("ready"));
        QByteArray paste(total, '\0');
        quint32 x = 2463534242u; // xorshift32: printable, reproducible
        for (char &ch : paste) {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            ch = char(0x20 + x % 95);
        }
        const QByteArray md5 = QCryptographicHash::hash(paste, QCryptographicHash::Md5).toHex();
        const int sizes[] = {1, 7, 125, 126, 65535, 65536, 300001, 1048576};
        int messages = 0;
        for (int off = 0, i = 0; off < total; ++i) {
            const int n = qMin(sizes[i % 8], total - off);
            c.ws.sendBinaryMessage(paste.mid(off, n));
            off += n;
            ++messages;
        }
        qsizetype maxPending = 0;
        auto done = [&]() {
            maxPending = qMax(maxPending, s->pendingInput());
            return c.disconnected || c.stream().contains(md5);
        };
        QTRY_VERIFY_WITH_TIMEOUT(done(), 240000);
        QVERIFY2(!c.disconnected, qPrintable(QStringLiteral("closed %1 %2").arg(c.closeCode).arg(c.closeReason)));
        QVERIFY(c.stream().contains(md5 + "  -"));
        // The queue stayed near its watermark: 256 KiB plus one message.
        QVERIFY2(maxPending <= 256 * 1024 + 1024 * 1024, qPrintable(QString::number(maxPending)));
        QCOMPARE(s->viewerCount(), 1);
        qInfo("%d messages, %d bytes: all arrived; largest input queue %lld bytes", messages, total, qint64(maxPending));
    }

    void inputStalled()
    {
        // The program never reads its input; a large paste must neither block
        // nor grow memory. Input flow control holds the client back; once the
        // queue has made no progress for the stall time (docs/protocol.md,
        // "Input flow control": 10 s by default, kStallMs here) the viewer
        // is closed 1013, not before. (A raw client: Qt's own client rejects
        // close code 1013 as "invalid" and reports 1002, see
        // docs/protocol.md.)
        f.server->setInputStall(kStallMs);
        Session *s = f.spawn({QStringLiteral("/bin/sh"), QStringLiteral("-c"), QStringLiteral("stty raw -echo; exec sleep 60")});
        QVERIFY(s);
        RawWs raw;
        QVERIFY(raw.handshake(f.port, wsPath(s).toLatin1(), f.key));
        QTRY_COMPARE(s->viewerCount(), 1);
        const QByteArray chunk(64 * 1024, 'p');
        int closeCode = -1;
        QByteArray reason;
        auto readClose = [&]() {
            raw.pump();
            RawWs::Frame fr;
            while (raw.nextFrame(&fr)) {
                if (fr.opcode == 0x8 && fr.payload.size() >= 2) {
                    closeCode = (uchar(fr.payload.at(0)) << 8) | uchar(fr.payload.at(1));
                    reason = fr.payload.mid(2);
                }
            }
            return closeCode >= 0;
        };
        // The kernel takes a few KiB before write(2) says EAGAIN; then the
        // queue passes its watermark and the rest waits in the TCP buffers
        // (the client keeps sending while the server closes: the close frame
        // must still arrive, not a reset).
        QElapsedTimer sinceFirst;
        sinceFirst.start();
        for (int i = 0; i < 64; ++i)
            raw.sendFrame(0x2, chunk);
        QTRY_VERIFY_WITH_TIMEOUT(readClose(), 60000);
        const qint64 after = sinceFirst.elapsed();
        QVERIFY2(closeCode == 1013, qPrintable(QString::number(closeCode) + QLatin1Char(' ') + QString::fromUtf8(reason)));
        // Progress stopped at the earliest when the paste began.
        QVERIFY2(after >= kStallMs, qPrintable(QStringLiteral("closed after %1 ms").arg(after)));
        QCOMPARE(reason, QByteArray("input stalled"));
        QCOMPARE(s->state(), Session::State::Running);
        QTRY_COMPARE(s->viewerCount(), 0);
        QVERIFY(s->process()->pendingInput() <= kMaxPendingInput);
    }

    void clientThatSendsButNeverReadsIsDropped()
    {
        // Every ping a client sends makes Qt queue a pong for it. A client that
        // floods pings and never reads must not grow the server's memory: the
        // viewer is closed once its queue passes the hard bound.
        f.server->setFlowWatermarks(64 * 1024, 16 * 1024);
        Session *s = f.spawn();
        QVERIFY(s);
        RawWs raw;
        raw.sock.setReadBufferSize(64 * 1024); // really stop reading: the kernel buffers fill
        QVERIFY(raw.handshake(f.port, wsPath(s).toLatin1(), f.key));
        QTRY_COMPARE(s->viewerCount(), 1);
        raw.reading = false;
        const QByteArray payload(125, 'p');
        int sent = 0;
        QTimer flood;
        connect(&flood, &QTimer::timeout, &raw, [&]() {
            if (raw.sock.state() != QAbstractSocket::ConnectedState || raw.sock.bytesToWrite() >= 256 * 1024)
                return;
            for (int i = 0; i < 500 && sent < 400000; ++i, ++sent)
                raw.sendFrame(0x9, payload);
        });
        flood.start(1);
        // 400 000 pings = 50 MB of pongs: far past the bound (4 × 64 KiB plus
        // what the kernel's socket buffers hold).
        QTRY_COMPARE_WITH_TIMEOUT(s->viewerCount(), 0, 30000);
        QVERIFY2(sent < 400000, "the server queued 50 MB of pongs without dropping the client");
        flood.stop();
        QCOMPARE(s->state(), Session::State::Running); // the session is unharmed
    }

    void exitWhileClientFloods()
    {
        // The client keeps sending (keystrokes, a paste) and reads slowly
        // while the program prints its last 3 MB and exits. Closing the
        // connection with unread input would make the kernel send a reset and
        // drop the queued tail, the exit message and the close frame.
        // Watermarks above the output size: the program can finish while the
        // client reads nothing.
        f.server->setFlowWatermarks(8 * 1024 * 1024, 4 * 1024 * 1024);
        Session *s = f.spawn({QStringLiteral("/bin/sh"), QStringLiteral("-c"),
                              QStringLiteral("stty raw -echo; read x; head -c 3000000 /dev/zero | tr '\\000' e; exit 5")});
        QVERIFY(s);
        RawWs raw;
        raw.sock.setReadBufferSize(64 * 1024);
        QVERIFY(raw.handshake(f.port, wsPath(s).toLatin1(), f.key));
        QTRY_COMPARE(s->viewerCount(), 1);
        raw.reading = false;
        raw.sendFrame(0x2, "go\n");
        // The flood: control messages the server reads and ignores (a 0x0
        // resize), so it never fills the program's input.
        QTimer flood;
        connect(&flood, &QTimer::timeout, &raw, [&raw]() {
            if (raw.sock.state() != QAbstractSocket::ConnectedState || raw.sock.bytesToWrite() >= 64 * 1024)
                return;
            for (int i = 0; i < 100; ++i)
                raw.sendFrame(0x1, R"({"type":"resize","cols":0,"rows":0})");
        });
        flood.start(2);
        QTRY_COMPARE_WITH_TIMEOUT(s->state(), Session::State::Exited, 15000);
        QTRY_COMPARE(s->viewerCount(), 0); // exit sent, close started
        spin(200);

        raw.reading = true;
        QByteArray stream;
        QList<QByteArray> texts;
        int closeCode = -1;
        auto readAll = [&]() {
            raw.pump();
            RawWs::Frame fr;
            while (raw.nextFrame(&fr)) {
                if (fr.opcode == 0x1)
                    texts.append(fr.payload);
                else if (fr.opcode == 0x2 || fr.opcode == 0x0)
                    stream += fr.payload;
                else if (fr.opcode == 0x8 && fr.payload.size() >= 2)
                    closeCode = (uchar(fr.payload.at(0)) << 8) | uchar(fr.payload.at(1));
            }
            return closeCode >= 0 || raw.sock.state() != QAbstractSocket::ConnectedState;
        };
        QTRY_VERIFY_WITH_TIMEOUT(readAll(), 20000);
        readAll();
        flood.stop();
        QCOMPARE(closeCode, 4410);
        QVERIFY(stream.endsWith(QByteArray(3000000, 'e')));
        QVERIFY(!texts.isEmpty());
        const QJsonObject exit = QJsonDocument::fromJson(texts.last()).object();
        QCOMPARE(exit.value(QStringLiteral("type")).toString(), QStringLiteral("exit"));
        QCOMPARE(exit.value(QStringLiteral("code")).toInt(), 5);
    }

    void disconnectDuringReplay()
    {
        f.stop();
        Limits limits;
        limits.bufferCapacity = 8 * 1024 * 1024;
        limits.ttlSeconds = 600;
        QVERIFY(f.start(limits));
        Session *s = f.spawn({QStringLiteral("/bin/sh"), QStringLiteral("-c"),
                              QStringLiteral("head -c 8000000 /dev/zero | tr '\\000' z; exec sleep 60")});
        QVERIFY(s);
        QTRY_COMPARE_WITH_TIMEOUT(s->offset(), quint64(8000000), 20000);

        // A raw client that takes the first bytes of the replay, then vanishes.
        RawWs raw;
        raw.sock.setReadBufferSize(64 * 1024);
        QVERIFY(raw.handshake(f.port, wsPath(s).toLatin1(), f.key));
        QTRY_VERIFY(raw.received > 100000);
        QTRY_COMPARE(s->viewerCount(), 1);
        raw.sock.abort();
        QTRY_COMPARE(s->viewerCount(), 0);
        QVERIFY(!s->controlViewer());
        QVERIFY(f.registry->expiresIn(s) > 0); // detached and reapable
        QTRY_COMPARE(f.server->viewerCount(), 0);
        QVERIFY(s->process()->isReadEnabled());

        // Same with a QWebSocket that aborts on its first binary message.
        WsClient c;
        connect(&c.ws, &QWebSocket::binaryMessageReceived, &c.ws, [&c]() { c.ws.abort(); });
        c.open(f.port, wsPath(s), f.key);
        QTRY_VERIFY(c.disconnected);
        QVERIFY(c.bytes.size() < 8000000);
        QTRY_COMPARE(s->viewerCount(), 0);
        QTRY_COMPARE(f.server->viewerCount(), 0);
        QVERIFY(f.registry->expiresIn(s) > 0);
    }

    void serverCloseAndShutdown()
    {
        Session *s = f.spawn();
        QVERIFY(s);
        WsClient a, w;
        a.open(f.port, wsPath(s), f.key);
        w.open(f.port, wsPath(s, QStringLiteral("mode=watch")), f.key);
        QTRY_VERIFY(a.gotAttached() && w.gotAttached());
        f.server->close();
        QTRY_VERIFY(a.disconnected && w.disconnected);
        QCOMPARE(a.closeCode, 1001);
        QCOMPARE(a.closeReason, QStringLiteral("server shutting down"));
        QCOMPARE(w.closeCode, 1001);
        QCOMPARE(s->viewerCount(), 0);
        QCOMPARE(s->state(), Session::State::Running); // sessions outlive the server
        QVERIFY(!f.server->isListening());
        QTRY_COMPARE(f.server->viewerCount(), 0);

        // Registry shutdown closes viewers 1001 too.
        QVERIFY(f.start());
        Session *t = f.spawn();
        WsClient b;
        b.open(f.port, wsPath(t), f.key);
        QTRY_VERIFY(b.gotAttached());
        QSignalSpy done(f.registry.get(), &SessionRegistry::shutdownComplete);
        f.registry->shutdown();
        QTRY_VERIFY(b.disconnected);
        QCOMPARE(b.closeCode, 1001);
        QCOMPARE(b.closeReason, QStringLiteral("server shutting down"));
        QVERIFY(done.count() > 0 || done.wait(5000));
        QCOMPARE(f.http("POST", "/api/sessions", "{}").status, 503);
    }

    void noFdLeak()
    {
        Session *s = f.spawn();
        QVERIFY(s);
        auto cycle = [&](int i) {
            WsClient c;
            const int kind = i % 4;
            c.open(f.port, kind == 3 ? QStringLiteral("/ws/nosuchsession") : wsPath(s, kind == 2 ? QStringLiteral("mode=watch") : QString()), f.key);
            if (kind == 3) {
                QTRY_VERIFY(c.disconnected);
                return;
            }
            QTRY_VERIFY(c.gotAttached());
            if (kind == 1)
                c.ws.abort();
            else
                c.ws.close();
            QTRY_VERIFY(c.disconnected);
        };
        for (int i = 0; i < 10; ++i)
            cycle(i);
        QTRY_COMPARE(f.server->viewerCount(), 0);
        QTRY_COMPARE(s->viewerCount(), 0);
        const int before = TestUtil::openFdCount();
        // 40: each of the four kinds 10 times, so that a descriptor left by
        // any one of them is 10 over the slack of 2 below.
        for (int i = 0; i < 40; ++i) {
            cycle(i);
            if (QTest::currentTestFailed())
                return;
        }
        QTRY_COMPARE(f.server->viewerCount(), 0);
        QTRY_COMPARE(f.server->httpConnectionCount(), 0);
        QCOMPARE(s->viewerCount(), 0);
        QTRY_VERIFY2(TestUtil::openFdCount() <= before + 2,
                     qPrintable(QStringLiteral("%1 -> %2").arg(before).arg(TestUtil::openFdCount())));
        // Refused handshakes and plain requests leak nothing either.
        for (int i = 0; i < 50; ++i) {
            RawWs raw;
            raw.handshake(f.port, wsPath(s).toLatin1(), i % 2 ? QByteArray("wrong") : QByteArray());
            f.http("GET", "/api/sessions");
        }
        QTRY_COMPARE(f.server->httpConnectionCount(), 0);
        QTRY_VERIFY(TestUtil::openFdCount() <= before + 2);
    }
};

QTEST_GUILESS_MAIN(TestServerFlow)
#include "tst_server_flow.moc"
