// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include "attachinfo.h"

#include <QByteArray>
#include <QString>
#include <optional>

namespace Tether {

class HttpRequest;

/**
 * Where a request goes: the routing decision of Server (docs/protocol.md,
 * "Endpoints" and "WebSocket"), made from the request alone, so it can be
 * tested and fuzzed without a socket (tests/fuzz/fuzz_httprequest.cpp). What
 * needs the server's state stays in Server: the Host, Origin and key checks
 * (before routing), whether a dashboard file exists, the registry.
 */
struct Route {
    enum class Kind {
        NotFound,         ///< 404
        MethodNotAllowed, ///< 405 with `allow`
        // A WebSocket upgrade (Upgrade: websocket).
        Upgrade,          ///< GET /ws/{id}: `id`, `mode`, `resume`, `badQuery`, `screen`, `lines`, `cols`, `rows`, `badRequest`
        // Plain requests.
        UpgradeRequired,  ///< /ws or /ws/...: 400 "WebSocket upgrade required"
        ListSessions,     ///< GET /api/sessions
        CreateSession,    ///< POST /api/sessions
        GetSession,       ///< GET /api/sessions/{id}: `id`
        DeleteSession,    ///< DELETE /api/sessions/{id}: `id`
        PatchSession,     ///< PATCH /api/sessions/{id}: `id` (rename)
        RotateKey,        ///< POST /api/key
        Restart,          ///< GET or POST /api/restart
        Events,           ///< GET /api/events
        Settings,         ///< GET or PATCH /api/settings
        ListShares,       ///< GET /api/shares
        CreateShare,      ///< POST /api/shares
        RevokeShare,      ///< DELETE /api/shares/{token}: `id` is the token
        RevokeSessionShares, ///< DELETE /api/sessions/{id}/shares: `id`
        SessionCommands,  ///< GET /api/sessions/{id}/commands: `id`
        CommandOutput,    ///< GET /api/sessions/{id}/commands/{n}/output: `id`, `command`
        SessionInput,     ///< POST /api/sessions/{id}/input: `id`
        SessionScreen,    ///< GET /api/sessions/{id}/screen: `id` (an ended session's saved screen)
        ReviveSession,    ///< POST /api/sessions/{id}/revive: `id`
        ShareLink,        ///< GET/HEAD / with a `share` query item: 303 to the watch-only view
        KeyLink,          ///< GET/HEAD / with a `key` query item: 303 to /, the cookie if it is right
        StaticFile,       ///< GET/HEAD of `file` (":/dashboard/..."), 404 if it does not exist
    };
    Kind kind = Kind::NotFound;
    /// The path is under /api/ (a 404 or 405 there too): the server answers
    /// 503 instead while it has no registry (shutting down).
    bool api = false;
    QByteArray allow;         ///< MethodNotAllowed: the Allow header
    QString id;               ///< session id (Upgrade, GetSession, DeleteSession, PatchSession, RevokeSessionShares); RevokeShare: the token
    QString file;             ///< StaticFile: the Qt resource path
    /// CommandOutput: the command's `id` (COMMAND of docs/protocol.md §4);
    /// 0 when the path's {n} is not a decimal 1..2^64-1 (then no command has it).
    quint64 command = 0;
    // Upgrade: the query (docs/protocol.md, "WebSocket").
    ViewerMode mode = ViewerMode::Control;
    /// resume=OFFSET; an offset that is not a decimal quint64 is treated as
    /// beyond the end (reset, "ahead"): the maximum.
    std::optional<quint64> resume;
    bool badQuery = false;    ///< mode= other than control or watch: closed 4400 after the upgrade
    /// replay=screen (docs/protocol.md §5, "Screen replay"); replay=raw or
    /// none: false.
    bool screen = false;
    int lines = 0;            ///< lines=N: 0..Session::kMaxReplayLines, only with replay=screen
    /// cols=C&rows=R: the viewer's size (1..1000 each, kMinCells..kMaxCells),
    /// applied before the replay for a control viewer; 0 when not given.
    int cols = 0;
    int rows = 0;
    /// client=desktop: the viewer says it is the desktop's terminal window
    /// (its kind is then LocalWindow, viewer_kind "local", unless the
    /// request has an Origin: a page is always a browser). Any other value
    /// or none: false.
    bool desktopClient = false;
    /// Not empty: replay= is neither raw nor screen, lines= is not an
    /// integer in range or comes without replay=screen, or cols= and rows=
    /// are not both integers 1..1000 (one without the other, too). Server answers 400
    /// with this text, as plain HTTP, before the upgrade (unlike mode=,
    /// which a WebSocket close reports).
    QString badRequest;
};

/// The paths that need the access key (and an allowed Origin): /api, /api/...,
/// /ws and /ws/... Static files hold no secret.
bool needsKey(const QString &path);

/// The routing decision for a request whose head (and body) was read.
/// Pure; never fails (NotFound for anything it does not know).
Route routeRequest(const HttpRequest &request);

/// A resume offset: 1 to 20 decimal digits within quint64, else nullopt.
std::optional<quint64> parseOffset(const QString &s);

} // namespace Tether
