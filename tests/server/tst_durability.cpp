// SPDX-License-Identifier: GPL-2.0-or-later
// Sessions live until the user ends them: the defaults that keep running work
// (no TTL for running sessions, 30 min for exited ones), and the access key
// that survives a restart (kept owner-only beside the settings) until
// `tether key --rotate` replaces it.
#include "accesskey.h"
#include "serveprocess.h"
#include "servertestutil.h"
#include "testutil.h"

#include <QFile>
#include <QJsonDocument>
#include <QJsonObject>
#include <QSignalSpy>
#include <QTcpSocket>
#include <QTemporaryDir>
#include <QTest>

#include <sys/stat.h>

using namespace Tether;
using namespace ServerTest;

namespace {
mode_t fileMode(const QString &path)
{
    struct stat st;
    return ::stat(QFile::encodeName(path).constData(), &st) == 0 ? (st.st_mode & 07777) : mode_t(-1);
}

QByteArray fileText(const QString &path)
{
    QFile f(path);
    return f.open(QIODevice::ReadOnly) ? f.readAll() : QByteArray();
}

void writeFile(const QString &path, const QByteArray &text, mode_t mode)
{
    QFile f(path);
    QVERIFY(f.open(QIODevice::WriteOnly | QIODevice::Truncate));
    f.write(text);
    f.close();
    QCOMPARE(::chmod(QFile::encodeName(path).constData(), mode), 0);
}
} // namespace

class TestDurability : public QObject
{
    Q_OBJECT
private Q_SLOTS:
    void keyFileIsKeptOwnerOnly();
    void untrustedKeyFileIsReplaced_data();
    void untrustedKeyFileIsReplaced();
    void unwritableKeyFileSaysWhy();
    void rotationEndsOldKeyAndTellsDashboards();
    void defaultsKeepRunningSessions();
    void keySurvivesRestartUntilRotated();
    void exitedTtlOption();
};

void TestDurability::keyFileIsKeptOwnerOnly()
{
    QTemporaryDir dir;
    const QString path = dir.filePath(QStringLiteral("Tether/access-key"));
    QString error;
    const QString key = loadOrCreateAccessKey(path, &error);
    QVERIFY2(isWellFormedAccessKey(key), qPrintable(error));
    QCOMPARE(fileMode(path), mode_t(0600));
    QCOMPARE(fileText(path), key.toLatin1() + '\n');
    QCOMPARE(loadOrCreateAccessKey(path, &error), key); // the same key next time
    QVERIFY(!QFile::exists(path + QStringLiteral(".new")));
}

void TestDurability::untrustedKeyFileIsReplaced_data()
{
    QTest::addColumn<QByteArray>("content");
    QTest::addColumn<int>("mode");
    const QByteArray good = generateAccessKey().toLatin1() + '\n';
    QTest::newRow("readable by group") << good << 0640;
    QTest::newRow("readable by others") << good << 0604;
    QTest::newRow("too short") << QByteArray("abc\n") << 0600;
    QTest::newRow("bad characters") << QByteArray(43, '*') << 0600;
    QTest::newRow("empty") << QByteArray() << 0600;
}

void TestDurability::untrustedKeyFileIsReplaced()
{
    QFETCH(QByteArray, content);
    QFETCH(int, mode);
    QTemporaryDir dir;
    const QString path = dir.filePath(QStringLiteral("access-key"));
    writeFile(path, content, mode_t(mode));
    QString error;
    const QString key = loadOrCreateAccessKey(path, &error);
    QVERIFY2(isWellFormedAccessKey(key), qPrintable(error));
    QVERIFY(key.toLatin1() + '\n' != content);
    QCOMPARE(fileMode(path), mode_t(0600));
    QCOMPARE(fileText(path), key.toLatin1() + '\n');
}

void TestDurability::unwritableKeyFileSaysWhy()
{
    QTemporaryDir dir;
    // A regular file where the directory should be: no key can be kept there.
    writeFile(dir.filePath(QStringLiteral("Tether")), "x", 0600);
    QString error;
    QCOMPARE(loadOrCreateAccessKey(dir.filePath(QStringLiteral("Tether/access-key")), &error), QString());
    QVERIFY2(error.contains(QStringLiteral("Tether")), qPrintable(error));
    // A server given that path still serves, with a key of its own.
    SessionRegistry registry;
    HostConfig config;
    config.port = 0;
    config.accessKeyFile = dir.filePath(QStringLiteral("Tether/access-key"));
    Server server(&registry, config);
    QVERIFY(isWellFormedAccessKey(server.accessKey()));
}

void TestDurability::rotationEndsOldKeyAndTellsDashboards()
{
    QTemporaryDir dir;
    Fixture f;
    QVERIFY(f.start());
    // In-process, the fixture's server has no key file: give the rotation one
    // by a second server on the same registry with a key file.
    HostConfig config;
    config.bind = QStringLiteral("127.0.0.1");
    config.port = 0;
    config.accessKeyFile = dir.filePath(QStringLiteral("access-key"));
    Server server(f.registry.get(), config);
    QString error;
    QVERIFY2(server.listen(&error), qPrintable(error));
    f.server.reset();
    f.port = server.port();
    const QByteArray oldKey = server.accessKey().toLatin1();
    QCOMPARE(fileText(config.accessKeyFile), oldKey + '\n');
    f.key = oldKey;

    // An open dashboard's event stream.
    QTcpSocket events;
    events.connectToHost(QHostAddress::LocalHost, f.port);
    QVERIFY(events.waitForConnected(5000));
    events.write(f.build("GET", "/api/events"));
    QByteArray stream;
    QTRY_VERIFY((stream += events.readAll()).contains("event: sessions"));
    QSignalSpy changed(&server, &Server::accessKeyChanged);

    HttpReply r = f.http("GET", "/api/key");
    QCOMPARE(r.status, 405);
    r = f.http("POST", "/api/key");
    QCOMPARE(r.status, 200);
    const QByteArray newKey = r.json().value(QStringLiteral("key")).toString().toLatin1();
    QVERIFY(isWellFormedAccessKey(QString::fromLatin1(newKey)));
    QVERIFY(newKey != oldKey);
    QCOMPARE(r.json().value(QStringLiteral("url")).toString(), server.keyedUrl());
    QVERIFY(server.keyedUrl().endsWith(QString::fromLatin1(newKey)));
    QCOMPARE(changed.count(), 1);
    QCOMPARE(fileText(config.accessKeyFile), newKey + '\n');

    // The dashboard is told, then its stream ends.
    QTRY_VERIFY((stream += events.readAll()).contains("event: key\ndata: {}\n\n"));
    QTRY_COMPARE(events.state(), QAbstractSocket::UnconnectedState);
    QTRY_COMPARE(server.eventStreamCount(), 0);

    // The old key is refused at once; the new one works.
    QCOMPARE(f.http("GET", "/api/sessions").status, 401);
    f.key = newKey;
    QCOMPARE(f.http("GET", "/api/sessions").status, 200);
    // A server started later from the same file has the rotated key.
    Server again(f.registry.get(), config);
    QCOMPARE(again.accessKey().toLatin1(), newKey);
}

void TestDurability::defaultsKeepRunningSessions()
{
    if (tetherBinary().isEmpty())
        QSKIP("the tether executable is not built in this tree");
    ServeProcess s; // no settings at all
    QVERIFY(s.start());
    const QString running = s.create({QStringLiteral("sleep"), QStringLiteral("600")});
    const QString done = s.create({QStringLiteral("true")});
    QVERIFY(!running.isEmpty() && !done.isEmpty());
    QTRY_COMPARE(s.session(done).value(QStringLiteral("state")).toString(), QStringLiteral("exited"));
    const QJsonObject r = s.session(running);
    QCOMPARE(r.value(QStringLiteral("state")).toString(), QStringLiteral("running"));
    QVERIFY(r.value(QStringLiteral("attached")) == QJsonValue(false));
    QVERIFY(r.value(QStringLiteral("expires_in")).isNull());
    const double left = s.session(done).value(QStringLiteral("expires_in")).toDouble();
    QVERIFY2(left > 1790 && left <= 1800, qPrintable(QString::number(left)));

    // `tether list` says which will expire and when.
    const TetherRun list = runTether(s, {QStringLiteral("list")});
    QCOMPARE(list.code, 0);
    QVERIFY2(list.out.contains("EXPIRES"), list.out.constData());
    const QList<QByteArray> lines = list.out.split('\n');
    bool sawNever = false, sawMinutes = false;
    for (const QByteArray &line : lines) {
        if (line.startsWith(running.left(4).toLatin1()))
            sawNever = line.contains("never");
        if (line.startsWith(done.left(4).toLatin1()))
            sawMinutes = line.contains("30m") || line.contains("29m");
    }
    QVERIFY2(sawNever && sawMinutes, list.out.constData());
}

void TestDurability::keySurvivesRestartUntilRotated()
{
    if (tetherBinary().isEmpty())
        QSKIP("the tether executable is not built in this tree");
    ServeProcess s;
    QVERIFY(s.start());
    const QByteArray first = s.key;
    const QString keyFile = s.dir.path() + QStringLiteral("/config/Tether/access-key");
    QCOMPARE(fileMode(keyFile), mode_t(0600));
    QCOMPARE(fileText(keyFile), first + '\n');

    // `tether key` prints the link that works.
    TetherRun k = runTether(s, {QStringLiteral("key")});
    QCOMPARE(k.code, 0);
    QCOMPARE(k.out, "http://127.0.0.1:" + QByteArray::number(s.port) + "/?key=" + first + '\n');

    // A cold restart (stop, start again): the same key.
    s.proc.terminate();
    QVERIFY(s.waitFinished());
    s.out.clear();
    QVERIFY(s.start());
    QCOMPARE(s.key, first);

    // Rotated: a new key, printed, in server.json and in the key file; the
    // old one refused; and the next start keeps the new one.
    k = runTether(s, {QStringLiteral("key"), QStringLiteral("--rotate")});
    QCOMPARE(k.code, 0);
    const QByteArray rotated = QString::fromLatin1(k.out.trimmed()).section(QLatin1Char('='), 1).toLatin1();
    QVERIFY2(isWellFormedAccessKey(QString::fromLatin1(rotated)) && rotated != first, k.out.constData());
    QCOMPARE(QJsonDocument::fromJson(fileText(s.runtimeFile())).object().value(QStringLiteral("key")).toString().toLatin1(), rotated);
    QCOMPARE(fileText(keyFile), rotated + '\n');
    QCOMPARE(s.http("GET", "/api/sessions").status, 401);
    s.key = rotated;
    QCOMPARE(s.http("GET", "/api/sessions").status, 200);
    s.proc.terminate();
    QVERIFY(s.waitFinished());
    s.out.clear();
    QVERIFY(s.start());
    QCOMPARE(s.key, rotated);
}

void TestDurability::exitedTtlOption()
{
    if (tetherBinary().isEmpty())
        QSKIP("the tether executable is not built in this tree");
    ServeProcess s;
    QVERIFY(s.start({QStringLiteral("--exited-ttl"), QStringLiteral("2")}));
    const QString running = s.create({QStringLiteral("sleep"), QStringLiteral("600")});
    const QString done = s.create({QStringLiteral("true")});
    QVERIFY(!running.isEmpty() && !done.isEmpty());
    // The exited one goes 2 s after its exit; the running one stays.
    QTRY_COMPARE_WITH_TIMEOUT(s.http("GET", "/api/sessions/" + done.toLatin1()).status, 404, 15000);
    QCOMPARE(s.session(running).value(QStringLiteral("state")).toString(), QStringLiteral("running"));
    QVERIFY(s.session(running).value(QStringLiteral("expires_in")).isNull());
}

QTEST_GUILESS_MAIN(TestDurability)
#include "tst_durability.moc"
