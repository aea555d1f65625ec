// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

namespace Tether {

/// `tether` without a subcommand: parses the command line (same options as
/// `tether serve`, ServeOptions, for a host it starts, plus --no-tray),
/// hands off to a running desktop app if there is one (exit 0), else runs
/// the desktop application (DesktopApp) with its own settings
/// (DesktopSettings::load()). Returns the exit code. In app/, not ui/: the
/// server's options are the server's (the ui links no server).
int desktopMain(int argc, char **argv);

} // namespace Tether
