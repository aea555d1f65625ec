// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <QByteArray>

namespace Tether {

/**
 * A text (JSON) message a viewer sent on its WebSocket, as the server reads it
 * (docs/protocol.md, "Client → server"). The one place that decides what a
 * client's control message means, so the rules can be tested and fuzzed
 * without a socket (tests/fuzz/fuzz_controlmessage.cpp).
 */
struct ControlMessage {
    enum class Type {
        Invalid, ///< close the viewer 4400: bad JSON, not an object, no or unknown type, non-number size
        Resize,  ///< {"type":"resize","cols":C,"rows":R} with C and R JSON numbers
        /// {"type":"pause"}: the control viewer cannot keep up; stop reading
        /// the program's output until Resume (docs/protocol.md "Flow
        /// control"; the consumer-side watermarks of xterm.js's flow-control
        /// guide, xtermjs.org/docs/guides/flowcontrol). Other fields ignored.
        Pause,
        Resume,  ///< {"type":"resume"}: read the program's output again
    };
    Type type = Type::Invalid;
    /// Resize: both numbers are integers kMinCells..kMaxCells (cellCount(),
    /// spawnrequest.h). False: the size is ignored, not applied (hidden tabs
    /// report 0x0, WSL once reported 131072 columns,
    /// NousResearch/hermes-agent#38200).
    bool sizeInRange = false;
    int cols = 0; ///< cells; valid when sizeInRange
    int rows = 0; ///< cells; valid when sizeInRange
};

/// Reads one text message (`utf8`: its UTF-8 bytes). Pure: never fails
/// otherwise, whatever the bytes.
ControlMessage parseControlMessage(const QByteArray &utf8);

} // namespace Tether
