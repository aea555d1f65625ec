// SPDX-License-Identifier: GPL-2.0-or-later
// TLS for the tests: certificates made with the real `openssl` command
// (scripts/install-deps.sh installs it), and HTTPS requests and handshakes
// from a QSslSocket on 127.0.0.1. Waits spin the event loop, never sleep, so
// an in-process server keeps serving meanwhile.
#pragma once

#include "servertestutil.h"

#include <QCryptographicHash>
#include <QProcess>
#include <QSslConfiguration>
#include <QSslSocket>
#include <QStandardPaths>

namespace ServerTest {

/// A certificate and its key, as PEM files.
struct TestCert {
    QString cert;
    QString key;
};

/// Runs `program args` to its end, spinning the event loop (an in-process
/// server keeps answering); false when it cannot start, fails or takes
/// over 30 s. Its stderr goes to *err.
inline bool runTool(const QString &program, const QStringList &args, QByteArray *err = nullptr)
{
    qRegisterMetaType<QProcess::ExitStatus>("QProcess::ExitStatus");
    QProcess p;
    QSignalSpy finished(&p, QOverload<int, QProcess::ExitStatus>::of(&QProcess::finished));
    p.start(program, args);
    if (!p.waitForStarted(5000))
        return false;
    p.closeWriteChannel(); // `openssl s_client` reads stdin until its end
    if (!finished.wait(30000) && p.state() != QProcess::NotRunning) {
        p.kill();
        p.waitForFinished(5000);
        return false;
    }
    if (err)
        *err = p.readAllStandardError();
    return p.exitStatus() == QProcess::NormalExit && p.exitCode() == 0;
}

/// A self-signed certificate (EC P-256, 2 days) for CN `cn` with the
/// subjectAltName `san` ("DNS:localhost,IP:127.0.0.1"), written to
/// DIR/STEM-cert.pem and DIR/STEM-key.pem with `openssl req -x509`.
inline bool makeCert(const QString &dir, const QString &stem, const QString &cn, const QString &san, TestCert *out)
{
    out->cert = dir + QLatin1Char('/') + stem + QStringLiteral("-cert.pem");
    out->key = dir + QLatin1Char('/') + stem + QStringLiteral("-key.pem");
    QByteArray err;
    const bool ok = runTool(QStringLiteral("openssl"),
                            {QStringLiteral("req"), QStringLiteral("-x509"), QStringLiteral("-newkey"), QStringLiteral("ec"),
                             QStringLiteral("-pkeyopt"), QStringLiteral("ec_paramgen_curve:P-256"), QStringLiteral("-nodes"),
                             QStringLiteral("-days"), QStringLiteral("2"), QStringLiteral("-subj"), QStringLiteral("/CN=") + cn,
                             QStringLiteral("-addext"), QStringLiteral("subjectAltName=") + san,
                             QStringLiteral("-keyout"), out->key, QStringLiteral("-out"), out->cert},
                            &err);
    if (!ok)
        qWarning() << "openssl req failed:" << err;
    return ok;
}

/// True when the `openssl` command exists (the tests that need it skip otherwise).
inline bool haveOpenssl()
{
    return !QStandardPaths::findExecutable(QStringLiteral("openssl")).isEmpty();
}

/// A client configuration trusting `caFile` (and the system's), TLS 1.2+.
inline QSslConfiguration clientTls(const QString &caFile)
{
    QSslConfiguration c = QSslConfiguration::defaultConfiguration();
    c.setProtocol(QSsl::TlsV1_2OrLater);
    if (!caFile.isEmpty())
        c.addCaCertificates(QSslCertificate::fromPath(caFile));
    return c;
}

/// The outcome of one HTTPS exchange.
struct TlsReply {
    bool encrypted = false;        ///< the handshake completed
    QList<QSslError> errors;       ///< what the client's verification found
    QSslCertificate peer;          ///< the server's certificate
    QSsl::SslProtocol protocol = QSsl::UnknownProtocol;
    HttpReply http;                ///< the answer (status 0: none)
};

/**
 * Connects to 127.0.0.1:`port` with TLS, checking the certificate against
 * `caFile` for the name `peerName` (errors are recorded, not fatal: the
 * exchange goes on), sends `request` (nothing when empty) and reads until
 * the server closes the connection.
 */
inline TlsReply httpsExchange(quint16 port, const QByteArray &request, const QString &caFile = QString(),
                              const QString &peerName = QStringLiteral("localhost"), int timeoutMs = 5000)
{
    TlsReply out;
    QSslSocket s;
    s.setSslConfiguration(clientTls(caFile));
    s.setPeerVerifyName(peerName);
    QByteArray buf;
    QObject::connect(&s, &QSslSocket::readyRead, [&]() { buf += s.readAll(); });
    QObject::connect(&s, QOverload<const QList<QSslError> &>::of(&QSslSocket::sslErrors),
                     [&](const QList<QSslError> &e) {
                         out.errors = e;
                         s.ignoreSslErrors();
                     });
    QSignalSpy encrypted(&s, &QSslSocket::encrypted);
    QSignalSpy disconnected(&s, &QSslSocket::disconnected);
    s.connectToHostEncrypted(QStringLiteral("127.0.0.1"), port);
    if (!encrypted.wait(timeoutMs))
        return out;
    out.encrypted = true;
    out.peer = s.peerCertificate();
    out.protocol = s.sessionProtocol();
    if (request.isEmpty())
        return out;
    s.write(request);
    const bool closed = disconnected.count() > 0 || disconnected.wait(timeoutMs);
    buf += s.readAll();
    out.http = parseReply(buf);
    out.http.closed = closed;
    return out;
}

/// Lower-case hex SHA-256 of a certificate's DER (as server.json's cert_sha256).
inline QByteArray sha256Of(const QSslCertificate &c)
{
    return QCryptographicHash::hash(c.toDer(), QCryptographicHash::Sha256).toHex();
}

/// The same of the first certificate in the PEM file `path`.
inline QByteArray sha256OfFile(const QString &path)
{
    const auto certs = QSslCertificate::fromPath(path);
    return certs.isEmpty() ? QByteArray() : sha256Of(certs.first());
}

} // namespace ServerTest
