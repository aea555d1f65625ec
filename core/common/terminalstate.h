// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <QByteArray>
#include <QString>

#include <algorithm>

namespace Tether {

/**
 * Follows a terminal output byte stream just enough to replay it safely.
 *
 * A small VT500-style parser (states after Paul Williams' DEC ANSI parser:
 * ground, escape, CSI, OSC, DCS/SOS/PM/APC strings) plus a UTF-8 decoder
 * position. It tracks:
 *  - whether the stream is at a safe boundary (ground state, not inside a
 *    UTF-8 sequence), so a replay never starts inside an escape sequence or a
 *    character (martanne/abduco#32, jupyterlab/jupyterlab#12073);
 *  - the DEC private modes that a replay must re-establish: alternate screen
 *    (47/1047/1049), cursor visibility (25), bracketed paste (2004), mouse
 *    tracking (9, 1000, 1002, 1003) and encodings (1005, 1006, 1015), focus
 *    events (1004), application cursor keys (DECCKM, 1);
 *  - the window title set by OSC 0 or OSC 2 (BEL or ST terminated; at most
 *    kMaxTitle bytes kept, decoded as UTF-8).
 * Also autowrap off (DECAWM, ?7), insert mode (IRM, CSI 4), application
 * keypad (DECKPAM/DECKPNM, ESC = / ESC >) and the scroll margins (DECSTBM);
 * the G0/G1 character sets and SI/SO (charset()), whether tab stops were
 * changed (tabStopsChanged()), a count of terminal queries (queriesSeen())
 * and whether a pending wrap may be in force (lastPrintMayWrap()).
 * A full reset (ESC c, RIS) clears all modes and charsets (the title is kept,
 * as in xterm); a soft reset (CSI ! p, DECSTR) shows the cursor and resets
 * DECCKM, autowrap (on), insert mode, keypad mode, the margins and the
 * charsets, as xterm.js does; the screen buffer, mouse, bracketed paste and
 * focus reporting survive it.
 *
 * Parsing follows xterm.js, the terminal that replays our output: bytes are
 * UTF-8 decoded first (RFC 3629 ranges), so bytes >= 0x80 are never 8-bit C1
 * controls; the C1 code points U+0080..U+009F (C2 80..C2 9F) are. ESC inside
 * a string ends it (ESC \ is ST; an OSC is dispatched on that ESC, as in
 * Williams' diagram); CAN and SUB abort any sequence, an unfinished title
 * included; a character >= U+00A0 inside an escape or CSI sequence aborts it.
 * Mode rules: one mouse tracking mode (9/1000/1002/1003) at a time, and
 * resetting any of them turns tracking off; one mouse encoding
 * (1005/1006/1015) at a time, resetting one drops only it; leaving the
 * alternate screen with any of 47/1047/1049 returns to the normal screen.
 *
 * feed() costs a few instructions per byte (printable ASCII in ground state
 * is skipped in a tight loop) and never allocates, except to store title
 * text (reserved once, growing to at most kMaxTitle bytes) and to build the
 * title QString when an OSC 0/2 completes.
 * Copyable: the session copies the state at the retained start to find the
 * first safe replay byte.
 */
class TerminalState
{
public:
    static constexpr int kMaxTitle = 4096;

    enum Mode : quint32 {
        AppCursorKeys   = 1u << 0,  ///< DECCKM, ?1
        CursorHidden    = 1u << 1,  ///< ?25 reset
        AltScreen       = 1u << 2,  ///< ?1049 / ?1047 / ?47
        AltScreen1049   = 1u << 3,  ///< the alt screen was entered with ?1049 (saves cursor)
        BracketedPaste  = 1u << 4,  ///< ?2004
        MouseX10        = 1u << 5,  ///< ?9
        MouseNormal     = 1u << 6,  ///< ?1000
        MouseButton     = 1u << 7,  ///< ?1002
        MouseAny        = 1u << 8,  ///< ?1003
        MouseUtf8       = 1u << 9,  ///< ?1005
        MouseSgr        = 1u << 10, ///< ?1006
        MouseUrxvt      = 1u << 11, ///< ?1015
        FocusEvents     = 1u << 12, ///< ?1004
        NoAutowrap      = 1u << 13, ///< DECAWM reset, ?7 l (autowrap is on by default)
        InsertMode      = 1u << 14, ///< IRM, CSI 4 h (ANSI mode, not DEC private)
        KeypadApp       = 1u << 15, ///< DECKPAM, ESC = (ESC > resets)
        OriginMode      = 1u << 16, ///< DECOM, ?6 (not in restoreSequence(): setting it homes the cursor)
    };

    /// Feeds output bytes in stream order. Splitting the stream anywhere
    /// (inside sequences or characters) gives the same result as one call.
    /// size <= 0 does nothing.
    void feed(const char *data, qsizetype size);
    void feed(const QByteArray &data) { feed(data.constData(), data.size()); }
    /// Like feed(), and returns the length of the inert prefix of `data`:
    /// the bytes taken in the ground state with no character pending that
    /// the parser does not act on there (ASCII but ESC, SO and SI; see
    /// groundActs() in terminalstate.cpp). Only lastPrintMayWrap() can
    /// change over them. 0 when the state was not at a safe boundary at the
    /// start, or the first byte acts. A session's head state reports this
    /// so its tail state can take the same bytes later without scanning them
    /// (InertRuns; issue 11: every output byte was parsed twice).
    qsizetype feedReportingInert(const char *data, qsizetype size);
    /// Takes bytes that feedReportingInert() found inert at the same point
    /// of the same stream (or any bytes in [0x00, 0x7F] but ESC, SO and SI)
    /// with the same result as feed(), without scanning them: only a
    /// printable byte is looked for, from the end (O(1) for text). When this
    /// state is not at a safe boundary the bytes were not inert here: they
    /// are fed as by feed(). Bytes outside that set give a wrong state.
    void feedInert(const char *data, qsizetype size);

    /// True between sequences and characters (ground state, no UTF-8
    /// continuation byte pending): a replay may start here.
    bool atSafeBoundary() const;
    /// The tracked modes in force, as a set of Mode bits (0 = all default).
    quint32 modes() const { return m_modes; }
    bool hasMode(Mode m) const { return (m_modes & m) != 0; }

    /// Escape sequences that put a freshly reset terminal into the modes in
    /// force now (e.g. "\x1b[?1049h\x1b[?25l"); empty when all are default.
    /// One "CSI ? n h" per set mode, in this order: alternate screen first
    /// (1049 if it was entered or re-entered with 1049, else 47 or 1047 as
    /// first entered), then 1, 2004, the mouse tracking mode, the mouse
    /// encoding, 1004; then "CSI ? 7 l" (no autowrap), "CSI 4 h" (insert),
    /// "ESC =" (application keypad), the scroll margins "CSI t ; b r" (which
    /// home the cursor; with a bottom margin the cursor then goes to its
    /// first column, "CSI b ; 1 H", where scrolling output comes), and finally
    /// "CSI ? 25 l" if the cursor is hidden. A replay of a stream whose
    /// beginning was dropped starts with this (found by a first-time user:
    /// after the ring rolled over, a program scrolling in rows 3..20 had its
    /// lines replayed onto one row).
    QByteArray restoreSequence() const;

    /// True when the stream has set scroll margins (DECSTBM, "CSI t ; b r"
    /// with parameters) and nothing has reset them since: "CSI r", RIS,
    /// DECSTR or a resize (marginsResetByResize()).
    bool marginsSet() const { return m_marginsSet; }
    /// The parameters of that DECSTBM (0 where omitted: the screen's edge).
    int marginTop() const { return m_marginTop; }
    int marginBottom() const { return m_marginBottom; }
    /// The terminal was resized at this point of the stream. Terminals reset
    /// the scroll margins to the full screen on a resize (xterm, xterm.js,
    /// tmux, VTE), and nothing in the byte stream says so: a replay of vim's
    /// "CSI 1;20 r" after the window grew to 30 rows would leave the viewer
    /// scrolling in 20 rows (found by a first-time user: garbled vim after
    /// reattach, a broken shell after it). Clears marginsSet().
    void marginsResetByResize() { m_marginsSet = false; }
    /// What a viewer writes where a resize reset the margins: DECSC, "CSI r"
    /// (full-screen margins, which homes the cursor), DECRC (the cursor, its
    /// attributes and origin mode come back). Costs the program's own
    /// DECSC slot on that screen, which DECRC after it would then restore.
    static QByteArray marginResetSequence() { return QByteArrayLiteral("\x1b" "7" "\x1b[r" "\x1b" "8"); }
    /// True when margins are set (marginsSet()) and, at `rows` rows, they are
    /// the whole screen all the same: top 1 (or omitted) and an explicit
    /// bottom of `rows` or more ("CSI 1 ; 24 r" at 24 rows, as vim leaves
    /// them). The same bytes set a region on a taller screen (issue 29), so
    /// a replay at another size must not take them as they are.
    bool marginsWholeScreen(int rows) const
    {
        return m_marginsSet && m_marginTop <= 1 && m_marginBottom > 0 && m_marginBottom >= rows;
    }
    /// What a viewer writes right after a DECSTBM that was the whole screen
    /// at the size it was written for (marginsWholeScreen()) when it replays
    /// it at another number of rows: "CSI r", the whole screen at any size.
    /// The DECSTBM has just homed the cursor and this homes it again, so
    /// nothing else changes (no DECSC: programs wrap DECSTBM in their own
    /// DECSC/DECRC).
    static QByteArray wholeScreenMarginsSequence() { return QByteArrayLiteral("\x1b[r"); }

    /// Titles the program pushed on the terminal's title stack (XTWINOPS
    /// "CSI 22 ; Ps t") and has not popped ("CSI 23 ; Ps t"), 0..kMaxTitleStack
    /// (xterm's stack depth). vim pushes on start and pops on exit: a client
    /// that pushed its own title before must pop this many more to get its
    /// own back.
    int titleStackDepth() const { return m_titleStackDepth; }
    static constexpr int kMaxTitleStack = 10;

    /// The last title set by OSC 0/2 (empty if none).
    QString title() const { return m_title; }
    /// Incremented each time an OSC 0/2 completes (even with the same text).
    quint64 titleSerial() const { return m_titleSerial; }

    /// The character set designated into G0 (`g` 0) or G1 (`g` 1) by SCS
    /// ("ESC ( F" / "ESC ) F"), as its final byte: 'B' US ASCII (the default),
    /// '0' DEC Special Graphics (line drawing), 'A' United Kingdom. Other
    /// finals are ignored (libvterm 0.1.4 and xterm.js know only these
    /// three among the 94-character sets curses uses). RIS and DECSTR
    /// designate ASCII into both (xterm ctlseqs, DECSTR).
    char charset(int g) const { return g == 1 ? m_g1 : m_g0; }
    /// True after SO (0x0E, LS1: G1 invoked into GL), false after SI (0x0F,
    /// LS0), RIS and DECSTR. SO/SI execute inside escape and CSI sequences
    /// too (C0 controls execute in every state but strings: Williams' parser).
    bool shiftOut() const { return m_shiftOut; }
    /// Escape sequences that put a reset terminal's G0, G1 and GL into this
    /// state (e.g. "\x1b(0" for line drawing in G0); empty when all default.
    /// Not part of restoreSequence(), whose output replays rely on as it is.
    QByteArray charsetSequence() const;

    /// True when the stream set or cleared a tab stop (HTS "ESC H" or C1
    /// HTS, TBC "CSI g" / "CSI 0 g" / "CSI 3 g") since the last RIS: the
    /// stops may differ from every 8 columns. Which columns it were is not
    /// known here (the parser does not follow the cursor): Screen tracks them.
    bool tabStopsChanged() const { return m_tabStopsChanged; }

    /// How many terminal queries the stream has made: DA1 ("CSI c", "CSI 0 c"),
    /// DA2 ("CSI > c", "CSI > 0 c"), DSR ("CSI 5 n", "CSI 6 n", "CSI ? 6 n")
    /// and DECRQM ("CSI Ps $ p", "CSI ? Ps $ p"). A session compares it
    /// before and after feeding output to know whether something waits for
    /// an answer (issue 9, "Queries while detached"). Wraps at 2^64.
    quint64 queriesSeen() const { return m_queriesSeen; }

    /// True when a character was printed while autowrap was on and no
    /// cursor movement sequence came since (CUU, CUD, CUF, CUB, CNL, CPL,
    /// CHA, CUP, HPA, HPR, VPA, VPR, HVP, HPB, VPB, RIS): those end a
    /// pending wrap even where the cursor stays (libvterm state.c; xterm.js
    /// moves its cursor off the column past the last). Everything else ends
    /// it only if it moves the cursor (CR, BS, LF but at the bottom, DECRC,
    /// ...), which the screen sees and this parser does not. Screen uses
    /// both to tell the pending-wrap state ("phantom column") after a
    /// character printed in the last column, which libvterm does not
    /// expose. A wrap pending stays pending when autowrap is turned off
    /// after it, and none is pending when autowrap was off at the print.
    bool lastPrintMayWrap() const { return m_lastPrintMayWrap; }
    /// A UTF-8 character was cut short by a control (C0, DEL, ESC) and no
    /// other non-ASCII character came since. libvterm 0.1.4 keeps such a
    /// partial character across controls and ASCII text (decoded apart
    /// through G0) and completes it with continuation bytes that come later
    /// (xterm.js, and this class, print U+FFFD): a state of its decoder no
    /// sequence can rebuild (Screen::compact() refuses then). Not part of
    /// save()/restore().
    bool utf8CutByControl() const { return m_utf8CutByControl; }

    /// Events feedUntilEvent() stops after (Screen keeps its emulator in
    /// step with them; see screen.h).
    enum Event : quint16 {
        AltScreenEntered = 1u << 0, ///< AltScreen went from off to on
        CursorSaved      = 1u << 1, ///< DECSC (ESC 7), CSI ? 1048 h, CSI ? 1049 h
        TabStopSet       = 1u << 2, ///< HTS (ESC H, C1 HTS) at the cursor column
        TabStopCleared   = 1u << 3, ///< TBC 0 ("CSI g", "CSI 0 g") at the cursor column
        TabStopsCleared  = 1u << 4, ///< TBC 3 ("CSI 3 g"): every stop
        ScreenErased     = 1u << 5, ///< ED 2 ("CSI 2 J"): the whole active screen
        FullReset        = 1u << 6, ///< RIS (ESC c)
        ModeList         = 1u << 7, ///< SM/RM or DEC SM/RM with more than one mode
        MarginsChanged   = 1u << 8, ///< DECSTBM ("CSI t ; b r"), set or reset
        LineErasedRight  = 1u << 9, ///< EL 0 ("CSI K", "CSI 0 K") or DECSEL 0 ("CSI ? K", "CSI ? 0 K")
        ScreenErasedBelow = 1u << 10, ///< ED 0 ("CSI J", "CSI 0 J") or DECSED 0 ("CSI ? J", "CSI ? 0 J")
    };
    /// The parameters of the sequence that raised the last event (valid
    /// until more bytes are fed): for ModeList, the modes.
    int eventParamCount() const { return std::min(m_paramCount, 16); }
    int eventParam(int i) const { return m_params[i]; }
    /// The private marker of that sequence ('?' for DEC modes, 0 for ANSI).
    char eventMarker() const { return m_csiMarker; }
    /// Like feed(), but returns right after the byte that completed a
    /// sequence causing one of the Event bits (stored in `*events`, 0 when it
    /// consumed everything without one). Returns the bytes consumed, > 0 when
    /// size > 0. The final byte of that sequence is the last one consumed:
    /// Screen feeds its emulator everything before it, looks at the screen
    /// as it was (the normal screen, the cursor), then feeds that byte.
    qsizetype feedUntilEvent(const char *data, qsizetype size, quint16 *events);
    /// The Event bits raised by everything fed since the last call (feed()
    /// and feedUntilEvent() alike), then forgets them. A session asks after
    /// each read whether the normal screen may have changed under the
    /// alternate one (AltScreenEntered, CursorSaved, FullReset).
    quint16 takeEvents()
    {
        const quint16 e = m_events;
        m_events = 0;
        return e;
    }

    /// The whole parser state as bytes, for the restart-in-place state
    /// (docs/architecture.md, "Restart in place"): a version byte, then every
    /// field, little-endian (bytecodec.h). restore(save()) continues exactly
    /// as this state would, also in the middle of a sequence or a character.
    QByteArray save() const;
    /// Replaces this state with one made by save(). Returns false and leaves
    /// this state unchanged when `saved` is not one (another layout version,
    /// truncated, trailing bytes, or a field out of its range).
    bool restore(const QByteArray &saved);

private:
    template<bool StopAtEvent> qsizetype feedImpl(const char *data, qsizetype size);
    /// [begin, end) was inert (see feedReportingInert()): lastPrintMayWrap().
    void printedInert(const unsigned char *begin, const unsigned char *end);
    /// A C0 control executed (outside strings): SI/SO, and lastPrintMayWrap().
    void executeC0(unsigned char c);
    /// One byte of the stream: UTF-8 decoding, then the "anywhere"
    /// transitions (ESC, CAN, SUB), then the step of the current state.
    void byte(unsigned char c);
    /// A byte while a UTF-8 character is incomplete. True when it was part
    /// of it (consumed); false when it was not (the partial character counts
    /// as U+FFFD and the byte is then parsed afresh).
    bool utf8Continuation(unsigned char c);
    /// A byte >= 0x80 starting a character (or an invalid one: U+FFFD).
    void utf8Lead(unsigned char c);
    // The steps of the states, for a byte < 0x80 other than ESC, CAN, SUB.
    void escapeByte(unsigned char c);             ///< State::Escape
    void escapeIntermediateByte(unsigned char c); ///< State::EscapeIntermediate
    /// Escape or CSI intermediate state: true when `c` keeps the sequence
    /// where it is (a C0 control, DEL, or one more intermediate byte, counted).
    bool intermediateContinues(unsigned char c);
    /// Makes the first CSI parameter exist (0) when none was started yet.
    void openFirstParam();
    void csiParamByte(unsigned char c);           ///< State::CsiEntry, CsiParam
    void csiIntermediateByte(unsigned char c);    ///< State::CsiIntermediate
    void oscByte(unsigned char c);                ///< State::Osc
    void c1Control(unsigned char c);  ///< U+0080..U+009F (arrives UTF-8 encoded)
    void nonAsciiChar();              ///< a complete character >= U+00A0 (or U+FFFD)
    void escDispatch(unsigned char final);
    void csiDispatch(unsigned char final);
    /// The CSI being dispatched is a query counted by queriesSeen().
    bool isQuery(unsigned char final) const;
    void resetCharsets();
    void setDecMode(int mode, bool on);
    void oscStart();
    void oscPut(unsigned char c);
    void oscDispatch();
    void clearSequence();
    // Paul Williams' states; DCS entry/param/intermediate/passthrough/ignore
    // and SOS/PM/APC are one String state (their content is not interpreted:
    // only where they end matters).
    enum class State : quint8 { Ground, Escape, EscapeIntermediate, CsiEntry, CsiParam,
                                CsiIntermediate, CsiIgnore, Osc, String };
    State m_state = State::Ground;
    quint8 m_utf8Remaining = 0;   ///< continuation bytes still expected
    bool m_utf8CutByControl = false; ///< utf8CutByControl()
    quint8 m_utf8Lead = 0;        ///< lead byte of the character being decoded
    quint8 m_utf8Lo = 0x80;       ///< valid range of the next continuation byte
    quint8 m_utf8Hi = 0xBF;       ///< (RFC 3629 section 4: no overlongs/surrogates)
    char m_csiMarker = 0;         ///< private marker '<' '=' '>' '?' or 0
    char m_intermediate = 0;      ///< first intermediate byte (0x20..0x2F) or 0
    quint8 m_intermediateCount = 0;
    bool m_subParam = false;      ///< after ':' until the next ';'
    int m_paramCount = 0;
    int m_params[16] = {};
    quint32 m_modes = 0;
    quint16 m_altEntered = 0;     ///< 47, 1047 or 1049: how the alt screen was entered
    bool m_marginsSet = false;    ///< DECSTBM with parameters in force (see marginsSet())
    int m_titleStackDepth = 0;    ///< see titleStackDepth()
    int m_marginTop = 0;          ///< its parameters (0 = omitted)
    int m_marginBottom = 0;
    int m_oscCommand = -2;        ///< Ps of the OSC being read; -1 none yet, -2 not a title
    bool m_oscInText = false;     ///< past the ';' of a title OSC
    QByteArray m_osc;             ///< title text (<= kMaxTitle bytes)
    bool m_oscOverflow = false;
    QString m_title;
    quint64 m_titleSerial = 0;
    char m_g0 = 'B';              ///< see charset()
    char m_g1 = 'B';
    bool m_shiftOut = false;
    bool m_tabStopsChanged = false;
    bool m_lastPrintMayWrap = false;
    quint64 m_queriesSeen = 0;
    quint16 m_events = 0;         ///< Event bits since feedUntilEvent() started (not saved)
};

} // namespace Tether
