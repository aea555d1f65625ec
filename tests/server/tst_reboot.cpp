// SPDX-License-Identifier: GPL-2.0-or-later
// A simulated reboot (issue 24; docs/protocol.md, "Ended sessions"): a real
// `tether serve` runs a bash in a real PTY; the server is SIGKILLed and the
// shell killed too (every process gone, the state directory kept), and the
// boot id changes (TETHER_BOOT_ID_FILE). A new server lists the session as
// ended by reboot, serves the screen a viewer last saw, refuses an attach
// with 4411, revives it in the same directory with the old output above
// the marker line (`tether revive NAME`), and forgets another on DELETE.
#include "serveprocess.h"
#include "servertestutil.h"
#include "vtrender.h"

#include <QFileInfo>
#include <QTest>

#include <csignal>
#include <sys/stat.h>

using namespace ServerTest;

namespace {
constexpr int kCols = 60;
constexpr int kRows = 12;

void writeFile(const QString &path, const QByteArray &data)
{
    QFile f(path);
    if (f.open(QIODevice::WriteOnly | QIODevice::Truncate))
        f.write(data);
}

QString createSession(const ServeProcess &s, const QString &name, const QString &cwd)
{
    const QJsonObject body{{QStringLiteral("command"), QJsonArray{QStringLiteral("bash"), QStringLiteral("--norc"),
                                                                   QStringLiteral("--noprofile")}},
                           {QStringLiteral("cwd"), cwd},
                           {QStringLiteral("name"), name},
                           {QStringLiteral("cols"), kCols},
                           {QStringLiteral("rows"), kRows}};
    return s.http("POST", "/api/sessions", QJsonDocument(body).toJson(QJsonDocument::Compact))
        .json()
        .value(QStringLiteral("id"))
        .toString();
}

/// The record of `id` on disk as the JSON object it is (empty when none).
QJsonObject recordOf(const QString &stateDir, const QString &id)
{
    QFile f(stateDir + QStringLiteral("/tether/sessions/") + id + QStringLiteral(".json"));
    if (!f.open(QIODevice::ReadOnly))
        return {};
    return QJsonDocument::fromJson(f.readAll()).object();
}

QByteArray savedScreen(const QJsonObject &record)
{
    return QByteArray::fromBase64(record.value(QStringLiteral("screen")).toString().toLatin1());
}

QJsonObject findIn(const QJsonArray &sessions, const QString &id)
{
    for (const QJsonValue &v : sessions)
        if (v.toObject().value(QStringLiteral("id")).toString() == id)
            return v.toObject();
    return {};
}
} // namespace

class TestReboot : public QObject
{
    Q_OBJECT
private Q_SLOTS:
    void initTestCase() { registerProcessTypes(); }
    void simulatedRebootKeepsTheRecord();
    void aRecordWhoseNameIsTooLongIsRevivable();
};

void TestReboot::simulatedRebootKeepsTheRecord()
{
    if (tetherBinary().isEmpty())
        QSKIP("no tether executable in this build");
    QTemporaryDir box;
    const QString stateDir = box.path() + QStringLiteral("/state");
    const QString bootFile = box.path() + QStringLiteral("/boot_id");
    const QString work = box.path() + QStringLiteral("/work");
    QVERIFY(QDir().mkpath(work));
    writeFile(bootFile, "11111111-before-the-reboot\n");
    const QStringList env{QStringLiteral("XDG_STATE_HOME=") + stateDir, QStringLiteral("TETHER_BOOT_ID_FILE=") + bootFile};

    QString id, otherId, loginId;
    QStringList loginCommand;
    TestUtil::VtRender seen(kCols, kRows); // what a viewer that never left shows
    seen.keepScrollback(false);
    {
        ServeProcess s1;
        s1.proc.setProcessEnvironment(s1.environment(env));
        QVERIFY(s1.start());
        id = createSession(s1, QStringLiteral("job"), work);
        otherId = createSession(s1, QStringLiteral("other"), work);
        QVERIFY(!id.isEmpty() && !otherId.isEmpty());
        const qint64 shellPid = qint64(s1.session(id).value(QStringLiteral("pid")).toDouble());
        const qint64 otherPid = qint64(s1.session(otherId).value(QStringLiteral("pid")).toDouble());
        QVERIFY(shellPid > 0 && otherPid > 0);
        // The default command: the user's login shell.
        loginId = s1.http("POST", "/api/sessions",
                          QJsonDocument(QJsonObject{{QStringLiteral("name"), QStringLiteral("login")},
                                                    {QStringLiteral("cwd"), work}})
                              .toJson(QJsonDocument::Compact))
                      .json()
                      .value(QStringLiteral("id"))
                      .toString();
        QVERIFY(!loginId.isEmpty());
        const QJsonObject login = s1.session(loginId);
        const qint64 loginPid = qint64(login.value(QStringLiteral("pid")).toDouble());
        for (const QJsonValue &a : login.value(QStringLiteral("command")).toArray())
            loginCommand << a.toString();
        QVERIFY(loginPid > 0 && !loginCommand.isEmpty());

        WsClient viewer;
        viewer.open(s1.port, QStringLiteral("/ws/") + id, s1.key);
        QTRY_VERIFY_WITH_TIMEOUT(viewer.gotAttached(), 10000);
        QTRY_VERIFY_WITH_TIMEOUT(viewer.bytes.contains("$ "), 10000); // the prompt
        // 30 lines on 12 rows: most go to the scrollback.
        viewer.sendInput("mkdir -p sub; cd sub; seq -f before-%g 30\r");
        // The prompt after the output (shell-integration marks around it).
        QTRY_VERIFY2_WITH_TIMEOUT(viewer.bytes.indexOf("$ ", viewer.bytes.indexOf("before-30\r\n")) > 0,
                                  viewer.bytes.toPercentEncoding(" $-").constData(), 10000);
        // The record once it holds all of that (written when output is
        // quiet, rate-limited: within about 12 s).
        QTRY_VERIFY_WITH_TIMEOUT(savedScreen(recordOf(stateDir, id)).contains("before-30"), 30000);
        QVERIFY(recordOf(stateDir, id).value(QStringLiteral("cwd")).toString().endsWith(QLatin1String("/work/sub")));
        QTRY_VERIFY_WITH_TIMEOUT(!recordOf(stateDir, otherId).isEmpty(), 30000);
        // What was asked for is recorded: the login shell, as a login shell,
        // not the argv the shell integration ran it with.
        QTRY_VERIFY_WITH_TIMEOUT(!recordOf(stateDir, loginId).isEmpty(), 30000);
        QCOMPARE(recordOf(stateDir, loginId).value(QStringLiteral("command")).toArray().toVariantList(),
                 QJsonArray::fromStringList(loginCommand).toVariantList());
        QCOMPARE(recordOf(stateDir, loginId).value(QStringLiteral("login_shell")).toBool(), true);
        QCOMPARE(recordOf(stateDir, id).value(QStringLiteral("login_shell")).toBool(true), false);
        seen.feed(viewer.bytes);

        // Every process gone, the state directory kept: the host first
        // (nothing ends its sessions), then the shells.
        QVERIFY(::kill(pid_t(s1.proc.processId()), SIGKILL) == 0);
        QVERIFY(s1.waitFinished());
        ::kill(pid_t(shellPid), SIGKILL);
        ::kill(pid_t(otherPid), SIGKILL);
        ::kill(pid_t(loginPid), SIGKILL);
    }
    writeFile(bootFile, "22222222-after-the-reboot\n");

    ServeProcess s2;
    s2.proc.setProcessEnvironment(s2.environment(env));
    // Read by a login bash only (~/.bashrc by an interactive one).
    writeFile(s2.dir.path() + QStringLiteral("/home/.bash_profile"), "echo login-profile-read\n");
    QVERIFY(s2.start());
    const QJsonArray list = s2.http("GET", "/api/sessions").json().value(QStringLiteral("sessions")).toArray();
    const QJsonObject ended = findIn(list, id);
    QCOMPARE(ended.value(QStringLiteral("state")).toString(), QStringLiteral("ended"));
    QCOMPARE(ended.value(QStringLiteral("ended")).toString(), QStringLiteral("reboot"));
    QCOMPARE(ended.value(QStringLiteral("name")).toString(), QStringLiteral("job"));
    QVERIFY(ended.value(QStringLiteral("cwd")).toString().endsWith(QLatin1String("/work/sub")));
    QVERIFY(ended.value(QStringLiteral("pid")).isNull());
    QCOMPARE(findIn(list, otherId).value(QStringLiteral("state")).toString(), QStringLiteral("ended"));
    QCOMPARE(s2.session(id).value(QStringLiteral("ended")).toString(), QStringLiteral("reboot"));
    // Records are the user's alone.
    struct stat st {};
    QVERIFY(::stat(QFile::encodeName(stateDir + QStringLiteral("/tether/sessions/") + id + QStringLiteral(".json")).constData(), &st) == 0);
    QCOMPARE(st.st_mode & 0777, mode_t(0600));
    QVERIFY(::stat(QFile::encodeName(stateDir + QStringLiteral("/tether/sessions")).constData(), &st) == 0);
    QCOMPARE(st.st_mode & 0777, mode_t(0700));

    const TetherRun listed = runTether(s2, {QStringLiteral("list")});
    QCOMPARE(listed.code, 0);
    QVERIFY2(listed.out.contains("ended by reboot"), listed.out.constData());

    // The saved screen is the last screen the viewer saw, scrollback included.
    const HttpReply screen = s2.http("GET", "/api/sessions/" + id.toLatin1() + "/screen");
    QCOMPARE(screen.status, 200);
    TestUtil::VtRender saved(kCols, kRows);
    saved.keepScrollback(false);
    saved.feed(screen.body);
    QVERIFY2(saved.text() == seen.text(), qPrintable(QStringLiteral("saved:\n%1\nseen:\n%2").arg(saved.text(), seen.text())));
    QCOMPARE(saved.scrollback(), seen.scrollback());
    QVERIFY(seen.scrollback().contains(QStringLiteral("before-1")));

    // Attaching is refused with a reason; input and rename too.
    WsClient refused;
    refused.open(s2.port, QStringLiteral("/ws/") + id, s2.key);
    QTRY_VERIFY_WITH_TIMEOUT(refused.disconnected, 10000);
    QCOMPARE(refused.closeCode, 4411);
    QCOMPARE(refused.closeReason, QStringLiteral("session ended by reboot"));
    QCOMPARE(s2.http("POST", "/api/sessions/" + id.toLatin1() + "/input", "{\"data\":\"x\"}").status, 409);

    // Revive by name: the same command in the same directory, the old
    // output above the marker line. A live session took the name meanwhile:
    // `revive NAME` still means the ended one, which comes back unnamed.
    const QString live = createSession(s2, QStringLiteral("job"), work);
    QVERIFY(!live.isEmpty());
    const TetherRun revived = runTether(s2, {QStringLiteral("revive"), QStringLiteral("job")});
    QVERIFY2(revived.code == 0, revived.err.constData());
    const QString newId = QString::fromLatin1(revived.out.trimmed());
    QVERIFY(!newId.isEmpty() && newId != id);
    const QJsonObject fresh = s2.session(newId);
    QCOMPARE(fresh.value(QStringLiteral("state")).toString(), QStringLiteral("running"));
    QCOMPARE(fresh.value(QStringLiteral("name")).toString(), QString());
    QCOMPARE(s2.session(live).value(QStringLiteral("state")).toString(), QStringLiteral("running"));
    QVERIFY(fresh.value(QStringLiteral("cwd")).toString().endsWith(QLatin1String("/work/sub")));
    QCOMPARE(s2.http("GET", "/api/sessions/" + id.toLatin1()).status, 404); // revived: no longer listed as ended
    // The file goes on the record store's I/O thread, after the reply
    // (records are written and removed off the event loop, in order).
    QTRY_VERIFY_WITH_TIMEOUT(recordOf(stateDir, id).isEmpty(), 10000);
    WsClient viewer;
    viewer.open(s2.port, QStringLiteral("/ws/") + newId, s2.key);
    QTRY_VERIFY_WITH_TIMEOUT(viewer.bytes.contains("--- tether: session ended by reboot"), 10000);
    QTRY_VERIFY_WITH_TIMEOUT(viewer.bytes.indexOf("$ ", viewer.bytes.indexOf("--- tether:")) > 0, 10000);
    viewer.sendInput("pwd\r");
    QTRY_VERIFY_WITH_TIMEOUT(viewer.bytes.contains("/work/sub\r\n"), 10000);
    // As a terminal shows it: the saved lines, the prompt, the marker on
    // the line below it, then the new shell.
    TestUtil::VtRender shown(kCols, kRows);
    shown.keepScrollback(false);
    shown.feed(viewer.bytes);
    const QStringList all = shown.scrollback() + shown.text().split(QLatin1Char('\n'));
    const int markerRow = int(all.indexOf(QRegularExpression(QStringLiteral("^--- tether: session ended by reboot.*"))));
    QVERIFY2(markerRow > 1 && all.at(markerRow - 1) == QLatin1String("$") && all.at(markerRow - 2) == QLatin1String("before-30"),
             qPrintable(all.join(QLatin1Char('\n'))));
    const qsizetype old = viewer.bytes.indexOf("before-30");
    const qsizetype marker = viewer.bytes.indexOf("--- tether: session ended by reboot");
    const qsizetype pwd = viewer.bytes.indexOf("/work/sub\r\n");
    QVERIFY2(old >= 0 && old < marker && marker < pwd, qPrintable(QStringLiteral("%1 %2 %3").arg(old).arg(marker).arg(pwd)));

    // The login shell comes back as a login shell.
    if (QFileInfo(loginCommand.first()).fileName() == QLatin1String("bash")) {
        const HttpReply again = s2.http("POST", "/api/sessions/" + loginId.toLatin1() + "/revive");
        QVERIFY2(again.status == 201, again.body.constData());
        const QString loginAgain = again.json().value(QStringLiteral("id")).toString();
        QCOMPARE(s2.session(loginAgain).value(QStringLiteral("command")).toArray().toVariantList(),
                 QJsonArray::fromStringList(loginCommand).toVariantList());
        WsClient loginViewer;
        loginViewer.open(s2.port, QStringLiteral("/ws/") + loginAgain, s2.key);
        QTRY_VERIFY2_WITH_TIMEOUT(loginViewer.bytes.contains("login-profile-read"),
                                  loginViewer.bytes.toPercentEncoding(" $-").constData(), 10000);
    } else {
        qWarning("the login shell is %s, not bash: its revival as a login shell is not checked",
                 qPrintable(loginCommand.first()));
    }

    // DELETE forgets the other one.
    QCOMPARE(s2.http("DELETE", "/api/sessions/" + otherId.toLatin1()).status, 204);
    QCOMPARE(s2.http("GET", "/api/sessions/" + otherId.toLatin1()).status, 404);
    QTRY_VERIFY_WITH_TIMEOUT(recordOf(stateDir, otherId).isEmpty(), 10000); // removed off the event loop, as above
    QCOMPARE(s2.http("DELETE", "/api/sessions/" + otherId.toLatin1()).status, 404);
    QCOMPARE(s2.http("POST", "/api/sessions/" + otherId.toLatin1() + "/revive").status, 404);
    QCOMPARE(s2.http("POST", "/api/sessions/" + newId.toLatin1() + "/revive").status, 409); // running
    // A live session's screen is its screen now (the dashboard's miniatures).
    const HttpReply liveScreen = s2.http("GET", "/api/sessions/" + newId.toLatin1() + "/screen");
    QCOMPARE(liveScreen.status, 200);
    QVERIFY(!liveScreen.header("X-Tether-Offset").isEmpty());
}

void TestReboot::aRecordWhoseNameIsTooLongIsRevivable()
{
    // A record whose name breaks today's rules for a name (longer than 64
    // characters: written by another version, or by hand) is listed as an
    // ended session under that name; `tether revive NAME` and POST
    // .../revive by id must then revive it, not fail with 422 "name is
    // longer than 64 characters": it comes back unnamed, as when a live
    // session took its name.
    if (tetherBinary().isEmpty())
        QSKIP("no tether executable in this build");
    QTemporaryDir box;
    const QString stateDir = box.path() + QStringLiteral("/state");
    const QString records = stateDir + QStringLiteral("/tether/sessions");
    QVERIFY(QDir().mkpath(records));
    const QString longName = QStringLiteral("nightly build of the release branch with every sanitizer on, part ");
    QVERIFY(longName.size() + 1 > 64);
    auto writeRecord = [&](const QString &id, const QString &name) {
        const QJsonObject o{{QStringLiteral("version"), 1},
                            {QStringLiteral("id"), id},
                            {QStringLiteral("name"), name},
                            {QStringLiteral("command"), QJsonArray{QStringLiteral("/bin/sh")}},
                            {QStringLiteral("cwd"), box.path()},
                            {QStringLiteral("title"), QString()},
                            {QStringLiteral("created"), QStringLiteral("2026-01-01T12:00:00Z")},
                            {QStringLiteral("saved"), QStringLiteral("2026-01-01T12:05:00Z")},
                            {QStringLiteral("boot_id"), QStringLiteral("another-boot")},
                            {QStringLiteral("shutdown"), false},
                            {QStringLiteral("cols"), 80},
                            {QStringLiteral("rows"), 24},
                            {QStringLiteral("scrollback_lines"), 0},
                            {QStringLiteral("screen"), QString::fromLatin1(QByteArray("$ make\r\n").toBase64())}};
        writeFile(records + QLatin1Char('/') + id + QStringLiteral(".json"), QJsonDocument(o).toJson());
    };
    const QString byName = QStringLiteral("AAAAAAAAAAAAAAAAAAAAA1");
    const QString byId = QStringLiteral("AAAAAAAAAAAAAAAAAAAAA2");
    writeRecord(byName, longName + QLatin1Char('1'));
    writeRecord(byId, longName + QLatin1Char('2'));

    ServeProcess s;
    s.proc.setProcessEnvironment(s.environment({QStringLiteral("XDG_STATE_HOME=") + stateDir}));
    QVERIFY(s.start());
    const QJsonArray list = s.http("GET", "/api/sessions").json().value(QStringLiteral("sessions")).toArray();
    QCOMPARE(findIn(list, byName).value(QStringLiteral("state")).toString(), QStringLiteral("ended"));
    QCOMPARE(findIn(list, byName).value(QStringLiteral("name")).toString(), longName + QLatin1Char('1'));

    // By its name, with the CLI.
    const TetherRun revived = runTether(s, {QStringLiteral("revive"), longName + QLatin1Char('1')});
    QVERIFY2(revived.code == 0, revived.err.constData());
    const QString newId = QString::fromLatin1(revived.out.trimmed());
    const QJsonObject fresh = s.session(newId);
    QCOMPARE(fresh.value(QStringLiteral("state")).toString(), QStringLiteral("running"));
    QCOMPARE(fresh.value(QStringLiteral("name")).toString(), QString()); // not a name a session can have
    QCOMPARE(s.http("GET", "/api/sessions/" + byName.toLatin1()).status, 404); // no longer ended

    // By its id, through the API.
    const HttpReply again = s.http("POST", "/api/sessions/" + byId.toLatin1() + "/revive");
    QVERIFY2(again.status == 201, again.body.constData());
    QCOMPARE(again.json().value(QStringLiteral("revived_from")).toString(), byId);
    QCOMPARE(again.json().value(QStringLiteral("name")).toString(), QString());
    WsClient viewer;
    viewer.open(s.port, QStringLiteral("/ws/") + again.json().value(QStringLiteral("id")).toString(), s.key);
    QTRY_VERIFY_WITH_TIMEOUT(viewer.bytes.contains("--- tether: session ended by reboot"), 10000);
}

QTEST_GUILESS_MAIN(TestReboot)
#include "tst_reboot.moc"
