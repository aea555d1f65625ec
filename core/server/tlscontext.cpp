// SPDX-License-Identifier: GPL-2.0-or-later
#include "tlscontext.h"
#include "regularfile.h"
#include "logging.h"

#include <QCryptographicHash>
#include <QFile>
#include <QFileInfo>
#include <QFileSystemWatcher>
#include <QSslCertificate>
#include <QSslKey>
#include <QSslSocket>

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

namespace Tether {

namespace {

/// A whole small regular file, or why not. Certificates and keys are a few
/// KiB: the bound only keeps a wrong path (a huge file) from hurting. The
/// file is opened with O_NONBLOCK and must be a regular file (fstat(2) of
/// what was opened, so a symbolic link switched meanwhile changes nothing):
/// a FIFO (or a symbolic link to one) blocked open(2) until a writer came,
/// and with it the whole server, at start, on reload and on a restart in
/// place; a device could block a read the same way. O_NONBLOCK changes
/// nothing for a regular file's reads.
bool readSmallFile(const QString &path, const char *what, QByteArray *out, QString *error)
{
    constexpr qint64 kMaxBytes = 1024 * 1024;
    QString why;
    if (!readRegularFile(path, kMaxBytes, Symlinks::Follow, out, &why)) {
        *error = QStringLiteral("cannot read the TLS %1 %2: %3").arg(QLatin1String(what), path, why);
        return false;
    }
    if (out->size() > kMaxBytes) {
        *error = QStringLiteral("the TLS %1 %2 is over 1 MiB: not a PEM file").arg(QLatin1String(what), path);
        return false;
    }
    return true;
}

/// Asks OpenSSL whether `config` can serve (the key certifies the leaf):
/// the server side of a handshake on a socketpair builds its context at
/// once. Empty when it can, else OpenSSL's reason.
QString probe(const QSslConfiguration &config)
{
    int sv[2];
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, sv) != 0)
        return QString(); // cannot check here; a bad pair then fails each handshake (logged)
    QString why;
    {
        QSslSocket socket;
        if (socket.setSocketDescriptor(sv[0])) {
            socket.setSslConfiguration(config);
            QObject::connect(&socket, &QAbstractSocket::errorOccurred, &socket, [&](QAbstractSocket::SocketError) {
                if (why.isEmpty()) // the first error names the cause; later ones only say "cannot init"
                    why = socket.errorString();
            });
            socket.startServerEncryption();
            socket.abort();
        } else {
            ::close(sv[0]);
        }
    }
    ::close(sv[1]);
    return why;
}

} // namespace

TlsContext::TlsContext(const QString &certFile, const QString &keyFile, QObject *parent)
    : QObject(parent)
    , m_certFile(certFile)
    , m_keyFile(keyFile)
{
    m_reloadTimer.setSingleShot(true);
    m_reloadTimer.setInterval(kReloadDelayMs);
    connect(&m_reloadTimer, &QTimer::timeout, this, [this]() {
        reload();
        if (m_watcher) // a file replaced by a rename left the watch: watch the new one
            m_watcher->addPaths(QStringList{m_certFile, m_keyFile});
    });
}

TlsContext::~TlsContext() = default;

bool TlsContext::parsePair(const QByteArray &certData, const QByteArray &keyData, const QString &certFile,
                           const QString &keyFile, QSslConfiguration *out, QStringList *dnsNames, QString *error)
{
    if (!QSslSocket::supportsSsl()) {
        *error = QStringLiteral("TLS is not available: Qt found no usable OpenSSL library (%1)")
                     .arg(QSslSocket::sslLibraryBuildVersionString());
        return false;
    }
    const QList<QSslCertificate> chain = QSslCertificate::fromData(certData, QSsl::Pem);
    if (chain.isEmpty() || chain.first().isNull()) {
        *error = QStringLiteral("the TLS certificate %1 holds no PEM certificate (-----BEGIN CERTIFICATE-----)").arg(certFile);
        return false;
    }
    QSslKey key;
    for (const QSsl::KeyAlgorithm algorithm : {QSsl::Rsa, QSsl::Ec, QSsl::Dsa}) {
        key = QSslKey(keyData, algorithm, QSsl::Pem, QSsl::PrivateKey);
        if (!key.isNull())
            break;
    }
    if (key.isNull()) {
        *error = QStringLiteral("the TLS key %1 holds no unencrypted PEM private key (RSA, EC or DSA)").arg(keyFile);
        return false;
    }
    QSslConfiguration config = QSslConfiguration::defaultConfiguration();
    config.setProtocol(QSsl::TlsV1_2OrLater);
    config.setLocalCertificateChain(chain);
    config.setPrivateKey(key);
    config.setPeerVerifyMode(QSslSocket::VerifyNone); // clients show the key, not a certificate
    const QString why = probe(config);
    if (!why.isEmpty()) {
        *error = QStringLiteral("the TLS key %1 cannot serve the certificate %2: %3").arg(keyFile, certFile, why);
        return false;
    }
    const QSslCertificate &leaf = chain.first();
    if (leaf.expiryDate().isValid() && leaf.expiryDate() < QDateTime::currentDateTimeUtc())
        qCWarning(lcServer).noquote() << "the TLS certificate" << certFile << "expired on"
                                      << leaf.expiryDate().toString(Qt::ISODate) << "- browsers will refuse it";
    // values() lists the most recently inserted first (Qt 5.15 and 6.4
    // QMultiMap): reversed, the certificate's own order.
    QStringList names;
    const QStringList dns = leaf.subjectAlternativeNames().values(QSsl::DnsEntry);
    for (auto it = dns.crbegin(); it != dns.crend(); ++it)
        if (!it->trimmed().isEmpty())
            names.append(it->trimmed().toLower());
    *out = config;
    *dnsNames = names;
    return true;
}

bool TlsContext::load(QString *error)
{
    QByteArray certData;
    QByteArray keyData;
    QSslConfiguration config;
    QStringList names;
    QString why;
    if (!readSmallFile(m_certFile, "certificate", &certData, &why) || !readSmallFile(m_keyFile, "key", &keyData, &why)
        || !parsePair(certData, keyData, m_certFile, m_keyFile, &config, &names, &why)) {
        if (error)
            *error = why;
        return false;
    }
    use(config, names, certData, keyData);
    return true;
}

bool TlsContext::loadPem(const QByteArray &certificatePem, const QByteArray &keyPem, QString *error)
{
    QSslConfiguration config;
    QStringList names;
    QString why;
    if (!parsePair(certificatePem, keyPem, m_certFile + QStringLiteral(" (as handed over)"),
                   m_keyFile + QStringLiteral(" (as handed over)"), &config, &names, &why)) {
        if (error)
            *error = why;
        return false;
    }
    use(config, names, certificatePem, keyPem);
    return true;
}

void TlsContext::use(const QSslConfiguration &config, const QStringList &dnsNames, const QByteArray &certData,
                     const QByteArray &keyData)
{
    m_configuration = config;
    m_dnsNames = dnsNames;
    m_certData = certData;
    m_keyData = keyData;
    m_certificatePem = certData + keyData;
    m_leafSha256 = QCryptographicHash::hash(config.localCertificate().toDer(), QCryptographicHash::Sha256).toHex();
}

bool TlsContext::reload()
{
    const QByteArray before = m_certificatePem;
    QString error;
    if (!load(&error)) {
        qCWarning(lcServer).noquote() << "TLS certificate not reloaded, the one in use is kept:" << error;
        return false;
    }
    if (m_certificatePem != before) {
        qCInfo(lcServer).noquote() << "TLS certificate reloaded from" << m_certFile << "(expires"
                                   << m_configuration.localCertificate().expiryDate().toString(Qt::ISODate) + ")";
        Q_EMIT reloaded();
    }
    return true;
}

void TlsContext::watchFiles()
{
    if (m_watcher)
        return;
    m_watcher = new QFileSystemWatcher(this);
    QStringList paths{m_certFile, m_keyFile};
    for (const QString &f : {m_certFile, m_keyFile}) {
        const QString dir = QFileInfo(f).absolutePath();
        if (!paths.contains(dir))
            paths.append(dir);
    }
    m_watcher->addPaths(paths);
    connect(m_watcher, &QFileSystemWatcher::fileChanged, this, &TlsContext::onPathChanged);
    connect(m_watcher, &QFileSystemWatcher::directoryChanged, this, &TlsContext::onPathChanged);
}

void TlsContext::onPathChanged()
{
    m_reloadTimer.start(); // restarts: read once the burst is over
}

} // namespace Tether
