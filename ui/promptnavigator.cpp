// SPDX-License-Identifier: GPL-2.0-or-later
// PromptNavigator: prompt lines by cursor position queries, the jumps between
// them, and Copy Last Output, for TerminalWindow (see promptnavigator.h for
// why this is a unit of its own).
#include "promptnavigator.h"

#ifdef TETHER_HAVE_QTERMWIDGET

#include "apiclient.h"
#include "outputtext.h"
#include "writequeue.h"

#include <QClipboard>
#include <QGuiApplication>
#include <QJsonArray>
#include <QJsonObject>
#include <QPointer>
#include <QScrollBar>

#if TETHER_QTERMWIDGET_MAJOR == 6
#include <qtermwidget6/qtermwidget.h>
#else
#include <qtermwidget5/qtermwidget.h>
#endif

#include <cstring>

namespace Tether {

namespace {
/// The cursor position query (DSR-CPR) the window writes after a prompt
/// mark, and the sequence it looks for in the program's output.
constexpr char kCursorQuery[] = "\x1b[6n";
constexpr int kCursorQuerySize = int(sizeof kCursorQuery - 1);

/// Collects where prompt marks end in the bytes scanned.
class PromptEnds : public ShellMarkScanner::Handler
{
public:
    void shellMark(const ShellMark &mark) override
    {
        if (mark.kind == ShellMark::PromptStart)
            ends.append(mark.end);
    }
    QList<quint64> ends;
};

/// "ESC [ ROW ; COL R", the emulator's answer to a cursor position query:
/// its row (1-based), else 0.
int cursorAnswerRow(const char *data, int size)
{
    if (size < 6 || data[0] != '\x1b' || data[1] != '[' || data[size - 1] != 'R')
        return 0;
    int row = 0;
    int i = 2;
    for (; i < size && data[i] >= '0' && data[i] <= '9'; ++i) {
        row = row * 10 + (data[i] - '0');
        if (row > 100000)
            return 0;
    }
    if (i == 2 || i >= size || data[i] != ';')
        return 0;
    int digits = 0;
    for (++i; i < size - 1; ++i, ++digits) {
        if (data[i] < '0' || data[i] > '9')
            return 0;
    }
    return digits > 0 ? row : 0;
}
} // namespace

PromptNavigator::PromptNavigator(QTermWidget *term, WriteQueue *out, int historyLines, QObject *parent)
    : QObject(parent)
    , m_term(term)
    , m_out(out)
    , m_historyLines(historyLines)
{
}

void PromptNavigator::reset()
{
    forget();
    // Queries not yet answered went with the queue; one already in the
    // widget's PTY is answered before the replay is read: that answer
    // meets the closed gate (ESC input is dropped until its fence).
    m_cprQueue.clear();
    m_cprMatched = 0;
    m_marks = ShellMarkScanner();
}

void PromptNavigator::forget()
{
    m_lines.clear();
    m_linesKnown = true;
}

void PromptNavigator::write(const QByteArray &data)
{
    const quint64 base = m_marksOffset;
    PromptEnds prompts;
    m_marks.scan(data.constData(), data.size(), base, prompts);
    m_marksOffset += quint64(data.size());
    // Where a query goes after a prompt mark: only right after its
    // terminator (BEL, ST); one that ended at the ESC of the next sequence
    // is skipped (a query there would cut that sequence).
    QList<qsizetype> cuts;
    for (const quint64 end : prompts.ends) {
        if (end <= base)
            continue;
        const qsizetype at = qsizetype(end - base);
        const char last = data.at(at - 1);
        if (last == '\x07' || last == '\\' || last == '\x9c')
            cuts.append(at);
    }
    // The program's own queries (their answers pass on), found with
    // indexOf (memchr) rather than byte by byte; one may be split across
    // two outputs (m_cprMatched bytes of it ended the last one).
    QList<qsizetype> theirs; // offsets just past each
    qsizetype searchFrom = 0;
    if (m_cprMatched > 0) {
        const int rest = kCursorQuerySize - m_cprMatched;
        const qsizetype n = qMin<qsizetype>(rest, data.size());
        if (std::memcmp(data.constData(), kCursorQuery + m_cprMatched, size_t(n)) == 0) {
            if (n == rest) {
                theirs.append(n);
                searchFrom = n;
                m_cprMatched = 0;
            } else {
                m_cprMatched += int(n);
                searchFrom = data.size();
            }
        } else {
            m_cprMatched = 0;
        }
    }
    if (searchFrom < data.size()) {
        for (qsizetype at = data.indexOf(kCursorQuery, searchFrom); at >= 0;
             at = data.indexOf(kCursorQuery, at + kCursorQuerySize))
            theirs.append(at + kCursorQuerySize);
        // A beginning of one at the very end ("ESC", "ESC [", "ESC [ 6").
        for (int k = qMin<int>(kCursorQuerySize - 1, int(data.size() - searchFrom)); k > 0; --k) {
            if (std::memcmp(data.constData() + data.size() - k, kCursorQuery, size_t(k)) == 0) {
                m_cprMatched = k;
                break;
            }
        }
    }
    // Both kinds of queries in stream order (the widget answers in that order).
    qsizetype from = 0;
    int t = 0;
    for (const qsizetype cut : std::as_const(cuts)) {
        for (; t < theirs.size() && theirs.at(t) <= cut; ++t)
            m_cprQueue.push_back(false);
        m_out->append(data.constData() + from, cut - from);
        m_out->append(kCursorQuery, kCursorQuerySize);
        m_cprQueue.push_back(true);
        from = cut;
    }
    for (; t < theirs.size(); ++t)
        m_cprQueue.push_back(false);
    m_out->append(data.constData() + from, data.size() - from);
}

bool PromptNavigator::takeAnswer(const char *data, int size)
{
    if (m_cprQueue.empty())
        return false;
    const int row = cursorAnswerRow(data, size);
    if (row <= 0)
        return false;
    const bool ours = m_cprQueue.front();
    m_cprQueue.pop_front();
    if (!ours)
        return false;
    // Answered while the widget parses the point of the stream just past
    // the mark: the scrollback has the lines above it now.
    const int history = m_term->historyLinesCount();
    if (history >= m_historyLines) {
        // Lines leave the scrollback from now on, uncounted (class doc).
        m_lines.clear();
        m_linesKnown = false;
        return true;
    }
    if (!m_linesKnown)
        return true;
    const int line = history + row - 1;
    while (!m_lines.isEmpty() && m_lines.last() >= line)
        m_lines.removeLast();
    m_lines.append(line);
    return true;
}

int PromptNavigator::scrollPosition() const
{
    // TerminalDisplay's scroll bar: its value is the first line shown, its
    // maximum the scrollback's lines. The display brings it up to date when
    // it draws the output (on a timer of the emulator's): until then it
    // lags behind historyLinesCount(), which the screen gives as it is. A
    // bar at its maximum is a view that follows the output: at the end.
    const QScrollBar *bar = m_term->findChild<QScrollBar *>();
    if (!bar || bar->value() == bar->maximum())
        return m_term->historyLinesCount();
    return bar->value();
}

void PromptNavigator::scrollToLine(int line)
{
    // Setting the bar's value scrolls the display (scrollBarPositionChanged:
    // the screen window goes to that line, and follows the output again
    // when the value is the maximum). Its range is made current first: a
    // stale maximum would clamp the line, or take a line above the end for
    // the end (QTermWidget::scrollToEnd() has that race: it can leave the
    // view stuck above the output).
    QScrollBar *bar = m_term->findChild<QScrollBar *>();
    if (!bar)
        return;
    const int end = m_term->historyLinesCount();
    if (bar->minimum() != 0 || bar->maximum() != end)
        bar->setRange(0, end);
    bar->setValue(qBound(0, line, end));
}

bool PromptNavigator::jumpToPrevious()
{
    if (!m_linesKnown)
        return false;
    const int top = scrollPosition();
    for (int i = int(m_lines.size()) - 1; i >= 0; --i) {
        if (m_lines.at(i) < top) {
            scrollToLine(m_lines.at(i));
            return true;
        }
    }
    return true;
}

bool PromptNavigator::jumpToNext()
{
    if (!m_linesKnown)
        return false;
    const int top = scrollPosition();
    for (const int line : std::as_const(m_lines)) {
        if (line > top) {
            scrollToLine(line);
            return true;
        }
    }
    return true;
}

void PromptNavigator::copyLastOutput(const ServerEndpoint &endpoint, const QString &sessionId)
{
    // An ApiClient of its own for these two requests: the window's endpoint
    // may change (TerminalWindow::setEndpoint) between two copies.
    auto *api = new ApiClient(endpoint, this);
    const QPointer<PromptNavigator> self(this);
    const QString base = QStringLiteral("api/sessions/%1/commands").arg(sessionId);
    auto fail = [self, api](const QString &why) {
        api->deleteLater();
        if (!self)
            return;
        Q_EMIT self->lastOutputCopied(false, why);
    };
    api->get(base, [self, api, base, fail](const ApiReply &list) {
        if (!self) {
            api->deleteLater();
            return;
        }
        if (list.status != 200) {
            fail(tr("Cannot copy the last output: %1").arg(list.errorText()));
            return;
        }
        const QJsonArray commands = list.json().value(QStringLiteral("commands")).toArray();
        qint64 id = 0;
        for (qsizetype i = commands.size() - 1; i >= 0 && id == 0; --i) {
            const QJsonObject c = commands.at(i).toObject();
            if (!c.value(QStringLiteral("running")).toBool())
                id = c.value(QStringLiteral("id")).toVariant().toLongLong();
        }
        if (id <= 0) {
            fail(commands.isEmpty() ? tr("No command has run in this session yet (its shell sends no command marks: "
                                         "shell integration is off or not loaded).")
                                    : tr("No command has finished yet in this session."));
            return;
        }
        api->get(base + QStringLiteral("/%1/output").arg(id), [self, api, fail](const ApiReply &out) {
            if (!self) {
                api->deleteLater();
                return;
            }
            if (out.status != 200) {
                fail(tr("Cannot copy the last output: %1").arg(out.errorText()));
                return;
            }
            api->deleteLater();
            const QString text = outputText(out.body);
            QGuiApplication::clipboard()->setText(text);
            Q_EMIT self->lastOutputCopied(true, text);
        });
    });
}

} // namespace Tether

#endif // TETHER_HAVE_QTERMWIDGET
