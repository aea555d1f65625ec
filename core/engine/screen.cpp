// SPDX-License-Identifier: GPL-2.0-or-later
// The server-side screen's emulator: libvterm plus what it does not keep
// (screen.h). The snapshot serialiser and compaction are in
// screensnapshot.cpp, the state both share in screenprivate.h.
// docs/architecture.md ("Server screen") describes what is followed and why.
#include "screenprivate.h"

#include <QtGlobal>

#include <algorithm>
#include <cstring>
#include <deque>
#include <vector>

namespace Tether {

namespace {

/// libvterm's internal cell (ScreenCell: 6 code points, a pen of two colours
/// and a bit field): what one cell costs in each of its two buffers.
constexpr qsizetype kInternalCellBytes = 6 * 4 + 2 * 4 + 4;

} // namespace

using namespace ScreenPaint;

void Screen::Private::createVt()
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

int Screen::Private::utf8Length(unsigned char c)
{
    return c >= 0xF0 && c < 0xF8 ? 4 : c >= 0xE0 && c < 0xF0 ? 3 : c >= 0xC0 && c < 0xE0 ? 2 : 1;
}

void Screen::Private::write(const char *data, qsizetype size)
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

void Screen::Private::inject(const char *data, qsizetype size)
{
    if (size > 0)
        vterm_input_write(vt, data, size_t(size));
}

VTermPos Screen::Private::cursor() const
{
    VTermPos p;
    vterm_state_get_cursorpos(st, &p);
    return p;
}

Pen Screen::Private::currentPen() const
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

Screen::Private::Saved Screen::Private::now() const
{
    Saved s;
    s.pos = cursor();
    s.pen = currentPen();
    s.visible = cursorVisible;
    s.shape = cursorShape;
    s.blink = cursorBlink;
    return s;
}

void Screen::Private::readRow(int row, VTermScreenCell *cells) const
{
    for (int col = 0; col < cols; ++col) {
        VTermScreenCell &c = cells[col];
        std::memset(&c, 0, sizeof c);
        vterm_screen_get_cell(vs, VTermPos{row, col}, &c);
    }
}

void Screen::Private::copyNormal()
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

void Screen::Private::defaultTabs(int n)
{
    tabs.assign(size_t(n), 0);
    for (int col = 0; col < n; col += 8)
        tabs[size_t(col)] = 1;
}

void Screen::Private::ensureCustomTabs()
{
    if (!tabsCustom) {
        defaultTabs(cols);
        tabsCustom = true;
    }
}

void Screen::Private::beforeEvent(quint16 ev)
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

void Screen::Private::afterEvent(quint16 ev)
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

void Screen::Private::eraseBelowPendingWrap(char final)
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

void Screen::Private::writeModeList(char final)
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

void Screen::Private::syncAlt()
{
    const bool alt = ts.hasMode(TerminalState::AltScreen);
    if (alt != vtAlt)
        inject(alt ? QByteArrayLiteral("\x1b[?1047h") : QByteArrayLiteral("\x1b[?1047l"));
    if (!vtAlt && !normal.empty()) {
        // Back on the normal screen: the copy is stale, free it.
        std::vector<VTermScreenCell>().swap(normal);
    }
}

bool Screen::Private::pendingWrap() const
{
    if (!ts.lastPrintMayWrap() || movedSincePrint || lastGlyph.end != cols)
        return false;
    const VTermPos p = cursor();
    return p.row == lastGlyph.row && p.col == lastGlyph.start;
}

void Screen::Private::touchGlyph(const VTermRect &rect)
{
    if (lastGlyph.row >= rect.start_row && lastGlyph.row < rect.end_row && lastGlyph.start < rect.end_col
        && lastGlyph.end > rect.start_col)
        glyphTouched = true;
}

int Screen::Private::onDamage(VTermRect rect, void *user)
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

int Screen::Private::onMoveCursor(VTermPos pos, VTermPos, int, void *user)
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

int Screen::Private::onMoveRect(VTermRect dest, VTermRect src, void *user)
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

int Screen::Private::onSetTermProp(VTermProp prop, VTermValue *val, void *user)
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

int Screen::Private::onPushLine(int cols, const VTermScreenCell *cells, void *user)
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

void Screen::Private::onOutput(const char *s, size_t len, void *user)
{
    auto *d = static_cast<Private *>(user);
    if (!d->muted && d->answer)
        d->answer(s, qsizetype(len));
}

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
