// SPDX-License-Identifier: GPL-2.0-or-later
#include "displaytext.h"

namespace Tether {
namespace DisplayText {

bool needsEscape(char16_t c)
{
    if (c < 0x20 || (c >= 0x7f && c <= 0x9f))
        return true;
    if (c < 0xad)
        return false; // printable ASCII and Latin-1: the common case
    return c == 0xad || c == 0x061c || c == 0x180e || (c >= 0x200b && c <= 0x200f) || (c >= 0x2028 && c <= 0x202e)
        || (c >= 0x2060 && c <= 0x2064) || (c >= 0x2066 && c <= 0x206f) || c == 0xfeff || (c >= 0xfff9 && c <= 0xfffb);
}

QString escape(const QString &text)
{
    qsizetype i = 0;
    const qsizetype n = text.size();
    while (i < n && !needsEscape(text.at(i).unicode()))
        ++i;
    if (i == n)
        return text; // nothing to escape: no copy
    static const char hex[] = "0123456789abcdef";
    QString out = text.left(i);
    out.reserve(n + 16);
    for (; i < n; ++i) {
        const char16_t c = text.at(i).unicode();
        if (!needsEscape(c)) {
            out += QChar(c);
            continue;
        }
        switch (c) {
        case 0x1b: out += QLatin1String("\\e"); continue;
        case 0x09: out += QLatin1String("\\t"); continue;
        case 0x0a: out += QLatin1String("\\n"); continue;
        case 0x0d: out += QLatin1String("\\r"); continue;
        default: break;
        }
        if (c <= 0x9f) { // a C0 or C1 control, or DEL
            out += QLatin1String("\\x");
            out += QLatin1Char(hex[c >> 4]);
            out += QLatin1Char(hex[c & 0xf]);
        } else {
            out += QLatin1String("\\u");
            for (int shift = 12; shift >= 0; shift -= 4)
                out += QLatin1Char(hex[(c >> shift) & 0xf]);
        }
    }
    return out;
}

} // namespace DisplayText
} // namespace Tether
