// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <QByteArray>
#include <QFileDevice>

namespace Tether::BenchData {

/// Writes `mib` MiB of numbered text lines ("line N the quick brown fox
/// ..."), as a build log would be, into the open file `out`. The same
/// bytes in every bench, so their `cat` figures compare. Returns false
/// when a write fails (the file system is full, say).
inline bool writeTextLines(QFileDevice &out, qint64 mib)
{
    QByteArray chunk;
    for (int i = 0; chunk.size() < (1 << 20); ++i)
        chunk += QByteArray("line ") + QByteArray::number(i) + " the quick brown fox jumps over the lazy dog\n";
    chunk.truncate(1 << 20);
    for (qint64 i = 0; i < mib; ++i) {
        if (out.write(chunk) != chunk.size())
            return false;
    }
    return out.flush();
}

} // namespace Tether::BenchData
