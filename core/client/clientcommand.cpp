// SPDX-License-Identifier: GPL-2.0-or-later
#include "clientcommand.h"
#include "commandline.h"
#include "apiclient.h"
#include "displaytext.h"
#include "sessionlistmodel.h"
#include "sessiontext.h"
#include "shellwords.h"
#include "ttyattach.h"

#include <QCommandLineParser>
#include <QCoreApplication>
#include <QDir>
#include <QJsonArray>
#include <QJsonDocument>
#include <QElapsedTimer>
#include <QHash>
#include <QTimer>
#include <QUrlQuery>
#include <QVector>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <sys/ioctl.h>
#include <unistd.h>

namespace Tether {

namespace {

// Exit statuses (documented in clientcommand.h and in --help).
constexpr int kExitOk = ClientExit::Ok;
constexpr int kExitError = ClientExit::Error;
constexpr int kExitUsage = ClientExit::Usage;
constexpr int kExitNotFound = ClientExit::NotFound;

const char kNotRunning[] = "Tether is not running: start it with `tether` or `tether serve`";

/// One line on stderr. Through DisplayText::escape(): errors quote what the
/// user typed and what a session controls (names, the server's reasons).
void printErr(const QString &text)
{
    std::fprintf(stderr, "%s\n", qPrintable(DisplayText::escape(text)));
    std::fflush(stderr);
}

int fail(const QString &command, const QString &text, int status = kExitError)
{
    printErr(QStringLiteral("tether %1: %2").arg(command, text));
    return status;
}

/// Runs the event loop until `body` (which starts asynchronous work) calls
/// done(status).
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

/// The session's name, shell-quoted (a name with a space stays one column
/// and can be typed back: `tether attach 'my build'`); "-" when it has none.
QString nameText(const QJsonObject &s)
{
    const QString name = s.value(QStringLiteral("name")).toString();
    return name.isEmpty() ? QStringLiteral("-") : ShellWords::quote({name});
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

/// Columns of the terminal on `fd` (TIOCGWINSZ); 0 when it is not a
/// terminal or reports no size.
int terminalColumns(int fd)
{
    if (!::isatty(fd))
        return 0;
    struct winsize ws {};
    if (::ioctl(fd, TIOCGWINSZ, &ws) != 0)
        return 0;
    return ws.ws_col;
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

/// `rows` (the first one the header) as text: columns padded to their
/// widest cell plus two spaces, the last one not padded; every cell escaped
/// (escapeCells()).
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

/// The `tether list` table. The last column (COMMAND/TITLE) is cut to what
/// is left of `columns` (the terminal's width) after the other columns, at
/// least kMinLastColumn (its header's width), or at kMaxLastColumn characters when `columns` is 0
/// (not a terminal): a program may set a 4096-byte title
/// (TerminalState::kMaxTitle), which filled whole screens. NAME is cut at
/// kMaxName characters (a long name widened it without limit), SHELL (the
/// running or last command and its status, shellText()) at kMaxShell, so
/// that ID, a 24-character NAME, STATE, SHELL and the last column still fit
/// 80 columns. In a
/// terminal too narrow for every column, VIEWERS, EXPIRES, SIZE, PROGRAM,
/// ATTACHED, SHELL and STATE are left out, in that order, until the table
/// fits: at 80 columns lines were 87-91 characters and wrapped (issue 29);
/// ID, NAME and COMMAND/TITLE always stay.
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

/// Shortest id prefix that kill and share act on (kMinActingPrefix): git's
/// shortest abbreviation of an object name (core.abbrev, at least 4). A
/// destructive or exposing command must not act on a guess: `tether kill Y`
/// ended whichever session's id happened to start with Y (found by a new
/// user).
constexpr int kMinActingPrefix = 4;
static_assert(kMinActingPrefix == 4, "the help texts of kill and share say 4");

/// The ID argument of kill and share (kMinActingPrefix).
const QString kActingIdHelp = QStringLiteral("The session: its full id, its name, or a unique prefix of its id of at least 4 characters.");

/// "ID (NAME)", or "ID" for a session without a name.
QString idAndName(const QJsonObject &s)
{
    const QString name = s.value(QStringLiteral("name")).toString();
    const QString sid = s.value(QStringLiteral("id")).toString();
    return name.isEmpty() ? sid : QStringLiteral("%1 (%2)").arg(sid, ShellWords::quote({name}));
}

/// Finds the session `arg` names: an exact id, else the session with that
/// name (names are unique, docs/protocol.md), else the one id starting with
/// it, if `arg` has at least `minPrefix` characters (kill, share:
/// kMinActingPrefix; attach, rename: any). Ids first: a name that happens to
/// equal another session's id never hides that session.
/// Returns kExitOk with *id; kExitNotFound when nothing matches; kExitUsage
/// when `arg` is a prefix of several ids, or one id's prefix shorter than
/// `minPrefix`: *error then lists the sessions it matches, ids and names.
/// A live session and an ended one (docs/protocol.md, "Ended sessions") may
/// have the same name: the live one is taken, or the ended one when
/// `preferEnded` (`tether revive`).
int resolveId(const QJsonArray &sessions, const QString &arg, int minPrefix, QString *id, QString *error,
              bool preferEnded = false)
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

bool terminalSize(int *cols, int *rows)
{
    for (int fd : {STDOUT_FILENO, STDIN_FILENO, STDERR_FILENO}) {
        if (RawTerminal::windowSize(fd, cols, rows))
            return true;
    }
    return false;
}


// --- command line --------------------------------------------------------------

const char kExitStatusHelp[] =
    "Exit status: 0 detached (detach key) or the process exited; 1 Tether not running,\n"
    "connection lost or another error; 2 usage error (an ambiguous ID too); 3 taken over\n"
    "by another viewer; 4 session not found or expired; 5 session killed or server\n"
    "shutting down; 128+N ended by signal N (SIGHUP, SIGINT, SIGTERM).";

struct Common {
    QCommandLineOption url{QStringLiteral("url"),
                           QStringLiteral("Server address (default: TETHER_URL, else the runtime file)."),
                           QStringLiteral("URL")};
    QCommandLineOption key{QStringLiteral("key"),
                           QStringLiteral("Access key (default: TETHER_KEY, else the runtime file)."),
                           QStringLiteral("KEY")};
    QCommandLineOption cacert{QStringLiteral("cacert"),
                              QStringLiteral("Also trust the PEM certificates in FILE for an https:// --url, e.g. "
                                             "the server's self-signed certificate (default: TETHER_CACERT)."),
                              QStringLiteral("FILE")};
};

/// Session ids are base64url and may start with '-' ("-x3Fq..."): such an
/// argument that is not one of the command's options is an ID, not an
/// unknown option. Moves it after a "--" so QCommandLineParser takes it as
/// positional; every positional argument goes there, in its order (`tether
/// rename -x3Fq build` keeps ID before NAME). `valueOptions` take a value
/// (the next argument unless written "--name=value").
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

} // namespace

namespace {

/// Parses `args` (argv without the subcommand); shows help and exits on
/// -h, --help or --help-all (helpRequested()), prints the version on
/// --version (as every entry point does: versionLine()).
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

/// Reports a failed API call and returns the exit status.
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

/// The start of a command on one session named by its first positional
/// argument (kill, rename): parses `args` (an ID may begin with '-'; help
/// exits), wants exactly `positionals` positional arguments (else
/// `countError`, a usage error) and finds the server. False with *status
/// when the command ends here.
/// The options every command has without a value (help, version), plus `extra`.
QStringList commonFlags(const QStringList &extra = {})
{
    return QStringList{QStringLiteral("-h"), QStringLiteral("--help"), QStringLiteral("-?"), QStringLiteral("--help-all"),
                       QStringLiteral("-v"), QStringLiteral("--version")}
        + extra;
}

/// The options every command has with a value (Common), plus `extra`.
QStringList commonValueOptions(const QStringList &extra = {})
{
    return QStringList{QStringLiteral("--url"), QStringLiteral("--key"), QStringLiteral("--cacert")} + extra;
}

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

/// Runs the event loop: finds the session `prefix` names (resolveId over
/// GET /api/sessions with `minPrefix`; its status and error when it finds
/// none), then `then(id, done)`.
int withSession(ApiClient &api, const QString &command, const QString &prefix, int minPrefix,
                const std::function<void(const QString &, std::function<void(int)>)> &then, bool preferEnded = false)
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

QCommandLineOption detachKeyOption()
{
    return QCommandLineOption(QStringLiteral("detach-key"),
                              QStringLiteral("Key that detaches: ^X for Ctrl-X, or none (default ^\\, Ctrl-\\, as dtach and "
                                             "abduco). Not ^[ (ESC starts every arrow and function key), nor ^M ^J ^I "
                                             "^H ^? (Enter, newline, Tab, Backspace)."),
                              QStringLiteral("KEY"), QStringLiteral("^\\"));
}

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

} // namespace

namespace {
/// The short names tmux users type (tmux's own aliases of attach-session
/// and list-sessions), and the commands they stand for.
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
