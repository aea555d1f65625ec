// SPDX-License-Identifier: GPL-2.0-or-later
#include "terminalstate.h"
#include "bytecodec.h"

#include <algorithm>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace Tether {

namespace {

constexpr int kMaxParams = 16;      // size of m_params; further params are dropped
constexpr int kMaxParamValue = 99999;

// Length of the longest prefix of s[0, n) that does not end inside a UTF-8
// character: a title cut at kMaxTitle bytes, or a string ended by a control
// in the middle of a character, must not decode to a trailing U+FFFD.
qsizetype completeUtf8Prefix(const char *s, qsizetype n)
{
    const qsizetype stop = std::max<qsizetype>(0, n - 4);
    for (qsizetype i = n - 1; i >= stop; --i) {
        const unsigned char c = static_cast<unsigned char>(s[i]);
        if ((c & 0xC0) == 0x80)
            continue; // continuation byte: keep looking for the lead
        const qsizetype len = c < 0xC0 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
        return i + len > n ? i : n;
    }
    return n;
}

// True for the bytes byte() must see in the ground state with no character
// pending: ESC, SO and SI (the only C0 controls executeC0() acts on; CAN
// and SUB return to the ground state, where we already are) and the bytes
// of UTF-8 characters (>= 0x80). Every other byte there changes nothing
// tracked but lastPrintMayWrap().
inline bool groundActs(unsigned char c)
{
    return c >= 0x80 || c == 0x1B || (c & 0xFE) == 0x0E;
}

// The first byte in [p, end) for which groundActs() is true, or end. With
// SSE2 (every x86-64 CPU) 16 bytes per step: this scan is most of what the
// server's output path costs in user space (a session parses every byte
// twice: its head state, and its tail state as the bytes leave the ring;
// docs/performance.md).
const unsigned char *skipInert(const unsigned char *p, const unsigned char *end)
{
#if defined(__SSE2__)
    const __m128i esc = _mm_set1_epi8(0x1B);
    const __m128i shift = _mm_set1_epi8(0x0E);
    const __m128i notLowBit = _mm_set1_epi8(char(0xFE));
    while (end - p >= 16) {
        const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i *>(p));
        const __m128i controls = _mm_or_si128(_mm_cmpeq_epi8(v, esc),
                                              _mm_cmpeq_epi8(_mm_and_si128(v, notLowBit), shift));
        // movemask(v): the sign bits, i.e. the bytes >= 0x80.
        const int hits = _mm_movemask_epi8(controls) | _mm_movemask_epi8(v);
        if (hits)
            return p + __builtin_ctz(unsigned(hits));
        p += 16;
    }
#endif
    while (p < end && !groundActs(*p))
        ++p;
    return p;
}

// Whether [begin, end) holds a printable ASCII character (0x20..0x7E).
// Searched from the end: in text, the byte before a line's CR LF.
bool anyPrintable(const unsigned char *begin, const unsigned char *end)
{
    while (end != begin) {
        const unsigned char c = *--end;
        if (c >= 0x20 && c < 0x7F)
            return true;
    }
    return false;
}

} // namespace

template<bool StopAtEvent>
qsizetype TerminalState::feedImpl(const char *data, qsizetype size)
{
    const unsigned char *const begin = reinterpret_cast<const unsigned char *>(data);
    const unsigned char *p = begin;
    const unsigned char *const end = p + std::max<qsizetype>(0, size);
    while (p < end) {
        // Fast path: in the ground state, ASCII but ESC, SO and SI changes
        // nothing tracked but lastPrintMayWrap() (see groundActs()).
        if (m_state == State::Ground && m_utf8Remaining == 0) {
            const unsigned char *const run = p;
            p = skipInert(p, end);
            printedInert(run, p);
            if (p == end)
                break;
        }
        byte(*p++);
        if constexpr (StopAtEvent) {
            if (m_events)
                break;
        }
    }
    return p - begin;
}

void TerminalState::feed(const char *data, qsizetype size)
{
    feedImpl<false>(data, size);
}

void TerminalState::printedInert(const unsigned char *begin, const unsigned char *end)
{
    // Printed; in the last column, a wrap is pending if autowrap is on.
    // Controls in the run leave it as it is (only the screen knows whether
    // they moved the cursor).
    const bool wrap = !(m_modes & NoAutowrap);
    if (m_lastPrintMayWrap != wrap && anyPrintable(begin, end))
        m_lastPrintMayWrap = wrap;
}

qsizetype TerminalState::feedReportingInert(const char *data, qsizetype size)
{
    if (size <= 0)
        return 0;
    qsizetype inert = 0;
    if (m_state == State::Ground && m_utf8Remaining == 0) {
        const unsigned char *const b = reinterpret_cast<const unsigned char *>(data);
        const unsigned char *const e = skipInert(b, b + size);
        printedInert(b, e);
        inert = e - b;
    }
    feedImpl<false>(data + inert, size - inert);
    return inert;
}

void TerminalState::feedInert(const char *data, qsizetype size)
{
    if (size <= 0)
        return;
    if (m_state != State::Ground || m_utf8Remaining != 0) {
        // Not where the bytes were found inert: parse them (the contract
        // was broken; this keeps the state exact rather than guessing).
        feedImpl<false>(data, size);
        return;
    }
    const unsigned char *const b = reinterpret_cast<const unsigned char *>(data);
    printedInert(b, b + size);
}

qsizetype TerminalState::feedUntilEvent(const char *data, qsizetype size, quint16 *events)
{
    m_events = 0;
    const qsizetype n = feedImpl<true>(data, size);
    *events = m_events;
    m_events = 0;
    return n;
}

bool TerminalState::atSafeBoundary() const
{
    return m_state == State::Ground && m_utf8Remaining == 0;
}

void TerminalState::clearSequence()
{
    m_csiMarker = 0;
    m_intermediate = 0;
    m_intermediateCount = 0;
    m_subParam = false;
    m_paramCount = 0;
}

// The steps of byte(), one per parser state (and the UTF-8 decoder), forced
// inline into byte(): GCC 12 -O2 kept them as calls, which made feed() of
// mixed and escape-heavy output 5-9 % slower (CPU time, bench_ringbuffer's
// samples); inlined, it runs the same instructions as one function (+0.4 %).

Q_ALWAYS_INLINE bool TerminalState::utf8Continuation(unsigned char c)
{
    if (c >= m_utf8Lo && c <= m_utf8Hi) {
        m_utf8Lo = 0x80;
        m_utf8Hi = 0xBF;
        if (--m_utf8Remaining == 0 && m_utf8Lead == 0xC2 && c < 0xA0) {
            // A C1 control. Inside an OSC its lead byte C2 is already
            // stored: every C1 ends or aborts the OSC, and oscDispatch()
            // trims that incomplete trailing character.
            c1Control(c);
            return true;
        }
        if (m_state == State::Osc)
            oscPut(c);
        if (m_utf8Remaining == 0)
            nonAsciiChar();
        return true;
    }
    // Malformed: the partial character decodes as U+FFFD (WHATWG "maximal
    // subpart" rule), and this byte starts afresh.
    m_utf8Remaining = 0;
    m_utf8Lo = 0x80;
    m_utf8Hi = 0xBF;
    nonAsciiChar();
    m_utf8CutByControl = c < 0x20 || c == 0x7F;
    return false;
}

Q_ALWAYS_INLINE void TerminalState::utf8Lead(unsigned char c)
{
    quint8 remaining = 0;
    quint8 lo = 0x80, hi = 0xBF;
    // RFC 3629 section 4 ranges: excludes overlongs (C0, C1, E0 80..9F,
    // F0 80..8F), surrogates (ED A0..BF) and > U+10FFFF (F4 90.., F5..FF).
    if (c >= 0xC2 && c <= 0xDF) {
        remaining = 1;
    } else if (c >= 0xE0 && c <= 0xEF) {
        remaining = 2;
        if (c == 0xE0)
            lo = 0xA0;
        else if (c == 0xED)
            hi = 0x9F;
    } else if (c >= 0xF0 && c <= 0xF4) {
        remaining = 3;
        if (c == 0xF0)
            lo = 0x90;
        else if (c == 0xF4)
            hi = 0x8F;
    }
    if (m_state == State::Osc)
        oscPut(c);
    if (!remaining) { // stray continuation or invalid lead: one U+FFFD
        nonAsciiChar();
        return;
    }
    m_utf8Remaining = remaining;
    m_utf8Lead = c;
    m_utf8Lo = lo;
    m_utf8Hi = hi;
}

Q_ALWAYS_INLINE void TerminalState::escapeByte(unsigned char c)
{
    if (c < 0x20 || c == 0x7F)
        return; // C0 executes without leaving the sequence; DEL ignored
    if (c <= 0x2F) {
        m_intermediate = char(c);
        m_intermediateCount = 1;
        m_state = State::EscapeIntermediate;
        return;
    }
    switch (c) {
    case '[':
        clearSequence();
        m_state = State::CsiEntry;
        return;
    case ']':
        oscStart();
        m_state = State::Osc;
        return;
    case 'P': // DCS
    case 'X': // SOS
    case '^': // PM
    case '_': // APC
        m_state = State::String;
        return;
    default:
        escDispatch(c);
        m_state = State::Ground;
        return;
    }
}

Q_ALWAYS_INLINE bool TerminalState::intermediateContinues(unsigned char c)
{
    if (c < 0x20 || c == 0x7F)
        return true; // C0 executes without leaving the sequence; DEL ignored
    if (c <= 0x2F) {
        if (m_intermediateCount < 255)
            ++m_intermediateCount;
        return true;
    }
    return false;
}

Q_ALWAYS_INLINE void TerminalState::escapeIntermediateByte(unsigned char c)
{
    if (intermediateContinues(c))
        return;
    escDispatch(c);
    m_state = State::Ground;
}

Q_ALWAYS_INLINE void TerminalState::openFirstParam()
{
    if (m_paramCount == 0) {
        m_paramCount = 1;
        m_params[0] = 0;
    }
}

Q_ALWAYS_INLINE void TerminalState::csiParamByte(unsigned char c)
{
    if (c < 0x20 || c == 0x7F)
        return;
    if (c >= '0' && c <= '9') {
        m_state = State::CsiParam;
        if (m_subParam || m_paramCount > kMaxParams)
            return;
        openFirstParam();
        int &v = m_params[m_paramCount - 1];
        v = std::min(v * 10 + (c - '0'), kMaxParamValue);
        return;
    }
    if (c == ';') {
        m_state = State::CsiParam;
        m_subParam = false;
        openFirstParam();
        if (m_paramCount < kMaxParams)
            m_params[m_paramCount++] = 0;
        else
            m_paramCount = kMaxParams + 1; // overflow: ignore the rest
        return;
    }
    if (c == ':') { // sub-parameter (e.g. SGR 38:2:...): not a mode number
        m_state = State::CsiParam;
        m_subParam = true;
        return;
    }
    if (c >= 0x3C && c <= 0x3F) { // private marker: only right after CSI
        if (m_state == State::CsiEntry) {
            m_csiMarker = char(c);
            m_state = State::CsiParam;
        } else {
            m_state = State::CsiIgnore;
        }
        return;
    }
    if (c <= 0x2F) {
        m_intermediate = char(c);
        m_intermediateCount = 1;
        m_state = State::CsiIntermediate;
        return;
    }
    csiDispatch(c);
    m_state = State::Ground;
}

Q_ALWAYS_INLINE void TerminalState::csiIntermediateByte(unsigned char c)
{
    if (intermediateContinues(c))
        return;
    if (c <= 0x3F) {
        m_state = State::CsiIgnore;
        return;
    }
    csiDispatch(c);
    m_state = State::Ground;
}

Q_ALWAYS_INLINE void TerminalState::oscByte(unsigned char c)
{
    if (c == 0x07) { // BEL: xterm's OSC terminator
        oscDispatch();
        m_state = State::Ground;
        return;
    }
    if (c < 0x20)
        return; // other C0 ignored inside OSC
    oscPut(c);
}

void TerminalState::byte(unsigned char c)
{
    // UTF-8 decoding comes first, as in xterm.js (which parses code points):
    // bytes >= 0x80 are parts of characters, never 8-bit C1 controls; a C1
    // control only exists as the code points U+0080..U+009F (C2 80..C2 9F).
    if (m_utf8Remaining && utf8Continuation(c))
        return;
    if (c >= 0x80) {
        utf8Lead(c);
        return;
    }

    // "Anywhere" transitions.
    if (c == 0x1B) {
        // ESC ends any string (xterm.js and Williams dispatch the OSC on exit
        // from the OSC state); ESC '\' (ST) then completes as an escape.
        if (m_state == State::Osc)
            oscDispatch();
        clearSequence();
        m_state = State::Escape;
        return;
    }
    if (c == 0x18 || c == 0x1A) { // CAN, SUB: abort whatever is in progress
        m_state = State::Ground;
        return;
    }

    if (c < 0x20 && m_state != State::Osc && m_state != State::String) {
        // C0 controls execute in every state but strings, without leaving
        // the sequence (Williams' "execute" in escape and CSI states).
        executeC0(c);
        return;
    }

    switch (m_state) {
    case State::Ground:
        return; // printable ASCII (the fast path in feedImpl()) or DEL
    case State::Escape:
        escapeByte(c);
        return;
    case State::EscapeIntermediate:
        escapeIntermediateByte(c);
        return;
    case State::CsiEntry:
    case State::CsiParam:
        csiParamByte(c);
        return;
    case State::CsiIntermediate:
        csiIntermediateByte(c);
        return;
    case State::CsiIgnore:
        if (c >= 0x40 && c <= 0x7E)
            m_state = State::Ground;
        return;
    case State::Osc:
        oscByte(c);
        return;
    case State::String:
        return; // DCS/SOS/PM/APC content: only ESC \, CAN, SUB (above) end it
    }
}

void TerminalState::executeC0(unsigned char c)
{
    switch (c) {
    case 0x0E: // SO (LS1): G1 into GL
        m_shiftOut = true;
        return;
    case 0x0F: // SI (LS0): G0 into GL
        m_shiftOut = false;
        return;
    default: // BS, CR, LF...: whether they moved the cursor (which is what
             // ends a pending wrap) only the screen knows
        return;
    }
}

void TerminalState::c1Control(unsigned char c)
{
    if (c == 0x88) { // HTS
        m_tabStopsChanged = true;
        m_events |= TabStopSet;
    }
    switch (c) {
    case 0x9C: // ST
        if (m_state == State::Osc)
            oscDispatch();
        m_state = State::Ground;
        return;
    case 0x9B: // CSI
        clearSequence();
        m_state = State::CsiEntry;
        return;
    case 0x9D: // OSC
        oscStart();
        m_state = State::Osc;
        return;
    case 0x90: // DCS
    case 0x98: // SOS
    case 0x9E: // PM
    case 0x9F: // APC
        m_state = State::String;
        return;
    default: // other C1 controls execute and abort any sequence (xterm.js)
        m_state = State::Ground;
        return;
    }
}

void TerminalState::nonAsciiChar()
{
    m_utf8CutByControl = false;
    // xterm.js: a character >= U+00A0 inside an escape or CSI sequence is an
    // error that returns to ground; strings and CSI-ignore swallow it.
    switch (m_state) {
    case State::Ground:
        m_lastPrintMayWrap = !(m_modes & NoAutowrap);
        return;
    case State::Escape:
    case State::EscapeIntermediate:
    case State::CsiEntry:
    case State::CsiParam:
    case State::CsiIntermediate:
        m_state = State::Ground;
        return;
    default:
        return;
    }
}

void TerminalState::escDispatch(unsigned char final)
{
    if (m_intermediateCount == 1 && (m_intermediate == '(' || m_intermediate == ')')) {
        // SCS into G0 / G1; only the sets libvterm and xterm.js both know.
        if (final == 'B' || final == '0' || final == 'A')
            (m_intermediate == '(' ? m_g0 : m_g1) = char(final);
        return;
    }
    if (m_intermediateCount != 0)
        return;
    switch (final) {
    case 'c': // RIS: full reset
        m_modes = 0;
        m_altEntered = 0;
        m_marginsSet = false;
        resetCharsets();
        m_tabStopsChanged = false;
        m_lastPrintMayWrap = false;
        m_events |= FullReset;
        return;
    case '=': // DECKPAM
        m_modes |= KeypadApp;
        return;
    case '>': // DECKPNM
        m_modes &= ~quint32(KeypadApp);
        return;
    case '7': // DECSC: saves, does not move
        m_events |= CursorSaved;
        return;
    case 'H': // HTS at the cursor column
        m_tabStopsChanged = true;
        m_events |= TabStopSet;
        return;
    default: // DECRC, IND, NEL, RI, ...: the cursor may move (the screen sees)
        return;
    }
}

void TerminalState::resetCharsets()
{
    m_g0 = 'B';
    m_g1 = 'B';
    m_shiftOut = false;
}

void TerminalState::csiDispatch(unsigned char final)
{
    if ((m_csiMarker == '?' || m_csiMarker == 0) && m_intermediateCount == 0 && (final == 'h' || final == 'l')
        && m_paramCount > 1)
        m_events |= ModeList;
    if (m_csiMarker == '?' && m_intermediateCount == 0 && (final == 'h' || final == 'l')) {
        const int n = std::min(m_paramCount, kMaxParams);
        for (int i = 0; i < n; ++i) {
            const int mode = m_params[i];
            setDecMode(mode, final == 'h');
            if (final == 'h' && (mode == 1048 || mode == 1049))
                m_events |= CursorSaved;
        }
        return;
    }
    if (isQuery(final)) {
        ++m_queriesSeen;
        return;
    }
    if (m_csiMarker == 0 && m_intermediateCount == 0 && final == 'g') {
        // TBC: 0 (or none) clears the stop at the cursor, 3 all of them.
        const int ps = m_paramCount > 0 ? m_params[0] : 0;
        if (ps == 0 || ps == 3) {
            m_tabStopsChanged = true;
            m_events |= ps == 0 ? TabStopCleared : TabStopsCleared;
        }
        return;
    }
    if ((m_csiMarker == 0 || m_csiMarker == '?') && m_intermediateCount == 0 && final == 'K'
        && (m_paramCount == 0 || m_params[0] == 0))
        m_events |= LineErasedRight; // the cursor stays: a pending wrap stays pending
    if ((m_csiMarker == 0 || m_csiMarker == '?') && m_intermediateCount == 0 && final == 'J'
        && (m_paramCount == 0 || m_params[0] == 0))
        m_events |= ScreenErasedBelow; // likewise
    if (m_csiMarker == 0 && m_intermediateCount == 0 && final == 'J' && m_paramCount > 0 && m_params[0] == 2)
        m_events |= ScreenErased; // and the cursor stays: lastPrintMayWrap() is reset below
    if (m_csiMarker == 0 && m_intermediateCount == 0 && final == 'm')
        return; // SGR: the pen only
    if (m_csiMarker == 0 && m_intermediateCount == 1 && m_intermediate == ' ' && final == 'q')
        return; // DECSCUSR: the cursor's shape only
    if (m_csiMarker == 0 && m_intermediateCount == 1 && m_intermediate == '!' && final == 'p') {
        // DECSTR, soft reset. Of the tracked modes xterm resets only cursor
        // visibility (DECTCEM on) and DECCKM; the screen buffer, mouse,
        // bracketed paste and focus reporting survive (xterm ctlseqs, DECSTR).
        // xterm.js (the terminal our replays meet most) also resets autowrap
        // (on), insert mode, the keypad and the margins.
        m_modes &= ~quint32(AppCursorKeys | CursorHidden | NoAutowrap | InsertMode | KeypadApp | OriginMode);
        m_marginsSet = false;
        // Character sets: G0..G3 ASCII, GL = G0 (xterm ctlseqs; libvterm).
        resetCharsets();
        return;
    }
    if (m_csiMarker == 0 && m_intermediateCount == 0 && (final == 'h' || final == 'l')) {
        // ANSI modes (SM/RM): only IRM (4) is tracked.
        const int n = std::min(m_paramCount, kMaxParams);
        for (int i = 0; i < n; ++i) {
            if (m_params[i] == 4) {
                if (final == 'h')
                    m_modes |= InsertMode;
                else
                    m_modes &= ~quint32(InsertMode);
            }
        }
        return;
    }
    if (m_csiMarker == 0 && m_intermediateCount == 0 && final == 't' && m_paramCount >= 1
        && (m_params[0] == 22 || m_params[0] == 23)) {
        // XTWINOPS title stack: 22 pushes, 23 pops (xterm keeps at most 10).
        if (m_params[0] == 22)
            m_titleStackDepth = std::min(m_titleStackDepth + 1, kMaxTitleStack);
        else
            m_titleStackDepth = std::max(m_titleStackDepth - 1, 0);
        return;
    }
    if (m_csiMarker == 0 && m_intermediateCount == 0 && final == 'r') {
        // DECSTBM: "CSI r" (or CSI 0;0 r) is the full screen again; any other
        // parameters set margins. (Whether "1;ROWS" is the full screen depends
        // on a size the stream does not carry, so it counts as set.)
        const int n = std::min(m_paramCount, kMaxParams);
        m_marginTop = n > 0 ? m_params[0] : 0;
        m_marginBottom = n > 1 ? m_params[1] : 0;
        m_marginsSet = m_marginTop != 0 || m_marginBottom != 0;
        m_events |= MarginsChanged; // (it homes the cursor: a move the screen sees)
        return;
    }
    if (m_csiMarker == 0 && m_intermediateCount == 0) {
        switch (final) {
        // Cursor movements end a pending wrap even where the cursor stays
        // (CUF in the last column, CUP to the cell it is on): libvterm
        // state.c clears at_phantom in each; xterm.js moves x off cols.
        case 'A': case 'B': case 'C': case 'D': // CUU CUD CUF CUB
        case 'E': case 'F': case 'G': case 'H': // CNL CPL CHA CUP
        case '`': case 'a': case 'd': case 'e': // HPA HPR VPA VPR
        case 'f': case 'j': case 'k':           // HVP HPB VPB
            m_lastPrintMayWrap = false;
            return;
        case 'b': // REP prints the last character again
            m_lastPrintMayWrap = !(m_modes & NoAutowrap);
            return;
        default:
            return;
        }
    }
}

bool TerminalState::isQuery(unsigned char final) const
{
    const int ps = m_paramCount > 0 ? m_params[0] : 0;
    switch (final) {
    case 'c': // DA1 (no marker) and DA2 ('>'), Ps 0 or none
        return m_intermediateCount == 0 && (m_csiMarker == 0 || m_csiMarker == '>') && ps == 0;
    case 'n': // DSR 5 (status), 6 (CPR); DECXCPR "? 6"
        return m_intermediateCount == 0
            && ((m_csiMarker == 0 && (ps == 5 || ps == 6)) || (m_csiMarker == '?' && ps == 6));
    case 'p': // DECRQM, ANSI and DEC private
        return m_intermediateCount == 1 && m_intermediate == '$' && (m_csiMarker == 0 || m_csiMarker == '?');
    default:
        return false;
    }
}

void TerminalState::setDecMode(int mode, bool on)
{
    // `inverted`: the bit records the mode being off (reset), not on.
    const auto set = [this, on](quint32 bit, bool inverted = false) {
        if (on != inverted)
            m_modes |= bit;
        else
            m_modes &= ~bit;
    };
    constexpr quint32 tracking = MouseX10 | MouseNormal | MouseButton | MouseAny;
    constexpr quint32 encodings = MouseUtf8 | MouseSgr | MouseUrxvt;
    switch (mode) {
    case 1:
        set(AppCursorKeys);
        return;
    case 6:
        set(OriginMode);
        return;
    case 7:
        set(NoAutowrap, true); // tracked as "off": autowrap is the default
        return;
    case 25:
        set(CursorHidden, true);
        return;
    case 47:
    case 1047:
    case 1049:
        if (on) {
            if (!(m_modes & AltScreen)) {
                m_altEntered = quint16(mode);
                m_events |= AltScreenEntered;
            }
            m_modes |= AltScreen;
            if (mode == 1049)
                m_modes |= AltScreen1049;
        } else {
            // Leaving with any of the three returns to the normal screen
            // (xterm and xterm.js alike).
            m_modes &= ~quint32(AltScreen | AltScreen1049);
            m_altEntered = 0;
        }
        return;
    case 2004:
        set(BracketedPaste);
        return;
    case 9:
    case 1000:
    case 1002:
    case 1003:
        // One tracking protocol at a time; resetting any of them turns
        // tracking off (xterm, xterm.js).
        m_modes &= ~tracking;
        if (on)
            m_modes |= mode == 9 ? MouseX10 : mode == 1000 ? MouseNormal
                     : mode == 1002 ? MouseButton : MouseAny;
        return;
    case 1005:
    case 1006:
    case 1015: {
        // One coordinate encoding at a time; resetting one drops only it.
        const quint32 bit = mode == 1005 ? MouseUtf8 : mode == 1006 ? MouseSgr : MouseUrxvt;
        if (on)
            m_modes = (m_modes & ~encodings) | bit;
        else
            m_modes &= ~bit;
        return;
    }
    case 1004:
        set(FocusEvents);
        return;
    default:
        return;
    }
}

void TerminalState::oscStart()
{
    m_oscCommand = -1;
    m_oscInText = false;
    m_oscOverflow = false;
    if (!m_osc.isEmpty())
        m_osc.resize(0); // keeps the reserved capacity: no allocation per title
}

void TerminalState::oscPut(unsigned char c)
{
    if (m_oscInText) {
        if (m_osc.size() < kMaxTitle)
            m_osc.append(char(c));
        else
            m_oscOverflow = true;
        return;
    }
    if (m_oscCommand == -2)
        return; // not a title (OSC 52 clipboard, OSC 8 links...): not stored
    if (c >= '0' && c <= '9') {
        m_oscCommand = std::min((m_oscCommand < 0 ? 0 : m_oscCommand) * 10 + (c - '0'), kMaxParamValue);
    } else if (c == ';' && (m_oscCommand == 0 || m_oscCommand == 2)) {
        m_oscInText = true;
        if (m_osc.capacity() < 256)
            m_osc.reserve(256); // grows geometrically up to kMaxTitle
    } else {
        m_oscCommand = -2;
    }
}

void TerminalState::oscDispatch()
{
    if (m_oscInText) {
        const qsizetype n = completeUtf8Prefix(m_osc.constData(), m_osc.size());
        m_title = QString::fromUtf8(m_osc.constData(), int(n));
        ++m_titleSerial;
    }
    m_oscInText = false;
    m_oscCommand = -2;
}

QByteArray TerminalState::charsetSequence() const
{
    QByteArray out;
    if (m_g0 != 'B') {
        out += "\x1b(";
        out += m_g0;
    }
    if (m_g1 != 'B') {
        out += "\x1b)";
        out += m_g1;
    }
    if (m_shiftOut)
        out += '\x0e';
    return out;
}

QByteArray TerminalState::restoreSequence() const
{
    QByteArray out;
    if (m_modes == 0 && !m_marginsSet)
        return out;
    out.reserve(96);
    const auto set = [&out](const char *mode) {
        out += "\x1b[?";
        out += mode;
        out += 'h';
    };
    // Alternate screen first: the modes after it then apply to the screen the
    // program is drawing on (xterm keeps them per terminal, not per buffer,
    // but a fixed order keeps the sequence deterministic).
    if (m_modes & AltScreen)
        set((m_modes & AltScreen1049) ? "1049" : m_altEntered == 47 ? "47" : "1047");
    // Then the others in a fixed order: keys, paste, mouse tracking, mouse
    // encodings, focus events.
    static constexpr struct { Mode mode; const char *number; } kOrder[] = {
        {AppCursorKeys, "1"},  {BracketedPaste, "2004"}, {MouseX10, "9"},
        {MouseNormal, "1000"}, {MouseButton, "1002"},    {MouseAny, "1003"},
        {MouseUtf8, "1005"},   {MouseSgr, "1006"},       {MouseUrxvt, "1015"},
        {FocusEvents, "1004"},
    };
    for (const auto &m : kOrder)
        if (m_modes & m.mode)
            set(m.number);
    if (m_modes & NoAutowrap)
        out += "\x1b[?7l";
    if (m_modes & InsertMode)
        out += "\x1b[4h";
    if (m_modes & KeypadApp)
        out += "\x1b=";
    if (m_marginsSet) {
        out += "\x1b[";
        if (m_marginTop)
            out += QByteArray::number(m_marginTop);
        if (m_marginBottom) {
            out += ';';
            out += QByteArray::number(m_marginBottom);
        }
        out += 'r';
        // DECSTBM homed the cursor, above a region that does not start at
        // the top; the cursor position at the replay's start is unknown, but
        // output that scrolls a region comes at its bottom: start there, so
        // lines scroll in the region instead of landing above it.
        if (m_marginBottom > 0) {
            out += "\x1b[";
            out += QByteArray::number(m_marginBottom);
            out += ";1H";
        }
    }
    if (m_modes & CursorHidden)
        out += "\x1b[?25l";
    return out;
}

// --- save / restore -------------------------------------------------------------
// Layout version 1 (little-endian, bytecodec.h): u8 version, u8 state,
// u8 utf8Remaining, u8 utf8Lead, u8 utf8Lo, u8 utf8Hi, u8 csiMarker,
// u8 intermediate, u8 intermediateCount, u8 subParam, i32 paramCount,
// 16 x i32 params, u32 modes, u32 altEntered, u8 marginsSet, i32 marginTop,
// i32 marginBottom, i32 titleStackDepth, i32 oscCommand, u8 oscInText,
// bytes osc, u8 oscOverflow, text title, u64 titleSerial.
// Version 2 appends: u8 g0, u8 g1, u8 shiftOut, u8 tabStopsChanged,
// u8 lastPrintMayWrap, u64 queriesSeen. restore() still reads version 1 (a state
// saved by the previous build during a restart in place): those fields then
// take their reset values. A field added to the parser must be added here,
// with a new version.

namespace {
constexpr quint8 kSaveVersion = 2;
bool validCharset(quint8 c)
{
    return c == 'B' || c == '0' || c == 'A';
}
}

QByteArray TerminalState::save() const
{
    ByteWriter w;
    w.u8(kSaveVersion);
    w.u8(quint8(m_state));
    w.u8(m_utf8Remaining);
    w.u8(m_utf8Lead);
    w.u8(m_utf8Lo);
    w.u8(m_utf8Hi);
    w.u8(quint8(m_csiMarker));
    w.u8(quint8(m_intermediate));
    w.u8(m_intermediateCount);
    w.boolean(m_subParam);
    w.i32(m_paramCount);
    for (const int p : m_params)
        w.i32(p);
    w.u32(m_modes);
    w.u32(m_altEntered);
    w.boolean(m_marginsSet);
    w.i32(m_marginTop);
    w.i32(m_marginBottom);
    w.i32(m_titleStackDepth);
    w.i32(m_oscCommand);
    w.boolean(m_oscInText);
    w.bytes(m_osc);
    w.boolean(m_oscOverflow);
    w.text(m_title);
    w.u64(m_titleSerial);
    w.u8(quint8(m_g0));
    w.u8(quint8(m_g1));
    w.boolean(m_shiftOut);
    w.boolean(m_tabStopsChanged);
    w.boolean(m_lastPrintMayWrap);
    w.u64(m_queriesSeen);
    return w.take();
}

bool TerminalState::restore(const QByteArray &saved)
{
    ByteReader r(saved);
    const quint8 version = r.u8();
    if (version != kSaveVersion && version != 1)
        return false;
    TerminalState t;
    const quint8 state = r.u8();
    t.m_utf8Remaining = r.u8();
    t.m_utf8Lead = r.u8();
    t.m_utf8Lo = r.u8();
    t.m_utf8Hi = r.u8();
    t.m_csiMarker = char(r.u8());
    t.m_intermediate = char(r.u8());
    t.m_intermediateCount = r.u8();
    t.m_subParam = r.boolean();
    t.m_paramCount = r.i32();
    for (int &p : t.m_params)
        p = r.i32();
    t.m_modes = r.u32();
    const quint32 alt = r.u32();
    t.m_marginsSet = r.boolean();
    t.m_marginTop = r.i32();
    t.m_marginBottom = r.i32();
    t.m_titleStackDepth = r.i32();
    t.m_oscCommand = r.i32();
    t.m_oscInText = r.boolean();
    t.m_osc = r.bytes();
    t.m_oscOverflow = r.boolean();
    t.m_title = r.text();
    t.m_titleSerial = r.u64();
    quint8 g0 = 'B', g1 = 'B';
    if (version >= 2) {
        g0 = r.u8();
        g1 = r.u8();
        t.m_shiftOut = r.boolean();
        t.m_tabStopsChanged = r.boolean();
        t.m_lastPrintMayWrap = r.boolean();
        t.m_queriesSeen = r.u64();
    }
    t.m_g0 = char(g0);
    t.m_g1 = char(g1);
    // Out-of-range values would index m_params out of bounds, never leave
    // a state, or overflow an int when the next digit comes (a parameter
    // over kMaxParamValue times 10: undefined behaviour, found by UBSan with
    // INT_MAX in a saved parameter): refuse them rather than trust the bytes.
    const auto inRange = [](int v, int lo) { return v >= lo && v <= kMaxParamValue; };
    bool numbersValid = inRange(t.m_marginTop, 0) && inRange(t.m_marginBottom, 0) && inRange(t.m_oscCommand, -2);
    for (const int p : t.m_params)
        numbersValid = numbersValid && inRange(p, 0);
    const bool valid = r.ok() && r.atEnd() && numbersValid && state <= quint8(State::String) && t.m_utf8Remaining <= 3
        && t.m_paramCount >= 0 && t.m_paramCount <= kMaxParams + 1 && alt <= 0xFFFF
        && t.m_titleStackDepth >= 0 && t.m_titleStackDepth <= kMaxTitleStack && t.m_osc.size() <= kMaxTitle
        && validCharset(g0) && validCharset(g1);
    if (!valid)
        return false;
    t.m_state = State(state);
    t.m_altEntered = quint16(alt);
    *this = t;
    return true;
}

} // namespace Tether
