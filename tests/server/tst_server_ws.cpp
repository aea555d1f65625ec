// SPDX-License-Identifier: GPL-2.0-or-later
// WebSocket attach: replay/resume in all five cases with exact offsets and
// bytes, safe-boundary replay with mode restoration, exit ordering, the
// supersede race, watchers, bad control frames, oversized frames, resize.
#include "attachclient.h"
#include "lingeringclose.h"
#include "logging.h"
#include "procinfo.h"
#include "recordingviewer.h"
#include "servertestutil.h"
#include "testutil.h"
#include "vtrender.h"
#include "websocketviewer.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QLoggingCategory>
#include <QFile>
#include <QScopeGuard>
#include <QSize>
#include <QTemporaryDir>

#include <atomic>
#include <memory>
#include <thread>
#include <vector>

#include <arpa/inet.h>
#include <cerrno>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

using namespace Tether;
using namespace ServerTest;

namespace {
QByteArray ringBytes(const Session *s, quint64 from, quint64 to)
{
    QByteArray out(int(to - from), '\0');
    const qsizetype n = s->buffer().read(from, out.data(), out.size());
    out.truncate(int(n));
    return out;
}

QString wsPath(const Session *s, const QString &query = QString())
{
    return QStringLiteral("/ws/") + s->id() + (query.isEmpty() ? QString() : QStringLiteral("?") + query);
}

/// Waits up to `ms` for the next complete frame from the server.
bool waitFrame(RawWs &raw, RawWs::Frame *frame, int ms = 5000)
{
    QElapsedTimer t;
    t.start();
    while (!raw.nextFrame(frame)) {
        if (t.elapsed() > ms)
            return false;
        QTest::qWait(5);
    }
    return true;
}

/// Upgrades `raw` to a WebSocket on session `s` (control viewer) and reads
/// the first frame into `attached`: true when that is the `attached` message.
bool rawAttach(RawWs &raw, quint16 port, const QByteArray &key, Session *s, RawWs::Frame *attached)
{
    return raw.handshake(port, wsPath(s).toLatin1(), key) && waitFrame(raw, attached) && attached->opcode == 0x1
        && attached->payload.contains("\"type\":\"attached\"");
}

bool writeFile(const QString &path, const QByteArray &data)
{
    QFile f(path);
    return f.open(QIODevice::WriteOnly) && f.write(data) == data.size();
}
} // namespace

namespace {
/// What blockingWsSend() saw.
struct BlockingWsResult {
    std::atomic<int> fd{-1};
    bool upgraded = false;
    int closeCode = -1;       ///< of the server's close frame; -1: none came
    QByteArray closeReason;
    int sendErrno = 0;        ///< the error that ended the sending (ECONNRESET, EPIPE), or 0
    int recvErrno = 0;        ///< the error that ended the reading, or 0
    bool eof = false;         ///< the reading ended with the server's FIN
};

/// A WebSocket client on a blocking socket, as a simple script writes one:
/// it upgrades `target` with the bearer `key`, sends one binary message of
/// `size` bytes ('x') in masked frames of `frameSize` bytes, all of it
/// before it reads anything (RFC 6455 §5.3: a client masks), then reads
/// until the connection ends and reports the server's close frame and how
/// the connection ended, in `r`. Run it off the server's thread: it blocks
/// (another thread may shut `r.fd` down to end it).
void blockingWsSend(BlockingWsResult &r, quint16 port, const QByteArray &target, const QByteArray &key, qint64 size,
                    qint64 frameSize)
{
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    r.fd = fd;
    const auto closeFd = qScopeGuard([fd]() { ::close(fd); });
    sockaddr_in addr = {};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    const auto sendAll = [&](const char *p, qint64 n) {
        while (n > 0) {
            const ssize_t w = ::send(fd, p, size_t(n), MSG_NOSIGNAL);
            if (w < 0 && errno == EINTR)
                continue;
            if (w <= 0)
                return errno;
            p += w;
            n -= w;
        }
        return 0;
    };
    if (::connect(fd, reinterpret_cast<sockaddr *>(&addr), sizeof addr) != 0)
        return;
    const QByteArray head = "GET " + target + " HTTP/1.1\r\nHost: 127.0.0.1:" + QByteArray::number(port)
        + "\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\n"
          "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nAuthorization: Bearer " + key + "\r\n\r\n";
    if (sendAll(head.constData(), head.size()) != 0)
        return;
    QByteArray in;
    char buf[65536];
    int headEnd = -1;
    while ((headEnd = in.indexOf("\r\n\r\n")) < 0) {
        const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
        if (n <= 0)
            return;
        in.append(buf, int(n));
    }
    r.upgraded = in.startsWith("HTTP/1.1 101");
    in.remove(0, headEnd + 4);
    // The message: frames of frameSize, the first binary, the others
    // continuations, FIN on the last; a 64-bit length on each (its payload
    // is 512 KiB or more) and a mask.
    const QByteArray chunk(int(frameSize), 'x');
    const char mask[4] = {0x12, 0x34, 0x56, 0x78};
    QByteArray masked = chunk;
    for (int k = 0; k < masked.size(); ++k)
        masked[k] = char(masked[k] ^ mask[k % 4]);
    for (qint64 sent = 0; sent < size && r.sendErrno == 0; sent += frameSize) {
        const qint64 n = qMin(frameSize, size - sent);
        QByteArray frame;
        frame.append(char((sent + n >= size ? 0x80 : 0x00) | (sent == 0 ? 0x2 : 0x0)));
        frame.append(char(0x80 | 127));
        for (int b = 7; b >= 0; --b)
            frame.append(char((quint64(n) >> (8 * b)) & 0xff));
        frame.append(mask, 4);
        r.sendErrno = sendAll(frame.constData(), frame.size());
        if (r.sendErrno == 0)
            r.sendErrno = sendAll(masked.constData(), n);
    }
    for (;;) {
        const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            r.recvErrno = errno;
            break;
        }
        if (n == 0) {
            r.eof = true;
            break;
        }
        in.append(buf, int(n));
    }
    // The server's frames (never masked): find its close frame.
    qsizetype p = 0;
    while (p + 2 <= in.size()) {
        const int opcode = in.at(p) & 0x0f;
        quint64 len = quint8(in.at(p + 1)) & 0x7f;
        qsizetype q = p + 2;
        const int extra = len == 126 ? 2 : len == 127 ? 8 : 0;
        if (q + extra > in.size())
            break;
        if (extra) {
            len = 0;
            for (int b = 0; b < extra; ++b)
                len = (len << 8) | quint8(in.at(q + b));
            q += extra;
        }
        if (q + qsizetype(len) > in.size())
            break;
        if (opcode == 0x8 && len >= 2) {
            r.closeCode = (quint8(in.at(q)) << 8) | quint8(in.at(q + 1));
            r.closeReason = in.mid(q + 2, qsizetype(len) - 2);
        }
        p = q + qsizetype(len);
    }
}
} // namespace

class TestServerWs : public QObject
{
    Q_OBJECT
private:
    Fixture f;

    /// The fixture's server as `tether attach` finds it (--url, --key).
    bool endpoint(ServerEndpoint *ep)
    {
        QString error;
        if (ServerEndpoint::resolve(QStringLiteral("http://127.0.0.1:%1/").arg(f.port), QString::fromLatin1(f.key), ep, &error))
            return true;
        qWarning("%s", qPrintable(error));
        return false;
    }

    /// An AttachClient of a session with what it receives recorded.
    struct RecordedAttach {
        AttachClient client;
        QSignalSpy attached;
        QByteArray out;
        qint64 received = 0;
        RecordedAttach(const ServerEndpoint &ep, const Session *s)
            : client(ep, s->id(), ViewerMode::Control)
            , attached(&client, &AttachClient::attached)
        {
            QObject::connect(&client, &AttachClient::output, &client, [this](const QByteArray &d, bool) {
                received += d.size();
                if (out.size() < 1024 * 1024) // a flood is counted, not kept
                    out += d;
            });
        }
    };
    /// A RecordedAttach of `s` (reconnecting after 10 ms), once attached;
    /// null when it does not attach.
    std::unique_ptr<RecordedAttach> openRecorded(const Session *s)
    {
        ServerEndpoint ep;
        if (!endpoint(&ep))
            return nullptr;
        auto r = std::make_unique<RecordedAttach>(ep, s);
        r->client.setBackoff(10, 10);
        r->client.open();
        if (!QTest::qWaitFor([&]() { return r->attached.size() == 1; }, 5000))
            return nullptr;
        return r;
    }

private Q_SLOTS:
    void init() { QVERIFY(f.start()); }
    void cleanup() { f.stop(); }

    void noDelayOnEverySocket()
    {
        // Nagle's algorithm with the peer's delayed ACK held the second of
        // two small writes (a command's echo, then its output) for ~40 ms
        // (RFC 896, tcp(7)). Every socket the server accepts, and the
        // attach client's, must have TCP_NODELAY.
        QTcpSocket plain;
        QSignalSpy connected(&plain, &QTcpSocket::connected);
        plain.connectToHost(QHostAddress::LocalHost, f.port);
        QVERIFY(connected.wait());
        QTRY_COMPARE(f.server->httpConnectionCount(), 1);
        const QList<int> accepted = tcpSocketFds(f.port, plain.localPort());
        QCOMPARE(accepted.size(), 1);
        QCOMPARE(tcpNoDelay(accepted.first()), 1);
        plain.abort();

        // `tether attach`'s client (QWebSocket keeps its TCP socket to
        // itself: found by its peer port, the server's) and the server's
        // end of that upgraded connection.
        Session *s = f.spawn();
        QVERIFY(s);
        ServerEndpoint ep;
        QVERIFY(endpoint(&ep));
        AttachClient c(ep, s->id(), ViewerMode::Control);
        QSignalSpy attached(&c, &AttachClient::attached);
        c.open();
        QTRY_COMPARE(attached.size(), 1);
        const QList<int> clientEnd = tcpSocketFds(0, f.port);
        QCOMPARE(clientEnd.size(), 1);
        QCOMPARE(tcpNoDelay(clientEnd.first()), 1);
        const QList<int> serverEnd = tcpSocketFds(f.port, tcpLocalPort(clientEnd.first()));
        QCOMPARE(serverEnd.size(), 1);
        QCOMPARE(tcpNoDelay(serverEnd.first()), 1);
    }

    void attachClientAttachesAtItsSize()
    {
        // `tether attach` (AttachClient) sends its terminal's size with the
        // attach, so the session has it before the replay is built: the
        // `attached` message already names it and carries the snapshot at
        // that size; no resize follows (the watcher hears of one size only).
        // A watcher's AttachClient sends none.
        Session *s = f.spawn();
        QVERIFY(s);
        WsClient watcher;
        watcher.open(f.port, wsPath(s, QStringLiteral("mode=watch")), f.key);
        QTRY_VERIFY(watcher.gotAttached());
        QTRY_VERIFY(watcher.bytes.contains("$ "));
        ServerEndpoint ep;
        QVERIFY(endpoint(&ep));

        AttachClient w(ep, s->id(), ViewerMode::Watch);
        QSignalSpy watching(&w, &AttachClient::attached);
        w.setWindowSize(50, 10);
        w.open();
        QTRY_COMPARE(watching.size(), 1);
        QCOMPARE(watching.first().first().toJsonObject().value(QStringLiteral("cols")).toInt(), 80);
        QCOMPARE(s->cols(), 80);

        AttachClient c(ep, s->id(), ViewerMode::Control);
        QSignalSpy attached(&c, &AttachClient::attached);
        c.setWindowSize(100, 30);
        c.open();
        QTRY_COMPARE(attached.size(), 1);
        const QJsonObject m = attached.first().first().toJsonObject();
        QCOMPARE(m.value(QStringLiteral("cols")).toInt(), 100);
        QCOMPARE(m.value(QStringLiteral("rows")).toInt(), 30);
        QVERIFY(m.value(QStringLiteral("snapshot_at")).isDouble());
        QCOMPARE(s->cols(), 100);
        QTRY_COMPARE(watcher.textsOfType(QStringLiteral("size")).size(), 1);
        // A reconnect carries it too (and a size changed since).
        c.setWindowSize(90, 20);
        QTRY_COMPARE(s->cols(), 90);
        QTRY_COMPARE(watcher.textsOfType(QStringLiteral("size")).size(), 2);
        c.reattach();
        QTRY_COMPARE(attached.size(), 2);
        QCOMPARE(attached.last().first().toJsonObject().value(QStringLiteral("cols")).toInt(), 90);
        // No size message for the same size: a round trip through the
        // watcher's connection (output of input sent after the reattach)
        // comes after one the reattach would have caused.
        c.sendInput("echo resized-$((4+5))\n", 22);
        QTRY_VERIFY(watcher.bytes.contains("resized-9\r\n"));
        QCOMPARE(watcher.textsOfType(QStringLiteral("size")).size(), 2);
    }

    void inputWhileLetGoIsSentOnTheNextAttach()
    {
        // `tether attach` lets its connection go while the terminal cannot
        // keep up (AttachClient::setPaused) and makes it again after a
        // restart in place. Keys typed meanwhile were dropped, Ctrl-C
        // included: a user's `yes` ran on. Now they are kept and sent after
        // the next `attached` (AttachClient::sendInput). Letting go is what
        // it does with a server without flow control (an older one).
        f.server->setFlowControl(false);
        Session *s = f.spawn({QStringLiteral("/bin/sh"), QStringLiteral("-c"), QStringLiteral("stty -echo; exec cat")});
        QVERIFY(s);
        ServerEndpoint ep;
        QVERIFY(endpoint(&ep));
        AttachClient c(ep, s->id(), ViewerMode::Control);
        QSignalSpy attached(&c, &AttachClient::attached);
        QByteArray out;
        connect(&c, &AttachClient::output, this, [&](const QByteArray &d, bool) { out += d; });
        c.open();
        QTRY_COMPARE(attached.size(), 1);
        c.sendInput("live\n", 5);
        QTRY_VERIFY(out.contains("live"));
        // Typed in the same turn as the pause (the socket still closing),
        // and while no connection exists.
        c.setPaused(true);
        c.sendInput("closing\n", 8);
        QTRY_COMPARE(s->viewerCount(), 0);
        c.sendInput("paused\n", 7);
        // A negative check with nothing to sync on: no connection exists
        // (viewerCount 0 above), so nothing typed can have been sent.
        QTest::qWait(50);
        QVERIFY(!out.contains("closing") && !out.contains("paused"));
        c.setPaused(false);
        QTRY_COMPARE(attached.size(), 2);
        QTRY_VERIFY(out.contains("closing\r\npaused"));
        // Watch mode sends nothing, then or later.
        AttachClient w(ep, s->id(), ViewerMode::Watch);
        QSignalSpy watching(&w, &AttachClient::attached);
        w.sendInput("watcher\n", 8);
        w.open();
        QTRY_COMPARE(watching.size(), 1);
        c.sendInput("after\n", 6);
        QTRY_VERIFY(out.contains("after"));
        QVERIFY(!out.contains("watcher"));
    }

    void pauseWithFlowControlKeepsTheConnection()
    {
        // With a server that advertises flow control, AttachClient::setPaused
        // pauses the session instead of letting go: the connection stays, the
        // program waits, input still goes at once, and resume lets it go on.
        // (Letting go lost output once the ring rolled past the client.)
        // The program notes each line it reads in a file, then echoes it.
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        const QString seen = dir.filePath(QStringLiteral("seen"));
        Session *s = f.spawn({QStringLiteral("/bin/sh"), QStringLiteral("-c"),
                              QStringLiteral("stty -echo; while IFS= read -r l; do printf '%s\\n' \"$l\" >> '%1'; "
                                             "printf '%s\\n' \"$l\"; done").arg(seen)});
        QVERIFY(s);
        const auto r = openRecorded(s);
        QVERIFY(r);
        AttachClient &c = r->client;
        const QSignalSpy &attached = r->attached;
        const QByteArray &out = r->out;
        QCOMPARE(attached.at(0).at(0).toJsonObject().value(QStringLiteral("flow_control")), QJsonValue(true));
        c.setPaused(true);
        QVERIFY(c.isPaused());
        QVERIFY(c.isFlowPaused());
        QTRY_VERIFY(!s->process()->isReadEnabled());
        QCOMPARE(s->viewerCount(), 1);
        // Typed while paused: reaches the program at once; its echo waits.
        c.sendInput("typed\n", 6);
        QTRY_VERIFY(readFile(seen).contains("typed\n"));
        // The server has handled the input (the program has it) and still
        // reads nothing from the PTY: the echo cannot have come.
        QVERIFY(!s->process()->isReadEnabled());
        QVERIFY(!out.contains("typed"));
        QCOMPARE(s->viewerCount(), 1);
        c.setPaused(false);
        QVERIFY(!c.isFlowPaused());
        QTRY_VERIFY(out.contains("typed\r\n"));
        QVERIFY(s->process()->isReadEnabled());
        QCOMPARE(attached.size(), 1); // never let go, never attached again

        // A watcher's pause would be ignored by the server: it lets go.
        ServerEndpoint ep;
        QVERIFY(endpoint(&ep));
        AttachClient w(ep, s->id(), ViewerMode::Watch);
        QSignalSpy watching(&w, &AttachClient::attached);
        w.open();
        QTRY_COMPARE(watching.size(), 1);
        QCOMPARE(s->viewerCount(), 2);
        w.setPaused(true);
        QVERIFY(!w.isFlowPaused());
        QTRY_COMPARE(s->viewerCount(), 1);
        QVERIFY(s->process()->isReadEnabled());
        w.setPaused(false);
        QTRY_COMPARE(watching.size(), 2);
    }

    void pauseOutlivesALostConnection()
    {
        // The server forgets a pause with its connection. A client still
        // paused when its connection is lost (a restart in place closes
        // 1012) pauses the next one as soon as it is attached, so the
        // program does not drain past it meanwhile.
        Session *s = f.spawn({QStringLiteral("/bin/sh"), QStringLiteral("-c"), QStringLiteral("exec yes")});
        QVERIFY(s);
        const auto r = openRecorded(s);
        QVERIFY(r);
        r->client.setPaused(true);
        QTRY_VERIFY(!s->process()->isReadEnabled());
        auto *viewer = dynamic_cast<WebSocketViewer *>(s->controlViewer());
        QVERIFY(viewer);
        viewer->closeWith(1012, QStringLiteral("server restarting"));
        QTRY_COMPARE(r->attached.size(), 2);
        QVERIFY(r->client.isPaused());
        QTRY_VERIFY(r->client.isFlowPaused());
        QTRY_VERIFY(!s->process()->isReadEnabled());
        QCOMPARE(s->viewerCount(), 1);
        r->client.setPaused(false);
        QTRY_VERIFY(s->process()->isReadEnabled());
        const qint64 at = r->received;
        QTRY_VERIFY(r->received > at + 1024 * 1024);
    }

    void unknownIdAndBadQuery()
    {
        WsClient none;
        none.open(f.port, QStringLiteral("/ws/doesnotexist"), f.key);
        QTRY_VERIFY(none.disconnected);
        QVERIFY(none.connected); // accepted, then closed
        QCOMPARE(none.closeCode, 4404);
        QCOMPARE(none.closeReason, QStringLiteral("no such session"));
        QVERIFY(!none.gotAttached());

        Session *s = f.spawn();
        QVERIFY(s);
        WsClient bad;
        bad.open(f.port, wsPath(s, QStringLiteral("mode=boss")), f.key);
        QTRY_VERIFY(bad.disconnected);
        QCOMPARE(bad.closeCode, 4400);
        QCOMPARE(bad.closeReason, QStringLiteral("bad query"));
        QCOMPARE(s->viewerCount(), 0);
        QTRY_COMPARE(f.server->viewerCount(), 0);
    }

    void replayAndResume()
    {
        Session *s = f.spawn();
        QVERIFY(s);
        QTRY_VERIFY(s->offset() > 0); // the prompt

        // 1. No resume: reset, initial, everything retained.
        WsClient a;
        a.open(f.port, wsPath(s), f.key);
        QTRY_VERIFY(a.gotAttached());
        QCOMPARE(a.attachedMsg.value(QStringLiteral("type")).toString(), QStringLiteral("attached"));
        QCOMPARE(a.attachedMsg.value(QStringLiteral("id")).toString(), s->id());
        QCOMPARE(a.attachedMsg.value(QStringLiteral("mode")).toString(), QStringLiteral("control"));
        QCOMPARE(a.attachedMsg.value(QStringLiteral("reset")).toBool(), true);
        QCOMPARE(a.attachedMsg.value(QStringLiteral("reason")).toString(), QStringLiteral("initial"));
        QCOMPARE(a.attachedMsg.value(QStringLiteral("state")).toString(), QStringLiteral("running"));
        QCOMPARE(a.attachedMsg.value(QStringLiteral("cols")).toInt(), 80);
        QCOMPARE(a.attachedMsg.value(QStringLiteral("rows")).toInt(), 24);
        QCOMPARE(a.num("replay_from"), 0);
        QCOMPARE(a.num("prelude_bytes"), 0);
        const qint64 aOffset0 = a.num("offset");
        QCOMPARE(a.num("replay_bytes"), aOffset0);
        QVERIFY(aOffset0 > 0);
        QTRY_VERIFY(a.stream().size() >= aOffset0);
        QCOMPARE(a.stream().left(int(aOffset0)), ringBytes(s, 0, quint64(aOffset0)));

        // Live output continues the offsets.
        a.sendInput("echo one-$((40+2))\n");
        QTRY_VERIFY(a.stream().endsWith("one-42\r\n$ ")); // quiescent: nothing more comes
        QTRY_COMPARE(quint64(a.stream().size()), s->offset());
        const quint64 aEnd = quint64(a.stream().size());
        QCOMPARE(a.stream(), ringBytes(s, 0, aEnd));
        a.ws.close();
        QTRY_COMPARE(s->viewerCount(), 0);

        // Output while nobody watches (a test viewer types).
        TestUtil::RecordingViewer typist;
        DetachGuard guard{s, &typist};
        s->attach(&typist, ViewerMode::Control, s->offset());
        s->sendInput(&typist, QByteArray("echo two-$((40+3))\n"));
        QTRY_VERIFY2(typist.received.contains("two-43\r\n") && typist.received.endsWith("$ "), typist.received.toHex().constData());
        const quint64 end = s->offset();
        QVERIFY(end > aEnd);

        // 2. Resume inside the retained range: exactly the missing bytes, no reset.
        WsClient b;
        b.open(f.port, wsPath(s, QStringLiteral("resume=%1").arg(aEnd)), f.key);
        QTRY_VERIFY(b.gotAttached());
        QCOMPARE(typist.detachReasons, QList<DetachReason>{DetachReason::Superseded});
        QCOMPARE(b.attachedMsg.value(QStringLiteral("reset")).toBool(), false);
        QCOMPARE(b.attachedMsg.value(QStringLiteral("reason")).toString(), QStringLiteral("resume"));
        QCOMPARE(quint64(b.num("replay_from")), aEnd);
        QCOMPARE(quint64(b.num("replay_bytes")), end - aEnd);
        QCOMPARE(quint64(b.num("offset")), end);
        QCOMPARE(b.num("prelude_bytes"), 0);
        QTRY_COMPARE(quint64(b.stream().size()), end - aEnd);
        QCOMPARE(b.stream(), ringBytes(s, aEnd, end));
        QCOMPARE(a.stream() + b.stream(), ringBytes(s, 0, end)); // nothing lost, nothing twice
        b.ws.close();
        QTRY_COMPARE(s->viewerCount(), 0);

        // 3. Resume at the end: nothing to replay, but "attached" still comes.
        WsClient c;
        c.open(f.port, wsPath(s, QStringLiteral("resume=%1").arg(end)), f.key);
        QTRY_VERIFY(c.gotAttached());
        QCOMPARE(c.attachedMsg.value(QStringLiteral("reset")).toBool(), false);
        QCOMPARE(c.attachedMsg.value(QStringLiteral("reason")).toString(), QStringLiteral("resume"));
        QCOMPARE(quint64(c.num("replay_from")), end);
        QCOMPARE(c.num("replay_bytes"), 0);
        QCOMPARE(quint64(c.num("offset")), end);
        // Live output still arrives, from offset `end` on.
        c.sendInput("echo three\n");
        // Wait for the prompt after the output too: taking `now` below while
        // the shell is still writing makes `d` see live bytes beyond it
        // (seen in CI under load: 83 bytes instead of 74).
        QTRY_VERIFY(c.stream().endsWith("three\r\n$ "));
        QTRY_COMPARE(end + quint64(c.stream().size()), s->offset());
        QCOMPARE(c.stream(), ringBytes(s, end, s->offset()));
        c.ws.close();
        QTRY_COMPARE(s->viewerCount(), 0);

        // 4. Beyond the end, or unparsable: reset, "ahead", everything retained.
        const quint64 now = s->offset();
        for (const QString &q : {QStringLiteral("resume=%1").arg(now + 1000), QStringLiteral("resume=abc"),
                                 QStringLiteral("resume=-1"), QStringLiteral("resume="),
                                 QStringLiteral("resume=99999999999999999999999")}) {
            WsClient d;
            d.open(f.port, wsPath(s, q), f.key);
            QTRY_VERIFY(d.gotAttached());
            QCOMPARE(d.attachedMsg.value(QStringLiteral("reset")).toBool(), true);
            QCOMPARE(d.attachedMsg.value(QStringLiteral("reason")).toString(), QStringLiteral("ahead"));
            QCOMPARE(d.num("replay_from"), 0);
            QCOMPARE(quint64(d.num("replay_bytes")), now);
            QTRY_COMPARE(quint64(d.stream().size()), now);
            QCOMPARE(d.stream(), ringBytes(s, 0, now));
            d.ws.close();
            QTRY_COMPARE(s->viewerCount(), 0);
        }
    }

    void rolledOut()
    {
        f.stop();
        Limits limits;
        limits.bufferCapacity = RingBuffer::kMinCapacity; // 64 KiB
        QVERIFY(f.start(limits));
        Session *s = f.spawn({QStringLiteral("/bin/sh"), QStringLiteral("-c"),
                              QStringLiteral("head -c 100000 /dev/zero | tr '\\000' a; exec sleep 60")});
        QVERIFY(s);
        QTRY_COMPARE(s->offset(), quint64(100000));
        const quint64 start = s->buffer().startOffset();
        QCOMPARE(start, quint64(100000 - 65536));

        // 5. Resume before the retained start: reset, "rolled_out".
        WsClient c;
        c.open(f.port, wsPath(s, QStringLiteral("resume=10")), f.key);
        QTRY_VERIFY(c.gotAttached());
        QCOMPARE(c.attachedMsg.value(QStringLiteral("reset")).toBool(), true);
        QCOMPARE(c.attachedMsg.value(QStringLiteral("reason")).toString(), QStringLiteral("rolled_out"));
        QCOMPARE(quint64(c.num("replay_from")), start); // plain text: the first retained byte is safe
        QCOMPARE(c.num("prelude_bytes"), 0);
        QCOMPARE(c.num("replay_bytes"), 65536);
        QCOMPARE(c.num("offset"), 100000);
        QTRY_COMPARE(c.stream().size(), 65536);
        QCOMPARE(c.stream(), QByteArray(65536, 'a'));
    }

    void safeBoundaryReplay()
    {
        f.stop();
        Limits limits;
        limits.bufferCapacity = RingBuffer::kMinCapacity;
        QVERIFY(f.start(limits));
        // Modes set at the very beginning, then 110000 bytes where every
        // 11-byte unit is "é" ESC[1m "X" ESC[0m: most byte positions are inside
        // a character or a sequence.
        const QByteArray modes = "\x1b[?1049h\x1b[?2004h\x1b[?25l";
        const QByteArray unit = "\xc3\xa9\x1b[1mX\x1b[0m";
        QCOMPARE(unit.size(), 11);
        QByteArray content = modes;
        for (int i = 0; i < 10000; ++i)
            content += unit;
        QTemporaryDir dir;
        const QString file = dir.path() + QStringLiteral("/out.bin");
        QVERIFY(writeFile(file, content));
        Session *s = f.spawn({QStringLiteral("/bin/sh"), QStringLiteral("-c"), QStringLiteral("cat '%1'; exec sleep 60").arg(file)});
        QVERIFY(s);
        QTRY_COMPARE(s->offset(), quint64(content.size()));
        const quint64 start = s->buffer().startOffset();
        QVERIFY(start > quint64(modes.size()));
        // The server's screen (if it is synced, its snapshot goes at the end:
        // the raw replay below is unchanged) has parsed everything.
        QTRY_VERIFY_WITH_TIMEOUT(s->hasScreen() && s->screenOffset() == s->offset(), 10000);

        for (int round = 0; round < 2; ++round) {
            WsClient c;
            c.open(f.port, wsPath(s, round == 0 ? QString() : QStringLiteral("resume=5")), f.key);
            QTRY_VERIFY(c.gotAttached());
            QCOMPARE(c.attachedMsg.value(QStringLiteral("reason")).toString(),
                     round == 0 ? QStringLiteral("initial") : QStringLiteral("rolled_out"));
            QCOMPARE(c.attachedMsg.value(QStringLiteral("reset")).toBool(), true);
            const quint64 from = quint64(c.num("replay_from"));
            const qint64 prelude = c.num("prelude_bytes");
            QVERIFY(from >= start && from < start + 11);
            // Safe starts in a unit: the lead byte of é (0), ESC (2), X (6), ESC (7).
            const int phase = int((from - quint64(modes.size())) % 11);
            QVERIFY2(phase == 0 || phase == 2 || phase == 6 || phase == 7, qPrintable(QString::number(phase)));
            QCOMPARE(quint64(c.num("replay_bytes")), quint64(content.size()) - from);
            QCOMPARE(c.num("offset"), qint64(content.size()));
            QVERIFY(prelude > 0);
            QTRY_COMPARE(qint64(c.bytes.size()), prelude + c.num("replay_bytes") + qMax<qint64>(0, c.num("snapshot_bytes")));
            const QByteArray pre = c.bytes.left(int(prelude));
            QVERIFY2(pre.contains("\x1b[?1049h"), pre.toHex().constData());
            QVERIFY(pre.contains("\x1b[?2004h"));
            QVERIFY(pre.contains("\x1b[?25l"));
            QCOMPARE(c.stream(), content.mid(int(from)));
            const uchar first = uchar(c.stream().at(0));
            QVERIFY(first == 0xc3 || first == 0x1b || first == 'X');
            c.ws.close();
            QTRY_COMPARE(s->viewerCount(), 0);
        }

        // A resume inside the retained range continues byte-exact, with no
        // prelude and no reset, even mid-sequence (the client has the rest).
        const quint64 mid = start + 4;
        WsClient r;
        r.open(f.port, wsPath(s, QStringLiteral("resume=%1").arg(mid)), f.key);
        QTRY_VERIFY(r.gotAttached());
        QCOMPARE(r.attachedMsg.value(QStringLiteral("reset")).toBool(), false);
        QCOMPARE(r.num("prelude_bytes"), 0);
        QCOMPARE(quint64(r.num("replay_from")), mid);
        QTRY_COMPARE(r.stream().size(), content.size() - int(mid));
        QCOMPARE(r.stream(), content.mid(int(mid)));
    }

    void exitOrdering()
    {
        QByteArray content;
        content.reserve(500000);
        for (int i = 0; i < 500000; ++i)
            content.append(char('a' + (i * 7 + i / 13) % 26));
        QTemporaryDir dir;
        const QString file = dir.path() + QStringLiteral("/out.txt");
        QVERIFY(writeFile(file, content));
        Session *s = f.spawn({QStringLiteral("/bin/sh"), QStringLiteral("-c"), QStringLiteral("cat '%1'; exit 3").arg(file)});
        QVERIFY(s);
        WsClient c;
        c.open(f.port, wsPath(s), f.key);
        QTRY_VERIFY_WITH_TIMEOUT(c.disconnected, 15000);
        QVERIFY(c.gotAttached());
        QCOMPARE(c.closeCode, 4410);
        QCOMPARE(c.closeReason, QStringLiteral("process exited"));
        QCOMPARE(c.stream(), content);
        // The exit message is the last message, after every output byte.
        QVERIFY(!c.events.isEmpty());
        QVERIFY(c.events.last().text);
        const QJsonObject exit = QJsonDocument::fromJson(c.events.last().data).object();
        QCOMPARE(exit.value(QStringLiteral("type")).toString(), QStringLiteral("exit"));
        QCOMPARE(exit.value(QStringLiteral("code")).toInt(-1), 3);
        QVERIFY(exit.value(QStringLiteral("signal")).isNull());
        QCOMPARE(c.textsOfType(QStringLiteral("exit")).size(), 1);
        QTRY_COMPARE(s->viewerCount(), 0);

        // Attaching to the exited session: attached, replay, exit, 4410.
        WsClient late;
        late.open(f.port, wsPath(s), f.key);
        QTRY_VERIFY(late.disconnected);
        QCOMPARE(late.attachedMsg.value(QStringLiteral("state")).toString(), QStringLiteral("exited"));
        QCOMPARE(late.stream(), content);
        QVERIFY(late.events.first().text);
        QVERIFY(late.events.last().text);
        QCOMPARE(QJsonDocument::fromJson(late.events.last().data).object().value(QStringLiteral("code")).toInt(), 3);
        QCOMPARE(late.closeCode, 4410);

        // A watcher of an exited session gets the same.
        WsClient watcher;
        watcher.open(f.port, wsPath(s, QStringLiteral("mode=watch&resume=%1").arg(content.size())), f.key);
        QTRY_VERIFY(watcher.disconnected);
        QCOMPARE(watcher.num("replay_bytes"), 0);
        QCOMPARE(watcher.textsOfType(QStringLiteral("exit")).size(), 1);
        QCOMPARE(watcher.closeCode, 4410);

        // Killed by a signal: code null, signal set.
        Session *k = f.spawn({QStringLiteral("/bin/sh"), QStringLiteral("-c"), QStringLiteral("read x; kill -9 $$")});
        WsClient kc;
        kc.open(f.port, wsPath(k), f.key);
        QTRY_VERIFY(kc.gotAttached());
        kc.sendInput("go\n");
        QTRY_VERIFY(kc.disconnected);
        const auto exits = kc.textsOfType(QStringLiteral("exit"));
        QCOMPARE(exits.size(), 1);
        QVERIFY(exits.first().value(QStringLiteral("code")).isNull());
        QCOMPARE(exits.first().value(QStringLiteral("signal")).toInt(), 9);
        QCOMPARE(kc.closeCode, 4410);
    }

    void supersedeRace()
    {
        Session *s = f.spawn();
        QVERIFY(s);
        const pid_t pid = s->pid();
        QTRY_VERIFY(s->offset() > 0);
        std::vector<std::unique_ptr<WsClient>> clients;
        for (int i = 0; i < 10; ++i) {
            clients.emplace_back(new WsClient);
            clients.back()->open(f.port, wsPath(s), f.key);
        }
        auto settled = [&]() {
            int closed = 0, alive = 0;
            for (const auto &c : clients) {
                if (c->disconnected)
                    ++closed;
                else if (c->gotAttached())
                    ++alive;
            }
            return closed == 9 && alive == 1;
        };
        QTRY_VERIFY_WITH_TIMEOUT(settled(), 10000);
        WsClient *survivor = nullptr;
        for (const auto &c : clients) {
            if (c->disconnected) {
                QCOMPARE(c->closeCode, 4409);
                QCOMPARE(c->closeReason, QStringLiteral("superseded"));
            } else {
                survivor = c.get();
            }
        }
        QVERIFY(survivor);
        QCOMPARE(s->viewerCount(), 1);
        QVERIFY(s->controlViewer());
        QCOMPARE(f.registry->count(), 1);
        QCOMPARE(s->pid(), pid);
        QCOMPARE(processesInSession(pid).size(), 1);
        // The survivor really is in control.
        survivor->sendInput("echo still-$((1+1))\n");
        QTRY_VERIFY(survivor->stream().contains("still-2\r\n"));
        QTRY_COMPARE(f.server->viewerCount(), 1);
    }

    void watchers()
    {
        Session *s = f.spawn();
        QVERIFY(s);
        WsClient a;
        a.open(f.port, wsPath(s, QStringLiteral("mode=control")), f.key);
        QTRY_VERIFY(a.gotAttached());
        WsClient w;
        w.open(f.port, wsPath(s, QStringLiteral("mode=watch")), f.key);
        QTRY_VERIFY(w.gotAttached());
        QCOMPARE(w.attachedMsg.value(QStringLiteral("mode")).toString(), QStringLiteral("watch"));
        QVERIFY(!a.disconnected); // a watcher does not supersede
        QCOMPARE(s->watchers().size(), 1);

        a.sendInput("echo from-a-$((2*3))\n");
        QTRY_VERIFY(w.stream().contains("from-a-6\r\n"));
        // Input from the watcher is ignored.
        w.sendInput("echo from-w-$((2*4))\n");
        w.sendText(R"({"type":"resize","cols":50,"rows":20})");
        a.sendInput("echo marker-$((2*5))\n");
        QTRY_VERIFY(a.stream().contains("marker-10\r\n"));
        QTRY_VERIFY(w.stream().contains("marker-10\r\n"));
        QVERIFY(!ringBytes(s, s->buffer().startOffset(), s->offset()).contains("from-w"));
        QCOMPARE(s->cols(), 80);
        // The watcher's offsets match the stream too.
        QCOMPARE(w.stream(), ringBytes(s, quint64(w.num("replay_from")), quint64(w.num("replay_from")) + quint64(w.stream().size())));

        // A new control viewer supersedes the old one; the watcher stays.
        WsClient b;
        b.open(f.port, wsPath(s), f.key);
        QTRY_VERIFY(a.disconnected);
        QCOMPARE(a.closeCode, 4409);
        QTRY_VERIFY(b.gotAttached());
        WsClient w2;
        w2.open(f.port, wsPath(s, QStringLiteral("mode=watch")), f.key);
        QTRY_VERIFY(w2.gotAttached());
        b.sendInput("echo from-b\n");
        QTRY_VERIFY(w.stream().contains("from-b\r\n") && w2.stream().contains("from-b\r\n"));
        QVERIFY(!w.disconnected);
        QVERIFY(!b.disconnected);
        QCOMPARE(s->watchers().size(), 2);
        QCOMPARE(s->viewerCount(), 3);
        QCOMPARE(f.http("GET", "/api/sessions/" + s->id().toLatin1()).json().value(QStringLiteral("viewers")).toInt(), 3);
    }

    void viewerCap()
    {
        // Each viewer gets its own copy of the replay: the number per session
        // is bounded. Refusal: accepted, then closed 4429 (like 4404).
        Session *s = f.spawn();
        QVERIFY(s);
        const int cap = Session::kMaxViewers;
        QCOMPARE(cap, 16);
        std::vector<std::unique_ptr<WsClient>> clients;
        auto open = [&](const QString &query) {
            clients.emplace_back(new WsClient);
            clients.back()->open(f.port, wsPath(s, query), f.key);
            return clients.back().get();
        };
        auto refused = [&](const QString &query) {
            WsClient c;
            c.open(f.port, wsPath(s, query), f.key);
            if (!QTest::qWaitFor([&]() { return c.disconnected; }, 10000))
                return QStringLiteral("not closed");
            if (!c.connected || c.gotAttached())
                return QStringLiteral("connected %1 attached %2").arg(c.connected).arg(c.gotAttached());
            return QStringLiteral("%1 %2").arg(c.closeCode).arg(c.closeReason);
        };
        const QString tooMany = QStringLiteral("4429 too many viewers");

        WsClient *control = open(QString());
        QTRY_VERIFY(control->gotAttached());
        for (int i = 1; i < cap; ++i)
            open(QStringLiteral("mode=watch"));
        for (const auto &c : clients)
            QTRY_VERIFY(c->gotAttached());
        QCOMPARE(s->viewerCount(), cap);

        // One more watcher is refused; the session and its viewers are unharmed.
        QCOMPARE(refused(QStringLiteral("mode=watch")), tooMany);
        QCOMPARE(s->viewerCount(), cap);
        QVERIFY(!control->disconnected);

        // A control attach supersedes the control viewer and takes its place:
        // it does not count twice.
        WsClient *taker = open(QString());
        QTRY_VERIFY(taker->gotAttached());
        QTRY_VERIFY(control->disconnected);
        QCOMPARE(control->closeCode, 4409);
        QCOMPARE(s->viewerCount(), cap);
        QCOMPARE(s->controlViewer() != nullptr, true);

        // A watcher leaves: room for exactly one again.
        clients.at(1)->ws.close();
        QTRY_COMPARE(s->viewerCount(), cap - 1);
        WsClient *late = open(QStringLiteral("mode=watch"));
        QTRY_VERIFY(late->gotAttached());
        QCOMPARE(refused(QStringLiteral("mode=watch")), tooMany);

        // Without a control viewer, a control attach is one more viewer.
        taker->ws.close();
        QTRY_COMPARE(s->viewerCount(), cap - 1);
        QVERIFY(!s->controlViewer());
        WsClient *filler = open(QStringLiteral("mode=watch"));
        QTRY_VERIFY(filler->gotAttached());
        QCOMPARE(refused(QString()), tooMany);
        QCOMPARE(s->viewerCount(), cap);

        // Live output still reaches every attached viewer.
        const QByteArray marker = "cap-marker";
        QVERIFY(s->process()->write("echo " + marker + "\n"));
        QTRY_VERIFY(late->stream().contains(marker));
        QTRY_VERIFY(filler->stream().contains(marker));
        clients.clear();
        QTRY_COMPARE(s->viewerCount(), 0);
        QTRY_COMPARE(f.server->viewerCount(), 0);
    }

    void unmaskedClientFrames()
    {
        // RFC 6455 §5.1 wants unmasked client frames refused; QWebSocket
        // (Qt 5.15, 6.4) accepts them and has no switch to refuse them, as
        // docs/protocol.md says. This pins the documented behaviour: should
        // Qt start refusing them, the document must change with it.
        Session *s = f.spawn();
        QVERIFY(s);
        RawWs raw;
        QVERIFY(raw.handshake(f.port, wsPath(s).toLatin1(), f.key));
        QTRY_COMPARE(s->viewerCount(), 1);
        const QByteArray input = "echo unmasked-$((40+2))\n";
        QByteArray frame;
        frame.append(char(0x82));             // FIN, binary
        frame.append(char(input.size()));     // mask bit clear
        frame += input;
        raw.sock.write(frame);
        QTRY_VERIFY(raw.in.contains("unmasked-42"));
        QCOMPARE(s->viewerCount(), 1);
    }

    void lingeringCloseEndsWithTheServer()
    {
        // The server finishes a viewer's close gracefully (LingeringClose:
        // FIN, then read and drop until the peer closes too, bounded). A peer
        // that never closes its side keeps it pending; the server going away
        // (the process exiting) must end it with the descriptor closed and
        // the object freed. Before, it belonged to nothing and outlived the
        // server: LeakSanitizer reported it at the exit of a `tether` in
        // tst_restart (1,348 bytes, with its QTimer and QSocketNotifier).
        Session *s = f.spawn();
        QVERIFY(s);
        const int before = LingeringClose::pending();
        // A plain socket: it never reads and never closes, unlike a
        // QTcpSocket, which closes at the server's FIN.
        const int peer = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        QVERIFY(peer >= 0);
        const auto closePeer = qScopeGuard([peer]() { ::close(peer); });
        sockaddr_in a{};
        a.sin_family = AF_INET;
        a.sin_port = htons(f.port);
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        QCOMPARE(::connect(peer, reinterpret_cast<const sockaddr *>(&a), sizeof a), 0);
        const QByteArray request = "GET " + wsPath(s).toLatin1() + " HTTP/1.1\r\nHost: " + f.host()
            + "\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\n"
              "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nAuthorization: Bearer " + f.key + "\r\n\r\n";
        QCOMPARE(::write(peer, request.constData(), size_t(request.size())), ssize_t(request.size()));
        QTRY_COMPARE(s->viewerCount(), 1);
        const quint16 peerPort = tcpLocalPort(peer);

        f.server->close(); // every viewer closed with 1001, as at shutdown
        QTRY_COMPARE(LingeringClose::pending(), before + 1);
        QCOMPARE(tcpSocketFds(f.port, peerPort).size(), 1); // the lingering descriptor
        f.server.reset();
        QCOMPARE(LingeringClose::pending(), before);
        QCOMPARE(tcpSocketFds(f.port, peerPort).size(), 0);
    }

    void clientCloseCodes_data()
    {
        QTest::addColumn<int>("code");
        QTest::addColumn<bool>("split"); // the close frame's header and payload in two writes
        QTest::addColumn<int>("answer");
        QTest::addColumn<QByteArray>("reason");
        // RFC 6455 §7.4: invalid codes are a protocol error (1002), and the
        // reason says which code (issue 10: Qt's text was "Invalid close
        // code 1002 detected.").
        QTest::newRow("999") << 999 << false << 1002 << QByteArray("invalid close code 999");
        QTest::newRow("0") << 0 << false << 1002 << QByteArray("invalid close code 0");
        QTest::newRow("1005 (never sent)") << 1005 << false << 1002 << QByteArray("invalid close code 1005");
        QTest::newRow("1015 (never sent)") << 1015 << false << 1002 << QByteArray("invalid close code 1015");
        QTest::newRow("2999 (unassigned)") << 2999 << false << 1002 << QByteArray("invalid close code 2999");
        QTest::newRow("5000") << 5000 << false << 1002 << QByteArray("invalid close code 5000");
        // Registered codes Qt does not know: echoed (RFC 6455 §5.5.1), not 1002.
        QTest::newRow("1012 (service restart)") << 1012 << false << 1012 << QByteArray();
        QTest::newRow("1014 (bad gateway)") << 1014 << false << 1014 << QByteArray();
        // Valid codes: Qt's own echo, untouched.
        QTest::newRow("1000") << 1000 << false << 1000 << QByteArray("bye");
        QTest::newRow("4000") << 4000 << false << 4000 << QByteArray("bye");
        // The frame split across reads is not in one peek: the code is not
        // known, the problem still is.
        QTest::newRow("999, split") << 999 << true << 1002 << QByteArray("invalid close code");
    }
    void clientCloseCodes()
    {
        QFETCH(int, code);
        QFETCH(bool, split);
        QFETCH(int, answer);
        QFETCH(QByteArray, reason);
        Session *s = f.spawn();
        QVERIFY(s);
        RawWs raw;
        QVERIFY(raw.handshake(f.port, wsPath(s).toLatin1(), f.key));
        QTRY_COMPARE(s->viewerCount(), 1);
        // A masked close frame with `code` and the reason "bye".
        QByteArray payload;
        payload.append(char(code >> 8));
        payload.append(char(code & 0xff));
        payload += "bye";
        const char mask[4] = {'\x11', '\x22', '\x33', '\x44'};
        QByteArray frame;
        frame.append(char(0x88));
        frame.append(char(0x80 | payload.size()));
        frame.append(mask, 4);
        for (int i = 0; i < payload.size(); ++i)
            frame.append(char(payload.at(i) ^ mask[i % 4]));
        if (split) {
            raw.sock.write(frame.left(6));
            raw.sock.flush();
            // The server reads the header alone: its kernel has acknowledged
            // the 6 bytes and its socket holds nothing unread (read on the
            // same event loop turn, by the QWebSocket behind it).
            QTRY_VERIFY([&] {
                const TcpQueues mine = tcpQueues(raw.sock.localPort(), f.port);
                const TcpQueues server = tcpQueues(f.port, raw.sock.localPort());
                return raw.sock.bytesToWrite() == 0 && mine.tx == 0 && server.rx == 0;
            }());
            raw.sock.write(frame.mid(6));
        } else {
            raw.sock.write(frame);
        }
        // The server's close frame: unmasked, code then reason.
        RawWs::Frame fr;
        bool gotClose = false;
        const auto poll = [&]() {
            while (!gotClose && raw.nextFrame(&fr))
                gotClose = fr.opcode == 0x8;
            return gotClose;
        };
        QTRY_VERIFY_WITH_TIMEOUT(poll(), 5000);
        QVERIFY(fr.payload.size() >= 2);
        const int got = (uchar(fr.payload.at(0)) << 8) | uchar(fr.payload.at(1));
        QCOMPARE(got, answer);
        QCOMPARE(fr.payload.mid(2), reason);
        QTRY_COMPARE(s->viewerCount(), 0);
        QCOMPARE(s->state(), Session::State::Running);
    }

    void badControlFrames_data()
    {
        QTest::addColumn<QByteArray>("message");
        QTest::newRow("not json") << QByteArray("not json");
        QTest::newRow("array") << QByteArray("[1,2]");
        QTest::newRow("no type") << QByteArray("{}");
        QTest::newRow("unknown type") << QByteArray(R"({"type":"bogus"})");
        QTest::newRow("type not string") << QByteArray(R"({"type":1})");
        QTest::newRow("cols not number") << QByteArray(R"({"type":"resize","cols":"80","rows":24})");
        QTest::newRow("rows missing") << QByteArray(R"({"type":"resize","cols":80})");
    }

    void badControlFrames()
    {
        QFETCH(QByteArray, message);
        Session *s = f.spawn();
        QVERIFY(s);
        const pid_t pid = s->pid();
        WsClient c;
        c.open(f.port, wsPath(s), f.key);
        QTRY_VERIFY(c.gotAttached());
        c.sendText(message);
        QTRY_VERIFY(c.disconnected);
        QCOMPARE(c.closeCode, 4400);
        QCOMPARE(c.closeReason, QStringLiteral("bad control message"));
        QTRY_COMPARE(s->viewerCount(), 0);
        // The session is unharmed and attachable again.
        QCOMPARE(s->state(), Session::State::Running);
        QCOMPARE(s->pid(), pid);
        WsClient again;
        again.open(f.port, wsPath(s), f.key);
        QTRY_VERIFY(again.gotAttached());
        again.sendInput("echo ok-$((3*3))\n");
        QTRY_VERIFY(again.stream().contains("ok-9\r\n"));
    }

    void oversizedFrame()
    {
        Session *s = f.spawn({QStringLiteral("/bin/sh"), QStringLiteral("-c"), QStringLiteral("exec sleep 60")});
        QVERIFY(s);
        for (quint64 frameSize : {quint64(512 * 1024), quint64(4 * 1024 * 1024)}) {
            WsClient c;
            c.ws.setOutgoingFrameSize(frameSize); // one frame over the limit, or a message of several frames
            c.open(f.port, wsPath(s), f.key);
            QTRY_VERIFY(c.gotAttached());
            c.sendInput(QByteArray(1024 * 1024 + 1, 'x'));
            QTRY_VERIFY(c.disconnected);
            QCOMPARE(c.closeCode, 1009);
            QTRY_COMPARE(s->viewerCount(), 0);
            QCOMPARE(s->state(), Session::State::Running);
        }
    }

    /// The 1009 close frame reaches the client every time, with its reason,
    /// and the connection then ends with a FIN, never a reset, although the
    /// client is still sending the rest of its message (docs/protocol.md §5,
    /// "Close codes": a graceful close; RFC 6455 §7.1.1). Qt closes on its
    /// own when a message is too large, not through closeSocket(), so the
    /// server kept no descriptor for LingeringClose: the oversized payload
    /// still unread in the kernel made the close a reset (a tester's client
    /// saw 1006 in 5 of 8 tries; a client that writes its whole message
    /// before reading, below, had its send reset every time).
    void oversizedMessageCloseFrameAlwaysArrives()
    {
        Session *s = f.spawn({QStringLiteral("/bin/sh"), QStringLiteral("-c"), QStringLiteral("exec sleep 60")});
        QVERIFY(s);
        const qint64 size = 2 * 1024 * 1024;
        for (int i = 0; i < 10; ++i) {
            // Even tries: one frame over the limit (refused on its header,
            // its payload never read); odd: a message of 512 KiB frames.
            const bool oneFrame = i % 2 == 0;
            const qint64 frameSize = oneFrame ? size : 512 * 1024;
            const QString expectedReason = oneFrame ? QStringLiteral("Maximum framesize exceeded.")
                                                    : QStringLiteral("Received message is too big.");
            // QWebSocket: it reads while it writes.
            WsClient c;
            c.ws.setOutgoingFrameSize(quint64(frameSize));
            c.open(f.port, wsPath(s), f.key);
            QTRY_VERIFY(c.gotAttached());
            c.sendInput(QByteArray(size, 'x'));
            QTRY_VERIFY(c.disconnected);
            QString why = QStringLiteral("try %1, QWebSocket: %2 \"%3\" (%4)")
                              .arg(i).arg(c.closeCode).arg(c.closeReason, c.ws.errorString());
            QVERIFY2(c.closeCode == 1009, qPrintable(why));
            QVERIFY2(c.closeReason == expectedReason, qPrintable(why));
            QTRY_COMPARE(s->viewerCount(), 0);

            // A client that writes its whole message before it reads
            // (blocking, in a thread of its own: the server runs on this
            // thread's event loop).
            BlockingWsResult r;
            std::atomic<bool> done{false};
            std::thread client([&]() {
                blockingWsSend(r, f.port, wsPath(s).toLatin1(), f.key, size, frameSize);
                done = true;
            });
            const bool finished = QTest::qWaitFor([&]() { return done.load(); }, 60000);
            if (!finished)
                ::shutdown(r.fd.load(), SHUT_RDWR); // unblock it, then fail
            client.join();
            QVERIFY2(finished, "the blocking client hung");
            why = QStringLiteral("try %1, blocking client: upgraded %2, close %3 \"%4\", send errno %5, "
                                 "recv errno %6, end of stream %7")
                      .arg(i).arg(r.upgraded).arg(r.closeCode).arg(QString::fromUtf8(r.closeReason))
                      .arg(r.sendErrno).arg(r.recvErrno).arg(r.eof);
            QVERIFY2(r.upgraded, qPrintable(why));
            QVERIFY2(r.closeCode == 1009, qPrintable(why));
            QVERIFY2(r.closeReason == expectedReason.toUtf8(), qPrintable(why));
            QVERIFY2(r.sendErrno == 0, qPrintable(why)); // its message was read (and dropped), not reset
            QVERIFY2(r.eof && r.recvErrno == 0, qPrintable(why)); // a FIN after the close frame
            QTRY_COMPARE(s->viewerCount(), 0);
        }
        QCOMPARE(s->state(), Session::State::Running);
    }

    void resizeBounds()
    {
        Session *s = f.spawn();
        QVERIFY(s);
        WsClient a;
        a.open(f.port, wsPath(s), f.key);
        QTRY_VERIFY(a.gotAttached());
        WsClient w;
        w.open(f.port, wsPath(s, QStringLiteral("mode=watch")), f.key);
        QTRY_VERIFY(w.gotAttached());
        for (const char *bad : {R"({"type":"resize","cols":0,"rows":0})", R"({"type":"resize","cols":1001,"rows":50})",
                                R"({"type":"resize","cols":100,"rows":1001})", R"({"type":"resize","cols":-5,"rows":10})",
                                R"({"type":"resize","cols":80.5,"rows":24})", R"({"type":"resize","cols":131072,"rows":24})",
                                R"({"type":"resize","cols":1e10,"rows":24})"})
            a.sendText(bad);
        a.sendText(R"({"type":"resize","cols":100,"rows":40})");
        QTRY_COMPARE(s->cols(), 100);
        QCOMPARE(s->rows(), 40);
        QTRY_COMPARE(w.textsOfType(QStringLiteral("size")).size(), 1);
        const QJsonObject size = w.textsOfType(QStringLiteral("size")).first();
        QCOMPARE(size.value(QStringLiteral("cols")).toInt(), 100);
        QCOMPARE(size.value(QStringLiteral("rows")).toInt(), 40);
        QTRY_COMPARE(a.textsOfType(QStringLiteral("size")).size(), 1);
        a.sendInput("stty size\n");
        QTRY_VERIFY(a.stream().contains("40 100\r\n"));
        QVERIFY(!a.disconnected);
        // Boundaries 1 and 1000 are valid.
        a.sendText(R"({"type":"resize","cols":1000,"rows":1})");
        QTRY_COMPARE(s->cols(), 1000);
        QCOMPARE(s->rows(), 1);
        QTRY_COMPARE(w.textsOfType(QStringLiteral("size")).size(), 2);
        WsClient late;
        late.open(f.port, wsPath(s, QStringLiteral("mode=watch")), f.key);
        QTRY_VERIFY(late.gotAttached());
        QCOMPARE(late.attachedMsg.value(QStringLiteral("cols")).toInt(), 1000);
        QCOMPARE(late.attachedMsg.value(QStringLiteral("rows")).toInt(), 1);
    }

    void marginFixup()
    {
        // Scroll margins set, then a resize: a "fixup" text message in order
        // between the binary frames, live and in a later replay, outside the
        // offsets (protocol.md "fixup").
        Session *s = f.spawn();
        QVERIFY(s);
        WsClient a;
        a.open(f.port, wsPath(s), f.key);
        QTRY_VERIFY(a.gotAttached());
        a.sendInput("printf '\\033[1;5rMARGINS\\n'\n");
        QTRY_VERIFY(a.stream().contains("MARGINS\r\n"));
        QTRY_VERIFY(a.stream().endsWith("$ "));
        const quint64 at = s->offset();
        a.sendText(R"({"type":"resize","cols":90,"rows":30})");
        QTRY_COMPARE(a.textsOfType(QStringLiteral("fixup")).size(), 1);
        QCOMPARE(a.textsOfType(QStringLiteral("fixup")).first().value(QStringLiteral("data")).toString(),
                 QStringLiteral("\x1b" "7\x1b[r\x1b" "8"));
        a.sendInput("echo after\n");
        QTRY_VERIFY(a.stream().contains("after\r\n"));

        WsClient late;
        late.open(f.port, wsPath(s, QStringLiteral("mode=watch")), f.key);
        QTRY_VERIFY(late.gotAttached());
        QTRY_COMPARE(quint64(late.bytes.size()), s->offset());
        // The fixup arrives after exactly `at` replay bytes, and is not among them.
        qint64 before = 0;
        bool seen = false;
        for (const WsClient::Event &e : late.events) {
            if (!e.text) {
                before += seen ? 0 : e.data.size();
            } else if (QJsonDocument::fromJson(e.data).object().value(QStringLiteral("type")).toString()
                       == QLatin1String("fixup")) {
                seen = true;
            }
        }
        QVERIFY(seen);
        QCOMPARE(quint64(before), at);
    }

    void screenSnapshotAndScreenReplay()
    {
        // A program that draws once and then updates a few cells until the
        // 64 KiB ring rolls over. A viewer attached from the start, a late
        // default one (snapshot inserted at S) and a late replay=screen one
        // all end on the same screen, rendered by libvterm.
        f.stop();
        Limits limits;
        limits.bufferCapacity = RingBuffer::kMinCapacity; // 64 KiB
        QVERIFY(f.start(limits));
        const QString script = QStringLiteral(
            "sleep 0.5; printf '\\033[?1049h\\033[2J\\033[H\\033[1;44m TOP \\033[0m\\033[24;1H\\033[7mbar\\033[0m';"
            "i=0; while [ $i -lt 5000 ]; do i=$((i+1)); [ $((i%50)) -ne 0 ] || sleep 0.01; printf '\\033[5;3H\\033[33m%05d\\033[0m' $i; done;"
            "printf '\\033[7;1Hdone'; exec sleep 60");
        Session *s = f.spawn({QStringLiteral("/bin/sh"), QStringLiteral("-c"), script});
        QVERIFY(s);
        WsClient always;
        always.open(f.port, wsPath(s, QStringLiteral("mode=watch")), f.key);
        QTRY_VERIFY(always.gotAttached());
        QCOMPARE(always.num("replay_bytes"), 0); // attached before the first byte
        QTRY_VERIFY_WITH_TIMEOUT(always.bytes.contains("done"), 20000);
        QTRY_VERIFY_WITH_TIMEOUT(s->screenOffset() == s->offset() && s->screenSynced(), 10000);
        QVERIFY(s->buffer().startOffset() > 0);

        // The API publishes the screen.
        const HttpReply api = f.http("GET", "/api/sessions/" + s->id().toLatin1());
        QCOMPARE(api.status, 200);
        const QJsonObject so = QJsonDocument::fromJson(api.body).object();
        QVERIFY(so.value(QStringLiteral("screen_bytes")).toDouble() > 0);
        QCOMPARE(so.value(QStringLiteral("screen")).toObject().value(QStringLiteral("synced")).toBool(), true);
        QCOMPARE(quint64(so.value(QStringLiteral("screen")).toObject().value(QStringLiteral("offset")).toDouble()),
                 s->offset());

        TestUtil::VtRender ref(80, 24);
        ref.feed(always.bytes);

        WsClient late;
        late.open(f.port, wsPath(s, QStringLiteral("mode=watch")), f.key);
        QTRY_VERIFY(late.gotAttached());
        QCOMPARE(late.attachedMsg.value(QStringLiteral("replay_mode")).toString(), QStringLiteral("raw"));
        QVERIFY(late.attachedMsg.value(QStringLiteral("snapshot_at")).isDouble());
        QCOMPARE(quint64(late.num("snapshot_at")), s->offset());
        const qint64 expected = late.num("prelude_bytes") + late.num("replay_bytes") + late.num("snapshot_bytes");
        QVERIFY(late.num("snapshot_bytes") > 0);
        QTRY_COMPARE(qint64(late.bytes.size()), expected);
        TestUtil::VtRender got(80, 24);
        got.feed(late.bytes);
        QVERIFY2(got.diff(ref).isEmpty(), qPrintable(got.diff(ref)));

        WsClient screen;
        screen.open(f.port, wsPath(s, QStringLiteral("mode=watch&replay=screen&lines=20")), f.key);
        QTRY_VERIFY(screen.gotAttached());
        QCOMPARE(screen.attachedMsg.value(QStringLiteral("replay_mode")).toString(), QStringLiteral("screen"));
        QCOMPARE(screen.num("snapshot_at"), screen.num("replay_from"));
        QCOMPARE(quint64(screen.num("replay_from")), s->offset());
        QCOMPARE(screen.num("prelude_bytes"), 0);
        QTRY_COMPARE(qint64(screen.bytes.size()), screen.num("snapshot_bytes"));
        QVERIFY(screen.bytes.size() < late.bytes.size() / 4); // the screen, not the ring
        TestUtil::VtRender scr(80, 24);
        scr.feed(screen.bytes);
        QVERIFY2(scr.diff(ref).isEmpty(), qPrintable(scr.diff(ref)));
    }

    void attachQueryRefusedBeforeUpgrade_data()
    {
        // The attach query's replay=, lines= (docs/protocol.md §5, replay
        // modes) and cols=C&rows=R (§5, "Attaching at the viewer's size":
        // both, 1..1000 each) are checked before the upgrade: 400, and no
        // viewer. `size` is the session's size once answered: a control
        // viewer's size is taken with the attach, a watcher's never, and a
        // refused query changes nothing.
        QTest::addColumn<QString>("query");
        QTest::addColumn<int>("status");
        QTest::addColumn<QSize>("size");
        const QSize initial(80, 24);
        QTest::newRow("replay raw") << QStringLiteral("replay=raw") << 101 << initial;
        QTest::newRow("replay screen") << QStringLiteral("replay=screen") << 101 << initial;
        QTest::newRow("screen, 0 lines") << QStringLiteral("replay=screen&lines=0") << 101 << initial;
        QTest::newRow("screen, 1000 lines") << QStringLiteral("replay=screen&lines=1000") << 101 << initial;
        QTest::newRow("unknown replay") << QStringLiteral("replay=all") << 400 << initial;
        QTest::newRow("empty replay") << QStringLiteral("replay=") << 400 << initial;
        QTest::newRow("lines 1001") << QStringLiteral("replay=screen&lines=1001") << 400 << initial;
        QTest::newRow("lines negative") << QStringLiteral("replay=screen&lines=-1") << 400 << initial;
        QTest::newRow("lines not a number") << QStringLiteral("replay=screen&lines=ten") << 400 << initial;
        QTest::newRow("lines empty") << QStringLiteral("replay=screen&lines=") << 400 << initial;
        QTest::newRow("lines huge") << QStringLiteral("replay=screen&lines=99999999999999999999999") << 400 << initial;
        QTest::newRow("lines without replay=screen") << QStringLiteral("lines=10") << 400 << initial;
        QTest::newRow("size") << QStringLiteral("cols=100&rows=30") << 101 << QSize(100, 30);
        QTest::newRow("watcher's size") << QStringLiteral("mode=watch&cols=100&rows=30") << 101 << initial;
        QTest::newRow("size with replay=screen") << QStringLiteral("replay=screen&lines=10&cols=1000&rows=1") << 101
                                                 << QSize(1000, 1);
        QTest::newRow("cols alone") << QStringLiteral("cols=100") << 400 << initial;
        QTest::newRow("rows alone") << QStringLiteral("rows=30") << 400 << initial;
        QTest::newRow("hidden tab 0x0") << QStringLiteral("cols=0&rows=0") << 400 << initial;
        QTest::newRow("too wide") << QStringLiteral("cols=131072&rows=30") << 400 << initial;
        QTest::newRow("size not a number") << QStringLiteral("cols=80&rows=tall") << 400 << initial;
        QTest::newRow("size a fraction") << QStringLiteral("cols=80.5&rows=24") << 400 << initial;
    }

    void attachQueryRefusedBeforeUpgrade()
    {
        QFETCH(QString, query);
        QFETCH(int, status);
        QFETCH(QSize, size);
        Session *s = f.spawn();
        QVERIFY(s);
        RawWs raw;
        raw.handshake(f.port, wsPath(s, query).toLatin1(), f.key);
        QCOMPARE(raw.status, status);
        if (status == 400) {
            QCOMPARE(s->viewerCount(), 0);
        } else {
            // Once `attached` has come the size is settled (a control
            // viewer's is taken before it).
            RawWs::Frame frame;
            bool attached = false;
            while (!attached && waitFrame(raw, &frame))
                attached = frame.opcode == 1 && frame.payload.contains("\"type\":\"attached\"");
            QVERIFY(attached);
        }
        QCOMPARE(QSize(s->cols(), s->rows()), size);
    }

    void disconnectedLineSaysHowItEnded_data()
    {
        // The viewer's "disconnected" debug line (tests/browser/lib.mjs
        // prints them when a page's attachment ends): one space between
        // words whatever is missing (QDebug added one after the empty
        // reason and after the empty "(aborted)").
        QTest::addColumn<QString>("how");
        QTest::addColumn<QString>("expected"); ///< after "disconnected: ", before " - socket: "
        QTest::newRow("closed by the client") << QStringLiteral("close") << QStringLiteral("close 1000");
        QTest::newRow("closed with a reason") << QStringLiteral("reason") << QStringLiteral("close 1000 done here");
        QTest::newRow("silent client dropped") << QStringLiteral("silent") << QStringLiteral("close 1000 (aborted)");
    }

    void disconnectedLineSaysHowItEnded()
    {
        QFETCH(QString, how);
        QFETCH(QString, expected);
        // The category itself, not filter rules: ctest runs every test
        // with QT_LOGGING_RULES=tether.*.debug=false, which outranks
        // QLoggingCategory::setFilterRules() (QLoggingCategory, "Logging
        // Rules": the environment is read last).
        auto &category = const_cast<QLoggingCategory &>(lcServer());
        const bool wasOn = category.isDebugEnabled();
        category.setEnabled(QtDebugMsg, true);
        const auto restore = qScopeGuard([&category, wasOn] { category.setEnabled(QtDebugMsg, wasOn); });
        ServerLog log;
        Session *s = f.spawn();
        QVERIFY(s);
        if (how == QLatin1String("silent")) {
            f.server->setKeepalive(100, 400);
            RawWs raw; // never answers a ping
            QVERIFY(raw.handshake(f.port, wsPath(s).toLatin1(), f.key));
            QTRY_COMPARE(s->viewerCount(), 1);
            QTRY_COMPARE_WITH_TIMEOUT(ServerLog::containing(QStringLiteral(" disconnected: ")).size(), 1, 5000);
        } else {
            WsClient c;
            c.open(f.port, wsPath(s), f.key);
            QTRY_VERIFY(c.gotAttached());
            if (how == QLatin1String("reason"))
                c.ws.close(QWebSocketProtocol::CloseCodeNormal, QStringLiteral("done here"));
            else
                c.ws.close();
            QTRY_COMPARE(ServerLog::containing(QStringLiteral(" disconnected: ")).size(), 1);
        }
        const QString line = ServerLog::containing(QStringLiteral(" disconnected: ")).first();
        QVERIFY2(line.contains(QStringLiteral(" disconnected: ") + expected + QStringLiteral(" - socket: ")), qPrintable(line));
        QVERIFY2(!line.contains(QStringLiteral("  ")), qPrintable(line));
    }

    void controlAttachTakesItsSize()
    {
        // The control viewer's size with the attach: the session is resized
        // before the replay (SIGWINCH: the shell sees it), `attached` names
        // it, the watchers get a `size` message, the viewer none; the reset
        // replay carries the snapshot at the new size (at the end of the
        // stream) though nothing was dropped.
        Session *s = f.spawn();
        QVERIFY(s);
        WsClient watcher;
        watcher.open(f.port, wsPath(s, QStringLiteral("mode=watch")), f.key);
        QTRY_VERIFY(watcher.gotAttached());
        QTRY_VERIFY(watcher.bytes.contains("$ ")); // the shell waits at its prompt

        WsClient c;
        c.open(f.port, wsPath(s, QStringLiteral("cols=100&rows=30")), f.key);
        QTRY_VERIFY(c.gotAttached());
        QCOMPARE(c.attachedMsg.value(QStringLiteral("cols")).toInt(), 100);
        QCOMPARE(c.attachedMsg.value(QStringLiteral("rows")).toInt(), 30);
        QCOMPARE(s->cols(), 100);
        QCOMPARE(s->rows(), 30);
        QCOMPARE(c.num("snapshot_at"), c.num("offset"));
        QVERIFY(c.num("snapshot_bytes") > 0);
        QTRY_COMPARE(watcher.textsOfType(QStringLiteral("size")).size(), 1);
        QCOMPARE(watcher.textsOfType(QStringLiteral("size")).first().value(QStringLiteral("cols")).toInt(), 100);
        // The replay, snapshot included, shows the prompt at the new size.
        QTRY_VERIFY(c.bytes.size() >= c.num("replay_bytes") + c.num("snapshot_bytes"));
        TestUtil::VtRender screen(100, 30);
        screen.feed(c.bytes);
        QVERIFY2(screen.text().startsWith(QStringLiteral("$\n")), qPrintable(screen.text()));
        QCOMPARE(screen.cursor(), qMakePair(0, 2));

        c.sendInput("stty size\n");
        QTRY_VERIFY(c.bytes.contains("30 100"));
        QVERIFY(c.textsOfType(QStringLiteral("size")).isEmpty());

        // A watcher's size changes nothing.
        WsClient w2;
        w2.open(f.port, wsPath(s, QStringLiteral("mode=watch&cols=40&rows=10")), f.key);
        QTRY_VERIFY(w2.gotAttached());
        QCOMPARE(w2.attachedMsg.value(QStringLiteral("cols")).toInt(), 100);
        QCOMPARE(s->cols(), 100);
        // The same size again: no resize, no snapshot (nothing dropped).
        WsClient again;
        again.open(f.port, wsPath(s, QStringLiteral("cols=100&rows=30")), f.key);
        QTRY_VERIFY(again.gotAttached());
        QVERIFY(again.attachedMsg.value(QStringLiteral("snapshot_at")).isNull());
        QCOMPARE(watcher.textsOfType(QStringLiteral("size")).size(), 1);
    }

    void binaryFrameHeader_data()
    {
        QTest::addColumn<qlonglong>("size");
        QTest::addColumn<QByteArray>("header");
        // RFC 6455 §5.2: FIN + opcode 2, unmasked, the minimal length form.
        QTest::newRow("empty") << 0LL << QByteArray::fromHex("8200");
        QTest::newRow("one byte") << 1LL << QByteArray::fromHex("8201");
        QTest::newRow("125, last 7-bit length") << 125LL << QByteArray::fromHex("827d");
        QTest::newRow("126, first 16-bit length") << 126LL << QByteArray::fromHex("827e007e");
        QTest::newRow("65535, last 16-bit length") << 65535LL << QByteArray::fromHex("827effff");
        QTest::newRow("65536 (kMaxSendChunk), 64-bit length") << 65536LL << QByteArray::fromHex("827f0000000000010000");
        QTest::newRow("negative counts as 0") << -5LL << QByteArray::fromHex("8200");
    }
    void binaryFrameHeader()
    {
        QFETCH(qlonglong, size);
        QFETCH(QByteArray, header);
        char out[WebSocketViewer::kMaxFrameHeader];
        const int n = WebSocketViewer::binaryFrameHeader(qsizetype(size), out);
        QCOMPARE(QByteArray(out, n).toHex(), header.toHex());
    }

    void loneOutputLeavesAtOnce()
    {
        // A keystroke's echo must not wait for another event-loop turn (nor
        // be split into a header segment and a payload segment): it is in
        // the kernel when output() returns, as one frame.
        Session *s = f.spawn({QStringLiteral("/bin/sh"), QStringLiteral("-c"), QStringLiteral("exec sleep 600")});
        QVERIFY(s);
        RawWs raw;
        RawWs::Frame fr;
        QVERIFY(rawAttach(raw, f.port, f.key, s, &fr));
        auto *v = dynamic_cast<WebSocketViewer *>(s->controlViewer());
        QVERIFY(v);
        QTRY_COMPARE(v->queuedBytes(), 0); // the attach message has left
        v->output("x", 1);
        QCOMPARE(v->queuedBytes(), 0);
        QTRY_COMPARE(raw.in.size(), 3);
        QCOMPARE(raw.in.toHex(), QByteArray("820178"));
    }

    void fullChunkFitsOneLoopbackSegment()
    {
        // A full PTY read chunk leaves as one frame; on loopback (the
        // dashboard's and `tether attach`'s usual path) that frame must fit
        // one TCP segment, or TCP_NODELAY sends a 63-byte second segment
        // after each (issue 11). The MSS is the kernel's, read from the
        // server's end of a real connection. The chunk is sized for Linux's
        // loopback MTU since 3.6 (65,536, net/loopback.c); a kernel set up
        // otherwise is not what the size was chosen for: skipped, named.
        QFile mtuFile(QStringLiteral("/sys/class/net/lo/mtu"));
        const QByteArray mtu = mtuFile.open(QIODevice::ReadOnly) ? mtuFile.readAll().trimmed() : QByteArray();
        if (mtu != "65536")
            QSKIP(qPrintable(QStringLiteral("loopback MTU is %1, not Linux's default 65536")
                                 .arg(QString::fromLatin1(mtu.isEmpty() ? QByteArray("unknown") : mtu))));
        Session *s = f.spawn({QStringLiteral("/bin/sh"), QStringLiteral("-c"), QStringLiteral("exec sleep 600")});
        QVERIFY(s);
        RawWs raw;
        QVERIFY(raw.handshake(f.port, wsPath(s).toLatin1(), f.key));
        const QList<int> serverEnd = tcpSocketFds(f.port, raw.sock.localPort());
        QCOMPARE(serverEnd.size(), 1);
        // The MSS in use grows with the peer's window (Linux bounds it by
        // half the largest window seen): read it after some output.
        auto *v = dynamic_cast<WebSocketViewer *>(s->controlViewer());
        QVERIFY(v);
        const QByteArray block(kReadChunk, 'm');
        qsizetype received = 0;
        for (int i = 0; i < 64; ++i) {
            v->output(block.constData(), block.size());
            RawWs::Frame fr;
            while (waitFrame(raw, &fr, 2000)) {
                if (fr.opcode == 0x2)
                    received += fr.payload.size();
                if (received == qsizetype(i + 1) * block.size())
                    break;
            }
        }
        QCOMPARE(received, 64 * block.size());
        int mss = 0;
        socklen_t len = sizeof mss;
        QCOMPARE(::getsockopt(serverEnd.first(), IPPROTO_TCP, TCP_MAXSEG, &mss, &len), 0);
        char header[WebSocketViewer::kMaxFrameHeader];
        const qsizetype frame = WebSocketViewer::binaryFrameHeader(kReadChunk, header) + kReadChunk;
        QVERIFY2(frame <= mss, qPrintable(QStringLiteral("frame %1, MSS %2").arg(frame).arg(mss)));
        // Not smaller than it need be: the next 64-byte step would not fit.
        QVERIFY(WebSocketViewer::binaryFrameHeader(kReadChunk + 64, header) + kReadChunk + 64 > mss);
    }

    void largeReplayFollowsTheAttachedMessage()
    {
        // A replay larger than the kernel's first helping: the upgrade reply
        // and the `attached` message, still queued in the socket when the
        // replay starts, are flushed first so that the replay's frames go
        // straight to the kernel (issue 11). Every byte of the ring once, in
        // order, after the `attached` message, in frames of at most
        // kMaxSendChunk.
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        QByteArray text;
        for (int i = 0; text.size() < 700000; ++i)
            text += "line " + QByteArray::number(i) + " the quick brown fox jumps over the lazy dog\n";
        const QString file = dir.filePath(QStringLiteral("text"));
        QVERIFY(writeFile(file, text));
        Session *s = f.spawn({QStringLiteral("/bin/sh"), QStringLiteral("-c"),
                              QStringLiteral("stty raw -echo; cat '%1'; exec sleep 600").arg(file)});
        QVERIFY(s);
        QTRY_COMPARE_WITH_TIMEOUT(s->offset(), quint64(text.size()), 10000);
        RawWs raw;
        RawWs::Frame fr;
        QVERIFY(rawAttach(raw, f.port, f.key, s, &fr));
        QVERIFY(fr.payload.contains("\"replay_bytes\":" + QByteArray::number(text.size())));
        QByteArray bytes;
        int maxFrame = 0;
        while (bytes.size() < text.size() && waitFrame(raw, &fr)) {
            QCOMPARE(fr.opcode, 0x2);
            bytes += fr.payload;
            maxFrame = qMax(maxFrame, int(fr.payload.size()));
        }
        QCOMPARE(bytes.size(), text.size());
        QVERIFY(bytes == text);
        QVERIFY(bytes == ringBytes(s, 0, s->offset()));
        QVERIFY(maxFrame <= WebSocketViewer::kMaxSendChunk);
    }

    void outputFramesKeepOrder()
    {
        // Output written behind a backlog (the kernel did not take it all)
        // and live output interleaved with text messages: every byte once,
        // in order, in frames of at most kMaxSendChunk, and a title message
        // after the bytes that set it.
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        QByteArray text;
        for (int i = 0; text.size() < 300000; ++i)
            text += "row " + QByteArray::number(i) + " " + QByteArray(i % 97, char('a' + i % 26)) + "\n";
        const QString file = dir.filePath(QStringLiteral("text"));
        QVERIFY(writeFile(file, text));
        Session *s = f.spawn({QStringLiteral("/bin/sh"), QStringLiteral("-c"),
                              QStringLiteral("stty raw -echo; head -c 1 >/dev/null; cat '%1'; printf '\\033]0;done\\007'; exec sleep 600").arg(file)});
        QVERIFY(s);
        f.server->setFlowWatermarks(4 * 1024 * 1024, 1024 * 1024);
        RawWs raw;
        raw.sock.setReadBufferSize(64 * 1024);
        QVERIFY(raw.handshake(f.port, wsPath(s).toLatin1(), f.key));
        QTRY_VERIFY(s->controlViewer());
        auto *v = dynamic_cast<WebSocketViewer *>(s->controlViewer());
        QVERIFY(v);
        // A backlog first: 6 MiB in one call while the client reads nothing
        // (more than the kernel's buffers take: tcp_wmem's 4 MiB at most,
        // the client's unread window), so the rest of a frame and the frames
        // after it wait in the socket's queue; the watermarks are raised so
        // that the hard bound (4 x high) does not close this client.
        raw.reading = false;
        QByteArray big(6 * 1024 * 1024, '\0');
        for (int i = 0; i < big.size(); ++i)
            big[i] = char('A' + (i / 7) % 26);
        v->output(big.constData(), big.size());
        v->output("|", 1);
        QVERIFY(v->queuedBytes() > 0);
        QTRY_VERIFY(s->offset() == 0); // the program waits for its byte
        raw.reading = true;
        raw.pump();
        raw.sendFrame(0x2, "g");

        QByteArray bytes;
        int titleAt = -1;
        int maxFrame = 0;
        QElapsedTimer t;
        t.start();
        RawWs::Frame fr;
        while (titleAt < 0 && t.elapsed() < 20000) {
            if (!waitFrame(raw, &fr, 100))
                continue;
            if (fr.opcode == 0x2) {
                bytes += fr.payload;
                maxFrame = qMax(maxFrame, int(fr.payload.size()));
            } else if (fr.opcode == 0x1 && fr.payload.contains("\"type\":\"title\"")) {
                titleAt = bytes.size();
            }
        }
        QVERIFY(titleAt >= 0);
        QVERIFY(maxFrame <= WebSocketViewer::kMaxSendChunk);
        const QByteArray live = text + "\033]0;done\007";
        QCOMPARE(bytes.size(), big.size() + 1 + live.size());
        QVERIFY(bytes.startsWith(big + "|"));
        QVERIFY(bytes.mid(big.size() + 1) == live);
        QCOMPARE(bytes.mid(big.size() + 1), ringBytes(s, 0, s->offset()));
        QCOMPARE(titleAt, bytes.size());
    }

    void titles()
    {
        Session *s = f.spawn();
        QVERIFY(s);
        WsClient a;
        a.open(f.port, wsPath(s), f.key);
        QTRY_VERIFY(a.gotAttached());
        WsClient w;
        w.open(f.port, wsPath(s, QStringLiteral("mode=watch")), f.key);
        QTRY_VERIFY(w.gotAttached());
        a.sendInput("printf '\\033]0;hello %s\\007' title\n");
        QTRY_COMPARE(w.textsOfType(QStringLiteral("title")).size(), 1);
        QCOMPARE(w.textsOfType(QStringLiteral("title")).first().value(QStringLiteral("title")).toString(), QStringLiteral("hello title"));
        QTRY_COMPARE(a.textsOfType(QStringLiteral("title")).size(), 1);
        WsClient late;
        late.open(f.port, wsPath(s, QStringLiteral("mode=watch")), f.key);
        QTRY_VERIFY(late.gotAttached());
        QCOMPARE(late.attachedMsg.value(QStringLiteral("title")).toString(), QStringLiteral("hello title"));
        QCOMPARE(f.http("GET", "/api/sessions/" + s->id().toLatin1()).json().value(QStringLiteral("title")).toString(),
                 QStringLiteral("hello title"));
    }

    /// A title with DEL, U+202E or ESC-less C1 in it: the `title` message, the
    /// `attached` message and the API carry the same text, unchanged (issue
    /// 29: "GH\x7fI" in the API, "GHI" in the `title` message).
    void titleIsTheSameTextEverywhere()
    {
        Session *s = f.spawn({QStringLiteral("/bin/sh"), QStringLiteral("-c"),
                              QStringLiteral("read x; printf '\\033]2;GH\\177I \\342\\200\\256x\\007'; exec cat")});
        QVERIFY(s);
        WsClient a;
        a.open(f.port, wsPath(s), f.key);
        QTRY_VERIFY(a.gotAttached());
        a.sendInput("go\n");
        const QString expected = QStringLiteral("GH") + QChar(0x7f) + QStringLiteral("I ") + QChar(0x202e) + QLatin1Char('x');
        QTRY_COMPARE(a.textsOfType(QStringLiteral("title")).size(), 1);
        QCOMPARE(a.textsOfType(QStringLiteral("title")).first().value(QStringLiteral("title")).toString(), expected);
        QCOMPARE(s->title(), expected);
        QCOMPARE(f.http("GET", "/api/sessions/" + s->id().toLatin1()).json().value(QStringLiteral("title")).toString(),
                 expected);
        WsClient late;
        late.open(f.port, wsPath(s, QStringLiteral("mode=watch")), f.key);
        QTRY_VERIFY(late.gotAttached());
        QCOMPARE(late.attachedMsg.value(QStringLiteral("title")).toString(), expected);
    }
};

QTEST_GUILESS_MAIN(TestServerWs)
#include "tst_server_ws.moc"
