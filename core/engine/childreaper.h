// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <QList>
#include <QObject>
#include <sys/types.h>
#include <vector>

class QSocketNotifier;
class QTimer;

namespace Tether {

/**
 * Process-global reaper for children nobody waits for any more: the leader of
 * a PtyProcess destroyed while it ran, or a child whose setup failed and did
 * not exit within start()'s bounded wait.
 *
 * It reaps only the pids handed to it, with waitpid(pid, WNOHANG), when their
 * pidfd becomes readable (pidfd_open(2): level-triggered); never
 * waitpid(-1), which would steal QProcess's children. Without pidfd support
 * (Linux < 5.3) it re-checks every kFallbackPollMs while such entries wait,
 * and has no timer at all when idle. Nothing blocks.
 *
 * The instance lives in the application thread for the rest of the process;
 * adopt() may be called from any thread (it is queued there).
 */
class ChildReaper : public QObject
{
public:
    /**
     * Hands over `pid`, which must be our own unreaped child. `pidfd`: its
     * pidfd, or -1 (one is opened here, while the pid cannot have been
     * reused); the reaper owns and closes it. Reaps at once if the child has
     * already exited. Without a QCoreApplication there is no event loop to
     * wait with: one non-blocking try, and a leftover zombie is reaped by init
     * after we exit.
     */
    static void adopt(pid_t pid, int pidfd);
    /// Pids handed to the reaper and not reaped yet (application thread
    /// only): a restart in place hands them to the next process image, which
    /// is still their parent and must reap them.
    static QList<pid_t> pending();

private:
    struct Entry {
        pid_t pid;
        int pidfd;
        QSocketNotifier *notifier;
    };

    /// True when `pid` is gone (reaped now, or not our child any more).
    static bool tryReap(pid_t pid);
    void add(pid_t pid, int pidfd);
    /// Only without pidfd support (Linux < 5.3): a re-check timer every
    /// kFallbackPollMs while such entries are pending (no wakeups when idle).
    void updatePoll();
    /// Re-checks `pid` (0: every entry).
    void check(pid_t pid);

    std::vector<Entry> m_entries;
    QTimer *m_poll = nullptr;
    static inline ChildReaper *s_instance = nullptr; ///< the one reaper, once made
};

} // namespace Tether
