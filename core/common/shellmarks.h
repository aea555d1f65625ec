// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <QByteArray>
#include <QtGlobal>

namespace Tether {

/**
 * One shell-integration mark or notification found in a session's output
 * (docs/protocol.md §4, "Commands and notifications"). `at` is the stream
 * offset of the sequence's first byte (its ESC; the BEL itself for a bell),
 * `end` the offset just past its terminator (BEL, ESC \ or C1 ST; an OSC
 * ended by an ESC that begins another sequence ends at that ESC, and is
 * reported when the byte after the ESC arrives).
 * `payload`/`payloadSize` point into the scanner: valid only during the
 * ShellMarkScanner::Handler call; at most ShellMarkScanner::kMaxPayload
 * bytes (`truncated` when the program sent more).
 */
struct ShellMark {
    enum Kind : quint8 {
        PromptStart,  ///< OSC 133;A / 633;A: the prompt is drawn
        CommandStart, ///< OSC 133;B / 633;B: the prompt ended, the user types
        OutputStart,  ///< OSC 133;C / 633;C: the command runs, its output follows
        CommandEnd,   ///< OSC 133;D[;status] / 633;D[;status]: payload = status text
        CommandLine,  ///< OSC 633;E;line[;nonce]: payload = the line, VS Code escaped
        Cwd,          ///< OSC 7;file://host/path or OSC 633;P;Cwd=path: payload = path (decoded)
        Notify,       ///< OSC 9;text, OSC 777;notify;title;body, OSC 99;meta;text: payload = text
        Bell,         ///< BEL outside any sequence
    };
    Kind kind = PromptStart;
    quint64 at = 0;
    quint64 end = 0;
    const char *payload = nullptr;
    qsizetype payloadSize = 0;
    bool truncated = false;
    QByteArray payloadBytes() const { return QByteArray(payload, int(payloadSize)); }
};

/**
 * Finds shell-integration marks in a terminal output stream: OSC 133
 * (FinalTerm: A prompt, B command start, C output start, D;status end),
 * OSC 633 (VS Code's: the same, plus E;commandline and P;Cwd=), OSC 7
 * (current directory as a file:// URL), the notifications programs send
 * (OSC 9 (not ConEmu's "9;N;" subcommands), OSC 777;notify, OSC 99 (kitty))
 * and BEL outside sequences.
 *
 * Fed every output byte in stream order, beside the session's head
 * TerminalState (Session::onOutput). The stream is untrusted: anything may
 * arrive, split anywhere, and only costs what it is. Outside sequences the
 * scan is memchr(3) for ESC and BEL (SIMD in glibc); only bytes of OSC
 * sequences are looked at one by one. It never allocates after
 * construction: the payload buffer is reserved once (kMaxPayload bytes);
 * a longer payload is cut there (ShellMark::truncated). Follows the
 * parsing rules of TerminalState for what ends an OSC (BEL, ESC, which
 * starts ST, C1 ST U+009C; CAN and SUB abort it); C1 OSC (U+009D) does not
 * start one here (shells and the programs above send ESC ]).
 * A mark split across a restart in place is lost (the scanner's state is not
 * handed over; it starts in the ground state).
 */
class ShellMarkScanner
{
public:
    /// Longest payload kept (bytes): a command line, a path, a notification text.
    static constexpr qsizetype kMaxPayload = 4096;

    class Handler
    {
    public:
        virtual ~Handler() = default;
        virtual void shellMark(const ShellMark &mark) = 0;
    };

    ShellMarkScanner();
    /// Scans `size` bytes that start at stream offset `offset`, calling
    /// `handler` for each mark completed in them, in order.
    void scan(const char *data, qsizetype size, quint64 offset, Handler &handler);

private:
    enum class State : quint8 { Ground, Escape, OscNumber, OscBody, OscSkip, String };
    void oscDispatch(quint64 endOffset, Handler &handler);
    State m_state = State::Ground;
    int m_oscNumber = 0;
    bool m_prevC2 = false;     ///< the last OSC byte was 0xC2 (a C1 ST may follow)
    bool m_truncated = false;
    bool m_inBody = false;     ///< the OSC being read is one of ours, past "N;"
    bool m_pendingDispatch = false; ///< an OSC of ours ended at an ESC: dispatched with the next byte
    quint64 m_oscAt = 0;       ///< offset of the last ESC seen
    quint64 m_oscStart = 0;    ///< offset of the ESC that began the OSC being read
    QByteArray m_buf;          ///< OSC body after "N;", at most kMaxPayload bytes
};

/// Decodes VS Code's escaping of an OSC 633;E command line ("\\" for a
/// backslash, "\xNN" for a byte, e.g. "\x3b" for ';'), stopping at the first
/// unescaped ';' (a nonce follows).
QByteArray decodeVsCodeEscapes(const QByteArray &text);

} // namespace Tether
