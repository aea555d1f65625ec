// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <QByteArray>
#include <QString>

#include <sys/resource.h>

namespace Tether {

/**
 * The file descriptor limit (RLIMIT_NOFILE, getrlimit(2)) of Tether and of
 * the programs it starts.
 *
 * Desktops and shells start processes with a soft limit of 1024 and a much
 * higher hard limit (524288 under systemd 240 and later). Each session costs
 * Tether about two descriptors (PTY master, pidfd) and each connection one,
 * so at 1024 Tether runs out near 500 sessions, long before the kernel's PTY
 * limit (/proc/sys/kernel/pty/max, 4096 by default). The server therefore
 * raises its soft limit to the hard one at start (raiseSoftLimit()), and the
 * programs in its sessions get back the soft limit Tether started with
 * (childSoftLimit()): programs that use select(2) misbehave with descriptors
 * above FD_SETSIZE (1024), which is why systemd keeps the default soft limit
 * at 1024 for what it starts (systemd.exec(5), LimitNOFILE=; the systemd
 * 240 NEWS entry on raising the hard limit).
 *
 * A restart in place (execve(2)) keeps the raised limit, so the one Tether
 * started with travels to the next image in the environment variable
 * kOriginalSoftEnv (handoverEnvEntry()), which raiseSoftLimit() reads and
 * removes again.
 */
namespace FdLimit {

/// Environment variable that hands the original soft limit to the next
/// process image on a restart in place (a decimal number).
inline constexpr char kOriginalSoftEnv[] = "TETHER_HANDOVER_NOFILE_SOFT";

/// Outcome of raiseSoftLimit(); limits are descriptor counts.
struct Raise {
    rlim_t original = 0; ///< the soft limit Tether started with (what children get)
    rlim_t soft = 0;     ///< the soft limit now
    rlim_t hard = 0;     ///< the hard limit (unchanged)
    QString error;       ///< why getrlimit/setrlimit failed; empty on success
};

/// Records the soft limit we started with (or the one handed over in
/// kOriginalSoftEnv, which it removes from the environment so that it
/// reaches no child) and raises the soft limit to the hard limit. Call it
/// once, at the start of `tether serve` and of the desktop app, before any
/// thread is started (the environment is changed). A failure leaves the
/// limit as it was and is reported in Raise::error (the server still runs,
/// with fewer sessions) and logged as a warning; success is logged at debug
/// level (tether.server).
Raise raiseSoftLimit();

/// The soft limit the programs in sessions get: the one recorded by
/// raiseSoftLimit(), or the current soft limit when it was never called
/// (tests, or a library user that did not raise it).
rlim_t childSoftLimit();

/// "TETHER_HANDOVER_NOFILE_SOFT=N" (N = childSoftLimit()), for the environment of the
/// next process image of a restart in place.
QByteArray handoverEnvEntry();

} // namespace FdLimit
} // namespace Tether
