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
// libvterm does not expose the pending wrap: it is followed here from the
// screen callbacks, independently of core/engine/screen.cpp: a print
// damages one or two cells of one row and leaves a character there (an
// erase leaves a blank); the cursor does not move when a wrap becomes
// pending; any cursor move ends it, and the cursor movement sequences end
// it even in place (TerminalState::lastPrintMayWrap()).
#pragma once

#include "terminalstate.h"

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
        while (size > 0) {
            quint16 ev = 0;
            const qsizetype n = ts.feedUntilEvent(data, size, &ev);
            if (!(ev & Tether::TerminalState::LineErasedRight)) {
                vterm_input_write(vt, data, size_t(n));
            } else {
                vterm_input_write(vt, data, size_t(n - 1));
                VTermPos p;
                vterm_state_get_cursorpos(vterm_obtain_state(vt), &p);
                const bool pending = ts.lastPrintMayWrap() && !m_moved && m_lastColumn && p.row == m_row
                    && p.col == m_col;
                // CAN aborts the sequence in libvterm without a trace.
                vterm_input_write(vt, pending ? "\x18" : data + n - 1, 1);
            }
            data += n;
            size -= n;
        }
    }

private:
    int m_row = -1;
    int m_col = -1;
    bool m_lastColumn = false;
    bool m_moved = true;
};

} // namespace TestUtil
