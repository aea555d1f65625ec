// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include "viewer.h"

#include <QJsonArray>
#include <QJsonObject>

namespace Tether {

class Session;
class SessionRegistry;
struct CommandRecord;

/**
 * The SESSION object of docs/protocol.md, shared by the REST API, the
 * /api/events stream and anything else that describes a session:
 * {"id", "name", "command", "cwd", "pid", "title", "created", "state", "exit_code",
 *  "exit_signal", "attached", "viewers", "viewer_kind", "detached_since",
 *  "expires_in", "idle_seconds", "cols", "rows", "offset", "buffer_bytes",
 *  "buffer_capacity"}.
 * Times are ISO-8601 UTC ("2024-05-01T12:00:00Z"); durations in whole seconds.
 * `registry` provides the expiry (expires_in); it may be null (then null).
 */
QJsonObject sessionToJson(const Session *session, const SessionRegistry *registry);
/// The COMMAND object of docs/protocol.md §4 ("Commands and notifications"):
/// {"id", "command_line", "cwd", "started", "ended", "duration_ms",
///  "exit_status", "running", "output_start", "output_end"}.
QJsonObject commandToJson(const CommandRecord &command);
/// The session's `shell` field: {"state": "unknown"|"prompt"|"running",
/// "cwd", "command": COMMAND (the running or last one) or null}.
QJsonObject shellToJson(const Session *session);
/// {"session": id, "shell": ..., "commands": [COMMAND...]} (oldest first):
/// GET /api/sessions/{id}/commands.
QJsonObject commandListJson(const Session *session);
/// {"sessions": [SESSION...]} for every session of `registry`, oldest first.
QJsonObject sessionListJson(const SessionRegistry *registry);
/// "browser", "local", "cli" or "other" (protocol field viewer_kind).
QString viewerKindName(ViewerKind kind);

} // namespace Tether
