// SPDX-License-Identifier: GPL-2.0-or-later
// The client subcommands' table (names, aliases, help lines) and clientMain(),
// which runs them. The commands are in cmd*.cpp, one file per group; what they
// share in cmdutil.h.
#include "clientcommand.h"
#include "cmdutil.h"
#include "commandline.h"

#include <QCoreApplication>

#include <cstring>

namespace Tether {

using namespace Cli;

namespace {
/// Every subcommand clientMain() runs, in the order `tether --help` lists
/// them, with the line it says of each: the one list the dispatcher, the
/// help and the unknown-command error are made from.
struct ClientCommandInfo {
    const char *name;
    const char *summary;
};
constexpr ClientCommandInfo kCommands[] = {
    {"attach", "attach this terminal to a session (like tmux attach)"},
    {"list", "list sessions"},
    {"new", "start a session"},
    {"kill", "end a session"},
    {"rename", "name a session, or rename it"},
    {"revive", "start an ended session again (one a reboot or a crash ended)"},
    {"share", "print a read-only link to a session, list or revoke links"},
    {"key", "print the dashboard link, or make a new key (--rotate)"},
    {"restart", "restart Tether in place, keeping every session"},
    {"wait", "wait for the command running in a session, exit with its status"},
    {"send", "type text into a session (like tmux send-keys)"},
};

/// The short names tmux users type (tmux's own aliases of attach-session
/// and list-sessions), and the commands they stand for.
struct Alias {
    const char *alias;
    const char *command;
};
constexpr Alias kAliases[] = {{"a", "attach"}, {"at", "attach"}, {"ls", "list"}};
} // namespace

QStringList clientCommandNames()
{
    QStringList names;
    for (const ClientCommandInfo &c : kCommands)
        names << QString::fromLatin1(c.name);
    return names;
}

QStringList clientCommandAliases()
{
    QStringList aliases;
    for (const Alias &a : kAliases)
        aliases << QString::fromLatin1(a.alias);
    return aliases;
}

QString clientCommandsHelp()
{
    QString out;
    for (const ClientCommandInfo &c : kCommands) {
        QString line = QStringLiteral("  %1 %2").arg(QString::fromLatin1(c.name), -8).arg(QString::fromUtf8(c.summary));
        QStringList aliases;
        for (const Alias &a : kAliases)
            if (std::strcmp(a.command, c.name) == 0)
                aliases << QString::fromLatin1(a.alias);
        if (!aliases.isEmpty())
            line += QStringLiteral("; also: ") + aliases.join(QStringLiteral(", "));
        out += line + QLatin1Char('\n');
    }
    return out;
}

const char *clientCommandName(const char *arg)
{
    if (!arg)
        return nullptr;
    for (const ClientCommandInfo &c : kCommands) {
        if (std::strcmp(arg, c.name) == 0)
            return c.name;
    }
    for (const Alias &a : kAliases) {
        if (std::strcmp(arg, a.alias) == 0)
            return a.command;
    }
    return nullptr;
}

bool isClientCommand(const char *arg)
{
    return clientCommandName(arg) != nullptr;
}


int clientMain(int argc, char **argv)
{
    QCoreApplication app(argc, argv);
    QCoreApplication::setApplicationName(QStringLiteral("tether"));
    QCoreApplication::setApplicationVersion(version());
    QStringList args = QCoreApplication::arguments();
    // An alias runs its command under the command's name: `tether ls
    // --help` shows `tether list`'s help, `tether a X` errs as "tether attach".
    const char *name = clientCommandName(argc > 1 ? argv[1] : nullptr);
    const QString command = name ? QString::fromLatin1(name) : args.value(1);
    // "tether attach" in the usage line and errors.
    args[0] = args.value(0) + QLatin1Char(' ') + command;
    args.removeAt(1);
    if (command == QLatin1String("list"))
        return listCommand(args);
    if (command == QLatin1String("kill"))
        return killCommand(args);
    if (command == QLatin1String("new"))
        return newCommand(args);
    if (command == QLatin1String("attach"))
        return attachCommand(args);
    if (command == QLatin1String("rename"))
        return renameCommand(args);
    if (command == QLatin1String("revive"))
        return reviveCommand(args);
    if (command == QLatin1String("share"))
        return shareCommand(args);
    if (command == QLatin1String("key"))
        return keyCommand(args);
    if (command == QLatin1String("restart"))
        return restartCommand(args);
    if (command == QLatin1String("wait"))
        return waitCommand(args);
    if (command == QLatin1String("send"))
        return sendCommand(args);
    return fail(command, QStringLiteral("unknown command"), kExitUsage);
}

} // namespace Tether
