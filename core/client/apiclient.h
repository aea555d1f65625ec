// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <QByteArray>
#include <QJsonObject>
#include <QList>
#include <QObject>
#include <QSslCertificate>
#include <QSslConfiguration>
#include <QString>
#include <QUrl>

#include <functional>

class QNetworkAccessManager;
class QNetworkReply;

namespace Tether {

enum class ViewerMode;

/**
 * Where a Tether server is and how to authenticate to it (docs/protocol.md
 * section 1): its base URL ("http://127.0.0.1:7420/") and its access key.
 */
struct ServerEndpoint {
    QUrl url;    ///< base URL, path "/"
    QString key; ///< access key, sent as "Authorization: Bearer KEY"
    /// Extra certificate authorities for an https:// URL (`--cacert`,
    /// TETHER_CACERT): e.g. the server's self-signed certificate. The
    /// system's are trusted as well; the name in the URL must match the
    /// certificate as usual.
    QList<QSslCertificate> caCertificates;
    /// SHA-256 (lower-case hex, of the DER) of the one certificate trusted
    /// whatever its issuer and names: `cert_sha256` of the runtime file,
    /// for a URL taken from it or equal to its `url` (a local server reached
    /// by its loopback address, which its certificate does not name).
    /// Empty: none.
    QByteArray pinnedSha256;
    /// The address a user opens, when it is not `url`: `public_url` of the
    /// runtime file (a server bound off loopback). Empty: `url`.
    QUrl publicUrl;

    /**
     * Finds the server. Each of url and key is taken from the first that is
     * non-empty: the argument (`--url`, `--key`), the environment
     * (TETHER_URL, TETHER_KEY), the runtime file
     * ($XDG_RUNTIME_DIR/tether/server.json, RuntimeFile::read()).
     * False with *error when either is still missing (no runtime file:
     * Tether is not running) or the URL is not an absolute http(s) URL.
     */
    /// `caCertFile` (`--cacert`, else TETHER_CACERT): PEM certificates to
    /// trust (caCertificates); one that cannot be read or holds none is an
    /// error ("cannot read the CA certificates FILE").
    static bool resolve(const QString &url, const QString &key, ServerEndpoint *out, QString *error,
                        const QString &caCertFile = QString());

    /// The TLS configuration of a connection to `url`: the default one with
    /// caCertificates added, TLS 1.2 or later.
    QSslConfiguration sslConfiguration() const;
    /// True when `peer` is the pinned certificate (pinnedSha256): the
    /// caller then ignores the TLS errors of that connection.
    bool isPinned(const QSslCertificate &peer) const;

    /// url + path ("api/sessions"; a leading '/' is ignored).
    QUrl resolved(const QString &path) const;
    /// The WebSocket URL of session `id`: ws(s)://HOST:PORT/ws/ID?mode=...
    /// with `&resume=OFFSET` when `resume` >= 0 (section 5).
    QUrl webSocketUrl(const QString &id, ViewerMode mode, qint64 resume) const;
    /// True when the URL's host is a loopback name or address (then no proxy
    /// is used: an http_proxy setting must not route 127.0.0.1 elsewhere).
    bool isLoopback() const;
};

/// One REST answer (or the lack of one).
struct ApiReply {
    int status = 0;                 ///< HTTP status; 0 when no HTTP answer came
    QByteArray body;                ///< response body (JSON for the API)
    bool connectionRefused = false; ///< nothing listens there: the server is not running
    /// Why no answer came (empty when status != 0). A connection to an
    /// http:// URL closed before any answer adds a hint that the server may
    /// serve TLS ("try https://HOST:PORT/").
    QString networkError;

    /// The body parsed as a JSON object (empty when it is not one).
    QJsonObject json() const;
    /// For failures: the API's {"error": "..."} text, else the network error,
    /// else "HTTP <status>".
    QString errorText() const;
};

/**
 * Asynchronous client of the REST API (docs/protocol.md section 4) over
 * QNetworkAccessManager. Every request carries "Authorization: Bearer KEY"
 * and no Origin (the server then checks only Host and key). Requests time out
 * after timeoutMs (default 10000 ms) and then report networkError. Never
 * blocks; `done` runs on the event loop, exactly once per request, unless the
 * ApiClient is destroyed first.
 */
class ApiClient : public QObject
{
    Q_OBJECT
public:
    using Callback = std::function<void(const ApiReply &)>;

    explicit ApiClient(const ServerEndpoint &endpoint, QObject *parent = nullptr);
    ~ApiClient() override;

    const ServerEndpoint &endpoint() const { return m_endpoint; }
    void setTimeout(int msec) { m_timeoutMs = msec; }

    /// GET path (e.g. "api/sessions").
    void get(const QString &path, Callback done);
    /// POST path with a JSON body (Content-Type: application/json).
    void post(const QString &path, const QByteArray &json, Callback done);
    /// PATCH path with a JSON body (Content-Type: application/json).
    void patch(const QString &path, const QByteArray &json, Callback done);
    /// DELETE path.
    void deleteResource(const QString &path, Callback done);
    /**
     * GET path as a stream that stays open (`Accept: text/event-stream`, no
     * transfer timeout): the reply, owned by the caller (delete it to end
     * the stream), readable as data arrives (QIODevice::readyRead). For
     * `/api/events` (EventStream).
     */
    QNetworkReply *openStream(const QString &path);
    /// One Server-Sent Event (its `event:` name and its `data:` lines).
    using EventCallback = std::function<void(const QByteArray &event, const QByteArray &data)>;
    /// GET path as an event stream (e.g. "api/events", docs/protocol.md §4):
    /// `onEvent` for each event as it arrives, then `done` once when the
    /// stream ends (its status: 200 for a stream the server ended). No
    /// answer within timeoutMs, or 60 s without a byte (the server sends a
    /// keep-alive every 20 s), ends it with a network error.
    void stream(const QString &path, EventCallback onEvent, Callback done);

    /**
     * Takes every complete Server-Sent Event (HTML's "Server-sent events":
     * lines up to a blank line; the server writes LF, CRLF is tolerated) off
     * the front of `buffer` and calls `onEvent` with its `event` name
     * ("message" when none) and its `data` lines joined by LF, for each event
     * that has a `data` field; comment lines (`: keepalive`) and other fields
     * are skipped. An incomplete event stays in `buffer`. Stops early, leaving
     * the rest in `buffer`, when `onEvent` returns false. The one parser of
     * stream() and EventStream.
     */
    static void takeEvents(QByteArray *buffer,
                           const std::function<bool(const QByteArray &event, const QByteArray &data)> &onEvent);

private:
    void track(QNetworkReply *reply, Callback done);

    ServerEndpoint m_endpoint;
    QNetworkAccessManager *m_nam = nullptr;
    int m_timeoutMs = 10000;
};

} // namespace Tether
