// SPDX-License-Identifier: GPL-2.0-or-later
// A headless terminal for tests: libvterm (Debian's libvterm-dev 0.1.4, the
// library the server's Screen uses too) fed with bytes, then read back cell
// by cell. Two renderers fed two byte streams (say, what a viewer that never
// left received and what a late viewer received) are compared with diff():
// every cell (characters incl. wide and combining ones, width, colours,
// attributes), the cursor position and the terminal properties libvterm
// reports (cursor visible, alternate screen, mouse mode, reverse video,
// title). It erases as the viewers do where libvterm differs
// (xtermerase.h). Header-only; a test linking it needs libvterm (tests/CMakeLists.txt
// links it into every test).
//
// What it cannot see (libvterm 0.1.4 does not expose them): the normal
// screen while the alternate one is shown, DECCKM, keypad mode, mouse
// encodings, bracketed paste, focus events, scroll margins, charsets, tab
// stops. Compare those through TerminalState (core/common) fed the same
// bytes, or by writing more bytes to both renderers (e.g. exit the alternate
// screen with "\e[?1049l" and compare again: the normal screen shows).
#pragma once

#include "xtermerase.h"

#include <QByteArray>
#include <QString>
#include <QStringList>

#include <vterm.h>

namespace TestUtil {

class VtRender
{
public:
    /// A reset terminal of `cols`×`rows` cells, UTF-8, alternate screen
    /// enabled (as xterm and xterm.js have it).
    VtRender(int cols, int rows)
    {
        m_vt = vterm_new(rows, cols);
        vterm_set_utf8(m_vt, 1);
        m_screen = vterm_obtain_screen(m_vt);
        m_callbacks = {};
        m_callbacks.settermprop = &VtRender::onTermProp;
        m_callbacks.damage = [](VTermRect rect, void *user) {
            auto *self = static_cast<VtRender *>(user);
            self->m_eraseRule.damage(self->m_screen, rect, self->cols());
            return 1;
        };
        m_callbacks.movecursor = [](VTermPos pos, VTermPos, int, void *user) {
            static_cast<VtRender *>(user)->m_eraseRule.moveCursor(pos);
            return 1;
        };
        vterm_screen_set_callbacks(m_screen, &m_callbacks, this);
        vterm_screen_enable_altscreen(m_screen, 1);
        vterm_output_set_callback(m_vt, &VtRender::onOutput, this);
        vterm_screen_reset(m_screen, 1);
    }
    ~VtRender() { vterm_free(m_vt); }

    /**
     * Keeps the lines scrolled off the top of the normal screen (libvterm's
     * sb_pushline) as text, for scrollback(). libvterm (like xterm.js) also
     * pushes lines out of a scroll region whose top is the first row; with
     * `wholeScreenOnly` such a line is dropped unless the margins in force
     * are the whole screen, as tmux keeps its history
     * (grid_view_scroll_region_up() saves lines only for the whole screen):
     * the strictest of the viewers. Off by default.
     */
    void keepScrollback(bool wholeScreenOnly)
    {
        m_wholeScreenOnly = wholeScreenOnly;
        m_callbacks.sb_pushline = [](int cols, const VTermScreenCell *cells, void *user) {
            auto *self = static_cast<VtRender *>(user);
            const Tether::TerminalState &st = self->m_state; // in lockstep at every DECSTBM (XtermEraseRule)
            const bool whole = !st.marginsSet() || (st.marginTop() <= 1 && (st.marginBottom() == 0 || st.marginBottom() >= self->rows()));
            if (self->m_wholeScreenOnly && !whole)
                return 1;
            QString s;
            for (int c = 0; c < cols; ++c) {
                if (cells[c].chars[0] == 0) {
                    if (cells[c].width != 0)
                        s += QLatin1Char(' ');
                    continue;
                }
                for (int i = 0; i < VTERM_MAX_CHARS_PER_CELL && cells[c].chars[i]; ++i)
                    s += QString::fromUcs4(reinterpret_cast<const char32_t *>(&cells[c].chars[i]), 1);
            }
            while (s.endsWith(QLatin1Char(' ')))
                s.chop(1);
            self->m_scrollback << s;
            return 1;
        };
        vterm_screen_set_callbacks(m_screen, &m_callbacks, this);
    }
    /// The lines kept by keepScrollback(), oldest first.
    QStringList scrollback() const { return m_scrollback; }
    VtRender(const VtRender &) = delete;
    VtRender &operator=(const VtRender &) = delete;

    /// Bytes written to the terminal (any split).
    ///
    /// libvterm 0.1.4 loses a UTF-8 character split between two
    /// vterm_input_write() calls when the second begins with a continuation
    /// byte in 0x80..0x9F (it takes it for a C1 control: "テ" = E3 83 86 cut
    /// after E3 shows two U+FFFD). So it only ever gets whole characters: an
    /// incomplete one at the end waits for the next feed() (a terminal shows
    /// nothing of it either).
    void feed(const char *data, qsizetype size)
    {
        if (size <= 0)
            return;
        QByteArray buf = m_partial;
        buf.append(data, int(size));
        const qsizetype whole = utf8Whole(buf.constData(), buf.size());
        m_partial = buf.mid(int(whole));
        // In pieces: one multi-megabyte write overflowed the stack inside
        // libvterm 0.1.4 (its damage merging recurses per scrolled line).
        for (qsizetype off = 0; off < whole;) {
            qsizetype n = utf8Whole(buf.constData() + off, qMin<qsizetype>(4096, whole - off));
            if (n == 0) // a character longer than the piece (cannot happen: 4 bytes at most)
                n = whole - off;
            m_eraseRule.feed(m_vt, m_state, buf.constData() + off, n); // EL as the viewers do it
            vterm_screen_flush_damage(m_screen);
            off += n;
        }
    }
    /// Length of the longest prefix of `data` that does not end inside a
    /// UTF-8 character (RFC 3629: a lead byte 0xC0.. announces 1 to 3
    /// continuation bytes 0x80..0xBF).
    static qsizetype utf8Whole(const char *data, qsizetype size)
    {
        qsizetype i = size;
        int continuation = 0;
        while (i > 0 && continuation < 3 && (uchar(data[i - 1]) & 0xC0) == 0x80) {
            --i;
            ++continuation;
        }
        if (i == 0)
            return size;
        const uchar lead = uchar(data[i - 1]);
        const int needs = lead >= 0xF0 ? 3 : lead >= 0xE0 ? 2 : lead >= 0xC0 ? 1 : 0;
        return needs > continuation ? i - 1 : size;
    }
    void feed(const QByteArray &data) { feed(data.constData(), data.size()); }
    /// Resizes as xterm and xterm.js do: the cells a resize adds are blank
    /// with the default colours and attributes. libvterm 0.1.4 fills them
    /// with the current pen (vim's reverse-video status line pen, say), so
    /// the pen is set to the default for the resize and put back after it.
    void resize(int cols, int rows)
    {
        const QByteArray pen = penSgr();
        vterm_input_write(m_vt, "\x1b[m", 3);
        vterm_set_size(m_vt, rows, cols);
        m_eraseRule.forget();
        vterm_input_write(m_vt, pen.constData(), size_t(pen.size()));
        vterm_screen_flush_damage(m_screen);
    }
    /// The pen in force (colours and attributes) as one SGR sequence.
    QByteArray penSgr() const
    {
        const VTermState *st = vterm_obtain_state(m_vt);
        VTermValue v;
        QByteArray sgr = "\x1b[0";
        const auto flag = [&](VTermAttr attr, const char *on) {
            if (vterm_state_get_penattr(st, attr, &v) && v.boolean)
                sgr += on;
        };
        flag(VTERM_ATTR_BOLD, ";1");
        flag(VTERM_ATTR_ITALIC, ";3");
        flag(VTERM_ATTR_BLINK, ";5");
        flag(VTERM_ATTR_REVERSE, ";7");
        flag(VTERM_ATTR_STRIKE, ";9");
        if (vterm_state_get_penattr(st, VTERM_ATTR_UNDERLINE, &v) && v.number)
            sgr += ";4:" + QByteArray::number(v.number);
        if (vterm_state_get_penattr(st, VTERM_ATTR_FONT, &v) && v.number)
            sgr += ';' + QByteArray::number(10 + v.number);
        const auto colour = [&](VTermAttr attr, int base) {
            if (!vterm_state_get_penattr(st, attr, &v) || (v.color.type & VTERM_COLOR_DEFAULT_MASK))
                return;
            if (VTERM_COLOR_IS_INDEXED(&v.color))
                sgr += ';' + QByteArray::number(base + 8) + ";5;" + QByteArray::number(v.color.indexed.idx);
            else
                sgr += ';' + QByteArray::number(base + 8) + ";2;" + QByteArray::number(v.color.rgb.red) + ';'
                    + QByteArray::number(v.color.rgb.green) + ';' + QByteArray::number(v.color.rgb.blue);
        };
        colour(VTERM_ATTR_FOREGROUND, 30);
        colour(VTERM_ATTR_BACKGROUND, 40);
        return sgr + 'm';
    }

    int cols() const { int r, c; vterm_get_size(m_vt, &r, &c); return c; }
    int rows() const { int r, c; vterm_get_size(m_vt, &r, &c); return r; }

    /// What the terminal answered to queries in the stream (DA, DSR, ...).
    QByteArray answers() const { return m_answers; }
    bool cursorVisible() const { return m_cursorVisible; }
    bool altScreen() const { return m_altScreen; }
    int mouse() const { return m_mouse; } ///< VTERM_PROP_MOUSE_*
    bool reverseVideo() const { return m_reverse; }
    QString title() const { return m_title; }
    /// Cursor position, 0-based (row, column).
    QPair<int, int> cursor() const
    {
        VTermPos p;
        vterm_state_get_cursorpos(vterm_obtain_state(m_vt), &p);
        return {p.row, p.col};
    }

    VTermScreenCell cell(int row, int col) const
    {
        VTermScreenCell c = {};
        vterm_screen_get_cell(m_screen, VTermPos{row, col}, &c);
        return c;
    }
    /// The characters of one row, trailing blanks dropped.
    QString rowText(int row) const
    {
        QString s;
        for (int c = 0; c < cols(); ++c) {
            const VTermScreenCell cl = cell(row, c);
            if (cl.chars[0] == 0) {
                if (cl.width != 0)
                    s += QLatin1Char(' ');
                continue;
            }
            for (int i = 0; i < VTERM_MAX_CHARS_PER_CELL && cl.chars[i]; ++i)
                s += QString::fromUcs4(reinterpret_cast<const char32_t *>(&cl.chars[i]), 1);
        }
        while (s.endsWith(QLatin1Char(' ')))
            s.chop(1);
        return s;
    }
    /// The whole screen as text, one line per row (for failure messages).
    QString text() const
    {
        QStringList lines;
        for (int r = 0; r < rows(); ++r)
            lines << rowText(r);
        return lines.join(QLatin1Char('\n'));
    }

    /// Empty when both terminals show the same thing (same size, every cell,
    /// cursor, properties); else a description of the first `maxReported`
    /// differences, for QVERIFY2.
    QString diff(const VtRender &o, int maxReported = 8) const
    {
        QStringList out;
        if (cols() != o.cols() || rows() != o.rows())
            return QStringLiteral("size %1x%2 vs %3x%4").arg(cols()).arg(rows()).arg(o.cols()).arg(o.rows());
        if (cursor() != o.cursor())
            out << QStringLiteral("cursor (%1,%2) vs (%3,%4)")
                       .arg(cursor().first).arg(cursor().second).arg(o.cursor().first).arg(o.cursor().second);
        if (m_cursorVisible != o.m_cursorVisible)
            out << QStringLiteral("cursor visible %1 vs %2").arg(m_cursorVisible).arg(o.m_cursorVisible);
        if (m_altScreen != o.m_altScreen)
            out << QStringLiteral("alternate screen %1 vs %2").arg(m_altScreen).arg(o.m_altScreen);
        if (m_mouse != o.m_mouse)
            out << QStringLiteral("mouse %1 vs %2").arg(m_mouse).arg(o.m_mouse);
        if (m_reverse != o.m_reverse)
            out << QStringLiteral("reverse video %1 vs %2").arg(m_reverse).arg(o.m_reverse);
        if (m_title != o.m_title)
            out << QStringLiteral("title \"%1\" vs \"%2\"").arg(m_title, o.m_title);
        int cells = 0;
        for (int r = 0; r < rows(); ++r) {
            for (int c = 0; c < cols(); ++c) {
                const QString d = cellDiff(cell(r, c), o.cell(r, c));
                if (d.isEmpty())
                    continue;
                if (++cells <= maxReported)
                    out << QStringLiteral("cell (%1,%2): %3").arg(r).arg(c).arg(d);
            }
        }
        if (cells > maxReported)
            out << QStringLiteral("... %1 cells differ in all").arg(cells);
        if (!out.isEmpty())
            out << QStringLiteral("--- this:\n%1\n--- other:\n%2").arg(text(), o.text());
        return out.join(QLatin1Char('\n'));
    }

    /// Number of cells that differ (characters, colours or attributes).
    int differingCells(const VtRender &o) const
    {
        int n = 0;
        for (int r = 0; r < qMin(rows(), o.rows()); ++r)
            for (int c = 0; c < qMin(cols(), o.cols()); ++c)
                n += cellDiff(cell(r, c), o.cell(r, c)).isEmpty() ? 0 : 1;
        return n;
    }

    /// What differs between two cells, empty when nothing. An erased cell
    /// (no character) and a printed space count as the same: they look
    /// alike in every terminal, and a repaint writes spaces where it must.
    static QString cellDiff(const VTermScreenCell &a, const VTermScreenCell &b)
    {
        QStringList d;
        // A cell never written since it was cleared (no character) shows as
        // a space, as one where a space was written: terminals show and copy
        // both as a blank (xterm, xterm.js, tmux's capture-pane), so a
        // snapshot may paint either.
        const auto blank = [](const VTermScreenCell &c) {
            return (c.chars[0] == 0 || (c.chars[0] == ' ' && c.chars[1] == 0)) && c.width == 1;
        };
        const bool bothBlank = blank(a) && blank(b);
        for (int i = 0; i < VTERM_MAX_CHARS_PER_CELL && !bothBlank; ++i) {
            if (a.chars[i] != b.chars[i]) {
                d << QStringLiteral("char U+%1 vs U+%2").arg(a.chars[i], 4, 16, QLatin1Char('0'))
                                                       .arg(b.chars[i], 4, 16, QLatin1Char('0'));
                break;
            }
            if (!a.chars[i])
                break;
        }
        if (a.width != b.width)
            d << QStringLiteral("width %1 vs %2").arg(int(a.width)).arg(int(b.width));
        const VTermScreenCellAttrs &x = a.attrs, &y = b.attrs;
        // A blank shows only its background (with reverse video, its
        // foreground, which bold may brighten), its underline and
        // strike-out: its other attributes are invisible and left out, as
        // the browser and CLI fidelity tests do. A space written with a pen
        // (htop's empty meter: bold grey blanks) and a cell a snapshot
        // erased with only the background (xterm's and xterm.js's erase)
        // look alike.
        const bool invisibleFg = bothBlank && !x.reverse && !y.reverse;
        const bool invisible = bothBlank; // italic, blink, font on a blank
        if ((!invisibleFg && x.bold != y.bold) || x.underline != y.underline
            || (!invisible && (x.italic != y.italic || x.blink != y.blink || x.font != y.font))
            || x.reverse != y.reverse || x.strike != y.strike || x.dwl != y.dwl || x.dhl != y.dhl)
            d << QStringLiteral("attributes b%1u%2i%3k%4r%5s%6 vs b%7u%8i%9k%10r%11s%12")
                     .arg(x.bold).arg(x.underline).arg(x.italic).arg(x.blink).arg(x.reverse).arg(x.strike)
                     .arg(y.bold).arg(y.underline).arg(y.italic).arg(y.blink).arg(y.reverse).arg(y.strike);
        if (!invisibleFg && !sameColor(a.fg, b.fg))
            d << QStringLiteral("fg %1 vs %2").arg(colorName(a.fg), colorName(b.fg));
        if (!sameColor(a.bg, b.bg))
            d << QStringLiteral("bg %1 vs %2").arg(colorName(a.bg), colorName(b.bg));
        return d.join(QStringLiteral(", "));
    }

    static bool sameColor(const VTermColor &a, const VTermColor &b)
    {
        if ((a.type & VTERM_COLOR_DEFAULT_MASK) != (b.type & VTERM_COLOR_DEFAULT_MASK))
            return false;
        return vterm_color_is_equal(&a, &b);
    }
    static QString colorName(const VTermColor &c)
    {
        if (VTERM_COLOR_IS_DEFAULT_FG(&c))
            return QStringLiteral("default-fg");
        if (VTERM_COLOR_IS_DEFAULT_BG(&c))
            return QStringLiteral("default-bg");
        if (VTERM_COLOR_IS_INDEXED(&c))
            return QStringLiteral("idx%1").arg(c.indexed.idx);
        return QStringLiteral("#%1%2%3").arg(c.rgb.red, 2, 16, QLatin1Char('0'))
            .arg(c.rgb.green, 2, 16, QLatin1Char('0')).arg(c.rgb.blue, 2, 16, QLatin1Char('0'));
    }

private:
    static void onOutput(const char *s, size_t len, void *user)
    {
        static_cast<VtRender *>(user)->m_answers.append(s, int(len));
    }
    static int onTermProp(VTermProp prop, VTermValue *val, void *user)
    {
        auto *self = static_cast<VtRender *>(user);
        switch (prop) {
        case VTERM_PROP_CURSORVISIBLE: self->m_cursorVisible = val->boolean; break;
        case VTERM_PROP_ALTSCREEN: self->m_altScreen = val->boolean; break;
        case VTERM_PROP_MOUSE: self->m_mouse = val->number; break;
        case VTERM_PROP_REVERSE:
            self->m_reverse = val->boolean;
            self->m_eraseRule.setReverseScreen(val->boolean);
            break;
        case VTERM_PROP_TITLE: self->m_title = QString::fromUtf8(val->string); break;
        default: break;
        }
        return 1;
    }

    VTerm *m_vt = nullptr;
    VTermScreen *m_screen = nullptr;
    VTermScreenCallbacks m_callbacks;
    QByteArray m_answers;
    Tether::TerminalState m_state; ///< fed what m_vt is fed, for m_eraseRule
    XtermEraseRule m_eraseRule;
    QByteArray m_partial; ///< an incomplete UTF-8 character at the end of the last feed()
    bool m_cursorVisible = true;
    bool m_altScreen = false;
    int m_mouse = 0;
    bool m_reverse = false;
    QString m_title;
    bool m_wholeScreenOnly = false;
    QStringList m_scrollback;
};

} // namespace TestUtil
