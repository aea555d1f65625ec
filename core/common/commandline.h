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

} // namespace Tether
