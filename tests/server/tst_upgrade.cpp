// SPDX-License-Identifier: GPL-2.0-or-later
// Upgrades noticed (issue 13): a real `tether serve` started from a copy of
// the binary in a temporary directory; the copy is then replaced as a
// package upgrade does (a new file renamed over the name). The API and the
// event stream report the new version; a replacement that is not a Tether
// is no update; a rebuild put back and a restart in place run it; a
// `--version` probe still running at the restart is reaped, not left a
// zombie; and an idle server does not wake up to watch.
#include "serveprocess.h"
#include "servertestutil.h"
#include "testutil.h"
#include "upgradewatch.h"

#include <QDir>
#include <QFileInfo>
#include <QJsonDocument>
#include <QJsonObject>
#include <QTcpSocket>
#include <QTemporaryDir>
#include <QTest>

#include <csignal>
#include <memory>
#include <sys/stat.h>

using namespace ServerTest;

namespace {
/// The pid of the child of `pid` that runs with the argument --version (the
/// update probe); 0 when there is none.
qint64 probePid(qint64 pid)
{
    const QByteArray parent = QByteArray::number(pid);
    for (const QString &e : QDir(QStringLiteral("/proc")).entryList(QDir::Dirs | QDir::NoDotAndDotDot)) {
        const QByteArray st = readFile(QStringLiteral("/proc/%1/stat").arg(e));
        const QList<QByteArray> fields = st.mid(st.lastIndexOf(')') + 2).split(' '); // comm may hold ')'
        if (fields.size() >= 2 && fields.at(1) == parent
            && readFile(QStringLiteral("/proc/%1/cmdline").arg(e)).split('\0').contains("--version"))
            return e.toLongLong();
    }
    return 0;
}


/// An open GET /api/events; `events` collects the `server` events' data.
struct EventStream {
    QTcpSocket socket;
    QByteArray buffer;
    QList<QJsonObject> serverEvents;

    bool open(const ServeProcess &s)
    {
        QObject::connect(&socket, &QTcpSocket::readyRead, [this]() {
            buffer += socket.readAll();
            int end;
            while ((end = buffer.indexOf("\n\n")) >= 0) {
                const QByteArray event = buffer.left(end);
                buffer.remove(0, end + 2);
                if (event.startsWith("event: server\ndata: "))
                    serverEvents.append(QJsonDocument::fromJson(event.mid(20)).object());
            }
        });
        socket.connectToHost(QStringLiteral("127.0.0.1"), s.port);
        if (!socket.waitForConnected(5000))
            return false;
        socket.write("GET /api/events HTTP/1.1\r\nHost: 127.0.0.1:" + QByteArray::number(s.port)
                     + "\r\nAuthorization: Bearer " + s.key + "\r\n\r\n");
        return true;
    }
    QJsonValue lastUpdate() const
    {
        return serverEvents.isEmpty() ? QJsonValue(QJsonValue::Undefined)
                                      : serverEvents.last().value(QStringLiteral("update"));
    }
};

/// Writes `text` to `dir`/.NAME.new (mode 0755) and renames it over `dir`/NAME, as dpkg does.
bool install(const QString &dir, const QString &name, const QByteArray &text)
{
    const QString tmp = dir + QStringLiteral("/.") + name + QStringLiteral(".new");
    QFile f(tmp);
    if (!f.open(QIODevice::WriteOnly) || f.write(text) != text.size())
        return false;
    f.close();
    return ::chmod(QFile::encodeName(tmp).constData(), 0755) == 0
        && ::rename(QFile::encodeName(tmp).constData(), QFile::encodeName(dir + QLatin1Char('/') + name).constData()) == 0;
}

/// A copy of the built binary at `path` (a new file: another inode).
bool copyBinary(const QString &path)
{
    QFile::remove(path + QStringLiteral(".tmp"));
    if (!QFile::copy(tetherBinary(), path + QStringLiteral(".tmp")))
        return false;
    return ::chmod(QFile::encodeName(path + QStringLiteral(".tmp")).constData(), 0755) == 0
        && ::rename(QFile::encodeName(path + QStringLiteral(".tmp")).constData(), QFile::encodeName(path).constData()) == 0;
}

QJsonObject status(const ServeProcess &s)
{
    return s.http("GET", "/api/restart").json();
}

/// POST /api/restart, then waits (15 s at most) for another process image.
bool restarted(const ServeProcess &s)
{
    const QString instance = status(s).value(QStringLiteral("instance")).toString();
    if (instance.isEmpty() || s.http("POST", "/api/restart").status != 202)
        return false;
    return QTest::qWaitFor([&]() {
        const QString now = status(s).value(QStringLiteral("instance")).toString();
        return !now.isEmpty() && now != instance;
    }, 15000);
}

/// Context switches of every thread of `pid` so far (each wakeup is one).
qint64 contextSwitches(qint64 pid)
{
    qint64 n = 0;
    const QString tasks = QStringLiteral("/proc/%1/task").arg(pid);
    for (const QString &t : QDir(tasks).entryList(QDir::Dirs | QDir::NoDotAndDotDot)) {
        for (const QByteArray &line : readFile(tasks + QLatin1Char('/') + t + QStringLiteral("/status")).split('\n')) {
            if (line.startsWith("voluntary_ctxt_switches:") || line.startsWith("nonvoluntary_ctxt_switches:"))
                n += line.mid(line.indexOf(':') + 1).trimmed().toLongLong();
        }
    }
    return n;
}

} // namespace

class TestUpgrade : public QObject
{
    Q_OBJECT
private Q_SLOTS:
    void initTestCase()
    {
        if (tetherBinary().isEmpty())
            QSKIP("the tether executable is not built in this tree");
    }

    void noticesAReplacedBinary()
    {
        ServeProcess s;
        const QString bin = s.dir.filePath(QStringLiteral("bin"));
        QVERIFY(QDir().mkpath(bin));
        const QString copy = bin + QStringLiteral("/tether");
        QVERIFY(copyBinary(copy));
        s.program = copy;
        QVERIFY(s.start());
        const qint64 pid = s.proc.processId();
        const QString id = s.create({QStringLiteral("/bin/sh"), QStringLiteral("-c"), QStringLiteral("echo ready; exec sleep 1000")});
        QVERIFY(!id.isEmpty());

        QJsonObject st = status(s);
        QCOMPARE(st.value(QStringLiteral("version")).toString(), QStringLiteral(TETHER_PROJECT_VERSION));
        QVERIFY(st.value(QStringLiteral("update")).isNull());
        QCOMPARE(st.value(QStringLiteral("binary")).toString(), copy);
        EventStream events;
        QVERIFY(events.open(s));
        QTRY_COMPARE(events.serverEvents.size(), 1); // once on connect
        QVERIFY(events.lastUpdate().isNull());
        QCOMPARE(events.serverEvents.first().value(QStringLiteral("version")).toString(), QStringLiteral(TETHER_PROJECT_VERSION));

        // Idle, watching costs nothing: no timer, no wakeup. (The event
        // stream's keepalive is every 20 s.)
        QTRY_VERIFY(s.session(id).value(QStringLiteral("offset")).toInt() > 0);
        // The session's record (SessionRecordStore, issue 24) is written
        // once, kIdleMs after its output went quiet; measure after it.
        const QString record = s.dir.filePath(QStringLiteral("state/tether/sessions/") + id + QStringLiteral(".json"));
        QTRY_VERIFY_WITH_TIMEOUT(QFile::exists(record), 10000);
        // Settled: the last requests' connections closed, the record's
        // write done (the server woke for none of it in 300 ms). Polled,
        // however long a loaded machine takes to get there.
        QTRY_VERIFY_WITH_TIMEOUT([&] {
            const qint64 at = contextSwitches(pid);
            QTest::qWait(300);
            return contextSwitches(pid) == at;
        }(), 20000);
        // The measurement itself is a window of time (a negative check: no
        // timer fires in it), after the sync point above.
        const qint64 before = contextSwitches(pid);
        QTest::qWait(2500);
        const qint64 woke = contextSwitches(pid) - before;
        qInfo("%lld wakeups in 2.5 s idle", woke);
        QVERIFY2(woke <= 2, qPrintable(QStringLiteral("%1 wakeups while idle").arg(woke)));

        // An upgrade: a new file renamed over the name.
        QVERIFY(install(bin, QStringLiteral("tether"), "#!/bin/sh\necho \"tether 9.9.9\"\n"));
        QTRY_VERIFY(status(s).value(QStringLiteral("update")).isObject());
        const QJsonObject update = status(s).value(QStringLiteral("update")).toObject();
        QCOMPARE(update.value(QStringLiteral("version")).toString(), QStringLiteral("9.9.9"));
        QCOMPARE(update.value(QStringLiteral("binary")).toString(), copy);
        QCOMPARE(status(s).value(QStringLiteral("version")).toString(), QStringLiteral(TETHER_PROJECT_VERSION));
        QTRY_VERIFY(events.lastUpdate().isObject());
        QCOMPARE(events.lastUpdate().toObject(), update);
        QTRY_COMPARE(childrenOf(pid, 'Z'), 0); // the probe was reaped

        // Not a Tether (or half-written): no update.
        QVERIFY(install(bin, QStringLiteral("tether"), "#!/bin/sh\necho hello\n"));
        QTRY_VERIFY(status(s).value(QStringLiteral("update")).isNull());
        QTRY_VERIFY(events.lastUpdate().isNull());

        // Another file of the same version (a rebuild): an update to it, and
        // a restart in place runs it, after which there is none.
        QVERIFY(copyBinary(copy));
        QTRY_COMPARE(status(s).value(QStringLiteral("update")).toObject().value(QStringLiteral("version")).toString(),
                     QStringLiteral(TETHER_PROJECT_VERSION));
        QVERIFY(restarted(s));
        QCOMPARE(s.proc.processId(), pid);
        QVERIFY(status(s).value(QStringLiteral("update")).isNull());
        QCOMPARE(s.session(id).value(QStringLiteral("state")).toString(), QStringLiteral("running"));
        QCOMPARE(childrenOf(pid, 'Z'), 0);
    }

    void probeRunningAtExitIsEnded()
    {
        // The watch goes away (the server exits) while its --version probe
        // runs: the probe is killed, reaped and freed then, not left to a
        // deleteLater no event loop would run any more (LeakSanitizer in
        // tst_systemd; the child stayed a zombie until the process ended).
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        QVERIFY(install(dir.path(), QStringLiteral("tether"), "#!/bin/sh\nexec sleep 30\n"));
        const QString binary = dir.filePath(QStringLiteral("tether"));
        const qint64 self = QCoreApplication::applicationPid();
        auto watch = std::make_unique<Tether::UpgradeWatch>([binary]() { return binary; });
        QString error;
        QVERIFY2(watch->start(&error), qPrintable(error));
        QTRY_COMPARE(childrenOf(self, 0, "30"), 1); // the probe runs (sleep 30 --version)
        watch.reset(); // no event processed after this
        QCOMPARE(childrenOf(self, 0, "30"), 0);
        QCOMPARE(childrenOf(self, 'Z'), 0);
    }

    void probeRunningAtRestartIsReaped()
    {
        // The replaced binary answers --version slowly; a restart in place
        // comes while that probe runs. It must not be left behind as a
        // child the next image does not know (a zombie for good).
        ServeProcess s;
        const QString bin = s.dir.filePath(QStringLiteral("bin"));
        const QString real = s.dir.filePath(QStringLiteral("real"));
        QVERIFY(QDir().mkpath(bin) && QDir().mkpath(real));
        QVERIFY(copyBinary(bin + QStringLiteral("/tether")));
        QVERIFY(copyBinary(real + QStringLiteral("/tether")));
        s.program = bin + QStringLiteral("/tether");
        QVERIFY(s.start());
        const qint64 pid = s.proc.processId();
        const QString id = s.create({QStringLiteral("/bin/sh"), QStringLiteral("-c"), QStringLiteral("exec sleep 1000")});
        QVERIFY(!id.isEmpty());

        // A wrapper: slow for --version, else the real binary (what the
        // restart executes).
        QVERIFY(install(bin, QStringLiteral("tether"),
                        "#!/bin/sh\nif [ \"$1\" = --version ]; then sleep 3; echo \"tether 9.9.9\"; exit 0; fi\n"
                        "exec '" + QFile::encodeName(real) + "/tether' \"$@\"\n"));
        QTRY_COMPARE(childrenOf(pid, 0, "--version"), 1); // the probe runs
        const qint64 probe = probePid(pid);
        QVERIFY(probe > 0);
        QVERIFY(restarted(s));
        QCOMPARE(s.proc.processId(), pid);
        QCOMPARE(status(s).value(QStringLiteral("binary")).toString(), real + QStringLiteral("/tether"));
        QVERIFY(status(s).value(QStringLiteral("update")).isNull());
        QCOMPARE(s.session(id).value(QStringLiteral("state")).toString(), QStringLiteral("running"));
        // Killed at the exec and reaped by the new image: the probe's pid is
        // gone. (Left running, it would end after its 3 s and stay a zombie,
        // or stay a zombie at once if killed and not reaped: either way its
        // pid stays.)
        QTRY_VERIFY_WITH_TIMEOUT(!QFileInfo::exists(QStringLiteral("/proc/%1").arg(probe)), 10000);
        QCOMPARE(childrenOf(pid, 'Z'), 0);
        QCOMPARE(childrenOf(pid, 0, "--version"), 0);
    }
};

QTEST_GUILESS_MAIN(TestUpgrade)
#include "tst_upgrade.moc"
