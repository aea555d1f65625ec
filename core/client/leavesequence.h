// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include "terminalstate.h"

#include <QByteArray>

namespace Tether {

/// Escape sequences that switch off what the terminal (as `terminal` saw
/// it) has on, then reset untracked state (colours, character set, insert
/// mode, autowrap, keypad, scroll margins, cursor shape), and pop the title
/// stack down to the title pushed at attach, so the shell gets a usable
/// terminal back after detach (and on SIGTSTP). Origin mode is reset only
/// when it is on (resetting it homes the cursor: then to the last row).
/// `terminal` is the state of the client's own terminal as built from
/// everything the client wrote to it (TerminalState::feed()).
QByteArray leaveSequence(const TerminalState &terminal);

} // namespace Tether
