// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include "screen.h"

#include <vterm.h>

#include <QByteArray>

#include <deque>
#include <functional>
#include <vector>

namespace Tether {

/*
 * The inside of Screen (screen.h), shared by its two units; internal to the
 * engine: included by screen.cpp and screensnapshot.cpp only, never
 * installed, never included by another layer (it includes <vterm.h>, which
 * only the engine links).
 *
 *  - screen.cpp: the emulator. Screen::Private's libvterm (its creation,
 *    the UTF-8 hold-back, the callbacks), what it follows that libvterm
 *    does not keep (the events fed around, the normal screen under the
 *    alternate one, the save slot, tab stops, the pending wrap, the
 *    scrollback lines), and Screen's feed(), resize(), reset() and
 *    accessors.
 *  - screensnapshot.cpp: the serialiser. The painting vocabulary below
 *    (SGR, CUP, cells of a row), Screen::snapshot() and compaction
 *    (Screen::compact(), and its undoing, Private::ensureLive()).
 *
 * Apart because the two change for different reasons: the emulator follows
 * what libvterm 0.1.4 does and does not keep, the serialiser what viewers
 * (xterm.js, tmux, QTermWidget) need to be brought to a screen.
 */

/// Writing cells and the pen as bytes a terminal parses (defined in
/// screensnapshot.cpp; the emulator uses them for its own sequences and
/// the scrollback lines).
namespace ScreenPaint {

/// The attributes a cell or the pen has, as libvterm 0.1.4 keeps them.
struct Pen
{
    quint8 bold = 0, underline = 0, italic = 0, blink = 0, reverse = 0, strike = 0, font = 0;
    VTermColor fg, bg;
    Pen()
    {
        fg.type = VTERM_COLOR_DEFAULT_FG;
        bg.type = VTERM_COLOR_DEFAULT_BG;
    }
};

/// Whether two pens are the same (colours compared as libvterm keeps them).
bool samePen(const Pen &a, const Pen &b);
/// A cell's pen; `flipReverse` undoes libvterm's XOR with DECSCNM (screen
/// reverse video), which get_cell applies and a repaint must not bake in.
Pen cellPen(const VTermScreenCell &c, bool flipReverse);
/// A non-negative decimal number (negative: 0).
void appendNumber(QByteArray &out, int n);
/// SGR taking a terminal whose pen is `from` to `to`: only what changed, or
/// "0" plus what is set when that is shorter to think about (to is default).
void appendSgr(QByteArray &out, Pen &from, const Pen &to);
/// The cell's characters as UTF-8 (a base and its combining characters; a
/// space for a blank cell).
void appendGlyph(QByteArray &out, const VTermScreenCell &c);
/// CUP to `row`, `col` (0-based in, 1-based out).
void appendCup(QByteArray &out, int row, int col);
/**
 * The cells of one row, written from its first column with the cursor
 * there: glyphs (wide ones once, combining characters after their base),
 * blank (erased or never written) runs as ECH + CUF, a blank rest of the
 * row as EL, each with only its background (erasePen()).
 */
void paintCells(QByteArray &out, Pen &pen, const VTermScreenCell *cells, int cols, bool flipReverse,
                bool onBlankLine = false);

} // namespace ScreenPaint

/// The state behind a Screen: libvterm, or its compacted bytes, and what
/// the Screen follows beside it (screen.h's class comment).
struct Screen::Private
{
    /// The cursor, pen and visibility at a moment (a cursor save).
    struct Saved
    {
        VTermPos pos{0, 0};
        ScreenPaint::Pen pen;
        bool visible = true;
        int shape = VTERM_PROP_CURSORSHAPE_BLOCK; // libvterm saves these too
        bool blink = true;
    };

    VTerm *vt = nullptr;
    VTermScreen *vs = nullptr;
    VTermState *st = nullptr;
    VTermScreenCallbacks callbacks{};
    TerminalState ts;
    int cols = 0;
    int rows = 0;
    std::function<void(const char *, qsizetype)> answer;

    // Properties libvterm reports through settermprop.
    bool cursorVisible = true;
    bool cursorBlink = true;
    int cursorShape = VTERM_PROP_CURSORSHAPE_BLOCK;
    /// The stream changed the cursor's shape or blinking since the last RIS.
    bool cursorStyled = false;
    bool reverseScreen = false;
    bool vtAlt = false;

    // The normal screen while the alternate one is active (copied before the
    // sequence entering it was fed), and the cursor then.
    std::vector<VTermScreenCell> normal;
    int normalCols = 0;
    int normalRows = 0;
    Saved altEnter;
    // The cursor save slot (DECSC, ?1048, ?1049): libvterm has one.
    Saved slot;
    bool slotValid = false;
    bool slotChangedInAlt = false;

    // Tab stops, when the stream changed them (else every 8 columns).
    std::vector<char> tabs;
    bool tabsCustom = false;

    // Where the last character was printed (pending-wrap inference).
    struct GlyphDamage
    {
        int row = -1;
        int start = -1;
        int end = -1;
    };
    GlyphDamage lastGlyph;
    /// The cursor went elsewhere since (movecursor): no wrap is pending.
    bool movedSincePrint = true;
    /// For compact(), which must know libvterm's last glyph (a combining
    /// character that comes next joins it when the cursor is right after
    /// it): the cursor then moved to lastGlyph's end (a print does that, an
    /// erase does not), larger damage or a scroll came since (the cell may
    /// no longer be that glyph), a glyph was ever damaged.
    bool glyphConfirmed = false;
    bool glyphTouched = false;
    bool everPrinted = false;

    std::deque<QByteArray> scrollback;
    qsizetype scrollbackBytes = 0;

    bool erasedSinceMark = false;
    int pushedSinceMark = 0;
    bool marginsWhileParsing = false;

    /// Compaction (Screen::compact()): while vt is null, libvterm's state
    /// lives here, qCompress()ed: the in-place snapshot, the normal screen
    /// copy's cells and the scrollback lines (each a 32-bit length and its
    /// bytes).
    QByteArray compacted;
    qsizetype compactedLines = 0;
    /// libvterm's callbacks change nothing (a rebuild feeds it a snapshot).
    bool muted = false;

    /// An incomplete UTF-8 character at the end of the last write, held
    /// back: libvterm 0.1.4 decodes each vterm_input_write() on its own and
    /// turns a character split across two into U+FFFD (its on_text drops
    /// the decoder's partial state), so the tail waits for the next write.
    char utf8Tail[4] = {};
    int utf8TailSize = 0;
    int utf8TailNeed = 0;

    /// A new libvterm of cols x rows, reset, with this Private's callbacks,
    /// the save slot a terminal has after a reset (initSaveSlot()).
    void createVt();
    /// A libvterm brought to this snapshot with the callbacks muted (what
    /// this Private follows stays as it is).
    void createVtFrom(const QByteArray &snapshot);
    /// The compacted bytes' framing: a 32-bit length (host order) before
    /// each piece. takeLength() reads one at `at` and moves `at` past it;
    /// false when the length or the piece it announces runs past the end.
    static void appendLength(QByteArray &out, qsizetype n);
    static bool takeLength(const QByteArray &in, qsizetype &at, qsizetype &n);
    /// Compaction undone (Screen::compact()); nothing while live.
    void ensureLive();
    /// The lead byte's sequence length (1 for ASCII and stray bytes).
    static int utf8Length(unsigned char c);
    /// Stream bytes to libvterm, an incomplete UTF-8 character at the end
    /// held back (utf8Tail) until the next write completes it.
    void write(const char *data, qsizetype size);
    /// Sequences of the Screen's own (not the stream's) go in as they are,
    /// around a held-back character, as a terminal's decoder keeps one
    /// across a resize.
    void inject(const char *data, qsizetype size);
    void inject(const QByteArray &b) { inject(b.constData(), b.size()); }

    /// libvterm's cursor, 0-based.
    VTermPos cursor() const;
    /// libvterm's pen in force.
    ScreenPaint::Pen currentPen() const;
    /// The cursor, pen, visibility and cursor style now (for a save).
    Saved now() const;
    /// The `cols` cells of the active screen's `row`.
    void readRow(int row, VTermScreenCell *cells) const;
    /// Copies the active (normal) screen into `normal`, before a sequence
    /// entering the alternate screen is fed.
    void copyNormal();
    /// Tab stops every 8 columns over `n` columns.
    void defaultTabs(int n);
    /// Makes `tabs` the stops in force (the default ones until the stream
    /// changes one).
    void ensureCustomTabs();
    /// libvterm starts with a zeroed save slot (black on black, cursor
    /// hidden, shape 0), which DECRC or ?1049 l without a save would
    /// restore; a terminal restores home, the default pen, a visible cursor
    /// (xterm, xterm.js). Saving once right after a reset gives that.
    ///
    /// G0 and G1 are designated ASCII here too: libvterm 0.1.4 decodes
    /// ASCII through a designated G0 apart from UTF-8 (a combining
    /// character in the last column then does not join its base, and a
    /// partial UTF-8 character cut by a control is completed differently)
    /// and has no sequence that takes a designation back. A snapshot
    /// designates them, so a screen rebuilt from one (compact()) is in the
    /// same state only if the live one always is.
    void initSaveSlot() { inject("\x1b(B\x1b)B\x1b" "7", 8); }

    /// Paints the normal screen kept under the alternate one (blank if
    /// unknown) from a terminal with no margins, origin or insert mode and G0
    /// in GL, then enters the alternate screen as the program did, from
    /// where it did (?1049 saves that).
    void paintNormalUnderAlt(QByteArray &out, ScreenPaint::Pen &pen, bool with1049) const;
    /// Sets the cursor save slot (DECSC) to what the stream saved last, or
    /// a reset terminal's (home, default pen, visible) if it never saved.
    void paintSaveSlot(QByteArray &out, ScreenPaint::Pen &pen) const;
    /// Everything an event needs to see before its final byte reaches libvterm.
    void beforeEvent(quint16 ev);
    /// What an event changes once libvterm has its final byte (RIS, erases).
    void afterEvent(quint16 ev);
    /// ED 0 (DECSED 0) while a wrap is pending: libvterm erases from the
    /// cursor, the glyph pending the wrap included; the viewers erase only
    /// the rows below and keep the wrap pending (screen.h). So libvterm
    /// erases, then the glyph is printed again where it was, with its own
    /// pen and G0 ASCII in GL (the cell holds what the charset made of it),
    /// which leaves libvterm pending the wrap on it as before; the pen,
    /// insert mode and charsets are put back.
    void eraseBelowPendingWrap(char final);
    /// libvterm 0.1.4 applies only the first mode of a list: give it one
    /// sequence per mode (its CSI is aborted with CAN first).
    void writeModeList(char final);
    /// libvterm ignores ?47 and leaves the alternate buffer active after RIS:
    /// follow the TerminalState's screen with ?1047.
    void syncAlt();
    /// The inferred pending wrap (screen.h's class comment).
    bool pendingWrap() const;
    /// Damage or a scroll over lastGlyph's cell (compact()).
    void touchGlyph(const VTermRect &rect);
    // libvterm callbacks.
    static int onDamage(VTermRect rect, void *user);
    static int onMoveCursor(VTermPos pos, VTermPos, int, void *user);
    static int onMoveRect(VTermRect dest, VTermRect src, void *user);
    static int onSetTermProp(VTermProp prop, VTermValue *val, void *user);
    static int onPushLine(int cols, const VTermScreenCell *cells, void *user);
    static void onOutput(const char *s, size_t len, void *user);
};

} // namespace Tether
