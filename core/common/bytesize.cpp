// SPDX-License-Identifier: GPL-2.0-or-later
#include "bytesize.h"

#include <limits>

namespace Tether {

namespace {

bool isBlank(QChar c)
{
    return c == QLatin1Char(' ') || c == QLatin1Char('\t');
}

/// The multiplier of `unit` (already lower-case, blanks trimmed), 0 when unknown.
qint64 unitFactor(const QString &unit)
{
    if (unit.isEmpty() || unit == QLatin1String("b"))
        return 1;
    if (unit == QLatin1String("k") || unit == QLatin1String("kib"))
        return qint64(1) << 10;
    if (unit == QLatin1String("m") || unit == QLatin1String("mib"))
        return qint64(1) << 20;
    if (unit == QLatin1String("g") || unit == QLatin1String("gib"))
        return qint64(1) << 30;
    return 0;
}

std::optional<qint64> failWith(QString *error, const QString &message)
{
    if (error)
        *error = message;
    return std::nullopt;
}

} // namespace

std::optional<qint64> parseByteSize(const QString &text, QString *error)
{
    const QString usage = QStringLiteral("a whole number of bytes, optionally followed by K, M or G "
                                         "(units of 1024)");
    int i = 0;
    while (i < text.size() && isBlank(text.at(i)))
        ++i;
    if (i == text.size())
        return failWith(error, QStringLiteral("empty size: expected %1").arg(usage));
    if (text.at(i) == QLatin1Char('-'))
        return failWith(error, QStringLiteral("\"%1\" is negative: expected %2").arg(text, usage));
    if (!(text.at(i) >= QLatin1Char('0') && text.at(i) <= QLatin1Char('9')))
        return failWith(error, QStringLiteral("\"%1\" is not a size: expected %2").arg(text, usage));

    constexpr qint64 kMax = std::numeric_limits<qint64>::max();
    qint64 number = 0;
    bool tooLarge = false;
    for (; i < text.size() && text.at(i) >= QLatin1Char('0') && text.at(i) <= QLatin1Char('9'); ++i) {
        const int digit = text.at(i).unicode() - '0';
        // number * 10 + digit > kMax, asked without computing it.
        if (number > (kMax - digit) / 10)
            tooLarge = true;
        else
            number = number * 10 + digit;
    }
    if (i < text.size() && (text.at(i) == QLatin1Char('.') || text.at(i) == QLatin1Char(',')))
        return failWith(error, QStringLiteral("\"%1\" is not a whole number: expected %2").arg(text, usage));

    QString unit = text.mid(i).trimmed().toLower();
    const qint64 factor = unitFactor(unit);
    if (factor == 0) {
        if (unit == QLatin1String("kb") || unit == QLatin1String("mb") || unit == QLatin1String("gb"))
            return failWith(error, QStringLiteral("\"%1\": %2 is ambiguous (1000 or 1024?): write %3 or %3iB "
                                                  "for units of 1024")
                                       .arg(text, text.mid(i).trimmed(), text.mid(i).trimmed().left(1)));
        return failWith(error, QStringLiteral("\"%1\" has an unknown unit: expected %2").arg(text, usage));
    }
    if (tooLarge || number > kMax / factor)
        return failWith(error, QStringLiteral("\"%1\" is too large (more than 2^63 - 1 bytes)").arg(text));
    if (error)
        error->clear();
    return number * factor;
}

} // namespace Tether
