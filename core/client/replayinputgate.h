// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <QByteArray>
#include <QObject>
#include <QTimer>

namespace Tether {

/**
 * The input gate of a viewer while a replay is being rendered: the one
 * mechanism `tether attach` (a real terminal) and the terminal window
 * (QTermWidget) share.
 *
 * Why: a terminal rendering a replay answers the queries in that old output
 * (cursor position CSI 6 n → ESC [ r ; c R, device attributes CSI c → ESC [ ?
 * ... c); those answers belong to a past program state, and sent to the
 * program they are stray typed text (microsoft/vscode#123803; a first-time user saw
 * "2RR84;0;0c" at a prompt).
 *
 * How (a DSR fence): right after the replay's last byte, the holder writes
 * kQuery (Device Status Report, CSI 5 n, ECMA-48 §8.3.35 / DEC VT100) to the
 * terminal and calls fenceWritten(). A terminal answers queries in the order
 * it parses them, so every answer to the replay's queries comes before the
 * answer to ours (ESC [ 0 n, or ESC [ 3 n "malfunction"): input is gated
 * exactly until that answer, however slow the terminal or the link (ssh), and
 * the answer itself is dropped. A fixed delay let late answers through.
 * Checked for both sinks: a real terminal behind the CLI (tmux in
 * tests/ui/tst_cliterminal, noQueryAnswersLeftAtThePrompt) and QTermWidget's
 * emulator, which answers through QTermWidget::sendData
 * (tests/ui/tst_terminalwindow, widgetAnswersTheReplayFence).
 *
 * While gated, input that starts with ESC (what an answer starts with) is
 * dropped; plain typing passes, so keys typed during a long replay are not
 * lost. A terminal that never answers opens the gate after
 * kAnswerTimeoutMs. A sink that cannot be asked (output not a terminal)
 * uses settleAfter() instead: the gate opens kSettleMs after the sink has
 * taken the replay's last byte.
 *
 * Leaving (drain()): after the last write the terminal may still be
 * answering queries of a replay; once the viewer is gone those answers land
 * at the shell prompt. drain() swallows all input until the answer to a
 * fence (the one pending, or one the holder has just written), bounded by a
 * timeout, then emits opened().
 */
class ReplayInputGate : public QObject
{
    Q_OBJECT
public:
    /// Device Status Report (CSI 5 n): "are you OK?"; answer ESC [ 0 n or ESC [ 3 n.
    static constexpr char kQuery[] = "\x1b[5n";
    /// A terminal that never answers the fence: open after this long.
    static constexpr int kAnswerTimeoutMs = 3000;
    /// Without a fence: open this long after the sink took the replay (a
    /// terminal answers right after parsing).
    static constexpr int kSettleMs = 100;

    enum class State {
        Open,      ///< input passes
        Rendering, ///< a replay is being written; no fence yet
        Fenced,    ///< kQuery follows the replay; waiting for its answer
        Settling,  ///< no fence: waiting for the sink, then kSettleMs
        Draining,  ///< leaving: all input dropped until the fence's answer
    };
    Q_ENUM(State)

    /// What the gate makes of one input chunk: bytes [0, from) are the
    /// terminal's answers (dropped); bytes [from, from + size) are input,
    /// sent when `pass`, else dropped too (gated). The holder still looks at
    /// a gated region for its own keys (the detach key works during a replay).
    struct Verdict {
        qsizetype from = 0;
        qsizetype size = 0;
        bool pass = true;
    };

    explicit ReplayInputGate(QObject *parent = nullptr);

    /// A new attach: gated (Rendering) when a replay follows, else Open.
    void begin(bool replay);
    /// Gated until the next begin() (the holder is about to redraw, e.g.
    /// `tether attach` continued after SIGTSTP). Drops a pending fence.
    void close();
    /// Open now (detached: nothing left to protect). Stops the timers.
    void open();
    /// The holder wrote kQuery right after the replay's last byte. No effect
    /// unless Rendering.
    void fenceWritten();
    /// No fence possible: the replay ends at sink position `end`, the sink
    /// has taken bytes up to `rendered` (see rendered()). No effect unless
    /// Rendering.
    void settleAfter(quint64 end, quint64 rendered);
    /// The sink has taken the bytes up to stream position `position`.
    void rendered(quint64 position);
    /// Leaving: swallow all input until the answer to the fence (pending,
    /// or written by the holder just before), at most `timeoutMs`; then
    /// Open and opened(). A pending fence's split answer is kept.
    void drain(int timeoutMs);

    /// Filters one chunk of input (see class doc). May open the gate (and
    /// emit opened()) when the chunk holds the fence's answer.
    Verdict filter(const char *data, qsizetype size);

    State state() const { return m_state; }
    bool isOpen() const { return m_state == State::Open; }
    bool isFencePending() const { return m_state == State::Fenced; }

Q_SIGNALS:
    /// The gate opened (the answer arrived, or a timeout).
    void opened();

private:
    /// Offset just past the fence's answer in tail + data, relative to
    /// `data` (>= 0), or -1 when not there; keeps a tail for a split answer.
    qsizetype scanForAnswer(const char *data, qsizetype size);
    void setOpen();

    State m_state = State::Open;
    QByteArray m_tail; ///< last bytes of input while waiting (an answer split between reads)
    QTimer m_timer;
    quint64 m_end = 0; ///< Settling: the replay's end in sink positions
};

} // namespace Tether
