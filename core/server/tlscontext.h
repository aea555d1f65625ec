// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <QByteArray>
#include <QObject>
#include <QSslConfiguration>
#include <QStringList>
#include <QTimer>

class QFileSystemWatcher;

namespace Tether {

/**
 * The server's TLS certificate and private key (`--tls-cert`, `--tls-key`,
 * settings server/tlsCert and server/tlsKey), as the QSslConfiguration that
 * every accepted connection starts its handshake with (QSslSocket, Qt's
 * OpenSSL backend). TLS 1.2 or later only (QSsl::TlsV1_2OrLater; RFC 8996
 * deprecates TLS 1.0 and 1.1).
 *
 * A pair is checked when it is read, before it is used: the certificate
 * file holds at least one PEM certificate (the chain, leaf first), the key
 * file a PEM private key (RSA, EC or DSA, not encrypted), and the key
 * belongs to the leaf. That last check asks OpenSSL itself: a QSslSocket on
 * one end of a socketpair(2) starts a server handshake with the pair, which
 * builds the OpenSSL context (SSL_CTX_check_private_key) at once and
 * reports "Private key does not certify public key" synchronously; nothing
 * is sent and nothing waits.
 *
 * Reloading (reload(): SIGHUP, or a change of either file): the new pair is
 * read and checked the same way; when it is bad the old one stays in use
 * and the reason is logged. Connections already established keep the
 * certificate they were made with. Changes are noticed by inotify
 * (QFileSystemWatcher) on both files and their directories (an editor, or
 * certbot, replaces a file by renaming another over it, and certbot's live/
 * files are symbolic links that are replaced); a burst of changes is
 * reloaded once, kReloadDelayMs after the last, so that a certificate and a
 * key written one after the other are read together. An idle server costs
 * no wakeups.
 */
class TlsContext : public QObject
{
    Q_OBJECT
public:
    /// Quiet time after a change of the files before they are read, ms.
    static constexpr int kReloadDelayMs = 300;

    TlsContext(const QString &certFile, const QString &keyFile, QObject *parent = nullptr);
    ~TlsContext() override;

    /// Reads and checks the pair (class comment). Only regular files are
    /// read, opened with O_NONBLOCK: anything else (a FIFO, which would
    /// block open(2) and the whole server with it, a device, a directory)
    /// is refused, "cannot read the TLS certificate F: not a regular
    /// file". False with *error naming
    /// the file and what is wrong with it (e.g. "TLS key /k.pem does not
    /// belong to the certificate /c.pem: Private key does not certify
    /// public key"); the context is then unchanged.
    bool load(QString *error);
    /// load() from the files' contents instead of the files: the pair the
    /// previous process image had loaded, handed over by a restart in place
    /// (Handover::State::tlsCertificatePem), for when the files cannot be
    /// read or hold no good pair (issue 10). Checked as load() checks the
    /// files; the files stay the ones reload() and watchFiles() read, so the
    /// next SIGHUP or change of the files puts a good pair from them in use.
    /// False with *error; the context is then unchanged.
    bool loadPem(const QByteArray &certificatePem, const QByteArray &keyPem, QString *error);
    /// load(), logging the outcome; on failure the previous pair stays.
    /// A pair identical to the one in use is not logged.
    bool reload();
    /// Reload when either file (or its directory) changes.
    void watchFiles();

    bool isLoaded() const { return !m_certificatePem.isEmpty(); }
    QString certFile() const { return m_certFile; }
    QString keyFile() const { return m_keyFile; }
    /// The configuration for QSslSocket::setSslConfiguration before
    /// startServerEncryption().
    QSslConfiguration configuration() const { return m_configuration; }
    /// The leaf certificate's DNS names (subjectAltName, RFC 5280 §4.2.1.6),
    /// lower-case; may include wildcards ("*.example.org").
    QStringList dnsNames() const { return m_dnsNames; }
    /// SHA-256 of the leaf certificate (DER), lower-case hex: local clients
    /// pin it (server.json `cert_sha256`).
    QByteArray leafSha256() const { return m_leafSha256; }
    /// The certificate file's and the key file's bytes in use (PEM; empty
    /// before a load): what a restart in place hands over.
    QByteArray certificatePem() const { return m_certData; }
    QByteArray keyPem() const { return m_keyData; }

    /**
     * Parses a certificate file's and a key file's contents into `*out`
     * (TLS 1.2+, the chain, the key) and checks them (class comment);
     * `*dnsNames` gets the leaf's DNS names. `certFile` and `keyFile` only
     * name them in *error. False with *error.
     */
    static bool parsePair(const QByteArray &certData, const QByteArray &keyData, const QString &certFile,
                          const QString &keyFile, QSslConfiguration *out, QStringList *dnsNames, QString *error);

Q_SIGNALS:
    /// A new pair is in use (after reload()).
    void reloaded();

private:
    void onPathChanged();
    void use(const QSslConfiguration &config, const QStringList &dnsNames, const QByteArray &certData,
             const QByteArray &keyData);

    QString m_certFile;
    QString m_keyFile;
    QSslConfiguration m_configuration;
    QStringList m_dnsNames;
    QByteArray m_certificatePem; ///< m_certData + m_keyData: what "unchanged" compares
    QByteArray m_certData;
    QByteArray m_keyData;
    QByteArray m_leafSha256;
    QFileSystemWatcher *m_watcher = nullptr;
    QTimer m_reloadTimer; ///< single shot: coalesces a burst of changes
};

} // namespace Tether
