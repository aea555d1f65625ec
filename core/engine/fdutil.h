// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <sys/types.h>

class QSocketNotifier;

namespace Tether {

// Small fd helpers shared by PtyProcess and ChildReaper.

/// Poll interval (ms) used only when the kernel has no pidfd_open (Linux < 5.3).
constexpr int kFallbackPollMs = 100;

/// pidfd_open(2) for `pid`: an fd that becomes readable when the process
/// exits (level-triggered), always close-on-exec. -1 with errno set on error
/// (ENOSYS before Linux 5.3, ESRCH when there is no such process). Only a pid
/// that cannot be reused (our unreaped child) names one process for sure.
int pidfdOpen(pid_t pid);

/// Closes `fd` if it is open (>= 0) and sets it to -1.
void closeFd(int &fd);

/// Disables a notifier at once (no more events, its fd may be closed right
/// after) and deletes it later: we may be inside its own activated() signal.
/// Sets `n` to null; does nothing when it is null.
void dropNotifier(QSocketNotifier *&n);

/// Moves `fd` to a number >= 3 (keeping close-on-exec), so that dup2() onto
/// 0/1/2 in a child cannot clobber it when our own stdio was closed. Returns
/// the new fd (the old one is closed), `fd` itself when it is already >= 3 or
/// negative, -1 when fcntl(2) fails.
int moveAbove2(int fd);

} // namespace Tether
