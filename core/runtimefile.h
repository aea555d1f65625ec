// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <QJsonObject>
#include <QString>

namespace Tether {

/**
 * The runtime file through which local clients (the tray app, scripts) find a
 * running server: `$XDG_RUNTIME_DIR/tether/server.json`, or
 * `$TMPDIR/runtime-USER/tether/server.json` (Qt's fallback) when
 * XDG_RUNTIME_DIR is unset.
 *
 * Contents: `{"url": "http://127.0.0.1:PORT/", "port": PORT, "pid": PID,
 * "key": "KEY"}`. It holds the access key, so the directory is created 0700
 * and the file 0600 (written to a 0600 temporary file, then renamed over, so
 * a reader never sees a half-written file and the key is never group/world
 * readable, even for an instant).
 */
namespace RuntimeFile {

/**
 * The per-user runtime directory: $XDG_RUNTIME_DIR, or when that is unset
 * (su, sudo, cron, a container) Qt's own fallback for
 * QStandardPaths::RuntimeLocation, QDir::tempPath() + "/runtime-" + user name,
 * computed here because Qt prints a warning on every lookup and a CLI
 * command must not (the server and its clients agree on the same path).
 * Not created here.
 */
QString baseDirectory();
/// Directory holding server.json: baseDirectory() + "/tether" (not created).
QString directory();
/// Full path of server.json.
QString path();
/**
 * Writes `contents` atomically as server.json with mode 0600, creating the
 * directory with 0700 (and tightening an existing one to 0700); the
 * fallback base directory is created 0700 too. False with *error (errno text
 * and path) on failure, also when either directory belongs to another user
 * (someone who owns it could swap in a server.json of their own).
 */
bool write(const QJsonObject &contents, QString *error);
/**
 * Reads server.json; an empty object when missing or unparsable, and when
 * the directory or the file belongs to another user (such a file could send
 * this user's keystrokes to someone else's server).
 */
QJsonObject read();
/**
 * Removes server.json if it still belongs to process `pid` (its "pid" field),
 * so a server exiting does not remove the file of another one started after
 * it. Returns true if it removed the file.
 */
bool removeIfOwned(qint64 pid);

} // namespace RuntimeFile
} // namespace Tether
