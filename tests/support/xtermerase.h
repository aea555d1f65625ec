// SPDX-License-Identifier: GPL-2.0-or-later
// Makes a bare libvterm (0.1.4) erase as the viewers do: EL 0 ("CSI K",
// "CSI 0 K", DECSEL "CSI ? K") while a wrap is pending (a character was
// printed in the last column with autowrap on) erases nothing there and
// the wrap stays pending in xterm.js (InputHandler.ts eraseInLine():
// _restrictCursor(cols) leaves x at cols), tmux (screen_write_clearendofline
// returns when cx > sx - 1) and Konsole/QTermWidget; libvterm (like C
// xterm) erases the last cell. The test terminals (vtrender.h, tst_screen's
// reference) follow the viewers, so a fidelity test compares what a viewer
// shows (top paints its column header to the last column, then "ESC [ m
// ESC [ K").
//
// ED 0 ("CSI J", "CSI 0 J", DECSED "CSI ? J") pending a wrap likewise
// erases only the rows below in xterm.js (eraseInDisplay(): the cursor row
// from x = cols) and tmux (screen_write_clearendofscreen() clears the
// cursor row only when cx <= sx - 1), and the wrap stays pending; libvterm
// erases from the cursor. Here libvterm erases, then the glyph is printed
// again on its cell with its own attributes (an absolute SGR), G0 ASCII in
// GL and insert mode off, and the pen, insert mode and charsets are set back.
//
// libvterm does not expose the pending wrap: it is followed here from the
// screen callbacks, independently of core/engine/screen.cpp: a print
// damages one or two cells of one row and leaves a character there (an
// erase leaves a blank); the cursor does not move when a wrap becomes
// pending; any cursor move ends it, and the cursor movement sequences end
// it even in place (TerminalState::lastPrintMayWrap()).
#pragma once

#include "terminalstate.h"

#include <QByteArray>
#include <QtGlobal>

#include <vterm.h>

namespace TestUtil {

class XtermEraseRule
{
public:
    /// Call from the screen's damage callback.
    void damage(VTermScreen *vs, VTermRect rect, int cols)
    {
        if (rect.end_row - rect.start_row != 1 || rect.end_col - rect.start_col > 2)
            return;
        VTermScreenCell c = {};
        vterm_screen_get_cell(vs, VTermPos{rect.start_row, rect.start_col}, &c);
        if (c.chars[0] == 0)
            return; // an erase, not a print
        m_row = rect.start_row;
        m_col = rect.start_col;
        m_lastColumn = rect.end_col == cols;
        m_moved = false;
    }
    /// Call from the screen's movecursor callback.
    void moveCursor(VTermPos pos)
    {
        if (pos.row != m_row || pos.col != m_col)
            m_moved = true;
    }
    /// Forget the print (a resize: the wrap is not kept across one here).
    void forget() { m_moved = true; }

    /// Feeds `data` to `vt` (and `ts`, which must have seen everything `vt`
    /// saw) with the rule applied.
    void feed(VTerm *vt, Tether::TerminalState &ts, const char *data, qsizetype size)
    {
        using T = Tether::TerminalState;
        while (size > 0) {
            quint16 ev = 0;
            const qsizetype n = ts.feedUntilEvent(data, size, &ev);
            if (!(ev & (T::LineErasedRight | T::ScreenErasedBelow))) {
                vterm_input_write(vt, data, size_t(n));
            } else {
                vterm_input_write(vt, data, size_t(n - 1));
                VTermState *st = vterm_obtain_state(vt);
                VTermPos p;
                vterm_state_get_cursorpos(st, &p);
                const bool pending = ts.lastPrintMayWrap() && !m_moved && m_lastColumn && p.row == m_row
                    && p.col == m_col;
                if (!pending) {
                    vterm_input_write(vt, data + n - 1, 1);
                } else if (ev & T::LineErasedRight) {
                    vterm_input_write(vt, "\x18", 1); // CAN aborts the sequence in libvterm without a trace
                } else {
                    VTermScreen *vs = vterm_obtain_screen(vt);
                    VTermScreenCell glyph = {};
                    vterm_screen_get_cell(vs, p, &glyph);
                    VTermValue v;
                    const auto attr = [&](VTermAttr a) {
                        vterm_state_get_penattr(st, a, &v);
                        return a == VTERM_ATTR_UNDERLINE || a == VTERM_ATTR_FONT ? v.number : int(v.boolean);
                    };
                    VTermColor fg, bg;
                    vterm_state_get_penattr(st, VTERM_ATTR_FOREGROUND, &v);
                    fg = v.color;
                    vterm_state_get_penattr(st, VTERM_ATTR_BACKGROUND, &v);
                    bg = v.color;
                    const QByteArray inForce = sgr(attr(VTERM_ATTR_BOLD), attr(VTERM_ATTR_UNDERLINE), attr(VTERM_ATTR_ITALIC),
                                                   attr(VTERM_ATTR_BLINK), attr(VTERM_ATTR_REVERSE), attr(VTERM_ATTR_STRIKE),
                                                   attr(VTERM_ATTR_FONT), fg, bg);
                    vterm_input_write(vt, data + n - 1, 1);
                    // A cell reads back reversed once more under DECSCNM (screen reverse video).
                    const int reverse = glyph.attrs.reverse ^ (m_reverseScreen ? 1 : 0);
                    QByteArray fix = "\x1b[" + QByteArray::number(p.row + 1) + ';' + QByteArray::number(p.col + 1) + 'H';
                    if (ts.hasMode(T::OriginMode) && ts.marginsSet() && ts.marginTop() > 1)
                        fix = "\x1b[" + QByteArray::number(p.row + 2 - ts.marginTop()) + ';' + QByteArray::number(p.col + 1) + 'H';
                    fix += "\x1b(B\x0f\x1b[4l";
                    fix += sgr(glyph.attrs.bold, glyph.attrs.underline, glyph.attrs.italic, glyph.attrs.blink, reverse,
                               glyph.attrs.strike, glyph.attrs.font, glyph.fg, glyph.bg);
                    for (int i = 0; i < VTERM_MAX_CHARS_PER_CELL && glyph.chars[i]; ++i)
                        fix += QString::fromUcs4(reinterpret_cast<const char32_t *>(&glyph.chars[i]), 1).toUtf8();
                    if (!glyph.chars[0])
                        fix += ' ';
                    fix += inForce;
                    if (ts.hasMode(T::InsertMode))
                        fix += "\x1b[4h";
                    fix += ts.charsetSequence();
                    vterm_input_write(vt, fix.constData(), size_t(fix.size()));
                }
            }
            data += n;
            size -= n;
        }
    }
    /// Call from the settermprop callback with VTERM_PROP_REVERSE (DECSCNM).
    void setReverseScreen(bool on) { m_reverseScreen = on; }

private:
    /// An absolute SGR (from SGR 0) for these attributes, as libvterm keeps them.
    static QByteArray sgr(int bold, int underline, int italic, int blink, int reverse, int strike, int font,
                          const VTermColor &fg, const VTermColor &bg)
    {
        QByteArray out = "\x1b[0";
        if (bold)
            out += ";1";
        if (italic)
            out += ";3";
        if (underline)
            out += underline == VTERM_UNDERLINE_DOUBLE ? ";21" : underline == VTERM_UNDERLINE_CURLY ? ";4:3" : ";4";
        if (blink)
            out += ";5";
        if (reverse)
            out += ";7";
        if (strike)
            out += ";9";
        if (font)
            out += ";" + QByteArray::number(10 + font);
        const auto colour = [&out](const VTermColor &c, const char *indexed, const char *rgb) {
            if (c.type & VTERM_COLOR_DEFAULT_MASK)
                return;
            if (VTERM_COLOR_IS_INDEXED(&c))
                out += indexed + QByteArray::number(c.indexed.idx);
            else
                out += rgb + QByteArray::number(c.rgb.red) + ';' + QByteArray::number(c.rgb.green) + ';'
                    + QByteArray::number(c.rgb.blue);
        };
        colour(fg, ";38;5;", ";38;2;");
        colour(bg, ";48;5;", ";48;2;");
        return out + 'm';
    }

    bool m_reverseScreen = false;
    int m_row = -1;
    int m_col = -1;
    bool m_lastColumn = false;
    bool m_moved = true;
};

} // namespace TestUtil
