// SPDX-License-Identifier: GPL-2.0-or-later
// ApiClient and ServerEndpoint: the REST client against a real in-process
// server on 127.0.0.1 port 0 (list, create, kill, 401, 404, 422), against
// plain TCP servers for what a real server never does (no answer, a body that
// is not the API's JSON) and a closed port (not running); what every request
// carries; proxies; and how the endpoint is found (arguments, TETHER_URL /
// TETHER_KEY, the runtime file).
#include "apiclient.h"
#include "attachinfo.h"
#include "runtimefile.h"
#include "servertestutil.h"
#include "testutil.h"

#include <QJsonArray>
#include <QNetworkProxy>
#include <QTcpServer>
#include <QTemporaryDir>

#include <algorithm>
#include <memory>

using namespace Tether;
using namespace ServerTest;

namespace {

/// The messages Qt logs while it lives (and passes them on).
struct LogCapture {
    static inline QStringList *messages = nullptr;
    static inline QtMessageHandler previous = nullptr;
    QStringList list;
    LogCapture()
    {
        messages = &list;
        previous = qInstallMessageHandler([](QtMsgType type, const QMessageLogContext &context, const QString &text) {
            if (messages)
                messages->append(text);
            if (previous)
                previous(type, context, text);
        });
    }
    ~LogCapture()
    {
        qInstallMessageHandler(previous);
        messages = nullptr;
    }
    bool contains(const QString &part) const
    {
        for (const QString &m : list)
            if (m.contains(part))
                return true;
        return false;
    }
};

/// Collects the answers a callback gets.
struct Replies {
    QList<ApiReply> list;
    ApiClient::Callback callback()
    {
        return [this](const ApiReply &r) { list.append(r); };
    }
};

/// A TCP server on 127.0.0.1, port 0, that records each complete request
/// (head and Content-Length body) and answers it with `answer`, or never
/// when `answer` is empty.
class FakeServer : public QObject
{
public:
    QTcpServer server;
    QByteArray answer;
    QList<QByteArray> requests;
    int connections = 0;

    bool listen()
    {
        connect(&server, &QTcpServer::newConnection, this, [this]() {
            while (QTcpSocket *s = server.nextPendingConnection()) {
                ++connections;
                s->setParent(this);
                auto buf = std::make_shared<QByteArray>();
                connect(s, &QTcpSocket::readyRead, s, [this, s, buf]() {
                    *buf += s->readAll();
                    const int end = buf->indexOf("\r\n\r\n");
                    if (end < 0)
                        return;
                    qsizetype length = 0;
                    for (const QByteArray &line : buf->left(end).split('\n'))
                        if (line.toLower().startsWith("content-length:"))
                            length = line.mid(15).trimmed().toLongLong();
                    if (buf->size() < end + 4 + length)
                        return;
                    requests.append(*buf);
                    buf->clear();
                    if (!answer.isEmpty()) {
                        s->write(answer);
                        s->disconnectFromHost();
                    }
                });
            }
        });
        return server.listen(QHostAddress::LocalHost, 0);
    }
    ServerEndpoint endpoint(const QString &key = QStringLiteral("the-key")) const
    {
        ServerEndpoint ep;
        ep.url = QUrl(QStringLiteral("http://127.0.0.1:%1/").arg(server.serverPort()));
        ep.key = key;
        return ep;
    }
    /// Header `name` of request `i` (case-insensitive), null when absent.
    QByteArray header(int i, const QByteArray &name) const
    {
        const QByteArray head = requests.value(i).left(requests.value(i).indexOf("\r\n\r\n"));
        for (const QByteArray &line : head.split('\n')) {
            const int colon = line.indexOf(':');
            if (colon > 0 && line.left(colon).trimmed().toLower() == name.toLower())
                return line.mid(colon + 1).trimmed();
        }
        return QByteArray();
    }
    QByteArray requestLine(int i) const { return requests.value(i).left(requests.value(i).indexOf("\r\n")); }
    QByteArray body(int i) const { return requests.value(i).mid(requests.value(i).indexOf("\r\n\r\n") + 4); }
};

/// Answers every proxy query with one HTTP proxy, loopback hosts included,
/// like a system configuration without a no_proxy list.
class EverythingThroughProxy : public QNetworkProxyFactory
{
public:
    explicit EverythingThroughProxy(quint16 port)
        : m_proxy(QNetworkProxy::HttpProxy, QStringLiteral("127.0.0.1"), port)
    {
    }
    QList<QNetworkProxy> queryProxy(const QNetworkProxyQuery &) override { return {m_proxy}; }

private:
    QNetworkProxy m_proxy;
};

/// Removes the proxy factory when destroyed.
struct ProxyGuard {
    ~ProxyGuard() { QNetworkProxyFactory::setApplicationProxyFactory(nullptr); }
};

} // namespace

class TestApiClient : public QObject
{
    Q_OBJECT

    Fixture f;
    std::unique_ptr<QTemporaryDir> m_dir;
    std::vector<std::unique_ptr<TestUtil::EnvGuard>> m_env;

    ServerEndpoint endpoint(const QString &key = QString()) const
    {
        ServerEndpoint ep;
        ep.url = QUrl(QStringLiteral("http://127.0.0.1:%1/").arg(f.port));
        ep.key = key.isNull() ? QString::fromLatin1(f.key) : key;
        return ep;
    }

    /// Runs one request and waits for its single answer.
    template<typename Call>
    ApiReply call(ApiClient &c, Call request)
    {
        Replies r;
        request(c, r.callback());
        if (!QTest::qWaitFor([&]() { return !r.list.isEmpty(); }, 15000))
            return ApiReply();
        return r.list.first();
    }

private Q_SLOTS:
    void init()
    {
        // Each test gets a private runtime directory and no TETHER_* values.
        m_dir.reset(new QTemporaryDir);
        QVERIFY(m_dir->isValid());
        for (const char *name : {"XDG_RUNTIME_DIR", "TMPDIR", "TETHER_URL", "TETHER_KEY"})
            m_env.emplace_back(new TestUtil::EnvGuard(name));
        const QString run = m_dir->path() + QStringLiteral("/run");
        QVERIFY(QDir().mkdir(run));
        QVERIFY(QFile::setPermissions(run, QFileDevice::ReadOwner | QFileDevice::WriteOwner | QFileDevice::ExeOwner));
        qputenv("XDG_RUNTIME_DIR", QFile::encodeName(run));
        qputenv("TMPDIR", QFile::encodeName(m_dir->path()));
        qunsetenv("TETHER_URL");
        qunsetenv("TETHER_KEY");
        QVERIFY(f.start());
    }
    void cleanup()
    {
        f.stop();
        m_env.clear();
        m_dir.reset();
    }

    void listCreateKill()
    {
        ApiClient c(endpoint());
        ApiReply r = call(c, [](ApiClient &c, ApiClient::Callback cb) { c.get(QStringLiteral("api/sessions"), cb); });
        QCOMPARE(r.status, 200);
        QVERIFY(r.networkError.isEmpty());
        QVERIFY(!r.connectionRefused);
        QVERIFY(r.json().contains(QStringLiteral("sessions")));
        QCOMPARE(r.json().value(QStringLiteral("sessions")).toArray().size(), 0);

        // Create.
        const QByteArray body = R"({"command": ["/bin/sh", "-c", "exec sleep 600"], "cols": 100, "rows": 30})";
        r = call(c, [&](ApiClient &c, ApiClient::Callback cb) { c.post(QStringLiteral("/api/sessions"), body, cb); });
        QCOMPARE(r.status, 201);
        const QString id = r.json().value(QStringLiteral("id")).toString();
        QVERIFY(!id.isEmpty());
        QCOMPARE(r.json().value(QStringLiteral("cols")).toInt(), 100);
        QVERIFY(f.registry->find(id));

        // List it, and get it alone.
        r = call(c, [](ApiClient &c, ApiClient::Callback cb) { c.get(QStringLiteral("api/sessions"), cb); });
        QCOMPARE(r.status, 200);
        const QJsonArray sessions = r.json().value(QStringLiteral("sessions")).toArray();
        QCOMPARE(sessions.size(), 1);
        QCOMPARE(sessions.at(0).toObject().value(QStringLiteral("id")).toString(), id);
        QCOMPARE(sessions.at(0).toObject().value(QStringLiteral("command")).toArray().at(0).toString(), QStringLiteral("/bin/sh"));
        r = call(c, [&](ApiClient &c, ApiClient::Callback cb) { c.get(QStringLiteral("api/sessions/") + id, cb); });
        QCOMPARE(r.status, 200);
        QCOMPARE(r.json().value(QStringLiteral("rows")).toInt(), 30);

        // Kill.
        r = call(c, [&](ApiClient &c, ApiClient::Callback cb) { c.deleteResource(QStringLiteral("api/sessions/") + id, cb); });
        QCOMPARE(r.status, 204);
        QVERIFY(r.body.isEmpty());
        QVERIFY(!f.registry->find(id));
        r = call(c, [&](ApiClient &c, ApiClient::Callback cb) { c.deleteResource(QStringLiteral("api/sessions/") + id, cb); });
        QCOMPARE(r.status, 404);
        r = call(c, [](ApiClient &c, ApiClient::Callback cb) { c.get(QStringLiteral("api/sessions"), cb); });
        QCOMPARE(r.json().value(QStringLiteral("sessions")).toArray().size(), 0);
    }

    void wrongKey()
    {
        ApiClient c(endpoint(QStringLiteral("not-the-key")));
        const ApiReply r = call(c, [](ApiClient &c, ApiClient::Callback cb) { c.get(QStringLiteral("api/sessions"), cb); });
        // An HTTP answer, not a network failure.
        QCOMPARE(r.status, 401);
        QVERIFY(!r.connectionRefused);
        QVERIFY(r.networkError.isEmpty());
        QCOMPARE(r.errorText(), QStringLiteral("missing or wrong access key"));
    }

    void apiErrors()
    {
        ApiClient c(endpoint());
        ApiReply r = call(c, [](ApiClient &c, ApiClient::Callback cb) { c.get(QStringLiteral("api/sessions/no-such-id"), cb); });
        QCOMPARE(r.status, 404);
        QVERIFY(!r.errorText().isEmpty());
        QCOMPARE(r.errorText(), r.json().value(QStringLiteral("error")).toString());

        r = call(c, [](ApiClient &c, ApiClient::Callback cb) {
            c.post(QStringLiteral("api/sessions"), R"({"command": ["/nonexistent/program"]})", cb);
        });
        QCOMPARE(r.status, 422);
        QVERIFY2(r.errorText().contains(QStringLiteral("No such file")), qPrintable(r.errorText()));

        r = call(c, [](ApiClient &c, ApiClient::Callback cb) { c.post(QStringLiteral("api/sessions"), "not json", cb); });
        QCOMPARE(r.status, 400);
        QVERIFY(!r.errorText().isEmpty());
    }

    void notRunning()
    {
        // A port nothing listens on: what a stale runtime file leads to.
        QTcpServer probe;
        QVERIFY(probe.listen(QHostAddress::LocalHost, 0));
        const quint16 port = probe.serverPort();
        probe.close();
        ServerEndpoint ep;
        ep.url = QUrl(QStringLiteral("http://127.0.0.1:%1/").arg(port));
        ep.key = QStringLiteral("k");
        ApiClient c(ep);
        LogCapture log;
        const ApiReply r = call(c, [](ApiClient &c, ApiClient::Callback cb) { c.get(QStringLiteral("api/sessions"), cb); });
        QVERIFY2(!log.contains(QStringLiteral("device not open")), qPrintable(log.list.join(QLatin1Char('\n'))));
        QCOMPARE(r.status, 0);
        QVERIFY(r.connectionRefused);
        QVERIFY(!r.networkError.isEmpty());
        QCOMPARE(r.errorText(), r.networkError);
    }

    void timeout()
    {
        FakeServer silent; // accepts, reads, never answers
        QVERIFY(silent.listen());
        ApiClient c(silent.endpoint());
        c.setTimeout(300);
        Replies r;
        QElapsedTimer t;
        t.start();
        LogCapture log;
        c.get(QStringLiteral("api/sessions"), r.callback());
        QTRY_COMPARE_WITH_TIMEOUT(r.list.size(), 1, 10000);
        // A reply that timed out is closed: reading it printed "QIODevice::read
        // (QNetworkReplyHttpImpl): device not open" (twice in a slow `tether
        // restart` that succeeded, issue 29).
        QVERIFY2(!log.contains(QStringLiteral("device not open")), qPrintable(log.list.join(QLatin1Char('\n'))));
        QVERIFY2(t.elapsed() >= 250, qPrintable(QString::number(t.elapsed())));
        QCOMPARE(silent.requests.size(), 1);
        QCOMPARE(r.list.first().status, 0);
        QVERIFY(!r.list.first().connectionRefused);
        QVERIFY(!r.list.first().networkError.isEmpty());
        // Exactly once: a second request on the same client times out in
        // turn (its timer armed after the first one's callback), later than
        // anything the first one's end could still have caused.
        Replies second;
        c.get(QStringLiteral("api/sessions"), second.callback());
        QTRY_COMPARE_WITH_TIMEOUT(second.list.size(), 1, 10000);
        QCOMPARE(second.list.first().status, 0);
        QCOMPARE(r.list.size(), 1);
    }

    void answersComeFromTheEventLoop()
    {
        ApiClient c(endpoint());
        Replies r;
        c.get(QStringLiteral("api/sessions"), r.callback());
        c.get(QStringLiteral("api/sessions/x"), r.callback());
        QVERIFY(r.list.isEmpty()); // never called from inside get()
        QTRY_COMPARE(r.list.size(), 2);
        // Each once: a third request's answer (a round trip to the server)
        // comes after anything the first two could still have caused.
        Replies third;
        c.get(QStringLiteral("api/sessions"), third.callback());
        QTRY_COMPARE(third.list.size(), 1);
        QCOMPARE(r.list.size(), 2);
        QList<int> statuses{r.list.at(0).status, r.list.at(1).status};
        std::sort(statuses.begin(), statuses.end());
        QCOMPARE(statuses, (QList<int>{200, 404}));
    }

    void destroyedClientCallsNothing()
    {
        FakeServer slow;
        QVERIFY(slow.listen());
        Replies r;
        auto *c = new ApiClient(slow.endpoint());
        c->get(QStringLiteral("api/sessions"), r.callback());
        QTRY_COMPARE(slow.requests.size(), 1);
        delete c;
        // The request is gone with the client: the server sees its
        // connection closed (later than any callback the deletion posted),
        // so no answer can come either.
        QTRY_VERIFY([&] {
            const QList<QTcpSocket *> sockets = slow.findChildren<QTcpSocket *>();
            return !sockets.isEmpty() && std::all_of(sockets.begin(), sockets.end(), [](QTcpSocket *s) {
                return s->state() != QAbstractSocket::ConnectedState;
            });
        }());
        QCOMPARE(r.list.size(), 0);
    }

    void whatEveryRequestCarries()
    {
        FakeServer fake;
        fake.answer = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}";
        QVERIFY(fake.listen());
        ApiClient c(fake.endpoint(QStringLiteral("s3cr3t_-KEY")));
        Replies r;
        c.get(QStringLiteral("api/sessions"), r.callback());
        QTRY_COMPARE(r.list.size(), 1);
        c.post(QStringLiteral("/api/sessions"), R"({"cols":90})", r.callback());
        QTRY_COMPARE(r.list.size(), 2);
        c.deleteResource(QStringLiteral("api/sessions/abc"), r.callback());
        QTRY_COMPARE(r.list.size(), 3);
        QCOMPARE(fake.requests.size(), 3);
        QCOMPARE(fake.requestLine(0), QByteArray("GET /api/sessions HTTP/1.1"));
        QCOMPARE(fake.requestLine(1), QByteArray("POST /api/sessions HTTP/1.1"));
        QCOMPARE(fake.requestLine(2), QByteArray("DELETE /api/sessions/abc HTTP/1.1"));
        for (int i = 0; i < 3; ++i) {
            QCOMPARE(fake.header(i, "authorization"), QByteArray("Bearer s3cr3t_-KEY"));
            // No Origin: the server then checks only Host and key.
            QVERIFY(fake.header(i, "origin").isNull());
            QCOMPARE(fake.header(i, "host"), QByteArray("127.0.0.1:") + QByteArray::number(fake.server.serverPort()));
            QCOMPARE(r.list.at(i).status, 200);
        }
        QCOMPARE(fake.header(1, "content-type"), QByteArray("application/json"));
        QCOMPARE(fake.body(1), QByteArray(R"({"cols":90})"));
    }

    void replyTexts()
    {
        // errorText(): the API's {"error"}, else "HTTP <status>".
        FakeServer fake;
        fake.answer = "HTTP/1.1 500 Internal Server Error\r\nContent-Length: 5\r\nConnection: close\r\n\r\noops!";
        QVERIFY(fake.listen());
        ApiClient c(fake.endpoint());
        const ApiReply r = call(c, [](ApiClient &c, ApiClient::Callback cb) { c.get(QStringLiteral("api/sessions"), cb); });
        QCOMPARE(r.status, 500);
        QCOMPARE(r.body, QByteArray("oops!"));
        QVERIFY(r.json().isEmpty());
        QVERIFY(r.networkError.isEmpty());
        QCOMPARE(r.errorText(), QStringLiteral("HTTP 500"));

        ApiReply json;
        json.status = 409;
        json.body = R"({"error": "the text"})";
        QCOMPARE(json.errorText(), QStringLiteral("the text"));
        json.body = "[1]";
        QVERIFY(json.json().isEmpty());
        QCOMPARE(json.errorText(), QStringLiteral("HTTP 409"));
    }

    void loopbackBypassesTheProxy_data()
    {
        QTest::addColumn<QString>("host");
        QTest::newRow("127.0.0.1") << QStringLiteral("127.0.0.1");
        QTest::newRow("localhost") << QStringLiteral("localhost");
    }
    void loopbackBypassesTheProxy()
    {
        // An http_proxy setting must not route 127.0.0.1 (and the key) to
        // another machine. (Qt 5.15 and 6.4 themselves skip application-wide
        // proxies for loopback hosts; ApiClient also sets NoProxy on its own
        // manager, so this holds whichever way the proxy is configured.)
        QFETCH(QString, host);
        FakeServer proxy;
        proxy.answer = "HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
        QVERIFY(proxy.listen());
        ProxyGuard guard;
        QNetworkProxyFactory::setApplicationProxyFactory(new EverythingThroughProxy(proxy.server.serverPort()));

        ServerEndpoint ep = endpoint();
        ep.url.setHost(host);
        QVERIFY(ep.isLoopback());
        ApiClient c(ep);
        const ApiReply r = call(c, [](ApiClient &c, ApiClient::Callback cb) { c.get(QStringLiteral("api/sessions"), cb); });
        QCOMPARE(r.status, 200);
        QCOMPARE(proxy.connections, 0);

        // The proxy is really in force: another host goes through it.
        ServerEndpoint far;
        far.url = QUrl(QStringLiteral("http://tether.invalid:7420/"));
        far.key = QStringLiteral("k");
        QVERIFY(!far.isLoopback());
        ApiClient viaProxy(far);
        const ApiReply p = call(viaProxy, [](ApiClient &c, ApiClient::Callback cb) { c.get(QStringLiteral("api/sessions"), cb); });
        QCOMPARE(p.status, 502);
        QCOMPARE(proxy.requests.size(), 1);
        QCOMPARE(proxy.requestLine(0), QByteArray("GET http://tether.invalid:7420/api/sessions HTTP/1.1"));
    }

    void isLoopback_data()
    {
        QTest::addColumn<QString>("url");
        QTest::addColumn<bool>("loopback");
        QTest::newRow("127.0.0.1") << QStringLiteral("http://127.0.0.1:7420/") << true;
        QTest::newRow("127.1.2.3") << QStringLiteral("http://127.1.2.3:7420/") << true;
        QTest::newRow("localhost") << QStringLiteral("http://localhost:7420/") << true;
        QTest::newRow("LOCALHOST") << QStringLiteral("http://LOCALHOST/") << true;
        QTest::newRow("::1") << QStringLiteral("http://[::1]:7420/") << true;
        QTest::newRow("::ffff:127.0.0.1") << QStringLiteral("http://[::ffff:127.0.0.1]:7420/") << true;
        QTest::newRow("LAN address") << QStringLiteral("http://192.168.1.10:7420/") << false;
        QTest::newRow("any address") << QStringLiteral("http://0.0.0.0:7420/") << false;
        QTest::newRow("a name") << QStringLiteral("http://example.com/") << false;
        QTest::newRow("localhost lookalike") << QStringLiteral("http://localhost.example.com/") << false;
    }
    void isLoopback()
    {
        QFETCH(QString, url);
        QFETCH(bool, loopback);
        ServerEndpoint ep;
        ep.url = QUrl(url);
        QCOMPARE(ep.isLoopback(), loopback);
    }

    void resolve_data()
    {
        // Each of url and key: the argument, else TETHER_URL / TETHER_KEY,
        // else the runtime file. Empty cells are unset.
        QTest::addColumn<QString>("argUrl");
        QTest::addColumn<QString>("argKey");
        QTest::addColumn<QString>("envUrl");
        QTest::addColumn<QString>("envKey");
        QTest::addColumn<QString>("fileUrl");
        QTest::addColumn<QString>("fileKey");
        QTest::addColumn<QString>("url");  // expected; empty: resolve() fails
        QTest::addColumn<QString>("key");
        QTest::addColumn<QString>("error"); // part of the error text when it fails

        const QString a = QStringLiteral("http://127.0.0.1:1001/");
        const QString e = QStringLiteral("http://127.0.0.1:1002/");
        const QString r = QStringLiteral("http://127.0.0.1:1003/");
        const QString none;
        const QString noFile = QStringLiteral("missing or unreadable");
        QTest::newRow("arguments") << a << "ka" << none << none << none << none << a << "ka" << none;
        QTest::newRow("environment") << none << none << e << "ke" << none << none << e << "ke" << none;
        QTest::newRow("runtime file") << none << none << none << none << r << "kr" << r << "kr" << none;
        QTest::newRow("arguments first") << a << "ka" << e << "ke" << r << "kr" << a << "ka" << none;
        QTest::newRow("environment before file") << none << none << e << "ke" << r << "kr" << e << "ke" << none;
        QTest::newRow("url argument, key from env") << a << none << e << "ke" << r << "kr" << a << "ke" << none;
        QTest::newRow("url from env, key from file") << none << none << e << none << r << "kr" << e << "kr" << none;
        QTest::newRow("url from file, key argument") << none << "ka" << none << none << r << "kr" << r << "ka" << none;
        QTest::newRow("nothing: not running") << none << none << none << none << none << none << none << none << noFile;
        QTest::newRow("url without key") << a << none << none << none << none << none << none << none << noFile;
        QTest::newRow("key without url") << none << "ka" << none << none << none << none << none << none << noFile;
        // The key is never taken from a URL; a pasted key link loses its
        // query and fragment, and any path.
        QTest::newRow("key link without key") << "http://127.0.0.1:7420/?key=abc#/s/ID" << none << none << none << none << none
                                              << none << none << noFile;
        QTest::newRow("key link") << "http://127.0.0.1:7420/?key=abc#/s/ID" << "ka" << none << none << none << none
                                  << "http://127.0.0.1:7420/" << "ka" << none;
        QTest::newRow("path dropped") << "http://localhost:7420/api/sessions" << "ka" << none << none << none << none
                                      << "http://localhost:7420/" << "ka" << none;
        QTest::newRow("no trailing slash") << "http://127.0.0.1:7420" << "ka" << none << none << none << none
                                           << "http://127.0.0.1:7420/" << "ka" << none;
        QTest::newRow("https") << "https://tether.example:443/" << "ka" << none << none << none << none
                               << "https://tether.example:443/" << "ka" << none;
        const QString notHttp = QStringLiteral("not an http:// URL");
        QTest::newRow("ftp") << "ftp://127.0.0.1/" << "ka" << none << none << none << none << none << none << notHttp;
        QTest::newRow("ws") << "ws://127.0.0.1:7420/" << "ka" << none << none << none << none << none << none << notHttp;
        QTest::newRow("no scheme") << "127.0.0.1:7420" << "ka" << none << none << none << none << none << none << notHttp;
        QTest::newRow("no host") << "http:///x" << "ka" << none << none << none << none << none << none << notHttp;
        QTest::newRow("bad env url") << none << none << "nonsense" << "ke" << r << "kr" << none << none << notHttp;
    }
    void resolve()
    {
        QFETCH(QString, argUrl);
        QFETCH(QString, argKey);
        QFETCH(QString, envUrl);
        QFETCH(QString, envKey);
        QFETCH(QString, fileUrl);
        QFETCH(QString, fileKey);
        QFETCH(QString, url);
        QFETCH(QString, key);
        QFETCH(QString, error);
        if (!envUrl.isEmpty())
            qputenv("TETHER_URL", envUrl.toUtf8());
        if (!envKey.isEmpty())
            qputenv("TETHER_KEY", envKey.toUtf8());
        if (!fileUrl.isEmpty() || !fileKey.isEmpty()) {
            QJsonObject o{{QStringLiteral("port"), 1003}, {QStringLiteral("pid"), 1}};
            if (!fileUrl.isEmpty())
                o.insert(QStringLiteral("url"), fileUrl);
            if (!fileKey.isEmpty())
                o.insert(QStringLiteral("key"), fileKey);
            QString writeError;
            QVERIFY2(RuntimeFile::write(o, &writeError), qPrintable(writeError));
        }
        ServerEndpoint ep;
        ep.key = QStringLiteral("untouched");
        QString text;
        const bool ok = ServerEndpoint::resolve(argUrl, argKey, &ep, &text);
        if (url.isEmpty()) {
            QVERIFY(!ok);
            QVERIFY2(text.contains(error), qPrintable(text));
            if (error.contains(QStringLiteral("missing")))
                QVERIFY2(text.contains(RuntimeFile::path()), qPrintable(text)); // says where it looked
            QCOMPARE(ep.key, QStringLiteral("untouched"));
            return;
        }
        QVERIFY2(ok, qPrintable(text));
        QCOMPARE(ep.url, QUrl(url));
        QCOMPARE(ep.url.toString(), url);
        QCOMPARE(ep.key, key);
    }

    void urls_data()
    {
        QTest::addColumn<QString>("base");
        QTest::addColumn<QString>("path");
        QTest::addColumn<QString>("rest");
        QTest::addColumn<QString>("ws");
        QTest::newRow("http") << QStringLiteral("http://127.0.0.1:7420/") << QStringLiteral("api/sessions")
                              << QStringLiteral("http://127.0.0.1:7420/api/sessions") << QStringLiteral("ws://127.0.0.1:7420/ws/");
        QTest::newRow("leading slash") << QStringLiteral("http://127.0.0.1:7420/") << QStringLiteral("/api/sessions")
                                       << QStringLiteral("http://127.0.0.1:7420/api/sessions") << QStringLiteral("ws://127.0.0.1:7420/ws/");
        QTest::newRow("https") << QStringLiteral("https://h.example/") << QStringLiteral("api/sessions/-x")
                               << QStringLiteral("https://h.example/api/sessions/-x") << QStringLiteral("wss://h.example/ws/");
    }
    void urls()
    {
        QFETCH(QString, base);
        QFETCH(QString, path);
        QFETCH(QString, rest);
        QFETCH(QString, ws);
        ServerEndpoint ep;
        ep.url = QUrl(base);
        QCOMPARE(ep.resolved(path).toString(), rest);
        QCOMPARE(ep.webSocketUrl(QStringLiteral("-Ab_9"), ViewerMode::Control, -1).toString(), ws + QStringLiteral("-Ab_9?mode=control"));
        QCOMPARE(ep.webSocketUrl(QStringLiteral("id"), ViewerMode::Watch, -1).toString(), ws + QStringLiteral("id?mode=watch"));
        QCOMPARE(ep.webSocketUrl(QStringLiteral("id"), ViewerMode::Control, 0).toString(), ws + QStringLiteral("id?mode=control&resume=0"));
        QCOMPARE(ep.webSocketUrl(QStringLiteral("id"), ViewerMode::Watch, Q_INT64_C(5000000000)).toString(),
                 ws + QStringLiteral("id?mode=watch&resume=5000000000"));
    }

    void discoveredFromTheRuntimeFile()
    {
        // What `tether list` does: the running server's own runtime file.
        QString error;
        QVERIFY2(f.server->writeRuntimeFile(&error), qPrintable(error));
        ServerEndpoint ep;
        QVERIFY2(ServerEndpoint::resolve(QString(), QString(), &ep, &error), qPrintable(error));
        QCOMPARE(ep.url.toString(), f.server->url());
        QCOMPARE(ep.key, f.server->accessKey());
        ApiClient c(ep);
        ApiReply r = call(c, [](ApiClient &c, ApiClient::Callback cb) { c.get(QStringLiteral("api/sessions"), cb); });
        QCOMPARE(r.status, 200);

        // TETHER_URL / TETHER_KEY win over the file: here, a wrong key.
        qputenv("TETHER_KEY", "wrong");
        QVERIFY2(ServerEndpoint::resolve(QString(), QString(), &ep, &error), qPrintable(error));
        ApiClient wrong(ep);
        r = call(wrong, [](ApiClient &c, ApiClient::Callback cb) { c.get(QStringLiteral("api/sessions"), cb); });
        QCOMPARE(r.status, 401);
        // ...and explicit values over both.
        QVERIFY2(ServerEndpoint::resolve(QString(), f.server->accessKey(), &ep, &error), qPrintable(error));
        ApiClient right(ep);
        r = call(right, [](ApiClient &c, ApiClient::Callback cb) { c.get(QStringLiteral("api/sessions"), cb); });
        QCOMPARE(r.status, 200);

        // After the server's clean exit there is nothing to find.
        f.server->removeRuntimeFile();
        qunsetenv("TETHER_KEY");
        QVERIFY(!ServerEndpoint::resolve(QString(), QString(), &ep, &error));
    }

    void discoveredFromTheEnvironment()
    {
        qputenv("TETHER_URL", f.server->url().toUtf8());
        qputenv("TETHER_KEY", f.key);
        ServerEndpoint ep;
        QString error;
        QVERIFY2(ServerEndpoint::resolve(QString(), QString(), &ep, &error), qPrintable(error));
        ApiClient c(ep);
        const ApiReply r = call(c, [](ApiClient &c, ApiClient::Callback cb) { c.get(QStringLiteral("api/sessions"), cb); });
        QCOMPARE(r.status, 200);
    }
};

QTEST_GUILESS_MAIN(TestApiClient)
#include "tst_apiclient.moc"
