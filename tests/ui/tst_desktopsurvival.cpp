// SPDX-License-Identifier: GPL-2.0-or-later
// Sessions outlive the desktop app (issue 23): the real `tether` desktop app
// starts its host (`tether serve`, a process of its own); then the desktop
// app dies (SIGKILL, SIGSEGV), is closed as a logout closes it (SIGHUP), or
// loses its X server (a private Xvfb, killed). Every time, the session's
// process is alive afterwards, its output is still read into its buffer,
// and a new desktop app (under a new display) connects to the same host and
// lists it. Two desktop apps started at the same instant give one host.
// The display case needs Xvfb (scripts/install-deps.sh: xvfb); without it
// that row is skipped.
#include "desktophost.h"
#include "serveprocess.h"
#include "testutil.h"

#include <QDirIterator>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QTest>

#include <cerrno>
#include <csignal>

using namespace ServerTest;

namespace {

using DesktopHost::alive;

/// A private X server (Xvfb picks a free display number), stopped with the object.
struct Xvfb {
    QProcess proc;
    QString display;
    bool start()
    {
        proc.setStandardErrorFile(QProcess::nullDevice());
        proc.start(QStringLiteral("Xvfb"), {QStringLiteral("-displayfd"), QStringLiteral("1"), QStringLiteral("-screen"),
                                            QStringLiteral("0"), QStringLiteral("1024x768x24"), QStringLiteral("-nolisten"),
                                            QStringLiteral("tcp")});
        if (!proc.waitForStarted(10000))
            return false;
        QByteArray number;
        if (!QTest::qWaitFor([&] { return (number += proc.readAllStandardOutput()).contains('\n'); }, 20000))
            return false;
        display = QLatin1Char(':') + QString::fromLatin1(number.trimmed());
        return true;
    }
    ~Xvfb()
    {
        if (proc.state() != QProcess::NotRunning) {
            proc.kill();
            proc.waitForFinished(5000);
        }
    }
};

/// The host the runtime file of `s` names: stopped (SIGTERM, then SIGKILL)
/// when the test ends, so that no test leaves a host running.
struct HostGuard {
    qint64 pid = 0;
    ~HostGuard()
    {
        if (!alive(pid))
            return;
        ::kill(pid_t(pid), SIGTERM);
        if (!QTest::qWaitFor([this] { return !alive(pid); }, 15000))
            ::kill(pid_t(pid), SIGKILL);
    }
};

QJsonObject readJson(const QString &path)
{
    QFile f(path);
    return f.open(QIODevice::ReadOnly) ? QJsonDocument::fromJson(f.readAll()).object() : QJsonObject();
}

/// Processes of this user running `tether serve` with `runDir` as their
/// XDG_RUNTIME_DIR (this test's hosts, not another test's).
QList<qint64> hostsOf(const QString &runDir)
{
    QList<qint64> pids;
    const QByteArray want = "XDG_RUNTIME_DIR=" + QFile::encodeName(runDir);
    QDirIterator it(QStringLiteral("/proc"), QDir::Dirs | QDir::NoDotAndDotDot);
    while (it.hasNext()) {
        const QString dir = it.next();
        bool ok = false;
        const qint64 pid = it.fileName().toLongLong(&ok);
        if (!ok)
            continue;
        QFile cmd(dir + QStringLiteral("/cmdline"));
        if (!cmd.open(QIODevice::ReadOnly))
            continue;
        const QList<QByteArray> argv = cmd.readAll().split('\0');
        if (argv.size() < 2 || argv.at(1) != "serve")
            continue;
        QFile env(dir + QStringLiteral("/environ"));
        if (env.open(QIODevice::ReadOnly) && env.readAll().split('\0').contains(want))
            pids << pid;
    }
    return pids;
}

} // namespace

class TestDesktopSurvival : public QObject
{
    Q_OBJECT
private:
    /// Starts the desktop app (`tether --no-tray --port 0`) as `s.proc`,
    /// on `display` (empty: offscreen), and waits for its "Tether is serving".
    static bool startDesktop(ServeProcess &s, const QString &display)
    {
        QStringList extra{QStringLiteral("QT_LOGGING_RULES=tether.*.debug=false;tether.ui.info=true")};
        if (display.isEmpty()) {
            extra << QStringLiteral("QT_QPA_PLATFORM=offscreen");
        } else {
            extra << QStringLiteral("QT_QPA_PLATFORM=xcb") << QStringLiteral("DISPLAY=") + display;
        }
        QProcessEnvironment env = s.environment(extra);
        env.insert(QStringLiteral("QT_LOGGING_RULES"), QStringLiteral("tether.*.debug=false;tether.ui.info=true"));
        env.remove(QStringLiteral("WAYLAND_DISPLAY"));
        // The SIGSEGV row sends the signal to stand for a crash of the GUI:
        // its default action is what is tested, in the desktop app and the
        // host it starts (which inherits this; a real fault there still
        // kills it, and alive() sees that).
        TestUtil::leaveSigsegvToTheKernel(env);
        s.proc.setProcessEnvironment(env);
        s.proc.start(tetherBinary(), {QStringLiteral("--no-tray"), QStringLiteral("--port"), QStringLiteral("0")});
        return s.proc.waitForStarted(10000) && s.waitLine();
    }

private Q_SLOTS:
    void initTestCase()
    {
        registerProcessTypes();
        if (tetherBinary().isEmpty())
            QSKIP("no tether executable in this build");
    }

    void sessionsOutliveTheDesktop_data()
    {
        QTest::addColumn<QString>("how");
        QTest::newRow("SIGKILL") << QStringLiteral("kill");
        QTest::newRow("SIGSEGV") << QStringLiteral("segv");
        QTest::newRow("SIGHUP (logout)") << QStringLiteral("hup");
        QTest::newRow("X server gone") << QStringLiteral("display");
    }

    void sessionsOutliveTheDesktop()
    {
        QFETCH(QString, how);
        const bool x = how == QLatin1String("display");
        if (x && QStandardPaths::findExecutable(QStringLiteral("Xvfb")).isEmpty())
            QSKIP("Xvfb is not installed (scripts/install-deps.sh installs it)");
        Xvfb xvfb;
        if (x)
            QVERIFY(xvfb.start());

        ServeProcess desktop;
        QVERIFY2(startDesktop(desktop, xvfb.display), desktop.err.constData());
        const QJsonObject rt = readJson(desktop.runtimeFile());
        HostGuard host{qint64(rt.value(QStringLiteral("pid")).toDouble())};
        QVERIFY(alive(host.pid));
        QVERIFY(host.pid != desktop.proc.processId());
        // A session that writes a line every 100 ms: its offset counts on
        // only while something reads its output.
        const QString id = desktop.create({QStringLiteral("/bin/sh"), QStringLiteral("-c"),
                                           QStringLiteral("while :; do echo tick; sleep 0.1; done")});
        QVERIFY(!id.isEmpty());
        const qint64 shell = qint64(desktop.session(id).value(QStringLiteral("pid")).toDouble());
        QVERIFY(alive(shell));
        QTRY_VERIFY_WITH_TIMEOUT(desktop.session(id).value(QStringLiteral("offset")).toInt() > 0, 10000);
        // The desktop app is connected (its stream may open after the host
        // already serves the request above).
        QTRY_VERIFY2_WITH_TIMEOUT(desktop.err.contains("connected to the Tether host"), desktop.err.constData(), 10000);

        // The desktop app goes.
        if (how == QLatin1String("kill"))
            QCOMPARE(::kill(pid_t(desktop.proc.processId()), SIGKILL), 0);
        else if (how == QLatin1String("segv"))
            QCOMPARE(::kill(pid_t(desktop.proc.processId()), SIGSEGV), 0);
        else if (how == QLatin1String("hup"))
            QCOMPARE(::kill(pid_t(desktop.proc.processId()), SIGHUP), 0);
        else
            xvfb.proc.kill();
        QVERIFY(desktop.waitFinished(20000));
        if (how == QLatin1String("hup")) {
            QCOMPARE(desktop.proc.exitStatus(), QProcess::NormalExit);
            QCOMPARE(desktop.proc.exitCode(), 0);
        } else if (how != QLatin1String("display")) {
            QCOMPARE(desktop.proc.exitStatus(), QProcess::CrashExit);
        }

        // The host and the session's process live on, and its output is
        // still read into the buffer.
        QVERIFY(alive(host.pid));
        QVERIFY(alive(shell));
        const qint64 offset = qint64(desktop.session(id).value(QStringLiteral("offset")).toDouble());
        QTRY_VERIFY_WITH_TIMEOUT(qint64(desktop.session(id).value(QStringLiteral("offset")).toDouble()) > offset + 50, 10000);
        QCOMPARE(desktop.session(id).value(QStringLiteral("state")).toString(), QStringLiteral("running"));

        // A new desktop app (under a new display) connects to the same host,
        // starts none, and lists the session.
        Xvfb xvfb2;
        if (x)
            QVERIFY(xvfb2.start());
        ServeProcess again;
        again.shareRuntimeDir(desktop);
        // The same home and settings as the first.
        QProcessEnvironment env = desktop.proc.processEnvironment();
        if (x)
            env.insert(QStringLiteral("DISPLAY"), xvfb2.display);
        again.proc.setProcessEnvironment(env);
        again.proc.start(tetherBinary(), {QStringLiteral("--no-tray"), QStringLiteral("--port"), QStringLiteral("0")});
        QVERIFY(again.proc.waitForStarted(10000));
        QVERIFY2(again.waitLine(), again.err.constData());
        QCOMPARE(again.port, desktop.port);
        QCOMPARE(again.key, desktop.key);
        QTRY_VERIFY2_WITH_TIMEOUT(again.err.contains("connected to the running Tether host"), again.err.constData(), 10000);
        QTRY_VERIFY2_WITH_TIMEOUT(again.err.contains("the host lists 1 sessions"), again.err.constData(), 10000);
        QCOMPARE(qint64(readJson(desktop.runtimeFile()).value(QStringLiteral("pid")).toDouble()), host.pid);
        QCOMPARE(hostsOf(desktop.runDir).size(), 1);

        // Closed as a logout does: the host still goes on; then it is stopped.
        again.proc.terminate();
        QVERIFY(again.waitFinished(15000));
        QCOMPARE(again.proc.exitCode(), 0);
        QVERIFY(alive(shell));
        QCOMPARE(::kill(pid_t(host.pid), SIGTERM), 0);
        QTRY_VERIFY_WITH_TIMEOUT(!alive(host.pid), 15000);
        QTRY_VERIFY_WITH_TIMEOUT(!alive(shell), 15000);
    }

    void twoDesktopsAtOnceGiveOneHost()
    {
        ServeProcess a;
        ServeProcess b;
        b.shareRuntimeDir(a);
        QProcessEnvironment env = a.environment({QStringLiteral("QT_QPA_PLATFORM=offscreen")});
        a.proc.setProcessEnvironment(env);
        b.proc.setProcessEnvironment(env);
        const QStringList args{QStringLiteral("--no-tray"), QStringLiteral("--port"), QStringLiteral("0")};
        a.proc.start(tetherBinary(), args);
        b.proc.start(tetherBinary(), args);
        QVERIFY(a.proc.waitForStarted(10000) && b.proc.waitForStarted(10000));
        // One becomes the desktop app (it finds or starts the host), the
        // other hands off to it and exits 0.
        QTRY_VERIFY_WITH_TIMEOUT(a.proc.state() == QProcess::NotRunning || b.proc.state() == QProcess::NotRunning, 20000);
        ServeProcess &gone = a.proc.state() == QProcess::NotRunning ? a : b;
        ServeProcess &stays = &gone == &a ? b : a;
        QCOMPARE(gone.proc.exitCode(), 0);
        QVERIFY2(gone.out.contains("Tether is already running"), gone.out.constData());
        QVERIFY2(stays.waitLine(), stays.err.constData());
        const QJsonObject rt = readJson(a.runtimeFile());
        HostGuard host{qint64(rt.value(QStringLiteral("pid")).toDouble())};
        QVERIFY(alive(host.pid));
        QCOMPARE(hostsOf(a.runDir), QList<qint64>{host.pid});
        // A `tether serve` by hand meets the same lock: refused, with words.
        const TetherRun extra = runTether(a, {QStringLiteral("serve"), QStringLiteral("--port"), QStringLiteral("0")});
        QCOMPARE(extra.code, 1);
        QVERIFY2(extra.err.contains("Tether is already running"), extra.err.constData());
        QCOMPARE(hostsOf(a.runDir), QList<qint64>{host.pid});
        stays.proc.terminate();
        QVERIFY(stays.waitFinished(15000));
        QVERIFY(alive(host.pid));
    }
};

QTEST_GUILESS_MAIN(TestDesktopSurvival)
#include "tst_desktopsurvival.moc"
