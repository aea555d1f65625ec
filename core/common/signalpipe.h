// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <QList>
#include <QObject>

#include <csignal>

class QSocketNotifier;

namespace Tether {

/**
 * Delivers Unix signals to the Qt event loop: the classic self-pipe.
 *
 * The handler does the only async-signal-safe thing it can: it writes the
 * signal number as one byte into a non-blocking socketpair; a QSocketNotifier
 * on the other end emits received() on the event loop, once per delivered
 * signal, in order (signals of one kind that arrive while one is pending may
 * be merged by the kernel, as always). If the pipe is full (over ~200 KiB of
 * undelivered signals) further bytes are dropped, never blocking the handler.
 *
 * On construction the listed signals are also UNBLOCKED in the calling
 * thread: the signal mask survives fork and exec, and a parent that blocks
 * SIGTERM (some service managers, shells running scripts) would otherwise
 * leave it pending forever -- `tether serve` then ignored SIGTERM and its
 * sessions were orphaned at logout. Construct it in the main thread before
 * starting other threads, or those threads keep the inherited mask (harmless:
 * a process-directed signal goes to any thread that does not block it).
 *
 * SIGPIPE is set to SIG_IGN as well: a peer that vanishes mid-write must
 * surface as EPIPE on that write, not kill the process.
 *
 * One instance per process (the handler finds it through a global); a second
 * instance fails (isValid() false, a warning is logged). The destructor puts
 * the previous dispositions back and closes both ends.
 */
class SignalPipe : public QObject
{
    Q_OBJECT
public:
    /// Installs handlers for `signalNumbers` (e.g. {SIGTERM, SIGINT, SIGHUP}).
    /// SIGKILL and SIGSTOP cannot be caught: passing them fails.
    explicit SignalPipe(const QList<int> &signalNumbers, QObject *parent = nullptr);
    ~SignalPipe() override;

    /// False when the socketpair or a sigaction failed; see errorString().
    bool isValid() const { return m_valid; }
    /// Why construction failed (errno text), empty when valid.
    QString errorString() const { return m_error; }

Q_SIGNALS:
    /// `signalNumber` was delivered (emitted on the event loop, not in the
    /// handler). Receivers must not delete the SignalPipe directly (use
    /// deleteLater()): more signals of the same read may follow.
    void received(int signalNumber);

private:
    void drain();

    struct Saved {
        int signalNumber;
        struct sigaction action;
    };
    QList<Saved> m_saved;
    QSocketNotifier *m_notifier = nullptr;
    int m_fds[2] = {-1, -1};
    bool m_valid = false;
    QString m_error;
};

} // namespace Tether
