// SPDX-License-Identifier: GPL-2.0-or-later
// Fuzz target: the JSON control messages a viewer sends on its WebSocket
// (core/server/controlmessage.h; docs/protocol.md, "Client → server"), what
// any holder of the key, or a page that got hold of a WebSocket, can send.
// Checks, beyond "no crash, no undefined behaviour": a size to apply is
// always within the PTY's bounds. Input: the message's bytes.
#include "controlmessage.h"
#include "ptyprocess.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const QByteArray message = QByteArray::fromRawData(reinterpret_cast<const char *>(data), qsizetype(size));
    const Tether::ControlMessage m = Tether::parseControlMessage(message);
    if (m.sizeInRange
        && (m.type != Tether::ControlMessage::Type::Resize || m.cols < Tether::kMinCells || m.cols > Tether::kMaxCells
            || m.rows < Tether::kMinCells || m.rows > Tether::kMaxCells)) {
        std::fprintf(stderr, "fuzz_controlmessage: a size out of bounds to apply: %d x %d\n", m.cols, m.rows);
        std::abort();
    }
    return 0;
}
