// SPDX-License-Identifier: GPL-2.0-or-later
// The server screen's serialiser: the bytes that bring a terminal to what a
// Screen shows (Screen::snapshot()), compaction (Screen::compact(), which
// keeps a screen as such bytes, and Private::ensureLive(), which rebuilds
// libvterm from them) and the painting vocabulary both use (ScreenPaint).
// Apart from screen.cpp, the emulator: this follows what viewers need, that
// what libvterm keeps (screenprivate.h). docs/architecture.md ("Server
// screen") describes the snapshot's contents and limits.
#include "screenprivate.h"

#include <QtGlobal>

#include <algorithm>
#include <cstring>
#include <deque>
#include <vector>

namespace Tether {

namespace ScreenPaint {

/// The second half of a wide character (libvterm's internal marker).
constexpr uint32_t kWideContinuation = uint32_t(-1);

static bool sameColor(const VTermColor &a, const VTermColor &b)
{
    const int da = a.type & VTERM_COLOR_DEFAULT_MASK;
    const int db = b.type & VTERM_COLOR_DEFAULT_MASK;
    if (da || db)
        return da == db;
    if (VTERM_COLOR_IS_INDEXED(&a) != VTERM_COLOR_IS_INDEXED(&b))
        return false;
    if (VTERM_COLOR_IS_INDEXED(&a))
        return a.indexed.idx == b.indexed.idx;
    return a.rgb.red == b.rgb.red && a.rgb.green == b.rgb.green && a.rgb.blue == b.rgb.blue;
}

bool samePen(const Pen &a, const Pen &b)
{
    return a.bold == b.bold && a.underline == b.underline && a.italic == b.italic && a.blink == b.blink
        && a.reverse == b.reverse && a.strike == b.strike && a.font == b.font && sameColor(a.fg, b.fg)
        && sameColor(a.bg, b.bg);
}

/// A cell's pen; `flipReverse` undoes libvterm's XOR with DECSCNM (screen
/// reverse video), which get_cell applies and a repaint must not bake in.
Pen cellPen(const VTermScreenCell &c, bool flipReverse)
{
    Pen p;
    p.bold = c.attrs.bold;
    p.underline = c.attrs.underline;
    p.italic = c.attrs.italic;
    p.blink = c.attrs.blink;
    p.reverse = c.attrs.reverse ^ (flipReverse ? 1 : 0);
    p.strike = c.attrs.strike;
    p.font = c.attrs.font;
    p.fg = c.fg;
    p.bg = c.bg;
    return p;
}

void appendNumber(QByteArray &out, int n)
{
    char buf[12];
    int i = sizeof buf;
    unsigned v = unsigned(std::max(n, 0));
    do {
        buf[--i] = char('0' + v % 10);
        v /= 10;
    } while (v);
    out.append(buf + i, int(sizeof buf) - i);
}

static void appendColor(QByteArray &out, const VTermColor &c, bool foreground)
{
    if (c.type & VTERM_COLOR_DEFAULT_MASK) {
        out += foreground ? "39" : "49";
    } else if (VTERM_COLOR_IS_INDEXED(&c)) {
        const int idx = c.indexed.idx;
        if (idx < 8) {
            appendNumber(out, (foreground ? 30 : 40) + idx);
        } else if (idx < 16) {
            appendNumber(out, (foreground ? 90 : 100) + idx - 8);
        } else {
            out += foreground ? "38;5;" : "48;5;";
            appendNumber(out, idx);
        }
    } else {
        out += foreground ? "38;2;" : "48;2;";
        appendNumber(out, c.rgb.red);
        out += ';';
        appendNumber(out, c.rgb.green);
        out += ';';
        appendNumber(out, c.rgb.blue);
    }
}

/// SGR taking a terminal whose pen is `from` to `to`: only what changed, or
/// "0" plus what is set when that is shorter to think about (to is default).
void appendSgr(QByteArray &out, Pen &from, const Pen &to)
{
    if (samePen(from, to))
        return;
    out += "\x1b[";
    const Pen plain;
    bool first = true;
    const auto sep = [&] {
        if (!first)
            out += ';';
        first = false;
    };
    Pen base = from;
    if (samePen(to, plain)) {
        out += "0m";
        from = to;
        return;
    }
    // Turning attributes off one by one costs more than a reset when
    // several go: start from the default pen then.
    const int offs = (from.bold && !to.bold) + (from.underline && !to.underline) + (from.italic && !to.italic)
        + (from.blink && !to.blink) + (from.reverse && !to.reverse) + (from.strike && !to.strike);
    if (offs >= 2) {
        out += '0';
        first = false;
        base = plain;
    }
    if (base.bold != to.bold) {
        sep();
        out += to.bold ? "1" : "22";
    }
    if (base.italic != to.italic) {
        sep();
        out += to.italic ? "3" : "23";
    }
    if (base.underline != to.underline) {
        sep();
        out += to.underline == VTERM_UNDERLINE_OFF ? "24"
             : to.underline == VTERM_UNDERLINE_DOUBLE ? "21"
             : to.underline == VTERM_UNDERLINE_CURLY ? "4:3" : "4";
    }
    if (base.blink != to.blink) {
        sep();
        out += to.blink ? "5" : "25";
    }
    if (base.reverse != to.reverse) {
        sep();
        out += to.reverse ? "7" : "27";
    }
    if (base.strike != to.strike) {
        sep();
        out += to.strike ? "9" : "29";
    }
    if (base.font != to.font) {
        sep();
        appendNumber(out, 10 + to.font);
    }
    if (!sameColor(base.fg, to.fg)) {
        sep();
        appendColor(out, to.fg, true);
    }
    if (!sameColor(base.bg, to.bg)) {
        sep();
        appendColor(out, to.bg, false);
    }
    out += 'm';
    from = to;
}

static void appendUtf8(QByteArray &out, uint32_t c)
{
    if (c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF))
        c = 0xFFFD;
    if (c < 0x80) {
        out += char(c);
    } else if (c < 0x800) {
        out += char(0xC0 | (c >> 6));
        out += char(0x80 | (c & 0x3F));
    } else if (c < 0x10000) {
        out += char(0xE0 | (c >> 12));
        out += char(0x80 | ((c >> 6) & 0x3F));
        out += char(0x80 | (c & 0x3F));
    } else {
        out += char(0xF0 | (c >> 18));
        out += char(0x80 | ((c >> 12) & 0x3F));
        out += char(0x80 | ((c >> 6) & 0x3F));
        out += char(0x80 | (c & 0x3F));
    }
}

void appendGlyph(QByteArray &out, const VTermScreenCell &c)
{
    if (c.chars[0] == 0) {
        out += ' ';
        return;
    }
    for (int i = 0; i < VTERM_MAX_CHARS_PER_CELL && c.chars[i]; ++i)
        appendUtf8(out, c.chars[i]);
}

static void appendCsi(QByteArray &out, int a, char final)
{
    out += "\x1b[";
    appendNumber(out, a);
    out += final;
}

/// DECSCUSR: 1/2 block, 3/4 underline, 5/6 bar; odd ones blink.
static void appendCursorStyle(QByteArray &out, int shape, bool blink)
{
    const int base = shape == VTERM_PROP_CURSORSHAPE_UNDERLINE ? 3 : shape == VTERM_PROP_CURSORSHAPE_BAR_LEFT ? 5 : 1;
    appendCsi(out, base + (blink ? 0 : 1), ' ');
    out += 'q';
}

void appendCup(QByteArray &out, int row, int col) // 0-based in, 1-based out
{
    out += "\x1b[";
    appendNumber(out, row + 1);
    out += ';';
    appendNumber(out, col + 1);
    out += 'H';
}

/// Code points no terminal draws two columns wide: below U+1100, general
/// punctuation to the technical symbols but the wide ones among them
/// (U+231A, U+231B, U+2329, U+232A, U+23E9..), control pictures, box
/// drawing, blocks and shapes but U+25FD/U+25FE (what TUIs and the DEC
/// line-drawing set draw with), the miscellaneous symbols and dingbats
/// (U+2713 CHECK MARK, U+2714, U+2717, U+2605 ...) but their emoji, and the
/// arrows, mathematical symbols and braille patterns up to U+2B1A. The wide
/// ones excluded are those of East Asian Width W in xterm.js's Unicode 11
/// table (@xterm/addon-unicode11, UnicodeV11.ts BMP_WIDE) and of width 2 in
/// glibc's wcwidth() (Debian 12, what tmux uses): the two agree on every
/// code point here. Anything else may be wide (CJK, emoji, ...).
static bool surelyNarrow(uint32_t c)
{
    if (c < 0x1100)
        return true;
    if (c < 0x2010 || c > 0x2B1A)
        return false;
    // Emoji presentation (East Asian Width W) within U+2010..U+2B1A.
    static constexpr uint32_t kWide[][2] = {
        {0x231A, 0x231B}, {0x2329, 0x232A}, {0x23E9, 0x23FF}, {0x25FD, 0x25FE}, {0x2614, 0x2615},
        {0x2648, 0x2653}, {0x267F, 0x267F}, {0x2693, 0x2693}, {0x26A1, 0x26A1}, {0x26AA, 0x26AB},
        {0x26BD, 0x26BE}, {0x26C4, 0x26C5}, {0x26CE, 0x26CE}, {0x26D4, 0x26D4}, {0x26EA, 0x26EA},
        {0x26F2, 0x26F3}, {0x26F5, 0x26F5}, {0x26FA, 0x26FA}, {0x26FD, 0x26FD}, {0x2705, 0x2705},
        {0x270A, 0x270B}, {0x2728, 0x2728}, {0x274C, 0x274C}, {0x274E, 0x274E}, {0x2753, 0x2755},
        {0x2757, 0x2757}, {0x2795, 0x2797}, {0x27B0, 0x27B0}, {0x27BF, 0x27BF},
    };
    for (const auto &range : kWide) {
        if (c < range[0])
            return true;
        if (c <= range[1])
            return false;
    }
    return true;
}

static bool blank(const VTermScreenCell &c)
{
    return c.chars[0] == 0;
}

/// What an erased cell is painted with. libvterm erases with the whole pen
/// (an erased cell reads back bold, underlined, reversed... as the pen
/// was); xterm and xterm.js erase with the pen's background colour only
/// (xterm.js eraseAttrData(), xterm's "background colour erase"), and that
/// is what a viewer that saw the erase shows. So blank cells are painted
/// the way they were made: by EL/ECH with only that background.
static Pen erasePen(const VTermScreenCell &c)
{
    Pen p;
    p.bg = c.bg;
    return p;
}

static bool sameErase(const VTermScreenCell &a, const VTermScreenCell &b)
{
    return blank(a) && blank(b) && sameColor(a.bg, b.bg);
}

/**
 * The cells of one row, written from its first column with the cursor
 * there: glyphs (wide ones once, combining characters after their base),
 * blank (erased or never written) runs as ECH + CUF, a blank rest of the
 * row as EL, each with only its background (erasePen()).
 */
void paintCells(QByteArray &out, Pen &pen, const VTermScreenCell *cells, int cols, bool flipReverse,
                bool onBlankLine)
{
    int end = cols;
    const VTermScreenCell &lastCell = cells[cols - 1];
    while (end > 0 && sameErase(cells[end - 1], lastCell))
        --end;
    const Pen last = erasePen(lastCell);
    for (int col = 0; col < end;) {
        VTermScreenCell c = cells[col];
        // A second half whose first half was overwritten (libvterm leaves
        // the marker; renderers draw nothing there): a blank, as xterm and
        // xterm.js leave it. The second half of a painted wide character is
        // skipped below (col += width). A wide character moved into the
        // last column (ICH does that in libvterm) cannot be printed there
        // (it would wrap, and scroll at the bottom): a blank too.
        if (c.chars[0] == kWideContinuation || (col == cols - 1 && !surelyNarrow(c.chars[0])))
            c.chars[0] = 0;
        if (blank(c)) {
            int run = 1;
            while (col + run < end && sameErase(cells[col + run], c))
                ++run;
            appendSgr(out, pen, erasePen(c));
            appendCsi(out, run, 'X');
            if (col + run < cols) // more cells or the EL follow
                appendCsi(out, run, 'C');
            col += run;
            continue;
        }
        appendSgr(out, pen, cellPen(c, flipReverse));
        appendGlyph(out, c);
        const int width = std::max(1, int(c.width));
        col += width;
        // A wide character whose second half was overwritten reads as width
        // 1, but printing it moves the cursor by 2: put the cursor back
        // where the next cell is (only after characters that may be wide).
        if (width == 1 && !surelyNarrow(c.chars[0]) && col < cols)
            appendCsi(out, col + 1, 'G');
    }
    // On a line known blank (a fresh line of a reset terminal) a default
    // rest needs nothing.
    if (end < cols && !(onBlankLine && samePen(last, Pen()))) {
        appendSgr(out, pen, last);
        out += "\x1b[K";
    }
}


/// Whether two cells look the same to every viewer: the same characters
/// and width, and the same pen for a glyph; for a blank only the
/// background (erasePen(): the rest of an erased cell's pen is never shown).
static bool sameShown(const VTermScreenCell &a, const VTermScreenCell &b)
{
    if (a.width != b.width)
        return false;
    for (int i = 0; i < VTERM_MAX_CHARS_PER_CELL; ++i) {
        if (a.chars[i] != b.chars[i])
            return false;
        if (!a.chars[i])
            break;
    }
    if (a.attrs.dwl != b.attrs.dwl || a.attrs.dhl != b.attrs.dhl)
        return false;
    if (blank(a))
        return sameColor(a.bg, b.bg);
    return samePen(cellPen(a, false), cellPen(b, false));
}

/// Whether paintCells() repaints this row exactly (compaction): no second
/// half of a wide character without its first half, no wide character in
/// the last column or reported wide while narrow, no combining character in
/// the last column, no double-width or double-height line.
static bool paintsExactly(const VTermScreenCell *cells, int cols)
{
    for (int col = 0; col < cols; ++col) {
        const VTermScreenCell &c = cells[col];
        if (c.attrs.dwl || c.attrs.dhl)
            return false;
        if (c.chars[0] == kWideContinuation) {
            if (col == 0 || cells[col - 1].width != 2 || cells[col - 1].chars[0] == kWideContinuation)
                return false;
            continue;
        }
        if (c.width == 2 && (col == cols - 1 || surelyNarrow(c.chars[0])))
            return false;
        if (col == cols - 1 && (c.chars[1] != 0 || !surelyNarrow(c.chars[0])))
            return false;
    }
    return true;
}

} // namespace ScreenPaint

using namespace ScreenPaint;

void Screen::Private::createVtFrom(const QByteArray &snapshot)
{
    muted = true;
    createVt();
    inject(snapshot);
    muted = false;
}

void Screen::Private::appendLength(QByteArray &out, qsizetype n)
{
    const quint32 v = quint32(n);
    out.append(reinterpret_cast<const char *>(&v), sizeof v);
}

bool Screen::Private::takeLength(const QByteArray &in, qsizetype &at, qsizetype &n)
{
    quint32 v = 0;
    if (at + qsizetype(sizeof v) > in.size())
        return false;
    std::memcpy(&v, in.constData() + at, sizeof v);
    at += qsizetype(sizeof v);
    n = qsizetype(v);
    return at + n <= in.size();
}

void Screen::Private::ensureLive()
{
    if (vt)
        return;
    const QByteArray raw = qUncompress(compacted);
    qsizetype at = 0, n = 0;
    takeLength(raw, at, n);
    createVtFrom(QByteArray::fromRawData(raw.constData() + at, n));
    at += n;
    if (takeLength(raw, at, n) && n > 0) {
        normal.resize(size_t(n) / sizeof(VTermScreenCell));
        std::memcpy(static_cast<void *>(normal.data()), raw.constData() + at, size_t(n));
    }
    at += n;
    scrollbackBytes = 0;
    for (qsizetype i = 0; i < compactedLines && takeLength(raw, at, n); ++i) {
        QByteArray line(raw.constData() + at, n);
        scrollbackBytes += line.capacity();
        scrollback.push_back(std::move(line));
        at += n;
    }
    compacted = QByteArray();
    compactedLines = 0;
}

void Screen::Private::paintNormalUnderAlt(QByteArray &out, Pen &pen, bool with1049) const
{
    if (!normal.empty()) {
        for (int r = 0; r < rows; ++r) {
            appendCup(out, r, 0);
            paintCells(out, pen, normal.data() + size_t(r) * size_t(cols), cols, false);
        }
    } else {
        appendSgr(out, pen, Pen());
        out += "\x1b[2J";
    }
    const Saved &e = altEnter;
    appendCup(out, std::min(e.pos.row, rows - 1), std::min(e.pos.col, cols - 1));
    out += e.visible ? "\x1b[?25h" : "\x1b[?25l";
    if (cursorStyled)
        appendCursorStyle(out, e.shape, e.blink);
    appendSgr(out, pen, e.pen);
    out += with1049 ? "\x1b[?1049h" : "\x1b[?1047h";
}

void Screen::Private::paintSaveSlot(QByteArray &out, Pen &pen) const
{
    const Saved s = slotValid ? slot : Saved();
    appendCup(out, std::min(s.pos.row, rows - 1), std::min(s.pos.col, cols - 1));
    out += s.visible ? "\x1b[?25h" : "\x1b[?25l";
    if (cursorStyled)
        appendCursorStyle(out, s.shape, s.blink);
    appendSgr(out, pen, s.pen);
    out += "\x1b" "7";
}

QByteArray Screen::snapshot(const SnapshotOptions &options) const
{
    d->ensureLive();
    const int cols = d->cols;
    const int rows = d->rows;
    const TerminalState &ts = d->ts;
    const bool alt = d->vtAlt;
    QByteArray out;
    out.reserve(qsizetype(rows) * cols * 2 + 1024);
    if (options.synchronized)
        out += "\x1b[?2026h";

    // The normal screen first (leaving the alternate one with ?1047, which
    // does not restore the cursor: libvterm would restore an uninitialized
    // save slot), then what would disturb the painting: pen, origin mode,
    // margins (which homes the cursor), insert mode, G0 and GL.
    out += "\x1b[?1047l\x1b[0m\x1b[?6l\x1b[r\x1b[4l\x1b(B\x0f";
    if (options.inPlace && options.scrollbackLines <= 0 && options.pushLines > 0) {
        appendCup(out, rows - 1, 0);
        out += QByteArray(std::min(options.pushLines, rows), '\n');
    }

    const int lines = int(std::min<qsizetype>(std::max(options.scrollbackLines, 0), qsizetype(d->scrollback.size())));
    if (options.scrollbackLines > 0 && lines > 0) {
        // From the top of a reset terminal: the lines (each erased to its
        // end, should the viewer not be blank; wrapping where a line is
        // wider than the screen now), then rows - 1 line feeds: together
        // they scroll every one of those lines into the viewer's scrollback.
        out += "\x1b[?7h";
        for (size_t i = d->scrollback.size() - size_t(lines); i < d->scrollback.size(); ++i) {
            out += d->scrollback[i];
            out += "\x1b[K\r\n";
        }
        out += QByteArray(rows - 1, '\n');
    }

    Pen pen;
    std::vector<VTermScreenCell> row(static_cast<size_t>(cols));
    const auto paintLive = [&] {
        for (int r = 0; r < rows; ++r) {
            d->readRow(r, row.data());
            appendCup(out, r, 0);
            paintCells(out, pen, row.data(), cols, d->reverseScreen);
        }
    };
    if (alt) {
        d->paintNormalUnderAlt(out, pen, ts.hasMode(TerminalState::AltScreen1049));
        paintLive();
    } else {
        paintLive();
    }

    // Tab stops: in place the viewer's may be anything, so always; from a
    // reset terminal (not in place, or with scrollback lines) only when the
    // stream changed them.
    const bool inPlace = options.inPlace && options.scrollbackLines <= 0;
    if (inPlace || d->tabsCustom) {
        out += "\x1b[3g";
        for (int col = 0; col < cols; ++col) {
            if (d->tabsCustom ? d->tabs[size_t(col)] != 0 : col % 8 == 0) {
                appendCsi(out, col + 1, 'G');
                out += "\x1bH";
            }
        }
    }
    // The cursor save slot (DECRC, ?1049 l restore it): what the stream
    // saved last, or, if it never saved, a reset terminal's (home, default
    // pen, visible) over whatever the viewer had. Entering the alternate
    // screen with ?1049 above already saved the right one unless the
    // program saved again after.
    const bool enteredSaving = alt && ts.hasMode(TerminalState::AltScreen1049);
    if (!enteredSaving || d->slotChangedInAlt)
        d->paintSaveSlot(out, pen);
    if (ts.titleSerial() > 0) {
        out += "\x1b]2;";
        out += ts.title().toUtf8();
        out += '\x07';
    }
    if (ts.marginsSet()) {
        out += "\x1b[";
        if (ts.marginTop())
            appendNumber(out, ts.marginTop());
        if (ts.marginBottom()) {
            out += ';';
            appendNumber(out, ts.marginBottom());
        }
        out += 'r';
    }
    const bool origin = ts.hasMode(TerminalState::OriginMode);
    if (origin)
        out += "\x1b[?6h";

    // The cursor; a pending wrap is recreated by printing that glyph again
    // (autowrap is on then, insert mode off: it lands where it was).
    const VTermPos cur = d->cursor();
    const int top = origin && ts.marginsSet() && ts.marginTop() > 0 ? ts.marginTop() - 1 : 0;
    if (d->pendingWrap()) {
        // Print again what is at the cursor, which leaves the cursor on it
        // pending a wrap. If that cell is no longer as wide as the rest of
        // the row (a wide character printed there was erased or moved
        // since), print the last cell instead: the next character still
        // wraps (in xterm.js the cursor is past the last column either way);
        // libvterm then reports the cursor one column further right.
        VTermPos at = cur;
        VTermScreenCell c;
        std::memset(&c, 0, sizeof c);
        vterm_screen_get_cell(d->vs, at, &c);
        if (c.chars[0] == kWideContinuation || at.col + std::max(1, int(c.width)) != cols) {
            at.col = cols - 1;
            std::memset(&c, 0, sizeof c);
            vterm_screen_get_cell(d->vs, at, &c);
            if (c.chars[0] == kWideContinuation || !surelyNarrow(c.chars[0]))
                c.chars[0] = 0; // the second half of a wide character: a blank
        }
        appendCup(out, at.row - top, at.col);
        out += "\x1b[?7h";
        appendSgr(out, pen, cellPen(c, d->reverseScreen));
        appendGlyph(out, c);
    } else {
        appendCup(out, cur.row - top, cur.col);
    }

    // Every tracked mode, set or reset.
    const auto mode = [&out](const char *number, bool on) {
        out += "\x1b[?";
        out += number;
        out += on ? 'h' : 'l';
    };
    mode("1", ts.hasMode(TerminalState::AppCursorKeys));
    mode("5", d->reverseScreen);
    mode("7", !ts.hasMode(TerminalState::NoAutowrap));
    out += ts.hasMode(TerminalState::InsertMode) ? "\x1b[4h" : "\x1b[4l";
    mode("2004", ts.hasMode(TerminalState::BracketedPaste));
    if (ts.hasMode(TerminalState::MouseX10))
        mode("9", true);
    else if (ts.hasMode(TerminalState::MouseNormal))
        mode("1000", true);
    else if (ts.hasMode(TerminalState::MouseButton))
        mode("1002", true);
    else if (ts.hasMode(TerminalState::MouseAny))
        mode("1003", true);
    else
        mode("1000", false); // any of them turns tracking off
    mode("1005", false);
    mode("1006", false);
    mode("1015", false);
    if (ts.hasMode(TerminalState::MouseUtf8))
        mode("1005", true);
    else if (ts.hasMode(TerminalState::MouseSgr))
        mode("1006", true);
    else if (ts.hasMode(TerminalState::MouseUrxvt))
        mode("1015", true);
    mode("1004", ts.hasMode(TerminalState::FocusEvents));
    out += ts.hasMode(TerminalState::KeypadApp) ? "\x1b=" : "\x1b>";
    // The cursor's shape only when the program changed it since RIS: the
    // viewer's own default (which this cannot know) stays otherwise.
    if (d->cursorStyled)
        appendCursorStyle(out, d->cursorShape, d->cursorBlink);

    out += "\x1b(";
    out += ts.charset(0);
    out += "\x1b)";
    out += ts.charset(1);
    out += ts.shiftOut() ? '\x0e' : '\x0f';

    // Visibility as xterm and xterm.js have it: libvterm also restores it
    // with DECRC and ?1049 l, they do not (the TerminalState follows them).
    mode("25", !ts.hasMode(TerminalState::CursorHidden));
    appendSgr(out, pen, d->currentPen());
    if (options.synchronized)
        out += "\x1b[?2026l";
    return out;
}

bool Screen::isCompact() const
{
    return d->vt == nullptr;
}

/// After compact()'s repaint of one glyph (which reset them): insert mode,
/// the character sets, origin mode, the cursor at `at` (relative to the top
/// margin in origin mode) and the pen in force, as the stream left them.
static void appendModesCursorPen(QByteArray &out, const TerminalState &ts, VTermPos at, Pen &pen, const Pen &inForce)
{
    if (ts.hasMode(TerminalState::InsertMode))
        out += "\x1b[4h";
    out += ts.charsetSequence();
    const bool origin = ts.hasMode(TerminalState::OriginMode);
    if (origin)
        out += "\x1b[?6h";
    const int top = origin && ts.marginsSet() && ts.marginTop() > 0 ? ts.marginTop() - 1 : 0;
    appendCup(out, at.row - top, at.col);
    appendSgr(out, pen, inForce);
}

bool Screen::compact()
{
    if (!d->vt)
        return true;
    // Cases a rebuild from the snapshot cannot make exact (screen.h).
    if (!d->ts.atSafeBoundary() || d->utf8TailSize > 0 || d->ts.utf8CutByControl() || d->pendingWrap()
        || d->cursorVisible == d->ts.hasMode(TerminalState::CursorHidden)
        || (d->slotValid && d->slot.pos.col >= d->cols - 1) || d->ts.hasMode(TerminalState::NoAutowrap))
        return false;
    for (int r = 0; r < d->normalRows && !d->normal.empty(); ++r)
        if (!paintsExactly(d->normal.data() + size_t(r) * size_t(d->normalCols), d->normalCols))
            return false;
    std::vector<VTermScreenCell> row(size_t(d->cols));
    for (int r = 0; r < d->rows; ++r) {
        d->readRow(r, row.data());
        if (!paintsExactly(row.data(), d->cols))
            return false;
    }

    SnapshotOptions options;
    options.synchronized = false;
    QByteArray snap = snapshot(options);
    // libvterm joins a combining character that comes next to the last
    // glyph printed when the cursor is right after it: print that glyph
    // again last, where it is, if it was the stream's last print.
    const VTermPos at = d->cursor();
    const Private::GlyphDamage &g = d->lastGlyph;
    VTermScreenCell c;
    std::memset(&c, 0, sizeof c);
    if (g.row >= 0 && g.row < d->rows && g.start < d->cols)
        vterm_screen_get_cell(d->vs, VTermPos{g.row, g.start}, &c);
    const bool glyphThere = g.row >= 0 && !d->glyphTouched && !blank(c) && c.chars[0] != kWideContinuation
        && std::max(1, int(c.width)) == g.end - g.start;
    if (g.row < 0) {
        // Nothing printed since a resize or ever: libvterm's last glyph is
        // known only on a screen that never printed (and then the snapshot
        // prints nothing either).
        if (d->everPrinted)
            return false;
    } else if (g.row != at.row || g.end != at.col) {
        // Not right after the cursor: a combining character that comes next
        // joins nothing. The snapshot's own last glyph may be: print a cell
        // of the last column again last (with autowrap off), which no
        // cursor is ever right after.
        // libvterm's last glyph is lastGlyph when the cursor moved to its
        // end after it (a print does; an erase and a move there would leave
        // a blank, unless scrolled away since) or when it is in the last
        // column (recorded there only when it left a character). Else an
        // erase came last and libvterm's last glyph is not known.
        const bool printed = g.end == d->cols || (d->glyphConfirmed && (d->glyphTouched || !blank(c)));
        if (!printed)
            return false;
        VTermScreenCell e;
        std::memset(&e, 0, sizeof e);
        vterm_screen_get_cell(d->vs, VTermPos{0, d->cols - 1}, &e);
        if (e.chars[0] == kWideContinuation || !surelyNarrow(e.chars[0]))
            return false;
        const TerminalState &ts = d->ts;
        const Pen inForce = d->currentPen();
        Pen pen = inForce;
        snap += "\x1b[?6l\x1b[4l\x1b(B\x0f\x1b[?7l";
        appendCup(snap, 0, d->cols - 1);
        if (blank(e)) {
            appendSgr(snap, pen, erasePen(e));
            snap += " \x1b[X";
        } else {
            appendSgr(snap, pen, cellPen(e, d->reverseScreen));
            appendGlyph(snap, e);
        }
        if (!ts.hasMode(TerminalState::NoAutowrap))
            snap += "\x1b[?7h";
        appendModesCursorPen(snap, ts, at, pen, inForce);
    } else {
        if (d->glyphConfirmed && glyphThere) {
            const TerminalState &ts = d->ts;
            const Pen inForce = d->currentPen();
            Pen pen = inForce;
            snap += "\x1b[?6l\x1b[4l\x1b(B\x0f";
            appendCup(snap, g.row, g.start);
            appendSgr(snap, pen, cellPen(c, d->reverseScreen));
            appendGlyph(snap, c);
            appendModesCursorPen(snap, ts, at, pen, inForce);
        } else {
            return false; // libvterm's own last glyph there is not known
        }
    }

    // Rebuild beside the live emulator and compare every cell and the cursor.
    VTerm *const liveVt = d->vt;
    VTermScreen *const liveVs = d->vs;
    VTermState *const liveSt = d->st;
    const VTermPos cursor = d->cursor();
    d->createVtFrom(snap);
    bool same = cursor.row == d->cursor().row && cursor.col == d->cursor().col;
    for (int r = 0; same && r < d->rows; ++r) {
        for (int col = 0; same && col < d->cols; ++col) {
            VTermScreenCell a, b;
            std::memset(&a, 0, sizeof a);
            std::memset(&b, 0, sizeof b);
            vterm_screen_get_cell(liveVs, VTermPos{r, col}, &a);
            vterm_screen_get_cell(d->vs, VTermPos{r, col}, &b);
            same = sameShown(a, b);
        }
    }
    vterm_free(same ? liveVt : d->vt);
    if (!same) {
        d->vt = liveVt;
        d->vs = liveVs;
        d->st = liveSt;
        return false;
    }

    // The rebuilt emulator was only the check: free it too, keep the bytes.
    QByteArray raw;
    const qsizetype normalBytes = qsizetype(d->normal.size() * sizeof(VTermScreenCell));
    raw.reserve(snap.size() + normalBytes + d->scrollbackBytes + qsizetype(d->scrollback.size()) * 4 + 16);
    Private::appendLength(raw, snap.size());
    raw += snap;
    Private::appendLength(raw, normalBytes);
    raw.append(reinterpret_cast<const char *>(d->normal.data()), normalBytes);
    for (const QByteArray &line : d->scrollback) {
        Private::appendLength(raw, line.size());
        raw += line;
    }
    d->compacted = qCompress(raw);
    d->compacted.squeeze(); // qCompress() leaves the capacity of the input
    d->compactedLines = qsizetype(d->scrollback.size());
    std::deque<QByteArray>().swap(d->scrollback);
    d->scrollbackBytes = 0;
    std::vector<VTermScreenCell>().swap(d->normal);
    vterm_free(d->vt);
    d->vt = nullptr;
    d->vs = nullptr;
    d->st = nullptr;
    return true;
}

} // namespace Tether
