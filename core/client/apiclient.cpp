// SPDX-License-Identifier: GPL-2.0-or-later
#include "apiclient.h"
#include "loopback.h"

#include <memory>
#include "runtimefile.h"
#include "attachinfo.h"

#include <QCryptographicHash>
#include <QFile>
#include <QJsonDocument>
#include <QNetworkAccessManager>
#include <QNetworkProxy>
#include <QNetworkReply>
#include <QNetworkRequest>
#include <QUrlQuery>

#include <memory>

namespace Tether {

bool ServerEndpoint::resolve(const QString &url, const QString &key, ServerEndpoint *out, QString *error,
                             const QString &caCertFile)
{
    QString u = url.isEmpty() ? qEnvironmentVariable("TETHER_URL") : url;
    QString k = key.isEmpty() ? qEnvironmentVariable("TETHER_KEY") : key;
    QByteArray pin;
    QUrl publicUrl;
    // An https:// URL given by name (TETHER_URL as the desktop app sets it
    // for the terminal it opens) that is the runtime file's own gets the
    // same trust as taking it from there.
    const bool https = u.startsWith(QLatin1String("https://"), Qt::CaseInsensitive);
    if (u.isEmpty() || k.isEmpty() || https) {
        const QJsonObject rt = RuntimeFile::read();
        const QString rtUrl = rt.value(QStringLiteral("url")).toString();
        if (u.isEmpty() || u == rtUrl) {
            u = rtUrl;
            pin = rt.value(QStringLiteral("cert_sha256")).toString().toLatin1().toLower();
            publicUrl = QUrl(rt.value(QStringLiteral("public_url")).toString(), QUrl::StrictMode);
        }
        if (k.isEmpty())
            k = rt.value(QStringLiteral("key")).toString();
    }
    if (u.isEmpty() || k.isEmpty()) {
        if (error)
            *error = QStringLiteral("no server address or key (%1 is missing or unreadable)").arg(RuntimeFile::path());
        return false;
    }
    QUrl parsed(u, QUrl::StrictMode);
    if (!parsed.isValid() || parsed.host().isEmpty()
        || (parsed.scheme() != QLatin1String("http") && parsed.scheme() != QLatin1String("https"))) {
        if (error)
            *error = QStringLiteral("not an http:// URL: %1").arg(u);
        return false;
    }
    const QString caFile = caCertFile.isEmpty() ? qEnvironmentVariable("TETHER_CACERT") : caCertFile;
    QList<QSslCertificate> cas;
    if (!caFile.isEmpty()) {
        QFile f(caFile);
        if (f.open(QIODevice::ReadOnly))
            cas = QSslCertificate::fromData(f.read(1024 * 1024), QSsl::Pem);
        if (cas.isEmpty()) {
            if (error)
                *error = QStringLiteral("cannot read the CA certificates %1: %2")
                             .arg(caFile, f.error() == QFileDevice::NoError ? QStringLiteral("no PEM certificate in it")
                                                                            : f.errorString());
            return false;
        }
    }
    // The base is the server's root; a URL pasted from the key link carries
    // ?key=... and perhaps #/s/ID: drop them (the key never goes in a URL).
    parsed.setPath(QStringLiteral("/"));
    parsed.setQuery(QString());
    parsed.setFragment(QString());
    out->url = parsed;
    out->key = k;
    out->caCertificates = cas;
    out->pinnedSha256 = pin;
    out->publicUrl = publicUrl.isValid() ? publicUrl : QUrl();
    return true;
}

QSslConfiguration ServerEndpoint::sslConfiguration() const
{
    QSslConfiguration c = QSslConfiguration::defaultConfiguration();
    c.setProtocol(QSsl::TlsV1_2OrLater);
    if (!caCertificates.isEmpty())
        c.addCaCertificates(caCertificates);
    return c;
}

bool ServerEndpoint::isPinned(const QSslCertificate &peer) const
{
    return !pinnedSha256.isEmpty() && !peer.isNull()
        && QCryptographicHash::hash(peer.toDer(), QCryptographicHash::Sha256).toHex() == pinnedSha256;
}

QUrl ServerEndpoint::resolved(const QString &path) const
{
    QUrl u = url;
    u.setPath(QLatin1Char('/') + (path.startsWith(QLatin1Char('/')) ? path.mid(1) : path));
    return u;
}

QUrl ServerEndpoint::webSocketUrl(const QString &id, ViewerMode mode, qint64 resume) const
{
    QUrl u = resolved(QStringLiteral("ws/") + id);
    u.setScheme(url.scheme() == QLatin1String("https") ? QStringLiteral("wss") : QStringLiteral("ws"));
    QUrlQuery q;
    q.addQueryItem(QStringLiteral("mode"), mode == ViewerMode::Watch ? QStringLiteral("watch") : QStringLiteral("control"));
    if (resume >= 0)
        q.addQueryItem(QStringLiteral("resume"), QString::number(resume));
    u.setQuery(q);
    return u;
}

bool ServerEndpoint::isLoopback() const
{
    return isLoopbackHost(url.host());
}

QJsonObject ApiReply::json() const
{
    return QJsonDocument::fromJson(body).object();
}

QString ApiReply::errorText() const
{
    const QString text = json().value(QStringLiteral("error")).toString();
    if (!text.isEmpty())
        return text;
    if (!networkError.isEmpty())
        return networkError;
    return QStringLiteral("HTTP %1").arg(status);
}

ApiClient::ApiClient(const ServerEndpoint &endpoint, QObject *parent)
    : QObject(parent)
    , m_endpoint(endpoint)
    , m_nam(new QNetworkAccessManager(this))
{
    if (m_endpoint.isLoopback())
        m_nam->setProxy(QNetworkProxy::NoProxy);
    // The local server's own certificate (runtime file), whatever it names.
    connect(m_nam, &QNetworkAccessManager::sslErrors, this, [this](QNetworkReply *reply, const QList<QSslError> &) {
        if (m_endpoint.isPinned(reply->sslConfiguration().peerCertificate()))
            reply->ignoreSslErrors();
    });
}

ApiClient::~ApiClient() = default;

namespace {
QNetworkRequest makeRequest(const ServerEndpoint &ep, const QString &path, int timeoutMs)
{
    QNetworkRequest req(ep.resolved(path));
    req.setRawHeader("Authorization", "Bearer " + ep.key.toUtf8());
    req.setRawHeader("Accept", "application/json");
    req.setAttribute(QNetworkRequest::RedirectPolicyAttribute, QNetworkRequest::ManualRedirectPolicy);
    req.setTransferTimeout(timeoutMs);
    if (ep.url.scheme() == QLatin1String("https"))
        req.setSslConfiguration(ep.sslConfiguration());
    return req;
}
} // namespace

void ApiClient::get(const QString &path, Callback done)
{
    track(m_nam->get(makeRequest(m_endpoint, path, m_timeoutMs)), std::move(done));
}

void ApiClient::post(const QString &path, const QByteArray &json, Callback done)
{
    QNetworkRequest req = makeRequest(m_endpoint, path, m_timeoutMs);
    req.setHeader(QNetworkRequest::ContentTypeHeader, QByteArrayLiteral("application/json"));
    track(m_nam->post(req, json), std::move(done));
}

void ApiClient::patch(const QString &path, const QByteArray &json, Callback done)
{
    QNetworkRequest req = makeRequest(m_endpoint, path, m_timeoutMs);
    req.setHeader(QNetworkRequest::ContentTypeHeader, QByteArrayLiteral("application/json"));
    track(m_nam->sendCustomRequest(req, QByteArrayLiteral("PATCH"), json), std::move(done));
}

void ApiClient::deleteResource(const QString &path, Callback done)
{
    track(m_nam->deleteResource(makeRequest(m_endpoint, path, m_timeoutMs)), std::move(done));
}

QNetworkReply *ApiClient::openStream(const QString &path)
{
    QNetworkRequest req = makeRequest(m_endpoint, path, 0);
    req.setRawHeader("Accept", "text/event-stream");
    req.setTransferTimeout(0); // open for as long as the server serves
    return m_nam->get(req);
}

void ApiClient::stream(const QString &path, EventCallback onEvent, Callback done)
{
    QNetworkRequest req = makeRequest(m_endpoint, path, 60000);
    req.setRawHeader("Accept", "text/event-stream");
    QNetworkReply *reply = m_nam->get(req);
    auto buffer = std::make_shared<QByteArray>();
    connect(reply, &QNetworkReply::readyRead, this, [reply, buffer, onEvent = std::move(onEvent)]() {
        if (reply->attribute(QNetworkRequest::HttpStatusCodeAttribute).toInt() != 200)
            return; // the error body is read at the end
        buffer->append(reply->readAll());
        takeEvents(buffer.get(), [&onEvent](const QByteArray &event, const QByteArray &data) {
            if (!data.isEmpty() && onEvent)
                onEvent(event, data);
            return true;
        });
    });
    track(reply, std::move(done));
}

void ApiClient::takeEvents(QByteArray *buffer,
                           const std::function<bool(const QByteArray &event, const QByteArray &data)> &onEvent)
{
    for (;;) {
        qsizetype end = buffer->indexOf("\n\n");
        qsizetype sep = 2;
        const qsizetype crlf = buffer->indexOf("\r\n\r\n");
        if (crlf >= 0 && (end < 0 || crlf < end)) {
            end = crlf;
            sep = 4;
        }
        if (end < 0)
            return;
        const QByteArray block = buffer->left(end);
        buffer->remove(0, end + sep);
        QByteArray event = "message";
        QByteArray data;
        bool hasData = false;
        for (QByteArray line : block.split('\n')) {
            if (line.endsWith('\r'))
                line.chop(1);
            if (line.isEmpty() || line.startsWith(':'))
                continue; // a comment: the keepalive
            const qsizetype colon = line.indexOf(':');
            const QByteArray field = colon < 0 ? line : line.left(colon);
            QByteArray value = colon < 0 ? QByteArray() : line.mid(colon + 1);
            if (value.startsWith(' '))
                value.remove(0, 1);
            if (field == "event") {
                event = value;
            } else if (field == "data") {
                if (hasData)
                    data += '\n';
                data += value;
                hasData = true;
            }
        }
        if (hasData && !onEvent(event, data))
            return;
    }
}

void ApiClient::track(QNetworkReply *reply, Callback done)
{
    connect(reply, &QNetworkReply::finished, this, [reply, done = std::move(done)]() {
        reply->deleteLater();
        ApiReply r;
        r.status = reply->attribute(QNetworkRequest::HttpStatusCodeAttribute).toInt();
        // A reply that timed out or was aborted is closed; reading it made
        // QIODevice print "device not open" (twice in a slow `tether
        // restart` that succeeded, issue 29).
        if (reply->isOpen())
            r.body = reply->readAll();
        if (r.status == 0) {
            r.connectionRefused = reply->error() == QNetworkReply::ConnectionRefusedError;
            r.networkError = reply->errorString();
            if (r.networkError.isEmpty())
                r.networkError = QStringLiteral("no answer");
            // A TLS server (or a TLS proxy) that hung up on a plain request
            // says only "Connection closed"; the likely cause is the scheme.
            // (A Tether server answers 400 "use https://" itself.)
            if (reply->error() == QNetworkReply::RemoteHostClosedError && reply->url().scheme() == QLatin1String("http")) {
                QUrl https = reply->url().adjusted(QUrl::RemovePath | QUrl::RemoveQuery | QUrl::RemoveFragment);
                https.setScheme(QStringLiteral("https"));
                r.networkError += QStringLiteral(" before any answer (is the server using TLS? try %1/)").arg(https.toString());
            }
        }
        if (done)
            done(r);
    });
}

} // namespace Tether
