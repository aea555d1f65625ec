// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include "registry.h"
#include <QString>
#include <QStringList>

class QSettings;

namespace Tether {

/**
 * The host's settings, stored with QSettings (organization "Tether",
 * application "tether": ~/.config/Tether/tether.conf). The host owns them:
 * clients (the desktop app's Settings dialog) read and change them through
 * `GET`/`PATCH /api/settings` (SettingsApi). The desktop app's own keys in
 * the same file (desktop/terminal, the terminal/ group, ui/autostart) are not here:
 * DesktopSettings (ui). Precedence: command-line option > settings file >
 * built-in default.
 *
 * Keys: sessions/ttl (seconds a detached running session is kept, 0 = never
 * expire, the default), sessions/exitedTtl (seconds an exited session is
 * kept, default 1800, 0 = never), sessions/bufferSize (bytes,
 * 64 KiB..64 MiB), sessions/maxSessions (1..maxSessionsLimit(),
 * the kernel's PTY limit, 4096 by default), sessions/screen (bool,
 * default true: keep a server-side screen, Limits::screen),
 * sessions/shellIntegration (bool, default true: load Tether's shell
 * integration into bash, zsh and fish, Limits::shellIntegration),
 * sessions/notifyAfter (seconds, 0..86400, default 10: a command that ran
 * this long notifies when it ends, Limits::notifyAfterSeconds),
 * sessions/savedScrollbackLines (0..1000, default 1000: the scrollback lines
 * kept on disk with each session's record, SessionRecordStore; 0 = no record
 * is written at all), sessions/command (a
 * command line in shell words, ShellWords::split: quotes, no expansion;
 * empty = login shell; one that cannot be split, an open quote, is logged
 * and runs the login shell),
 * server/bind (address), server/port (0..65535; 0 = any free port),
 * server/pingInterval and server/pingTimeout (seconds), server/tlsCert and
 * server/tlsKey (PEM files: HTTPS and wss:// on the port), server/allowHosts
 * (names accepted by the Host and Origin checks).
 * Out-of-range values read from the file are clamped and logged.
 */
struct Config {
    static constexpr quint16 kDefaultPort = 7420;
    /// Bound of sessions/ttl (a year), shared by every place that takes the
    /// value (file, options, dialog).
    static constexpr int kMaxTtlSeconds = 365 * 24 * 3600;
    /// Where Linux says how many pseudo-terminals may exist at once, all
    /// devpts instances together (kernel.pty.max, pts(4)).
    static constexpr const char *kPtyMaxFile = "/proc/sys/kernel/pty/max";
    /// kernel.pty.max when the file cannot be read: the kernel's default.
    static constexpr int kDefaultPtyMax = 4096;
    /// The largest kernel.pty.max Linux accepts (NR_UNIX98_PTY_MAX, 1 << 20).
    static constexpr int kPtyMaxCeiling = 1 << 20;
    /**
     * The upper bound of sessions/maxSessions (file, --max-sessions, the
     * settings dialog): the kernel's limit on pseudo-terminals, read from
     * `ptyMaxFile` (one per session: more sessions than that can never
     * start). kDefaultPtyMax when the file cannot be read or does not hold
     * a positive integer, at most kPtyMaxCeiling. Read at each call (a
     * sysctl may change it; callers read it when they parse options or
     * load settings). Fewer may be free in practice: other programs' PTYs
     * count too, and a devpts instance other than the first (a container)
     * gets kernel.pty.reserve fewer; POST /api/sessions then answers 503
     * naming the limit (PtyProcess::StartFailure::Resources).
     */
    static int maxSessionsLimit(const QString &ptyMaxFile = QLatin1String(kPtyMaxFile));

    Limits limits;
    QString bind = QStringLiteral("127.0.0.1");
    quint16 port = kDefaultPort;
    QString command;           ///< default command line; empty = login shell
    /// sessions/savedScrollbackLines: scrollback lines saved on disk with each
    /// running session's record (SessionRecordStore), 0..kMaxSavedScrollbackLines;
    /// 0 turns the records off. Read at start.
    int savedScrollbackLines = kMaxSavedScrollbackLines;
    static constexpr int kMaxSavedScrollbackLines = 1000;
    int pingIntervalSec = 20;  ///< WebSocket ping interval, seconds
    int pingTimeoutSec = 60;   ///< drop a viewer silent this long, seconds
    /// Where the server keeps its access key (Server, loadOrCreateAccessKey):
    /// "access-key" beside the settings file when loaded from settings
    /// (~/.config/Tether/access-key); empty = a new key at every start.
    QString accessKeyFile;
    /// server/tlsCert, server/tlsKey: PEM certificate (chain, leaf first) and
    /// private key; both set = serve HTTPS and wss:// only (TlsContext).
    QString tlsCert;
    QString tlsKey;
    /// server/allowHosts: extra names (NAME, or NAME:PORT for a reverse
    /// proxy) the Host and Origin checks accept (docs/protocol.md section 2).
    QStringList allowHosts;
    /// --insecure-bind (command line only, never from the settings file): a
    /// non-loopback bind without TLS is allowed, with a warning at every
    /// start (BindPolicy).
    bool insecureBind = false;

    /// Both TLS files are set.
    bool tlsEnabled() const { return !tlsCert.isEmpty() && !tlsKey.isEmpty(); }

    /// Reads every key (missing keys keep the defaults).
    /// server/tlsCert, server/tlsKey and server/allowHosts are read, never
    /// written by save(): the Settings dialog does not edit them, and a
    /// command-line --tls-cert must not end up in the file.
    static Config load(QSettings &settings);
    /// Reads from the default QSettings location.
    static Config load();
    void save(QSettings &settings) const;
    void save() const;

    /// The default command as argv, split by ShellWords::split (empty = login
    /// shell, also when the command has an unterminated quote).
    QStringList commandArgv() const;
};

} // namespace Tether
