// SPDX-License-Identifier: GPL-2.0-or-later
// EventStream and SessionListModel: a client's live session list from
// `GET /api/events` of a real in-process server on port 0 (sessions appear,
// change, exit and leave without polling; the stream comes back after the
// server goes away and returns on the same port; a wrong key stops it with
// the API's words), and the model's diffing as pure logic.
#include "apiclient.h"
#include "eventstream.h"
#include "registry.h"
#include "server.h"
#include "servertestutil.h"
#include "session.h"
#include "sessionlistmodel.h"

#include <QAbstractItemModelTester>
#include <QJsonArray>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTest>

#include <csignal>

using namespace Tether;
using namespace ServerTest;

namespace {
QJsonObject sessionObject(const QString &id, const QString &state = QStringLiteral("running"), int viewers = 0)
{
    return QJsonObject{{QStringLiteral("id"), id},
                       {QStringLiteral("name"), QString()},
                       {QStringLiteral("command"), QJsonArray{QStringLiteral("/bin/bash"), QStringLiteral("-l")}},
                       {QStringLiteral("pid"), 100},
                       {QStringLiteral("title"), QString()},
                       {QStringLiteral("state"), state},
                       {QStringLiteral("exit_code"), state == QLatin1String("exited") ? QJsonValue(0) : QJsonValue()},
                       {QStringLiteral("exit_signal"), QJsonValue()},
                       {QStringLiteral("attached"), viewers > 0},
                       {QStringLiteral("viewers"), viewers},
                       {QStringLiteral("viewer_kind"), viewers > 0 ? QJsonValue(QStringLiteral("cli")) : QJsonValue()},
                       {QStringLiteral("idle_seconds"), 5},
                       {QStringLiteral("expires_in"), QJsonValue()},
                       {QStringLiteral("buffer_bytes"), 2048},
                       {QStringLiteral("buffer_capacity"), 1048576}};
}

QStringList idsOf(const SessionListModel &m)
{
    QStringList ids;
    for (int i = 0; i < m.rowCount(); ++i)
        ids << m.index(i, 0).data(SessionListModel::SessionIdRole).toString();
    return ids;
}

ServerEndpoint endpointOf(const Fixture &f, const QByteArray &key)
{
    ServerEndpoint ep;
    ep.url = QUrl(QStringLiteral("http://127.0.0.1:%1/").arg(f.port));
    ep.key = QString::fromLatin1(key);
    return ep;
}
} // namespace

class TestSessionList : public QObject
{
    Q_OBJECT
private Q_SLOTS:
    void modelFollowsTheListById()
    {
        SessionListModel m;
        QAbstractItemModelTester tester(&m, QAbstractItemModelTester::FailureReportingMode::QtTest);
        QSignalSpy inserted(&m, &QAbstractItemModel::rowsInserted);
        QSignalSpy removed(&m, &QAbstractItemModel::rowsRemoved);
        QSignalSpy reset(&m, &QAbstractItemModel::modelReset);
        QSignalSpy exited(&m, &SessionListModel::sessionExited);
        m.setSessions(QJsonArray{sessionObject(QStringLiteral("a")), sessionObject(QStringLiteral("b"))});
        QCOMPARE(idsOf(m), (QStringList{QStringLiteral("a"), QStringLiteral("b")}));
        QCOMPARE(m.index(0, SessionListModel::TitleColumn).data().toString(), QStringLiteral("bash -l"));
        QCOMPARE(m.index(0, SessionListModel::StateColumn).data().toString(), QStringLiteral("running"));
        QCOMPARE(m.index(0, SessionListModel::AttachedColumn).data().toString(), QStringLiteral("nobody"));
        QCOMPARE(m.index(0, SessionListModel::BufferColumn).data().toString(), QStringLiteral("2 KiB of 1 MiB"));
        QCOMPARE(m.runningCount(), 2);
        // a leaves, c comes, b exits while attached: rows by id, no reset.
        m.setSessions(QJsonArray{sessionObject(QStringLiteral("b"), QStringLiteral("exited"), 1), sessionObject(QStringLiteral("c"))});
        QCOMPARE(idsOf(m), (QStringList{QStringLiteral("b"), QStringLiteral("c")}));
        QCOMPARE(removed.size(), 1);
        QCOMPARE(inserted.size(), 3); // a, b, then c
        QCOMPARE(reset.size(), 0);
        QCOMPARE(exited.size(), 1);
        QCOMPARE(exited.first().first().toJsonObject().value(QStringLiteral("id")).toString(), QStringLiteral("b"));
        QCOMPARE(m.index(0, SessionListModel::StateColumn).data().toString(), QStringLiteral("exited 0"));
        QCOMPARE(m.index(0, SessionListModel::AttachedColumn).data().toString(), QStringLiteral("CLI"));
        QCOMPARE(m.runningCount(), 1);
        QCOMPARE(m.attachedCount(), 1);
        // The same exit again is no second exit.
        m.setSessions(QJsonArray{sessionObject(QStringLiteral("b"), QStringLiteral("exited"), 1), sessionObject(QStringLiteral("c"))});
        QCOMPARE(exited.size(), 1);
        // An ended session (a record a reboot or crash left, on a server
        // that keeps them) is not running, and says why it ended.
        QJsonObject ended = sessionObject(QStringLiteral("d"), QStringLiteral("ended"), 0);
        ended.insert(QStringLiteral("ended"), QStringLiteral("reboot"));
        m.setSessions(QJsonArray{sessionObject(QStringLiteral("c")), ended});
        QCOMPARE(m.runningCount(), 1);
        QCOMPARE(m.index(1, SessionListModel::StateColumn).data().toString(), QStringLiteral("ended by reboot"));
        m.clear();
        QCOMPARE(m.rowCount(), 0);
    }

    // One wording of the shell's command for `tether list` (SHELL) and the
    // Sessions window (Command): SessionListModel::shellText().
    void shellText_data()
    {
        QTest::addColumn<QByteArray>("shell");
        QTest::addColumn<int>("later");
        QTest::addColumn<QString>("text");
        QTest::newRow("no shell object") << QByteArray("null") << 0 << QStringLiteral("-");
        QTest::newRow("no integration") << QByteArray(R"({"state":"unknown","cwd":"","command":null})") << 0
                                        << QStringLiteral("-");
        QTest::newRow("first prompt") << QByteArray(R"({"state":"prompt","cwd":"/tmp","command":null})") << 0
                                      << QStringLiteral("idle");
        QTest::newRow("running") << QByteArray(R"({"state":"running","command":{"running":true,"duration_ms":725000,"command_line":"make -j8"}})")
                                 << 0 << QStringLiteral("run 12m: make -j8");
        QTest::newRow("running, list 60 s old")
            << QByteArray(R"({"state":"running","command":{"running":true,"duration_ms":7520000,"command_line":"make"}})")
            << 60 << QStringLiteral("run 2h 6m: make");
        QTest::newRow("running, seconds") << QByteArray(R"({"state":"running","command":{"running":true,"duration_ms":900,"command_line":"ls"}})")
                                          << 0 << QStringLiteral("run 0s: ls");
        QTest::newRow("failed") << QByteArray(R"({"state":"prompt","command":{"running":false,"exit_status":2,"duration_ms":1,"command_line":"make test"}})")
                                << 30 << QStringLiteral("exit 2: make test");
        QTest::newRow("no status") << QByteArray(R"({"state":"prompt","command":{"running":false,"exit_status":null,"command_line":"true"}})")
                                   << 0 << QStringLiteral("done: true");
        QTest::newRow("no command line") << QByteArray(R"({"state":"prompt","command":{"running":false,"exit_status":0,"command_line":""}})")
                                         << 0 << QStringLiteral("exit 0");
    }
    void shellText()
    {
        QFETCH(QByteArray, shell);
        QFETCH(int, later);
        QFETCH(QString, text);
        QJsonObject s = sessionObject(QStringLiteral("a"));
        const QJsonDocument doc = QJsonDocument::fromJson("[" + shell + "]");
        s.insert(QStringLiteral("shell"), doc.array().at(0));
        QCOMPARE(SessionListModel::shellText(s, later), text);
        if (later == 0) {
            SessionListModel m;
            m.setSessions(QJsonArray{s});
            QCOMPARE(m.index(0, SessionListModel::ShellColumn).data().toString(), text);
        }
    }

    void liveListFromTheEventStream()
    {
        // The key kept in a file, as the user's is: the server that comes
        // back has the same one.
        QTemporaryDir dir;
        const QString keyFile = dir.filePath(QStringLiteral("access-key"));
        Fixture f;
        QVERIFY(f.start(Limits(), [&](HostConfig &c) { c.accessKeyFile = keyFile; }));
        EventStream stream(endpointOf(f, f.key));
        stream.setRetryDelays(50, 200);
        SessionListModel model;
        connect(&stream, &EventStream::sessionsReceived, &model, &SessionListModel::setSessions);
        QSignalSpy connected(&stream, &EventStream::connectedChanged);
        QSignalSpy exited(&model, &SessionListModel::sessionExited);
        stream.start();
        QTRY_VERIFY(stream.isConnected());
        QCOMPARE(model.rowCount(), 0);
        // A session made elsewhere appears; its exit is seen as an exit.
        Session *s = f.spawn({QStringLiteral("/bin/sleep"), QStringLiteral("300")});
        QVERIFY(s);
        const QString id = s->id();
        QTRY_COMPARE(model.rowOf(id), 0);
        QCOMPARE(model.index(0, SessionListModel::StateColumn).data().toString(), QStringLiteral("running"));
        QVERIFY(::kill(pid_t(s->pid()), SIGKILL) == 0);
        QTRY_COMPARE(exited.size(), 1);
        QVERIFY2(model.index(0, SessionListModel::StateColumn).data().toString().startsWith(QStringLiteral("killed by signal 9")),
                 qPrintable(model.index(0, SessionListModel::StateColumn).data().toString()));
        // Killed: it leaves the list.
        f.registry->kill(id);
        QTRY_COMPARE(model.rowCount(), 0);

        // The server goes away and comes back on the same port (a restart):
        // the stream reconnects by itself and lists what the new one has.
        const quint16 port = f.port;
        const QByteArray key = f.key;
        f.stop();
        QTRY_VERIFY(!stream.isConnected());
        Fixture g;
        QVERIFY(g.start(Limits(), [&](HostConfig &c) {
            c.port = port;
            c.accessKeyFile = keyFile;
        }));
        QCOMPARE(g.key, key);
        QVERIFY(g.spawn());
        QTRY_VERIFY_WITH_TIMEOUT(stream.isConnected(), 10000);
        QTRY_COMPARE(model.rowCount(), 1);
    }

    void wrongKeyStopsTheStream()
    {
        Fixture f;
        QVERIFY(f.start());
        EventStream stream(endpointOf(f, "not-the-key"));
        QSignalSpy refused(&stream, &EventStream::refused);
        stream.start();
        QTRY_COMPARE(refused.size(), 1);
        QCOMPARE(refused.first().at(0).toInt(), 401);
        QVERIFY(!refused.first().at(1).toString().isEmpty());
        QVERIFY(!stream.isConnected());
    }
};

QTEST_GUILESS_MAIN(TestSessionList)
#include "tst_sessionlist.moc"
