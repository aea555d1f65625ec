// SPDX-License-Identifier: GPL-2.0-or-later
#include "shellwords.h"

namespace Tether {
namespace ShellWords {

namespace {

bool isSeparator(QChar c)
{
    return c == QLatin1Char(' ') || c == QLatin1Char('\t') || c == QLatin1Char('\n');
}

/// True for a character that needs no quoting anywhere in a word.
bool isPlain(QChar ch)
{
    const ushort u = ch.unicode();
    return (u >= 'a' && u <= 'z') || (u >= 'A' && u <= 'Z') || (u >= '0' && u <= '9')
        || QStringLiteral("%+,-./:@_").contains(ch);
}

} // namespace

std::optional<QStringList> split(const QString &line, QString *error)
{
    QStringList words;
    QString word;
    bool inWord = false; // a quote makes a word even when it adds nothing ('')
    const int n = line.size();
    for (int i = 0; i < n; ++i) {
        const QChar c = line.at(i);
        if (c == QLatin1Char('\'')) {
            const int end = line.indexOf(QLatin1Char('\''), i + 1);
            if (end < 0) {
                if (error)
                    *error = QStringLiteral("unterminated single quote");
                return std::nullopt;
            }
            word += line.mid(i + 1, end - i - 1);
            inWord = true;
            i = end;
        } else if (c == QLatin1Char('"')) {
            inWord = true;
            int j = i + 1;
            for (; j < n && line.at(j) != QLatin1Char('"'); ++j) {
                const QChar d = line.at(j);
                if (d == QLatin1Char('\\') && j + 1 < n) {
                    const QChar next = line.at(j + 1);
                    if (next == QLatin1Char('\n')) {
                        ++j; // line continuation: both go
                        continue;
                    }
                    if (QStringLiteral("$`\"\\").contains(next)) {
                        word += next;
                        ++j;
                        continue;
                    }
                }
                word += d;
            }
            if (j >= n) {
                if (error)
                    *error = QStringLiteral("unterminated double quote");
                return std::nullopt;
            }
            i = j;
        } else if (c == QLatin1Char('\\')) {
            if (i + 1 == n) {
                word += c; // nothing left to escape: sh keeps it
                inWord = true;
            } else if (line.at(i + 1) == QLatin1Char('\n')) {
                ++i; // line continuation: removed, joins what surrounds it
            } else {
                word += line.at(++i);
                inWord = true;
            }
        } else if (isSeparator(c)) {
            if (inWord)
                words << word;
            word.clear();
            inWord = false;
        } else {
            word += c;
            inWord = true;
        }
    }
    if (inWord)
        words << word;
    if (error)
        error->clear();
    return words;
}

QString quote(const QStringList &argv)
{
    QStringList words;
    for (const QString &a : argv) {
        bool plain = !a.isEmpty();
        for (const QChar ch : a) {
            if (!isPlain(ch) && !(ch == QLatin1Char('=') && !words.isEmpty())) {
                plain = false;
                break;
            }
        }
        if (plain) {
            words << a;
            continue;
        }
        QString q = a;
        q.replace(QLatin1Char('\''), QStringLiteral("'\\''"));
        words << QLatin1Char('\'') + q + QLatin1Char('\'');
    }
    return words.join(QLatin1Char(' '));
}

} // namespace ShellWords
} // namespace Tether
