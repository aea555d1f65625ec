// SPDX-License-Identifier: GPL-2.0-or-later
// Thin entry point: `tether serve ...` runs headless (core only);
// `tether attach|list|new|kill|rename|revive|share|key|restart|wait|send ...` (and
// the aliases ls, a, at) is the command-line client (core only);
// `tether` with no subcommand is the desktop application (ui); `tether keeper`
// is the session keeper `tether serve` starts (internal, keeper.h).
#include "clientcommand.h"
#include "desktopmain.h"
#include "keeper.h"
#include "servecommand.h"

#include <cstring>

int main(int argc, char **argv)
{
    // The session keeper `tether serve` starts (keeper.h): before anything
    // of Qt, which it never uses.
    if (argc > 1 && std::strcmp(argv[1], "keeper") == 0)
        return Tether::Keeper::keeperMain(argc, argv);
    if (argc > 1 && std::strcmp(argv[1], "serve") == 0)
        return Tether::serveMain(argc, argv);
    if (argc > 1 && Tether::isClientCommand(argv[1]))
        return Tether::clientMain(argc, argv);
    return Tether::desktopMain(argc, argv);
}
