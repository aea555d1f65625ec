// SPDX-License-Identifier: GPL-2.0-or-later
// `tether serve` with TLS and off loopback, as a real process (issue 10,
// "Remote use, safely"): what it prints and refuses, the local clients'
// trust in its certificate, and reloading the certificate on SIGHUP.
// Certificates come from the real `openssl` command; clients connect to
// 127.0.0.1 (the off-loopback test binds only a non-loopback address of
// this machine, when there is one).
#include "serveprocess.h"
#include "tlstestutil.h"

#include <QNetworkInterface>

#include <csignal>
#include <sys/stat.h>

using namespace ServerTest;

namespace {
QString firstLanAddress()
{
    for (const QHostAddress &a : QNetworkInterface::allAddresses())
        if (!a.isLoopback() && !a.isLinkLocal() && a.protocol() == QAbstractSocket::IPv4Protocol)
            return a.toString();
    return QString();
}

QJsonObject runtimeJson(const ServeProcess &s)
{
    return QJsonDocument::fromJson(readFile(s.runtimeFile())).object();
}
} // namespace

class TestServeTls : public QObject
{
    Q_OBJECT

    QTemporaryDir m_dir;
    TestCert m_cert;
    TestCert m_other;

private Q_SLOTS:
    void initTestCase()
    {
        if (tetherBinary().isEmpty())
            QSKIP("no tether binary in this build");
        if (!haveOpenssl())
            QSKIP("the openssl command is not installed (scripts/install-deps.sh installs it)");
        QVERIFY(makeCert(m_dir.path(), QStringLiteral("a"), QStringLiteral("tether.test"),
                         QStringLiteral("DNS:tether.test,DNS:localhost,IP:127.0.0.1"), &m_cert));
        QVERIFY(makeCert(m_dir.path(), QStringLiteral("b"), QStringLiteral("tether.test"),
                         QStringLiteral("DNS:tether.test,DNS:localhost,IP:127.0.0.1"), &m_other));
        QCOMPARE(::mkfifo(QFile::encodeName(fifo()).constData(), 0600), 0);
    }

    /// A FIFO (no writer ever comes): open(2) of it for reading blocked.
    QString fifo() const { return m_dir.path() + QStringLiteral("/fifo.pem"); }

    void wildcardBindWithoutTlsIsRefused()
    {
        // Refused before anything is bound: safe to try on any machine.
        ServeProcess s;
        QVERIFY(s.launch({QStringLiteral("--bind"), QStringLiteral("0.0.0.0"), QStringLiteral("--port"), QStringLiteral("0")}));
        QVERIFY(s.waitFinished());
        QCOMPARE(s.proc.exitCode(), 1);
        QVERIFY(s.out.isEmpty());
        QVERIFY2(s.err.contains("refusing to listen on 0.0.0.0 without TLS"), s.err.constData());
        QVERIFY2(s.err.contains("openssl req -x509"), s.err.constData());
        QVERIFY2(s.err.contains("ssh -L 7420:127.0.0.1:7420"), s.err.constData()); // --port 0: the default shown
        QVERIFY2(s.err.contains("--insecure-bind"), s.err.constData());
        QVERIFY(!QFile::exists(s.runtimeFile()));
    }

    void nonLoopbackBindNeedsTlsOrInsecureBind()
    {
        const QString lan = firstLanAddress();
        if (lan.isEmpty())
            QSKIP("this machine has no non-loopback IPv4 address (tst_server_tls bindPolicy covers the decision)");
        {
            ServeProcess s;
            QVERIFY(s.launch({QStringLiteral("--bind"), lan, QStringLiteral("--port"), QStringLiteral("0")}));
            QVERIFY(s.waitFinished());
            QCOMPARE(s.proc.exitCode(), 1);
            QVERIFY2(s.err.contains("refusing to listen on " + lan.toLatin1()), s.err.constData());
        }
        {
            // Allowed, with a warning, and the address a remote user opens.
            ServeProcess s;
            QVERIFY(s.launch({QStringLiteral("--bind"), lan, QStringLiteral("--port"), QStringLiteral("0"),
                              QStringLiteral("--insecure-bind")}));
            QTRY_VERIFY_WITH_TIMEOUT(s.out.contains('\n'), 15000);
            const QRegularExpressionMatch m =
                QRegularExpression(QStringLiteral("^Tether is serving http://%1:(\\d+)/\\?key=[A-Za-z0-9_-]{43}\\n$")
                                       .arg(QRegularExpression::escape(lan)))
                    .match(QString::fromLatin1(s.out));
            QVERIFY2(m.hasMatch(), s.out.constData());
            QVERIFY2(s.err.contains("warning: serving " + lan.toLatin1() + " without TLS (--insecure-bind)"), s.err.constData());
            // Local clients still find it (server.json names an address they reach).
            const TetherRun list = runTether(s, {QStringLiteral("list")});
            QVERIFY2(list.code == 0, list.err.constData());
            // `tether key` prints the same address as the server did.
            const TetherRun key = runTether(s, {QStringLiteral("key")});
            QVERIFY2(key.code == 0, key.err.constData());
            QCOMPARE(key.out, s.out.mid(int(qstrlen("Tether is serving "))));
        }
        {
            // With TLS: served, no warning, the certificate's name printed.
            ServeProcess s;
            QVERIFY(s.launch({QStringLiteral("--bind"), lan, QStringLiteral("--port"), QStringLiteral("0"),
                              QStringLiteral("--tls-cert"), m_cert.cert, QStringLiteral("--tls-key"), m_cert.key}));
            QTRY_VERIFY_WITH_TIMEOUT(s.out.contains('\n'), 15000);
            QVERIFY2(QRegularExpression(QStringLiteral("^Tether is serving https://tether\\.test:\\d+/\\?key="))
                         .match(QString::fromLatin1(s.out)).hasMatch(), s.out.constData());
            QVERIFY2(!s.err.contains("warning"), s.err.constData());
        }
    }

    void localClientsTrustTheServersOwnCertificate()
    {
        ServeProcess s;
        QVERIFY(s.start({QStringLiteral("--tls-cert"), m_cert.cert, QStringLiteral("--tls-key"), m_cert.key}));
        QVERIFY2(s.out.startsWith("Tether is serving https://127.0.0.1:"), s.out.constData());
        const QJsonObject rt = runtimeJson(s);
        QCOMPARE(rt.value(QStringLiteral("url")).toString(), QStringLiteral("https://127.0.0.1:%1/").arg(s.port));
        QCOMPARE(rt.value(QStringLiteral("cert_sha256")).toString().toLatin1(), sha256OfFile(m_cert.cert));
        // Through the runtime file: the pinned certificate, although it was
        // made for names and is issued by nobody the system trusts.
        const TetherRun created = runTether(s, {QStringLiteral("new"), QStringLiteral("--"), QStringLiteral("true")});
        QVERIFY2(created.code == 0, created.err.constData());
        const TetherRun list = runTether(s, {QStringLiteral("list")});
        QVERIFY2(list.code == 0, list.err.constData());
        QVERIFY(list.out.contains("true"));

        // Another URL: the certificate is checked as usual.
        const QString url = QStringLiteral("https://localhost:%1/").arg(s.port);
        const QStringList byUrl{QStringLiteral("list"), QStringLiteral("--url"), url, QStringLiteral("--key"),
                                QString::fromLatin1(s.key)};
        const TetherRun untrusted = runTether(s, byUrl);
        QCOMPARE(untrusted.code, 1);
        QVERIFY2(untrusted.err.contains("SSL") || untrusted.err.contains("certificate"), untrusted.err.constData());
        const TetherRun trusted = runTether(s, byUrl + QStringList{QStringLiteral("--cacert"), m_cert.cert});
        QVERIFY2(trusted.code == 0, trusted.err.constData());
        const TetherRun byEnv = runTether(s, byUrl, {QStringLiteral("TETHER_CACERT=") + m_cert.cert});
        QVERIFY2(byEnv.code == 0, byEnv.err.constData());
        const TetherRun missing = runTether(s, byUrl + QStringList{QStringLiteral("--cacert"), m_dir.path() + QStringLiteral("/none.pem")});
        QCOMPARE(missing.code, 1);
        QVERIFY2(missing.err.contains("cannot read the CA certificates"), missing.err.constData());
        // Plain http:// to the TLS port: the server's answer says to use
        // https:// (it said only "Connection closed"), and the server goes on.
        const TetherRun plain = runTether(s, {QStringLiteral("list"), QStringLiteral("--url"),
                                              QStringLiteral("http://127.0.0.1:%1/").arg(s.port), QStringLiteral("--key"),
                                              QString::fromLatin1(s.key)});
        QCOMPARE(plain.code, 1);
        QVERIFY2(plain.err.startsWith("tether list: the plain HTTP request was sent to an HTTPS port"), plain.err.constData());
        QVERIFY2(plain.err.contains("use https://"), plain.err.constData());
        QVERIFY(plain.out.isEmpty());
        QVERIFY2(runTether(s, {QStringLiteral("list")}).code == 0, "still serving");
    }

    void sighupReloadsTheCertificate()
    {
        // The certificate is reached through a symbolic link in a directory
        // Tether does not watch (as certbot's live/ links do): switching that
        // link changes nothing Tether is told about, so only the SIGHUP can
        // make it read the new pair.
        QTemporaryDir d;
        const QString live = d.path() + QStringLiteral("/live");
        const QString archive = d.path() + QStringLiteral("/archive");
        QVERIFY(QDir().mkpath(live) && QDir().mkpath(archive));
        QVERIFY(QFile::link(m_cert.cert, archive + QStringLiteral("/cert.pem")));
        QVERIFY(QFile::link(m_cert.key, archive + QStringLiteral("/key.pem")));
        QVERIFY(QFile::link(archive + QStringLiteral("/cert.pem"), live + QStringLiteral("/cert.pem")));
        QVERIFY(QFile::link(archive + QStringLiteral("/key.pem"), live + QStringLiteral("/key.pem")));
        ServeProcess s;
        QVERIFY(s.start({QStringLiteral("--tls-cert"), live + QStringLiteral("/cert.pem"), QStringLiteral("--tls-key"),
                         live + QStringLiteral("/key.pem")}));
        QCOMPARE(sha256Of(httpsExchange(s.port, QByteArray()).peer), sha256OfFile(m_cert.cert));

        // Renewed: the archive's links now name the other pair.
        for (const auto &[name, target] : {std::make_pair(QStringLiteral("cert.pem"), m_other.cert),
                                           std::make_pair(QStringLiteral("key.pem"), m_other.key)}) {
            const QString tmp = archive + QStringLiteral("/.new");
            QVERIFY(QFile::link(target, tmp));
            QVERIFY(::rename(QFile::encodeName(tmp).constData(), QFile::encodeName(archive + QLatin1Char('/') + name).constData()) == 0);
        }
        // A negative check (nothing happens by itself), after a positive sync
        // point (the exchange above: serving, its watches set): longer than
        // the watcher's quiet time (TlsContext::kReloadDelayMs, 300 ms).
        QTest::qWait(1000);
        QCOMPARE(sha256Of(httpsExchange(s.port, QByteArray()).peer), sha256OfFile(m_cert.cert));

        QVERIFY(::kill(s.proc.processId(), SIGHUP) == 0);
        QTRY_COMPARE_WITH_TIMEOUT(sha256Of(httpsExchange(s.port, QByteArray()).peer), sha256OfFile(m_other.cert), 10000);
        QCOMPARE(s.proc.state(), QProcess::Running); // reloaded, not ended
        QTRY_COMPARE(runtimeJson(s).value(QStringLiteral("cert_sha256")).toString().toLatin1(), sha256OfFile(m_other.cert));
        const TetherRun listed = runTether(s, {QStringLiteral("list")});
        QVERIFY2(listed.code == 0, qPrintable(QStringLiteral("local clients follow the new pin: ") + QString::fromUtf8(listed.err)));

        // A SIGHUP with a broken pair keeps the one in use.
        QVERIFY(QFile::remove(archive + QStringLiteral("/key.pem")));
        QVERIFY(::kill(s.proc.processId(), SIGHUP) == 0);
        // The server read the files again and said why it kept the pair (a
        // warning: the test's log rules keep warnings).
        QTRY_VERIFY_WITH_TIMEOUT(s.err.contains("TLS certificate not reloaded, the one in use is kept:"), 10000);
        QCOMPARE(s.proc.state(), QProcess::Running);
        const TlsReply r = httpsExchange(s.port, "GET /api/sessions HTTP/1.1\r\nHost: localhost:" + QByteArray::number(s.port)
                                                     + "\r\nAuthorization: Bearer " + s.key + "\r\n\r\n");
        QCOMPARE(sha256Of(r.peer), sha256OfFile(m_other.cert));
        QCOMPARE(r.http.status, 200);

        // Without TLS, SIGHUP still ends the server (as before).
        ServeProcess plain;
        QVERIFY(plain.start());
        QVERIFY(::kill(plain.proc.processId(), SIGHUP) == 0);
        QVERIFY(plain.waitFinished());
        QCOMPARE(plain.proc.exitCode(), 0);
    }

    /// `tether restart` while the certificate files cannot be used (the
    /// key removed, the certificate replaced by garbage): the new process
    /// image serves the pair the old one had loaded, handed over in the
    /// restart state, says so, and takes good files once they are back
    /// (issue 10; before, the restart could not serve TLS at all).
    void restartServesTheHandedOverPairWhenTheFilesAreBad()
    {
        QTemporaryDir d;
        const QString cert = d.path() + QStringLiteral("/cert.pem");
        const QString key = d.path() + QStringLiteral("/key.pem");
        QVERIFY(QFile::copy(m_cert.cert, cert) && QFile::copy(m_cert.key, key));
        ServeProcess s;
        QVERIFY2(s.start({QStringLiteral("--tls-cert"), cert, QStringLiteral("--tls-key"), key}), s.err.constData());
        const qint64 pid = s.proc.processId();
        const TetherRun created = runTether(s, {QStringLiteral("new"), QStringLiteral("--"), QStringLiteral("sleep"),
                                                QStringLiteral("600")});
        QVERIFY2(created.code == 0, created.err.constData());
        QCOMPARE(sha256Of(httpsExchange(s.port, QByteArray()).peer), sha256OfFile(m_cert.cert));

        QVERIFY(QFile::remove(key));
        {
            QFile garbage(cert);
            QVERIFY(garbage.open(QIODevice::WriteOnly | QIODevice::Truncate));
            garbage.write("this is not a certificate\n");
        }
        // The watch notices; the pair in use stays (as before).
        QTRY_VERIFY_WITH_TIMEOUT(s.err.contains("TLS certificate not reloaded, the one in use is kept"), 10000);

        const TetherRun restarted = runTether(s, {QStringLiteral("restart")});
        QVERIFY2(restarted.code == 0, (restarted.err + s.err).constData());
        QCOMPARE(s.proc.state(), QProcess::Running);
        QCOMPARE(s.proc.processId(), pid);
        QTRY_VERIFY_WITH_TIMEOUT(s.err.contains("restarted in place"), 10000);
        QVERIFY2(s.err.contains("serving the certificate the previous process image had loaded"), s.err.constData());
        QVERIFY2(s.err.contains("cannot read the TLS key " + QFile::encodeName(key)), s.err.constData());
        const QByteArray list = "GET /api/sessions HTTP/1.1\r\nHost: localhost:" + QByteArray::number(s.port)
            + "\r\nAuthorization: Bearer " + s.key + "\r\n\r\n";
        TlsReply r = httpsExchange(s.port, list);
        QCOMPARE(sha256Of(r.peer), sha256OfFile(m_cert.cert));
        QCOMPARE(r.http.status, 200);
        QVERIFY2(r.http.body.contains("sleep"), r.http.body.constData());
        QCOMPARE(runtimeJson(s).value(QStringLiteral("cert_sha256")).toString().toLatin1(), sha256OfFile(m_cert.cert));
        QVERIFY2(runTether(s, {QStringLiteral("list")}).code == 0, "local clients still trust it");

        // Good files again (another pair): the watch takes them.
        QVERIFY(QFile::copy(m_other.key, key));
        QVERIFY(QFile::remove(cert) && QFile::copy(m_other.cert, cert));
        QTRY_COMPARE_WITH_TIMEOUT(sha256Of(httpsExchange(s.port, QByteArray()).peer), sha256OfFile(m_other.cert), 10000);
        QTRY_COMPARE(runtimeJson(s).value(QStringLiteral("cert_sha256")).toString().toLatin1(), sha256OfFile(m_other.cert));
        r = httpsExchange(s.port, list);
        QCOMPARE(r.http.status, 200);

        // A second restart, files good: nothing handed over is needed.
        const qsizetype warnings = s.err.count("serving the certificate the previous process image had loaded");
        QVERIFY2(runTether(s, {QStringLiteral("restart")}).code == 0, s.err.constData());
        QTRY_COMPARE_WITH_TIMEOUT(s.err.count("restarted in place"), qsizetype(2), 10000);
        QCOMPARE(s.err.count("serving the certificate the previous process image had loaded"), warnings);
        QCOMPARE(sha256Of(httpsExchange(s.port, QByteArray()).peer), sha256OfFile(m_other.cert));
    }

    /// A certificate whose symbolic link is switched to a FIFO (issue 24):
    /// the watch's reload, a SIGHUP and a restart in place each opened it
    /// for reading, and open(2) blocked (no writer comes), the whole server
    /// with it: no request was answered again. Now it is refused as not a
    /// regular file: the pair in use stays and serves, and the restart
    /// serves the handed-over pair.
    void certificateSwitchedToAFifoBlocksNothing()
    {
        QTemporaryDir d;
        const QString cert = d.path() + QStringLiteral("/cert.pem");
        QVERIFY(QFile::link(m_cert.cert, cert));
        ServeProcess s;
        QVERIFY2(s.start({QStringLiteral("--tls-cert"), cert, QStringLiteral("--tls-key"), m_cert.key}), s.err.constData());
        const qint64 pid = s.proc.processId();
        const TetherRun created = runTether(s, {QStringLiteral("new"), QStringLiteral("--"), QStringLiteral("sleep"),
                                                QStringLiteral("600")});
        QVERIFY2(created.code == 0, created.err.constData());
        const QByteArray list = "GET /api/sessions HTTP/1.1\r\nHost: localhost:" + QByteArray::number(s.port)
            + "\r\nAuthorization: Bearer " + s.key + "\r\n\r\n";

        // The link now names the FIFO (replaced by a rename, as certbot
        // does): the directory's watch reloads.
        const QString tmp = d.path() + QStringLiteral("/.new");
        QVERIFY(QFile::link(fifo(), tmp));
        QCOMPARE(::rename(QFile::encodeName(tmp).constData(), QFile::encodeName(cert).constData()), 0);
        const QByteArray refused = "cannot read the TLS certificate " + QFile::encodeName(cert) + ": not a regular file";
        QTRY_VERIFY_WITH_TIMEOUT(s.err.contains(refused), 10000);
        TlsReply r = httpsExchange(s.port, list);
        QCOMPARE(sha256Of(r.peer), sha256OfFile(m_cert.cert));
        QCOMPARE(r.http.status, 200);

        // A SIGHUP reads it again: refused again, and the server answers.
        const qsizetype before = s.err.count(refused);
        QVERIFY(::kill(pid_t(pid), SIGHUP) == 0);
        QTRY_VERIFY_WITH_TIMEOUT(s.err.count(refused) > before, 10000);
        r = httpsExchange(s.port, list);
        QCOMPARE(r.http.status, 200);

        // A restart in place: the new image refuses the FIFO and serves the
        // pair the old one had loaded.
        const TetherRun restarted = runTether(s, {QStringLiteral("restart")});
        QVERIFY2(restarted.code == 0, (restarted.err + s.err).constData());
        QCOMPARE(s.proc.processId(), pid);
        QTRY_VERIFY_WITH_TIMEOUT(s.err.contains("restarted in place"), 10000);
        QVERIFY2(s.err.contains("serving the certificate the previous process image had loaded"), s.err.constData());
        r = httpsExchange(s.port, list);
        QCOMPARE(sha256Of(r.peer), sha256OfFile(m_cert.cert));
        QCOMPARE(r.http.status, 200);
        QVERIFY2(r.http.body.contains("sleep"), r.http.body.constData());
    }

    void badPairExitsWithAClearError_data()
    {
        QTest::addColumn<QString>("cert");
        QTest::addColumn<QString>("key");
        QTest::addColumn<QString>("error");
        const QString none = m_dir.path() + QStringLiteral("/none.pem");
        QTest::newRow("key of another certificate")
            << m_cert.cert << m_other.key << QStringLiteral("the TLS key %1 cannot serve the certificate %2").arg(m_other.key, m_cert.cert);
        QTest::newRow("certificate missing")
            << none << m_cert.key << QStringLiteral("cannot read the TLS certificate %1: ").arg(none);
        QTest::newRow("key missing") << m_cert.cert << none << QStringLiteral("cannot read the TLS key %1: ").arg(none);
        QTest::newRow("certificate not PEM")
            << m_cert.key << m_cert.key << QStringLiteral("the TLS certificate %1 holds no PEM certificate").arg(m_cert.key);
        QTest::newRow("key not PEM")
            << m_cert.cert << m_cert.cert << QStringLiteral("the TLS key %1 holds no unencrypted PEM private key").arg(m_cert.cert);
        QTest::newRow("only the certificate") << m_cert.cert << QString() << QStringLiteral("TLS needs both a certificate and a key");
        // It hung in open(2), serving nothing and never exiting.
        QTest::newRow("certificate is a FIFO")
            << fifo() << m_cert.key << QStringLiteral("cannot read the TLS certificate %1: not a regular file").arg(fifo());
    }

    void badPairExitsWithAClearError()
    {
        // A bad --tls-cert/--tls-key is a bad option value: exit 2 with the
        // file and the problem named, as README says of every bad value
        // (it exited 1, as for a port in use).
        QFETCH(QString, cert);
        QFETCH(QString, key);
        QFETCH(QString, error);
        QStringList args{QStringLiteral("--port"), QStringLiteral("0"), QStringLiteral("--tls-cert"), cert};
        if (!key.isEmpty())
            args << QStringLiteral("--tls-key") << key;
        ServeProcess s;
        QVERIFY(s.launch(args));
        QVERIFY(s.waitFinished());
        QCOMPARE(s.proc.exitCode(), 2);
        QVERIFY2(s.err.startsWith("tether serve: " + error.toUtf8()), s.err.constData());
        QVERIFY2(s.err.contains("(see tether serve --help)"), s.err.constData());
        QVERIFY(s.out.isEmpty());
        QVERIFY(!QFile::exists(s.runtimeFile()));
    }

    void portInUseStillExitsOne()
    {
        // Not a bad value: the machine's state. Exit 1, as before.
        QTcpServer taken;
        QVERIFY(taken.listen(QHostAddress::LocalHost));
        ServeProcess s;
        QVERIFY(s.launch({QStringLiteral("--port"), QString::number(taken.serverPort()), QStringLiteral("--tls-cert"),
                          m_cert.cert, QStringLiteral("--tls-key"), m_cert.key}));
        QVERIFY(s.waitFinished());
        QCOMPARE(s.proc.exitCode(), 1);
        QVERIFY2(s.err.contains("cannot listen on"), s.err.constData());
    }
};

QTEST_GUILESS_MAIN(TestServeTls)
#include "tst_serve_tls.moc"
