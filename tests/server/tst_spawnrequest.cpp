// SPDX-License-Identifier: GPL-2.0-or-later
// parseSpawnRequest(): the body of POST /api/sessions against what
// docs/protocol.md ("Endpoints") accepts and the 400 texts it answers with.
#include "spawnrequest.h"

#include <QTest>

using namespace Tether;

class TestSpawnRequest : public QObject
{
    Q_OBJECT
private Q_SLOTS:
    void accepted_data();
    void accepted();
    void rejected_data();
    void rejected();
    void name_data();
    void name();
};

void TestSpawnRequest::accepted_data()
{
    QTest::addColumn<QByteArray>("body");
    QTest::addColumn<QStringList>("defaultCommand");
    QTest::addColumn<QStringList>("argv");
    QTest::addColumn<QString>("cwd");
    QTest::addColumn<int>("cols");
    QTest::addColumn<int>("rows");

    const QStringList none;
    const QStringList configured{QStringLiteral("htop"), QStringLiteral("-d"), QStringLiteral("10")};
    QTest::newRow("empty body: login shell, home, 80x24") << QByteArray() << none << none << QString() << 80 << 24;
    QTest::newRow("whitespace-only body") << QByteArray(" \r\n\t ") << none << none << QString() << 80 << 24;
    QTest::newRow("empty body: the configured command") << QByteArray() << configured << configured
                                                        << QString() << 80 << 24;
    QTest::newRow("empty object") << QByteArray("{}") << configured << configured << QString() << 80 << 24;
    QTest::newRow("every field") << QByteArray(R"({"command":["prog","arg"],"cwd":"/tmp","cols":100,"rows":30})")
                                 << configured << QStringList{"prog", "arg"} << QString("/tmp") << 100 << 30;
    QTest::newRow("null fields are defaults")
        << QByteArray(R"({"command":null,"cwd":null,"cols":null,"rows":null})") << configured << configured
        << QString() << 80 << 24;
    QTest::newRow("unknown fields ignored (env is not part of the API)")
        << QByteArray(R"({"env":{"A":"1"},"shell":true,"argv":5})") << none << none << QString() << 80 << 24;
    QTest::newRow("whitespace around the JSON") << QByteArray("  {\"cols\":81}\n") << none << none
                                                << QString() << 81 << 24;
    QTest::newRow("command: one element") << QByteArray(R"({"command":["/bin/true"]})") << configured
                                          << QStringList{"/bin/true"} << QString() << 80 << 24;
    QTest::newRow("command: empty later argument") << QByteArray(R"({"command":["echo",""]})") << none
                                                   << QStringList{"echo", ""} << QString() << 80 << 24;
    QTest::newRow("command: non-ASCII and escapes")
        << QByteArray("{\"command\":[\"echo\",\"caf\xc3\xa9\",\"a\\tb\",\"\\u20ac\"]}") << none
        << QStringList{"echo", QString::fromUtf8("caf\xc3\xa9"), "a\tb", QString::fromUtf8("\xe2\x82\xac")}
        << QString() << 80 << 24;
    QTest::newRow("command: spaces stay in one argument (no shell)")
        << QByteArray(R"({"command":["sh","-c","echo a b"]})") << none << QStringList{"sh", "-c", "echo a b"}
        << QString() << 80 << 24;
    QTest::newRow("cwd: root") << QByteArray(R"({"cwd":"/"})") << none << none << QString("/") << 80 << 24;
    QTest::newRow("cwd: empty string is the home directory") << QByteArray(R"({"cwd":""})") << none << none
                                                             << QString() << 80 << 24;
    QTest::newRow("cwd: not checked for existence here") << QByteArray(R"({"cwd":"/no/such/dir"})") << none
                                                         << none << QString("/no/such/dir") << 80 << 24;
    QTest::newRow("cols: lower bound") << QByteArray(R"({"cols":1})") << none << none << QString() << 1 << 24;
    QTest::newRow("cols: upper bound") << QByteArray(R"({"cols":1000})") << none << none << QString() << 1000 << 24;
    QTest::newRow("rows: lower bound") << QByteArray(R"({"rows":1})") << none << none << QString() << 80 << 1;
    QTest::newRow("rows: upper bound") << QByteArray(R"({"rows":1000})") << none << none << QString() << 80 << 1000;
    QTest::newRow("cols: 120.0 is an integer") << QByteArray(R"({"cols":120.0})") << none << none << QString()
                                               << 120 << 24;
    QTest::newRow("rows: exponent form") << QByteArray(R"({"rows":5e1})") << none << none << QString() << 80 << 50;
}

void TestSpawnRequest::accepted()
{
    QFETCH(QByteArray, body);
    QFETCH(QStringList, defaultCommand);
    QFETCH(QStringList, argv);
    QFETCH(QString, cwd);
    QFETCH(int, cols);
    QFETCH(int, rows);

    const SpawnRequest r = parseSpawnRequest(body, defaultCommand);
    QVERIFY2(r.ok(), qPrintable(r.error));
    QCOMPARE(r.status, 0);
    QCOMPARE(r.error, QString());
    QCOMPARE(r.options.argv, argv);
    QCOMPARE(r.options.cwd, cwd);
    QCOMPARE(r.options.cols, cols);
    QCOMPARE(r.options.rows, rows);
    QCOMPARE(r.options.extraEnv, QStringList());
    QCOMPARE(r.options.loginShell, false); // resolveSpawnOptions() decides that later
}

void TestSpawnRequest::rejected_data()
{
    QTest::addColumn<QByteArray>("body");
    QTest::addColumn<QString>("error");

    const QString commandError = QStringLiteral("command must be a non-empty array of strings");
    const QString nulError = QStringLiteral("command must not contain NUL characters");
    const QString cwdError = QStringLiteral("cwd must be an absolute path (without NUL characters)");
    const QString colsError = QStringLiteral("cols must be an integer 1..1000");
    const QString rowsError = QStringLiteral("rows must be an integer 1..1000");

    // The body as a whole.
    QTest::newRow("unterminated object") << QByteArray("{") << QString("invalid JSON: unterminated object");
    QTest::newRow("not JSON") << QByteArray("nope") << QString("invalid JSON: illegal value");
    QTest::newRow("garbage after the object") << QByteArray("{} x")
                                              << QString("invalid JSON: garbage at the end of the document");
    QTest::newRow("array body") << QByteArray("[1,2]") << QString("body must be a JSON object");
    QTest::newRow("empty array body") << QByteArray("[]") << QString("body must be a JSON object");

    // command
    QTest::newRow("command: a string") << QByteArray(R"({"command":"ls -l"})") << commandError;
    QTest::newRow("command: empty array") << QByteArray(R"({"command":[]})") << commandError;
    QTest::newRow("command: an object") << QByteArray(R"({"command":{"0":"ls"}})") << commandError;
    QTest::newRow("command: a number") << QByteArray(R"({"command":1})") << commandError;
    QTest::newRow("command: false") << QByteArray(R"({"command":false})") << commandError;
    QTest::newRow("command: number entry") << QByteArray(R"({"command":["ls",1]})") << commandError;
    QTest::newRow("command: null entry") << QByteArray(R"({"command":["ls",null]})") << commandError;
    QTest::newRow("command: boolean entry") << QByteArray(R"({"command":[true]})") << commandError;
    QTest::newRow("command: nested array") << QByteArray(R"({"command":[["ls"]]})") << commandError;
    QTest::newRow("command: object entry") << QByteArray(R"({"command":["ls",{}]})") << commandError;
    QTest::newRow("command: NUL in an argument") << QByteArray(R"({"command":["ls","a\u0000b"]})") << nulError;
    QTest::newRow("command: NUL in the program") << QByteArray(R"({"command":["\u0000"]})") << nulError;
    QTest::newRow("command: NUL before a non-string entry") << QByteArray(R"({"command":["a\u0000",1]})")
                                                            << nulError;
    QTest::newRow("command: non-string before a NUL") << QByteArray(R"({"command":[1,"a\u0000"]})")
                                                      << commandError;
    QTest::newRow("command: empty program") << QByteArray(R"({"command":["","arg"]})")
                                            << QString("command[0] must not be empty");

    // cwd
    QTest::newRow("cwd: relative") << QByteArray(R"({"cwd":"tmp"})") << cwdError;
    QTest::newRow("cwd: dot") << QByteArray(R"({"cwd":"."})") << cwdError;
    QTest::newRow("cwd: tilde") << QByteArray(R"({"cwd":"~/src"})") << cwdError;
    QTest::newRow("cwd: a number") << QByteArray(R"({"cwd":5})") << cwdError;
    QTest::newRow("cwd: an array") << QByteArray(R"({"cwd":["/tmp"]})") << cwdError;
    QTest::newRow("cwd: NUL") << QByteArray(R"({"cwd":"/tmp\u0000x"})") << cwdError;

    // cols, rows
    QTest::newRow("cols: 0") << QByteArray(R"({"cols":0})") << colsError;
    QTest::newRow("cols: 1001") << QByteArray(R"({"cols":1001})") << colsError;
    QTest::newRow("cols: negative") << QByteArray(R"({"cols":-80})") << colsError;
    QTest::newRow("cols: fraction") << QByteArray(R"({"cols":80.5})") << colsError;
    QTest::newRow("cols: huge") << QByteArray(R"({"cols":1e10})") << colsError;
    // Beyond int: converting these to int before the range check was
    // undefined behaviour (UBSan, make test's build-asan, on "cols: huge").
    QTest::newRow("cols: 2^31") << QByteArray(R"({"cols":2147483648})") << colsError;
    QTest::newRow("rows: -1e300") << QByteArray(R"({"rows":-1e300})") << rowsError;
    QTest::newRow("cols: WSL's 131072") << QByteArray(R"({"cols":131072})") << colsError;
    QTest::newRow("cols: a string") << QByteArray(R"({"cols":"80"})") << colsError;
    QTest::newRow("cols: true") << QByteArray(R"({"cols":true})") << colsError;
    QTest::newRow("cols: an array") << QByteArray(R"({"cols":[80]})") << colsError;
    QTest::newRow("rows: 0") << QByteArray(R"({"rows":0})") << rowsError;
    QTest::newRow("rows: 1001") << QByteArray(R"({"rows":1001})") << rowsError;
    QTest::newRow("rows: fraction") << QByteArray(R"({"rows":0.5})") << rowsError;
    QTest::newRow("rows: a string") << QByteArray(R"({"rows":"24"})") << rowsError;

    // The first bad field wins, in the order command, cwd, cols, rows.
    QTest::newRow("command before cwd") << QByteArray(R"({"cwd":"x","command":[]})") << commandError;
    QTest::newRow("cwd before cols") << QByteArray(R"({"cols":0,"cwd":"x"})") << cwdError;
    QTest::newRow("cols before rows") << QByteArray(R"({"rows":0,"cols":0})") << colsError;
    QTest::newRow("a good command, then a bad size") << QByteArray(R"({"command":["ls"],"rows":-1})")
                                                     << rowsError;
    QTest::newRow("name: a number") << QByteArray(R"({"name":5})") << QString("name must be a string");
    QTest::newRow("name: an array") << QByteArray(R"({"name":["a"]})") << QString("name must be a string");
    QTest::newRow("rows before name") << QByteArray(R"({"name":1,"rows":0})") << rowsError;
}

void TestSpawnRequest::name_data()
{
    QTest::addColumn<QByteArray>("body");
    QTest::addColumn<QString>("name");
    QTest::newRow("absent") << QByteArray("{}") << QString();
    QTest::newRow("null") << QByteArray(R"({"name":null})") << QString();
    QTest::newRow("empty") << QByteArray(R"({"name":""})") << QString();
    QTest::newRow("given") << QByteArray(R"({"name":"my build"})") << QString("my build");
    // Rules and uniqueness are the registry's (tst_registry): passed on as it is.
    QTest::newRow("passed on unchecked") << QByteArray(R"({"name":" x\n"})") << QString(" x\n");
}

void TestSpawnRequest::name()
{
    QFETCH(QByteArray, body);
    QFETCH(QString, name);
    const SpawnRequest r = parseSpawnRequest(body, QStringList());
    QVERIFY2(r.ok(), qPrintable(r.error));
    QCOMPARE(r.name, name);
}

void TestSpawnRequest::rejected()
{
    QFETCH(QByteArray, body);
    QFETCH(QString, error);

    const SpawnRequest r = parseSpawnRequest(body, QStringList{QStringLiteral("sh")});
    QVERIFY(!r.ok());
    QCOMPARE(r.status, 400);
    QCOMPARE(r.error, error);
}

QTEST_GUILESS_MAIN(TestSpawnRequest)
#include "tst_spawnrequest.moc"
