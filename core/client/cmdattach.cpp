// SPDX-License-Identifier: GPL-2.0-or-later
// The commands that attach this terminal: `tether new` (with --attach) and
// `tether attach` (also `a`, `at`); both need a terminal (checkTerminal()).
#include "cmdutil.h"
#include "detachkey.h"
#include "rawterminal.h"

#include <QCommandLineParser>
#include <QDir>
#include <QJsonDocument>

#include <cstdio>
#include <unistd.h>

namespace Tether {
namespace Cli {

namespace {

bool terminalSize(int *cols, int *rows)
{
    for (int fd : {STDOUT_FILENO, STDIN_FILENO, STDERR_FILENO}) {
        if (RawTerminal::windowSize(fd, cols, rows))
            return true;
    }
    return false;
}

const char kExitStatusHelp[] =
    "Exit status: 0 detached (detach key) or the process exited; 1 Tether not running,\n"
    "connection lost or another error; 2 usage error (an ambiguous ID too); 3 taken over\n"
    "by another viewer; 4 session not found or expired; 5 session killed or server\n"
    "shutting down; 128+N ended by signal N (SIGHUP, SIGINT, SIGTERM).";

/// Attaching needs a terminal on standard input AND standard output: kExitOk,
/// else the usage error printed for `command` and kExitUsage. `command` is
/// "attach", or "new" for `new --attach`, which checks before it creates
/// anything and says so, with how to get there from a terminal.
int checkTerminal(const QString &command)
{
    // `tether new --attach </dev/null` suggested `tether list`, as if a
    // session had been made (found by a new user): none was.
    const QString instead = command == QLatin1String("new")
        ? QStringLiteral("--attach needs a terminal; no session was started. In a terminal, run `tether new --attach`; "
                         "or run `tether new` here (it prints the new session's id) and `tether attach ID` in a terminal")
        : QStringLiteral("use `tether list`, or the dashboard");
    // Raw mode, the detach key and the window size need a terminal; with a
    // pipe or /dev/null the attachment could never be left (found by a
    // first-time user: `tether attach ID </dev/null` hung).
    if (!::isatty(STDIN_FILENO))
        return fail(command, QStringLiteral("standard input is not a terminal: %1").arg(instead), kExitUsage);
    // `tether attach ID >file` attached blind: nothing on screen, keys sent
    // to the session, its escape sequences written into the file, exit 0.
    if (!::isatty(STDOUT_FILENO))
        return fail(command,
                    QStringLiteral("standard output is not a terminal (attach draws the session's screen there): %1")
                        .arg(instead),
                    kExitUsage);
    return kExitOk;
}

/// Attaches; `name` (the session's, if any) is what the detach line names.
int runAttach(const ServerEndpoint &ep, const QString &id, const QString &name, ViewerMode mode, int detachKey,
              int screenLines = -1)
{
    const int status = checkTerminal(QStringLiteral("attach"));
    if (status != kExitOk)
        return status;
    TtyAttach a(ep, id, mode, detachKey);
    a.client()->setSessionName(name);
    a.client()->setScreenReplay(screenLines);
    return a.run();
}
QCommandLineOption detachKeyOption()
{
    return QCommandLineOption(QStringLiteral("detach-key"),
                              QStringLiteral("Key that detaches: ^X for Ctrl-X, or none (default ^\\, Ctrl-\\, as dtach and "
                                             "abduco). Not ^[ (ESC starts every arrow and function key), nor ^M ^J ^I "
                                             "^H ^? (Enter, newline, Tab, Backspace)."),
                              QStringLiteral("KEY"), QStringLiteral("^\\"));
}

} // namespace

int newCommand(const QStringList &args)
{
    const QString cmd = QStringLiteral("new");
    QCommandLineParser parser;
    Common common;
    parser.setApplicationDescription(QStringLiteral(
        "Starts a session and prints its id. Without a command: the server's default\n"
        "(your login shell). The command runs directly, without a shell: put it after --.\n"
        "\n") + QString::fromLatin1(kExitStatusHelp) + QStringLiteral(" (with --attach)"));
    parser.setOptionsAfterPositionalArgumentsMode(QCommandLineParser::ParseAsPositionalArguments);
    const QCommandLineOption cwd(QStringLiteral("cwd"), QStringLiteral("Working directory (default: the current one, as tmux does)."),
                                 QStringLiteral("DIR"));
    const QCommandLineOption attach(QStringLiteral("attach"), QStringLiteral("Attach to it at once (like tether attach)."));
    const QCommandLineOption name({QStringLiteral("n"), QStringLiteral("name")},
                                  QStringLiteral("Name the session (unique among the sessions; at most 64 characters, "
                                                 "not 22 of A-Z a-z 0-9 - _ as an ID is); other commands then take "
                                                 "the name for its ID."),
                                  QStringLiteral("NAME"));
    const QCommandLineOption detachKey = detachKeyOption();
    parser.addOptions({cwd, attach, name, detachKey});
    parser.addPositionalArgument(QStringLiteral("-- CMD ARGS..."), QStringLiteral("Command to run."));
    int status = kExitOk;
    ServerEndpoint ep;
    if (!parse(parser, common, cmd, args, &status))
        return status;
    int key = -1;
    QString why;
    if (!parseDetachKey(parser.value(detachKey), &key, &why))
        return fail(cmd, QStringLiteral("bad --detach-key \"%1\" (%2)").arg(parser.value(detachKey), why), kExitUsage);
    // Before any API call: `tether new --attach </dev/null` created the
    // session (and, when full, ended the one detached longest) and only then
    // failed for want of a terminal.
    if (parser.isSet(attach) && (status = checkTerminal(cmd)) != kExitOk)
        return status;
    if (!endpoint(parser, common, cmd, &ep, &status))
        return status;
    QJsonObject body;
    if (parser.isSet(name))
        body.insert(QStringLiteral("name"), parser.value(name));
    const QStringList command = parser.positionalArguments();
    if (!command.isEmpty())
        body.insert(QStringLiteral("command"), QJsonArray::fromStringList(command));
    // Like `tmux new-session`: the session starts where you are, not in the
    // server's directory (your home), unless --cwd says otherwise.
    body.insert(QStringLiteral("cwd"), QDir(parser.isSet(cwd) ? parser.value(cwd) : QDir::currentPath()).absolutePath());
    int cols = 0, rows = 0;
    if (terminalSize(&cols, &rows)) {
        body.insert(QStringLiteral("cols"), cols);
        body.insert(QStringLiteral("rows"), rows);
    }
    ApiClient api(ep);
    QString id;
    status = runAsync([&](std::function<void(int)> done) {
        api.post(QStringLiteral("api/sessions"), QJsonDocument(body).toJson(QJsonDocument::Compact),
                 [&, done](const ApiReply &r) {
                     if (r.status != 201)
                         return done(apiFailure(cmd, r));
                     id = r.json().value(QStringLiteral("id")).toString();
                     std::fprintf(stdout, "%s\n", qPrintable(id));
                     std::fflush(stdout);
                     // The list was full: say which session made room.
                     const QString evicted = r.json().value(QStringLiteral("evicted")).toString();
                     if (!evicted.isEmpty())
                         printErr(QStringLiteral("tether new: the session limit was reached: session %1 "
                                                 "(exited, detached longest) was ended to make room")
                                      .arg(evicted));
                     done(kExitOk);
                 });
    });
    if (status != kExitOk || !parser.isSet(attach))
        return status;
    return runAttach(ep, id, parser.value(name), ViewerMode::Control, key);
}

int attachCommand(const QStringList &args)
{
    const QString cmd = QStringLiteral("attach");
    QCommandLineParser parser;
    Common common;
    parser.setApplicationDescription(QStringLiteral(
        "Attaches this terminal to a session, like tmux attach (also `tether a` or `tether at`,\n"
        "as in tmux). Leave with the detach key (Ctrl-\\ unless --detach-key): the session\n"
        "lives on. Without ID: the one detached running session. After a lost connection it\n"
        "reconnects and resumes where it was (nothing lost, nothing twice).\n"
        "\n") + QString::fromLatin1(kExitStatusHelp));
    const QCommandLineOption watch(QStringLiteral("watch"), QStringLiteral("Watch only: show output, send nothing, never take over."));
    const QCommandLineOption detachKey = detachKeyOption();
    const QCommandLineOption replay(QStringLiteral("replay"),
        QStringLiteral("raw (default): replay all retained output; screen: the server's screen and --lines\n"
                       "lines of scrollback instead (shorter on a large buffer)."), QStringLiteral("MODE"));
    const QCommandLineOption lines(QStringLiteral("lines"),
        QStringLiteral("With --replay=screen: scrollback lines to get, 0..1000 (default 0)."), QStringLiteral("N"));
    parser.addOptions({watch, detachKey, replay, lines});
    parser.addPositionalArgument(QStringLiteral("ID"), QStringLiteral("The session: its name, or a unique prefix of its id."),
                                 QStringLiteral("[ID]"));
    int status = kExitOk;
    ServerEndpoint ep;
    const QStringList flags = commonFlags({QStringLiteral("--watch")});
    const QStringList values = commonValueOptions({QStringLiteral("--detach-key"), QStringLiteral("--replay"), QStringLiteral("--lines")});
    if (!parse(parser, common, cmd, idsAsPositional(args, flags, values), &status))
        return status;
    int screenLines = -1;
    const QString replayMode = parser.value(replay);
    if (parser.isSet(replay) && replayMode != QLatin1String("raw") && replayMode != QLatin1String("screen"))
        return fail(cmd, QStringLiteral("bad --replay \"%1\" (raw or screen)").arg(replayMode), kExitUsage);
    if (replayMode == QLatin1String("screen"))
        screenLines = 0;
    if (parser.isSet(lines)) {
        bool ok = false;
        const int n = parser.value(lines).toInt(&ok);
        if (!ok || n < 0 || n > 1000 || screenLines < 0)
            return fail(cmd, QStringLiteral("bad --lines \"%1\" (0..1000, with --replay=screen)").arg(parser.value(lines)),
                        kExitUsage);
        screenLines = n;
    }
    if (parser.positionalArguments().size() > 1)
        return fail(cmd, QStringLiteral("expected at most one session ID (see --help)"), kExitUsage);
    if (parser.positionalArguments().size() == 1 && parser.positionalArguments().first().isEmpty())
        return fail(cmd, QStringLiteral("empty session ID (omit it to pick the one detached session)"), kExitUsage);
    int key = -1;
    QString why;
    if (!parseDetachKey(parser.value(detachKey), &key, &why))
        return fail(cmd, QStringLiteral("bad --detach-key \"%1\" (%2)").arg(parser.value(detachKey), why), kExitUsage);
    if (!endpoint(parser, common, cmd, &ep, &status))
        return status;
    const QString prefix = parser.positionalArguments().value(0);
    ApiClient api(ep);
    QString id;
    QString sessionName; // for the detach line
    status = runAsync([&](std::function<void(int)> done) {
        api.get(QStringLiteral("api/sessions"), [&, done](const ApiReply &r) {
            if (r.status != 200)
                return done(apiFailure(cmd, r));
            const QJsonArray sessions = r.json().value(QStringLiteral("sessions")).toArray();
            auto nameOf = [&sessions](const QString &sid) {
                for (const QJsonValue &v : sessions) {
                    if (v.toObject().value(QStringLiteral("id")).toString() == sid)
                        return v.toObject().value(QStringLiteral("name")).toString();
                }
                return QString();
            };
            QString error;
            if (!prefix.isEmpty()) {
                const int found = resolveId(sessions, prefix, 0, &id, &error);
                sessionName = nameOf(id);
                return done(found == kExitOk ? kExitOk : fail(cmd, error, found));
            }
            QJsonArray detached;
            for (const QJsonValue &v : sessions) {
                const QJsonObject s = v.toObject();
                if (s.value(QStringLiteral("state")).toString() == QLatin1String("running")
                    && !s.value(QStringLiteral("attached")).toBool())
                    detached.append(s);
            }
            if (detached.size() == 1) {
                id = detached.first().toObject().value(QStringLiteral("id")).toString();
                sessionName = nameOf(id);
                return done(kExitOk);
            }
            if (sessions.isEmpty())
                return done(fail(cmd, QStringLiteral("no sessions (start one with `tether new --attach`)")));
            fail(cmd, detached.isEmpty() ? QStringLiteral("no detached running session; name one:")
                                         : QStringLiteral("%1 detached sessions; name one:").arg(detached.size()));
            std::fputs(table(detached.isEmpty() ? sessions : detached, terminalColumns(STDERR_FILENO)).toUtf8().constData(), stderr);
            done(kExitUsage);
        });
    });
    if (status != kExitOk)
        return status;
    // Inside the session itself (Session::start sets TETHER_SESSION), its
    // output would come back as its own output, without end, and the only
    // keyboard that could stop it would be the session's: refused, as tmux
    // refuses a nested attach through $TMUX.
    if (qEnvironmentVariable("TETHER_SESSION") == id)
        return fail(cmd, QStringLiteral("session %1 is the one this shell runs in: attaching it here would feed its "
                                        "output back into it (unset TETHER_SESSION to force)").arg(id),
                    kExitUsage);
    return runAttach(ep, id, sessionName, parser.isSet(watch) ? ViewerMode::Watch : ViewerMode::Control, key,
                     screenLines);
}

} // namespace Cli
} // namespace Tether
