// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include "registry.h"
#include <QString>
#include <QStringList>

class QSettings;

namespace Tether {

/**
 * The sessions' part of the host's settings (the `sessions/` group of the
 * settings file): what the engine needs to run sessions. The server's part
 * (`server/`) is ServerConfig (server layer), and the two together, loaded
 * from and saved to one file, are HostConfig (server layer); the desktop app's
 * own keys are DesktopSettings (ui).
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
 * and runs the login shell).
 * Out-of-range values read from the file are clamped and logged.
 */
struct SessionConfig {
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
    QString command;           ///< default command line; empty = login shell
    /// sessions/savedScrollbackLines: scrollback lines saved on disk with each
    /// running session's record (SessionRecordStore), 0..kMaxSavedScrollbackLines;
    /// 0 turns the records off. Read at start.
    int savedScrollbackLines = kMaxSavedScrollbackLines;
    static constexpr int kMaxSavedScrollbackLines = 1000;

    /// Reads the sessions/ keys (missing keys keep the defaults).
    static SessionConfig load(QSettings &settings);
    /// Writes every sessions/ key.
    void save(QSettings &settings) const;

    /// The default command as argv, split by ShellWords::split (empty = login
    /// shell, also when the command has an unterminated quote).
    QStringList commandArgv() const;
};

/**
 * A number read from the settings file, kept within lo..hi: a value outside
 * is logged (tether.registry: the key, the value read and the one used) and
 * the nearest bound returned. Shared by SessionConfig and ServerConfig.
 */
qint64 clampedSetting(const char *key, qint64 value, qint64 lo, qint64 hi);

} // namespace Tether
