// SPDX-License-Identifier: GPL-2.0-or-later
// The commands on one session named by its ID: `tether kill`, `tether revive`
// (an ended session), `tether rename`.
#include "cmdutil.h"

#include <QCommandLineParser>
#include <QJsonDocument>

#include <cstdio>

namespace Tether {
namespace Cli {

namespace {

/// The start of a command on one session named by its first positional
/// argument (kill, rename): parses `args` (an ID may begin with '-'; help
/// exits), wants exactly `positionals` positional arguments (else
/// `countError`, a usage error) and finds the server. False with *status
/// when the command ends here.
bool setUpSessionCommand(QCommandLineParser &parser, const Common &common, const QString &command,
                         const QStringList &args, int positionals, const QString &countError, ServerEndpoint *ep,
                         int *status)
{
    const QStringList flags = commonFlags();
    const QStringList values = commonValueOptions();
    if (!parse(parser, common, command, idsAsPositional(args, flags, values), status))
        return false;
    if (parser.positionalArguments().size() != positionals) {
        *status = fail(command, countError, kExitUsage);
        return false;
    }
    return endpoint(parser, common, command, ep, status);
}

} // namespace

int killCommand(const QStringList &args)
{
    const QString cmd = QStringLiteral("kill");
    QCommandLineParser parser;
    Common common;
    parser.setApplicationDescription(QStringLiteral(
        "Ends a session: its processes get SIGHUP, then SIGTERM, then SIGKILL.\n"
        "ID is the session's full id, its name, or a unique prefix of its id of at least 4\n"
        "characters (a shorter one is refused: killing is not done on a guess).\n\n"
        "Exit status: 0 killed; 1 Tether not running or another error; 2 usage error (ID is\n"
        "ambiguous or too short: the sessions it matches are listed); 4 no session matches ID."));
    parser.addPositionalArgument(QStringLiteral("ID"), kActingIdHelp);
    int status = kExitOk;
    ServerEndpoint ep;
    if (!setUpSessionCommand(parser, common, cmd, args, 1, QStringLiteral("expected one session ID (see --help)"), &ep,
                             &status))
        return status;
    ApiClient api(ep);
    return withSession(api, cmd, parser.positionalArguments().first(), kMinActingPrefix,
                       [&](const QString &id, std::function<void(int)> done) {
        api.deleteResource(QStringLiteral("api/sessions/") + id, [&, done](const ApiReply &d) {
            done(d.status == 204 ? kExitOk : apiFailure(cmd, d));
        });
    });
}

int reviveCommand(const QStringList &args)
{
    const QString cmd = QStringLiteral("revive");
    QCommandLineParser parser;
    Common common;
    parser.setApplicationDescription(QStringLiteral(
        "Starts an ended session again: a session that was still running when its Tether went\n"
        "away without ending it (a reboot, a crash), which `tether list` shows as \"ended by\n"
        "reboot\" (or crash, or shutdown). The same command runs in the same directory, its saved\n"
        "screen and scrollback shown above a marker line. Prints the new session's id.\n"
        "ID is the ended session's full id, its name, or a unique prefix of its id.\n\n"
        "Exit status: 0 revived; 1 Tether not running, the session is not an ended one, its\n"
        "command cannot start, or another error; 2 usage error (an ambiguous ID too); 4 no\n"
        "session matches ID."));
    parser.addPositionalArgument(QStringLiteral("ID"), QStringLiteral("The ended session: its name, or a unique prefix of its id."));
    int status = kExitOk;
    ServerEndpoint ep;
    if (!setUpSessionCommand(parser, common, cmd, args, 1, QStringLiteral("expected one session ID (see --help)"), &ep,
                             &status))
        return status;
    ApiClient api(ep);
    return withSession(api, cmd, parser.positionalArguments().first(), 0,
                       [&](const QString &id, std::function<void(int)> done) {
        api.post(QStringLiteral("api/sessions/") + id + QStringLiteral("/revive"), QByteArray(),
                 [&, done](const ApiReply &r) {
                     if (r.status != 201)
                         return done(apiFailure(cmd, r));
                     std::fprintf(stdout, "%s\n", qPrintable(r.json().value(QStringLiteral("id")).toString()));
                     std::fflush(stdout);
                     done(kExitOk);
                 });
    }, true);
}

int renameCommand(const QStringList &args)
{
    const QString cmd = QStringLiteral("rename");
    QCommandLineParser parser;
    Common common;
    parser.setApplicationDescription(QStringLiteral(
        "Names a session, or renames it. ID may be the session's name or any unique prefix of\n"
        "its id. An empty NAME ('') takes the name away. Names are unique among the sessions,\n"
        "at most 64 characters, without control characters or white space at either end, and\n"
        "not of the form of a session id (22 letters, digits, '-' or '_').\n\n"
        "Exit status: 0 renamed; 1 Tether not running, the name refused (taken or not allowed:\n"
        "the reason is printed) or another error; 2 usage error (an ambiguous ID too); 4 no\n"
        "session matches ID."));
    parser.addPositionalArgument(QStringLiteral("ID"), QStringLiteral("The session: its name, or a unique prefix of its id."));
    parser.addPositionalArgument(QStringLiteral("NAME"), QStringLiteral("Its new name ('' for none)."));
    int status = kExitOk;
    ServerEndpoint ep;
    if (!setUpSessionCommand(parser, common, cmd, args, 2, QStringLiteral("expected a session ID and a name (see --help)"),
                             &ep, &status))
        return status;
    const QJsonObject body{{QStringLiteral("name"), parser.positionalArguments().at(1)}};
    ApiClient api(ep);
    return withSession(api, cmd, parser.positionalArguments().at(0), 0, [&](const QString &id, std::function<void(int)> done) {
        api.patch(QStringLiteral("api/sessions/") + id, QJsonDocument(body).toJson(QJsonDocument::Compact),
                  [&, done](const ApiReply &p) { done(p.status == 200 ? kExitOk : apiFailure(cmd, p)); });
    });
}

} // namespace Cli
} // namespace Tether
