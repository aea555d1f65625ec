// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include "ptyprocess.h"

#include <QByteArray>
#include <QString>
#include <QStringList>
#include <optional>

class QJsonValue;

namespace Tether {

/// The outcome of parseSpawnRequest(): spawn options, or the HTTP error to
/// answer with.
struct SpawnRequest {
    /// What to spawn; meaningful only when ok().
    SpawnOptions options;
    /// The session's name ("" when absent or null); its rules
    /// (SessionRegistry::nameProblem) and uniqueness are the registry's.
    QString name;
    /// 0 when the body was accepted; else the HTTP status to answer (400).
    int status = 0;
    /// Why it was refused (the error text of the response, naming the field).
    QString error;

    bool ok() const { return status == 0; }
};

/**
 * Parses the body of POST /api/sessions (docs/protocol.md, "Endpoints") into
 * spawn options. Pure: no I/O, nothing spawned.
 *
 * `body`: the request body; surrounding whitespace is ignored, and an empty
 * body means all defaults. Otherwise a JSON object
 * {"command": [...], "cwd": "/path", "cols": 80, "rows": 24, "name": "..."}; every field is
 * optional, `null` counts as absent, unknown fields are ignored.
 * `defaultCommand`: the argv used when `command` is absent (the server's
 * configured command; empty: the user's login shell, filled in later by
 * resolveSpawnOptions()).
 *
 * Accepted: `command` a non-empty array of strings without NUL characters
 * (exec(3) takes C strings: a NUL would silently cut an argument) whose first
 * element is not empty; `cwd` an absolute path or "" (the home directory),
 * without NUL; `cols`, `rows` integers kMinCells..kMaxCells (the same bounds
 * as PtyProcess; 80×24 when absent; 80.0 counts as an integer, JSON having
 * one number type); `name` a string (checked by the registry: 400 for a
 * bad name, 409 for one that is taken, decided by the caller).
 *
 * Errors (status 400, checked in this order, the first one wins): invalid
 * JSON ("invalid JSON: <Qt's parser message>"), not an object, then the
 * fields in the order command, cwd, cols, rows, name (not a string). Whether the command can
 * actually start (422) and whether there is room (503) are decided later,
 * by the registry.
 */
SpawnRequest parseSpawnRequest(const QByteArray &body, const QStringList &defaultCommand);

/**
 * `v` as a terminal size in cells: a JSON number that is an integer
 * kMinCells..kMaxCells (80.0 counts, JSON having one number type); nullopt
 * for anything else (not a number, a fraction, out of range). The range is
 * checked before the number becomes an int: converting a double outside
 * int's range is undefined behaviour (C++17 [conv.fpint]), which UBSan found
 * with {"cols":1e10} in tst_spawnrequest. Used for POST /api/sessions and the
 * WebSocket resize message alike.
 */
std::optional<int> cellCount(const QJsonValue &v);

} // namespace Tether
