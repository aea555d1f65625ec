// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include "apiclient.h"
#include "attachclient.h"
#include "detachkey.h"
#include "rawterminal.h"
#include "replayinputgate.h"
#include "terminalstate.h"

#include <QObject>
#include <QTimer>

#include <unistd.h>

class QSocketNotifier;

namespace Tether {

class SignalPipe;
class WriteQueue;

/// Exit statuses of the client commands (documented in clientcommand.h and
/// in --help).
namespace ClientExit {
constexpr int Ok = 0;
constexpr int Error = 1;
constexpr int Usage = 2;
constexpr int TakenOver = 3;
constexpr int NotFound = 4;
constexpr int Killed = 5;
} // namespace ClientExit

/**
 * One `tether attach`: the attach loop between a terminal and an
 * AttachClient (clientcommand.h describes what the user sees).
 *
 * - Input: the input fd (stdin) is read through a QSocketNotifier, passed
 *   through the ReplayInputGate (the terminal's answers to queries in a
 *   replay never reach the program) and the DetachKeyFilter, and sent.
 * - Output: AttachClient output goes to a WriteQueue on a separate
 *   non-blocking open file description of the output fd (stdout's
 *   description is shared with the shell and stdin, and must not become
 *   O_NONBLOCK); more than kHighWater bytes queued pause the attachment
 *   (AttachClient::setPaused) until under kLowWater: the server stops
 *   reading the program's output (flow control; the program waits, nothing
 *   is lost, typed keys still go), or with an older server the connection
 *   is let go and made again with resume=. Everything written is
 *   also fed to a TerminalState, whose leaveSequence() gives the terminal
 *   back on exit.
 * - After each replay, ReplayInputGate::kQuery is written (the DSR fence)
 *   when input and output are terminals.
 * - The terminal: RawTerminal (raw mode, restored on every exit path);
 *   signals through a SignalPipe: SIGWINCH sends the window size,
 *   SIGTERM/SIGINT/SIGHUP detach (exit 128+N), SIGTSTP suspends (see
 *   clientcommand.h).
 * - Leaving: output still queued gets up to kDrainMs to reach the terminal
 *   (not after a detach: the user wants out now); then the leave sequence,
 *   and while the input gate is still closed, a drain of the terminal's late
 *   answers (ReplayInputGate::drain, kLeaveFenceMs), then the end message on
 *   stderr and finished().
 *
 * Never blocks: every fd it writes is non-blocking (a regular file output
 * never blocks), and the few bytes of the title push and leave sequence are
 * written directly, best effort.
 */
class TtyAttach : public QObject
{
    Q_OBJECT
public:
    static constexpr qsizetype kHighWater = 4 * 1024 * 1024; ///< bytes queued for the terminal: pause
    static constexpr qsizetype kLowWater = 256 * 1024;       ///< bytes queued: resume
    static constexpr int kDrainMs = 2000;        ///< last output's time to reach the terminal at the end
    static constexpr int kLeaveFenceMs = 500;    ///< wait for late answers when leaving
    static constexpr int kReconnectNoticeMs = 1500; ///< "[tether: reconnecting…]" after this long

    /// `detachKey` from parseDetachKey() (-1: none). `inFd`/`outFd`: the
    /// terminal (not owned).
    TtyAttach(const ServerEndpoint &endpoint, const QString &id, ViewerMode mode, int detachKey,
              int inFd = STDIN_FILENO, int outFd = STDOUT_FILENO, QObject *parent = nullptr);
    ~TtyAttach() override;

    /// The output queue's watermarks (bytes; low < high), default kHighWater
    /// and kLowWater. Before start() (tests use small ones to reach them
    /// with little output).
    void setOutputWatermarks(qsizetype high, qsizetype low)
    {
        m_highWater = high;
        m_lowWater = low;
    }

    /// Sets up (signals, raw mode, notifiers) and connects. False, with a
    /// message on stderr, when signals cannot be handled.
    bool start();
    /// start(), then the event loop until finished(); returns the status.
    int run();

    /// The exit status for an end of the attachment (clientcommand.h):
    /// ended by signal `signal` (0: none) → 128 + signal.
    static int exitStatusFor(AttachStream::End end, int signal);

    /// The client (for tests).
    AttachClient *client() { return &m_client; }
    /// The input gate (for tests).
    const ReplayInputGate *inputGate() const { return &m_gate; }

Q_SIGNALS:
    /// The attachment is over, the terminal restored, the message printed.
    void finished(int status);

private:
    void onSignal(int sig);
    void suspend();
    void sendSize();
    void pushTitle();
    void readInput();
    void appendOutput(const QByteArray &data);
    void onReplayFinished();
    void onOutputFailed();
    void onFinished(AttachStream::End end, const QString &message);
    void finalize();
    void finishExit();
    void writeDirect(const QByteArray &bytes);
    bool terminalSize(int *cols, int *rows) const;

    AttachClient m_client;
    ViewerMode m_mode;
    DetachKeyFilter m_detachKey;
    int m_inFd;
    int m_ttyOutFd;           ///< the terminal's output fd as given
    int m_outFd = -1;         ///< what we write: our own description of it, or it
    RawTerminal m_raw;
    WriteQueue *m_out = nullptr;
    QSocketNotifier *m_inNotifier = nullptr;
    SignalPipe *m_signals = nullptr;
    QByteArray m_inBuffer;
    TerminalState m_terminal;
    ReplayInputGate m_gate;
    QTimer m_drainTimer;
    QTimer m_reconnectNotice;
    bool m_inIsTty = false;
    bool m_noticeShown = false;
    bool m_ending = false;      ///< leaving: no more input, no more pausing
    /// Not reading the terminal: the connection holds over
    /// AttachClient::kInputHighBytes of unsent input (a large paste that the
    /// program takes slowly); read on at AttachClient::inputDrained().
    bool m_inputHeld = false;
    bool m_suspending = false;  ///< suspend() drops the output queue
    bool m_finishedEnd = false; ///< AttachClient::finished() came
    bool m_finalized = false;
    bool m_leaving = false;     ///< draining the terminal's late answers
    bool m_exited = false;      ///< finished() emitted
    int m_signal = 0;
    qsizetype m_highWater = kHighWater;
    qsizetype m_lowWater = kLowWater;
    int m_status = ClientExit::Error;
    QString m_message;
};

} // namespace Tether
