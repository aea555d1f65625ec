// SPDX-License-Identifier: GPL-2.0-or-later
// The screen a desktop terminal window shows, as text, for the ui tests
// that compare it with a reference (tst_terminalwindow, tst_fidelitywindow).
// Header-only; needs QTermWidget (a tree built with TETHER_HAVE_QTERMWIDGET).
#pragma once

#include "terminalwindow.h"

#if TETHER_QTERMWIDGET_MAJOR == 6
#include <qtermwidget6/qtermwidget.h>
#else
#include <qtermwidget5/qtermwidget.h>
#endif

#include <QString>
#include <QStringList>

namespace TestUtil {

/// The text of the screen `w` shows, after its size ("COLSxROWS\n"): each
/// row on its own, read through a selection of that row (the history text
/// joins rows a line wrapped across, and whether a line wrapped is not
/// something a late viewer can be told), trailing blanks dropped. Leaves
/// nothing selected.
inline QString windowScreen(const Tether::TerminalWindow &w)
{
    QTermWidget *t = w.terminal();
    const int cols = t->screenColumnsCount();
    const int rows = t->screenLinesCount();
    const int top = t->historyLinesCount(); // selection rows count from the oldest history line
    QStringList lines;
    for (int r = 0; r < rows; ++r) {
        t->setSelectionStart(top + r, 0);
        t->setSelectionEnd(top + r, cols - 1);
        QString l = t->selectedText(false);
        while (l.endsWith(QLatin1Char(' ')) || l.endsWith(QLatin1Char('\n')))
            l.chop(1);
        lines << l;
    }
    t->setSelectionStart(-1, -1); // nothing selected
    t->setSelectionEnd(-1, -1);
    return QStringLiteral("%1x%2\n").arg(cols).arg(rows) + lines.join(QLatin1Char('\n'));
}

} // namespace TestUtil
