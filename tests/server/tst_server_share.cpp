// SPDX-License-Identifier: GPL-2.0-or-later
// Read-only links (docs/protocol.md, "Read-only links"), over real HTTP and
// WebSocket on 127.0.0.1 port 0: made, listed and revoked with the key only;
// a link's token refused everything but its session's info and watching it;
// its input and resizes dropped; revocation closing its viewers 4401 at once
// and later uses answered 401; a share ending with its session and with a
// key rotation.
#include "accesskey.h"
#include "protocol.h"
#include "servertestutil.h"
#include "sharestore.h"
#include "testutil.h"

#include <QJsonArray>

using namespace Tether;
using namespace ServerTest;

namespace {
QByteArray bearer(const QByteArray &token)
{
    return "Bearer " + token;
}
} // namespace

class TestServerShare : public QObject
{
    Q_OBJECT
private:
    Fixture f;

    /// A share of `s` made through the API with the key: its token.
    QByteArray share(Session *s)
    {
        const HttpReply r = f.http("POST", "/api/shares", "{\"session\":\"" + s->id().toLatin1() + "\"}");
        if (r.status != 201)
            qWarning() << r.raw;
        return r.json().value(QStringLiteral("token")).toString().toLatin1();
    }
    /// A request made with `token` as the bearer instead of the key.
    HttpReply asShare(const QByteArray &token, const QByteArray &method, const QByteArray &target,
                      const QByteArray &body = QByteArray(), Headers extra = Headers())
    {
        extra.append(qMakePair(QByteArray("Authorization"), bearer(token)));
        return f.http(method, target, body, extra, false);
    }
    QByteArray upgrade(const QByteArray &target, const QByteArray &token)
    {
        return "GET " + target + " HTTP/1.1\r\nHost: " + f.host()
            + "\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\n"
              "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nAuthorization: Bearer " + token + "\r\n\r\n";
    }

private Q_SLOTS:
    void init() { QVERIFY(f.start()); }
    void cleanup() { f.stop(); }

    void makeListRevokeWithTheKey()
    {
        Session *s = f.spawn();
        QVERIFY(s);
        HttpReply r = f.http("POST", "/api/shares", "{\"session\":\"" + s->id().toLatin1() + "\"}");
        QCOMPARE(r.status, 201);
        const QJsonObject j = r.json();
        const QString token = j.value(QStringLiteral("token")).toString();
        QVERIFY(isWellFormedAccessKey(token)); // 256 bits, base64url
        QVERIFY(token.toLatin1() != f.key);
        QCOMPARE(j.value(QStringLiteral("session")).toString(), s->id());
        QCOMPARE(j.value(QStringLiteral("url")).toString(),
                 QStringLiteral("http://127.0.0.1:%1/?share=%2").arg(f.port).arg(token));
        QCOMPARE(j.value(QStringLiteral("viewers")).toInt(-1), 0);
        QVERIFY(QDateTime::fromString(j.value(QStringLiteral("created")).toString(), Qt::ISODate).isValid());
        // Two links of one session are two tokens.
        const QByteArray second = share(s);
        QVERIFY(!second.isEmpty() && second != token.toLatin1());

        r = f.http("GET", "/api/shares");
        QCOMPARE(r.status, 200);
        QJsonArray list = r.json().value(QStringLiteral("shares")).toArray();
        QCOMPARE(list.size(), 2);
        QCOMPARE(list.at(0).toObject().value(QStringLiteral("token")).toString(), token);

        // Bad requests.
        QCOMPARE(f.http("POST", "/api/shares", "{\"session\":\"nope\"}").status, 404);
        QCOMPARE(f.http("POST", "/api/shares", "{\"session\":5}").status, 400);
        QCOMPARE(f.http("POST", "/api/shares", "[]").status, 400);
        QCOMPARE(f.http("POST", "/api/shares", "{").status, 400);
        QCOMPARE(f.http("PUT", "/api/shares").status, 405);
        QCOMPARE(f.http("GET", "/api/shares/" + second).status, 405);
        QCOMPARE(f.http("GET", "/api/sessions/" + s->id().toLatin1() + "/shares").status, 405);
        QCOMPARE(f.http("DELETE", "/api/shares/nope").status, 404);
        QCOMPARE(f.http("DELETE", "/api/sessions/nope/shares").status, 404);
        // Without the key: 401, as the rest of the API.
        QCOMPARE(f.http("GET", "/api/shares", QByteArray(), {}, false).status, 401);

        // Revoke one, then the rest of the session's.
        QCOMPARE(f.http("DELETE", "/api/shares/" + token.toLatin1()).status, 204);
        QCOMPARE(f.http("DELETE", "/api/shares/" + token.toLatin1()).status, 404);
        r = f.http("DELETE", "/api/sessions/" + s->id().toLatin1() + "/shares");
        QCOMPARE(r.status, 200);
        QCOMPARE(r.json().value(QStringLiteral("revoked")).toInt(-1), 1);
        QCOMPARE(f.http("GET", "/api/shares").json().value(QStringLiteral("shares")).toArray().size(), 0);
    }

    void sharesPerSessionAreBounded()
    {
        Session *s = f.spawn();
        QVERIFY(s);
        for (int i = 0; i < ShareStore::kMaxPerSession; ++i)
            QVERIFY(!share(s).isEmpty());
        const HttpReply r = f.http("POST", "/api/shares", "{\"session\":\"" + s->id().toLatin1() + "\"}");
        QCOMPARE(r.status, 409);
        QVERIFY(r.json().value(QStringLiteral("error")).toString().contains(QStringLiteral("limit")));
    }

    void whatALinkMayNotDo_data()
    {
        QTest::addColumn<QByteArray>("method");
        QTest::addColumn<QByteArray>("target"); // OWN, OTHER, TOKEN replaced
        QTest::addColumn<QByteArray>("body");
        QTest::newRow("list sessions") << QByteArray("GET") << QByteArray("/api/sessions") << QByteArray();
        QTest::newRow("create session") << QByteArray("POST") << QByteArray("/api/sessions") << QByteArray("{}");
        QTest::newRow("other session") << QByteArray("GET") << QByteArray("/api/sessions/OTHER") << QByteArray();
        QTest::newRow("kill own") << QByteArray("DELETE") << QByteArray("/api/sessions/OWN") << QByteArray();
        QTest::newRow("kill other") << QByteArray("DELETE") << QByteArray("/api/sessions/OTHER") << QByteArray();
        QTest::newRow("rename own") << QByteArray("PATCH") << QByteArray("/api/sessions/OWN") << QByteArray("{\"name\":\"x\"}");
        QTest::newRow("rotate key") << QByteArray("POST") << QByteArray("/api/key") << QByteArray();
        QTest::newRow("restart") << QByteArray("POST") << QByteArray("/api/restart") << QByteArray();
        QTest::newRow("restart status") << QByteArray("GET") << QByteArray("/api/restart") << QByteArray();
        QTest::newRow("events") << QByteArray("GET") << QByteArray("/api/events") << QByteArray();
        QTest::newRow("list shares") << QByteArray("GET") << QByteArray("/api/shares") << QByteArray();
        QTest::newRow("make share") << QByteArray("POST") << QByteArray("/api/shares") << QByteArray("{\"session\":\"OWN\"}");
        QTest::newRow("revoke itself") << QByteArray("DELETE") << QByteArray("/api/shares/TOKEN") << QByteArray();
        QTest::newRow("revoke session's") << QByteArray("DELETE") << QByteArray("/api/sessions/OWN/shares") << QByteArray();
        QTest::newRow("settings") << QByteArray("GET") << QByteArray("/api/settings") << QByteArray();
        QTest::newRow("change settings") << QByteArray("PATCH") << QByteArray("/api/settings") << QByteArray("{\"max_sessions\":1}");
        QTest::newRow("unknown api path") << QByteArray("GET") << QByteArray("/api/nope") << QByteArray();
    }

    void whatALinkMayNotDo()
    {
        QFETCH(QByteArray, method);
        QFETCH(QByteArray, target);
        QFETCH(QByteArray, body);
        Session *own = f.spawn();
        Session *other = f.spawn();
        QVERIFY(own && other);
        const QByteArray token = share(own);
        QVERIFY(!token.isEmpty());
        target.replace("OWN", own->id().toLatin1()).replace("OTHER", other->id().toLatin1()).replace("TOKEN", token);
        const HttpReply r = asShare(token, method, target, body);
        QCOMPARE(r.status, 403);
        QVERIFY2(r.json().value(QStringLiteral("error")).toString().contains(QStringLiteral("read-only link")), r.body.constData());
        // Nothing happened.
        QCOMPARE(f.registry->count(), 2);
        QVERIFY(f.registry->find(own->id()));
        QCOMPARE(own->name(), QString());
        QVERIFY(f.server->accessKey().toLatin1() == f.key);
        QCOMPARE(f.server->shares()->list().size(), 1);
        QCOMPARE(f.server->eventStreamCount(), 0);
        QVERIFY(f.registry->limits().maxSessions != 1);
    }

    void whatALinkMayDo()
    {
        Session *s = f.spawn();
        QVERIFY(s);
        const QByteArray token = share(s);
        const HttpReply r = asShare(token, "GET", "/api/sessions/" + s->id().toLatin1());
        QCOMPARE(r.status, 200);
        const QJsonObject j = r.json();
        QCOMPARE(j.value(QStringLiteral("id")).toString(), s->id());
        QCOMPARE(j.value(QStringLiteral("state")).toString(), QStringLiteral("running"));
        QCOMPARE(j.value(QStringLiteral("cols")).toInt(), 80);
        QCOMPARE(j.value(QStringLiteral("read_only")).toBool(), true);
        // Not how it runs: the command line, directory and processes are the owner's.
        for (const char *hidden : {"command", "cwd", "pid", "foreground", "offset", "viewers"})
            QVERIFY2(!j.contains(QLatin1String(hidden)), hidden);
        // The key's answer is unchanged.
        QVERIFY(f.http("GET", "/api/sessions/" + s->id().toLatin1()).json().contains(QStringLiteral("command")));
    }

    void linkResolvesItsSessionsName()
    {
        Session *own = f.spawn();
        Session *other = f.spawn();
        QVERIFY(own && other);
        QVERIFY(f.registry->rename(own, QStringLiteral("build")));
        QVERIFY(f.registry->rename(other, QStringLiteral("deploy")));
        const QByteArray token = share(own);
        QVERIFY(!token.isEmpty());
        // Its own session's name works where its id does.
        HttpReply r = asShare(token, "GET", "/api/sessions/build");
        QCOMPARE(r.status, 200);
        QCOMPARE(r.json().value(QStringLiteral("id")).toString(), own->id());
        QCOMPARE(r.json().value(QStringLiteral("read_only")).toBool(), true);
        QVERIFY(!r.json().contains(QStringLiteral("command")));
        // Another session's name, and a name nobody has, get the same
        // answer: a link does not tell which names exist.
        const HttpReply otherName = asShare(token, "GET", "/api/sessions/deploy");
        const HttpReply noName = asShare(token, "GET", "/api/sessions/nobody");
        QCOMPARE(otherName.status, 403);
        QCOMPARE(noName.status, 403);
        QCOMPARE(otherName.body, noName.body);
        QVERIFY(otherName.json().value(QStringLiteral("error")).toString().contains(QStringLiteral("its own session")));
        // Still nothing but reading: the name does not widen what it grants.
        QCOMPARE(asShare(token, "DELETE", "/api/sessions/build").status, 403);
        QCOMPARE(asShare(token, "PATCH", "/api/sessions/build", "{\"name\":\"x\"}").status, 403);
        QCOMPARE(own->name(), QStringLiteral("build"));
        // A name can never be another session's id (names of an id's form
        // are refused), so a link cannot reach that session through one.
        QVERIFY(!f.registry->rename(own, other->id()));
        QCOMPARE(own->name(), QStringLiteral("build"));
        QCOMPARE(asShare(token, "GET", "/api/sessions/" + other->id().toLatin1()).status, 403);

        // Watching by name; control by name is refused as by id.
        QCOMPARE(rawUntilAnswered(f.port, upgrade("/ws/build", token)).status, 403);
        QCOMPARE(rawUntilAnswered(f.port, upgrade("/ws/deploy?mode=watch", token)).status, 403);
        QCOMPARE(rawUntilAnswered(f.port, upgrade("/ws/nobody?mode=watch", token)).status, 403);
        QCOMPARE(other->viewerCount(), 0);
        WsClient watcher;
        watcher.open(f.port, QStringLiteral("/ws/build?mode=watch"), token);
        QTRY_VERIFY(watcher.gotAttached());
        QCOMPARE(watcher.attachedMsg.value(QStringLiteral("mode")).toString(), QStringLiteral("watch"));
        QCOMPARE(own->viewerCount(), 1);
        QCOMPARE(f.server->shareViewerCount(QString::fromLatin1(token)), 1);
        QVERIFY(!watcher.disconnected);
    }

    /// A read-only link watches its session by the session's current name
    /// (docs/protocol.md §4, "Read-only links": `{id}` its id or its current
    /// name), every way a link holder presents it: the bearer, the cookie the
    /// link set, names that need percent-encoding or begin another session's
    /// id, and beside the key (a tester saw 4404: the owner's browser holds
    /// the key cookie, and with the key `{id}` was the id only).
    void linkWatchesByNameEveryWay()
    {
        Session *own = f.spawn();
        Session *other = f.spawn();
        QVERIFY(own && other);
        const QByteArray token = share(own);
        const QByteArray otherToken = share(other);
        QVERIFY(!token.isEmpty() && !otherToken.isEmpty());
        const QByteArray jar = "tether_share_" + own->id().toLatin1() + '=' + token;
        const QByteArray otherJar = "tether_share_" + other->id().toLatin1() + '=' + otherToken;
        const QByteArray keyJar = "tether_key=" + f.key;
        // "attached MODE" or "closed CODE REASON".
        auto attach = [&](const QString &name, const QByteArray &pathAndQuery, const QByteArray &cookie,
                          const QByteArray &bearer) {
            if (own->name() != name && !f.registry->rename(own, name))
                return QStringLiteral("rename to %1 failed").arg(name);
            WsClient c;
            QNetworkRequest req(QUrl(QStringLiteral("ws://127.0.0.1:%1/ws/%2").arg(f.port).arg(QString::fromLatin1(pathAndQuery))));
            if (!cookie.isEmpty())
                req.setRawHeader("Cookie", cookie);
            if (!bearer.isEmpty())
                req.setRawHeader("Authorization", "Bearer " + bearer);
            c.ws.open(req);
            if (!QTest::qWaitFor([&]() { return c.gotAttached() || c.disconnected; }, 10000))
                return QStringLiteral("neither attached nor closed");
            if (!c.gotAttached())
                return QStringLiteral("closed %1 %2").arg(c.closeCode).arg(c.closeReason);
            return QStringLiteral("attached ") + c.attachedMsg.value(QStringLiteral("mode")).toString();
        };
        const QString watching = QStringLiteral("attached watch");
        QCOMPARE(attach(QStringLiteral("build"), "build?mode=watch", QByteArray(), token), watching);
        QCOMPARE(attach(QStringLiteral("build"), "build?mode=watch", jar, QByteArray()), watching);
        QCOMPARE(attach(QStringLiteral("my build"), "my%20build?mode=watch", QByteArray(), token), watching);
        QCOMPARE(attach(QStringLiteral("b\u00e4ck"), "b%C3%A4ck?mode=watch", jar, QByteArray()), watching);
        QCOMPARE(attach(other->id().left(4), other->id().left(4).toLatin1() + "?mode=watch", QByteArray(), token),
                 watching);
        // Beside the key (cookie or bearer): the key decides what the request
        // may do (here, control), the link what its session's name means.
        QCOMPARE(attach(QStringLiteral("build"), "build?mode=watch", jar + "; " + keyJar, QByteArray()), watching);
        QCOMPARE(attach(QStringLiteral("build"), "build", keyJar + "; " + jar, QByteArray()),
                 QStringLiteral("attached control"));
        QCOMPARE(attach(QStringLiteral("build"), "build?mode=watch", jar, f.key), watching);
        HttpReply r = f.http("GET", "/api/sessions/build", QByteArray(), {{"Cookie", keyJar + "; " + jar}}, false);
        QCOMPARE(r.status, 200);
        QCOMPARE(r.json().value(QStringLiteral("id")).toString(), own->id());
        QVERIFY(!r.json().contains(QStringLiteral("read_only"))); // the key's answer, whole
        // The key alone, or with a link of another session: the id only.
        const QString noSuchSession = QStringLiteral("closed 4404 no such session");
        QCOMPARE(attach(QStringLiteral("build"), "build?mode=watch", QByteArray(), f.key), noSuchSession);
        QCOMPARE(attach(QStringLiteral("build"), "build?mode=watch", keyJar + "; " + otherJar, QByteArray()),
                 noSuchSession);
        QCOMPARE(f.http("GET", "/api/sessions/build", QByteArray(), {{"Cookie", keyJar + "; " + otherJar}}, false).status,
                 404);
        QCOMPARE(f.http("GET", "/api/sessions/build").status, 404);
        // Renamed: the old name is nobody's.
        QCOMPARE(attach(QStringLiteral("deploy"), "build?mode=watch", keyJar + "; " + jar, QByteArray()), noSuchSession);
        QCOMPARE(attach(QStringLiteral("deploy"), "deploy?mode=watch", keyJar + "; " + jar, QByteArray()), watching);
        QCOMPARE(other->viewerCount(), 0);
    }

    void hostOriginAndQueryRulesApply()
    {
        Session *s = f.spawn();
        QVERIFY(s);
        const QByteArray token = share(s);
        const QByteArray path = "/api/sessions/" + s->id().toLatin1();
        QByteArray req = "GET " + path + " HTTP/1.1\r\nHost: evil.com:" + QByteArray::number(f.port)
            + "\r\nAuthorization: Bearer " + token + "\r\n\r\n";
        QCOMPARE(rawHttp(f.port, req).status, 403);
        QCOMPARE(asShare(token, "GET", path, QByteArray(), {{"Origin", "http://evil.com"}}).status, 403);
        QCOMPARE(asShare(token, "GET", path, QByteArray(), {{"Origin", "http://" + f.host()}}).status, 200);
        // Never in the query of /api or /ws.
        QCOMPARE(f.http("GET", path + "?share=" + token, QByteArray(), {}, false).status, 401);
        QCOMPARE(f.http("GET", path + "?key=" + token, QByteArray(), {}, false).status, 401);
        // A WebSocket from another origin.
        WsClient evil(QStringLiteral("http://evil.com"));
        evil.open(f.port, QStringLiteral("/ws/%1?mode=watch").arg(s->id()), token);
        QTRY_VERIFY(evil.disconnected);
        QVERIFY(!evil.connected);
        QCOMPARE(s->viewerCount(), 0);
    }

    void linkSetsCookieAndOpensWatchView()
    {
        Session *s = f.spawn();
        QVERIFY(s);
        const QByteArray token = share(s);
        HttpReply r = f.http("GET", "/?share=" + token, QByteArray(), {}, false);
        QCOMPARE(r.status, 303);
        QCOMPARE(r.header("Location"), "/#/share/" + s->id().toLatin1());
        const QByteArray cookie = r.header("Set-Cookie");
        QCOMPARE(cookie, "tether_share_" + s->id().toLatin1() + '=' + token + "; HttpOnly; SameSite=Strict; Path=/");
        // The cookie it set works (for this session only) ...
        const QByteArray jar = cookie.left(cookie.indexOf(';'));
        QCOMPARE(f.http("GET", "/api/sessions/" + s->id().toLatin1(), QByteArray(), {{"Cookie", jar}}, false).status, 200);
        QCOMPARE(f.http("GET", "/api/sessions", QByteArray(), {{"Cookie", jar}}, false).status, 403);
        // ... and with a key cookie beside it, the key wins.
        QCOMPARE(f.http("GET", "/api/sessions", QByteArray(), {{"Cookie", jar + "; tether_key=" + f.key}}, false).status, 200);
        // A dead link sets nothing and lands on the page that says so.
        r = f.http("GET", "/?share=nope", QByteArray(), {}, false);
        QCOMPARE(r.status, 303);
        QCOMPARE(r.header("Location"), QByteArray("/#/share"));
        QVERIFY(r.header("Set-Cookie").isEmpty());
        // A share token is no key: the key link refuses it.
        r = f.http("GET", "/?key=" + token, QByteArray(), {}, false);
        QVERIFY(r.header("Set-Cookie").isEmpty());
    }

    void watchOnlyInputAndResizeDropped()
    {
        Session *s = f.spawn();
        QVERIFY(s);
        const QByteArray token = share(s);
        // Anything but mode=watch is refused before the upgrade.
        const QByteArray ws = "/ws/" + s->id().toLatin1();
        QCOMPARE(rawUntilAnswered(f.port, upgrade(ws, token)).status, 403);
        QCOMPARE(rawUntilAnswered(f.port, upgrade(ws + "?mode=control", token)).status, 403);
        QCOMPARE(rawUntilAnswered(f.port, upgrade(ws + "?mode=bogus", token)).status, 403);
        Session *other = f.spawn();
        QVERIFY(other);
        QCOMPARE(rawUntilAnswered(f.port, upgrade("/ws/" + other->id().toLatin1() + "?mode=watch", token)).status, 403);
        QCOMPARE(s->viewerCount(), 0);
        QCOMPARE(other->viewerCount(), 0);

        WsClient owner;
        owner.open(f.port, QStringLiteral("/ws/%1").arg(s->id()), f.key);
        QTRY_VERIFY(owner.gotAttached());
        WsClient watcher;
        watcher.open(f.port, QStringLiteral("/ws/%1?mode=watch").arg(s->id()), token);
        QTRY_VERIFY(watcher.gotAttached());
        QCOMPARE(watcher.attachedMsg.value(QStringLiteral("mode")).toString(), QStringLiteral("watch"));
        QCOMPARE(f.server->shareViewerCount(QString::fromLatin1(token)), 1);
        QCOMPARE(f.http("GET", "/api/shares").json().value(QStringLiteral("shares")).toArray().at(0).toObject()
                     .value(QStringLiteral("viewers")).toInt(), 1);

        // The link's input and resize are dropped; the owner's arrive.
        watcher.sendInput("echo from-link-$((6*7))\n");
        watcher.sendText(R"({"type":"resize","cols":100,"rows":30})");
        // The server has handled both: it answers a ping after the frames
        // before it on the same connection.
        QSignalSpy pong(&watcher.ws, &QWebSocket::pong);
        watcher.ws.ping();
        QVERIFY(pong.wait(10000));
        // Then the owner's line: the link's bytes, had they been written,
        // went to the program first and were echoed first.
        owner.sendInput("echo from-owner-$((5*5))\n");
        QTRY_VERIFY(watcher.stream().contains("from-owner-25\r\n"));
        QVERIFY(owner.stream().contains("from-owner-25\r\n"));
        QVERIFY(!owner.stream().contains("from-link"));
        QVERIFY(!watcher.stream().contains("from-link"));
        QCOMPARE(s->cols(), 80);
        QCOMPARE(s->rows(), 24);
        QVERIFY(!watcher.disconnected);
    }

    void revokeClosesViewersAndLaterUsesAre401()
    {
        Session *s = f.spawn();
        QVERIFY(s);
        const QByteArray token = share(s);
        const QByteArray kept = share(s); // revoked separately below
        WsClient watcher;
        watcher.open(f.port, QStringLiteral("/ws/%1?mode=watch").arg(s->id()), token);
        QTRY_VERIFY(watcher.gotAttached());
        WsClient other;
        other.open(f.port, QStringLiteral("/ws/%1?mode=watch").arg(s->id()), kept);
        QTRY_VERIFY(other.gotAttached());

        QCOMPARE(f.http("DELETE", "/api/shares/" + token).status, 204);
        QTRY_VERIFY(watcher.disconnected);
        QCOMPARE(watcher.closeCode, int(Protocol::Unauthorized));
        QCOMPARE(watcher.closeCode, 4401);
        QCOMPARE(watcher.closeReason, QStringLiteral("read-only link revoked"));
        // The other link's viewer is not touched: a ping on its connection
        // is answered after anything the revocation sent it.
        QSignalSpy pong(&other.ws, &QWebSocket::pong);
        other.ws.ping();
        QVERIFY(pong.wait(10000));
        QVERIFY(!other.disconnected);

        HttpReply r = asShare(token, "GET", "/api/sessions/" + s->id().toLatin1());
        QCOMPARE(r.status, 401);
        QCOMPARE(r.json().value(QStringLiteral("error")).toString(), QStringLiteral("this read-only link was revoked"));
        QCOMPARE(rawUntilAnswered(f.port, upgrade("/ws/" + s->id().toLatin1() + "?mode=watch", token)).status, 401);
        // A cookie of a link unknown to this server.
        r = f.http("GET", "/api/sessions/" + s->id().toLatin1(), QByteArray(),
                   {{"Cookie", "tether_share_" + s->id().toLatin1() + "=" + QByteArray(43, 'A')}}, false);
        QCOMPARE(r.status, 401);
        QVERIFY(r.json().value(QStringLiteral("error")).toString().contains(QStringLiteral("not valid")));

        // Revoking by session closes the rest.
        QCOMPARE(f.http("DELETE", "/api/sessions/" + s->id().toLatin1() + "/shares").json().value(QStringLiteral("revoked")).toInt(), 1);
        QTRY_VERIFY(other.disconnected);
        QCOMPARE(other.closeCode, 4401);
        QCOMPARE(s->viewerCount(), 0);
        QVERIFY(f.registry->find(s->id())); // the session lives on
    }

    void shareEndsWithItsSession()
    {
        Session *s = f.spawn();
        QVERIFY(s);
        const QString id = s->id();
        const QByteArray token = share(s);
        WsClient watcher;
        watcher.open(f.port, QStringLiteral("/ws/%1?mode=watch").arg(id), token);
        QTRY_VERIFY(watcher.gotAttached());
        QCOMPARE(f.http("DELETE", "/api/sessions/" + id.toLatin1()).status, 204);
        QTRY_VERIFY(watcher.disconnected);
        QCOMPARE(watcher.closeCode, 1001);
        QCOMPARE(f.server->shares()->list().size(), 0);
        const HttpReply r = asShare(token, "GET", "/api/sessions/" + id.toLatin1());
        QCOMPARE(r.status, 401);
        QVERIFY(r.json().value(QStringLiteral("error")).toString().contains(QStringLiteral("session is gone")));
    }

    void keyRotationRevokesEveryLink()
    {
        Session *s = f.spawn();
        QVERIFY(s);
        const QByteArray token = share(s);
        WsClient watcher;
        watcher.open(f.port, QStringLiteral("/ws/%1?mode=watch").arg(s->id()), token);
        QTRY_VERIFY(watcher.gotAttached());
        QCOMPARE(f.http("POST", "/api/key").status, 200);
        QTRY_VERIFY(watcher.disconnected);
        QCOMPARE(watcher.closeCode, 4401);
        QCOMPARE(f.server->shares()->list().size(), 0);
        QCOMPARE(asShare(token, "GET", "/api/sessions/" + s->id().toLatin1()).status, 401);
    }

    void linkViewersAreBounded()
    {
        // A link holder must not fill the session's 16 viewers and lock its
        // owner out: at most 8 viewers per session come through links.
        Session *s = f.spawn();
        QVERIFY(s);
        const QByteArray token = share(s);
        std::vector<std::unique_ptr<WsClient>> clients;
        for (int i = 0; i < Server::kMaxShareViewersPerSession; ++i) {
            clients.push_back(std::make_unique<WsClient>());
            clients.back()->open(f.port, QStringLiteral("/ws/%1?mode=watch").arg(s->id()), token);
            QTRY_VERIFY(clients.back()->gotAttached());
        }
        WsClient extra;
        extra.open(f.port, QStringLiteral("/ws/%1?mode=watch").arg(s->id()), token);
        QTRY_VERIFY(extra.disconnected);
        QCOMPARE(extra.closeCode, int(Protocol::TooManyViewers));
        QCOMPARE(s->viewerCount(), Server::kMaxShareViewersPerSession);
        // The owner still gets in.
        WsClient owner;
        owner.open(f.port, QStringLiteral("/ws/%1").arg(s->id()), f.key);
        QTRY_VERIFY(owner.gotAttached());
    }
};

QTEST_MAIN(TestServerShare)
#include "tst_server_share.moc"
