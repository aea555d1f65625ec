// SPDX-License-Identifier: GPL-2.0-or-later
// `tether share`: read-only links made, listed (--list) and revoked (--revoke).
#include "cmdutil.h"

#include <QCommandLineParser>
#include <QHash>
#include <QJsonDocument>
#include <QUrl>
#include <QUrlQuery>

#include <cstdio>

namespace Tether {
namespace Cli {

namespace {

/// The token of a read-only link given as the token itself or as the link
/// that carries it (".../?share=TOKEN"); `arg` itself otherwise.
QString shareTokenOf(const QString &arg)
{
    const QUrl url(arg);
    if (url.isValid() && !url.scheme().isEmpty() && url.hasQuery()) {
        const QString token = QUrlQuery(url).queryItemValue(QStringLiteral("share"));
        if (!token.isEmpty())
            return token;
    }
    return arg;
}

/// The `tether share --list` table: one read-only link per line: the
/// session's id, its name (nameText() of `sessions`, GET /api/sessions:
/// "-" when it has none), viewers, created, link. Scripts read --json.
QString shareTable(const QJsonArray &shares, const QJsonArray &sessions)
{
    QHash<QString, QJsonObject> byId;
    for (const QJsonValue &v : sessions)
        byId.insert(v.toObject().value(QStringLiteral("id")).toString(), v.toObject());
    QList<QStringList> rows;
    rows << QStringList{QStringLiteral("SESSION"), QStringLiteral("NAME"), QStringLiteral("VIEWERS"), QStringLiteral("CREATED"),
                        QStringLiteral("LINK")};
    for (const QJsonValue &v : shares) {
        const QJsonObject o = v.toObject();
        const QString session = o.value(QStringLiteral("session")).toString();
        rows << QStringList{session, nameText(byId.value(session)),
                            QString::number(o.value(QStringLiteral("viewers")).toInt()),
                            o.value(QStringLiteral("created")).toString(), o.value(QStringLiteral("url")).toString()};
    }
    return alignedColumns(rows);
}

} // namespace

int shareCommand(const QStringList &args)
{
    const QString cmd = QStringLiteral("share");
    QCommandLineParser parser;
    Common common;
    parser.setApplicationDescription(QStringLiteral(
        "Prints a read-only link to a session: whoever opens it can watch that session (its output,\n"
        "live) and nothing else: no typing, no resizing, no other session, no key. ID is the\n"
        "session's full id, its name, or a unique prefix of its id of at least 4 characters. A\n"
        "link ends when it is revoked, when its session ends, or when the key is rotated; it\n"
        "survives `tether restart`.\n\n"
        "Exit status: 0 done; 1 Tether not running or another error; 2 usage error (ID is\n"
        "ambiguous or too short); 4 no session (or, with --revoke, no link) matches."));
    parser.addPositionalArgument(QStringLiteral("ID"), kActingIdHelp);
    const QCommandLineOption list(QStringLiteral("list"), QStringLiteral("List the read-only links (session id, its name, viewers, created, link)."));
    const QCommandLineOption json(QStringLiteral("json"), QStringLiteral("With --list: print the API's JSON ({\"shares\": [...]})."));
    const QCommandLineOption revoke(QStringLiteral("revoke"),
                                    QStringLiteral("Revoke a link (its token, or the link itself), or every link of a session "
                                                   "(its ID or name): their viewers are closed at once."),
                                    QStringLiteral("TOKEN|ID"));
    parser.addOptions({list, json, revoke});
    const QStringList flags = commonFlags({QStringLiteral("--list"), QStringLiteral("--json")});
    const QStringList values = commonValueOptions({QStringLiteral("--revoke")});
    int status = kExitOk;
    if (!parse(parser, common, cmd, idsAsPositional(args, flags, values), &status))
        return status;
    const QStringList positional = parser.positionalArguments();
    const int modes = (parser.isSet(list) ? 1 : 0) + (parser.isSet(revoke) ? 1 : 0);
    if (modes > 1 || (modes == 1 && !positional.isEmpty()) || (modes == 0 && positional.size() != 1))
        return fail(cmd, QStringLiteral("expected one session ID, --list or --revoke TOKEN|ID (see --help)"), kExitUsage);
    if (parser.isSet(json) && !parser.isSet(list))
        return fail(cmd, QStringLiteral("--json goes with --list"), kExitUsage);
    ServerEndpoint ep;
    if (!endpoint(parser, common, cmd, &ep, &status))
        return status;
    ApiClient api(ep);
    auto print = [](const QByteArray &text) {
        std::fwrite(text.constData(), 1, size_t(text.size()), stdout);
        std::fflush(stdout);
    };
    if (parser.isSet(list)) {
        return runAsync([&](std::function<void(int)> done) {
            api.get(QStringLiteral("api/shares"), [&, done](const ApiReply &r) {
                if (r.status != 200)
                    return done(apiFailure(cmd, r));
                const QJsonArray shares = r.json().value(QStringLiteral("shares")).toArray();
                if (parser.isSet(json) || shares.isEmpty()) {
                    print(parser.isSet(json) ? (r.body.endsWith('\n') ? r.body : r.body + '\n') : QByteArray("no read-only links\n"));
                    return done(kExitOk);
                }
                // The names: a link names its session by id only (the API's
                // JSON stays as it is); a user knows sessions by name.
                api.get(QStringLiteral("api/sessions"), [&, done, shares](const ApiReply &l) {
                    if (l.status != 200)
                        return done(apiFailure(cmd, l));
                    print(shareTable(shares, l.json().value(QStringLiteral("sessions")).toArray()).toUtf8());
                    done(kExitOk);
                });
            });
        });
    }
    if (parser.isSet(revoke)) {
        const QString target = parser.value(revoke);
        const QString token = shareTokenOf(target);
        auto revoked = [&](int n) {
            print(QStringLiteral("revoked %1 read-only link%2\n").arg(n).arg(n == 1 ? QString() : QStringLiteral("s")).toUtf8());
        };
        return runAsync([&](std::function<void(int)> done) {
            // A token (or link) first: a link's token is never a session's id or name.
            api.get(QStringLiteral("api/shares"), [&, done](const ApiReply &r) {
                if (r.status != 200)
                    return done(apiFailure(cmd, r));
                for (const QJsonValue &v : r.json().value(QStringLiteral("shares")).toArray()) {
                    if (v.toObject().value(QStringLiteral("token")).toString() != token)
                        continue;
                    api.deleteResource(QStringLiteral("api/shares/") + token, [&, done](const ApiReply &d) {
                        if (d.status != 204)
                            return done(apiFailure(cmd, d));
                        revoked(1);
                        done(kExitOk);
                    });
                    return;
                }
                api.get(QStringLiteral("api/sessions"), [&, done](const ApiReply &l) {
                    if (l.status != 200)
                        return done(apiFailure(cmd, l));
                    QString id, error;
                    const int found = resolveId(l.json().value(QStringLiteral("sessions")).toArray(), target,
                                                kMinActingPrefix, &id, &error);
                    if (found == kExitNotFound)
                        return done(fail(cmd, QStringLiteral("no read-only link has that token, and %1").arg(error), found));
                    if (found != kExitOk)
                        return done(fail(cmd, error, found));
                    api.deleteResource(QStringLiteral("api/sessions/") + id + QStringLiteral("/shares"), [&, done](const ApiReply &d) {
                        if (d.status != 200)
                            return done(apiFailure(cmd, d));
                        revoked(d.json().value(QStringLiteral("revoked")).toInt());
                        done(kExitOk);
                    });
                });
            });
        });
    }
    return withSession(api, cmd, positional.first(), kMinActingPrefix, [&](const QString &id, std::function<void(int)> done) {
        const QJsonObject body{{QStringLiteral("session"), id}};
        api.post(QStringLiteral("api/shares"), QJsonDocument(body).toJson(QJsonDocument::Compact), [&, done](const ApiReply &r) {
            if (r.status != 201)
                return done(apiFailure(cmd, r));
            print(r.json().value(QStringLiteral("url")).toString().toUtf8() + '\n');
            done(kExitOk);
        });
    });
}

} // namespace Cli
} // namespace Tether
