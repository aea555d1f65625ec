// SPDX-License-Identifier: GPL-2.0-or-later
#include "outputtext.h"

#include <QStringList>

namespace Tether {

namespace {

/// The line being drawn: its cells and the cursor's column in them.
struct Line {
    QString cells;
    int col = 0;

    void put(QChar c)
    {
        if (col < cells.size())
            cells[col] = c;
        else
            cells += QString(col - cells.size(), QLatin1Char(' ')) + c;
        ++col;
    }
    QString finished() const
    {
        int n = int(cells.size());
        while (n > 0 && cells.at(n - 1) == QLatin1Char(' '))
            --n;
        return cells.left(n);
    }
};

} // namespace

QString outputText(const QByteArray &bytes)
{
    // Escapes are ASCII, so removing them before decoding never cuts a
    // character; decoding first would make C1 bytes of UTF-8 text ambiguous.
    enum class State { Ground, Escape, Csi, String, StringEscape, Designator };
    State state = State::Ground;
    QByteArray text;
    text.reserve(bytes.size());
    for (const char ch : bytes) {
        const auto b = static_cast<unsigned char>(ch);
        if (b == 0x18 || b == 0x1a) { // CAN, SUB: abort any sequence
            state = State::Ground;
            continue;
        }
        switch (state) {
        case State::Ground:
            if (b == 0x1b)
                state = State::Escape;
            else
                text += ch;
            break;
        case State::Escape:
            if (b == '[')
                state = State::Csi;
            else if (b == ']' || b == 'P' || b == 'X' || b == '^' || b == '_')
                state = State::String;
            else if (b >= 0x20 && b <= 0x2f) // ESC ( B, ESC # 8, ...: one more byte
                state = State::Designator;
            else if (b == 0x1b)
                state = State::Escape;
            else
                state = State::Ground;
            break;
        case State::Csi:
            if (b >= 0x40 && b <= 0x7e)
                state = State::Ground;
            else if (b == 0x1b)
                state = State::Escape;
            break;
        case State::String:
            if (b == 0x07)
                state = State::Ground;
            else if (b == 0x1b)
                state = State::StringEscape;
            break;
        case State::StringEscape:
            // ESC \ ends it; an ESC that begins something else ends it too.
            if (b == '\\')
                state = State::Ground;
            else if (b == '[')
                state = State::Csi;
            else if (b == ']' || b == 'P' || b == 'X' || b == '^' || b == '_')
                state = State::String;
            else if (b == 0x1b)
                state = State::StringEscape;
            else
                state = State::Ground;
            break;
        case State::Designator:
            state = State::Ground;
            break;
        }
    }

    const QString decoded = QString::fromUtf8(text);
    QStringList lines;
    Line line;
    for (const QChar c : decoded) {
        const char16_t u = c.unicode();
        if (u == '\n') {
            lines << line.finished();
            line = Line();
        } else if (u == '\r') {
            line.col = 0;
        } else if (u == '\b') {
            line.col = qMax(0, line.col - 1);
        } else if (u == '\t') {
            const int next = (line.col / 8 + 1) * 8;
            while (line.col < next)
                line.put(QLatin1Char(' '));
        } else if (u < 0x20 || u == 0x7f || (u >= 0x80 && u <= 0x9f)) {
            // Other controls draw nothing.
        } else {
            line.put(c);
        }
    }
    const QString last = line.finished();
    if (!last.isEmpty())
        lines << last;
    return lines.join(QLatin1Char('\n'));
}

} // namespace Tether
