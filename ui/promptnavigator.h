// SPDX-License-Identifier: GPL-2.0-or-later
// PromptNavigator: the terminal window's commands (issue 25), prompt lines
// found by a cursor position query after each prompt mark, the jumps
// between them, and Copy Last Output. A unit of its own so that the window
// (terminalwindow.*) keeps the attachment, the output path and the widget,
// and this trick's state and its limits live in one place (issue 28).
#pragma once

#ifdef TETHER_HAVE_QTERMWIDGET

#include "apiclient.h"
#include "shellmarks.h"

#include <deque>

#include <QByteArray>
#include <QList>
#include <QObject>
#include <QString>

class QTermWidget;

namespace Tether {

class WriteQueue;

/**
 * Finds the lines of a QTermWidget's prompts and scrolls to them, for the
 * TerminalWindow that owns it (see TerminalWindow's class doc, "Commands").
 *
 * QTermWidget has no markers and no API that gives the cursor's line, so
 * write() puts a cursor position query (CSI 6 n, DSR-CPR) after each prompt
 * mark (OSC 133;A or 633;A, found by ShellMarkScanner) in the output it
 * writes to the widget's PTY; the widget's emulator answers it through
 * sendData while it parses that point of the stream, and takeAnswer() takes
 * that answer (it never reaches the program) as the prompt's line:
 * historyLinesCount() + row − 1, counted from the oldest scrollback line.
 * The program's own CSI 6 n (seen in the stream in order with ours) are
 * counted too, and their answers pass on. Once the scrollback holds
 * `historyLines` lines the lines are forgotten and unknown (linesKnown()
 * false) until forget() (Clear Scrollback) or reset().
 *
 * Not thread-safe; lives on the GUI thread with its widget.
 */
class PromptNavigator : public QObject
{
    Q_OBJECT
public:
    /// Works on `term`, writing through `out` (the queue to `term`'s PTY
    /// slave, which must have one: without it no query is answered), whose
    /// scrollback holds `historyLines` lines. Both outlive this object
    /// (they are its owner's).
    PromptNavigator(QTermWidget *term, WriteQueue *out, int historyLines, QObject *parent = nullptr);

    /// Appends `data` (output, in stream order) to the queue, with a cursor
    /// position query after each prompt mark's terminator (BEL or ST; a mark
    /// cut by the next sequence's ESC gets none).
    void write(const QByteArray &data);
    /// `data` (the widget's sendData) is the answer to one of the queries
    /// write() added: records it as a prompt line and returns true (the
    /// bytes go no further). False for anything else, including the answers
    /// to the program's own queries.
    bool takeAnswer(const char *data, int size);
    /// The stream is replaced (a reset replay; the widget was cleared): the
    /// lines, the queries awaiting answers and the scanner's state go.
    void reset();
    /// The scrollback was cleared: the lines go and are recorded again.
    void forget();

    /// The prompt lines recorded, oldest first (0 is the oldest scrollback
    /// line, as scrollPosition()).
    QList<int> lines() const { return m_lines; }
    /// False once the scrollback was full: lines() is then empty until
    /// forget() or reset().
    bool linesKnown() const { return m_linesKnown; }
    /// The first line shown (0 = the oldest scrollback line; the view at
    /// the end shows historyLinesCount()).
    int scrollPosition() const;
    /// Scrolls so that the last prompt line above the first line shown is
    /// the first line shown; nothing when there is none. False (and nothing
    /// done) when the lines are unknown (linesKnown()).
    bool jumpToPrevious();
    /// Scrolls so that the first prompt line below the first line shown is
    /// the first line shown, or as far as the view goes; nothing when there
    /// is none. False (and nothing done) when the lines are unknown.
    bool jumpToNext();

    /**
     * Asks the server at `endpoint` for session `sessionId`'s commands
     * (`GET /api/sessions/{id}/commands`), then for the last finished one's
     * output (`.../commands/{n}/output`), and puts it on the clipboard as
     * text (outputText()). Asynchronous: lastOutputCopied() says how it went.
     */
    void copyLastOutput(const ServerEndpoint &endpoint, const QString &sessionId);

Q_SIGNALS:
    /// copyLastOutput() ended: `ok` when the clipboard holds the output
    /// (`text`); else `text` says why not, for the user.
    void lastOutputCopied(bool ok, const QString &text);

private:
    void scrollToLine(int line);

    QTermWidget *m_term;
    WriteQueue *m_out;
    int m_historyLines;
    ShellMarkScanner m_marks;
    quint64 m_marksOffset = 0;       ///< bytes scanned (the window's own count)
    int m_cprMatched = 0;            ///< bytes of "ESC [ 6 n" matched at the end of the last output
    /// The cursor position queries the widget will answer, in stream order:
    /// true for ours (after a prompt mark), false for the program's.
    std::deque<bool> m_cprQueue;
    QList<int> m_lines;
    bool m_linesKnown = true;
};

} // namespace Tether

#endif // TETHER_HAVE_QTERMWIDGET
