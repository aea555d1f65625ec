// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include "hostconfig.h"
#include "websocketviewer.h"

#include <QDateTime>
#include <QElapsedTimer>
#include <QHash>
#include <QHostAddress>
#include <QJsonObject>
#include <QObject>
#include <QPointer>
#include <QSet>
#include <QTimer>

#include <functional>

class QTcpServer;
class QTcpSocket;
class QWebSocketServer;

namespace Tether {

class Acceptor;
class HttpConnection;
class HttpRequest;
struct Route;
class TlsContext;
class SessionRegistry;
class ShareStore;
class SessionRecordStore;
struct SessionRecord;

/**
 * Tether's one TCP port: the dashboard (static files from Qt resources under
 * :/dashboard/), the REST API (/api/...), the session list event stream
 * (/api/events) and the WebSocket attach endpoint (/ws/{id}). The contract is
 * docs/protocol.md; this class implements it.
 *
 * Each connection is read by HttpConnection (libhttp-parser, bounded head and
 * body, slow-loris timeout). Host, Origin and the access key are checked
 * before anything else, and for WebSocket upgrades before the upgrade, so a
 * refused handshake is a plain HTTP 401/403 (DNS rebinding: the Host check;
 * cross-site WebSocket hijacking: the Origin check, jupyter/notebook#432,
 * cockpit-project/cockpit#496). Accepted upgrades go, with their head still unread, to a
 * QWebSocketServer (NonSecureMode) through handleConnection(); each upgraded
 * socket becomes a WebSocketViewer.
 *
 * Connection pressure: at most kMaxHttpConnections HTTP connections are in
 * progress. Every peer is 127.0.0.1, so a per-peer bound cannot tell a local
 * process without the key from the dashboard; such a process could hold
 * every slot with idle sockets and lock every new request out for the whole
 * request timeout, over and over. So when a connection arrives at the bound,
 * the oldest connection that holds a slot without having shown the key is
 * closed (reset) to make room: first the oldest whose request head is still
 * incomplete (idle, slow loris), else the oldest other one whose request did
 * not pass the key check (e.g. a static file answer its client does not
 * read). A real request needs its slot for milliseconds, so the oldest is
 * the attacker's. Connections that passed the key check are never evicted;
 * only when all slots are held by them is the new connection refused
 * (closed at once). docs/protocol.md, "Limits".
 *
 * Out of file descriptors: connections are accepted by an Acceptor, not by
 * QTcpServer's loop (which spun at 100 % CPU on EMFILE); while the process
 * is out of descriptors, new connections are closed unanswered and
 * accepting pauses 250 ms at a time. A session that cannot start for lack
 * of descriptors, PTYs, processes or memory is a 503, not a 422
 * (SessionRegistry::CreateError::OutOfResources).
 *
 * Runs entirely on the thread's event loop; never blocks. Logging goes to
 * lcServer and never includes keys, cookies or input bytes.
 *
 * Implemented across files, one part of a connection's way each:
 * server.cpp (listening, transport, addresses, runtime file, key, close,
 * restart in place), serverhttp.cpp (accepting, the connection bound,
 * dispatch, static files and the key link), serverauth.cpp (the Host,
 * Origin and key checks), servershares.cpp (read-only links),
 * serverapi.cpp (the REST API), serverrecords.cpp (ended sessions),
 * serverevents.cpp (/api/events), serverwebsocket.cpp (the WebSocket
 * attach path); serverutil.h holds the helpers several of them use.
 */
class Server : public QObject
{
    Q_OBJECT
public:
    /// HTTP connections in progress at once (open event streams and upgraded
    /// WebSockets do not count), so a flood cannot exhaust our file
    /// descriptors. See the class comment for what happens at the bound.
    static constexpr int kMaxHttpConnections = 256;
    /// Lifetime of the key's cookie (s): 30 days from the last load of the
    /// dashboard (keyCookie()).
    static constexpr int kKeyCookieMaxAge = 30 * 24 * 3600;

    /// `registry` must outlive the server's use of it (checked with QPointer).
    /// Uses config.bind, config.port, config.commandArgv() (default command for
    /// POST /api/sessions), config.pingIntervalSec/pingTimeoutSec.
    Server(SessionRegistry *registry, const HostConfig &config, QObject *parent = nullptr);
    ~Server() override;

    /// Starts listening on config.bind:config.port (port 0: any free port).
    /// False with *error ("cannot listen on ADDR:PORT: reason") on failure;
    /// also when BindPolicy refuses the bind (off loopback without TLS and
    /// without config.insecureBind: the text says how to make a certificate
    /// or use an SSH tunnel), or the TLS pair cannot be used (TlsContext).
    /// `*badValue` (when given) tells a failure caused by a bad value of an
    /// option or setting, which the programs report as a usage error (exit
    /// 2, as ServeOptions::read()'s): only one of --tls-cert and --tls-key,
    /// a TLS file missing, unreadable or not a usable pair (the text names
    /// the file and why), a --bind that is no address. A port in use, the
    /// bind policy's refusal or no OpenSSL library are not (exit 1).
    bool listen(QString *error, bool *badValue = nullptr);
    /// After a failed listen(): true when the port was taken by another
    /// socket (EADDRINUSE), the failure a user answers by using the server
    /// already there or by choosing another port. False otherwise.
    bool portInUse() const { return m_portInUse; }
    /// A warning to print at every start (BindPolicy::insecureWarning), or
    /// empty. Set by listen() and adoptListeningSocket().
    QString startWarning() const { return m_startWarning; }
    /// Serves HTTPS and wss:// (config.tlsCert and tlsKey).
    bool isTls() const { return m_tls != nullptr; }
    /// Reads the TLS pair again (SIGHUP); when it is bad the one in use is
    /// kept and why is logged. False then, or without TLS.
    bool reloadTls();
    bool isListening() const;
    quint16 port() const;
    /// "http://127.0.0.1:PORT/" (the bind address; IPv6 in brackets; a
    /// wildcard bind gives the loopback address): where clients on this
    /// machine connect (server.json). "https://" under TLS.
    QString url() const;
    /// The address a user opens: url() for a loopback bind; otherwise the
    /// name remote users reach (the first --allow-host NAME without a port,
    /// else the certificate's first DNS name other than a wildcard or
    /// localhost, else the bind address, else,
    /// for a wildcard bind, this machine's first non-loopback IPv4 address),
    /// with the scheme and the port.
    QString publicUrl() const;
    /// The access key: 32 CSPRNG bytes, base64url without padding. Kept in
    /// config.accessKeyFile when that is set (loadOrCreateAccessKey: the same
    /// key after a restart); otherwise, or when that file cannot be written
    /// (logged), made anew for this Server object.
    QString accessKey() const { return m_key; }
    /// Replaces the key (`tether key --rotate`, POST /api/key): the new key is
    /// stored in config.accessKeyFile first (false with *error, key unchanged,
    /// when that fails), then used for every new request; server.json is
    /// rewritten if this server wrote it; every open event stream gets a
    /// `key` event and is ended, so open dashboards say why they lost access.
    /// Established WebSocket attachments are not cut. Emits accessKeyChanged.
    bool rotateAccessKey(QString *error);
    /// publicUrl() + "?key=" + key: opening it in a browser sets the key cookie.
    QString keyedUrl() const;
    /// keyedUrl() + "#/s/<id>": the dashboard opens that session.
    QString sessionUrl(const QString &id) const;

    // --- read-only links (docs/protocol.md, "Read-only links") --------------
    /// Live share viewers of one session at most: a link holder must not be
    /// able to fill a session's Session::kMaxViewers and lock its owner out.
    static constexpr int kMaxShareViewersPerSession = 8;
    /// The read-only links: made, listed and revoked through /api/shares
    /// with the key; a share ends with its session, and all are revoked
    /// when the key is rotated.
    ShareStore *shares() const { return m_shares; }
    /// publicUrl() + "?share=" + token: opening it sets the share's cookie
    /// and shows the watch-only view of its session.
    QString shareUrl(const QString &token) const;
    /// Open WebSocket viewers that attached with `token`.
    int shareViewerCount(const QString &token) const;

    /**
     * The records of ended sessions (SessionRecordStore; docs/protocol.md,
     * "Ended sessions"): listed by GET /api/sessions with state "ended",
     * their saved screen at GET /api/sessions/{id}/screen, revived by POST
     * /api/sessions/{id}/revive, forgotten by DELETE; a WebSocket attach is
     * closed 4411. Null (the default): none. Must outlive its use here.
     */
    void setRecordStore(SessionRecordStore *store);

    /// Writes $XDG_RUNTIME_DIR/tether/server.json (RuntimeFile) with url,
    /// port, pid and key. False with *error on failure. When the file names
    /// another running server it is kept (RuntimeFile::write): true, and its
    /// contents in *other (emptied otherwise).
    bool writeRuntimeFile(QString *error, QJsonObject *other = nullptr);
    /// True when the server.json there now sends clients to this server
    /// (RuntimeFile::sameServer(): the same URL, key and certificate pin),
    /// whoever wrote it: after writeRuntimeFile() failed on a restart in
    /// place, the previous image's file still does.
    bool runtimeFileLeadsHere() const;
    /// Removes server.json if it is this process's.
    void removeRuntimeFile();

    /**
     * The settings file (QSettings INI, e.g. ~/.config/Tether/tether.conf)
     * that `PATCH /api/settings` writes and `GET /api/settings` reads the
     * address from (docs/protocol.md, "Settings"). Empty (the default): the
     * settings are changed for this run only and the answers say
     * `"saved": false`. Its server/bind and server/port now are what the
     * server was started with: a later change of them needs a restart
     * (`restart_needed`).
     */
    void setSettingsFile(const QString &path);
    QString settingsFile() const { return m_settingsFile; }

    /// WebSocket keepalive: ping every `pingIntervalMs`; drop a viewer silent
    /// for `timeoutMs`. Applies to viewers connecting afterwards.
    void setKeepalive(int pingIntervalMs, int timeoutMs);
    /// Backpressure watermarks (bytes queued to one viewer's socket);
    /// default 1 MiB / 256 KiB. Applies to viewers connecting afterwards.
    void setFlowWatermarks(qint64 highBytes, qint64 lowBytes);
    /// How long a viewer's input may make no progress (the program does not
    /// read it) before the viewer is closed 1013 "input stalled", ms;
    /// default 10000 (docs/protocol.md, "Input flow control"). Applies to
    /// viewers connecting afterwards. For tests, which need not wait 10 s.
    void setInputStall(int msec) { m_viewerOptions.inputStallMs = msec; }
    /// Whether viewers may pause and resume the session's output
    /// (`{"type":"pause"}`, docs/protocol.md "Flow control"; default true).
    /// False serves as a server before that existed did (no `flow_control`
    /// in `attached`, pause closed 4400): for tests of the clients' fallback.
    /// Applies to viewers connecting afterwards.
    void setFlowControl(bool enabled) { m_viewerOptions.flowControl = enabled; }
    /// Time allowed for a whole HTTP request (head + body), ms; default 10000.
    void setRequestTimeout(int msec) { m_requestTimeoutMs = msec; }
    /// Interval of the keep-alive comment on /api/events, ms; default 20000.
    void setEventKeepalive(int msec);

    /// Stops listening and closes every connection: viewers with 1001
    /// "server shutting down" (they detach from their sessions), event
    /// streams after a `shutdown` event, requests not answered yet with 503
    /// "server shutting down" (HttpConnection::closeForShutdown: never a
    /// connection closed without an answer). Answers are handed to the
    /// kernel before it returns, so the process may exit right after.
    /// Sessions keep running.
    void close();

    // --- restart in place (docs/architecture.md, docs/protocol.md) ----------
    /// What the server asks of whoever restarts the process (RestartInPlace).
    struct RestartHooks {
        /// Starts a restart in place; false with *why when it cannot (POST
        /// /api/restart answers 500 with it). Must not exec before returning:
        /// the 202 is written first.
        std::function<bool(QString *why)> request;
        /// The object GET /api/restart (and the 202) answers with.
        std::function<QJsonObject()> status;
    };
    /// Enables POST and GET /api/restart (without hooks they answer 503)
    /// and the `server` event on /api/events.
    void setRestartHooks(const RestartHooks &hooks) { m_restartHooks = hooks; }
    /// Sends the `server` event (RestartHooks::status(): version, update, ...)
    /// to every open /api/events stream; each stream also gets it once when
    /// it opens. Nothing without restart hooks.
    void sendServerEvent();
    /**
     * Takes over `fd`, a listening TCP socket handed over across execve(2)
     * by the process image this one replaced, instead of listen():
     * connections the kernel queued on it during the swap are accepted now,
     * so none was refused. Sets FD_CLOEXEC on it again. False with *error
     * when Qt refuses the descriptor (not a listening socket).
     */
    bool adoptListeningSocket(int fd, QString *error);
    /// The listening socket's fd; -1 when not listening.
    int listeningSocketDescriptor() const;
    /// Uses `key` (the previous process image's key) instead of the one read
    /// at construction. False, keeping the current key, when it is not a
    /// well-formed key.
    bool adoptAccessKey(const QString &key);
    /**
     * The TLS pair (PEM) the previous process image had loaded, handed over
     * by a restart in place; call before adoptListeningSocket(). When the
     * certificate files cannot be read then (removed, unreadable, replaced
     * by something that is not a good pair), this pair is served instead,
     * with a warning that names why the files were refused, and the files
     * are watched as usual: the next SIGHUP (reloadTls()) or change of the
     * files puts a good pair from them in use (issue 10). Without TLS, or
     * when the files are good, it is not used.
     */
    void setHandedOverTls(const QByteArray &certificatePem, const QByteArray &keyPem);
    /// The TLS pair in use (PEM, the files' bytes) for the next process
    /// image; empty without TLS.
    QByteArray tlsCertificatePem() const;
    QByteArray tlsKeyPem() const;
    /**
     * The first half of a restart in place: stops accepting connections (the
     * kernel keeps queueing them on the listening socket, for the next
     * process image), closes every WebSocket viewer with 1012 "server
     * restarting" (they reconnect with resume=OFFSET and miss nothing) and
     * ends every event stream (EventSource reconnects by itself). HTTP
     * requests already in progress are answered. Sessions keep running.
     */
    void beginRestart();
    /// True when nothing is left in flight: no viewer, no HTTP connection
    /// (event streams included), no lingering close.
    bool isQuiet() const;
    /// The restart did not happen: accept connections again.
    void cancelRestart();
    bool isRestarting() const { return m_restarting; }

    int viewerCount() const { return int(m_viewers.size()); }
    int httpConnectionCount() const { return int(m_http.size()); }
    int eventStreamCount() const { return int(m_eventStreams.size()); }

Q_SIGNALS:
    /// A WebSocket viewer connected (after a successful upgrade).
    void viewerConnected();
    /// A WebSocket viewer's connection ended.
    void viewerDisconnected();
    /// rotateAccessKey() made a new key.
    void accessKeyChanged(const QString &key);

private:
    /// What server.json holds for this server: url, port, pid, key, and
    /// cert_sha256 / public_url when they apply (docs/protocol.md, section 1).
    QJsonObject runtimeContents() const;

    struct PendingUpgrade {
        QString id;
        ViewerMode mode = ViewerMode::Control;
        ReplayRequest replay;
        bool badQuery = false;
        ViewerKind kind = ViewerKind::Cli;
        QString shareToken; ///< attached with a read-only link (watch only)
        QPointer<QTcpSocket> tcp;
    };
    /// How a request that does not carry the key fares with read-only links.
    enum class ShareAccess {
        None,      ///< no live share token: 401 as for a wrong key
        Granted,   ///< a live share covers this request (*token)
        Forbidden, ///< a live share, but not for this: 403 (*why)
        Ended,     ///< a share token that was revoked or whose session ended: 401 (*why)
    };
    ShareAccess shareAccess(const HttpConnection *c, QString *token, QString *why) const;
    /// The read-only link tokens a request presents: the bearer, then its
    /// `tether_share_*` cookies, at most 8 in all (each costs a
    /// constant-time lookup). `*shareCookie`: a link cookie was among them.
    static QList<QByteArray> shareCandidates(const HttpRequest &r, bool *shareCookie);
    /// For a request that carries the key: when `segment` (the {id} of
    /// `GET /api/sessions/{id}` or `/ws/{id}`) is no session's id but the
    /// current name of the session of a live read-only link the request
    /// carries too (shareCovers()), that session's id; else empty. The key
    /// decides what such a request may do; the link only what the name means,
    /// so a link's name works in the browser of an owner who holds the key
    /// cookie (docs/protocol.md §4, "Read-only links").
    QString sessionNamedByCarriedLink(const HttpConnection *c, const QString &segment) const;
    /// Whether `segment` (the {id} of /api/sessions/{id} or /ws/{id}) names
    /// the session of `share`: its id, or its name when no session has that
    /// id (ids first, as clients resolve them, docs/protocol.md "Session
    /// names"). Only the link's own session is ever looked up by name, so a
    /// refusal does not tell whether another session has that name.
    bool shareCovers(const QString &sessionId, const QString &segment) const;
    void serveShares(HttpConnection *c, const Route &route);
    void serveShareLink(HttpConnection *c);
    QJsonObject shareJson(const QString &token, const QString &sessionId, const QDateTime &created) const;

    /// A connection Acceptor took: `fd` becomes a QTcpSocket (TCP_NODELAY)
    /// and an HttpConnection, within kMaxHttpConnections (class comment).
    void onAccepted(qintptr fd);
    void onHead(HttpConnection *c);
    void onRequest(HttpConnection *c);
    void onWebSocket();
    void handleUpgrade(HttpConnection *c);
    HttpConnection *evictionCandidate() const;
    bool checkHandshake(HttpConnection *c);
    bool checkHostOriginAuth(HttpConnection *c, bool apiOrWs, QByteArray *host);
    /// The Host check (docs/protocol.md section 2). `*viaAllowHost`: the
    /// name was accepted because of an --allow-host entry.
    bool hostAllowed(const QByteArray &host, const QHostAddress &local, bool *viaAllowHost = nullptr) const;
    /// `name` (no port; `bracketed`: it was written in [ ]) is loopback, the
    /// bind address, or `local` (the address the connection arrived on), as
    /// an IP literal: an IPv6 address in brackets, or an IPv4 address in
    /// dotted-decimal form (four octets, no leading zeros); inet_aton(3)'s
    /// other forms ("127.1", "2130706433", "0x7f000001") are refused.
    bool hostIsAddressOfOurs(const QByteArray &name, bool bracketed, const QHostAddress &local) const;
    /// `name` matches `pattern` (lower-case; "*.example.org" matches one label).
    static bool nameMatches(const QByteArray &pattern, const QByteArray &name);
    /// The bind policy and the TLS pair, before listening (either way).
    /// `*badValue` as listen()'s.
    bool prepareTransport(QString *error, bool *badValue = nullptr);
    /// "https" under TLS, else "http".
    QString scheme() const;
    bool authorized(const HttpConnection *c) const;
    void serveStatic(HttpConnection *c, const Route &route, const QByteArray &host);
    void serveApi(HttpConnection *c, const Route &route);
    void createSession(HttpConnection *c);
    /// PATCH /api/sessions/{id}: {"name": "..."} renames (docs/protocol.md).
    void patchSession(HttpConnection *c, const QString &id);
    void serveRestart(HttpConnection *c);
    /// The ended session `id` (a record no live session holds), or nullptr.
    const SessionRecord *endedRecord(const QString &id) const;
    /// {"sessions": [...]}: the live sessions, then the ended ones.
    QJsonObject listJson() const;
    /// Answers 409 when `id` is an ended session (true), else nothing (false).
    bool refuseEnded(HttpConnection *c, const QString &id);
    void serveSavedScreen(HttpConnection *c, const QString &id);
    /// GET /api/sessions/{id}/commands/{n}/output: the finished command's
    /// output bytes [output_start, output_end) from the ring (docs/protocol.md
    /// §4, "Commands and notifications"); 404 no session or command, 409
    /// still running, 410 no longer (wholly) retained.
    void serveCommandOutput(HttpConnection *c, const QString &id, quint64 commandId);
    void reviveSession(HttpConnection *c, const QString &id);
    void serveSettings(HttpConnection *c);
    void startAccepting();
    /// Closes every WebSocket viewer with `code` and `reason` (Protocol::CloseReason).
    void closeViewers(int code, const char *reason);
    void startEventStream(HttpConnection *c);
    /// Writes one event to every open event stream (none while restarting).
    void writeEvent(const QByteArray &event);
    /// `event: command` and `event: notify` (docs/protocol.md §4, "Commands
    /// and notifications"): sent at once, not coalesced.
    void sendCommandEvent(Session *session, const CommandRecord &record, bool finished);
    void sendNotifyEvent(Session *session, const QString &kind, const QString &text, bool watched, bool requested,
                         const CommandRecord &record);
    /// POST /api/sessions/{id}/input.
    void sessionInput(HttpConnection *c, const QString &id);
    /**
     * The Set-Cookie value of the key's cookie (docs/protocol.md §3):
     * `tether_key=KEY; HttpOnly; SameSite=Strict; Path=/; Max-Age=N`, and
     * `; Secure` under TLS. Set by the key link and again when the page `/`
     * is loaded with it, so that it lasts kKeyCookieMaxAge from the last visit.
     */
    QByteArray keyCookie() const;
    void scheduleEvents();
    void broadcastEvents();
    /**
     * `event: output` (docs/protocol.md "Live list"): on streams opened with
     * `?output=1` only, the sessions whose output offset moved since the
     * last such event, at most one event per kOutputEventMs; the first
     * output after a quiet second is told kEventCoalesceMs later. Output
     * only starts a timer (no timer and no work while no stream asked or
     * no output comes).
     */
    void watchOutput(Session *session);
    void scheduleOutputEvent();
    void sendOutputEvent();
    QByteArray sessionsEvent() const;
    /// "event: server" with RestartHooks::status(); empty without hooks.
    QByteArray serverEvent() const;
    /// "event: shutdown" with {"reason": "server shutting down"}: close()'s
    /// last event on every stream.
    static QByteArray shutdownEvent();
    QHostAddress listenAddress() const;

    QPointer<SessionRegistry> m_registry;
    HostConfig m_config;
    QString m_settingsFile;      ///< setSettingsFile(): where PATCH /api/settings saves; empty: nowhere
    QString m_startBind;         ///< server/bind in that file when it was set
    quint16 m_startPort = 0;     ///< server/port in that file when it was set
    QString m_key;
    bool m_wroteRuntimeFile = false; ///< writeRuntimeFile() wrote ours: rewrite it on rotation
    QTcpServer *m_tcp = nullptr; ///< listens; never accepts (pauseAccepting)
    bool m_portInUse = false; ///< the last listen() failed on EADDRINUSE
    Acceptor *m_acceptor = nullptr; ///< accepts on m_tcp's socket while listening
    QWebSocketServer *m_ws = nullptr;
    TlsContext *m_tls = nullptr; ///< set when serving TLS (prepareTransport)
    QByteArray m_handedOverCert; ///< setHandedOverTls()
    QByteArray m_handedOverKey;
    QString m_startWarning;
    WebSocketViewer::Options m_viewerOptions;
    int m_requestTimeoutMs = 10000;
    QSet<HttpConnection *> m_http;
    QSet<HttpConnection *> m_eventStreams;
    QSet<WebSocketViewer *> m_viewers;
    QHash<QString, PendingUpgrade> m_pending; ///< key: "addr|port" of the peer
    QTimer m_eventTimer;      ///< coalesces registry changes (single shot)
    QTimer m_eventKeepalive;  ///< comment line on event streams
    QSet<HttpConnection *> m_outputStreams; ///< event streams that asked for `output` events (?output=1)
    QTimer m_outputTimer;     ///< the next `output` event (single shot)
    QElapsedTimer m_outputSentAt; ///< when the last `output` event was sent (invalid: never)
    QHash<QString, quint64> m_outputSent; ///< session id -> offset the last `output` event told
    bool m_closed = false;
    bool m_restarting = false;
    RestartHooks m_restartHooks;
    ShareStore *m_shares = nullptr;
    QPointer<SessionRecordStore> m_records; ///< setRecordStore(); null: no ended sessions
    QHash<WebSocketViewer *, QString> m_shareViewers; ///< viewer → the share token it attached with
};

} // namespace Tether
