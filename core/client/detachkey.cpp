// SPDX-License-Identifier: GPL-2.0-or-later
#include "detachkey.h"

#include <cstring>

namespace Tether {

qsizetype DetachKeyFilter::scan(const char *data, qsizetype size, bool *hit) const
{
    *hit = false;
    if (m_key < 0 || size <= 0)
        return qMax<qsizetype>(0, size);
    const void *at = std::memchr(data, m_key, size_t(size));
    if (!at)
        return size;
    *hit = true;
    return static_cast<const char *>(at) - data;
}

bool parseDetachKey(const QString &text, int *key, QString *why)
{
    if (why)
        why->clear();
    if (text.compare(QLatin1String("none"), Qt::CaseInsensitive) == 0) {
        *key = -1;
        return true;
    }
    int k = -1;
    if (text.size() == 2 && text.at(0) == QLatin1Char('^')) {
        const char c = text.at(1).toUpper().toLatin1();
        if (c == '?')
            k = 0x7f;
        else if (c >= '@' && c <= '_')
            k = c & 0x1f;
    } else if (text.size() == 1 && (text.at(0).unicode() < 0x20 || text.at(0).unicode() == 0x7f)) {
        // A literal control character is fine; a printable one would detach
        // on ordinary typing ("--detach-key ^" made every '^' detach).
        k = text.at(0).toLatin1();
    }
    if (k < 0) {
        if (why)
            *why = QStringLiteral("use ^X or none");
        return false;
    }
    // Keys that terminals send inside other keys or as everyday editing
    // keys: with ESC, every arrow and function key detached.
    const char *reason = nullptr;
    switch (k) {
    case 0x1b: reason = "ESC starts every arrow and function key"; break;
    case 0x0d: reason = "^M is the Enter key"; break;
    case 0x0a: reason = "^J is newline, sent by Enter in some terminals and programs"; break;
    case 0x09: reason = "^I is the Tab key"; break;
    case 0x08: reason = "^H is Backspace in many terminals"; break;
    case 0x7f: reason = "^? (DEL) is Backspace in most terminals"; break;
    default: break;
    }
    if (reason) {
        if (why)
            *why = QString::fromLatin1(reason) + QStringLiteral("; pick another ^X or none");
        return false;
    }
    *key = k;
    return true;
}

} // namespace Tether
