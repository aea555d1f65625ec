// SPDX-License-Identifier: GPL-2.0-or-later
// routeRequest(): where each request goes (docs/protocol.md, "Endpoints",
// "WebSocket"), row by row, from a real request head. tst_server_http and
// tst_server_ws check the answers through a real server;
// tests/fuzz/fuzz_httprequest.cpp throws arbitrary heads at both.
#include "httprequest.h"
#include "route.h"

#include <QTest>

using namespace Tether;

Q_DECLARE_METATYPE(Route::Kind)

namespace {
/// The route of a WebSocket upgrade of /ws/x with `query`; false if the head did not parse.
bool upgradeRoute(const QByteArray &query, Route *route)
{
    const QByteArray head = "GET /ws/x" + (query.isEmpty() ? QByteArray() : "?" + query)
        + " HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n";
    HttpRequest r;
    if (r.feedHead(head.constData(), head.size()) == HttpRequest::Phase::Error)
        return false;
    *route = routeRequest(r);
    return true;
}
} // namespace

class TestRoute : public QObject
{
    Q_OBJECT
private Q_SLOTS:
    void route_data();
    void route();
    void upgradeQuery_data();
    void upgradeQuery();
    void upgradeReplay_data();
    void upgradeReplay();
    void upgradeSize_data();
    void upgradeSize();
    void upgradeClient_data();
    void upgradeClient();
    void needsKey_data();
    void needsKey();
};

void TestRoute::route_data()
{
    QTest::addColumn<QByteArray>("method");
    QTest::addColumn<QByteArray>("target");
    QTest::addColumn<bool>("upgrade");
    QTest::addColumn<Route::Kind>("kind");
    QTest::addColumn<bool>("api");
    QTest::addColumn<QString>("detail"); // id, file or Allow
    using K = Route::Kind;
    const QString none;

    QTest::newRow("index") << QByteArray("GET") << QByteArray("/") << false << K::StaticFile << false << ":/dashboard/index.html";
    QTest::newRow("HEAD of a file") << QByteArray("HEAD") << QByteArray("/app.js?v=1") << false << K::StaticFile << false
                                    << ":/dashboard/app.js";
    QTest::newRow("key link") << QByteArray("GET") << QByteArray("/?key=abc") << false << K::KeyLink << false << none;
    QTest::newRow("POST of a file") << QByteArray("POST") << QByteArray("/index.html") << false << K::MethodNotAllowed
                                    << false << "GET, HEAD";
    QTest::newRow("dot dot") << QByteArray("GET") << QByteArray("/a/../index.html") << false << K::NotFound << false << none;
    QTest::newRow("encoded dot dot") << QByteArray("GET") << QByteArray("/%2e%2e/x") << false << K::NotFound << false << none;
    QTest::newRow("double slash") << QByteArray("GET") << QByteArray("//etc/passwd") << false << K::NotFound << false << none;
    QTest::newRow("backslash") << QByteArray("GET") << QByteArray("/a%5c..") << false << K::NotFound << false << none;
    QTest::newRow("trailing slash") << QByteArray("GET") << QByteArray("/dir/") << false << K::NotFound << false << none;
    QTest::newRow("apix is a file") << QByteArray("GET") << QByteArray("/apix") << false << K::StaticFile << false
                                    << ":/dashboard/apix";

    QTest::newRow("list") << QByteArray("GET") << QByteArray("/api/sessions") << false << K::ListSessions << true << none;
    QTest::newRow("list, trailing slash") << QByteArray("GET") << QByteArray("/api/sessions/") << false << K::ListSessions
                                          << true << none;
    QTest::newRow("create") << QByteArray("POST") << QByteArray("/api/sessions") << false << K::CreateSession << true << none;
    QTest::newRow("sessions: PUT") << QByteArray("PUT") << QByteArray("/api/sessions") << false << K::MethodNotAllowed
                                   << true << "GET, POST";
    QTest::newRow("one") << QByteArray("GET") << QByteArray("/api/sessions/Ab_1") << false << K::GetSession << true << "Ab_1";
    QTest::newRow("kill") << QByteArray("DELETE") << QByteArray("/api/sessions/Ab_1") << false << K::DeleteSession << true
                          << "Ab_1";
    QTest::newRow("rename") << QByteArray("PATCH") << QByteArray("/api/sessions/Ab_1") << false << K::PatchSession << true
                            << "Ab_1";
    QTest::newRow("one: POST") << QByteArray("POST") << QByteArray("/api/sessions/Ab_1") << false << K::MethodNotAllowed
                               << true << "GET, PATCH, DELETE";
    QTest::newRow("saved screen") << QByteArray("GET") << QByteArray("/api/sessions/Ab_1/screen") << false << K::SessionScreen
                                  << true << "Ab_1";
    QTest::newRow("saved screen: POST") << QByteArray("POST") << QByteArray("/api/sessions/Ab_1/screen") << false
                                        << K::MethodNotAllowed << true << "GET";
    QTest::newRow("revive") << QByteArray("POST") << QByteArray("/api/sessions/Ab_1/revive") << false << K::ReviveSession
                            << true << "Ab_1";
    QTest::newRow("revive: GET") << QByteArray("GET") << QByteArray("/api/sessions/Ab_1/revive") << false
                                 << K::MethodNotAllowed << true << "POST";
    QTest::newRow("key") << QByteArray("POST") << QByteArray("/api/key") << false << K::RotateKey << true << none;
    QTest::newRow("key: GET") << QByteArray("GET") << QByteArray("/api/key") << false << K::MethodNotAllowed << true << "POST";
    QTest::newRow("restart: GET") << QByteArray("GET") << QByteArray("/api/restart") << false << K::Restart << true << none;
    QTest::newRow("restart: POST") << QByteArray("POST") << QByteArray("/api/restart") << false << K::Restart << true << none;
    QTest::newRow("restart: DELETE") << QByteArray("DELETE") << QByteArray("/api/restart") << false << K::MethodNotAllowed
                                     << true << "GET, POST";
    QTest::newRow("events") << QByteArray("GET") << QByteArray("/api/events") << false << K::Events << true << none;
    QTest::newRow("events: POST") << QByteArray("POST") << QByteArray("/api/events") << false << K::MethodNotAllowed << true
                                  << "GET";
    QTest::newRow("shares") << QByteArray("GET") << QByteArray("/api/shares") << false << K::ListShares << true << none;
    QTest::newRow("share") << QByteArray("POST") << QByteArray("/api/shares") << false << K::CreateShare << true << none;
    QTest::newRow("shares: PUT") << QByteArray("PUT") << QByteArray("/api/shares") << false << K::MethodNotAllowed
                                 << true << "GET, POST";
    QTest::newRow("revoke") << QByteArray("DELETE") << QByteArray("/api/shares/T0k") << false << K::RevokeShare << true << "T0k";
    QTest::newRow("revoke: GET") << QByteArray("GET") << QByteArray("/api/shares/T0k") << false << K::MethodNotAllowed
                                 << true << "DELETE";
    QTest::newRow("revoke a session's") << QByteArray("DELETE") << QByteArray("/api/sessions/Ab_1/shares") << false
                                        << K::RevokeSessionShares << true << "Ab_1";
    QTest::newRow("a session's shares: GET") << QByteArray("GET") << QByteArray("/api/sessions/Ab_1/shares") << false
                                             << K::MethodNotAllowed << true << "DELETE";
    QTest::newRow("share link") << QByteArray("GET") << QByteArray("/?share=abc") << false << K::ShareLink << false << none;
    QTest::newRow("settings") << QByteArray("GET") << QByteArray("/api/settings") << false << K::Settings << true << none;
    QTest::newRow("settings: PATCH") << QByteArray("PATCH") << QByteArray("/api/settings") << false << K::Settings << true << none;
    QTest::newRow("settings: POST") << QByteArray("POST") << QByteArray("/api/settings") << false << K::MethodNotAllowed
                                    << true << "GET, PATCH";
    QTest::newRow("api root") << QByteArray("GET") << QByteArray("/api") << false << K::NotFound << true << none;
    QTest::newRow("api unknown") << QByteArray("GET") << QByteArray("/api/nope") << false << K::NotFound << true << none;
    QTest::newRow("command output") << QByteArray("GET") << QByteArray("/api/sessions/Ab_1/commands/7/output") << false
                                    << K::CommandOutput << true << "Ab_1";
    QTest::newRow("command output: POST") << QByteArray("POST") << QByteArray("/api/sessions/Ab_1/commands/7/output")
                                          << false << K::MethodNotAllowed << true << "GET";
    QTest::newRow("command: no output") << QByteArray("GET") << QByteArray("/api/sessions/Ab_1/commands/7") << false
                                        << K::NotFound << true << none;
    QTest::newRow("too deep") << QByteArray("GET") << QByteArray("/api/sessions/a/b") << false << K::NotFound << true << none;

    QTest::newRow("ws without upgrade") << QByteArray("GET") << QByteArray("/ws/Ab_1") << false << K::UpgradeRequired
                                        << false << none;
    QTest::newRow("ws root without upgrade") << QByteArray("GET") << QByteArray("/ws") << false << K::UpgradeRequired
                                             << false << none;
    QTest::newRow("upgrade") << QByteArray("GET") << QByteArray("/ws/Ab_1") << true << K::Upgrade << false << "Ab_1";
    QTest::newRow("upgrade: POST") << QByteArray("POST") << QByteArray("/ws/Ab_1") << true << K::MethodNotAllowed << false
                                   << "GET";
    QTest::newRow("upgrade: no id") << QByteArray("GET") << QByteArray("/ws/") << true << K::NotFound << false << none;
    QTest::newRow("upgrade: id with a slash") << QByteArray("GET") << QByteArray("/ws/a/b") << true << K::NotFound << false
                                              << none;
    QTest::newRow("upgrade elsewhere") << QByteArray("GET") << QByteArray("/api/sessions") << true << K::NotFound << false
                                       << none;
}

void TestRoute::route()
{
    QFETCH(QByteArray, method);
    QFETCH(QByteArray, target);
    QFETCH(bool, upgrade);
    QFETCH(Route::Kind, kind);
    QFETCH(bool, api);
    QFETCH(QString, detail);
    QByteArray head = method + ' ' + target + " HTTP/1.1\r\nHost: 127.0.0.1\r\n";
    if (upgrade)
        head += "Upgrade: websocket\r\nConnection: Upgrade\r\n";
    head += "\r\n";
    HttpRequest r;
    QVERIFY(r.feedHead(head.constData(), head.size()) != HttpRequest::Phase::Error);
    const Route route = routeRequest(r);
    QCOMPARE(route.kind, kind);
    QCOMPARE(route.api, api);
    if (kind == Route::Kind::MethodNotAllowed)
        QCOMPARE(QString::fromLatin1(route.allow), detail);
    else if (kind == Route::Kind::StaticFile)
        QCOMPARE(route.file, detail);
    else
        QCOMPARE(route.id, detail);
    // {n} of a command's output: decimal digits only, else 0 (no command has it).
    if (kind == Route::Kind::CommandOutput)
        QCOMPARE(route.command, quint64(7));
}

void TestRoute::upgradeQuery_data()
{
    QTest::addColumn<QByteArray>("query");
    QTest::addColumn<bool>("watch");
    QTest::addColumn<bool>("badQuery");
    QTest::addColumn<qint64>("resume"); // -1: none; as quint64 bits otherwise
    QTest::newRow("none") << QByteArray() << false << false << qint64(-1);
    QTest::newRow("control") << QByteArray("mode=control") << false << false << qint64(-1);
    QTest::newRow("watch") << QByteArray("mode=watch") << true << false << qint64(-1);
    QTest::newRow("bad mode") << QByteArray("mode=admin") << false << true << qint64(-1);
    QTest::newRow("resume") << QByteArray("resume=1234") << false << false << qint64(1234);
    QTest::newRow("resume 0, watch") << QByteArray("resume=0&mode=watch") << true << false << qint64(0);
    QTest::newRow("resume: the largest") << QByteArray("resume=18446744073709551615") << false << false << qint64(-1); // 2^64-1
    // Unparsable: beyond the end (reset, "ahead"), the maximum.
    QTest::newRow("resume: beyond quint64") << QByteArray("resume=18446744073709551616") << false << false << qint64(-1);
    QTest::newRow("resume: negative") << QByteArray("resume=-1") << false << false << qint64(-1);
    QTest::newRow("resume: empty") << QByteArray("resume=") << false << false << qint64(-1);
}

void TestRoute::upgradeQuery()
{
    QFETCH(QByteArray, query);
    QFETCH(bool, watch);
    QFETCH(bool, badQuery);
    QFETCH(qint64, resume);
    Route route;
    QVERIFY(upgradeRoute(query, &route));
    QCOMPARE(route.kind, Route::Kind::Upgrade);
    QCOMPARE(route.mode, watch ? ViewerMode::Watch : ViewerMode::Control);
    QCOMPARE(route.badQuery, badQuery);
    const bool hasResume = query.contains("resume=");
    QCOMPARE(route.resume.has_value(), hasResume);
    if (hasResume)
        QCOMPARE(*route.resume, quint64(resume));
}

void TestRoute::upgradeReplay_data()
{
    // replay=raw|screen and lines=N (docs/protocol.md §5, "Screen replay"):
    // a bad value is a 400 before the upgrade (badRequest), never a silent default.
    QTest::addColumn<QByteArray>("query");
    QTest::addColumn<bool>("screen");
    QTest::addColumn<int>("lines");
    QTest::addColumn<QString>("bad"); // what badRequest starts with; empty: accepted
    const QString none;
    const QString badReplay = QStringLiteral("bad replay");
    const QString badLines = QStringLiteral("bad lines");
    QTest::newRow("none") << QByteArray() << false << 0 << none;
    QTest::newRow("raw") << QByteArray("replay=raw") << false << 0 << none;
    QTest::newRow("screen") << QByteArray("replay=screen") << true << 0 << none;
    QTest::newRow("screen, lines") << QByteArray("replay=screen&lines=200") << true << 200 << none;
    QTest::newRow("lines before replay") << QByteArray("lines=5&replay=screen&mode=watch") << true << 5 << none;
    QTest::newRow("screen, lines 0") << QByteArray("replay=screen&lines=0") << true << 0 << none;
    QTest::newRow("screen, the most lines") << QByteArray("replay=screen&lines=1000") << true << 1000 << none;
    QTest::newRow("screen, resume") << QByteArray("replay=screen&resume=10") << true << 0 << none;
    QTest::newRow("replay: unknown") << QByteArray("replay=all") << false << 0 << badReplay;
    QTest::newRow("replay: empty") << QByteArray("replay=") << false << 0 << badReplay;
    QTest::newRow("replay: case") << QByteArray("replay=Screen") << false << 0 << badReplay;
    QTest::newRow("lines: too many") << QByteArray("replay=screen&lines=1001") << true << 0 << badLines;
    QTest::newRow("lines: negative") << QByteArray("replay=screen&lines=-1") << true << 0 << badLines;
    QTest::newRow("lines: not a number") << QByteArray("replay=screen&lines=ten") << true << 0 << badLines;
    QTest::newRow("lines: empty") << QByteArray("replay=screen&lines=") << true << 0 << badLines;
    QTest::newRow("lines: beyond quint64") << QByteArray("replay=screen&lines=18446744073709551616") << true << 0
                                           << badLines;
    QTest::newRow("lines without screen") << QByteArray("lines=10") << false << 0 << badLines;
    QTest::newRow("lines with raw") << QByteArray("replay=raw&lines=10") << false << 0 << badLines;
    QTest::newRow("bad replay and lines") << QByteArray("replay=x&lines=10") << false << 0 << badReplay;
}

void TestRoute::upgradeReplay()
{
    QFETCH(QByteArray, query);
    QFETCH(bool, screen);
    QFETCH(int, lines);
    QFETCH(QString, bad);
    Route route;
    QVERIFY(upgradeRoute(query, &route));
    QCOMPARE(route.kind, Route::Kind::Upgrade);
    QCOMPARE(route.id, QStringLiteral("x"));
    QCOMPARE(route.screen, screen);
    QCOMPARE(route.lines, lines);
    if (bad.isEmpty())
        QCOMPARE(route.badRequest, QString());
    else
        QVERIFY2(route.badRequest.startsWith(bad), qPrintable(route.badRequest));
}

void TestRoute::upgradeSize_data()
{
    // cols=C&rows=R, the viewer's size (docs/protocol.md §5, "Attaching at
    // the viewer's size"): both, 1..1000 each as `resize` takes them; a bad
    // value is a 400 before the upgrade, never a silent default.
    QTest::addColumn<QByteArray>("query");
    QTest::addColumn<int>("cols");
    QTest::addColumn<int>("rows");
    QTest::addColumn<bool>("bad");
    QTest::newRow("none") << QByteArray() << 0 << 0 << false;
    QTest::newRow("both") << QByteArray("cols=100&rows=30") << 100 << 30 << false;
    QTest::newRow("rows first, watch") << QByteArray("rows=30&mode=watch&cols=100") << 100 << 30 << false;
    QTest::newRow("the smallest") << QByteArray("cols=1&rows=1") << 1 << 1 << false;
    QTest::newRow("the largest") << QByteArray("cols=1000&rows=1000") << 1000 << 1000 << false;
    QTest::newRow("with screen and resume") << QByteArray("replay=screen&lines=5&resume=7&cols=80&rows=24") << 80 << 24
                                            << false;
    QTest::newRow("cols alone") << QByteArray("cols=100") << 0 << 0 << true;
    QTest::newRow("rows alone") << QByteArray("rows=30") << 0 << 0 << true;
    QTest::newRow("hidden tab 0x0") << QByteArray("cols=0&rows=0") << 0 << 0 << true;
    QTest::newRow("cols 1001") << QByteArray("cols=1001&rows=30") << 0 << 0 << true;
    QTest::newRow("rows 1001") << QByteArray("cols=100&rows=1001") << 0 << 0 << true;
    QTest::newRow("WSL's 131072 columns") << QByteArray("cols=131072&rows=30") << 0 << 0 << true;
    QTest::newRow("negative") << QByteArray("cols=-80&rows=24") << 0 << 0 << true;
    QTest::newRow("not a number") << QByteArray("cols=wide&rows=24") << 0 << 0 << true;
    QTest::newRow("fraction") << QByteArray("cols=80.5&rows=24") << 0 << 0 << true;
    QTest::newRow("empty") << QByteArray("cols=&rows=24") << 0 << 0 << true;
    QTest::newRow("beyond quint64") << QByteArray("cols=18446744073709551616&rows=24") << 0 << 0 << true;
}

void TestRoute::upgradeSize()
{
    QFETCH(QByteArray, query);
    QFETCH(int, cols);
    QFETCH(int, rows);
    QFETCH(bool, bad);
    Route route;
    QVERIFY(upgradeRoute(query, &route));
    QCOMPARE(route.kind, Route::Kind::Upgrade);
    if (bad)
        QVERIFY2(route.badRequest.startsWith(QLatin1String("bad cols and rows")), qPrintable(route.badRequest));
    else
        QCOMPARE(route.badRequest, QString());
    QCOMPARE(route.cols, cols);
    QCOMPARE(route.rows, rows);
}

void TestRoute::upgradeClient_data()
{
    // client=desktop: the desktop's terminal window (viewer_kind "local").
    QTest::addColumn<QByteArray>("query");
    QTest::addColumn<bool>("desktop");
    QTest::newRow("none") << QByteArray("mode=control") << false;
    QTest::newRow("desktop") << QByteArray("client=desktop") << true;
    QTest::newRow("with the rest") << QByteArray("resume=7&client=desktop&cols=80&rows=24") << true;
    QTest::newRow("another value") << QByteArray("client=browser") << false;
    QTest::newRow("empty") << QByteArray("client=") << false;
    QTest::newRow("case") << QByteArray("client=Desktop") << false;
}

void TestRoute::upgradeClient()
{
    QFETCH(QByteArray, query);
    QFETCH(bool, desktop);
    Route route;
    QVERIFY(upgradeRoute(query, &route));
    QCOMPARE(route.kind, Route::Kind::Upgrade);
    QCOMPARE(route.badRequest, QString()); // never a reason to refuse
    QCOMPARE(route.desktopClient, desktop);
}

void TestRoute::needsKey_data()
{
    QTest::addColumn<QString>("path");
    QTest::addColumn<bool>("key");
    QTest::newRow("/api") << "/api" << true;
    QTest::newRow("/api/sessions") << "/api/sessions" << true;
    QTest::newRow("/ws") << "/ws" << true;
    QTest::newRow("/ws/x") << "/ws/x" << true;
    QTest::newRow("/") << "/" << false;
    QTest::newRow("/apix") << "/apix" << false;
    QTest::newRow("/wsx") << "/wsx" << false;
    QTest::newRow("/index.html") << "/index.html" << false;
}

void TestRoute::needsKey()
{
    QFETCH(QString, path);
    QFETCH(bool, key);
    QCOMPARE(Tether::needsKey(path), key);
}


QTEST_GUILESS_MAIN(TestRoute)
#include "tst_route.moc"
