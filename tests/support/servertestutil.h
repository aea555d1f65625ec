// SPDX-License-Identifier: GPL-2.0-or-later
// Helpers for the server tests: a registry + Server on port 0, raw HTTP
// requests, a recording QWebSocket client and a raw WebSocket client that can
// stop reading or stop answering pings. Everything waits by spinning the
// event loop (QSignalSpy::wait / QTRY_*), never by sleeping.
#pragma once

#include "registry.h"
#include "server.h"
#include "session.h"

#include <QCryptographicHash>
#include <QElapsedTimer>
#include <QDir>
#include <QFile>
#include <QHostAddress>
#include <QJsonDocument>
#include <QJsonObject>
#include <QMutex>
#include <QNetworkRequest>
#include <QPointer>
#include <QRandomGenerator>
#include <QSignalSpy>
#include <QSslSocket>
#include <QTcpSocket>
#include <QTest>
#include <QWebSocket>
#include <functional>
#include <memory>
#include <type_traits>

#include <dirent.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

namespace ServerTest {

using Headers = QList<QPair<QByteArray, QByteArray>>;

/// A parsed HTTP response.
struct HttpReply {
    int status = 0;
    Headers headers;
    QByteArray body;
    QByteArray raw;
    bool closed = false; ///< the server closed the connection

    QByteArray header(const QByteArray &name) const
    {
        QByteArray out;
        for (const auto &h : headers)
            if (h.first.toLower() == name.toLower())
                out = out.isEmpty() ? h.second : out + ", " + h.second;
        return out;
    }
    QJsonObject json() const { return QJsonDocument::fromJson(body).object(); }
};

inline HttpReply parseReply(const QByteArray &raw)
{
    HttpReply r;
    r.raw = raw;
    const int end = raw.indexOf("\r\n\r\n");
    if (end < 0)
        return r;
    const QList<QByteArray> lines = raw.left(end).split('\n');
    const QList<QByteArray> statusLine = lines.value(0).trimmed().split(' ');
    r.status = statusLine.value(1).toInt();
    for (int i = 1; i < lines.size(); ++i) {
        const int colon = lines.at(i).indexOf(':');
        if (colon > 0)
            r.headers.append(qMakePair(lines.at(i).left(colon).trimmed(), lines.at(i).mid(colon + 1).trimmed()));
    }
    r.body = raw.mid(end + 4);
    return r;
}

/// Sends `request` as is and reads until the server closes (or timeout).
inline HttpReply rawHttp(quint16 port, const QByteArray &request, int timeoutMs = 5000)
{
    QTcpSocket s;
    QByteArray buf;
    QObject::connect(&s, &QTcpSocket::readyRead, [&]() { buf += s.readAll(); });
    QSignalSpy connected(&s, &QTcpSocket::connected);
    QSignalSpy disconnected(&s, &QTcpSocket::disconnected);
    s.connectToHost(QHostAddress::LocalHost, port);
    if (!connected.wait(timeoutMs))
        return HttpReply();
    s.write(request);
    bool closed = disconnected.count() > 0 || disconnected.wait(timeoutMs);
    buf += s.readAll();
    HttpReply r = parseReply(buf);
    r.closed = closed;
    return r;
}

/// Sends `request` and returns as soon as the answer is known: for a 101 once
/// its head has arrived (the connection stays open; `closed` is false), for
/// any other status once the server has closed the connection.
inline HttpReply rawUntilAnswered(quint16 port, const QByteArray &request, int timeoutMs = 5000)
{
    QTcpSocket s;
    QByteArray buf;
    bool closed = false;
    QObject::connect(&s, &QTcpSocket::readyRead, [&]() { buf += s.readAll(); });
    QObject::connect(&s, &QTcpSocket::disconnected, [&]() { closed = true; });
    QSignalSpy connected(&s, &QTcpSocket::connected);
    s.connectToHost(QHostAddress::LocalHost, port);
    if (!connected.wait(timeoutMs))
        return HttpReply();
    s.write(request);
    QElapsedTimer t;
    t.start();
    auto done = [&]() {
        const HttpReply r = parseReply(buf);
        return closed || (r.status == 101 && buf.contains("\r\n\r\n"));
    };
    while (!done() && t.elapsed() < timeoutMs) {
        // Spins the event loop until more bytes come (or 50 ms pass, so a
        // close without bytes is noticed too).
        QSignalSpy progress(&s, &QTcpSocket::readyRead);
        progress.wait(50);
    }
    buf += s.readAll();
    HttpReply r = parseReply(buf);
    r.closed = closed;
    return r;
}

/// A registry with short teardown and a Server on 127.0.0.1, port 0.
struct Fixture {
    std::unique_ptr<Tether::SessionRegistry> registry;
    std::unique_ptr<Tether::Server> server;
    QByteArray key;
    quint16 port = 0;

    /// `configure` may change the HostConfig before the server is made (TLS,
    /// allowed hosts, ...).
    bool start(const Tether::Limits &limits = Tether::Limits(),
               const std::function<void(Tether::HostConfig &)> &configure = {})
    {
        registry.reset(new Tether::SessionRegistry(limits));
        registry->setTeardownGrace(200);
        Tether::HostConfig config;
        config.bind = QStringLiteral("127.0.0.1");
        config.port = 0;
        config.limits = limits;
        if (configure)
            configure(config);
        server.reset(new Tether::Server(registry.get(), config));
        QString error;
        if (!server->listen(&error)) {
            qWarning() << error;
            return false;
        }
        port = server->port();
        key = server->accessKey().toLatin1();
        return true;
    }
    void stop()
    {
        server.reset();
        registry.reset();
    }
    QByteArray host() const { return "127.0.0.1:" + QByteArray::number(port); }

    /// A request with Host 127.0.0.1:PORT, the bearer key (if `auth`),
    /// `extra` headers and an optional body.
    QByteArray build(const QByteArray &method, const QByteArray &target, const QByteArray &body = QByteArray(),
                     const Headers &extra = Headers(), bool auth = true, bool withHost = true) const
    {
        QByteArray r = method + ' ' + target + " HTTP/1.1\r\n";
        if (withHost)
            r += "Host: " + host() + "\r\n";
        if (auth)
            r += "Authorization: Bearer " + key + "\r\n";
        for (const auto &h : extra)
            r += h.first + ": " + h.second + "\r\n";
        if (!body.isNull())
            r += "Content-Type: application/json\r\nContent-Length: " + QByteArray::number(body.size()) + "\r\n";
        r += "\r\n" + body;
        return r;
    }
    HttpReply http(const QByteArray &method, const QByteArray &target, const QByteArray &body = QByteArray(),
                   const Headers &extra = Headers(), bool auth = true) const
    {
        return rawHttp(port, build(method, target, body, extra, auth));
    }

    /// Creates a session through the registry directly.
    Tether::Session *spawn(const QStringList &argv = {QStringLiteral("/bin/sh")}, int cols = 80, int rows = 24)
    {
        Tether::SpawnOptions o;
        o.argv = argv;
        o.cols = cols;
        o.rows = rows;
        o.extraEnv = QStringList{QStringLiteral("PS1=$ ")}; // same prompt for root and users
        QString error;
        Tether::Session *s = registry->create(o, nullptr, &error);
        if (!s)
            qWarning() << "spawn failed:" << error;
        return s;
    }
};

/// Detaches a stack-allocated test viewer when the test returns, even early.
/// The session is watched, not owned: the registry may have deleted it by
/// then (an exited session evicted to make room, tst_server_http
/// tooManySessions; a plain pointer was a heap-use-after-free under ASan).
struct DetachGuard {
    QPointer<Tether::Session> session;
    Tether::Viewer *viewer;
    ~DetachGuard() { if (session) session->detach(viewer); }
};

/// A QWebSocket client that records everything in order.
class WsClient : public QObject
{
public:
    struct Event {
        bool text = false;
        QByteArray data;
    };
    QWebSocket ws;
    QList<Event> events;
    QJsonObject attachedMsg;
    QByteArray bytes;          ///< all binary payload after "attached" (prelude included)
    bool connected = false;
    bool disconnected = false;
    int closeCode = -1;
    QString closeReason;

    explicit WsClient(const QString &origin = QString())
        : ws(origin, QWebSocketProtocol::VersionLatest)
    {
        connect(&ws, &QWebSocket::connected, this, [this]() { connected = true; });
        connect(&ws, &QWebSocket::disconnected, this, [this]() {
            disconnected = true;
            closeCode = int(ws.closeCode());
            closeReason = ws.closeReason();
        });
        connect(&ws, &QWebSocket::textMessageReceived, this, [this](const QString &m) {
            events.append({true, m.toUtf8()});
            const QJsonObject o = QJsonDocument::fromJson(m.toUtf8()).object();
            if (o.value(QStringLiteral("type")).toString() == QLatin1String("attached") && attachedMsg.isEmpty())
                attachedMsg = o;
        });
        connect(&ws, &QWebSocket::binaryMessageReceived, this, [this](const QByteArray &m) {
            events.append({false, m});
            bytes += m;
        });
    }
    /// `ws` is destroyed last of the members, and ~QWebSocket closes a socket
    /// still open: its `disconnected` would reach the slot above while
    /// ~QObject has not yet cut this object's connections, and the slot would
    /// assign closeReason after it was destroyed (LeakSanitizer in
    /// tst_server_flow: the 52-byte "Connection closed" QString of every
    /// client still open at the end of a test). Cut them first.
    ~WsClient() override { ws.disconnect(this); }
    void open(quint16 port, const QString &pathAndQuery, const QByteArray &key)
    {
        QNetworkRequest req(QUrl(QStringLiteral("ws://127.0.0.1:%1%2").arg(port).arg(pathAndQuery)));
        if (!key.isEmpty())
            req.setRawHeader("Authorization", "Bearer " + key);
        ws.open(req);
    }
    bool gotAttached() const { return !attachedMsg.isEmpty(); }
    qint64 num(const char *field) const { return qint64(attachedMsg.value(QLatin1String(field)).toDouble(-1)); }
    /// Binary payload after the prelude (the replay and live bytes), the
    /// screen snapshot (at `snapshot_at`, no offsets either) cut out.
    QByteArray stream() const
    {
        QByteArray out = bytes.mid(int(num("prelude_bytes")));
        if (attachedMsg.value(QStringLiteral("snapshot_at")).isDouble())
            out.remove(int(num("snapshot_at") - num("replay_from")), int(num("snapshot_bytes")));
        return out;
    }
    QList<QJsonObject> texts() const
    {
        QList<QJsonObject> out;
        for (const Event &e : events)
            if (e.text)
                out.append(QJsonDocument::fromJson(e.data).object());
        return out;
    }
    QList<QJsonObject> textsOfType(const QString &type) const
    {
        QList<QJsonObject> out;
        for (const QJsonObject &o : texts())
            if (o.value(QStringLiteral("type")).toString() == type)
                out.append(o);
        return out;
    }
    void sendText(const QByteArray &json) { ws.sendTextMessage(QString::fromUtf8(json)); }
    void sendInput(const QByteArray &data) { ws.sendBinaryMessage(data); }
};

/// A WebSocket client on a raw QTcpSocket: it can stop reading (the socket's
/// read buffer then fills and the kernel buffers behind it) and never answers
/// pings unless asked. RawWsOn<QSslSocket> does the same over TLS (set
/// sock's QSslConfiguration before handshake()).
template<typename Socket>
class RawWsOn : public QObject
{
public:
    Socket sock;
    QByteArray in;          ///< received, not yet parsed
    bool reading = true;
    qint64 received = 0;    ///< bytes taken from the socket after the handshake
    bool upgraded = false;
    int status = 0;

    struct Frame {
        int opcode = 0;
        QByteArray payload;
    };

    RawWsOn()
    {
        connect(&sock, &QTcpSocket::readyRead, this, [this]() { pump(); });
    }
    void pump()
    {
        if (!reading)
            return;
        const QByteArray d = sock.readAll();
        in += d;
        if (upgraded)
            received += d.size();
    }
    /// Connects and upgrades; true on "101".
    bool handshake(quint16 port, const QByteArray &target, const QByteArray &key, int timeoutMs = 5000)
    {
        if constexpr (std::is_same_v<Socket, QSslSocket>) {
            QSignalSpy encrypted(&sock, &QSslSocket::encrypted);
            sock.connectToHostEncrypted(QStringLiteral("127.0.0.1"), port);
            if (!encrypted.wait(timeoutMs))
                return false;
        } else {
            QSignalSpy connected(&sock, &QTcpSocket::connected);
            sock.connectToHost(QHostAddress::LocalHost, port);
            if (!connected.wait(timeoutMs))
                return false;
        }
        QByteArray nonce(16, '\0');
        for (char &c : nonce)
            c = char(QRandomGenerator::global()->bounded(256));
        QByteArray r = "GET " + target + " HTTP/1.1\r\nHost: 127.0.0.1:" + QByteArray::number(port)
            + "\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\n"
              "Sec-WebSocket-Key: " + nonce.toBase64() + "\r\n";
        if (!key.isEmpty())
            r += "Authorization: Bearer " + key + "\r\n";
        r += "\r\n";
        sock.write(r);
        QElapsedTimer t;
        t.start();
        while (in.indexOf("\r\n\r\n") < 0 && t.elapsed() < timeoutMs && sock.state() == QAbstractSocket::ConnectedState)
            QTest::qWait(5);
        const int end = in.indexOf("\r\n\r\n");
        if (end < 0)
            return false;
        status = in.mid(9, 3).toInt();
        in.remove(0, end + 4);
        upgraded = status == 101;
        received = in.size();
        return upgraded;
    }
    /// Parses the next complete server frame from `in` (server frames are
    /// unmasked). False when none is complete yet.
    bool nextFrame(Frame *f)
    {
        if (in.size() < 2)
            return false;
        const uchar b0 = uchar(in.at(0));
        const uchar b1 = uchar(in.at(1));
        quint64 len = b1 & 0x7f;
        int pos = 2;
        if (len == 126) {
            if (in.size() < 4)
                return false;
            len = (quint64(uchar(in.at(2))) << 8) | uchar(in.at(3));
            pos = 4;
        } else if (len == 127) {
            if (in.size() < 10)
                return false;
            len = 0;
            for (int i = 0; i < 8; ++i)
                len = (len << 8) | uchar(in.at(2 + i));
            pos = 10;
        }
        if (quint64(in.size()) < pos + len)
            return false;
        f->opcode = b0 & 0x0f;
        f->payload = in.mid(pos, int(len));
        in.remove(0, pos + int(len));
        return true;
    }
    void sendFrame(int opcode, const QByteArray &payload)
    {
        QByteArray f;
        f.append(char(0x80 | opcode));
        const quint32 mask = QRandomGenerator::global()->generate();
        if (payload.size() < 126) {
            f.append(char(0x80 | payload.size()));
        } else if (payload.size() < 65536) {
            f.append(char(0x80 | 126));
            f.append(char(payload.size() >> 8));
            f.append(char(payload.size() & 0xff));
        } else {
            f.append(char(0x80 | 127));
            for (int i = 7; i >= 0; --i)
                f.append(char((quint64(payload.size()) >> (8 * i)) & 0xff));
        }
        const char m[4] = {char(mask >> 24), char(mask >> 16), char(mask >> 8), char(mask)};
        f.append(m, 4);
        for (int i = 0; i < payload.size(); ++i)
            f.append(char(payload.at(i) ^ m[i % 4]));
        sock.write(f);
    }
};
using RawWs = RawWsOn<QTcpSocket>;

/// The tether.server messages logged while it exists (and passed on to the
/// previous handler). Only those the category lets through: its debug lines
/// need QLoggingCategory::setFilterRules("tether.server.debug=true").
struct ServerLog {
    static inline QMutex mutex;
    static inline QStringList lines;
    static inline QtMessageHandler previous = nullptr;

    ServerLog()
    {
        lines.clear();
        previous = qInstallMessageHandler(&ServerLog::handler);
    }
    ~ServerLog() { qInstallMessageHandler(previous); }
    static void handler(QtMsgType type, const QMessageLogContext &context, const QString &message)
    {
        if (context.category && qstrcmp(context.category, "tether.server") == 0) {
            QMutexLocker lock(&mutex);
            lines.append(message);
        }
        if (previous)
            previous(type, context, message);
    }
    static QStringList containing(const QString &text)
    {
        QMutexLocker lock(&mutex);
        return lines.filter(text);
    }
};

/// Port of a bound IPv4/IPv6 socket address, 0 for any other family.
inline quint16 sockaddrPort(const sockaddr_storage &a)
{
    if (a.ss_family == AF_INET)
        return ntohs(reinterpret_cast<const sockaddr_in &>(a).sin_port);
    if (a.ss_family == AF_INET6)
        return ntohs(reinterpret_cast<const sockaddr_in6 &>(a).sin6_port);
    return 0;
}

/// This process's connected TCP sockets whose local port is `localPort` and
/// whose peer port is `peerPort` (0 matches any port), found by
/// getsockname(2)/getpeername(2) over the descriptors in /proc/self/fd. The
/// seam to read socket options of a socket that Qt keeps to itself (the
/// server's accepted sockets, QWebSocket's TCP socket) in a test that runs
/// both ends in-process: the server's end of a connection has the server's
/// port as local port, the client's end has it as peer port.
inline QList<int> tcpSocketFds(quint16 localPort, quint16 peerPort)
{
    QList<int> out;
    DIR *d = ::opendir("/proc/self/fd");
    if (!d)
        return out;
    const int own = ::dirfd(d);
    while (const dirent *e = ::readdir(d)) {
        bool ok = false;
        const int fd = QByteArray(e->d_name).toInt(&ok);
        struct stat st;
        if (!ok || fd == own || ::fstat(fd, &st) != 0 || !S_ISSOCK(st.st_mode))
            continue;
        sockaddr_storage local{}, peer{};
        socklen_t localLen = sizeof local, peerLen = sizeof peer;
        if (::getsockname(fd, reinterpret_cast<sockaddr *>(&local), &localLen) != 0
            || ::getpeername(fd, reinterpret_cast<sockaddr *>(&peer), &peerLen) != 0)
            continue; // not connected (a listening socket, a pipe-like socket)
        const quint16 lp = sockaddrPort(local);
        const quint16 pp = sockaddrPort(peer);
        if (lp != 0 && pp != 0 && (localPort == 0 || lp == localPort) && (peerPort == 0 || pp == peerPort))
            out.append(fd);
    }
    ::closedir(d);
    return out;
}

/// Local port of socket `fd` (getsockname(2)); 0 when it has none.
inline quint16 tcpLocalPort(int fd)
{
    sockaddr_storage local{};
    socklen_t len = sizeof local;
    return ::getsockname(fd, reinterpret_cast<sockaddr *>(&local), &len) == 0 ? sockaddrPort(local) : 0;
}

/// TCP_NODELAY of socket `fd` (getsockopt(2), tcp(7)): 1 set, 0 not set
/// (Nagle's algorithm on), -1 when it cannot be read.
inline int tcpNoDelay(int fd)
{
    int value = 0;
    socklen_t len = sizeof value;
    if (::getsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &value, &len) != 0)
        return -1;
    return value != 0 ? 1 : 0;
}

inline QByteArray readFile(const QString &path)
{
    QFile f(path);
    return f.open(QIODevice::ReadOnly) ? f.readAll() : QByteArray();
}

/**
 * The queues of the TCP socket (IPv4 or IPv6, any address) whose own port
 * is `localPort` and whose peer's is `remotePort`, from /proc/net/tcp and
 * /proc/net/tcp6 (proc(5)): bytes sent and not yet acknowledged (tx) and
 * bytes received and not yet read by its process (rx). {-1, -1} when there
 * is no such socket. A test's sync point on the far end of a connection:
 * the sender's tx at 0 means the peer's kernel has the bytes, the peer's rx
 * at 0 that its process has read them.
 */
struct TcpQueues {
    qint64 tx = -1;
    qint64 rx = -1;
};
inline TcpQueues tcpQueues(quint16 localPort, quint16 remotePort)
{
    const QByteArray local = ':' + QByteArray::number(localPort, 16).toUpper().rightJustified(4, '0');
    const QByteArray remote = ':' + QByteArray::number(remotePort, 16).toUpper().rightJustified(4, '0');
    for (const char *table : {"/proc/net/tcp", "/proc/net/tcp6"}) {
        QFile f(QString::fromLatin1(table));
        if (!f.open(QIODevice::ReadOnly))
            continue;
        for (const QByteArray &line : f.readAll().split('\n')) {
            // "sl local_address rem_address st tx_queue:rx_queue ..."
            const QList<QByteArray> fields = line.simplified().split(' ');
            if (fields.size() < 5 || !fields.at(1).endsWith(local) || !fields.at(2).endsWith(remote))
                continue;
            const QList<QByteArray> queues = fields.at(4).split(':');
            if (queues.size() == 2)
                return TcpQueues{queues.at(0).toLongLong(nullptr, 16), queues.at(1).toLongLong(nullptr, 16)};
        }
    }
    return TcpQueues();
}

/// Open file descriptors of process `pid` (entries of /proc/PID/fd).
inline int fdCount(qint64 pid)
{
    return QDir(QStringLiteral("/proc/%1/fd").arg(pid)).entryList(QDir::Files | QDir::System | QDir::NoDotAndDotDot).size();
}

/// The open descriptors of process `pid`, one "N -> target" per line (the
/// /proc/PID/fd/N links: socket:[inode], anon_inode:[pidfd], /dev/ptmx, a
/// /proc file being read...), for a failure message that says which ones
/// are left.
inline QString fdListing(qint64 pid)
{
    QStringList out;
    const QString dir = QStringLiteral("/proc/%1/fd").arg(pid);
    for (const QString &e : QDir(dir).entryList(QDir::Files | QDir::System | QDir::NoDotAndDotDot)) {
        char target[512];
        const ssize_t n = ::readlink(QFile::encodeName(dir + QLatin1Char('/') + e).constData(), target, sizeof target - 1);
        out.append(e + QStringLiteral(" -> ") + (n > 0 ? QString::fromLocal8Bit(target, int(n)) : QStringLiteral("?")));
    }
    return out.join(QLatin1Char('\n'));
}

/**
 * Waits (spinning the event loop) up to `timeoutMs` until process `pid` holds
 * at most `limit` descriptors; *seen is the count the answer is based on.
 *
 * Why not QTRY_VERIFY(fdCount(pid) <= limit): the QTRY macros evaluate their
 * expression again after the wait (QTRY_VERIFY(e) is a loop on e, then
 * QVERIFY(e)), and another process's descriptor count is no fixed value: a
 * server opens /proc files for a moment whenever it scans /proc (the teardown
 * of a killed session, PtyProcess::checkDone) and a descriptor while it
 * accepts or closes a connection. A count seen at the limit by the loop and
 * one higher by the QVERIFY a moment later failed a 10 s wait at once
 * (tst_soak, once, 0.19 s into the test). Here each try reads the count once
 * and the answer is that very reading.
 */
inline bool waitFdsAtMost(qint64 pid, int limit, int timeoutMs, int *seen)
{
    return QTest::qWaitFor([&] { *seen = fdCount(pid); return *seen <= limit; }, timeoutMs);
}

/**
 * The descriptor count of process `pid` at rest: the lowest count seen over
 * `ms` (read every 10 ms). A single reading may include a connection the
 * server is still closing (a client's request returns once the server's
 * answer has come, before the server has seen the client close) or a /proc
 * file read for a moment: a baseline taken from one reading was sometimes one
 * too high, which hid a leak of one.
 */
inline int restingFdCount(qint64 pid, int ms = 300)
{
    int lowest = fdCount(pid);
    QElapsedTimer t;
    t.start();
    while (t.elapsed() < ms) {
        QTest::qWait(10);
        lowest = qMin(lowest, fdCount(pid));
    }
    return lowest;
}

/// Resident memory of `pid`, bytes (VmRSS of /proc/PID/status); -1 when unknown.
inline qint64 rssBytes(qint64 pid)
{
    for (const QByteArray &line : readFile(QStringLiteral("/proc/%1/status").arg(pid)).split('\n')) {
        if (line.startsWith("VmRSS:"))
            return line.mid(6).trimmed().split(' ').value(0).toLongLong() * 1024;
    }
    return -1;
}

/// Children of `pid` (by /proc/PID/stat's parent field) in state `state`
/// ('Z': zombies, each printed), or in any state when `state` is 0; only
/// those whose argv holds `arg`, when given.
inline int childrenOf(qint64 pid, char state, const QByteArray &arg = QByteArray())
{
    int n = 0;
    const QByteArray parent = QByteArray::number(pid);
    for (const QString &e : QDir(QStringLiteral("/proc")).entryList(QDir::Dirs | QDir::NoDotAndDotDot)) {
        const QByteArray st = readFile(QStringLiteral("/proc/%1/stat").arg(e));
        const QList<QByteArray> fields = st.mid(st.lastIndexOf(')') + 2).split(' '); // comm may hold ')'
        if (fields.size() < 2 || fields.at(1) != parent || (state && fields.at(0) != QByteArray(1, state)))
            continue;
        if (!arg.isEmpty() && !readFile(QStringLiteral("/proc/%1/cmdline").arg(e)).split('\0').contains(arg))
            continue;
        if (state == 'Z')
            qWarning("zombie: %s", st.constData());
        ++n;
    }
    return n;
}

} // namespace ServerTest
