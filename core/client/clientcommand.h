// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include "detachkey.h"

#include <QString>
#include <QStringList>

QT_BEGIN_NAMESPACE
class QCommandLineParser;
QT_END_NAMESPACE

namespace Tether {

/**
 * The command-line client: `tether list`, `tether new` (`-n NAME`),
 * `tether wait ID` (waits for the running command through /api/events'
 * `command` events and exits with its status) and `tether send ID
 * [--enter] [--wait] -- TEXT...` (POST /api/sessions/{id}/input; --wait opens
 * the event stream before typing, then waits for the next command),
 * `tether kill`, `tether rename ID NAME` (PATCH /api/sessions/{id}),
 * `tether attach` (like `tmux attach`), `tether key`, `tether restart`
 * (POST /api/restart, then GET /api/restart until a new process image
 * answers or the failure is reported), on the documented protocol only
 * (docs/protocol.md): REST through ApiClient, the terminal through
 * AttachClient.
 *
 * The server is found through ServerEndpoint::resolve(): `--url`/`--key`,
 * else TETHER_URL/TETHER_KEY, else the runtime file. No runtime file or a
 * refused connection: one line on stderr, "Tether is not running: start it
 * with `tether` or `tether serve`", exit status 1. An ID may be a session's
 * full id, its name (names are unique), or a unique prefix of its id (like
 * git), tried in that order (one resolver for every command). The commands
 * that end or expose a session (kill, share, share --revoke) take a prefix
 * only of at least 4 characters, git's shortest abbreviation: `tether kill Y`
 * ended whichever session's id began with Y (a new user's report). An
 * ambiguous ID, or one too short, is a usage error (exit 2) that lists the
 * sessions it matches, id and name; an ID that matches none exits 4.
 *
 * `tether list` prints a table: ID, NAME (shell-quoted, "-" when none), STATE, ATTACHED, VIEWERS, SIZE, PROGRAM,
 * COMMAND/TITLE (the title, else the command shell-quoted by ShellWords::quote()).
 * Every cell of a table (list, share --list) and every line on stderr goes
 * through DisplayText::escape(): what a session controls is shown with its
 * control, bidi and zero-width characters escaped (`\e`, `\x7f`, `\u202e`),
 * never sent to the terminal raw.
 * The last column is cut, with "…": to the width of the terminal on stdout
 * (TIOCGWINSZ; at least 10 characters), or at 200 characters when stdout is
 * not a terminal (a program can set a 4096-byte title); NAME at 24
 * characters. In a terminal too narrow for all the columns, VIEWERS,
 * EXPIRES, SIZE, PROGRAM, ATTACHED and STATE are left out in that order
 * until the table fits (ID, NAME and COMMAND/TITLE always stay).
 *
 * `tether attach` and `tether new --attach` need a terminal on standard
 * input and standard output, else they fail with a usage error (exit 2);
 * `new --attach` checks before any API call (with </dev/null it used to
 * create the session first), `attach` once the ID is resolved (with >file
 * it attached blind, the session's escape sequences into the file).
 *
 * `tether attach` puts the local terminal in raw mode (cfmakeraw(3) on a
 * saved termios; restored on every exit path: detach, end of session,
 * SIGTERM/SIGINT/SIGHUP through a socketpair into the event loop, a lost
 * server, and atexit), reads stdin with a QSocketNotifier and writes output
 * to a separate non-blocking open file description of stdout behind a write
 * notifier (stdin's description is shared with the shell and must not
 * become O_NONBLOCK). More than 4 MiB waiting for stdout pauses the
 * session (AttachClient::setPaused: the program waits, nothing is lost; an
 * older server: the connection is let go) until under 256 KiB. The window size
 * is sent at attach and on SIGWINCH. After a replay a Device Status Report
 * (CSI 5 n) is written; while the replay is being written and until the
 * terminal's answer to that DSR arrives (at most 3 s), input that starts
 * with ESC is dropped, and the answer itself, so the terminal's answers to
 * queries in the replay (CSI 6 n, CSI c), which come before it in order,
 * never reach the program (microsoft/vscode#123803), however slow the link; plain
 * typing passes. On
 * exit, modes the program left on (alternate screen, hidden cursor, mouse
 * tracking, bracketed paste, ...; tracked with TerminalState) are switched
 * off, and colours, character set, insert mode, autowrap, keypad mode,
 * scroll margins and the cursor shape (DECSCUSR) are reset, and the window
 * title saved on the terminal's title stack at attach (XTWINOPS 22/23) is
 * restored, so the shell gets a usable terminal back.
 *
 * SIGTSTP (`kill -TSTP` from another shell; in raw mode Ctrl-Z is a byte
 * for the session), through the same socketpair, is handled as tmux's
 * client does: the same leave sequence, the saved termios restored, then a
 * real stop (SIGTSTP with its default action; SIGSTOP when the parent is no
 * job-control shell of our session, as the kernel discards SIGTSTP in an
 * orphaned process group). Once continued: raw mode again (from the termios
 * as it is then), the window size, and the session redrawn from scratch by
 * AttachClient::reattach() (a cleared screen and a reset replay, with the
 * DSR input gate as on any attach); output not yet written when it stopped
 * is dropped, the replay shows it. SIGSTOP/SIGCONT alone leave the terminal
 * as it is (nothing to restore) and redraw nothing.
 *
 * Exit statuses of `tether attach`: 0 detached (detach key) or the process
 * exited; 1 not running, connection lost, refused key or another error;
 * 2 usage error; 3 taken over by another viewer (4409); 4 session not found
 * or expired (4404); 5 session killed or server shutting down (1001);
 * 128+N ended by signal N (SIGHUP, SIGINT, SIGTERM). The other commands
 * exit 0 on success, 1 on error, 2 on a usage error.
 *
 * Implemented in clientcommand.cpp (the table of subcommands, clientMain())
 * and one file per group of commands: cmdlist.cpp, cmdsession.cpp,
 * cmdattach.cpp, cmdshare.cpp, cmdserver.cpp, cmdwait.cpp; cmdutil.h
 * (internal) holds what they share.
 */

/// True when `arg` (argv[1]) names a client subcommand (clientCommandNames()),
/// or an alias of one a tmux user types
/// (tmux's own: `a` and `at` for attach, `ls` for list).
bool isClientCommand(const char *arg);

/// The client subcommand `arg` names, an alias resolved ("ls" -> "list");
/// nullptr when it names none.
const char *clientCommandName(const char *arg);

/// Every client subcommand clientMain() runs (not the aliases), in the
/// order `tether --help` lists them.
QStringList clientCommandNames();
/// The aliases of client subcommands ("a", "at", "ls").
QStringList clientCommandAliases();
/// The lines of `tether --help` naming the client subcommands, one per
/// command of clientCommandNames() in its order: "  NAME     what it does",
/// then "; also: A, B" for its aliases; each line ends with a newline.
QString clientCommandsHelp();

/// Runs `tether <subcommand> ...`; returns the exit status.
int clientMain(int argc, char **argv);



} // namespace Tether
