// SPDX-License-Identifier: GPL-2.0-or-later
#include "accesskey.h"

#include <QRandomGenerator>

namespace Tether {

QString generateAccessKey()
{
    quint32 words[8];
    QRandomGenerator::system()->fillRange(words);
    const QByteArray raw(reinterpret_cast<const char *>(words), int(sizeof(words)));
    return QString::fromLatin1(raw.toBase64(QByteArray::Base64UrlEncoding | QByteArray::OmitTrailingEquals));
}

bool constantTimeEquals(const QByteArray &a, const QByteArray &b)
{
    if (a.size() != b.size())
        return false;
    // Accumulate differences without an early exit; volatile keeps the
    // compiler from turning the loop back into a short-circuit memcmp.
    volatile unsigned char diff = 0;
    for (int i = 0; i < a.size(); ++i)
        diff = diff | (static_cast<unsigned char>(a.at(i)) ^ static_cast<unsigned char>(b.at(i)));
    return diff == 0;
}

} // namespace Tether
