// SPDX-License-Identifier: GPL-2.0-or-later
// GET and PATCH /api/settings (docs/protocol.md, "Settings"): the host owns
// the settings file and applies what can change live (issue 23). The PATCH
// rules as a table (SettingsApi::applyPatch), then a real in-process server
// on port 0: the file written, the registry's limits changed at once, the
// address kept for the next start, bad bodies refused with nothing changed.
#include "registry.h"
#include "server.h"
#include "sessionrecordstore.h"
#include "servertestutil.h"
#include "settingsapi.h"

#include <QJsonArray>
#include <QSettings>
#include <QTemporaryDir>
#include <QTest>

using namespace Tether;
using namespace ServerTest;

class TestSettingsApi : public QObject
{
    Q_OBJECT
private Q_SLOTS:
    void patchRules_data()
    {
        QTest::addColumn<QByteArray>("body");
        QTest::addColumn<QString>("error"); // empty: accepted
        QTest::addColumn<QStringList>("changed");
        QTest::newRow("ttl") << QByteArray(R"({"ttl": 600})") << QString() << QStringList{QStringLiteral("ttl")};
        QTest::newRow("same value: accepted, nothing changed") << QByteArray(R"({"exited_ttl": 1800})") << QString() << QStringList();
        QTest::newRow("several") << QByteArray(R"({"buffer_size": 65536, "max_sessions": 3, "port": 0})") << QString()
                                 << QStringList{QStringLiteral("buffer_size"), QStringLiteral("max_sessions"), QStringLiteral("port")};
        QTest::newRow("command") << QByteArray("{\"command\": \"bash -c \047echo hi\047\"}") << QString() << QStringList{QStringLiteral("command")};
        QTest::newRow("shell integration and notify_after") << QByteArray(R"({"shell_integration": false, "notify_after": 30})") << QString()
                                                     << QStringList{QStringLiteral("notify_after"), QStringLiteral("shell_integration")};
        QTest::newRow("shell integration not a boolean") << QByteArray(R"({"shell_integration": 0})") << QStringLiteral("shell_integration must be true or false") << QStringList();
        QTest::newRow("saved_scrollback_lines") << QByteArray(R"({"saved_scrollback_lines": 0})") << QString()
                                                << QStringList{QStringLiteral("saved_scrollback_lines")};
        QTest::newRow("saved_scrollback_lines too big") << QByteArray(R"({"saved_scrollback_lines": 1001})")
                                                        << QStringLiteral("saved_scrollback_lines must be an integer 0..1000") << QStringList();
        QTest::newRow("notify_after too big") << QByteArray(R"({"notify_after": 86401})") << QStringLiteral("notify_after must be an integer 0..86400") << QStringList();
        // The desktop app's own settings are not the host's (issue 28): unknown here.
        QTest::newRow("desktop field") << QByteArray(R"({"terminal_font_size": 12})") << QStringLiteral("nothing to change: the body has no setting") << QStringList();
        QTest::newRow("unknown fields ignored") << QByteArray(R"({"ttl": 5, "colour": 3})") << QString() << QStringList{QStringLiteral("ttl")};
        QTest::newRow("not JSON") << QByteArray("{") << QStringLiteral("invalid JSON: ") << QStringList();
        QTest::newRow("not an object") << QByteArray("[1]") << QStringLiteral("body must be a JSON object") << QStringList();
        QTest::newRow("nothing to change") << QByteArray(R"({"colour": 3})") << QStringLiteral("nothing to change: the body has no setting") << QStringList();
        QTest::newRow("ttl negative") << QByteArray(R"({"ttl": -1})") << QStringLiteral("ttl must be an integer 0..31536000") << QStringList();
        QTest::newRow("ttl fraction") << QByteArray(R"({"ttl": 1.5})") << QStringLiteral("ttl must be an integer 0..31536000") << QStringList();
        QTest::newRow("ttl string") << QByteArray(R"({"ttl": "60"})") << QStringLiteral("ttl must be an integer 0..31536000") << QStringList();
        QTest::newRow("buffer too small") << QByteArray(R"({"buffer_size": 1024})") << QStringLiteral("buffer_size must be an integer 65536..67108864") << QStringList();
        QTest::newRow("port too big") << QByteArray(R"({"port": 65536})") << QStringLiteral("port must be an integer 0..65535") << QStringList();
        QTest::newRow("max sessions 0") << QByteArray(R"({"max_sessions": 0})") << QStringLiteral("max_sessions must be an integer 1..") << QStringList();
        QTest::newRow("open quote") << QByteArray("{\"command\": \"echo \047hi\"}") << QStringLiteral("command cannot be split into words: ") << QStringList();
        QTest::newRow("command not a string") << QByteArray(R"({"command": ["bash"]})") << QStringLiteral("command must be a string") << QStringList();
        QTest::newRow("NUL") << QByteArray(R"({"command": "a\u0000b"})") << QStringLiteral("command must not contain NUL characters") << QStringList();
        QTest::newRow("bind not an address") << QByteArray(R"({"bind": "example.org"})") << QStringLiteral("bind must be an IP address, not \"example.org\"") << QStringList();
        QTest::newRow("one bad field changes nothing") << QByteArray(R"({"ttl": 5, "port": -2})") << QStringLiteral("port must be an integer 0..65535") << QStringList();
    }
    void patchRules()
    {
        QFETCH(QByteArray, body);
        QFETCH(QString, error);
        QFETCH(QStringList, changed);
        const HostConfig before;
        HostConfig c = before;
        QString why;
        QStringList names;
        const bool ok = SettingsApi::applyPatch(body, &c, &why, &names);
        if (error.isEmpty()) {
            QVERIFY2(ok, qPrintable(why));
            names.sort();
            changed.sort();
            QCOMPARE(names, changed);
        } else {
            QVERIFY(!ok);
            QVERIFY2(why.startsWith(error), qPrintable(why));
            QCOMPARE(SettingsApi::toJson(c), SettingsApi::toJson(before)); // untouched
        }
    }

    void hostOwnsTheSettings()
    {
        QTemporaryDir dir;
        const QString ini = dir.filePath(QStringLiteral("tether.conf"));
        {
            QSettings s(ini, QSettings::IniFormat);
            s.setValue(QStringLiteral("server/port"), 7421);
            s.setValue(QStringLiteral("sessions/exitedTtl"), 900);
        }
        Fixture f;
        Limits limits;
        limits.exitedTtlSeconds = 900;
        QVERIFY(f.start(limits));
        f.server->setSettingsFile(ini);

        HttpReply r = f.http("GET", "/api/settings");
        QCOMPARE(r.status, 200);
        QJsonObject o = r.json();
        QCOMPARE(o.value(QStringLiteral("exited_ttl")).toInt(), 900);
        QCOMPARE(o.value(QStringLiteral("port")).toInt(), 7421); // the file's: the next start's
        QCOMPARE(o.value(QStringLiteral("serving")).toObject().value(QStringLiteral("port")).toInt(), int(f.port));
        QCOMPARE(o.value(QStringLiteral("saved")).toBool(), true);
        QCOMPARE(o.value(QStringLiteral("restart_needed")).toBool(), false);
        QCOMPARE(o.value(QStringLiteral("max_sessions_limit")).toInt(), SessionConfig::maxSessionsLimit());

        // Live: the registry's limits at once; saved: the file.
        r = f.http("PATCH", "/api/settings", "{\"ttl\": 120, \"buffer_size\": 131072, \"command\": \"sh -c \047exec cat\047\"}");
        QCOMPARE(r.status, 200);
        QCOMPARE(f.registry->limits().ttlSeconds, 120);
        QCOMPARE(f.registry->limits().bufferCapacity, qsizetype(131072));
        QCOMPARE(f.registry->limits().exitedTtlSeconds, 900);
        {
            QSettings s(ini, QSettings::IniFormat);
            QCOMPARE(s.value(QStringLiteral("sessions/ttl")).toInt(), 120);
            QCOMPARE(s.value(QStringLiteral("sessions/bufferSize")).toLongLong(), 131072);
            QCOMPARE(s.value(QStringLiteral("sessions/command")).toString(), QStringLiteral("sh -c \047exec cat\047"));
            QCOMPARE(s.value(QStringLiteral("server/port")).toInt(), 7421);
        }
        // The new default command is the one a session without a command runs.
        r = f.http("POST", "/api/sessions", "{}");
        QCOMPARE(r.status, 201);
        QCOMPARE(r.json().value(QStringLiteral("command")).toArray(),
                 (QJsonArray{QStringLiteral("sh"), QStringLiteral("-c"), QStringLiteral("exec cat")}));

        // The address: saved, used at the next start.
        r = f.http("PATCH", "/api/settings", R"({"port": 7422})");
        QCOMPARE(r.status, 200);
        o = r.json();
        QCOMPARE(o.value(QStringLiteral("port")).toInt(), 7422);
        QCOMPARE(o.value(QStringLiteral("restart_needed")).toBool(), true);
        QCOMPARE(o.value(QStringLiteral("serving")).toObject().value(QStringLiteral("port")).toInt(), int(f.port));
        QCOMPARE(f.server->port(), f.port);
        QCOMPARE(QSettings(ini, QSettings::IniFormat).value(QStringLiteral("server/port")).toInt(), 7422);

        // A bad body: 400 with the rule, nothing changed anywhere.
        r = f.http("PATCH", "/api/settings", R"({"ttl": 5, "max_sessions": 0})");
        QCOMPARE(r.status, 400);
        QVERIFY2(r.json().value(QStringLiteral("error")).toString().startsWith(QStringLiteral("max_sessions must be an integer 1..")),
                 r.body.constData());
        QCOMPARE(f.registry->limits().ttlSeconds, 120);
        QCOMPARE(QSettings(ini, QSettings::IniFormat).value(QStringLiteral("sessions/ttl")).toInt(), 120);

        // Other methods: 405 naming the two.
        r = f.http("POST", "/api/settings", "{}");
        QCOMPARE(r.status, 405);
        QCOMPARE(r.header("Allow"), QByteArray("GET, PATCH"));
        // The key is needed, as everywhere under /api.
        QCOMPARE(f.http("GET", "/api/settings", QByteArray(), Headers(), false).status, 401);
    }

    void savedScrollbackLinesApplyLive()
    {
        // The records' scrollback (sessions/savedScrollbackLines): saved,
        // and applied to the record store at once; 0 removes the running
        // sessions' records, more records them again.
        QTemporaryDir dir;
        const QString ini = dir.filePath(QStringLiteral("tether.conf"));
        const QString records = dir.filePath(QStringLiteral("sessions"));
        Fixture f;
        QVERIFY(f.start());
        f.server->setSettingsFile(ini);
        SessionRecordStore store(f.registry.get(), records, 1000);
        store.setTiming(50, 0);
        store.start();
        f.server->setRecordStore(&store);
        QCOMPARE(f.http("GET", "/api/settings").json().value(QStringLiteral("saved_scrollback_lines")).toInt(), 1000);
        Session *s = f.spawn();
        QVERIFY(s);
        const QString file = SessionRecordStore::fileFor(records, s->id());
        QTRY_VERIFY(QFile::exists(file));

        HttpReply r = f.http("PATCH", "/api/settings", R"({"saved_scrollback_lines": 0})");
        QCOMPARE(r.status, 200);
        QCOMPARE(r.json().value(QStringLiteral("saved_scrollback_lines")).toInt(), 0);
        QCOMPARE(store.lines(), 0);
        QCOMPARE(QSettings(ini, QSettings::IniFormat).value(QStringLiteral("sessions/savedScrollbackLines")).toInt(), 0);
        store.flush();
        QVERIFY(!QFile::exists(file)); // nothing of it stays on disk

        r = f.http("PATCH", "/api/settings", R"({"saved_scrollback_lines": 20})");
        QCOMPARE(r.status, 200);
        QCOMPARE(store.lines(), 20);
        QCOMPARE(f.http("GET", "/api/settings").json().value(QStringLiteral("saved_scrollback_lines")).toInt(), 20);
        QCOMPARE(QSettings(ini, QSettings::IniFormat).value(QStringLiteral("sessions/savedScrollbackLines")).toInt(), 20);
        QTRY_VERIFY(QFile::exists(file)); // recorded again
    }

    void overriddenNamesTheCommandLineValues()
    {
        // `tether serve --exited-ttl 45` over a file that says 900: the
        // answer names the field (for the Settings dialog's note), until a
        // PATCH of that field saves it.
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        const QString ini = dir.filePath(QStringLiteral("tether.conf"));
        {
            QSettings s(ini, QSettings::IniFormat);
            s.setValue(QStringLiteral("sessions/exitedTtl"), 900);
        }
        Fixture f;
        Limits limits;
        limits.exitedTtlSeconds = 45;
        QVERIFY(f.start(limits));
        f.server->setSettingsFile(ini);
        HttpReply r = f.http("GET", "/api/settings");
        QCOMPARE(r.status, 200);
        QCOMPARE(r.json().value(QStringLiteral("overridden")).toArray(), QJsonArray{QStringLiteral("exited_ttl")});
        r = f.http("PATCH", "/api/settings", R"({"max_sessions": 9})");
        QCOMPARE(r.status, 200);
        QCOMPARE(r.json().value(QStringLiteral("overridden")).toArray(), QJsonArray{QStringLiteral("exited_ttl")});
        r = f.http("PATCH", "/api/settings", R"({"exited_ttl": 60})");
        QCOMPARE(r.status, 200);
        QCOMPARE(r.json().value(QStringLiteral("overridden")).toArray(), QJsonArray());
        QCOMPARE(f.registry->limits().exitedTtlSeconds, 60);
    }

    void withoutAFileTheChangeIsForThisRun()
    {
        Fixture f;
        QVERIFY(f.start());
        const HttpReply r = f.http("PATCH", "/api/settings", R"({"max_sessions": 7})");
        QCOMPARE(r.status, 200);
        QCOMPARE(r.json().value(QStringLiteral("saved")).toBool(), false);
        QCOMPARE(r.json().value(QStringLiteral("restart_needed")).toBool(), false);
        QCOMPARE(f.registry->limits().maxSessions, 7);
    }
};

QTEST_GUILESS_MAIN(TestSettingsApi)
#include "tst_settingsapi.moc"
