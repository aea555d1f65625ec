// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

namespace Tether {

/**
 * `tether serve [--bind ADDR] [--port N] [--ttl SECONDS] [--buffer-size BYTES]
 *  [--max-sessions N] [--command CMD]`: the headless server (no display).
 *
 * Settings come from the settings file (HostConfig::load()), then the command
 * line overrides them (the options are ServeOptions, shared with the
 * desktop app). Once listening it writes the runtime file
 * ($XDG_RUNTIME_DIR/tether/server.json, 0600) and prints exactly one line to
 * stdout: `Tether is serving http://127.0.0.1:PORT/?key=KEY`.
 *
 * SIGTERM and SIGINT (through a socketpair written by the signal handler and
 * read by a QSocketNotifier, the only async-signal-safe way into the event
 * loop) stop listening, tear every session down (SessionRegistry::shutdown,
 * bounded), remove the runtime file and exit 0.
 *
 * `argv[1]` is "serve". Returns the process exit status: 0 after a clean
 * shutdown (also --help, --version), 1 when it cannot listen or write the
 * runtime file, 2 for a bad option value.
 */
int serveMain(int argc, char **argv);

} // namespace Tether
