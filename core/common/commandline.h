// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <QString>

class QCommandLineParser;

/// Pieces of command-line handling shared by every entry point (`tether`,
/// `tether serve`, `tether attach|list|new|kill`).
namespace Tether {

/// The parser's --help text with its usage line naming the command as users
/// type it ("Usage: tether attach [options] ID"); Qt's own names argv[0].
/// `command` is the subcommand ("attach", "serve", ...).
QString commandHelp(const QCommandLineParser &parser, const QString &command);

/// True when the parsed command line asks for help: -h, --help or
/// --help-all. QCommandLineParser::addHelpOption() adds --help-all as well
/// (listed in every --help, Qt 5.15 and 6.4); only process() would act on
/// it, and the commands use parse(), so a command that checked "help" alone
/// ran instead (`tether serve --help-all` started a server). --help-all
/// means "with Qt's own options", which these commands do not take: callers
/// print commandHelp() for it as for --help.
bool helpRequested(const QCommandLineParser &parser);

/// The version of this build ("0.1.0"): CMake's `project(Tether VERSION ...)`,
/// the one place it is set (passed to this file only, as TETHER_VERSION).
/// Every entry point prints it for --version, the API reports it (GET
/// /api/restart, docs/protocol.md), and a running server compares it with
/// what a replaced binary prints (UpgradeWatch).
QString version();

/// What `--version` prints in every command: "tether 0.1.0\n". UpgradeWatch
/// parses this line from a new binary (parseVersionLine).
QString versionLine();

/// The version in a line printed by `tether --version` ("tether 1.2.3" →
/// "1.2.3"); empty when `text` does not start with "tether " and a version.
QString parseVersionLine(const QByteArray &text);

} // namespace Tether
