// SPDX-License-Identifier: GPL-2.0-or-later
#include "route.h"
#include "httprequest.h"
#include "session.h"

#include <QStringList>
#include <algorithm>
#include <initializer_list>
#include <limits>
#include <utility>

namespace Tether {

namespace {
bool under(const QString &path, const QLatin1String &prefix)
{
    return path == prefix || (path.startsWith(prefix) && path.size() > prefix.size() && path.at(prefix.size()) == QLatin1Char('/'));
}

Route methodNotAllowed(const char *allow, bool api)
{
    Route r;
    r.kind = Route::Kind::MethodNotAllowed;
    r.allow = allow;
    r.api = api;
    return r;
}

/// An API endpoint: the kind `method` has there, or 405 with `allow`.
Route apiByMethod(const QByteArray &method, std::initializer_list<std::pair<const char *, Route::Kind>> kinds,
                  const char *allow)
{
    for (const auto &k : kinds) {
        if (method == k.first) {
            Route r;
            r.kind = k.second;
            r.api = true;
            return r;
        }
    }
    return methodNotAllowed(allow, true);
}

Route routeUpgrade(const HttpRequest &request)
{
    Route r;
    const QString path = request.path();
    if (!path.startsWith(QLatin1String("/ws/")))
        return r;
    r.id = path.mid(4);
    if (r.id.isEmpty() || r.id.contains(QLatin1Char('/'))) {
        r.id.clear();
        return r;
    }
    if (request.method() != "GET") {
        r = methodNotAllowed("GET", false);
        return r;
    }
    r.kind = Route::Kind::Upgrade;
    const QUrlQuery q = request.query();
    if (q.hasQueryItem(QStringLiteral("mode"))) {
        const QString mode = q.queryItemValue(QStringLiteral("mode"), QUrl::FullyDecoded);
        if (mode == QLatin1String("watch"))
            r.mode = ViewerMode::Watch;
        else if (mode != QLatin1String("control"))
            r.badQuery = true;
    }
    // client=desktop: the desktop's terminal window (viewer_kind "local").
    r.desktopClient = q.queryItemValue(QStringLiteral("client"), QUrl::FullyDecoded) == QLatin1String("desktop");
    if (q.hasQueryItem(QStringLiteral("resume"))) {
        r.resume = parseOffset(q.queryItemValue(QStringLiteral("resume"), QUrl::FullyDecoded));
        if (!r.resume)
            r.resume = std::numeric_limits<quint64>::max();
    }
    if (q.hasQueryItem(QStringLiteral("replay"))) {
        const QString replay = q.queryItemValue(QStringLiteral("replay"), QUrl::FullyDecoded);
        if (replay == QLatin1String("screen"))
            r.screen = true;
        else if (replay != QLatin1String("raw"))
            r.badRequest = QStringLiteral("bad replay: \"raw\" or \"screen\"");
    }
    if (r.badRequest.isEmpty() && q.hasQueryItem(QStringLiteral("lines"))) {
        const std::optional<quint64> lines = parseOffset(q.queryItemValue(QStringLiteral("lines"), QUrl::FullyDecoded));
        if (!lines || *lines > quint64(Session::kMaxReplayLines) || !r.screen)
            r.badRequest = QStringLiteral("bad lines: an integer 0..%1, with replay=screen").arg(Session::kMaxReplayLines);
        else
            r.lines = int(*lines);
    }
    const bool hasCols = q.hasQueryItem(QStringLiteral("cols"));
    const bool hasRows = q.hasQueryItem(QStringLiteral("rows"));
    if (r.badRequest.isEmpty() && (hasCols || hasRows)) {
        // The viewer's size (docs/protocol.md §5, "Attaching at the viewer's
        // size"): both, each as `resize` takes it.
        const std::optional<quint64> cols = parseOffset(q.queryItemValue(QStringLiteral("cols"), QUrl::FullyDecoded));
        const std::optional<quint64> rows = parseOffset(q.queryItemValue(QStringLiteral("rows"), QUrl::FullyDecoded));
        const auto inRange = [](const std::optional<quint64> &n) {
            return n && *n >= quint64(kMinCells) && *n <= quint64(kMaxCells);
        };
        if (!hasCols || !hasRows || !inRange(cols) || !inRange(rows)) {
            r.badRequest = QStringLiteral("bad cols and rows: both, integers %1..%2").arg(kMinCells).arg(kMaxCells);
        } else {
            r.cols = int(*cols);
            r.rows = int(*rows);
        }
    }
    return r;
}

Route routeApi(const HttpRequest &request)
{
    using K = Route::Kind;
    const QStringList parts = request.path().split(QLatin1Char('/'), Qt::SkipEmptyParts);
    const QByteArray method = request.method();
    const QString endpoint = parts.value(1);
    if (parts.size() == 2 && endpoint == QLatin1String("sessions"))
        return apiByMethod(method, {{"GET", K::ListSessions}, {"POST", K::CreateSession}}, "GET, POST");
    if (parts.size() == 3 && endpoint == QLatin1String("sessions")) {
        Route r = apiByMethod(method, {{"GET", K::GetSession}, {"PATCH", K::PatchSession}, {"DELETE", K::DeleteSession}},
                              "GET, PATCH, DELETE");
        if (r.kind != K::MethodNotAllowed)
            r.id = parts.at(2);
        return r;
    }
    if (parts.size() == 4 && endpoint == QLatin1String("sessions") && parts.at(3) == QLatin1String("shares")) {
        Route r = apiByMethod(method, {{"DELETE", K::RevokeSessionShares}}, "DELETE");
        if (r.kind != K::MethodNotAllowed)
            r.id = parts.at(2);
        return r;
    }
    if (parts.size() == 4 && endpoint == QLatin1String("sessions") && parts.at(3) == QLatin1String("commands")) {
        Route r = apiByMethod(method, {{"GET", K::SessionCommands}}, "GET");
        if (r.kind != K::MethodNotAllowed)
            r.id = parts.at(2);
        return r;
    }
    if (parts.size() == 6 && endpoint == QLatin1String("sessions") && parts.at(3) == QLatin1String("commands")
        && parts.at(5) == QLatin1String("output")) {
        Route r = apiByMethod(method, {{"GET", K::CommandOutput}}, "GET");
        if (r.kind != K::MethodNotAllowed) {
            r.id = parts.at(2);
            bool ok = false;
            const QString n = parts.at(4);
            // Digits only: toULongLong would also take "+7" or " 7".
            const bool digits = !n.isEmpty() && std::all_of(n.cbegin(), n.cend(), [](QChar ch) {
                return ch >= QLatin1Char('0') && ch <= QLatin1Char('9');
            });
            const quint64 v = digits ? n.toULongLong(&ok) : 0;
            r.command = ok ? v : 0;
        }
        return r;
    }
    if (parts.size() == 4 && endpoint == QLatin1String("sessions") && parts.at(3) == QLatin1String("input")) {
        Route r = apiByMethod(method, {{"POST", K::SessionInput}}, "POST");
        if (r.kind != K::MethodNotAllowed)
            r.id = parts.at(2);
        return r;
    }
    if (parts.size() == 4 && endpoint == QLatin1String("sessions") && parts.at(3) == QLatin1String("screen")) {
        Route r = apiByMethod(method, {{"GET", K::SessionScreen}}, "GET");
        if (r.kind != K::MethodNotAllowed)
            r.id = parts.at(2);
        return r;
    }
    if (parts.size() == 4 && endpoint == QLatin1String("sessions") && parts.at(3) == QLatin1String("revive")) {
        Route r = apiByMethod(method, {{"POST", K::ReviveSession}}, "POST");
        if (r.kind != K::MethodNotAllowed)
            r.id = parts.at(2);
        return r;
    }
    if (parts.size() == 2 && endpoint == QLatin1String("shares"))
        return apiByMethod(method, {{"GET", K::ListShares}, {"POST", K::CreateShare}}, "GET, POST");
    if (parts.size() == 3 && endpoint == QLatin1String("shares")) {
        Route r = apiByMethod(method, {{"DELETE", K::RevokeShare}}, "DELETE");
        if (r.kind != K::MethodNotAllowed)
            r.id = parts.at(2);
        return r;
    }
    if (parts.size() == 2 && endpoint == QLatin1String("key"))
        return apiByMethod(method, {{"POST", K::RotateKey}}, "POST");
    if (parts.size() == 2 && endpoint == QLatin1String("restart"))
        return apiByMethod(method, {{"GET", K::Restart}, {"POST", K::Restart}}, "GET, POST");
    if (parts.size() == 2 && endpoint == QLatin1String("settings"))
        return apiByMethod(method, {{"GET", K::Settings}, {"PATCH", K::Settings}}, "GET, PATCH");
    if (parts.size() == 2 && endpoint == QLatin1String("events"))
        return apiByMethod(method, {{"GET", K::Events}}, "GET");
    Route r;
    r.api = true;
    return r;
}

Route routeStatic(const HttpRequest &request)
{
    Route r;
    if (request.method() != "GET" && request.method() != "HEAD")
        return methodNotAllowed("GET, HEAD", false);
    QString path = request.path();
    if (path == QLatin1String("/")) {
        if (request.hasQuery() && request.query().hasQueryItem(QStringLiteral("key"))) {
            r.kind = Route::Kind::KeyLink;
            return r;
        }
        if (request.hasQuery() && request.query().hasQueryItem(QStringLiteral("share"))) {
            r.kind = Route::Kind::ShareLink;
            return r;
        }
        path = QStringLiteral("/index.html");
    }
    // Only plain relative paths inside :/dashboard/ (no "..", ".", "//").
    const QStringList segments = path.mid(1).split(QLatin1Char('/'));
    for (const QString &s : segments) {
        if (s.isEmpty() || s == QLatin1String(".") || s == QLatin1String("..") || s.contains(QLatin1Char('\\')))
            return r;
    }
    r.kind = Route::Kind::StaticFile;
    r.file = QStringLiteral(":/dashboard") + path;
    return r;
}
} // namespace

bool needsKey(const QString &path)
{
    return under(path, QLatin1String("/api")) || under(path, QLatin1String("/ws"));
}

Route routeRequest(const HttpRequest &request)
{
    if (request.isWebSocketUpgrade())
        return routeUpgrade(request);
    const QString path = request.path();
    if (under(path, QLatin1String("/ws"))) {
        Route r;
        r.kind = Route::Kind::UpgradeRequired;
        return r;
    }
    if (under(path, QLatin1String("/api")))
        return routeApi(request);
    return routeStatic(request);
}

std::optional<quint64> parseOffset(const QString &s)
{
    if (s.isEmpty() || s.size() > 20)
        return std::nullopt;
    for (const QChar ch : s)
        if (ch < QLatin1Char('0') || ch > QLatin1Char('9'))
            return std::nullopt;
    bool ok = false;
    const quint64 v = s.toULongLong(&ok);
    return ok ? std::optional<quint64>(v) : std::nullopt;
}

} // namespace Tether
