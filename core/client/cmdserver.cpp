// SPDX-License-Identifier: GPL-2.0-or-later
// The commands on the server itself: `tether key` (the dashboard link, --rotate)
// and `tether restart` (in place).
#include "cmdutil.h"

#include <QCommandLineParser>
#include <QCoreApplication>
#include <QElapsedTimer>
#include <QTimer>
#include <QUrl>

#include <cstdio>

namespace Tether {
namespace Cli {

namespace {

/// The start of a command that takes options but no argument: parses
/// `args` (help exits), refuses an argument (usage error) and finds the
/// server. False with *status when the command ends here.
bool setUpWithoutArguments(QCommandLineParser &parser, const Common &common, const QString &command,
                           const QStringList &args, ServerEndpoint *ep, int *status)
{
    if (!parse(parser, common, command, args, status))
        return false;
    if (!parser.positionalArguments().isEmpty()) {
        *status = fail(command, QStringLiteral("unexpected argument %1 (see --help)").arg(parser.positionalArguments().first()),
                       kExitUsage);
        return false;
    }
    return endpoint(parser, common, command, ep, status);
}

} // namespace

int keyCommand(const QStringList &args)
{
    const QString cmd = QStringLiteral("key");
    Common common;
    QCommandLineParser parser;
    parser.setApplicationDescription(QStringLiteral(
        "Print the dashboard link with Tether's access key (the key is kept across restarts).\n"
        "With --rotate, make a new key: the old one stops working at once, and open dashboards\n"
        "say so; the new link is printed."));
    const QCommandLineOption rotate(QStringLiteral("rotate"), QStringLiteral("Make a new access key and print its link."));
    parser.addOption(rotate);
    int status = kExitOk;
    ServerEndpoint ep;
    if (!setUpWithoutArguments(parser, common, cmd, args, &ep, &status))
        return status;
    ApiClient api(ep);
    auto print = [](const QString &url) {
        std::fputs(qPrintable(url + QLatin1Char('\n')), stdout);
        std::fflush(stdout);
    };
    return runAsync([&](std::function<void(int)> done) {
        if (parser.isSet(rotate)) {
            api.post(QStringLiteral("api/key"), QByteArray(), [&, done](const ApiReply &r) {
                if (r.status != 200)
                    return done(apiFailure(cmd, r));
                print(r.json().value(QStringLiteral("url")).toString());
                done(kExitOk);
            });
            return;
        }
        // Ask first, so that the link printed is one the server accepts.
        api.get(QStringLiteral("api/sessions"), [&, done](const ApiReply &r) {
            if (r.status != 200)
                return done(apiFailure(cmd, r));
            // The address a user opens (off loopback: the server's name).
            QUrl url = ep.publicUrl.isEmpty() ? ep.url : ep.publicUrl;
            url.setQuery(QStringLiteral("key=") + ep.key);
            print(url.toString());
            done(kExitOk);
        });
    });
}

int restartCommand(const QStringList &args)
{
    const QString cmd = QStringLiteral("restart");
    Common common;
    QCommandLineParser parser;
    parser.setApplicationDescription(QStringLiteral(
        "Restart Tether in place: the running server executes its binary again (a new version after an\n"
        "upgrade) in the same process, and keeps every session, its processes and its output; attached\n"
        "viewers reconnect and miss nothing. The same as SIGUSR2 to the server.\n\n"
        "Exit status: 0 restarted; 1 Tether not running, the restart refused or failed (the reason is\n"
        "printed; the server carries on as it was), or no new process image within 15 s; 2 usage error."));
    int status = kExitOk;
    ServerEndpoint ep;
    if (!setUpWithoutArguments(parser, common, cmd, args, &ep, &status))
        return status;
    ApiClient api(ep);
    QString before;
    QTimer poll;
    poll.setSingleShot(true);
    poll.setInterval(100);
    QElapsedTimer waited;
    return runAsync([&](std::function<void(int)> done) {
        // Whether the restart happened shows in GET /api/restart: a new
        // process image has a new "instance"; one that failed says why in
        // "last_error" and carries on (protocol.md, "Restart in place").
        QObject::connect(&poll, &QTimer::timeout, qApp, [&, done]() {
            api.get(QStringLiteral("api/restart"), [&, done](const ApiReply &r) {
                const QJsonObject o = r.json();
                const QString instance = o.value(QStringLiteral("instance")).toString();
                // A new image that reports an error was started by the
                // restart guardian after the new binary died: the sessions
                // are kept, but the restart did not happen.
                if (r.status == 200 && !instance.isEmpty() && instance != before
                    && o.value(QStringLiteral("last_error")).isString())
                    return done(fail(cmd, QStringLiteral("the restart failed, the previous binary carries on (pid %1): %2")
                                              .arg(qint64(o.value(QStringLiteral("pid")).toDouble()))
                                              .arg(o.value(QStringLiteral("last_error")).toString())));
                if (r.status == 200 && !instance.isEmpty() && instance != before) {
                    std::printf("Tether restarted in place (pid %lld)\n", qint64(o.value(QStringLiteral("pid")).toDouble()));
                    std::fflush(stdout);
                    return done(kExitOk);
                }
                if (r.status == 200 && !o.value(QStringLiteral("restarting")).toBool()
                    && o.value(QStringLiteral("last_error")).isString())
                    return done(fail(cmd, QStringLiteral("the restart failed, Tether carries on: %1")
                                              .arg(o.value(QStringLiteral("last_error")).toString())));
                if (waited.hasExpired(15000))
                    return done(fail(cmd, QStringLiteral("no new Tether process answered within 15 s")));
                poll.start();
            });
        });
        api.post(QStringLiteral("api/restart"), QByteArray(), [&, done](const ApiReply &r) {
            if (r.status != 202)
                return done(apiFailure(cmd, r));
            before = r.json().value(QStringLiteral("instance")).toString();
            waited.start();
            poll.start();
        });
    });
}

} // namespace Cli
} // namespace Tether
