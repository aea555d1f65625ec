// SPDX-License-Identifier: GPL-2.0-or-later
// `tether list` (also `tether ls`) and the session table it prints, which
// `tether attach` (sessions to choose from) and `tether share --list` use too.
#include "cmdutil.h"
#include "displaytext.h"
#include "sessionlistmodel.h"
#include "sessiontext.h"
#include "shellwords.h"

#include <QCommandLineParser>
#include <QVector>

#include <cstdio>
#include <sys/ioctl.h>
#include <unistd.h>

namespace Tether {
namespace Cli {

namespace {

QString commandText(const QJsonObject &s)
{
    const QString title = s.value(QStringLiteral("title")).toString();
    if (!title.isEmpty())
        return title;
    QStringList argv;
    for (const QJsonValue &v : s.value(QStringLiteral("command")).toArray())
        argv << v.toString();
    return ShellWords::quote(argv);
}

/// `text` cut to `limit` characters, its last one "…" when cut (a UTF-16
/// surrogate pair is never split).
QString ellipsize(const QString &text, int limit)
{
    if (text.size() <= limit)
        return text;
    int keep = qMax(0, limit - 1);
    if (keep > 0 && text.at(keep - 1).isHighSurrogate())
        --keep;
    return text.left(keep) + QChar(0x2026);
}

/// When the session expires: "never" (a running session with no TTL, the
/// default), "-" while a viewer keeps it ("cannot expire now"), else the time
/// left as "45s", "29m", "2h 5m" (from expires_in).
QString expiresText(const QJsonObject &s)
{
    const QJsonValue left = s.value(QStringLiteral("expires_in"));
    if (s.value(QStringLiteral("state")).toString() == QLatin1String("ended"))
        return QStringLiteral("-"); // nothing runs to expire
    if (!left.isDouble())
        return s.value(QStringLiteral("viewers")).toInt() > 0 ? QStringLiteral("-") : QStringLiteral("never");
    return SessionText::duration(qint64(left.toDouble()));
}

/// SessionListModel::shellText(): one wording with the Sessions window.
QString shellText(const QJsonObject &s)
{
    return SessionListModel::shellText(s);
}

/// The program in front of the session's terminal ("vim"), "-" when none.
QString programText(const QJsonObject &s)
{
    const QString name = s.value(QStringLiteral("foreground")).toObject().value(QStringLiteral("name")).toString();
    return name.isEmpty() ? QStringLiteral("-") : ShellWords::quote({name}); // "my prog" must stay one column
}

/// Shortest prefix length (>= 8) that tells every id apart.
int uniquePrefixLength(const QStringList &ids)
{
    int len = 8;
    for (int i = 0; i < ids.size(); ++i) {
        for (int j = i + 1; j < ids.size(); ++j) {
            int common = 0;
            while (common < ids[i].size() && common < ids[j].size() && ids[i][common] == ids[j][common])
                ++common;
            len = qMax(len, common + 1);
        }
    }
    return len;
}

/// Every cell of `rows` through DisplayText::escape(): a cell may hold what
/// a session controls (its name, title, command, the foreground process's
/// name), and raw it reached the terminal of whoever listed (issue 29:
/// `cp /bin/sleep "$(printf 'z\033[2J')"` cleared the screen). Escaping
/// an escaped cell changes nothing.
void escapeCells(QList<QStringList> &rows)
{
    for (QStringList &r : rows)
        for (QString &cell : r)
            cell = DisplayText::escape(cell);
}


/// `tether list --tsv`: a line per session, "ID\tNAME\tSTATE\tTITLE\n".
/// Fields never hold a tab or a line break: ids are base64url, names have no
/// control characters (the server refuses them), the state is a word, and the
/// title goes through DisplayText::escape() (TAB is `\t`, LF `\n`). The
/// shell completions read it (packaging/completions): a title raw in their
/// descriptions turned zsh's and fish's menus backwards with U+202E.
QString tsvLines(const QJsonArray &sessions)
{
    QString out;
    for (const QJsonValue &v : sessions) {
        const QJsonObject s = v.toObject();
        out += s.value(QStringLiteral("id")).toString() + QLatin1Char('\t') + s.value(QStringLiteral("name")).toString()
            + QLatin1Char('\t') + s.value(QStringLiteral("state")).toString() + QLatin1Char('\t')
            + DisplayText::escape(s.value(QStringLiteral("title")).toString()) + QLatin1Char('\n');
    }
    return out;
}

} // namespace

QString nameText(const QJsonObject &s)
{
    const QString name = s.value(QStringLiteral("name")).toString();
    return name.isEmpty() ? QStringLiteral("-") : ShellWords::quote({name});
}

int terminalColumns(int fd)
{
    if (!::isatty(fd))
        return 0;
    struct winsize ws {};
    if (::ioctl(fd, TIOCGWINSZ, &ws) != 0)
        return 0;
    return ws.ws_col;
}

QString alignedColumns(QList<QStringList> rows)
{
    escapeCells(rows);
    QVector<int> widths(rows.first().size(), 0);
    for (const QStringList &r : rows)
        for (int c = 0; c < r.size(); ++c)
            widths[c] = qMax(widths[c], int(r[c].size()));
    QString out;
    for (const QStringList &r : rows) {
        QString line;
        for (int c = 0; c < r.size(); ++c)
            line += c + 1 < r.size() ? r[c].leftJustified(widths[c] + 2) : r[c];
        out += line + QLatin1Char('\n');
    }
    return out;
}

QString table(const QJsonArray &sessions, int columns)
{
    constexpr int kMinLastColumn = 13; // "COMMAND/TITLE" whole
    constexpr int kMaxLastColumn = 200;
    constexpr int kMaxName = 24;
    constexpr int kMaxShell = 20;
    QStringList ids;
    for (const QJsonValue &v : sessions)
        ids << v.toObject().value(QStringLiteral("id")).toString();
    const int idLen = uniquePrefixLength(ids);
    QList<QStringList> rows;
    rows << QStringList{QStringLiteral("ID"), QStringLiteral("NAME"), QStringLiteral("STATE"), QStringLiteral("ATTACHED"),
                        QStringLiteral("VIEWERS"), QStringLiteral("EXPIRES"), QStringLiteral("SIZE"), QStringLiteral("PROGRAM"),
                        QStringLiteral("SHELL"), QStringLiteral("COMMAND/TITLE")};
    for (const QJsonValue &v : sessions) {
        const QJsonObject s = v.toObject();
        const bool attached = s.value(QStringLiteral("attached")).toBool();
        rows << QStringList{s.value(QStringLiteral("id")).toString().left(idLen), nameText(s), SessionText::state(s),
                            attached ? QStringLiteral("yes (%1)").arg(s.value(QStringLiteral("viewer_kind")).toString())
                                     : QStringLiteral("no"),
                            QString::number(s.value(QStringLiteral("viewers")).toInt()), expiresText(s),
                            QStringLiteral("%1x%2").arg(s.value(QStringLiteral("cols")).toInt()).arg(s.value(QStringLiteral("rows")).toInt()),
                            programText(s), shellText(s), commandText(s)};
    }
    escapeCells(rows); // before the widths: what is measured is what is shown
    const int shellColumn = int(rows.first().indexOf(QLatin1String("SHELL")));
    for (QStringList &r : rows) {
        r[1] = ellipsize(r[1], kMaxName); // NAME
        r[shellColumn] = ellipsize(r[shellColumn], kMaxShell);
    }
    QVector<int> widths(rows.first().size(), 0);
    for (const QStringList &r : rows)
        for (int c = 0; c < r.size(); ++c)
            widths[c] = qMax(widths[c], int(r[c].size()));
    // What the columns before the last take, with their two-space gaps.
    auto usedBy = [](const QVector<int> &w) {
        int used = 0;
        for (int c = 0; c + 1 < w.size(); ++c)
            used += w[c] + 2;
        return used;
    };
    int lastLimit = kMaxLastColumn;
    if (columns > 0) {
        for (const char *header : {"VIEWERS", "EXPIRES", "SIZE", "PROGRAM", "ATTACHED", "SHELL", "STATE"}) {
            if (usedBy(widths) + kMinLastColumn <= columns)
                break;
            const int drop = int(rows.first().indexOf(QLatin1String(header)));
            for (QStringList &r : rows)
                r.removeAt(drop);
            widths.removeAt(drop);
        }
        lastLimit = qMax(kMinLastColumn, columns - usedBy(widths));
    }
    for (QStringList &r : rows)
        r.last() = ellipsize(r.last(), lastLimit);
    return alignedColumns(rows);
}

int listCommand(const QStringList &args)
{
    const QString cmd = QStringLiteral("list");
    QCommandLineParser parser;
    Common common;
    parser.setApplicationDescription(QStringLiteral("Lists the sessions of the running Tether server. Also `tether ls`, as in tmux."));
    const QCommandLineOption json(QStringLiteral("json"), QStringLiteral("Print the API's JSON ({\"sessions\": [...]})."));
    parser.addOption(json);
    const QCommandLineOption tsv(QStringLiteral("tsv"),
                                 QStringLiteral("Print one session a line, for scripts and shell completion: id, name, state and title, "
                                                "separated by tabs. The name is as it is typed (empty when none); the title is shown "
                                                "as the table shows it (control, bidi and invisible characters escaped)."));
    parser.addOption(tsv);
    int status = kExitOk;
    ServerEndpoint ep;
    if (!parse(parser, common, cmd, args, &status) || !endpoint(parser, common, cmd, &ep, &status))
        return status;
    if (!parser.positionalArguments().isEmpty())
        return fail(cmd, QStringLiteral("unexpected argument \"%1\"").arg(parser.positionalArguments().first()), kExitUsage);
    if (parser.isSet(json) && parser.isSet(tsv))
        return fail(cmd, QStringLiteral("--json and --tsv print the list in two ways: give one"), kExitUsage);
    ApiClient api(ep);
    return runAsync([&](std::function<void(int)> done) {
        api.get(QStringLiteral("api/sessions"), [&, done](const ApiReply &r) {
            if (r.status != 200)
                return done(apiFailure(cmd, r));
            if (parser.isSet(tsv)) {
                std::fputs(tsvLines(r.json().value(QStringLiteral("sessions")).toArray()).toUtf8().constData(), stdout);
            } else if (parser.isSet(json)) {
                QByteArray body = r.body;
                if (!body.endsWith('\n'))
                    body += '\n';
                std::fwrite(body.constData(), 1, size_t(body.size()), stdout);
            } else {
                const QJsonArray sessions = r.json().value(QStringLiteral("sessions")).toArray();
                if (sessions.isEmpty())
                    std::fputs("no sessions\n", stdout);
                else
                    std::fputs(table(sessions, terminalColumns(STDOUT_FILENO)).toUtf8().constData(), stdout);
            }
            std::fflush(stdout);
            done(kExitOk);
        });
    });
}

} // namespace Cli
} // namespace Tether
