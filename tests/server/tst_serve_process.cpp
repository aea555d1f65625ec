// SPDX-License-Identifier: GPL-2.0-or-later
// `tether serve` as a process among others (issue 10), with the real binary:
// the descriptor limit it raises for itself and gives back to its sessions
// (also across a restart in place), the 503 that names the PTY limit, and the
// log line that names the signal and the process that ended it.
#include "serveprocess.h"

#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QRegularExpression>
#include <QTcpSocket>
#include <QtTest>

#include <csignal>
#include <memory>
#include <sys/resource.h>
#include <unistd.h>
#include <vector>

using namespace ServerTest;

namespace {

/// "Max open files" of /proc/PID/limits as {soft, hard}; {} when unreadable.
QList<QByteArray> openFileLimits(qint64 pid)
{
    const QByteArray limits = readFile(QStringLiteral("/proc/%1/limits").arg(pid));
    for (const QByteArray &line : limits.split('\n')) {
        if (line.startsWith("Max open files"))
            return line.mid(int(qstrlen("Max open files"))).simplified().split(' ').mid(0, 2);
    }
    return {};
}

/// The environment of `s` with the info log on (ServeProcess turns it off).
QProcessEnvironment infoLogging(const ServeProcess &s)
{
    QProcessEnvironment env = s.environment();
    env.insert(QStringLiteral("QT_LOGGING_RULES"), QStringLiteral("tether.*.debug=false"));
    return env;
}

/// How often `line` happened according to the log `err`: the lines
/// "tether.server: LINE" plus the N of every "LINE (repeated N times in W s)"
/// (windows of 2 s, 4 s, 8 s, ... while an episode goes on: RepeatLimiter).
qint64 occurrences(const QByteArray &err, const QString &line)
{
    qint64 n = 0;
    const QRegularExpression summary(QStringLiteral("^tether\\.server: %1 \\(repeated ([0-9,]+) times? in [0-9]+ m?s\\)$")
                                         .arg(QRegularExpression::escape(line)));
    for (const QByteArray &l : err.split('\n')) {
        const QString text = QString::fromUtf8(l);
        if (text == QStringLiteral("tether.server: ") + line) {
            ++n;
            continue;
        }
        const QRegularExpressionMatch m = summary.match(text);
        if (m.hasMatch())
            n += m.captured(1).remove(QLatin1Char(',')).toLongLong();
    }
    return n;
}

/// POST /api/sessions with `argv`: the reply.
HttpReply post(const ServeProcess &s, const QStringList &argv)
{
    const QByteArray body = QJsonDocument(QJsonObject{{QStringLiteral("command"), QJsonArray::fromStringList(argv)}})
                                .toJson(QJsonDocument::Compact);
    return s.http("POST", "/api/sessions", body);
}

} // namespace

class TestServeProcess : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void initTestCase()
    {
        if (tetherBinary().isEmpty())
            QSKIP("the tether executable is not built");
    }

    /// The server raises its soft limit to the hard one; each session gets
    /// the soft limit the server was started with (select(2) breaks above
    /// 1024), and still does after a restart in place (execve keeps the
    /// raised limit), without the hand-over variable leaking into it.
    void sessionsGetTheSoftLimitTetherStartedWith_data()
    {
        QTest::addColumn<bool>("desktop");
        QTest::newRow("tether serve") << false;
        QTest::newRow("tether (desktop app, offscreen)") << true;
    }
    void sessionsGetTheSoftLimitTetherStartedWith()
    {
        QFETCH(bool, desktop);
        struct rlimit rl;
        QVERIFY(::getrlimit(RLIMIT_NOFILE, &rl) == 0);
        if (rl.rlim_max <= 512)
            QSKIP("the hard descriptor limit is too low to lower the soft one below it");
        const QByteArray hard = QByteArray::number(qulonglong(rl.rlim_max));
        ServeProcess s;
        const QStringList prlimit{QStringLiteral("prlimit"), QStringLiteral("--nofile=512:"), QStringLiteral("--")};
        if (desktop) {
            s.proc.setProcessEnvironment(s.environment({QStringLiteral("QT_QPA_PLATFORM=offscreen")}));
            s.proc.start(prlimit.first(), prlimit.mid(1) + QStringList{tetherBinary(), QStringLiteral("--no-tray"),
                                                                      QStringLiteral("--port"), QStringLiteral("0")});
            QVERIFY(s.proc.waitForStarted(5000));
            QVERIFY2(s.waitLine(), s.err.constData());
        } else {
            s.wrapper = prlimit;
            QVERIFY2(s.start(), s.err.constData());
        }
        // The desktop app is a client: the host it started (`tether serve`,
        // with the limits it was started with) holds the sessions.
        qint64 host = s.proc.processId();
        if (desktop) {
            QFile rt(s.runtimeFile());
            QVERIFY(rt.open(QIODevice::ReadOnly));
            host = qint64(QJsonDocument::fromJson(rt.readAll()).object().value(QStringLiteral("pid")).toDouble());
            QVERIFY(host > 0 && host != s.proc.processId());
        }
        struct StopHost {
            qint64 pid;
            bool desktop;
            ~StopHost()
            {
                if (desktop && ::kill(pid_t(pid), SIGTERM) == 0)
                    (void)QTest::qWaitFor([this] { return ::kill(pid_t(pid), 0) != 0; }, 15000); // cleanup: the check is elsewhere
            }
        } stopHost{host, desktop};
        QCOMPARE(openFileLimits(host), (QList<QByteArray>{hard, hard}));

        const QString script = QStringLiteral("ulimit -Sn > %1; ulimit -Hn >> %1; echo \"${TETHER_HANDOVER_NOFILE_SOFT-unset}\" >> %1; "
                                              "echo done >> %1; exec sleep 60");
        const QString first = s.dir.path() + QStringLiteral("/first");
        QVERIFY(!s.create({QStringLiteral("sh"), QStringLiteral("-c"), script.arg(first)}).isEmpty());
        QTRY_VERIFY(readFile(first).endsWith("done\n"));
        QCOMPARE(readFile(first), "512\n" + hard + "\nunset\ndone\n");

        const TetherRun r = runTether(s, {QStringLiteral("restart")});
        QVERIFY2(r.code == 0, r.err.constData());
        QCOMPARE(openFileLimits(host), (QList<QByteArray>{hard, hard}));
        const QString second = s.dir.path() + QStringLiteral("/second");
        QVERIFY(!s.create({QStringLiteral("sh"), QStringLiteral("-c"), script.arg(second)}).isEmpty());
        QTRY_VERIFY(readFile(second).endsWith("done\n"));
        QCOMPARE(readFile(second), "512\n" + hard + "\nunset\ndone\n");
    }

    /// When every pseudo-terminal is in use, POST answers 503 and says so,
    /// naming where the limit is set. The limit is made small with a private
    /// devpts instance (max=2) in a user and mount namespace of the server's
    /// own (devpts(5) newinstance; Documentation/filesystems/devpts.rst).
    void ptyLimitIsNamedIn503()
    {
        ServeProcess s;
        s.proc.setProcessEnvironment(infoLogging(s));
        s.wrapper = QStringList{
            QStringLiteral("unshare"), QStringLiteral("-Urm"), QStringLiteral("sh"), QStringLiteral("-c"),
            QStringLiteral("mount -t devpts -o newinstance,ptmxmode=0666,max=2 devpts /dev/pts"
                           " && mount --bind /dev/pts/ptmx /dev/ptmx && exec \"$0\" \"$@\"")};
        if (!s.launch({QStringLiteral("--port"), QStringLiteral("0")}) || !s.waitLine()) {
            s.waitFinished(5000);
            QSKIP(qPrintable(QStringLiteral("no private devpts here (user namespaces off?): %1")
                                 .arg(QString::fromLocal8Bit(s.err))));
        }
        const QStringList sleeper{QStringLiteral("sleep"), QStringLiteral("60")};
        QCOMPARE(post(s, sleeper).status, 201);
        QCOMPARE(post(s, sleeper).status, 201);
        const HttpReply full = post(s, sleeper);
        QCOMPARE(full.status, 503);
        const QString error = full.json().value(QStringLiteral("error")).toString();
        QVERIFY2(error.startsWith(QStringLiteral("out of resources, try again later: cannot open a pseudo-terminal: ")),
                 qPrintable(error));
        QVERIFY2(error.contains(QStringLiteral("every pseudo-terminal is in use")), qPrintable(error));
        QVERIFY2(error.contains(QStringLiteral("/proc/sys/kernel/pty/max")), qPrintable(error));

        // Logged once, a warning naming the limit, however often clients
        // retry while the shortage lasts; the count follows when one starts.
        for (int i = 0; i < 5; ++i)
            QCOMPARE(post(s, sleeper).status, 503);
        const QByteArray warning = "tether.registry: cannot create sessions, out of resources: cannot open a pseudo-terminal: ";
        QTRY_VERIFY(s.err.contains(warning));
        QCOMPARE(s.err.count(warning), 1);
        QVERIFY2(!s.err.contains("create refused"), s.err.constData());
        const QString first = QJsonDocument::fromJson(s.http("GET", "/api/sessions").body)
                                  .object().value(QStringLiteral("sessions")).toArray().at(0).toObject()
                                  .value(QStringLiteral("id")).toString();
        QCOMPARE(s.http("DELETE", "/api/sessions/" + first.toLatin1()).status, 204);
        // (Not QTRY_COMPARE: it posts once more after the success.)
        int status = 0;
        for (int i = 0; i < 50 && status != 201; ++i) {
            status = post(s, sleeper).status;
            if (status != 201)
                QTest::qWait(100); // the killed session's PTY is freed as its program ends
        }
        QCOMPARE(status, 201);
        QTRY_VERIFY(s.err.contains("tether.registry: sessions start again; "));
        QCOMPARE(s.err.count(warning), 1);
    }

    /// The shutdown line names the signal, the pid that sent it and that
    /// process's command line (SA_SIGINFO), so a shutdown caused from
    /// outside (a launcher killing its process group) can be traced.
    void shutdownLogNamesTheSender()
    {
        ServeProcess s;
        s.proc.setProcessEnvironment(infoLogging(s));
        QVERIFY2(s.start(), s.err.constData());
        QProcess sender;
        // ": " last, so that sh forks sleep instead of exec'ing it: the
        // sender keeps its command line while the server reads it.
        const QString script = QStringLiteral("kill -TERM %1; sleep 30; :").arg(s.proc.processId());
        sender.start(QStringLiteral("/bin/sh"), {QStringLiteral("-c"), script});
        QVERIFY(sender.waitForStarted());
        QVERIFY(s.waitFinished());
        QCOMPARE(s.proc.exitStatus(), QProcess::NormalExit);
        QCOMPARE(s.proc.exitCode(), 0);
        s.err += s.proc.readAllStandardError();
        const QString expected = QStringLiteral("signal received: SIGTERM from pid %1 (/bin/sh -c %2), uid %3 - shutting down")
                                     .arg(sender.processId())
                                     .arg(script)
                                     .arg(::getuid());
        QVERIFY2(QString::fromLocal8Bit(s.err).contains(expected), s.err.constData());
        sender.kill();
        sender.waitForFinished();
    }

    /// 1,000 requests without the key that each make the server log (wrong
    /// Host, cross-origin, wrong key in the link), and idle connections
    /// evicted under connection pressure, write a bounded number of lines;
    /// the repeats are counted, none is lost.
    void peersWithoutTheKeyWriteABoundedLog()
    {
        ServeProcess s;
        s.proc.setProcessEnvironment(infoLogging(s));
        QVERIFY2(s.start(), s.err.constData());
        const QByteArray host = "Host: 127.0.0.1:" + QByteArray::number(s.port) + "\r\n";
        struct Kind {
            QByteArray request;
            QString line;
            int count;
        };
        const QList<Kind> kinds{
            {"GET / HTTP/1.1\r\nHost: evil.example\r\n\r\n", QStringLiteral("refused: Host not allowed"), 400},
            {"GET /api/sessions HTTP/1.1\r\n" + host + "Origin: http://evil.example\r\n\r\n",
             QStringLiteral("refused: cross-origin request"), 300},
            {"GET /?key=wrong HTTP/1.1\r\n" + host + "\r\n", QStringLiteral("wrong key in link: no cookie set"), 300},
        };
        for (const Kind &k : kinds) {
            for (int i = 0; i < k.count; ++i)
                QVERIFY(rawHttp(s.port, k.request).status > 0);
        }
        // Connection pressure: idle connections beyond the limit of 256
        // evict the oldest idle ones, a warning each before.
        // One at a time: a burst would overflow the listen backlog, and the
        // kernel would hold the rest in SYN-RECV for its retransmit backoff.
        std::vector<std::unique_ptr<QTcpSocket>> idle;
        for (int i = 0; i < 300; ++i) {
            idle.push_back(std::make_unique<QTcpSocket>());
            idle.back()->connectToHost(QHostAddress::LocalHost, s.port);
            QVERIFY(idle.back()->waitForConnected(5000));
        }
        const QString evicted = QStringLiteral("too many HTTP connections: dropping the oldest idle one");
        QTRY_VERIFY_WITH_TIMEOUT(s.err.contains(evicted.toUtf8()), 10000);

        // The window an occurrence fell in ends at most as long after the
        // flood as the flood lasted, plus 2 s (windows double while an
        // episode goes on); then each kind was written and counted exactly
        // as often as it happened.
        for (const Kind &k : kinds)
            QTRY_COMPARE_WITH_TIMEOUT(occurrences(s.err, k.line), qint64(k.count), 60000);
        QTRY_VERIFY_WITH_TIMEOUT(s.err.contains(evicted.toUtf8() + " (repeated "), 60000);
        // Counted from the line of the first request on: the server wrote
        // whatever it logs at start before it (one thread, one pipe),
        // however late those lines were read here.
        const qsizetype first = s.err.indexOf(kinds.first().line.toUtf8());
        QVERIFY(first >= 0);
        const int lines = int(s.err.mid(s.err.lastIndexOf('\n', first) + 1).count('\n'));
        qInfo("1,000 requests without the key and 300 idle connections: %d log lines", lines);
        // Without the limit: over 1,000. With it: for each kind one line and
        // one summary per window of its episode (2 s, 4 s, 8 s, ...).
        QVERIFY2(lines <= 40, qPrintable(QStringLiteral("%1 lines:\n%2").arg(lines).arg(QString::fromUtf8(s.err))));
    }

    /// Repeats counted but not yet reported when the server exits are
    /// reported as it exits: nothing counted is left unsaid.
    void countsAreWrittenAtExit()
    {
        ServeProcess s;
        s.proc.setProcessEnvironment(infoLogging(s));
        QVERIFY2(s.start(), s.err.constData());
        QElapsedTimer window;
        window.start();
        for (int i = 0; i < 10; ++i)
            QCOMPARE(rawHttp(s.port, "GET / HTTP/1.1\r\nHost: evil.example\r\n\r\n").status, 403);
        if (window.elapsed() > 1000)
            QSKIP("the requests took half of the 2 s window: the count may be written before the exit");
        s.proc.terminate();
        QVERIFY(s.waitFinished());
        s.err += s.proc.readAllStandardError();
        // All ten accounted for, the last count written on the way out.
        QCOMPARE(occurrences(s.err, QStringLiteral("refused: Host not allowed")), qint64(10));
        const QByteArray beforeExit = s.err.left(s.err.indexOf("signal received:"));
        QVERIFY2(occurrences(beforeExit, QStringLiteral("refused: Host not allowed")) < 10, s.err.constData());
    }
};

QTEST_GUILESS_MAIN(TestServeProcess)
#include "tst_serve_process.moc"
