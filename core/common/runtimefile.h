// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <QJsonObject>
#include <QString>

namespace Tether {

/**
 * The runtime file through which local clients (the tray app, scripts) find a
 * running server: `$XDG_RUNTIME_DIR/tether/server.json`, or
 * `$TMPDIR/runtime-USER/tether/server.json` (Qt's fallback) when
 * XDG_RUNTIME_DIR is unset or not a directory of the effective user (see
 * baseDirectory()).
 *
 * Contents: `{"url": "http://127.0.0.1:PORT/", "port": PORT, "pid": PID,
 * "key": "KEY"}`. It holds the access key, so the directory is created 0700
 * and the file 0600 (written to a 0600 temporary file, then renamed over, so
 * a reader never sees a half-written file and the key is never group/world
 * readable, even for an instant).
 */
namespace RuntimeFile {

/**
 * The per-user runtime directory: $XDG_RUNTIME_DIR, or Qt's own fallback for
 * QStandardPaths::RuntimeLocation, QDir::tempPath() + "/runtime-" + user name,
 * when that variable is unset (sudo, cron, a container) or names something
 * that is not a directory owned by the effective uid: plain `su` on Debian
 * keeps the caller's XDG_RUNTIME_DIR, and root's server used to create a
 * root-owned "<dir>/tether" there, after which the user's own server failed
 * with "<dir>/tether belongs to another user". The fallback is computed here
 * because Qt prints a warning on every lookup and a CLI command must not
 * (the server and its clients agree on the same path). Not created here.
 */
QString baseDirectory();
/// Directory holding server.json: baseDirectory() + "/tether" (not created).
QString directory();
/// Full path of server.json.
QString path();
/**
 * Creates directory() with mode 0700 when missing (and the fallback base
 * directory, 0700, when XDG_RUNTIME_DIR is not usable), tightens an
 * existing one to 0700. False with *error (errno text and path) when it
 * cannot, or when either directory belongs to another user. write() and
 * HostLock::acquire() call it.
 */
bool ensureDirectory(QString *error);
/**
 * Writes `contents` atomically as server.json with mode 0600, creating the
 * directory with 0700 (and tightening an existing one to 0700); the
 * fallback base directory is created 0700 too. False with *error (errno text
 * and path) on failure, also when either directory belongs to another user
 * (someone who owns it could swap in a server.json of their own).
 *
 * When the existing server.json names another server that is still running
 * (isLiveOtherServer()), it is left as it is: write() returns true without
 * writing and puts that file's contents in *other (else *other is emptied).
 * A second server used to overwrite the first one's file and delete it on
 * exit, so `tether list` said "not running" while the first server and its
 * sessions were alive; local clients keep talking to the first one.
 *
 * When the new file cannot be written (a full disk: ENOSPC), a server.json
 * already there is removed unless it leads clients to the same server
 * (sameServer() with `contents`: written by this process before a restart
 * in place, or by an earlier run with the same port and key), so clients do
 * not follow a dead server's file to an address nobody serves, another
 * program's, or with an old key. The caller decides whether to go on
 * without the file (`tether serve` and the desktop app serve all the same
 * and warn).
 */
bool write(const QJsonObject &contents, QString *error, QJsonObject *other = nullptr);
/**
 * True when runtime files `a` and `b` send a client to the same server the
 * same way: equal "url", "key" and "cert_sha256" (the pid may differ: a
 * client does not use it), and a URL at all.
 */
bool sameServer(const QJsonObject &a, const QJsonObject &b);
/**
 * True when `contents` (a server.json) names a process other than this one
 * that is alive (kill(pid, 0) succeeds or fails with EPERM) and is a tether:
 * its /proc/PID/comm equals our own /proc/self/comm. A dead pid, or one
 * reused by another program, makes the file stale.
 */
bool isLiveOtherServer(const QJsonObject &contents);
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
