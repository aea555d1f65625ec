// SPDX-License-Identifier: GPL-2.0-or-later
#include "protocol.h"

namespace Tether::Protocol {

const char *replayReasonName(ReplayReason reason)
{
    switch (reason) {
    case ReplayReason::Initial: return "initial";
    case ReplayReason::Resume: return "resume";
    case ReplayReason::RolledOut: return "rolled_out";
    case ReplayReason::Ahead: return "ahead";
    }
    return "initial";
}

QString exitStatusText(const ExitStatus &status)
{
    return status.signaled ? QStringLiteral("killed by signal %1").arg(status.signal)
                           : QStringLiteral("exited with code %1").arg(status.code);
}

} // namespace Tether::Protocol
