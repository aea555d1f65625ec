// SPDX-License-Identifier: GPL-2.0-or-later
// Fuzz target: the JSON body of POST /api/sessions (core/server/
// spawnrequest.h), the other JSON the server reads from clients. Checks,
// beyond "no crash, no undefined behaviour": an accepted body gives a size
// within the PTY's bounds and a command whose program is named; a refused
// one is a 400 with a reason. Input: the body's bytes.
#include "spawnrequest.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const QByteArray body = QByteArray::fromRawData(reinterpret_cast<const char *>(data), qsizetype(size));
    const Tether::SpawnRequest r = Tether::parseSpawnRequest(body, {QStringLiteral("/bin/sh")});
    const Tether::SpawnOptions &o = r.options;
    const bool good = r.ok()
        ? (o.cols >= Tether::kMinCells && o.cols <= Tether::kMaxCells && o.rows >= Tether::kMinCells
           && o.rows <= Tether::kMaxCells && !o.argv.isEmpty() && !o.argv.first().isEmpty())
        : (r.status == 400 && !r.error.isEmpty());
    if (!good) {
        std::fprintf(stderr, "fuzz_spawnrequest: status %d, %d x %d, %lld arguments\n", r.status, o.cols, o.rows,
                     static_cast<long long>(o.argv.size()));
        std::abort();
    }
    return 0;
}
