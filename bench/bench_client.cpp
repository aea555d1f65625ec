// SPDX-License-Identifier: GPL-2.0-or-later
// The measuring end of `make bench` (bench/run.py drives it; issue 11). One
// workload per run, one JSON object on stdout. The same workload code drives
// every system under test through a Link:
//  - pty:  a program on a new 80x24 PTY whose master this process reads and
//          writes (the raw PTY, the physical limit; tmux's and dtach's own
//          attach clients);
//  - ws:   a Tether session made with POST /api/sessions and attached as the
//          control viewer over a native C++ WebSocket (QWebSocket) with
//          TCP_NODELAY on its socket, like `tether attach`.
//
// Usage (ARGV after `--` for pty; URL KEY for ws, the server's base URL and
// access key; the ws command is ARGV too):
//   bench_client cat  FILE      pty|ws [URL KEY] -- ARGV   bytes and time after the gate
//   bench_client keys N         pty|ws [URL KEY] -- ARGV   single-key echo latency
//   bench_client line N         pty|ws [URL KEY] -- ARGV   `echo h""i` ⏎ latency to "hi"
//   bench_client reattach FILE RUNS ws URL KEY             replay of a full ring, RUNS times
//   bench_client fair N SECONDS ws URL KEY -- ARGV         N sessions streaming at once
// The programs print the marker @@GO@@ when ready (cat and fair: then wait
// for one input byte, so nothing is produced before the clock starts and the
// viewer is attached before the first byte: completeness is exact).
// Every wait is bounded (BENCH_CLIENT_TIMEOUT seconds, default 120).
#include <QCoreApplication>
#include <QElapsedTimer>
#include <QFile>
#include <QEventLoop>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QNetworkAccessManager>
#include <QNetworkReply>
#include <QNetworkRequest>
#include <QSocketNotifier>
#include <QTcpSocket>
#include <QTimer>
#include <QWebSocket>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <fcntl.h>
#include <functional>
#include <memory>
#include <pty.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

namespace {

const QByteArray kMarker = QByteArrayLiteral("@@GO@@");

int timeoutMs()
{
    const int s = qEnvironmentVariableIntValue("BENCH_CLIENT_TIMEOUT");
    return (s > 0 ? s : 120) * 1000;
}

[[noreturn]] void fail(const QString &why)
{
    std::fprintf(stderr, "bench_client: %s\n", qPrintable(why));
    std::exit(1);
}

/// Runs the event loop until `done()` or `ms` elapse; false on timeout.
/// It sleeps in the event dispatcher between events (processEvents(flags,
/// ms) would spin: it drops WaitForMoreEvents, and a spinning client takes a
/// core from the server it measures); a 50 ms tick bounds the wait.
bool waitFor(const std::function<bool()> &done, int ms)
{
    QElapsedTimer t;
    t.start();
    QTimer tick;
    tick.start(50);
    while (!done()) {
        if (t.elapsed() > ms)
            return false;
        QCoreApplication::processEvents(QEventLoop::WaitForMoreEvents);
    }
    return true;
}

void pause(int ms)
{
    QEventLoop l;
    QTimer::singleShot(ms, &l, &QEventLoop::quit);
    l.exec();
}

/// A terminal byte stream: send input, receive output, learn its end.
class Link
{
public:
    virtual ~Link() = default;
    virtual void send(const QByteArray &bytes) = 0;
    std::function<void(const char *, qsizetype)> onData;
    std::function<void()> onEnd;
    bool ended = false;

protected:
    void data(const char *p, qsizetype n)
    {
        if (onData)
            onData(p, n);
    }
    void end()
    {
        if (ended)
            return;
        ended = true;
        if (onEnd)
            onEnd();
    }
};

/// A program on a new PTY (forkpty(3)), read in 64 KiB reads when readable.
class PtyLink : public Link
{
public:
    explicit PtyLink(const QStringList &argv)
    {
        winsize ws {};
        ws.ws_col = 80;
        ws.ws_row = 24;
        m_pid = forkpty(&m_fd, nullptr, nullptr, &ws);
        if (m_pid < 0)
            fail(QStringLiteral("forkpty: %1").arg(qt_error_string(errno)));
        if (m_pid == 0) {
            setenv("TERM", "xterm-256color", 1);
            std::vector<QByteArray> keep;
            std::vector<char *> args;
            for (const QString &a : argv)
                keep.push_back(a.toLocal8Bit());
            for (QByteArray &a : keep)
                args.push_back(a.data());
            args.push_back(nullptr);
            execvp(args[0], args.data());
            _exit(127);
        }
        fcntl(m_fd, F_SETFL, fcntl(m_fd, F_GETFL) | O_NONBLOCK);
        m_notifier = std::make_unique<QSocketNotifier>(m_fd, QSocketNotifier::Read);
        QObject::connect(m_notifier.get(), &QSocketNotifier::activated, [this] { readAll(); });
    }
    ~PtyLink() override
    {
        m_notifier.reset();
        if (m_pid > 0 && !ended)
            ::kill(m_pid, SIGKILL);
        ::close(m_fd);
        if (m_pid > 0)
            ::waitpid(m_pid, nullptr, 0);
    }
    void send(const QByteArray &bytes) override
    {
        qsizetype done = 0;
        while (done < bytes.size()) {
            const ssize_t n = ::write(m_fd, bytes.constData() + done, size_t(bytes.size() - done));
            if (n < 0 && errno != EAGAIN && errno != EINTR)
                return;
            if (n > 0)
                done += n;
        }
    }

private:
    void readAll()
    {
        for (;;) {
            const ssize_t n = ::read(m_fd, m_buf, sizeof m_buf);
            if (n > 0) {
                data(m_buf, n);
                continue;
            }
            if (n < 0 && (errno == EAGAIN || errno == EINTR))
                return;
            // EIO: every slave end is closed (the client exited).
            m_notifier->setEnabled(false);
            ::waitpid(m_pid, nullptr, 0);
            m_pid = -1;
            end();
            return;
        }
    }

    int m_fd = -1;
    pid_t m_pid = -1;
    std::unique_ptr<QSocketNotifier> m_notifier;
    char m_buf[65536];
};

/// Tether's REST API and WebSocket endpoint (docs/protocol.md 4 and 5).
struct Tether {
    QUrl base;
    QByteArray key;
    QNetworkAccessManager nam;

    QJsonObject call(const QByteArray &verb, const QString &path, const QJsonObject &body = {})
    {
        QNetworkRequest req(base.resolved(QUrl(path)));
        req.setRawHeader("Authorization", "Bearer " + key);
        req.setHeader(QNetworkRequest::ContentTypeHeader, QStringLiteral("application/json"));
        QNetworkReply *r = nam.sendCustomRequest(req, verb, body.isEmpty() ? QByteArray() : QJsonDocument(body).toJson());
        if (!waitFor([r] { return r->isFinished(); }, timeoutMs()))
            fail(QStringLiteral("%1 %2: no answer").arg(QString::fromLatin1(verb), path));
        const int status = r->attribute(QNetworkRequest::HttpStatusCodeAttribute).toInt();
        const QByteArray answer = r->readAll();
        r->deleteLater();
        if (status / 100 != 2)
            fail(QStringLiteral("%1 %2: HTTP %3 %4").arg(QString::fromLatin1(verb), path).arg(status).arg(QString::fromUtf8(answer)));
        return QJsonDocument::fromJson(answer).object();
    }
    QString create(const QStringList &argv, int cols = 80, int rows = 24)
    {
        return call("POST", QStringLiteral("/api/sessions"),
                    QJsonObject{{QStringLiteral("command"), QJsonArray::fromStringList(argv)},
                                {QStringLiteral("cols"), cols},
                                {QStringLiteral("rows"), rows}})
            .value(QStringLiteral("id"))
            .toString();
    }
    /// Ends sessions, all requests in flight at once; best effort (the
    /// server may be gone already), bounded to 60 s.
    void remove(const QStringList &ids)
    {
        std::vector<QNetworkReply *> replies;
        for (const QString &id : ids) {
            QNetworkRequest req(base.resolved(QUrl(QStringLiteral("/api/sessions/") + id)));
            req.setRawHeader("Authorization", "Bearer " + key);
            replies.push_back(nam.deleteResource(req));
        }
        waitFor([&] { return std::all_of(replies.begin(), replies.end(), [](QNetworkReply *r) { return r->isFinished(); }); },
                60000);
        for (QNetworkReply *r : replies)
            r->deleteLater();
    }
    QNetworkRequest wsRequest(const QString &id, const QString &query = QString()) const
    {
        QUrl u = base;
        u.setScheme(QStringLiteral("ws"));
        u.setPath(QStringLiteral("/ws/") + id);
        if (!query.isEmpty())
            u.setQuery(query);
        QNetworkRequest req(u);
        req.setRawHeader("Authorization", "Bearer " + key);
        return req;
    }
};

/// TCP_NODELAY on the client's socket once it is connected, as `tether
/// attach` does (attachclient.cpp: Qt 5.15 drops the option asked for
/// before the socket exists). The server's side is what the bench compares.
void lowDelay(QWebSocket *ws)
{
    if (auto *tcp = ws->findChild<QTcpSocket *>(QString(), Qt::FindDirectChildrenOnly))
        QObject::connect(tcp, &QAbstractSocket::connected, tcp,
                         [tcp] { tcp->setSocketOption(QAbstractSocket::LowDelayOption, 1); });
}

/// A control viewer of a new Tether session running `argv`.
class WsLink : public Link
{
public:
    WsLink(Tether &t, const QStringList &argv, const QString &query = QString())
        : m_tether(t)
        , m_id(t.create(argv))
    {
        QObject::connect(&m_ws, &QWebSocket::binaryMessageReceived, [this](const QByteArray &b) {
            ++messages;
            data(b.constData(), b.size());
        });
        QObject::connect(&m_ws, &QWebSocket::textMessageReceived, [this](const QString &text) {
            const QJsonObject m = QJsonDocument::fromJson(text.toUtf8()).object();
            const QString type = m.value(QStringLiteral("type")).toString();
            if (type == QLatin1String("attached"))
                attached = true;
            else if (type == QLatin1String("exit"))
                end();
        });
        QObject::connect(&m_ws, &QWebSocket::disconnected, [this] { end(); });
        m_ws.open(t.wsRequest(m_id, query));
        lowDelay(&m_ws);
    }
    ~WsLink() override
    {
        // DELETE before the viewer goes: without a viewer a streaming
        // program would run unthrottled into the ring until it is ended.
        if (!removed)
            m_tether.remove({m_id});
        m_ws.abort();
    }
    QString id() const { return m_id; }
    bool removed = false; ///< already ended by the caller
    void send(const QByteArray &bytes) override { m_ws.sendBinaryMessage(bytes); }
    bool attached = false;
    qint64 messages = 0; ///< binary messages received (output frames)

private:
    Tether &m_tether;
    QString m_id;
    QWebSocket m_ws;
};

/// Waits for the marker; returns what arrived after it (it belongs to the run).
QByteArray awaitMarker(Link &link)
{
    QByteArray seen;
    bool found = false;
    link.onData = [&](const char *p, qsizetype n) { seen.append(p, n); found = found || seen.contains(kMarker); };
    if (!waitFor([&] { return found || link.ended; }, timeoutMs()) || !found)
        fail(QStringLiteral("no ready marker from the program (got %1 bytes)").arg(seen.size()));
    return seen.mid(seen.indexOf(kMarker) + kMarker.size());
}

/// Reads whatever arrives for `ms` (a multiplexer's first redraw) and drops it.
void settle(Link &link, int ms)
{
    link.onData = [](const char *, qsizetype) {};
    pause(ms);
}

/// CPU time of this process (getrusage(2)), seconds.
double cpuSeconds()
{
    rusage u {};
    getrusage(RUSAGE_SELF, &u);
    return double(u.ru_utime.tv_sec + u.ru_stime.tv_sec) + (u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

/// Bytes after the gate until the program's end; this client's CPU seconds
/// over that time (is the measuring end the bottleneck?).
QJsonObject runCat(Link &link)
{
    qint64 bytes = awaitMarker(link).size();
    link.onData = [&](const char *, qsizetype n) { bytes += n; };
    QElapsedTimer clock;
    const double cpu0 = cpuSeconds();
    clock.start();
    link.send("g");
    if (!waitFor([&] { return link.ended; }, timeoutMs()))
        fail(QStringLiteral("cat did not end (%1 bytes)").arg(bytes));
    return {{QStringLiteral("bytes"), double(bytes)},
            {QStringLiteral("secs"), clock.nsecsElapsed() / 1e9},
            {QStringLiteral("client_cpu"), cpuSeconds() - cpu0}};
}

QJsonArray toJson(const std::vector<double> &v)
{
    QJsonArray a;
    for (double x : v)
        a.append(x);
    return a;
}

/// One key at a time to `cat` on a raw PTY, timed from the send to its echo.
QJsonObject runKeys(Link &link, int n)
{
    awaitMarker(link);
    settle(link, 300);
    std::vector<double> us;
    int timeouts = 0;
    for (int i = 0; i < n; ++i) {
        const char key = char('a' + i % 26);
        bool got = false;
        link.onData = [&](const char *p, qsizetype len) { got = got || std::find(p, p + len, key) != p + len; };
        QElapsedTimer clock;
        clock.start();
        link.send(QByteArray(1, key));
        if (waitFor([&] { return got; }, 2000))
            us.push_back(clock.nsecsElapsed() / 1e3);
        else
            ++timeouts;
    }
    return {{QStringLiteral("us"), toJson(us)}, {QStringLiteral("timeouts"), timeouts}};
}

/// `echo h""i` ⏎ to an interactive sh (prompt "$ "): the terminal echoes
/// the line, then sh prints "hi" in a second write (where Nagle's algorithm
/// held the second frame); timed from the send to "hi", then the prompt is
/// awaited before the next line.
QJsonObject runLine(Link &link, int n)
{
    QByteArray seen;
    link.onData = [&](const char *p, qsizetype len) { seen.append(p, len); };
    if (!waitFor([&] { return seen.contains("$ ") || link.ended; }, timeoutMs()) || link.ended)
        fail(QStringLiteral("no prompt from the shell"));
    settle(link, 300);
    std::vector<double> us;
    int timeouts = 0;
    for (int i = 0; i < n; ++i) {
        seen.clear();
        double at = -1;
        QElapsedTimer clock;
        link.onData = [&](const char *p, qsizetype len) {
            seen.append(p, len);
            if (at < 0 && seen.contains("hi"))
                at = clock.nsecsElapsed() / 1e3;
        };
        clock.start();
        link.send("echo h\"\"i\r");
        if (waitFor([&] { return at >= 0 && seen.indexOf("$ ", seen.indexOf("hi")) >= 0; }, 2000))
            us.push_back(at);
        else
            ++timeouts;
    }
    return {{QStringLiteral("us"), toJson(us)}, {QStringLiteral("timeouts"), timeouts}};
}

/// A full ring: a session prints FILE (more than the ring holds) and idles;
/// RUNS watch viewers in turn, each timed from open() to the last byte of
/// its replay (prelude_bytes + replay_bytes of `attached`).
QJsonObject runReattach(Tether &t, const QString &file, int runs)
{
    const QString id = t.create({QStringLiteral("sh"), QStringLiteral("-c"), QStringLiteral("cat '%1'; exec sleep 600").arg(file)});
    const qint64 size = QFile(file).size();
    QJsonObject s;
    if (!waitFor(
            [&] {
                s = t.call("GET", QStringLiteral("/api/sessions/") + id);
                return s.value(QStringLiteral("offset")).toDouble() >= size;
            },
            timeoutMs()))
        fail(QStringLiteral("the session did not print its file"));
    std::vector<double> ms;
    qint64 bytes = 0;
    for (int i = 0; i < runs; ++i) {
        QWebSocket ws;
        qint64 got = 0, pending = -1;
        double at = -1;
        QElapsedTimer clock;
        auto check = [&] {
            if (pending >= 0 && got >= pending && at < 0)
                at = clock.nsecsElapsed() / 1e6;
        };
        QObject::connect(&ws, &QWebSocket::binaryMessageReceived, [&](const QByteArray &b) {
            got += b.size();
            check();
        });
        QObject::connect(&ws, &QWebSocket::textMessageReceived, [&](const QString &text) {
            const QJsonObject m = QJsonDocument::fromJson(text.toUtf8()).object();
            if (m.value(QStringLiteral("type")).toString() != QLatin1String("attached"))
                return;
            pending = qint64(m.value(QStringLiteral("prelude_bytes")).toDouble() + m.value(QStringLiteral("replay_bytes")).toDouble());
            check();
        });
        clock.start();
        ws.open(t.wsRequest(id, QStringLiteral("mode=watch")));
        lowDelay(&ws);
        if (!waitFor([&] { return at >= 0; }, timeoutMs()))
            fail(QStringLiteral("replay incomplete: %1 of %2 bytes").arg(got).arg(pending));
        ms.push_back(at);
        bytes = got;
        ws.close();
        waitFor([&] { return ws.state() == QAbstractSocket::UnconnectedState; }, 5000);
    }
    t.remove({id});
    return {{QStringLiteral("ms"), toJson(ms)},
            {QStringLiteral("bytes"), double(bytes)},
            {QStringLiteral("capacity"), s.value(QStringLiteral("buffer_capacity"))},
            {QStringLiteral("offset"), s.value(QStringLiteral("offset"))}};
}

/// N sessions run ARGV (a marker, one input byte, then an endless stream),
/// each with its own control viewer; once all are ready every one is
/// started, and the bytes each viewer receives in SECONDS are counted.
QJsonObject runFair(Tether &t, int n, double seconds, const QStringList &argv)
{
    std::vector<std::unique_ptr<WsLink>> links;
    std::vector<qint64> bytes(size_t(n), 0);
    std::vector<char> ready(size_t(n), 0);
    bool counting = false;
    for (int i = 0; i < n; ++i) {
        links.push_back(std::make_unique<WsLink>(t, argv));
        auto seen = std::make_shared<QByteArray>();
        links.back()->onData = [&, i, seen](const char *p, qsizetype len) {
            if (counting) {
                bytes[size_t(i)] += len;
            } else if (!ready[size_t(i)]) {
                seen->append(p, len);
                ready[size_t(i)] = seen->contains(kMarker);
            }
        };
    }
    if (!waitFor([&] { return std::all_of(ready.begin(), ready.end(), [](char r) { return r != 0; }); }, timeoutMs()))
        fail(QStringLiteral("not every session became ready"));
    counting = true;
    QElapsedTimer clock;
    clock.start();
    for (auto &l : links)
        l->send("g");
    pause(int(seconds * 1000));
    const double secs = clock.nsecsElapsed() / 1e9;
    counting = false;
    QJsonArray per;
    for (qint64 b : bytes)
        per.append(double(b));
    // End every session at once (one at a time took minutes while the
    // others kept streaming), then close the viewers.
    QStringList ids;
    for (auto &l : links) {
        ids.append(l->id());
        l->removed = true;
    }
    t.remove(ids);
    links.clear();
    return {{QStringLiteral("bytes"), per}, {QStringLiteral("secs"), secs}};
}

} // namespace

int main(int argc, char **argv)
{
    QCoreApplication app(argc, argv);
    QStringList args = app.arguments().mid(1);
    const int dash = int(args.indexOf(QStringLiteral("--")));
    const QStringList command = dash >= 0 ? args.mid(dash + 1) : QStringList();
    if (dash >= 0)
        args = args.mid(0, dash);
    if (args.size() < 3)
        fail(QStringLiteral("usage: see the comment at the top of bench/bench_client.cpp"));
    const QString what = args.value(0);
    const int at = what == QLatin1String("fair") || what == QLatin1String("reattach") ? 3 : 2;
    const QString via = args.value(at);
    Tether tether;
    if (via == QLatin1String("ws")) {
        tether.base = QUrl(args.value(at + 1));
        tether.key = args.value(at + 2).toLatin1();
    } else if (via != QLatin1String("pty")) {
        fail(QStringLiteral("transport must be pty or ws, not %1").arg(via));
    }
    auto makeLink = [&]() -> std::unique_ptr<Link> {
        if (command.isEmpty())
            fail(QStringLiteral("no command after --"));
        if (via == QLatin1String("pty"))
            return std::make_unique<PtyLink>(command);
        return std::make_unique<WsLink>(tether, command);
    };
    QJsonObject out;
    if (what == QLatin1String("cat")) {
        auto link = makeLink();
        out = runCat(*link);
        if (auto *ws = dynamic_cast<WsLink *>(link.get()))
            out.insert(QStringLiteral("messages"), double(ws->messages));
    } else if (what == QLatin1String("keys")) {
        auto link = makeLink();
        out = runKeys(*link, args.value(1).toInt());
    } else if (what == QLatin1String("line")) {
        auto link = makeLink();
        out = runLine(*link, args.value(1).toInt());
    } else if (what == QLatin1String("reattach")) {
        out = runReattach(tether, args.value(1), args.value(2).toInt());
    } else if (what == QLatin1String("fair")) {
        out = runFair(tether, args.value(1).toInt(), args.value(2).toDouble(), command);
    } else {
        fail(QStringLiteral("unknown workload %1").arg(what));
    }
    std::printf("%s\n", QJsonDocument(out).toJson(QJsonDocument::Compact).constData());
    return 0;
}
