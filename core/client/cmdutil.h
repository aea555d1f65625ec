// SPDX-License-Identifier: GPL-2.0-or-later
// What the client commands share (cmd*.cpp, one file per group of commands,
// as tmux's cmd-*.c): exit statuses, errors on stderr, running the event
// loop, the options every command has, finding the server and a session, the
// session table that list, attach and share print, and each command's entry
// point for clientMain(). Internal to the client layer: only
// clientcommand.cpp and cmd*.cpp include it; the commands' contract is
// clientcommand.h.
#pragma once

#include "apiclient.h"
#include "ttyattach.h"

#include <QCommandLineOption>
#include <QJsonArray>
#include <QJsonObject>
#include <QList>
#include <QString>
#include <QStringList>

#include <functional>

QT_BEGIN_NAMESPACE
class QCommandLineParser;
QT_END_NAMESPACE

namespace Tether {

/// The client commands' internals (clientMain() runs them).
namespace Cli {

// Exit statuses (documented in clientcommand.h and in --help).
inline constexpr int kExitOk = ClientExit::Ok;
inline constexpr int kExitError = ClientExit::Error;
inline constexpr int kExitUsage = ClientExit::Usage;
inline constexpr int kExitNotFound = ClientExit::NotFound;

/// One line on stderr. Through DisplayText::escape(): errors quote what the
/// user typed and what a session controls (names, the server's reasons).
void printErr(const QString &text);
/// "tether COMMAND: TEXT" on stderr (printErr()); returns `status`.
int fail(const QString &command, const QString &text, int status = kExitError);

/// Runs the event loop until `body` (which starts asynchronous work) calls
/// done(status).
int runAsync(const std::function<void(std::function<void(int)>)> &body);

/// Shortest id prefix that kill and share act on (kMinActingPrefix): git's
/// shortest abbreviation of an object name (core.abbrev, at least 4). A
/// destructive or exposing command must not act on a guess: `tether kill Y`
/// ended whichever session's id happened to start with Y (found by a new
/// user).
inline constexpr int kMinActingPrefix = 4;
static_assert(kMinActingPrefix == 4, "the help texts of kill and share say 4");

/// The ID argument of kill and share (kMinActingPrefix).
inline const QString kActingIdHelp = QStringLiteral("The session: its full id, its name, or a unique prefix of its id of at least 4 characters.");

/// Finds the session `arg` names: an exact id, else the session with that
/// name (names are unique, docs/protocol.md), else the one id starting with
/// it, if `arg` has at least `minPrefix` characters (kill, share:
/// kMinActingPrefix; attach, rename: any). Ids first: a name that happens to
/// equal another session's id never hides that session.
/// Returns kExitOk with *id; kExitNotFound when nothing matches; kExitUsage
/// when `arg` is a prefix of several ids, or one id's prefix shorter than
/// `minPrefix`: *error then lists the sessions it matches, ids and names.
/// A live session and an ended one (docs/protocol.md, "Ended sessions") may
/// have the same name: the live one is taken, or the ended one when
/// `preferEnded` (`tether revive`).
int resolveId(const QJsonArray &sessions, const QString &arg, int minPrefix, QString *id, QString *error,
              bool preferEnded = false);

/// The options every command has with a value: --url, --key, --cacert.
struct Common {
    QCommandLineOption url{QStringLiteral("url"),
                           QStringLiteral("Server address (default: TETHER_URL, else the runtime file)."),
                           QStringLiteral("URL")};
    QCommandLineOption key{QStringLiteral("key"),
                           QStringLiteral("Access key (default: TETHER_KEY, else the runtime file)."),
                           QStringLiteral("KEY")};
    QCommandLineOption cacert{QStringLiteral("cacert"),
                              QStringLiteral("Also trust the PEM certificates in FILE for an https:// --url, e.g. "
                                             "the server's self-signed certificate (default: TETHER_CACERT)."),
                              QStringLiteral("FILE")};
};

/// Session ids are base64url and may start with '-' ("-x3Fq..."): such an
/// argument that is not one of the command's options is an ID, not an
/// unknown option. Moves it after a "--" so QCommandLineParser takes it as
/// positional; every positional argument goes there, in its order (`tether
/// rename -x3Fq build` keeps ID before NAME). `valueOptions` take a value
/// (the next argument unless written "--name=value").
QStringList idsAsPositional(const QStringList &args, const QStringList &flags, const QStringList &valueOptions);

/// Parses `args` (argv without the subcommand); shows help and exits on
/// -h, --help or --help-all (helpRequested()), prints the version on
/// --version (as every entry point does: versionLine()).
bool parse(QCommandLineParser &parser, const Common &common, const QString &command, const QStringList &args,
           int *status);

/// Finds the server (ServerEndpoint::resolve() with --url, --key and
/// --cacert): false with *status kExitError when it cannot, the reason
/// printed ("Tether is not running: ..." when nothing names a server).
bool endpoint(const QCommandLineParser &parser, const Common &common, const QString &command,
              ServerEndpoint *ep, int *status);

/// Reports a failed API call and returns the exit status.
int apiFailure(const QString &command, const ApiReply &r);

/// The options every command has without a value (help, version), plus `extra`.
QStringList commonFlags(const QStringList &extra = {});
/// The options every command has with a value (Common), plus `extra`.
QStringList commonValueOptions(const QStringList &extra = {});

/// Runs the event loop: finds the session `prefix` names (resolveId over
/// GET /api/sessions with `minPrefix`; its status and error when it finds
/// none), then `then(id, done)`.
int withSession(ApiClient &api, const QString &command, const QString &prefix, int minPrefix,
                const std::function<void(const QString &, std::function<void(int)>)> &then, bool preferEnded = false);

// --- the session table (cmdlist.cpp) ---------------------------------------------

/// The session's name, shell-quoted (a name with a space stays one column
/// and can be typed back: `tether attach 'my build'`); "-" when it has none.
QString nameText(const QJsonObject &s);
/// Columns of the terminal on `fd` (TIOCGWINSZ); 0 when it is not a
/// terminal or reports no size.
int terminalColumns(int fd);
/// `rows` (the first one the header) as text: columns padded to their
/// widest cell plus two spaces, the last one not padded; every cell escaped
/// (escapeCells()).
QString alignedColumns(QList<QStringList> rows);
/// The `tether list` table. The last column (COMMAND/TITLE) is cut to what
/// is left of `columns` (the terminal's width) after the other columns, at
/// least kMinLastColumn (its header's width), or at kMaxLastColumn characters when `columns` is 0
/// (not a terminal): a program may set a 4096-byte title
/// (TerminalState::kMaxTitle), which filled whole screens. NAME is cut at
/// kMaxName characters (a long name widened it without limit), SHELL (the
/// running or last command and its status, shellText()) at kMaxShell, so
/// that ID, a 24-character NAME, STATE, SHELL and the last column still fit
/// 80 columns. In a
/// terminal too narrow for every column, VIEWERS, EXPIRES, SIZE, PROGRAM,
/// ATTACHED, SHELL and STATE are left out, in that order, until the table
/// fits: at 80 columns lines were 87-91 characters and wrapped (issue 29);
/// ID, NAME and COMMAND/TITLE always stay.
QString table(const QJsonArray &sessions, int columns);

// --- the commands: `args` is argv without the subcommand (args[0] is
// "tether NAME"); each returns its exit status -----------------------------------

int listCommand(const QStringList &args); // cmdlist.cpp
int killCommand(const QStringList &args); // cmdsession.cpp
int reviveCommand(const QStringList &args);
int renameCommand(const QStringList &args);
int newCommand(const QStringList &args); // cmdattach.cpp
int attachCommand(const QStringList &args);
int shareCommand(const QStringList &args); // cmdshare.cpp
int keyCommand(const QStringList &args); // cmdserver.cpp
int restartCommand(const QStringList &args);
int waitCommand(const QStringList &args); // cmdwait.cpp
int sendCommand(const QStringList &args);

} // namespace Cli
} // namespace Tether
