// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include "terminalstate.h"

#include <QByteArray>

#include <functional>
#include <memory>

namespace Tether {

/**
 * A terminal screen kept by the server for one session (issue 9): libvterm
 * (Debian 12's libvterm-dev 0.1.4: VTerm + VTermScreen, UTF-8, alternate
 * screen enabled) plus a TerminalState fed in lockstep, and a serializer,
 * snapshot(), that brings any terminal to the same screen.
 *
 * libvterm 0.1.4 does not expose everything a snapshot needs; this class
 * follows the rest itself (docs/architecture.md, "Server screen"):
 *  - DECCKM, keypad, mouse modes and encodings, bracketed paste, focus
 *    events, origin mode, scroll margins, charsets and the title come from
 *    the TerminalState (modes());
 *  - vterm_screen_get_cell() reads only the active buffer: the normal screen
 *    is copied just before a sequence entering the alternate screen is fed
 *    (feed() splits the stream there, TerminalState::feedUntilEvent()), and
 *    the cursor, pen and visibility just before a cursor save (DECSC, ?1048,
 *    ?1049), so the snapshot can restore the save slot;
 *  - tab stops: set and cleared at the cursor column seen at HTS/TBC;
 *  - the pending-wrap state ("phantom column" after a character printed in
 *    the last column with autowrap on) is inferred: the last character
 *    printed (the last glyph-sized damage that left a character) ended in
 *    the last column, the cursor has not moved off it since (movecursor),
 *    and TerminalState::lastPrintMayWrap() is true (autowrap was on and no
 *    cursor movement sequence came, which ends it even in place). The
 *    snapshot then prints that glyph again, which leaves a real terminal in
 *    the same pending-wrap state;
 *  - EL 0 ("CSI K", also after SGR 0 as top and ncurses write it) while
 *    a wrap is pending: libvterm 0.1.4 erases the last column (as C xterm
 *    does: util.c ClearRight() erases from cur_col, which stays on the last
 *    column). The viewers keep it and the wrap stays pending: xterm.js
 *    (src/common/InputHandler.ts eraseInLine(): _restrictCursor(cols) leaves
 *    x at cols, so the erased range [cols, cols) is empty), tmux
 *    (screen-write.c screen_write_clearendofline(): returns when cx > sx - 1)
 *    and Konsole/QTermWidget (Screen::clearToEndOfLine() from _cuX ==
 *    columns). feed() follows the viewers: such an EL does not reach
 *    libvterm. ED 0 ("CSI J", DECSED "CSI ? J") pending a wrap likewise
 *    erases only the rows below in the viewers (xterm.js eraseInDisplay()
 *    after _restrictCursor(cols); tmux screen_write_clearendofscreen()
 *    clears the cursor row only when cx <= sx - 1) and the wrap stays
 *    pending: feed() lets libvterm erase, then prints the glyph pending the
 *    wrap again where it was, with its pen;
 *  - libvterm 0.1.4 applies only the first mode of "CSI ? a ; b h": feed()
 *    feeds such lists to it one mode per sequence; it ignores ?47 (only
 *    ?1047/?1049 switch screens): feed() switches it with ?1047 when the
 *    TerminalState's alternate screen differs from libvterm's.
 * Not kept (libvterm 0.1.4 has no storage for them): SGR 2 (faint), 8
 * (conceal), 53 (overline), underline colours, double-width/height lines
 * (DECDWL/DECDHL), left/right margins (DECSLRM), the palette (OSC 4), and
 * more than 6 code points per cell. No reflow, and lines are not pulled
 * back from the scrollback when the screen grows (no sb_popline). DECSTR differs: libvterm also resets tab
 * stops, bracketed paste and focus reporting, the TerminalState follows
 * xterm.js. Cursor visibility follows xterm too: libvterm also restores it
 * with DECRC. Cells no terminal shows are painted blank: the second half of
 * a wide character whose first half was overwritten, a wide character ICH
 * pushed into the last column. A wide character printed into the last two
 * columns and erased or scrolled away while the wrap is pending: the
 * snapshot reprints the last cell instead (the next character wraps the
 * same; libvterm reports the cursor one column further right).
 * In a libvterm viewer (not xterm.js) a combining character in the last
 * column does not join its base once G0 was designated, which the snapshot
 * does ("ESC ( B").
 *
 * No per-byte allocation: feed() splits the stream only at the events above
 * (each a few calls), libvterm does not allocate while parsing printable
 * text (the damage callback reads a cell only for what lands in the last
 * column); a line scrolled off the top (sb_pushline) is serialized into one
 * QByteArray (kMaxScrollbackLines kept). libvterm itself reads every cell of
 * such a line for sb_pushline: scrolling output costs about 1.7 times the
 * instructions of a bare libvterm at 200x50 (callgrind, `seq`), TUI redraws
 * about 1.13 times.
 *
 * Not thread-safe; a plain object of the engine layer (no QObject).
 */
class Screen
{
public:
    /// Scrolled-off lines kept for snapshot(scrollbackLines) (oldest dropped).
    static constexpr int kMaxScrollbackLines = 1000;
    /// Bounds of the size (a larger or smaller request is clamped).
    static constexpr int kMinSize = 1;
    static constexpr int kMaxCols = 1000;
    static constexpr int kMaxRows = 500;

    /// A reset terminal of cols x rows (clamped to the bounds above).
    Screen(int cols, int rows);
    ~Screen();
    Screen(const Screen &) = delete;
    Screen &operator=(const Screen &) = delete;

    /// Feeds output bytes in stream order; any split (inside sequences or
    /// characters) gives the same screen. size <= 0 does nothing. Answers to
    /// queries found in them go to the answer handler, synchronously.
    void feed(const char *data, qsizetype size);
    void feed(const QByteArray &data) { feed(data.constData(), data.size()); }

    /// The terminal was resized at this point of the stream. libvterm keeps
    /// the cells (no reflow; lines pushed off the top by a shorter screen go
    /// to the scrollback) and the scroll margins; terminals reset the
    /// margins on a resize (TerminalState::marginsResetByResize()), and so
    /// does this: libvterm is given "CSI r" and its cursor put back.
    /// Clamped like the constructor; the same size does nothing.
    void resize(int cols, int rows);

    /// Makes this a reset terminal of the current size in the modes of
    /// `state` (libvterm gets TerminalState::restoreSequence() and the
    /// charsets; the TerminalState becomes a copy of `state`). For the
    /// session's outrun path: the stream resumes at a safe boundary where
    /// `state` is exact. Clears the scrollback and mark().
    ///
    /// keepNormalScreen: the caller knows that the skipped bytes neither left
    /// nor re-entered the alternate screen nor saved the cursor (so the
    /// normal screen under it, the way it was entered and the save slot did
    /// not change: only the alternate screen is stale). When this Screen and
    /// `state` are both in the alternate screen, those are kept (and
    /// libvterm's normal screen painted with them, for when the program
    /// leaves the alternate one); otherwise ignored. Not kept, the normal
    /// screen is blank and an alternate screen in `state` entered from home
    /// with the default pen, as a raw replay's prelude leaves a viewer
    /// (libvterm's own normal buffer from before is erased too).
    void reset(const TerminalState &state, bool keepNormalScreen = false);

    int cols() const;
    int rows() const;

    struct SnapshotOptions {
        /// > 0: paint from a reset terminal (not in place), these many of the
        /// kept scrollback lines first, so they land in the viewer's
        /// scrollback (`?replay=screen&lines=N`). Clamped to the lines kept.
        int scrollbackLines = 0;
        /// true: repaint in place over whatever the viewer shows (no RIS,
        /// nothing scrolled into its scrollback); the insertion at offset S.
        /// Ignored (false) when scrollbackLines > 0.
        bool inPlace = true;
        /// In place only: first scroll this many lines off the top of the
        /// viewer's normal screen into its scrollback (line feeds on its
        /// last row, no margins; clamped to the rows). For a viewer whose
        /// raw replay, at more rows than the stream was written for, left
        /// lines above those this screen kept in its old rows (issue 29).
        int pushLines = 0;
        /// Wrap in synchronized output, CSI ? 2026 h ... CSI ? 2026 l
        /// (terminals without it ignore both).
        bool synchronized = true;
    };
    /**
     * Bytes that bring a terminal of this size to what this Screen shows:
     * every cell of the active screen (characters with their combining
     * characters, wide characters once; 16, 256 and true colours; bold,
     * italic, underline single/double/curly, blink, reverse, strike, font),
     * the normal screen under the alternate one, then the tab stops, the
     * cursor save slot, the title (OSC 2, when one was ever set), scroll
     * margins and origin mode, the cursor (position, pending wrap), the DEC
     * and ANSI modes (DECCKM, DECSCNM, autowrap, insert, bracketed paste,
     * mouse tracking and encoding, focus events, keypad, cursor shape and
     * blink), the charsets (G0, G1, SI/SO), cursor visibility and last the
     * pen (SGR) in force. Every tracked mode is set or reset explicitly, so
     * in place it does not depend on the state the viewer was in.
     * In place it first resets what would disturb the painting (SGR, scroll
     * margins, origin mode, insert mode, G0/GL) and leaves the alternate
     * screen; rows are painted with one CUP each, EL for a blank rest of a
     * row, ECH + CUF for blank runs.
     * With scrollbackLines, after that first reset: from the top, N lines
     * (each erased to its end, CR LF), then rows - 1 line feeds scroll them
     * all into the viewer's scrollback, then the screen as above.
     */
    QByteArray snapshot(const SnapshotOptions &options) const;
    QByteArray snapshot() const { return snapshot(SnapshotOptions()); }

    /// Where libvterm's answers to queries go (DA1 "CSI ? 1 ; 2 c", DA2
    /// "CSI > 0 ; 100 ; 0 c", DSR 5 "CSI 0 n", CPR "CSI row ; col R",
    /// DECRQM "CSI ? Ps ; Pm $ y", DECRQSS): called from feed() with the
    /// bytes of one answer. None set: answers are dropped.
    void setAnswerHandler(std::function<void(const char *data, qsizetype size)> handler);

    /// The TerminalState fed in lockstep with the emulator.
    const TerminalState &modes() const;

    /// The cursor, 0-based, as libvterm has it (in the last column during a
    /// pending wrap).
    int cursorRow() const;
    int cursorColumn() const;
    /// DECTCEM as xterm and xterm.js have it (the TerminalState's): libvterm
    /// also restores it with DECRC, they do not.
    bool cursorVisible() const;
    /// The inferred pending-wrap state (class comment).
    bool pendingWrap() const;

    /// Lines scrolled off the top of the normal screen and kept (at most
    /// kMaxScrollbackLines), and one of them serialized (0 = oldest): SGR +
    /// UTF-8, trailing blanks dropped, ends in SGR 0 if attributes were on.
    qsizetype scrollbackLineCount() const;
    QByteArray scrollbackLine(qsizetype index) const;

    /// Estimate of the heap this Screen holds, bytes: libvterm's two cell
    /// buffers and state, the saved normal screen, the scrollback lines.
    qsizetype memoryBytes() const;

    /// The "synced again" rule (docs/architecture.md, "Server screen"):
    /// true when, since the last mark(), the whole active screen was
    /// rewritten: a full erase (ED 2 "CSI 2 J", RIS, entering the alternate
    /// screen, which libvterm clears) or at least rows() lines scrolled off
    /// the top of the normal screen while no scroll margins were set, or the
    /// whole alternate screen scrolled up by at least rows() lines (less
    /// pages so; libvterm pushes no lines off the alternate screen). ED 3
    /// does not count (it erases only the scrollback in xterm and xterm.js).
    /// In the alternate screen the normal screen under it may still be stale.
    bool fullyRewrittenSinceMark() const;
    void mark();

    /**
     * Compaction, for a screen no one reads for a while (issue 27: a
     * detached idle session): the active screen and everything this class
     * follows are serialised to an in-place snapshot (the bytes snapshot()
     * gives, without synchronized output), the normal screen kept under the
     * alternate one and the scrollback lines are appended, the whole is
     * qCompress()ed, and libvterm is freed. Any call that needs the
     * emulator (feed(), resize(), reset(), snapshot(), the cursor,
     * scrollbackLine(), pendingWrap()) rebuilds it first, exactly: a fresh
     * libvterm of the same size fed that snapshot with its callbacks muted,
     * the rest put back as it was. cols(), rows(), modes(),
     * scrollbackLineCount(), memoryBytes(), fullyRewrittenSinceMark(),
     * mark() and isCompact() do not rebuild.
     *
     * Returns true when compact (also when it already was). Returns false
     * and keeps the live screen where the rebuild would not be exact
     * (docs/architecture.md, "Compaction"): inside an escape sequence or a
     * string (libvterm's parser state cannot be rebuilt), a wrap pending (the
     * inference of the class comment is not libvterm's own phantom state), a
     * cursor visibility libvterm restored with DECRC (xterm does not: the
     * snapshot gives xterm's), the stream saved the cursor while the cursor
     * is in the last column, cells no snapshot repaints as they are (the
     * second half of a wide character whose first half is gone, a wide
     * character in the last column or one whose second half was
     * overwritten), combining characters in the last column, or when the
     * rebuilt screen, checked cell by cell before libvterm is freed, does
     * not show the same cells and cursor.
     */
    bool compact();
    /// Whether the screen is compact now (compact()).
    bool isCompact() const;

private:
    struct Private;
    std::unique_ptr<Private> d;
};

} // namespace Tether
