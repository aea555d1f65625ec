// SPDX-License-Identifier: GPL-2.0-or-later
// `tether wait` and `tether send` (docs/protocol.md section 4, "Commands and
// notifications"): they follow /api/events for a command to finish.
#include "cmdutil.h"

#include <QCommandLineParser>
#include <QCoreApplication>
#include <QJsonDocument>
#include <QTimer>

#include <memory>

namespace Tether {
namespace Cli {

namespace {

// --- tether wait, tether send (docs/protocol.md §4, "Commands and notifications")

/// Exit status of `tether wait` when --timeout ran out (as timeout(1)).
constexpr int kExitTimedOut = 124;
/// Exit status for a command whose shell gave no status.
constexpr int kExitNoStatus = 255;

/// A session's exit as an exit status: its code, or 128 + its signal.
int sessionExitStatus(const QJsonObject &s)
{
    const QJsonValue sig = s.value(QStringLiteral("exit_signal"));
    if (sig.isDouble())
        return 128 + sig.toInt();
    const int code = s.value(QStringLiteral("exit_code")).toInt(kExitNoStatus);
    return code >= 0 && code <= 255 ? code : kExitNoStatus;
}

int commandExitStatus(const QJsonObject &command)
{
    const QJsonValue st = command.value(QStringLiteral("exit_status"));
    return st.isDouble() ? st.toInt() : kExitNoStatus;
}

/**
 * Follows /api/events for session `id` until what `tether wait` or `send
 * --wait` waits for happens, then done(status). `afterStart(lastId)` runs
 * once the first `sessions` event has told the state (the stream is open:
 * nothing after it is missed); `send --wait` types its text there.
 * `next`: wait for a command that starts after that point (send --wait);
 * else for the running one, or none when the shell is at a prompt.
 */
void followSession(ApiClient &api, const QString &command, const QString &id, bool next,
                   const std::function<void(std::function<void(int)>)> &afterStart, std::function<void(int)> done)
{
    struct Follow {
        bool started = false;
        double waitAfter = -1; ///< finished commands with an id above this count
    };
    auto f = std::make_shared<Follow>();
    api.stream(
        QStringLiteral("api/events"),
        [&api, command, id, next, afterStart, done, f](const QByteArray &event, const QByteArray &data) {
            const QJsonObject o = QJsonDocument::fromJson(data).object();
            if (event == "sessions") {
                QJsonObject s;
                for (const QJsonValue &v : o.value(QStringLiteral("sessions")).toArray())
                    if (v.toObject().value(QStringLiteral("id")).toString() == id)
                        s = v.toObject();
                if (s.isEmpty())
                    return done(fail(command, QStringLiteral("the session has ended"), kExitNotFound));
                if (s.value(QStringLiteral("state")).toString() == QLatin1String("exited"))
                    return done(sessionExitStatus(s));
                if (f->started)
                    return;
                f->started = true;
                const QJsonObject shell = s.value(QStringLiteral("shell")).toObject();
                const QString state = shell.value(QStringLiteral("state")).toString();
                const QJsonObject last = shell.value(QStringLiteral("command")).toObject();
                const double lastId = last.value(QStringLiteral("id")).toDouble(0);
                // Without marks no command ever finishes here: `send --wait`
                // would type and then wait forever. Neither waits, nothing
                // is typed.
                if (state == QLatin1String("unknown"))
                    return done(fail(command, QStringLiteral("the session's shell sends no command marks "
                                                             "(no shell integration: see `tether --help`, "
                                                             "\"Commands and notifications\")")));
                if (!next) {
                    if (state != QLatin1String("running"))
                        return done(last.isEmpty() ? kExitOk : commandExitStatus(last));
                    f->waitAfter = lastId - 1; // the running one
                    return;
                }
                f->waitAfter = lastId;
                afterStart(done);
                return;
            }
            if (event == "command" && f->started && f->waitAfter >= 0
                && o.value(QStringLiteral("session")).toString() == id
                && o.value(QStringLiteral("phase")).toString() == QLatin1String("finished")) {
                const QJsonObject c = o.value(QStringLiteral("command")).toObject();
                if (c.value(QStringLiteral("id")).toDouble() > f->waitAfter)
                    return done(commandExitStatus(c));
            }
            if (event == "shutdown")
                return done(fail(command, QStringLiteral("the server shut down")));
        },
        [command, done](const ApiReply &r) {
            if (r.status != 200)
                return done(apiFailure(command, r));
            // The stream ended (a restart in place ends it): the caller's
            // loop is over; say so rather than hang.
            done(fail(command, QStringLiteral("the server ended the event stream (restarted?); run it again")));
        });
}

} // namespace

int waitCommand(const QStringList &args)
{
    const QString cmd = QStringLiteral("wait");
    QCommandLineParser parser;
    Common common;
    parser.setApplicationDescription(QStringLiteral(
        "Waits for the command running in a session to finish and exits with its status, for\n"
        "scripts. At a prompt it exits at once with the last command's status (0 when none ran).\n"
        "It needs the shell's command marks: Tether's shell integration (bash, zsh, fish), or a\n"
        "shell that sends OSC 133 itself.\n\n"
        "Exit status: the command's (255 when the shell gave none); the session's exit code (or\n"
        "128+signal) when it exits meanwhile; 124 --timeout ran out; 1 Tether not running, no\n"
        "shell integration, or another error; 2 usage error; 4 no session matches ID."));
    parser.addPositionalArgument(QStringLiteral("ID"), QStringLiteral("The session: its name, or a unique prefix of its id."));
    const QCommandLineOption timeout(QStringLiteral("timeout"), QStringLiteral("Give up after SECONDS (exit 124)."),
                                     QStringLiteral("SECONDS"));
    parser.addOption(timeout);
    int status = kExitOk;
    ServerEndpoint ep;
    const QStringList flags = commonFlags();
    const QStringList values = commonValueOptions({QStringLiteral("--timeout")});
    if (!parse(parser, common, cmd, idsAsPositional(args, flags, values), &status))
        return status;
    if (parser.positionalArguments().size() != 1)
        return fail(cmd, QStringLiteral("expected one session ID (see --help)"), kExitUsage);
    bool ok = true;
    const double seconds = parser.isSet(timeout) ? parser.value(timeout).toDouble(&ok) : 0;
    if (!ok || seconds < 0 || seconds > 1e6)
        return fail(cmd, QStringLiteral("--timeout wants seconds, 0 to 1000000"), kExitUsage);
    if (!endpoint(parser, common, cmd, &ep, &status))
        return status;
    ApiClient api(ep);
    return withSession(api, cmd, parser.positionalArguments().first(), 0,
                       [&](const QString &id, std::function<void(int)> done) {
        if (seconds > 0)
            QTimer::singleShot(qint64(seconds * 1000), qApp, [done] { done(kExitTimedOut); });
        followSession(api, cmd, id, false, nullptr, done);
    });
}

int sendCommand(const QStringList &args)
{
    const QString cmd = QStringLiteral("send");
    QCommandLineParser parser;
    Common common;
    parser.setApplicationDescription(QStringLiteral(
        "Types TEXT into a session, as tmux's send-keys: the words joined by spaces, as the\n"
        "program reads keystrokes (with or without a viewer attached).\n\n"
        "Exit status: 0 typed (with --wait: the command's status, as `tether wait`); 1 Tether\n"
        "not running, the session has exited, --wait in a session without shell integration\n"
        "(nothing is typed) or another error; 2 usage error (--wait without --enter); 4 no\n"
        "session matches ID."));
    parser.addPositionalArgument(QStringLiteral("ID"), QStringLiteral("The session: its name, or a unique prefix of its id."));
    parser.addPositionalArgument(QStringLiteral("TEXT"), QStringLiteral("What to type (after --)."), QStringLiteral("-- TEXT..."));
    const QCommandLineOption enter(QStringLiteral("enter"), QStringLiteral("Press Enter after the text."));
    const QCommandLineOption wait(QStringLiteral("wait"),
                                  QStringLiteral("Then wait for the command it starts to finish and exit with its status."));
    parser.addOption(enter);
    parser.addOption(wait);
    int status = kExitOk;
    ServerEndpoint ep;
    const QStringList flags = commonFlags({QStringLiteral("--enter"), QStringLiteral("--wait")});
    if (!parse(parser, common, cmd, idsAsPositional(args, flags, commonValueOptions()), &status))
        return status;
    const QStringList positional = parser.positionalArguments();
    if (positional.isEmpty())
        return fail(cmd, QStringLiteral("expected a session ID and the text (see --help)"), kExitUsage);
    QString text = positional.mid(1).join(QLatin1Char(' '));
    if (parser.isSet(enter))
        text += QLatin1Char('\r');
    if (text.isEmpty())
        return fail(cmd, QStringLiteral("nothing to type (give TEXT, or --enter)"), kExitUsage);
    // No command starts before Enter: --wait alone would wait forever.
    if (parser.isSet(wait) && !text.endsWith(QLatin1Char('\r')) && !text.endsWith(QLatin1Char('\n')))
        return fail(cmd, QStringLiteral("--wait needs --enter (no command starts until Enter is pressed)"), kExitUsage);
    if (!endpoint(parser, common, cmd, &ep, &status))
        return status;
    ApiClient api(ep);
    const QByteArray body = QJsonDocument(QJsonObject{{QStringLiteral("data"), text}}).toJson(QJsonDocument::Compact);
    return withSession(api, cmd, positional.first(), 0, [&](const QString &id, std::function<void(int)> done) {
        const QString path = QStringLiteral("api/sessions/") + id + QStringLiteral("/input");
        if (!parser.isSet(wait)) {
            api.post(path, body, [&, done](const ApiReply &r) { done(r.status == 204 ? kExitOk : apiFailure(cmd, r)); });
            return;
        }
        followSession(api, cmd, id, true, [&api, path, body, cmd](std::function<void(int)> finish) {
            api.post(path, body, [cmd, finish](const ApiReply &r) {
                if (r.status != 204)
                    finish(apiFailure(cmd, r));
            });
        }, done);
    });
}

} // namespace Cli
} // namespace Tether
