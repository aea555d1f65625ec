// SPDX-License-Identifier: GPL-2.0-or-later
// The server-side screen: libvterm plus what it does not keep, and the
// snapshot serializer. docs/architecture.md ("Server screen") describes the
// snapshot's contents and limits.
#include "screen.h"

#include <vterm.h>

#include <QtGlobal>

#include <algorithm>
#include <cstring>
#include <deque>
#include <vector>

namespace Tether {

namespace {

/// The second half of a wide character (libvterm's internal marker).
constexpr uint32_t kWideContinuation = uint32_t(-1);
/// libvterm's internal cell (ScreenCell: 6 code points, a pen of two colours
/// and a bit field): what one cell costs in each of its two buffers.
constexpr qsizetype kInternalCellBytes = 6 * 4 + 2 * 4 + 4;

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

bool sameColor(const VTermColor &a, const VTermColor &b)
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

void appendColor(QByteArray &out, const VTermColor &c, bool foreground)
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

void appendUtf8(QByteArray &out, uint32_t c)
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

void appendCsi(QByteArray &out, int a, char final)
{
    out += "\x1b[";
    appendNumber(out, a);
    out += final;
}

/// DECSCUSR: 1/2 block, 3/4 underline, 5/6 bar; odd ones blink.
void appendCursorStyle(QByteArray &out, int shape, bool blink)
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
bool surelyNarrow(uint32_t c)
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

bool blank(const VTermScreenCell &c)
{
    return c.chars[0] == 0;
}

/// What an erased cell is painted with. libvterm erases with the whole pen
/// (an erased cell reads back bold, underlined, reversed... as the pen
/// was); xterm and xterm.js erase with the pen's background colour only
/// (xterm.js eraseAttrData(), xterm's "background colour erase"), and that
/// is what a viewer that saw the erase shows. So blank cells are painted
/// the way they were made: by EL/ECH with only that background.
Pen erasePen(const VTermScreenCell &c)
{
    Pen p;
    p.bg = c.bg;
    return p;
}

bool sameErase(const VTermScreenCell &a, const VTermScreenCell &b)
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
                bool onBlankLine = false)
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
bool sameShown(const VTermScreenCell &a, const VTermScreenCell &b)
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
bool paintsExactly(const VTermScreenCell *cells, int cols)
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

} // namespace

struct Screen::Private
{
    /// The cursor, pen and visibility at a moment (a cursor save).
    struct Saved
    {
        VTermPos pos{0, 0};
        Pen pen;
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
    void createVt()
    {
        vt = vterm_new(rows, cols);
        vterm_set_utf8(vt, 1);
        vterm_output_set_callback(vt, &Private::onOutput, this);
        st = vterm_obtain_state(vt);
        vs = vterm_obtain_screen(vt);
        vterm_screen_enable_altscreen(vs, 1);
        callbacks.damage = &Private::onDamage;
        callbacks.movecursor = &Private::onMoveCursor;
        callbacks.moverect = &Private::onMoveRect;
        callbacks.settermprop = &Private::onSetTermProp;
        callbacks.sb_pushline = &Private::onPushLine;
        vterm_screen_set_callbacks(vs, &callbacks, this);
        vterm_screen_set_damage_merge(vs, VTERM_DAMAGE_CELL);
        vterm_screen_reset(vs, 1);
        initSaveSlot();
    }

    /// A libvterm brought to this snapshot with the callbacks muted (what
    /// this Private follows stays as it is).
    void createVtFrom(const QByteArray &snapshot)
    {
        muted = true;
        createVt();
        inject(snapshot);
        muted = false;
    }

    static void appendLength(QByteArray &out, qsizetype n)
    {
        const quint32 v = quint32(n);
        out.append(reinterpret_cast<const char *>(&v), sizeof v);
    }
    static bool takeLength(const QByteArray &in, qsizetype &at, qsizetype &n)
    {
        quint32 v = 0;
        if (at + qsizetype(sizeof v) > in.size())
            return false;
        std::memcpy(&v, in.constData() + at, sizeof v);
        at += qsizetype(sizeof v);
        n = qsizetype(v);
        return at + n <= in.size();
    }

    /// Compaction undone (Screen::compact()); nothing while live.
    void ensureLive()
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

    /// The lead byte's sequence length (1 for ASCII and stray bytes).
    static int utf8Length(unsigned char c)
    {
        return c >= 0xF0 && c < 0xF8 ? 4 : c >= 0xE0 && c < 0xF0 ? 3 : c >= 0xC0 && c < 0xE0 ? 2 : 1;
    }

    void write(const char *data, qsizetype size)
    {
        if (size <= 0)
            return;
        if (utf8TailSize > 0) {
            // Complete the held-back character with the continuation bytes
            // that follow (fewer: it is written as it is, malformed).
            while (utf8TailSize < utf8TailNeed && size > 0 && (uchar(*data) & 0xC0) == 0x80) {
                utf8Tail[utf8TailSize++] = *data++;
                --size;
            }
            if (utf8TailSize < utf8TailNeed && size == 0)
                return;
            vterm_input_write(vt, utf8Tail, size_t(utf8TailSize));
            utf8TailSize = 0;
        }
        // Hold back an incomplete character at the end (its lead byte is
        // among the last three bytes).
        for (int k = 1; k <= 3 && k <= size; ++k) {
            const uchar c = uchar(data[size - k]);
            if ((c & 0xC0) == 0x80)
                continue;
            const int need = utf8Length(c);
            if (need > k) {
                std::memcpy(utf8Tail, data + size - k, size_t(k));
                utf8TailSize = k;
                utf8TailNeed = need;
                size -= k;
            }
            break;
        }
        if (size > 0)
            vterm_input_write(vt, data, size_t(size));
    }
    /// Sequences of the Screen's own (not the stream's) go in as they are,
    /// around a held-back character, as a terminal's decoder keeps one
    /// across a resize.
    void inject(const char *data, qsizetype size)
    {
        if (size > 0)
            vterm_input_write(vt, data, size_t(size));
    }
    void inject(const QByteArray &b) { inject(b.constData(), b.size()); }

    VTermPos cursor() const
    {
        VTermPos p;
        vterm_state_get_cursorpos(st, &p);
        return p;
    }

    Pen currentPen() const
    {
        Pen p;
        VTermValue v;
        if (vterm_state_get_penattr(st, VTERM_ATTR_BOLD, &v))
            p.bold = v.boolean ? 1 : 0;
        if (vterm_state_get_penattr(st, VTERM_ATTR_UNDERLINE, &v))
            p.underline = quint8(v.number);
        if (vterm_state_get_penattr(st, VTERM_ATTR_ITALIC, &v))
            p.italic = v.boolean ? 1 : 0;
        if (vterm_state_get_penattr(st, VTERM_ATTR_BLINK, &v))
            p.blink = v.boolean ? 1 : 0;
        if (vterm_state_get_penattr(st, VTERM_ATTR_REVERSE, &v))
            p.reverse = v.boolean ? 1 : 0;
        if (vterm_state_get_penattr(st, VTERM_ATTR_STRIKE, &v))
            p.strike = v.boolean ? 1 : 0;
        if (vterm_state_get_penattr(st, VTERM_ATTR_FONT, &v))
            p.font = quint8(v.number);
        if (vterm_state_get_penattr(st, VTERM_ATTR_FOREGROUND, &v))
            p.fg = v.color;
        if (vterm_state_get_penattr(st, VTERM_ATTR_BACKGROUND, &v))
            p.bg = v.color;
        return p;
    }

    Saved now() const
    {
        Saved s;
        s.pos = cursor();
        s.pen = currentPen();
        s.visible = cursorVisible;
        s.shape = cursorShape;
        s.blink = cursorBlink;
        return s;
    }

    void readRow(int row, VTermScreenCell *cells) const
    {
        for (int col = 0; col < cols; ++col) {
            VTermScreenCell &c = cells[col];
            std::memset(&c, 0, sizeof c);
            vterm_screen_get_cell(vs, VTermPos{row, col}, &c);
        }
    }

    void copyNormal()
    {
        normal.assign(size_t(rows) * size_t(cols), VTermScreenCell());
        for (int row = 0; row < rows; ++row)
            readRow(row, normal.data() + size_t(row) * size_t(cols));
        normalCols = cols;
        normalRows = rows;
        // Undo the screen-reverse XOR now: the copy outlives DECSCNM changes.
        if (reverseScreen)
            for (VTermScreenCell &c : normal)
                c.attrs.reverse ^= 1;
    }

    void defaultTabs(int n)
    {
        tabs.assign(size_t(n), 0);
        for (int col = 0; col < n; col += 8)
            tabs[size_t(col)] = 1;
    }

    void ensureCustomTabs()
    {
        if (!tabsCustom) {
            defaultTabs(cols);
            tabsCustom = true;
        }
    }

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
    void paintNormalUnderAlt(QByteArray &out, Pen &pen, bool with1049) const
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

    /// Sets the cursor save slot (DECSC) to what the stream saved last, or
    /// a reset terminal's (home, default pen, visible) if it never saved.
    void paintSaveSlot(QByteArray &out, Pen &pen) const
    {
        const Saved s = slotValid ? slot : Saved();
        appendCup(out, std::min(s.pos.row, rows - 1), std::min(s.pos.col, cols - 1));
        out += s.visible ? "\x1b[?25h" : "\x1b[?25l";
        if (cursorStyled)
            appendCursorStyle(out, s.shape, s.blink);
        appendSgr(out, pen, s.pen);
        out += "\x1b" "7";
    }

    /// Everything an event needs to see before its final byte reaches libvterm.
    void beforeEvent(quint16 ev)
    {
        if (ev & TerminalState::AltScreenEntered) {
            if (!vtAlt)
                copyNormal();
            altEnter = now();
            slotChangedInAlt = false;
        } else if ((ev & TerminalState::CursorSaved) && vtAlt) {
            slotChangedInAlt = true;
        }
        if (ev & TerminalState::CursorSaved) {
            slot = now();
            slotValid = true;
        }
        const int col = cursor().col;
        if (ev & TerminalState::TabStopSet) {
            ensureCustomTabs();
            tabs[size_t(col)] = 1;
        }
        if (ev & TerminalState::TabStopCleared) {
            ensureCustomTabs();
            tabs[size_t(col)] = 0;
        }
        if (ev & TerminalState::TabStopsCleared) {
            ensureCustomTabs();
            std::fill(tabs.begin(), tabs.end(), 0);
        }
    }

    void afterEvent(quint16 ev)
    {
        if (ev & TerminalState::FullReset)
            initSaveSlot(); // libvterm's RIS keeps the old slot
        if (ev & (TerminalState::ScreenErased | TerminalState::AltScreenEntered | TerminalState::FullReset))
            erasedSinceMark = true;
        if (ev & TerminalState::FullReset) {
            tabsCustom = false;
            slotValid = false;
            slotChangedInAlt = false;
            cursorStyled = false;
        }
    }

    /// ED 0 (DECSED 0) while a wrap is pending: libvterm erases from the
    /// cursor, the glyph pending the wrap included; the viewers erase only
    /// the rows below and keep the wrap pending (screen.h). So libvterm
    /// erases, then the glyph is printed again where it was, with its own
    /// pen and G0 ASCII in GL (the cell holds what the charset made of it),
    /// which leaves libvterm pending the wrap on it as before; the pen,
    /// insert mode and charsets are put back.
    void eraseBelowPendingWrap(char final)
    {
        const VTermPos at = cursor();
        VTermScreenCell glyph;
        std::memset(&glyph, 0, sizeof glyph);
        vterm_screen_get_cell(vs, at, &glyph);
        const Pen inForce = currentPen();
        write(&final, 1);
        QByteArray fix;
        const int top = ts.hasMode(TerminalState::OriginMode) && ts.marginsSet() && ts.marginTop() > 0 ? ts.marginTop() - 1 : 0;
        appendCup(fix, at.row - top, at.col);
        fix += "\x1b(B\x0f";
        const bool insert = ts.hasMode(TerminalState::InsertMode);
        if (insert)
            fix += "\x1b[4l";
        Pen pen = inForce;
        appendSgr(fix, pen, cellPen(glyph, reverseScreen));
        appendGlyph(fix, glyph);
        appendSgr(fix, pen, inForce);
        if (insert)
            fix += "\x1b[4h";
        fix += ts.charsetSequence();
        inject(fix);
    }

    /// libvterm 0.1.4 applies only the first mode of a list: give it one
    /// sequence per mode (its CSI is aborted with CAN first).
    void writeModeList(char final)
    {
        inject("\x18", 1);
        QByteArray seq;
        seq.reserve(16 * 8);
        for (int i = 0; i < ts.eventParamCount(); ++i) {
            seq += "\x1b[";
            if (ts.eventMarker())
                seq += ts.eventMarker();
            appendNumber(seq, ts.eventParam(i));
            seq += final;
        }
        inject(seq);
    }

    /// libvterm ignores ?47 and leaves the alternate buffer active after RIS:
    /// follow the TerminalState's screen with ?1047.
    void syncAlt()
    {
        const bool alt = ts.hasMode(TerminalState::AltScreen);
        if (alt != vtAlt)
            inject(alt ? QByteArrayLiteral("\x1b[?1047h") : QByteArrayLiteral("\x1b[?1047l"));
        if (!vtAlt && !normal.empty()) {
            // Back on the normal screen: the copy is stale, free it.
            std::vector<VTermScreenCell>().swap(normal);
        }
    }

    bool pendingWrap() const
    {
        if (!ts.lastPrintMayWrap() || movedSincePrint || lastGlyph.end != cols)
            return false;
        const VTermPos p = cursor();
        return p.row == lastGlyph.row && p.col == lastGlyph.start;
    }

    /// Damage or a scroll over lastGlyph's cell (compact()).
    void touchGlyph(const VTermRect &rect)
    {
        if (lastGlyph.row >= rect.start_row && lastGlyph.row < rect.end_row && lastGlyph.start < rect.end_col
            && lastGlyph.end > rect.start_col)
            glyphTouched = true;
    }

    // libvterm callbacks.
    static int onDamage(VTermRect rect, void *user)
    {
        // A print damages its one or two cells and leaves a character there
        // (a space is one); an erase, insert or delete at the cursor leaves
        // a blank, larger damage (scrolling, whole lines) is not a print.
        // Neither moves the cursor: they do not change what the last print
        // was. Only in the last column does it matter which it was (an
        // erase elsewhere is at a cursor that moved there): the cell is read
        // only there. No allocation.
        auto *d = static_cast<Private *>(user);
        if (d->muted)
            return 1;
        if (rect.end_row - rect.start_row != 1 || rect.end_col - rect.start_col > 2) {
            d->touchGlyph(rect);
            return 1;
        }
        if (rect.end_col == d->cols) {
            VTermScreenCell c;
            c.chars[0] = 0;
            vterm_screen_get_cell(d->vs, VTermPos{rect.start_row, rect.start_col}, &c);
            if (c.chars[0] == 0)
                return 1;
        }
        d->lastGlyph = GlyphDamage{rect.start_row, rect.start_col, rect.end_col};
        d->movedSincePrint = false;
        d->glyphConfirmed = false;
        d->glyphTouched = false;
        d->everPrinted = true;
        return 1;
    }
    static int onMoveCursor(VTermPos pos, VTermPos, int, void *user)
    {
        // libvterm ends a pending wrap whenever the cursor moves (and in
        // the sequences TerminalState::lastPrintMayWrap() knows, also when
        // it does not). Printing ends with a move to where the next
        // character goes, or, pending a wrap, to the printed glyph itself.
        auto *d = static_cast<Private *>(user);
        if (d->muted)
            return 1;
        if (pos.row != d->lastGlyph.row || pos.col != d->lastGlyph.start)
            d->movedSincePrint = true;
        if (pos.row == d->lastGlyph.row && pos.col == d->lastGlyph.end)
            d->glyphConfirmed = true;
        return 1;
    }
    static int onMoveRect(VTermRect dest, VTermRect src, void *user)
    {
        // A scroll of the whole alternate screen (no margins) counts like
        // lines pushed off the top of the normal one (sb_pushline, which
        // libvterm calls for the normal screen only): less pages forward
        // so and never erases its screen whole. 0: libvterm still damages.
        auto *d = static_cast<Private *>(user);
        if (d->muted)
            return 0;
        d->touchGlyph(dest);
        if (d->vtAlt && dest.start_row == 0 && src.start_row > 0 && src.end_row == d->rows && dest.start_col == 0
            && dest.end_col == d->cols)
            d->pushedSinceMark += src.start_row;
        return 0;
    }
    static int onSetTermProp(VTermProp prop, VTermValue *val, void *user)
    {
        auto *d = static_cast<Private *>(user);
        if (d->muted)
            return 1;
        switch (prop) {
        case VTERM_PROP_CURSORVISIBLE:
            d->cursorVisible = val->boolean;
            break;
        case VTERM_PROP_CURSORBLINK:
            d->cursorBlink = val->boolean;
            d->cursorStyled |= !d->cursorBlink;
            break;
        case VTERM_PROP_CURSORSHAPE:
            d->cursorShape = val->number;
            d->cursorStyled |= d->cursorShape != VTERM_PROP_CURSORSHAPE_BLOCK;
            break;
        case VTERM_PROP_ALTSCREEN:
            d->vtAlt = val->boolean;
            break;
        case VTERM_PROP_REVERSE:
            d->reverseScreen = val->boolean;
            break;
        default:
            break;
        }
        return 1;
    }
    static int onPushLine(int cols, const VTermScreenCell *cells, void *user)
    {
        auto *d = static_cast<Private *>(user);
        if (d->muted)
            return 1;
        QByteArray line;
        Pen pen;
        if (cols > 0)
            paintCells(line, pen, cells, cols, d->reverseScreen, true);
        appendSgr(line, pen, Pen());
        d->scrollbackBytes += line.capacity();
        d->scrollback.push_back(std::move(line));
        while (d->scrollback.size() > size_t(kMaxScrollbackLines)) {
            d->scrollbackBytes -= d->scrollback.front().capacity();
            d->scrollback.pop_front();
        }
        if (!d->marginsWhileParsing)
            ++d->pushedSinceMark;
        return 1;
    }
    static void onOutput(const char *s, size_t len, void *user)
    {
        auto *d = static_cast<Private *>(user);
        if (!d->muted && d->answer)
            d->answer(s, qsizetype(len));
    }
};

Screen::Screen(int cols, int rows)
    : d(std::make_unique<Private>())
{
    d->cols = std::clamp(cols, kMinSize, kMaxCols);
    d->rows = std::clamp(rows, kMinSize, kMaxRows);
    d->createVt();
}

Screen::~Screen()
{
    if (d->vt)
        vterm_free(d->vt);
}

void Screen::feed(const char *data, qsizetype size)
{
    if (size > 0)
        d->ensureLive();
    while (size > 0) {
        quint16 ev = 0;
        // The bytes before an event are parsed by libvterm in the margins
        // that were in force before it (DECSTBM is an event).
        d->marginsWhileParsing = d->ts.marginsSet();
        const qsizetype n = d->ts.feedUntilEvent(data, size, &ev);
        if (!ev) {
            d->write(data, n);
        } else {
            d->write(data, n - 1);
            d->beforeEvent(ev);
            if (ev & TerminalState::ModeList)
                d->writeModeList(data[n - 1]);
            else if ((ev & TerminalState::LineErasedRight) && d->pendingWrap())
                d->inject("\x18", 1); // EL 0 pending a wrap erases nothing (screen.h): CAN aborts it
            else if ((ev & TerminalState::ScreenErasedBelow) && d->pendingWrap())
                d->eraseBelowPendingWrap(data[n - 1]);
            else
                d->write(data + n - 1, 1);
            d->afterEvent(ev);
        }
        d->syncAlt();
        data += n;
        size -= n;
    }
}

void Screen::resize(int cols, int rows)
{
    cols = std::clamp(cols, kMinSize, kMaxCols);
    rows = std::clamp(rows, kMinSize, kMaxRows);
    if (cols == d->cols && rows == d->rows)
        return;
    d->ensureLive();
    const int oldCols = d->cols;
    // libvterm 0.1.4 fills the cells a resize adds, and the rows a shrink
    // scrolls up, with the pen in force (vim's status line colour, say);
    // xterm and xterm.js leave them blank with the default colours, as a
    // viewer resized at that moment shows them. So the pen is plain for the
    // resize and put back after it (not inside an escape sequence, which
    // the SGR would end).
    const Pen pen = d->currentPen();
    const bool plainForResize = !samePen(pen, Pen()) && d->ts.atSafeBoundary();
    if (plainForResize)
        d->inject("\x1b[m", 3);
    vterm_set_size(d->vt, rows, cols);
    if (plainForResize) {
        Pen plain;
        QByteArray sgr;
        appendSgr(sgr, plain, pen);
        d->inject(sgr);
    }
    d->cols = cols;
    d->rows = rows;
    if (d->tabsCustom) {
        // As libvterm does: the old stops kept, every 8th of new columns.
        d->tabs.resize(size_t(cols), 0);
        for (int col = oldCols; col < cols; ++col)
            d->tabs[size_t(col)] = col % 8 == 0;
    }
    if (!d->normal.empty()) {
        // libvterm's buffers keep their top-left cells; so does the copy.
        std::vector<VTermScreenCell> resized(size_t(rows) * size_t(cols), VTermScreenCell());
        for (VTermScreenCell &c : resized) {
            c.width = 1;
            c.fg.type = VTERM_COLOR_DEFAULT_FG;
            c.bg.type = VTERM_COLOR_DEFAULT_BG;
        }
        for (int row = 0; row < std::min(rows, d->normalRows); ++row)
            for (int col = 0; col < std::min(cols, d->normalCols); ++col)
                resized[size_t(row) * size_t(cols) + size_t(col)]
                    = d->normal[size_t(row) * size_t(d->normalCols) + size_t(col)];
        d->normal.swap(resized);
        d->normalCols = cols;
        d->normalRows = rows;
    }
    // Not inferred across a resize (libvterm keeps it only when the width
    // did not grow): the cursor is taken as not pending a wrap.
    d->lastGlyph = Private::GlyphDamage();
    d->movedSincePrint = true;
    if (d->ts.marginsSet()) {
        // Terminals reset the margins on a resize, libvterm keeps them.
        d->ts.marginsResetByResize();
        const VTermPos p = d->cursor();
        QByteArray fix = "\x1b[r";
        appendCup(fix, p.row, p.col);
        d->inject(fix);
    }
}

void Screen::reset(const TerminalState &state, bool keepNormalScreen)
{
    d->ensureLive();
    // Kept: painted into libvterm's normal screen right after its RIS (a
    // clean terminal: default pen, no margins, origin or insert mode, G0
    // ASCII), the alternate screen entered from where the program entered
    // it, the save slot set; then back to a reset terminal's cursor, pen
    // and visibility for the modes below.
    const bool keep = keepNormalScreen && d->vtAlt && state.hasMode(TerminalState::AltScreen);
    QByteArray under;
    std::vector<VTermScreenCell> normal;
    const int normalCols = d->normalCols;
    const int normalRows = d->normalRows;
    const Private::Saved altEnter = d->altEnter;
    const Private::Saved slot = d->slot;
    const bool slotValid = d->slotValid;
    const bool slotChangedInAlt = d->slotChangedInAlt;
    if (keep) {
        Pen pen;
        const bool with1049 = state.hasMode(TerminalState::AltScreen1049);
        d->paintNormalUnderAlt(under, pen, with1049);
        if (!with1049 || slotChangedInAlt)
            d->paintSaveSlot(under, pen);
        under += "\x1b[0m\x1b[?25h\x1b[H";
        normal.swap(d->normal);
    }
    d->utf8TailSize = 0; // a character cut by the skip: gone
    // libvterm's RIS erases only the buffer in use and stays in it: from
    // the alternate screen, its normal buffer kept the content from before
    // the reset, which a later ?1049 l showed. Leave first (the alternate
    // buffer is erased when entered again).
    if (d->vtAlt)
        d->inject("\x1b[?1047l", 8);
    d->inject("\x1b" "c", 2);
    d->initSaveSlot();
    d->ts = TerminalState();
    d->syncAlt();
    d->inject(under);
    // The modes: with the alternate screen already entered above, not again
    // (libvterm's ?1049 h would save the cursor over the slot).
    TerminalState modes = state;
    if (keep)
        modes.feed("\x1b[?1047l", 8);
    d->inject(modes.restoreSequence());
    d->inject(state.charsetSequence());
    if (state.hasMode(TerminalState::OriginMode))
        d->inject("\x1b[?6h", 5); // not in restoreSequence(): it homes the cursor
    if (state.hasMode(TerminalState::AltScreen) && !d->vtAlt)
        d->inject("\x1b[?1047h", 8);
    d->ts = state;
    d->normal.swap(normal);
    d->tabsCustom = false;
    d->slotValid = false;
    d->slotChangedInAlt = false;
    // Not kept, an alternate screen in `state` was entered just above from
    // a reset terminal's cursor and pen (home, default), as a raw replay's
    // prelude enters it in a viewer: not from where the stream once did.
    d->altEnter = Private::Saved();
    if (keep) {
        d->normalCols = normalCols;
        d->normalRows = normalRows;
        d->altEnter = altEnter;
        d->slot = slot;
        d->slotValid = slotValid;
        d->slotChangedInAlt = slotChangedInAlt;
    }
    d->lastGlyph = Private::GlyphDamage();
    d->movedSincePrint = true;
    d->cursorStyled = false;
    d->scrollback.clear();
    d->scrollbackBytes = 0;
    mark();
}

int Screen::cols() const
{
    return d->cols;
}

int Screen::rows() const
{
    return d->rows;
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

void Screen::setAnswerHandler(std::function<void(const char *, qsizetype)> handler)
{
    d->answer = std::move(handler);
}

const TerminalState &Screen::modes() const
{
    return d->ts;
}

int Screen::cursorRow() const
{
    d->ensureLive();
    return d->cursor().row;
}

int Screen::cursorColumn() const
{
    d->ensureLive();
    return d->cursor().col;
}

bool Screen::cursorVisible() const
{
    return !d->ts.hasMode(TerminalState::CursorHidden);
}

bool Screen::pendingWrap() const
{
    if (!d->vt)
        return false; // compact() refuses while a wrap is pending
    return d->pendingWrap();
}

qsizetype Screen::scrollbackLineCount() const
{
    if (!d->vt)
        return d->compactedLines;
    return qsizetype(d->scrollback.size());
}

QByteArray Screen::scrollbackLine(qsizetype index) const
{
    d->ensureLive();
    if (index < 0 || index >= qsizetype(d->scrollback.size()))
        return QByteArray();
    return d->scrollback[size_t(index)];
}

qsizetype Screen::memoryBytes() const
{
    if (!d->vt) {
        // Compact: the Private, the compressed state, the tab stops, the
        // title and the (empty) scrollback deque's map.
        return qsizetype(sizeof(Private)) + d->compacted.capacity() + qsizetype(d->tabs.capacity())
            + d->ts.title().size() * 2 + 640;
    }
    const qsizetype cells = qsizetype(d->rows) * d->cols;
    qsizetype bytes = sizeof(Private);
    bytes += 2 * cells * kInternalCellBytes;                         // normal + alternate buffers
    bytes += qsizetype(d->cols) * qsizetype(sizeof(VTermScreenCell)); // libvterm's sb_buffer
    bytes += 4096 + qsizetype(d->rows) * 8 + d->cols / 8;            // VTerm, state, parser, line info, tabs
    bytes += qsizetype(d->normal.capacity() * sizeof(VTermScreenCell));
    bytes += qsizetype(d->tabs.capacity());
    bytes += d->scrollbackBytes + qsizetype(d->scrollback.size()) * qsizetype(sizeof(QByteArray) + 16);
    return bytes;
}

bool Screen::fullyRewrittenSinceMark() const
{
    return d->erasedSinceMark || d->pushedSinceMark >= d->rows;
}

void Screen::mark()
{
    d->erasedSinceMark = false;
    d->pushedSinceMark = 0;
}

} // namespace Tether

namespace Tether {

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
