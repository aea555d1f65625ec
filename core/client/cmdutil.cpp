// SPDX-License-Identifier: GPL-2.0-or-later
// The plumbing every client command uses (cmdutil.h): errors, the event
// loop, the options, finding the server and the session an ID names.
#include "cmdutil.h"
#include "commandline.h"
#include "displaytext.h"
#include "shellwords.h"

#include <QCommandLineParser>
#include <QCoreApplication>
#include <QTimer>

#include <cstdio>

namespace Tether {
namespace Cli {

namespace {

const char kNotRunning[] = "Tether is not running: start it with `tether` or `tether serve`";

/// "ID (NAME)", or "ID" for a session without a name.
QString idAndName(const QJsonObject &s)
{
    const QString name = s.value(QStringLiteral("name")).toString();
    const QString sid = s.value(QStringLiteral("id")).toString();
    return name.isEmpty() ? sid : QStringLiteral("%1 (%2)").arg(sid, ShellWords::quote({name}));
}

} // namespace

void printErr(const QString &text)
{
    std::fprintf(stderr, "%s\n", qPrintable(DisplayText::escape(text)));
    std::fflush(stderr);
}

int fail(const QString &command, const QString &text, int status)
{
    printErr(QStringLiteral("tether %1: %2").arg(command, text));
    return status;
}

int runAsync(const std::function<void(std::function<void(int)>)> &body)
{
    int status = kExitError;
    bool finished = false;
    QTimer::singleShot(0, qApp, [&]() {
        body([&](int s) {
            if (finished)
                return;
            finished = true;
            status = s;
            QCoreApplication::exit(s);
        });
    });
    if (!finished)
        QCoreApplication::exec();
    return status;
}

int resolveId(const QJsonArray &sessions, const QString &arg, int minPrefix, QString *id, QString *error,
              bool preferEnded)
{
    QStringList matchIds;
    QStringList matches; // as the error shows them
    QString named;
    bool namedPreferred = false;
    for (const QJsonValue &v : sessions) {
        const QString sid = v.toObject().value(QStringLiteral("id")).toString();
        if (sid == arg) {
            *id = sid;
            return kExitOk;
        }
        if (!arg.isEmpty() && v.toObject().value(QStringLiteral("name")).toString() == arg && !namedPreferred) {
            named = sid;
            namedPreferred = (v.toObject().value(QStringLiteral("state")).toString() == QLatin1String("ended")) == preferEnded;
        }
        if (!arg.isEmpty() && sid.startsWith(arg)) {
            matchIds << sid;
            matches << idAndName(v.toObject());
        }
    }
    if (!named.isEmpty()) {
        *id = named;
        return kExitOk;
    }
    if (matches.isEmpty()) {
        *error = QStringLiteral("no session matches \"%1\" (see `tether list`)").arg(arg);
        return kExitNotFound;
    }
    if (matches.size() > 1) {
        *error = QStringLiteral("\"%1\" is ambiguous: it matches %2; give more of the id, or the name")
                     .arg(arg, matches.join(QStringLiteral(", ")));
        return kExitUsage;
    }
    if (arg.size() < minPrefix) {
        *error = QStringLiteral("\"%1\" is too short to act on: it matches %2, but an id prefix needs at least %3 "
                                "characters here; give the full id, the name, or at least %3 characters of the id")
                     .arg(arg, matches.first())
                     .arg(minPrefix);
        return kExitUsage;
    }
    *id = matchIds.first();
    return kExitOk;
}

QStringList idsAsPositional(const QStringList &args, const QStringList &flags, const QStringList &valueOptions)
{
    QStringList out{args.value(0)};
    QStringList ids;
    for (int i = 1; i < args.size(); ++i) {
        const QString &a = args.at(i);
        if (a == QLatin1String("--")) {
            ids += args.mid(i + 1);
            break;
        }
        const QString name = a.section(QLatin1Char('='), 0, 0);
        if (a.startsWith(QLatin1Char('-')) && a.size() >= 2 && (flags.contains(name) || valueOptions.contains(name))) {
            out << a;
            if (valueOptions.contains(a) && i + 1 < args.size())
                out << args.at(++i);
            continue;
        }
        ids << a;
    }
    if (!ids.isEmpty())
        out << QStringLiteral("--") << ids;
    return out;
}

bool parse(QCommandLineParser &parser, const Common &common, const QString &command, const QStringList &args,
           int *status)
{
    parser.addOptions({common.url, common.key, common.cacert});
    parser.addHelpOption();
    parser.addVersionOption();
    if (!parser.parse(args)) {
        *status = fail(command, parser.errorText() + QStringLiteral(" (see --help)"), kExitUsage);
        return false;
    }
    if (helpRequested(parser)) {
        std::fputs(qPrintable(commandHelp(parser, command)), stdout);
        std::fflush(stdout);
        *status = kExitOk;
        return false;
    }
    if (parser.isSet(QStringLiteral("version"))) {
        std::fputs(qPrintable(versionLine()), stdout);
        std::fflush(stdout);
        *status = kExitOk;
        return false;
    }
    return true;
}

bool endpoint(const QCommandLineParser &parser, const Common &common, const QString &command,
              ServerEndpoint *ep, int *status)
{
    QString error;
    if (!ServerEndpoint::resolve(parser.value(common.url), parser.value(common.key), ep, &error,
                                 parser.value(common.cacert))) {
        // No runtime file (and no --url/--key): not running.
        if (parser.value(common.url).isEmpty() && qEnvironmentVariable("TETHER_URL").isEmpty())
            printErr(QString::fromLatin1(kNotRunning));
        else
            fail(command, error);
        *status = kExitError;
        return false;
    }
    return true;
}

int apiFailure(const QString &command, const ApiReply &r)
{
    if (r.connectionRefused) {
        printErr(QString::fromLatin1(kNotRunning));
        return kExitError;
    }
    if (r.status == 401)
        return fail(command, QStringLiteral("the server refused the access key (is --key or TETHER_KEY from another server?)"));
    return fail(command, r.errorText());
}

QStringList commonFlags(const QStringList &extra)
{
    return QStringList{QStringLiteral("-h"), QStringLiteral("--help"), QStringLiteral("-?"), QStringLiteral("--help-all"),
                       QStringLiteral("-v"), QStringLiteral("--version")}
        + extra;
}

QStringList commonValueOptions(const QStringList &extra)
{
    return QStringList{QStringLiteral("--url"), QStringLiteral("--key"), QStringLiteral("--cacert")} + extra;
}

int withSession(ApiClient &api, const QString &command, const QString &prefix, int minPrefix,
                const std::function<void(const QString &, std::function<void(int)>)> &then, bool preferEnded)
{
    return runAsync([&](std::function<void(int)> done) {
        api.get(QStringLiteral("api/sessions"), [&, done](const ApiReply &r) {
            if (r.status != 200)
                return done(apiFailure(command, r));
            QString id, error;
            const int found = resolveId(r.json().value(QStringLiteral("sessions")).toArray(), prefix, minPrefix, &id, &error,
                                        preferEnded);
            if (found != kExitOk)
                return done(fail(command, error, found));
            then(id, done);
        });
    });
}

} // namespace Cli
} // namespace Tether
