// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <QString>

class QCommandLineParser;

namespace Tether {

struct HostConfig;

/**
 * The server's command-line options, defined once for both programs that run
 * a server: `tether serve` (serveMain) and the desktop app `tether`
 * (desktopMain). They used to be parsed twice, and had drifted: the desktop
 * took -p/-b, which `tether serve` refused, and its own size parser wrapped
 * `--buffer-size 17592186044417M` round to 1 MiB.
 *
 *   --bind ADDR          ServerConfig::bind (not checked here: listening reports a
 *                        bad address, exit 2: Server::listen()'s badValue)
 *   --port N             ServerConfig::port, 0..65535 (0 = any free port)
 *   --ttl SECONDS        Limits::ttlSeconds, 0..31536000 (0 = until killed)
 *   --exited-ttl SECONDS Limits::exitedTtlSeconds, 0..31536000 (0 = until killed)
 *   --buffer-size BYTES  Limits::bufferCapacity, parseByteSize() (K, M, G are
 *                        units of 1024), RingBuffer::kMinCapacity..kMaxCapacity
 *   --max-sessions N     Limits::maxSessions, 1..SessionConfig::maxSessionsLimit() (the
 *                        kernel's PTY limit, /proc/sys/kernel/pty/max)
 *   --command CMD        SessionConfig::command, shell words (ShellWords::split)
 *   --tls-cert FILE      ServerConfig::tlsCert (checked when listening, TlsContext,
 *                        where a restart in place may fall back on the pair
 *                        handed over; a bad file is still exit 2)
 *   --tls-key FILE       ServerConfig::tlsKey
 *   --allow-host NAME    ServerConfig::allowHosts, repeatable; replaces the setting
 *   --insecure-bind      ServerConfig::insecureBind (BindPolicy)
 *
 * Precedence: an option given beats the settings file, which beats the
 * built-in default (config.h).
 */
class ServeOptions
{
public:
    /// Exit status of a usage error (unknown option, missing or bad value):
    /// 2, as POSIX utilities and getopt-based programs use.
    static constexpr int kUsageError = 2;

    /// Adds the options above to `parser`. Their help texts name the values
    /// in effect without the option, taken from `defaults` (the loaded
    /// settings), so `--help` shows what a run would use.
    static void addTo(QCommandLineParser &parser, const HostConfig &defaults);

    /// Reads the options set on `parser` (already parsed) into `*config`,
    /// leaving the others as they are. False at the first bad value, with
    /// `*error` naming the option, the value and what it takes
    /// (`--buffer-size must be 64K..64M bytes, not "1K"`); `*config` is then
    /// partly updated and must not be used.
    static bool read(const QCommandLineParser &parser, HostConfig *config, QString *error);

    /// Prints `PROGRAM: MESSAGE` and `(see PROGRAM --help)` to stderr and
    /// returns kUsageError. `program` is what the user typed: "tether" or
    /// "tether serve".
    static int usageError(const QString &program, const QString &message);
};

} // namespace Tether
