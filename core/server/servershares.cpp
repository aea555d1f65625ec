// SPDX-License-Identifier: GPL-2.0-or-later
// Server's read-only links (docs/protocol.md, "Read-only links"): what a
// link's token grants (its session's reduced info and a watch attach,
// decided before any body byte is read), /api/shares, and the link that
// trades a token for a cookie. The tokens themselves are ShareStore's.
#include "server.h"
#include "httpconnection.h"
#include "logging.h"
#include "registry.h"
#include "repeatlimiter.h"
#include "route.h"
#include "serverutil.h"
#include "sharestore.h"

#include <QJsonArray>
#include <QJsonDocument>

namespace Tether {

namespace {
/// A read-only link's cookie is this + the session id (base64url, so a valid
/// cookie name): one per session, so links to several sessions coexist in
/// one browser.
const QByteArray kShareCookiePrefix = QByteArrayLiteral("tether_share_");
} // namespace

Server::ShareAccess Server::shareAccess(const HttpConnection *c, QString *token, QString *why) const
{
    // The credentials a link holder can present: the bearer token (scripts,
    // any WebSocket client) and the cookies links set. Each is looked up in
    // constant time against every live token, so a peer without the key
    // gets only kMaxCandidates lookups per request, however many cookies
    // it sends.
    const HttpRequest &r = c->request();
    bool shareCookie = false;
    const QList<QByteArray> candidates = shareCandidates(r, &shareCookie);
    QList<ShareStore::Share> grants;
    ShareStore::Ended ended = ShareStore::Ended::Unknown;
    for (const QByteArray &candidate : std::as_const(candidates)) {
        ShareStore::Share s;
        if (m_shares->find(candidate, &s))
            grants.append(s);
        else if (ended == ShareStore::Ended::Unknown)
            ended = m_shares->whyEnded(candidate);
    }
    if (grants.isEmpty()) {
        if (ended == ShareStore::Ended::Revoked) {
            *why = QStringLiteral("this read-only link was revoked");
            return ShareAccess::Ended;
        }
        if (ended == ShareStore::Ended::SessionEnded) {
            *why = QStringLiteral("this read-only link has ended: its session is gone");
            return ShareAccess::Ended;
        }
        if (shareCookie) {
            *why = QStringLiteral("this read-only link is not valid (any more): it was revoked, or its session ended");
            return ShareAccess::Ended;
        }
        return ShareAccess::None;
    }
    // What a link grants, and nothing else: its session's info and watching it.
    const Route route = routeRequest(r);
    for (const ShareStore::Share &s : std::as_const(grants)) {
        if (!shareCovers(s.sessionId, route.id))
            continue;
        if (route.kind == Route::Kind::GetSession) {
            *token = s.token;
            return ShareAccess::Granted;
        }
        if (route.kind == Route::Kind::Upgrade) {
            if (route.mode == ViewerMode::Watch && !route.badQuery) {
                *token = s.token;
                return ShareAccess::Granted;
            }
            *why = QStringLiteral("a read-only link can only watch (mode=watch)");
            return ShareAccess::Forbidden;
        }
    }
    *why = QStringLiteral("a read-only link can only watch its own session");
    return ShareAccess::Forbidden;
}

QList<QByteArray> Server::shareCandidates(const HttpRequest &r, bool *shareCookie)
{
    constexpr int kMaxCandidates = 8;
    QList<QByteArray> candidates;
    const QByteArray auth = r.header("authorization");
    if (auth.size() > 7 && auth.left(7).toLower() == "bearer ")
        candidates.append(auth.mid(7).trimmed());
    *shareCookie = false;
    for (const auto &h : r.headers()) {
        if (h.first != "cookie")
            continue;
        for (const QByteArray &part : h.second.split(';')) {
            const int eq = part.indexOf('=');
            if (eq > 0 && part.left(eq).trimmed().startsWith(kShareCookiePrefix) && candidates.size() < kMaxCandidates) {
                candidates.append(part.mid(eq + 1).trimmed());
                *shareCookie = true;
            }
        }
    }
    return candidates;
}

QString Server::sessionNamedByCarriedLink(const HttpConnection *c, const QString &segment) const
{
    // An id means its session, with the key as without (ids first).
    if (!m_registry || segment.isEmpty() || m_registry->find(segment))
        return QString();
    bool shareCookie = false;
    for (const QByteArray &candidate : shareCandidates(c->request(), &shareCookie)) {
        ShareStore::Share s;
        if (m_shares->find(candidate, &s) && shareCovers(s.sessionId, segment))
            return s.sessionId;
    }
    return QString();
}

bool Server::shareCovers(const QString &sessionId, const QString &segment) const
{
    if (segment == sessionId)
        return true;
    if (!m_registry || segment.isEmpty() || m_registry->find(segment))
        return false;
    const Session *own = m_registry->find(sessionId);
    return own && own->name() == segment;
}

QString Server::shareUrl(const QString &token) const
{
    return publicUrl() + QStringLiteral("?share=") + token;
}

int Server::shareViewerCount(const QString &token) const
{
    int n = 0;
    for (auto it = m_shareViewers.cbegin(); it != m_shareViewers.cend(); ++it)
        n += it.value() == token && !it.key()->isClosing() ? 1 : 0;
    return n;
}

QJsonObject Server::shareJson(const QString &token, const QString &sessionId, const QDateTime &created) const
{
    QJsonObject o;
    o.insert(QStringLiteral("token"), token);
    o.insert(QStringLiteral("session"), sessionId);
    o.insert(QStringLiteral("created"), created.toUTC().toString(Qt::ISODate));
    o.insert(QStringLiteral("url"), shareUrl(token));
    o.insert(QStringLiteral("viewers"), shareViewerCount(token));
    return o;
}

void Server::serveShares(HttpConnection *c, const Route &route)
{
    switch (route.kind) {
    case Route::Kind::ListShares: {
        QJsonArray list;
        for (const ShareStore::Share &s : m_shares->list())
            list.append(shareJson(s.token, s.sessionId, s.created));
        c->respondJson(200, QJsonObject{{QStringLiteral("shares"), list}});
        return;
    }
    case Route::Kind::CreateShare: {
        QJsonParseError err;
        const QJsonDocument doc = QJsonDocument::fromJson(c->request().body().trimmed(), &err);
        if (err.error != QJsonParseError::NoError || !doc.isObject()) {
            c->respondError(400, QStringLiteral("body must be a JSON object {\"session\": \"ID\"}"));
            return;
        }
        const QJsonValue id = doc.object().value(QStringLiteral("session"));
        if (!id.isString()) {
            c->respondError(400, QStringLiteral("session must be a string (the session's id)"));
            return;
        }
        Session *s = m_registry->find(id.toString());
        if (!s) {
            c->respondError(404, QStringLiteral("no such session"));
            return;
        }
        ShareStore::Share share;
        if (!m_shares->create(s->id(), &share)) {
            c->respondError(409, QStringLiteral("session %1 has %2 read-only links (the limit); revoke some with "
                                                "`tether share --revoke %1`")
                                     .arg(s->id()).arg(ShareStore::kMaxPerSession));
            return;
        }
        qCInfo(lcServer) << "read-only link made for session" << s->id();
        c->respondJson(201, shareJson(share.token, share.sessionId, share.created));
        return;
    }
    case Route::Kind::RevokeShare:
        if (m_shares->revoke(route.id)) {
            qCInfo(lcServer) << "read-only link revoked";
            c->respond(204, Headers(), QByteArray());
        } else {
            c->respondError(404, QStringLiteral("no such read-only link"));
        }
        return;
    case Route::Kind::RevokeSessionShares: {
        if (!m_registry->find(route.id)) {
            c->respondError(404, QStringLiteral("no such session"));
            return;
        }
        const int n = m_shares->revokeSession(route.id);
        qCInfo(lcServer) << "read-only links revoked for session" << route.id << n;
        c->respondJson(200, QJsonObject{{QStringLiteral("revoked"), n}});
        return;
    }
    default:
        c->respondError(404, QStringLiteral("not found"));
        return;
    }
}

void Server::serveShareLink(HttpConnection *c)
{
    // The link a share prints: trade the token for a cookie named after its
    // session and open the watch-only view (#/share/ID); as for the key link
    // the token leaves the address bar at once. A dead token sets nothing
    // and the page says the link is not valid.
    const QByteArray given = c->request().query().queryItemValue(QStringLiteral("share"), QUrl::FullyDecoded).toUtf8();
    ShareStore::Share s;
    if (!m_shares->find(given, &s)) {
        logLimited(lcServer(), QtInfoMsg, QStringLiteral("dead read-only link opened: no cookie set"));
        c->respond(303, header("Location", "/#/share"), QByteArray());
        return;
    }
    Headers h = header("Location", "/#/share/" + s.sessionId.toLatin1());
    h.append(qMakePair(QByteArray("Set-Cookie"),
                       kShareCookiePrefix + s.sessionId.toLatin1() + '=' + s.token.toLatin1()
                           + "; HttpOnly; SameSite=Strict; Path=/" + (m_tls ? "; Secure" : "")));
    c->respond(303, h, QByteArray());
}

} // namespace Tether
