// SPDX-License-Identifier: GPL-2.0-or-later
// The server over TLS (issue 10, "Remote use, safely"), in process: real
// certificates made by `openssl req -x509`, real TLS clients (QSslSocket,
// QWebSocket, `openssl s_client`) on 127.0.0.1, port 0.
#include "bindpolicy.h"
#include "servertestutil.h"
#include "tlscontext.h"
#include "tlstestutil.h"

#include <QNetworkInterface>
#include <QTemporaryDir>

#include <linux/sockios.h>
#include <sys/ioctl.h>

using namespace Tether;
using namespace ServerTest;

namespace {
/// The names of the main test certificate (subjectAltName).
const QString kSan = QStringLiteral("DNS:localhost,DNS:tether.test,DNS:*.wild.test,IP:127.0.0.1");

QByteArray withPort(QByteArray text, quint16 port)
{
    return text.replace("PORT", QByteArray::number(port));
}

/// Replaces `path` by a copy of `from` the way editors and certbot do: a
/// new file renamed over the old one.
bool replaceFile(const QString &from, const QString &path)
{
    const QString tmp = path + QStringLiteral(".new");
    QFile::remove(tmp);
    return QFile::copy(from, tmp) && ::rename(QFile::encodeName(tmp).constData(), QFile::encodeName(path).constData()) == 0;
}
} // namespace

class TestServerTls : public QObject
{
    Q_OBJECT

    QTemporaryDir m_dir;
    TestCert m_cert;   ///< kSan
    TestCert m_other;  ///< another certificate for the same names
    Fixture m_f;       ///< a TLS server, per test

    bool startTls(const std::function<void(HostConfig &)> &more = {}, const TestCert *cert = nullptr)
    {
        const TestCert c = cert ? *cert : m_cert;
        return m_f.start(Limits(), [&](HostConfig &config) {
            config.tlsCert = c.cert;
            config.tlsKey = c.key;
            if (more)
                more(config);
        });
    }
    TlsReply get(const QByteArray &target, const QByteArray &host, const Headers &extra = Headers(), bool auth = true)
    {
        QByteArray r = "GET " + target + " HTTP/1.1\r\nHost: " + host + "\r\n";
        if (auth)
            r += "Authorization: Bearer " + m_f.key + "\r\n";
        for (const auto &h : extra)
            r += h.first + ": " + h.second + "\r\n";
        return httpsExchange(m_f.port, r + "\r\n", m_cert.cert);
    }
    QByteArray host() const { return "localhost:" + QByteArray::number(m_f.port); }

private Q_SLOTS:
    void initTestCase()
    {
        if (!haveOpenssl())
            QSKIP("the openssl command is not installed (scripts/install-deps.sh installs it)");
        if (!QSslSocket::supportsSsl())
            QSKIP("Qt finds no OpenSSL library");
        QVERIFY(m_dir.isValid());
        QVERIFY(makeCert(m_dir.path(), QStringLiteral("main"), QStringLiteral("tether.test"), kSan, &m_cert));
        QVERIFY(makeCert(m_dir.path(), QStringLiteral("other"), QStringLiteral("tether.test"), kSan, &m_other));
    }
    void cleanup() { m_f.stop(); }

    // --- the decision: pure logic ------------------------------------------
    void bindPolicy_data()
    {
        QTest::addColumn<QString>("bind");
        QTest::addColumn<bool>("tls");
        QTest::addColumn<bool>("insecure");
        QTest::addColumn<int>("decision");
        using D = BindPolicy::Decision;
        QTest::newRow("default loopback") << "127.0.0.1" << false << false << int(D::Loopback);
        QTest::newRow("other 127/8") << "127.0.0.2" << false << false << int(D::Loopback);
        QTest::newRow("localhost") << "localhost" << false << false << int(D::Loopback);
        QTest::newRow("LOCALHOST") << "LOCALHOST" << false << false << int(D::Loopback);
        QTest::newRow("ipv6 loopback") << "::1" << false << false << int(D::Loopback);
        QTest::newRow("empty = default") << "" << false << false << int(D::Loopback);
        QTest::newRow("wildcard v4") << "0.0.0.0" << false << false << int(D::Refused);
        QTest::newRow("wildcard v6") << "::" << false << false << int(D::Refused);
        QTest::newRow("lan address") << "192.168.1.5" << false << false << int(D::Refused);
        QTest::newRow("mapped loopback is not a bind name") << "::ffff:192.168.1.5" << false << false << int(D::Refused);
        QTest::newRow("wildcard with tls") << "0.0.0.0" << true << false << int(D::Tls);
        QTest::newRow("lan with tls and insecure") << "192.168.1.5" << true << true << int(D::Tls);
        QTest::newRow("wildcard insecure") << "0.0.0.0" << false << true << int(D::Insecure);
        QTest::newRow("loopback insecure: no warning") << "127.0.0.1" << false << true << int(D::Loopback);
    }
    void bindPolicy()
    {
        QFETCH(QString, bind);
        QFETCH(bool, tls);
        QFETCH(bool, insecure);
        QFETCH(int, decision);
        QCOMPARE(int(BindPolicy::decide(bind, tls, insecure)), decision);
    }

    void refusalSaysHowToMakeACertificateOrTunnel()
    {
        const QString text = BindPolicy::refusal(QStringLiteral("0.0.0.0"), 7431);
        QVERIFY2(text.contains(QLatin1String("openssl req -x509")), qPrintable(text));
        QVERIFY2(text.contains(QLatin1String("--tls-cert")) && text.contains(QLatin1String("--tls-key")), qPrintable(text));
        QVERIFY2(text.contains(QLatin1String("ssh -L 7431:127.0.0.1:7431")), qPrintable(text));
        QVERIFY2(text.contains(QLatin1String("--insecure-bind")), qPrintable(text));
    }

    // --- the server refuses what it cannot serve safely ---------------------
    void nonLoopbackBindWithoutTlsIsRefused()
    {
        // The server applies the policy itself (both programs that run one).
        // 0.0.0.0 is refused before anything is bound: nothing listens.
        Fixture f;
        QVERIFY(!f.start(Limits(), [](HostConfig &c) { c.bind = QStringLiteral("0.0.0.0"); }));
        Server server(nullptr, [] {
            HostConfig c;
            c.bind = QStringLiteral("0.0.0.0");
            c.port = 0;
            return c;
        }());
        QString error;
        QVERIFY(!server.listen(&error));
        QVERIFY2(error.contains(QLatin1String("openssl req -x509")) && error.contains(QLatin1String("ssh -L")),
                 qPrintable(error));
        QVERIFY(!server.isListening());
    }

    void nonLoopbackBindOnThisMachine()
    {
        // A real non-loopback address of this machine, when it has one (only
        // that address: the test never listens on every interface).
        QHostAddress lan;
        for (const QHostAddress &a : QNetworkInterface::allAddresses())
            if (!a.isLoopback() && !a.isLinkLocal() && a.protocol() == QAbstractSocket::IPv4Protocol) {
                lan = a;
                break;
            }
        if (lan.isNull())
            QSKIP("this machine has no non-loopback IPv4 address (bindPolicy covers the decision)");
        const QString addr = lan.toString();
        auto configFor = [&](bool insecure, bool tls) {
            HostConfig c;
            c.bind = addr;
            c.port = 0;
            c.insecureBind = insecure;
            if (tls) {
                c.tlsCert = m_cert.cert;
                c.tlsKey = m_cert.key;
            }
            return c;
        };
        {
            Server s(nullptr, configFor(false, false));
            QString error;
            QVERIFY(!s.listen(&error));
            QVERIFY2(error.contains(QLatin1String("refusing to listen on ") + addr), qPrintable(error));
        }
        {
            Server s(nullptr, configFor(true, false));
            QString error;
            QVERIFY2(s.listen(&error), qPrintable(error));
            QVERIFY2(s.startWarning().contains(QLatin1String("without TLS")), qPrintable(s.startWarning()));
            // The address a remote user opens, not 127.0.0.1.
            QCOMPARE(s.publicUrl(), QStringLiteral("http://%1:%2/").arg(addr).arg(s.port()));
        }
        {
            Server s(nullptr, configFor(false, true));
            QString error;
            QVERIFY2(s.listen(&error), qPrintable(error));
            QVERIFY(s.startWarning().isEmpty());
            // The certificate's first name but localhost (a browser checks the name).
            QCOMPARE(s.publicUrl(), QStringLiteral("https://tether.test:%1/").arg(s.port()));
        }
        {
            HostConfig c = configFor(false, true);
            c.allowHosts = QStringList{QStringLiteral("proxy.test:443"), QStringLiteral("box.test")};
            Server s(nullptr, c);
            QString error;
            QVERIFY2(s.listen(&error), qPrintable(error));
            QCOMPARE(s.publicUrl(), QStringLiteral("https://box.test:%1/").arg(s.port()));
        }
    }

    void badPairIsAClearErrorAtStart_data()
    {
        QTest::addColumn<QString>("which");
        QTest::addColumn<QString>("expected");
        QTest::newRow("missing certificate") << "missing-cert" << "cannot read the TLS certificate";
        QTest::newRow("not a certificate") << "garbage-cert" << "holds no PEM certificate";
        QTest::newRow("not a key") << "garbage-key" << "holds no unencrypted PEM private key";
        QTest::newRow("key of another certificate") << "mismatch" << "cannot serve the certificate";
        QTest::newRow("only a certificate") << "no-key" << "needs both a certificate and a key";
        // Only regular files are read (a FIFO, which blocked open(2) and the
        // whole server with it, is tested with the real process in
        // tst_serve_tls): /dev/zero was read up to the 1 MiB bound.
        QTest::newRow("certificate is a device") << "device-cert" << "cannot read the TLS certificate /dev/zero: not a regular file";
        QTest::newRow("key is a directory") << "directory-key" << ": not a regular file";
    }
    void badPairIsAClearErrorAtStart()
    {
        QFETCH(QString, which);
        QFETCH(QString, expected);
        const QString garbage = m_dir.path() + QStringLiteral("/garbage.pem");
        {
            QFile f(garbage);
            QVERIFY(f.open(QIODevice::WriteOnly));
            f.write("not PEM at all\n");
        }
        HostConfig c;
        c.port = 0;
        c.tlsCert = m_cert.cert;
        c.tlsKey = m_cert.key;
        if (which == QLatin1String("missing-cert"))
            c.tlsCert = m_dir.path() + QStringLiteral("/nope.pem");
        else if (which == QLatin1String("garbage-cert"))
            c.tlsCert = garbage;
        else if (which == QLatin1String("garbage-key"))
            c.tlsKey = garbage;
        else if (which == QLatin1String("mismatch"))
            c.tlsKey = m_other.key;
        else if (which == QLatin1String("no-key"))
            c.tlsKey.clear();
        else if (which == QLatin1String("device-cert"))
            c.tlsCert = QStringLiteral("/dev/zero");
        else if (which == QLatin1String("directory-key"))
            c.tlsKey = m_dir.path();
        Server s(nullptr, c);
        QString error;
        QVERIFY(!s.listen(&error));
        QVERIFY2(error.contains(expected), qPrintable(error));
        QVERIFY(!s.isListening());
    }

    // --- handshake -------------------------------------------------------------
    void handshakeTls12OrLater()
    {
        QVERIFY(startTls());
        const TlsReply r = get("/api/sessions", host());
        QVERIFY(r.encrypted);
        QVERIFY2(r.errors.isEmpty(), qPrintable(r.errors.value(0).errorString())); // trusted for "localhost"
        QVERIFY(r.protocol == QSsl::TlsV1_2 || r.protocol == QSsl::TlsV1_3);
        QCOMPARE(sha256Of(r.peer), sha256OfFile(m_cert.cert));
        QCOMPARE(r.http.status, 200);
        QVERIFY(r.http.json().contains(QStringLiteral("sessions")));
        QCOMPARE(m_f.server->url(), QStringLiteral("https://127.0.0.1:%1/").arg(m_f.port));
    }

    void olderTlsIsRefused()
    {
        QVERIFY(startTls());
        const QString target = QStringLiteral("127.0.0.1:%1").arg(m_f.port);
        // The same client that fails with TLS 1.1 succeeds with TLS 1.2, so
        // the refusal is the server's (SECLEVEL=0 lets this OpenSSL offer 1.1).
        auto sClient = [&](const QString &version) {
            return runTool(QStringLiteral("openssl"),
                           {QStringLiteral("s_client"), QStringLiteral("-connect"), target, version,
                            QStringLiteral("-cipher"), QStringLiteral("DEFAULT:@SECLEVEL=0"), QStringLiteral("-brief")});
        };
        QVERIFY(sClient(QStringLiteral("-tls1_2")));
        QVERIFY(!sClient(QStringLiteral("-tls1_1")));
        QVERIFY(!sClient(QStringLiteral("-tls1")));
        QCOMPARE(get("/api/sessions", host()).http.status, 200); // still serving
    }

    void plainHttpOnTheTlsPortIsRefused()
    {
        QVERIFY(startTls());
        // A viewer attached over wss:// and a TLS request half sent.
        Session *session = m_f.spawn({QStringLiteral("/bin/cat")});
        QVERIFY(session);
        WsClient viewer;
        viewer.ws.setSslConfiguration(clientTls(m_cert.cert));
        QNetworkRequest req(QUrl(QStringLiteral("wss://localhost:%1/ws/%2").arg(m_f.port).arg(session->id())));
        req.setRawHeader("Authorization", "Bearer " + m_f.key);
        viewer.ws.open(req);
        QTRY_VERIFY(viewer.gotAttached());

        QSslSocket half;
        half.setSslConfiguration(clientTls(m_cert.cert));
        QByteArray halfReply;
        QObject::connect(&half, &QSslSocket::readyRead, [&]() { halfReply += half.readAll(); });
        QSignalSpy encrypted(&half, &QSslSocket::encrypted);
        half.connectToHostEncrypted(QStringLiteral("localhost"), m_f.port);
        QVERIFY(encrypted.wait(5000));
        half.write("GET /api/sessions HTTP/1.1\r\nHost: " + host() + "\r\n");

        // Plain HTTP (with the key, as `tether list --url http://...` sends
        // it): not served, but answered in clear text 400 "use https://"
        // (as nginx does), then closed. It used to be a failed handshake
        // the client could only report as "Connection closed".
        const HttpReply plain = rawHttp(m_f.port, m_f.build("GET", "/api/sessions"));
        QVERIFY(plain.closed);
        QCOMPARE(plain.status, 400);
        QVERIFY2(plain.json().value(QStringLiteral("error")).toString().contains(QLatin1String("use https://")),
                 plain.raw.constData());
        QVERIFY2(plain.body.contains("plain HTTP request was sent to an HTTPS port"), plain.raw.constData());
        QVERIFY2(!plain.raw.contains(m_f.key), "the key must never be sent in clear text");
        QVERIFY2(!plain.raw.contains("sessions\":["), "nothing is served over plain HTTP");
        // Without the key, a browser's request: the same answer.
        const HttpReply browser = rawHttp(m_f.port, "GET / HTTP/1.1\r\nHost: localhost\r\n\r\n");
        QCOMPARE(browser.status, 400);
        // Bytes that are neither TLS nor HTTP, and a peer that sends nothing
        // and leaves: answered or dropped, nothing else affected.
        QCOMPARE(rawHttp(m_f.port, QByteArray("\x01\x02garbage", 9)).status, 400);
        {
            QTcpSocket silent;
            silent.connectToHost(QHostAddress::LocalHost, m_f.port);
            QVERIFY(silent.waitForConnected(5000));
            silent.abort();
        }

        // Nothing else was harmed: the half request completes...
        QSignalSpy closed(&half, &QSslSocket::disconnected);
        half.write("Authorization: Bearer " + m_f.key + "\r\n\r\n");
        QVERIFY(closed.wait(5000));
        QCOMPARE(parseReply(halfReply).status, 200);
        // ...and the viewer still works both ways.
        viewer.sendInput("still here\n");
        QTRY_VERIFY(viewer.stream().contains("still here"));
        QVERIFY(!viewer.disconnected);
    }

    // --- names -----------------------------------------------------------------
    void hostAndOrigin_data()
    {
        QTest::addColumn<QByteArray>("hostHeader");
        QTest::addColumn<QByteArray>("origin");
        QTest::addColumn<int>("status");
        QTest::newRow("loopback name") << QByteArray("localhost:PORT") << QByteArray() << 200;
        QTest::newRow("certificate name") << QByteArray("tether.test:PORT") << QByteArray() << 200;
        QTest::newRow("certificate name, other case") << QByteArray("Tether.TEST:PORT") << QByteArray() << 200;
        QTest::newRow("certificate wildcard") << QByteArray("a.wild.test:PORT") << QByteArray() << 200;
        QTest::newRow("wildcard is not the bare domain") << QByteArray("wild.test:PORT") << QByteArray() << 403;
        QTest::newRow("wildcard is one label") << QByteArray("a.b.wild.test:PORT") << QByteArray() << 403;
        QTest::newRow("certificate name, other port") << QByteArray("tether.test:1") << QByteArray() << 403;
        QTest::newRow("allow-host") << QByteArray("box.lan:PORT") << QByteArray() << 200;
        QTest::newRow("allow-host, other port") << QByteArray("box.lan:1") << QByteArray() << 403;
        QTest::newRow("allow-host wildcard") << QByteArray("x.corp.test:PORT") << QByteArray() << 200;
        QTest::newRow("allow-host with port, no port (443)") << QByteArray("proxy.lan") << QByteArray() << 200;
        QTest::newRow("allow-host with port, that port") << QByteArray("proxy.lan:443") << QByteArray() << 200;
        QTest::newRow("allow-host with port, ours") << QByteArray("proxy.lan:PORT") << QByteArray() << 403;
        QTest::newRow("unknown name (DNS rebinding)") << QByteArray("evil.test:PORT") << QByteArray() << 403;
        QTest::newRow("origin https, same host") << QByteArray("tether.test:PORT") << QByteArray("https://tether.test:PORT") << 200;
        QTest::newRow("origin http, same host: not this server's scheme") << QByteArray("tether.test:PORT") << QByteArray("http://tether.test:PORT") << 403;
        QTest::newRow("origin http of an allowed name (a proxy may end TLS)") << QByteArray("box.lan:PORT") << QByteArray("http://box.lan:PORT") << 200;
        QTest::newRow("origin of a proxy") << QByteArray("proxy.lan") << QByteArray("https://proxy.lan") << 200;
        QTest::newRow("origin elsewhere") << QByteArray("tether.test:PORT") << QByteArray("https://evil.test") << 403;
        QTest::newRow("origin of another allowed name") << QByteArray("tether.test:PORT") << QByteArray("https://box.lan:PORT") << 403;
        QTest::newRow("origin null") << QByteArray("tether.test:PORT") << QByteArray("null") << 403;
    }
    void hostAndOrigin()
    {
        QFETCH(QByteArray, hostHeader);
        QFETCH(QByteArray, origin);
        QFETCH(int, status);
        QVERIFY(startTls([](HostConfig &c) {
            c.allowHosts = QStringList{QStringLiteral("box.lan"), QStringLiteral("*.corp.test"), QStringLiteral("proxy.lan:443")};
        }));
        Headers extra;
        if (!origin.isEmpty())
            extra.append(qMakePair(QByteArray("Origin"), withPort(origin, m_f.port)));
        const TlsReply r = get("/api/sessions", withPort(hostHeader, m_f.port), extra);
        QVERIFY(r.encrypted);
        QCOMPARE(r.http.status, status);
    }

    void allowHostWithoutTls()
    {
        // A reverse proxy on this machine (loopback bind) that forwards a name.
        QVERIFY(m_f.start(Limits(), [](HostConfig &c) { c.allowHosts = QStringList{QStringLiteral("box.lan")}; }));
        // Behind a TLS-terminating proxy the page is https://box.lan:...
        QCOMPARE(rawHttp(m_f.port, "GET /api/sessions HTTP/1.1\r\nHost: box.lan:" + QByteArray::number(m_f.port)
                                      + "\r\nOrigin: https://box.lan:" + QByteArray::number(m_f.port)
                                      + "\r\nAuthorization: Bearer " + m_f.key + "\r\n\r\n").status, 200);
        QCOMPARE(rawHttp(m_f.port, "GET /api/sessions HTTP/1.1\r\nHost: box.lan:" + QByteArray::number(m_f.port)
                                      + "\r\nAuthorization: Bearer " + m_f.key + "\r\n\r\n").status, 200);
        QCOMPARE(rawHttp(m_f.port, "GET /api/sessions HTTP/1.1\r\nHost: evil.lan:" + QByteArray::number(m_f.port)
                                      + "\r\nAuthorization: Bearer " + m_f.key + "\r\n\r\n").status, 403);
        QCOMPARE(rawHttp(m_f.port, "GET /api/sessions HTTP/1.1\r\nHost: box.lan:1\r\nAuthorization: Bearer " + m_f.key
                                      + "\r\n\r\n").status, 403);
    }

    // --- cookie and dashboard ------------------------------------------------------
    void cookieIsSecureUnderTls()
    {
        QVERIFY(startTls());
        const TlsReply r = get("/?key=" + m_f.key, host(), Headers(), false);
        QCOMPARE(r.http.status, 303);
        const QByteArray cookie = r.http.header("Set-Cookie");
        QVERIFY2(cookie.startsWith("tether_key=" + m_f.key + ";"), cookie.constData());
        QVERIFY2(cookie.split(';').contains(" Secure"), cookie.constData());
        QVERIFY2(cookie.contains("HttpOnly") && cookie.contains("SameSite=Strict"), cookie.constData());
        // The cookie works over TLS.
        const TlsReply api = get("/api/sessions", host(), {qMakePair(QByteArray("Cookie"), "tether_key=" + m_f.key)}, false);
        QCOMPARE(api.http.status, 200);
        // Without TLS there is no Secure (a browser would drop the cookie on http://).
        m_f.stop();
        QVERIFY(m_f.start());
        const HttpReply plain = m_f.http("GET", "/?key=" + m_f.key, QByteArray(), Headers(), false);
        QCOMPARE(plain.status, 303);
        QVERIFY2(!plain.header("Set-Cookie").contains("Secure"), plain.header("Set-Cookie").constData());
    }

    void dashboardMayConnectWss()
    {
        QVERIFY(startTls());
        const TlsReply r = get("/", host(), Headers(), false);
        QCOMPARE(r.http.status, 200);
        QVERIFY2(r.http.header("Content-Security-Policy").contains("connect-src 'self' wss://" + host() + ";"),
                 r.http.header("Content-Security-Policy").constData());
    }

    // --- wss:// --------------------------------------------------------------------
    void wssAttachAndResume()
    {
        QVERIFY(startTls());
        Session *session = m_f.spawn({QStringLiteral("/bin/sh"), QStringLiteral("-c"),
                                      QStringLiteral("while :; do echo tick; sleep 0.05; done")});
        QVERIFY(session);
        auto open = [&](WsClient &c, const QString &query) {
            c.ws.setSslConfiguration(clientTls(m_cert.cert));
            QNetworkRequest req(QUrl(QStringLiteral("wss://localhost:%1/ws/%2%3").arg(m_f.port).arg(session->id(), query)));
            req.setRawHeader("Authorization", "Bearer " + m_f.key);
            c.ws.open(req);
        };
        qint64 offset = 0;
        {
            WsClient first;
            open(first, QString());
            QTRY_VERIFY(first.gotAttached());
            QTRY_VERIFY(first.stream().count("tick\r\n") >= 3);
            offset = first.num("replay_from") + first.stream().size();
        }
        // Output while nobody is attached, then a resume over wss://.
        QTRY_VERIFY(qint64(session->offset()) > offset + 50);
        WsClient second;
        open(second, QStringLiteral("?resume=%1").arg(offset));
        QTRY_VERIFY(second.gotAttached());
        QCOMPARE(second.attachedMsg.value(QStringLiteral("reason")).toString(), QStringLiteral("resume"));
        QCOMPARE(second.num("replay_from"), offset);
        QVERIFY(second.num("replay_bytes") > 50);
        QTRY_VERIFY(second.stream().size() > second.num("replay_bytes"));
    }

    void controlViewerPausesAndResumesUnderTls()
    {
        // Under TLS the output queue that matters is the ciphertext in
        // QSslSocket's inner TCP socket: QSslSocket encrypts whatever it is
        // given at once, so its bytesToWrite() stays near 0. Counted that
        // way, a client that stopped reading never paused the session and
        // the server's memory grew without bound (pendingWriteBytes()).
        // When it reads again, the session resumes at once (not at the next
        // ping, 20 s later).
        QVERIFY(startTls());
        m_f.server->setFlowWatermarks(256 * 1024, 64 * 1024);
        Session *s = m_f.spawn({QStringLiteral("/bin/sh"), QStringLiteral("-c"), QStringLiteral("exec yes")});
        QVERIFY(s);
        RawWsOn<QSslSocket> raw;
        raw.sock.setSslConfiguration(clientTls(m_cert.cert));
        raw.sock.setPeerVerifyName(QStringLiteral("localhost"));
        raw.sock.setReadBufferSize(64 * 1024);
        QVERIFY(raw.handshake(m_f.port, "/ws/" + s->id().toLatin1(), m_f.key));
        raw.reading = false;
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
        raw.reading = true;
        raw.sock.setReadBufferSize(0);
        raw.pump();
        QElapsedTimer resumed;
        resumed.start();
        // Well before the 20 s ping: output flows again, by megabytes.
        QTRY_VERIFY_WITH_TIMEOUT(s->offset() > paused + 4 * 1024 * 1024, 10000);
        qInfo() << "resumed after" << resumed.elapsed() << "ms; paused at" << paused;
        QCOMPARE(s->viewerCount(), 1);
    }

    void watcherReplayLargerThanTheSocketBuffersUnderTls()
    {
        // A watcher may be behind by its whole replay. Under TLS the queue
        // is measured in ciphertext (pendingWriteBytes()), so the allowance
        // must count down with the ciphertext sent too (QWebSocket's
        // bytesWritten is QSslSocket's encryptedBytesWritten), not with the
        // plaintext encrypted, all of it at once: else a watcher that did
        // not read its 16 MB replay fast enough was closed 1013 in its middle.
        Limits limits;
        limits.bufferCapacity = 32 * 1024 * 1024;
        QVERIFY(m_f.start(limits, [&](HostConfig &c) {
            c.tlsCert = m_cert.cert;
            c.tlsKey = m_cert.key;
        }));
        m_f.server->setFlowWatermarks(256 * 1024, 64 * 1024);
        const int lines = 2000000; // ~15 MB
        Session *s = m_f.spawn({QStringLiteral("/bin/sh"), QStringLiteral("-c"),
                                QStringLiteral("seq 1 %1; exec sleep 60").arg(lines)});
        QVERIFY(s);
        const QByteArray last = "\r\n" + QByteArray::number(lines) + "\r\n";
        quint64 total = 0; // "1\r\n" .. "2000000\r\n"
        for (int i = 1; i <= lines; ++i)
            total += QByteArray::number(i).size() + 2;
        // All of it retained, and no more output: the replay is all there is.
        QTRY_COMPARE_WITH_TIMEOUT(s->offset(), total, 30000);
        QCOMPARE(s->buffer().startOffset(), quint64(0));

        RawWsOn<QSslSocket> raw;
        raw.sock.setSslConfiguration(clientTls(m_cert.cert));
        raw.sock.setPeerVerifyName(QStringLiteral("localhost"));
        raw.sock.setReadBufferSize(64 * 1024);
        QVERIFY(raw.handshake(m_f.port, "/ws/" + s->id().toLatin1() + "?mode=watch", m_f.key));
        // The client stops reading until the kernel's buffers are full and
        // the rest waits in the server: a state, waited for (not a duration).
        // Then the server's end holds bytes the client's window does not take
        // (SIOCOUTQ: unsent or unacknowledged; on loopback an acknowledgement
        // is immediate) and the client's end holds bytes nobody has read
        // (FIONREAD).
        raw.reading = false;
        const QList<int> serverEnd = tcpSocketFds(m_f.port, raw.sock.localPort());
        QCOMPARE(serverEnd.size(), 1);
        const int clientEnd = int(raw.sock.socketDescriptor());
        auto queue = [](int fd, unsigned long request) {
            int n = 0;
            return ::ioctl(fd, request, &n) == 0 ? n : -1;
        };
        QTRY_VERIFY_WITH_TIMEOUT(queue(serverEnd.first(), SIOCOUTQ) > 0 && queue(clientEnd, FIONREAD) > 0, 15000);
        qInfo() << "paused: server end" << queue(serverEnd.first(), SIOCOUTQ) << "bytes unsent, client end"
                << queue(clientEnd, FIONREAD) << "unread";
        raw.reading = true;
        raw.sock.setReadBufferSize(0);
        QByteArray stream;
        bool closed = false;
        auto drain = [&]() {
            raw.pump();
            RawWsOn<QSslSocket>::Frame fr;
            while (raw.nextFrame(&fr)) {
                if (fr.opcode == 0x2 || fr.opcode == 0x0)
                    stream += fr.payload;
                else if (fr.opcode == 0x8) {
                    closed = true;
                    qWarning() << "close frame" << fr.payload.mid(2) << "after" << stream.size() << "of" << total;
                }
            }
            return closed || quint64(stream.size()) >= total;
        };
        QTRY_VERIFY_WITH_TIMEOUT(drain(), 30000);
        QVERIFY2(!closed, "the watcher was closed during its replay");
        QVERIFY(stream.endsWith(last));
    }

    // --- reloading -------------------------------------------------------------------
    void changedFilesAreReloadedAndABadPairKeepsTheOld()
    {
        QTemporaryDir live;
        const TestCert cur{live.path() + QStringLiteral("/cert.pem"), live.path() + QStringLiteral("/key.pem")};
        QVERIFY(QFile::copy(m_cert.cert, cur.cert) && QFile::copy(m_cert.key, cur.key));
        QVERIFY(startTls({}, &cur));
        QCOMPARE(sha256Of(get("/", host()).peer), sha256OfFile(m_cert.cert));
        const TlsReply before = get("/api/sessions", host());
        QCOMPARE(before.http.status, 200);

        // Renewed: both files replaced (a key first, then its certificate).
        QVERIFY(replaceFile(m_other.key, cur.key));
        QVERIFY(replaceFile(m_other.cert, cur.cert));
        QTRY_COMPARE_WITH_TIMEOUT(sha256Of(httpsExchange(m_f.port, QByteArray(), m_cert.cert).peer),
                                  sha256OfFile(m_other.cert), 10000);

        // A broken key: the pair in use stays, and serves.
        {
            QFile f(cur.key + QStringLiteral(".new"));
            QVERIFY(f.open(QIODevice::WriteOnly));
            f.write("-----BEGIN PRIVATE KEY-----\nbroken\n-----END PRIVATE KEY-----\n");
        }
        ServerLog log; // from here: the renewal above is over (its reload may have failed half-way)
        QVERIFY(::rename(QFile::encodeName(cur.key + QStringLiteral(".new")).constData(), QFile::encodeName(cur.key).constData()) == 0);
        // The watcher's reload happens (and fails, saying so), then what is
        // served is checked: waited for, not a fixed time.
        QTRY_VERIFY_WITH_TIMEOUT(!ServerLog::containing(QStringLiteral("TLS certificate not reloaded")).isEmpty(), 10000);
        QVERIFY(!m_f.server->reloadTls()); // ...as a direct reload does
        const TlsReply after = httpsExchange(m_f.port, "GET /api/sessions HTTP/1.1\r\nHost: " + host()
                                                          + "\r\nAuthorization: Bearer " + m_f.key + "\r\n\r\n",
                                             m_other.cert);
        QVERIFY(after.errors.isEmpty());
        QCOMPARE(sha256Of(after.peer), sha256OfFile(m_other.cert));
        QCOMPARE(after.http.status, 200);
    }
};

QTEST_GUILESS_MAIN(TestServerTls)
#include "tst_server_tls.moc"
