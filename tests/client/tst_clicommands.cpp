// SPDX-License-Identifier: GPL-2.0-or-later
// `tether send` and `tether wait` (issue 25) as a user runs them: the BUILT
// `tether` binary against a real `tether serve --port 0` whose bash sessions
// load the shipped shell integration; GET /api/sessions/{id}/commands and
// POST /api/sessions/{id}/input and their errors.
#include "serveprocess.h"

#include <QJsonArray>
#include <QProcess>
#include <QRegularExpression>
#include <QTest>

using namespace ServerTest;

namespace {

QString shellState(const ServeProcess &s, const QString &id)
{
    return s.session(id).value(QStringLiteral("shell")).toObject().value(QStringLiteral("state")).toString();
}

QJsonArray commands(const ServeProcess &s, const QString &id)
{
    return s.http("GET", "/api/sessions/" + id.toLatin1() + "/commands").json().value(QStringLiteral("commands")).toArray();
}

} // namespace

class TestCliCommands : public QObject
{
    Q_OBJECT
private Q_SLOTS:
    void initTestCase()
    {
        if (tetherBinary().isEmpty())
            QSKIP("the tether executable is not built in this tree (app/ skipped)");
    }

    void sendAndWait()
    {
        ServeProcess s;
        QVERIFY(s.start());
        const QString id = s.create({QStringLiteral("/bin/bash")});
        QVERIFY(!id.isEmpty());
        QTRY_COMPARE_WITH_TIMEOUT(shellState(s, id), QStringLiteral("prompt"), 20000);

        // Typed with no viewer attached; the command list has it.
        TetherRun r = runTether(s, {QStringLiteral("send"), id, QStringLiteral("--enter"), QStringLiteral("--"),
                                    QStringLiteral("echo"), QStringLiteral("hi")});
        QVERIFY2(r.code == 0, r.err.constData());
        QTRY_COMPARE_WITH_TIMEOUT(commands(s, id).size(), 1, 20000);
        QTRY_COMPARE_WITH_TIMEOUT(shellState(s, id), QStringLiteral("prompt"), 20000);
        const QJsonObject first = commands(s, id).first().toObject();
        QCOMPARE(first.value(QStringLiteral("command_line")).toString(), QStringLiteral("echo hi"));
        QCOMPARE(first.value(QStringLiteral("exit_status")).toInt(-1), 0);
        QCOMPARE(first.value(QStringLiteral("output_end")).toDouble() - first.value(QStringLiteral("output_start")).toDouble(),
                 4.0); // "hi\r\n"

        // send --wait: the status of the command it typed.
        r = runTether(s, {QStringLiteral("send"), id, QStringLiteral("--enter"), QStringLiteral("--wait"),
                          QStringLiteral("--"), QStringLiteral("sh -c 'exit 9'")});
        QVERIFY2(r.code == 9, r.err.constData());
        // wait at a prompt: the last status, at once.
        r = runTether(s, {QStringLiteral("wait"), id});
        QVERIFY2(r.code == 9, r.err.constData());
        // tether list: the last command and its status (SHELL).
        r = runTether(s, {QStringLiteral("list")});
        QCOMPARE(r.code, 0);
        QVERIFY2(r.out.startsWith("ID ") && r.out.contains("  SHELL  "), r.out.constData());
        QVERIFY2(r.out.contains("  exit 9: sh -c 'exit\u2026  "), r.out.constData()); // cut at 20 characters

        // A command that runs until it reads a line: --timeout gives up (124),
        // and wait returns its status once it ends.
        r = runTether(s, {QStringLiteral("send"), id, QStringLiteral("--enter"), QStringLiteral("--"),
                          QStringLiteral("read x; sh -c \"exit $x\"")});
        QCOMPARE(r.code, 0);
        QTRY_COMPARE_WITH_TIMEOUT(shellState(s, id), QStringLiteral("running"), 20000);
        r = runTether(s, {QStringLiteral("list")});
        QVERIFY2(QRegularExpression(QStringLiteral("  run \\d+s: read x;.*\u2026  ")).match(QString::fromUtf8(r.out)).hasMatch(),
                 r.out.constData());
        r = runTether(s, {QStringLiteral("wait"), QStringLiteral("--timeout"), QStringLiteral("1"), id});
        QVERIFY2(r.code == 124, r.err.constData());
        QProcess waiter;
        waiter.setProcessEnvironment(s.environment());
        waiter.start(tetherBinary(), {QStringLiteral("wait"), id});
        QVERIFY(waiter.waitForStarted(5000));
        QCOMPARE(runTether(s, {QStringLiteral("send"), id, QStringLiteral("--enter"), QStringLiteral("--"),
                               QStringLiteral("6")}).code, 0);
        // runTether() ran the event loop: the waiter may have finished in it
        // (waitForFinished() is then false at once).
        QVERIFY(waiter.state() == QProcess::NotRunning || waiter.waitForFinished(20000));
        QCOMPARE(waiter.exitStatus(), QProcess::NormalExit);
        QCOMPARE(waiter.exitCode(), 6);

        // The shell exits: the command it ended with has the session's status.
        r = runTether(s, {QStringLiteral("send"), id, QStringLiteral("--enter"), QStringLiteral("--wait"),
                          QStringLiteral("--"), QStringLiteral("exit 3")});
        QVERIFY2(r.code == 3, r.err.constData());
        QTRY_COMPARE_WITH_TIMEOUT(s.session(id).value(QStringLiteral("state")).toString(), QStringLiteral("exited"), 20000);
        r = runTether(s, {QStringLiteral("wait"), id});
        QVERIFY2(r.code == 3, r.err.constData());
        // Typing into an exited session: refused (409).
        r = runTether(s, {QStringLiteral("send"), id, QStringLiteral("--"), QStringLiteral("x")});
        QCOMPARE(r.code, 1);
        QVERIFY2(r.err.contains("exited"), r.err.constData());
    }

    /// Mute and "notify when the next command finishes" are the session's
    /// and survive `tether restart` (the restart in place's handover).
    void notifySettingsSurviveARestart()
    {
        ServeProcess s;
        QVERIFY(s.start());
        const QString id = s.create({QStringLiteral("/bin/cat")});
        QVERIFY(!id.isEmpty());
        const QJsonObject both{{QStringLiteral("muted"), true}, {QStringLiteral("next"), true},
                               {QStringLiteral("activity"), true}, {QStringLiteral("silence"), 600}};
        const HttpReply r = s.http("PATCH", "/api/sessions/" + id.toLatin1(),
                                   R"({"notify": {"muted": true, "next": true, "activity": true, "silence": 600}})");
        QCOMPARE(r.status, 200);
        QCOMPARE(r.json().value(QStringLiteral("notify")).toObject(), both);
        const QString instance = s.http("GET", "/api/restart").json().value(QStringLiteral("instance")).toString();
        const TetherRun restart = runTether(s, {QStringLiteral("restart")});
        QVERIFY2(restart.code == 0, restart.err.constData());
        QTRY_VERIFY_WITH_TIMEOUT(s.http("GET", "/api/restart").json().value(QStringLiteral("instance")).toString() != instance,
                                 20000);
        QCOMPARE(s.session(id).value(QStringLiteral("notify")).toObject(), both);
        QCOMPARE(s.http("PATCH", "/api/sessions/" + id.toLatin1(), R"({"notify": {"muted": false}})").status, 200);
        QCOMPARE(s.session(id).value(QStringLiteral("notify")).toObject(),
                 (QJsonObject{{QStringLiteral("muted"), false}, {QStringLiteral("next"), true},
                              {QStringLiteral("activity"), true}, {QStringLiteral("silence"), 600}}));
    }

    /// GET /api/sessions/{id}/commands/{n}/output: a finished command's
    /// output bytes exactly as the shell wrote them (escapes included), and
    /// the endpoint's errors: a command still running (409), one whose
    /// output the ring no longer holds (410), no such command or session
    /// (404), another method (405).
    void commandOutput()
    {
        ServeProcess s;
        QVERIFY(s.start({QStringLiteral("--buffer-size"), QStringLiteral("64K")}));
        const QString id = s.create({QStringLiteral("/bin/bash")});
        QVERIFY(!id.isEmpty());
        QTRY_COMPARE_WITH_TIMEOUT(shellState(s, id), QStringLiteral("prompt"), 20000);
        const QByteArray base = "/api/sessions/" + id.toLatin1() + "/commands/";

        QCOMPARE(runTether(s, {QStringLiteral("send"), id, QStringLiteral("--enter"), QStringLiteral("--wait"),
                               QStringLiteral("--"), QStringLiteral("printf '\\e[31mred\\e[0m\\nplain\\n'")})
                     .code,
                 0);
        QJsonObject first = commands(s, id).last().toObject();
        const int n = first.value(QStringLiteral("id")).toInt();
        HttpReply r = s.http("GET", base + QByteArray::number(n) + "/output");
        QCOMPARE(r.status, 200);
        QCOMPARE(r.header("Content-Type"), QByteArray("application/octet-stream"));
        QCOMPARE(r.body, QByteArray("\x1b[31mred\x1b[0m\r\nplain\r\n"));
        QCOMPARE(double(r.body.size()), first.value(QStringLiteral("output_end")).toDouble()
                                            - first.value(QStringLiteral("output_start")).toDouble());

        // A command without output: 200, empty.
        QCOMPARE(runTether(s, {QStringLiteral("send"), id, QStringLiteral("--enter"), QStringLiteral("--wait"),
                               QStringLiteral("--"), QStringLiteral("true")}).code,
                 0);
        r = s.http("GET", base + QByteArray::number(n + 1) + "/output");
        QCOMPARE(r.status, 200);
        QVERIFY(r.body.isEmpty());

        // Still running: 409 naming it.
        QCOMPARE(runTether(s, {QStringLiteral("send"), id, QStringLiteral("--enter"), QStringLiteral("--"),
                               QStringLiteral("read x")}).code,
                 0);
        QTRY_COMPARE_WITH_TIMEOUT(shellState(s, id), QStringLiteral("running"), 20000);
        r = s.http("GET", base + QByteArray::number(n + 2) + "/output");
        QCOMPARE(r.status, 409);
        QVERIFY2(r.json().value(QStringLiteral("error")).toString().contains(QStringLiteral("still running")), r.body);
        QCOMPARE(runTether(s, {QStringLiteral("send"), id, QStringLiteral("--enter"), QStringLiteral("--"),
                               QStringLiteral("5")}).code,
                 0);
        QTRY_COMPARE_WITH_TIMEOUT(shellState(s, id), QStringLiteral("prompt"), 20000);

        // 100 KiB of output through a 64 KiB ring: the first command's output
        // is gone (410), the last one's start too (it is larger than the ring).
        QCOMPARE(runTether(s, {QStringLiteral("send"), id, QStringLiteral("--enter"), QStringLiteral("--wait"),
                               QStringLiteral("--"), QStringLiteral("head -c 102400 /dev/zero | tr '\\0' x")})
                     .code,
                 0);
        const int big = commands(s, id).last().toObject().value(QStringLiteral("id")).toInt();
        QCOMPARE(big, n + 3);
        for (int k : {n, big}) {
            r = s.http("GET", base + QByteArray::number(k) + "/output");
            QCOMPARE(r.status, 410);
            QVERIFY2(r.json().value(QStringLiteral("error")).toString().contains(QStringLiteral("no longer retained")),
                     r.body);
        }

        QCOMPARE(s.http("GET", base + "999/output").status, 404);
        QCOMPARE(s.http("GET", base + "0/output").status, 404);
        QCOMPARE(s.http("GET", base + "+1/output").status, 404);
        QCOMPARE(s.http("GET", base + "x/output").status, 404);
        QCOMPARE(s.http("GET", "/api/sessions/nope/commands/1/output").status, 404);
        QCOMPARE(s.http("POST", base + "1/output", "{}").status, 405);
    }

    void waitWithoutIntegrationAndErrors()
    {
        ServeProcess s;
        QVERIFY(s.start());
        const QString cat = s.create({QStringLiteral("/bin/cat")});
        QVERIFY(!cat.isEmpty());
        TetherRun r = runTether(s, {QStringLiteral("wait"), cat});
        QCOMPARE(r.code, 1);
        QVERIFY2(r.err.contains("no shell integration"), r.err.constData());
        QCOMPARE(shellState(s, cat), QStringLiteral("unknown"));
        r = runTether(s, {QStringLiteral("wait"), QStringLiteral("nobody")});
        QCOMPARE(r.code, 4);
        r = runTether(s, {QStringLiteral("send"), cat});
        QCOMPARE(r.code, 2);
        // --wait where no command can ever finish: an error at once, and
        // nothing typed (it typed, then waited forever: a new user's tryout).
        const double before = s.session(cat).value(QStringLiteral("offset")).toDouble();
        r = runTether(s, {QStringLiteral("send"), cat, QStringLiteral("--enter"), QStringLiteral("--wait"),
                          QStringLiteral("--"), QStringLiteral("true")});
        QCOMPARE(r.code, 1);
        QVERIFY2(r.err.contains("no shell integration"), r.err.constData());
        QCOMPARE(s.session(cat).value(QStringLiteral("offset")).toDouble(), before);
        // --wait without --enter: no command starts, a usage error.
        r = runTether(s, {QStringLiteral("send"), cat, QStringLiteral("--wait"), QStringLiteral("--"),
                          QStringLiteral("true")});
        QCOMPARE(r.code, 2);
        QVERIFY2(r.err.contains("--wait needs --enter"), r.err.constData());
        // cat echoes what is typed: the text arrives as typed, with no viewer.
        QCOMPARE(runTether(s, {QStringLiteral("send"), cat, QStringLiteral("--"), QStringLiteral("a;b"),
                               QStringLiteral("c")}).code, 0);
        QTRY_VERIFY(s.session(cat).value(QStringLiteral("offset")).toDouble() >= 5);

        // The endpoints' errors.
        QCOMPARE(s.http("GET", "/api/sessions/nope/commands").status, 404);
        QCOMPARE(s.http("POST", "/api/sessions/" + cat.toLatin1() + "/commands", "{}").status, 405);
        QCOMPARE(s.http("POST", "/api/sessions/" + cat.toLatin1() + "/input", "[1]").status, 400);
        QCOMPARE(s.http("POST", "/api/sessions/" + cat.toLatin1() + "/input", "{\"data\": 5}").status, 400);
        QCOMPARE(s.http("POST", "/api/sessions/nope/input", "{\"data\": \"x\"}").status, 404);
        QCOMPARE(s.http("GET", "/api/sessions/" + cat.toLatin1() + "/input").status, 405);
        const QJsonObject list = s.http("GET", "/api/sessions/" + cat.toLatin1() + "/commands").json();
        QCOMPARE(list.value(QStringLiteral("session")).toString(), cat);
        QVERIFY(list.value(QStringLiteral("commands")).toArray().isEmpty());
    }
};

QTEST_GUILESS_MAIN(TestCliCommands)
#include "tst_clicommands.moc"
