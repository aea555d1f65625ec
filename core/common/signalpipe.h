// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <QByteArray>
#include <QList>
#include <QObject>

#include <csignal>
#include <sys/types.h>

class QSocketNotifier;

namespace Tether {

/**
 * One delivered signal and where it came from, from the siginfo_t the
 * kernel hands an SA_SIGINFO handler (sigaction(2)): a shutdown caused from
 * outside (a launcher killing its process group, `timeout`, a logout) then
 * says who did it.
 */
struct SignalInfo {
    int number = 0;     ///< e.g. SIGTERM
    int code = 0;       ///< si_code: SI_USER (kill(2)), SI_QUEUE, SI_TKILL, SI_KERNEL, ...
    pid_t senderPid = 0; ///< si_pid; meaningful only when fromProcess()
    uid_t senderUid = 0; ///< si_uid; meaningful only when fromProcess()

    /// Sent by a process with kill(2), sigqueue(3) or tgkill(2): senderPid
    /// and senderUid are valid (0 is a valid pid here only for the kernel).
    bool fromProcess() const;
    /// "SIGTERM from pid 1234 (timeout 5 tether serve), uid 1000", or
    /// "SIGHUP from the kernel (e.g. its terminal hung up)". The command line
    /// is read from /proc/PID/cmdline when this is called (the event loop
    /// runs it soon after the signal): "(gone)" when the sender has exited
    /// meanwhile or cannot be read (another user's process under hidepid).
    QString describe() const;
};

/// "SIGTERM", "SIGHUP", ... for the signals a program commonly handles;
/// "signal N" for others.
QString signalName(int signalNumber);

/**
 * Delivers Unix signals to the Qt event loop: the classic self-pipe.
 *
 * The handler (SA_SIGINFO) does the only async-signal-safe thing it can: it
 * writes the signal number and its sender (a fixed-size record of siginfo_t
 * fields) into a non-blocking socketpair; a QSocketNotifier on the other end
 * emits receivedInfo() and received() on the event loop, once per delivered
 * signal, in order (signals of one kind that arrive while one is pending may
 * be merged by the kernel, as always). If the pipe is full (thousands of
 * undelivered signals) further records are dropped, never blocking the
 * handler.
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
    /// A signal was delivered, with its sender (emitted on the event loop,
    /// not in the handler), just before received() for the same signal.
    /// Receivers must not delete the SignalPipe directly (use deleteLater()).
    void receivedInfo(const Tether::SignalInfo &info);
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
    QByteArray m_partial; ///< bytes of a record not read whole yet
    int m_fds[2] = {-1, -1};
    bool m_valid = false;
    QString m_error;
};

} // namespace Tether

Q_DECLARE_METATYPE(Tether::SignalInfo)
