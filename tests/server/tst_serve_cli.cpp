// SPDX-License-Identifier: GPL-2.0-or-later
// `tether serve` as a real process: options, the printed line, the runtime
// file, a login shell a WebSocket client attaches to, leaves and resumes with
// nothing lost, and a clean SIGTERM/SIGINT shutdown that leaves no process.
#include "fulldisk.h"
#include "serveprocess.h"
#include "testutil.h"

#include <QJsonArray>
#include <QProcess>
#include <QRegularExpression>
#include <QTemporaryDir>

#include <csignal>
#include <memory>
#include <pwd.h>
#include <sys/stat.h>

using namespace ServerTest;

namespace {
const QString kTether = tetherBinary();
using Serve = ServeProcess;

/// The options of a Qt --help text: long name -> the whole entry (its
/// names, value and description, blanks simplified, so column widths and
/// line wrapping do not count).
QMap<QString, QString> helpOptions(const QByteArray &help)
{
    QMap<QString, QString> entries;
    QString current;
    const QStringList lines = QString::fromUtf8(help).split(QLatin1Char('\n'));
    bool inOptions = false;
    for (const QString &line : lines) {
        if (line.startsWith(QLatin1String("Options:"))) {
            inOptions = true;
            continue;
        }
        if (!inOptions)
            continue;
        if (line.startsWith(QLatin1String("  -"))) {
            const QRegularExpressionMatch m = QRegularExpression(QStringLiteral("(--[a-z-]+)")).match(line);
            current = m.captured(1);
            entries[current] = line.simplified();
        } else if (line.startsWith(QLatin1String("    ")) && !current.isEmpty()) {
            entries[current] += QLatin1Char(' ') + line.simplified();
        } else {
            current.clear();
            inOptions = false; // the blank line after the list
        }
    }
    return entries;
}
} // namespace

class TestServeCli : public QObject
{
    Q_OBJECT
private Q_SLOTS:
    void initTestCase()
    {
        registerProcessTypes();
        if (kTether.isEmpty())
            QSKIP("the tether executable is not built in this tree (app/ skipped)");
        QVERIFY(QFileInfo(kTether).isExecutable());
    }

    /// --max-sessions and sessions/maxSessions go up to the kernel's limit
    /// on pseudo-terminals (one per session), read from /proc; beyond it
    /// the option is a usage error naming that file, and the setting is
    /// clamped with a warning (issue 10: 1024 cut a server short of the
    /// 4096 PTYs Linux allows by default).
    void maxSessionsGoesUpToTheKernelsPtyLimit()
    {
        bool ok = false;
        const int ptyMax = readFile(QStringLiteral("/proc/sys/kernel/pty/max")).trimmed().toInt(&ok);
        if (!ok || ptyMax < 2)
            QSKIP("no /proc/sys/kernel/pty/max here");
        {
            Serve s;
            QVERIFY2(s.start({QStringLiteral("--max-sessions"), QString::number(ptyMax)}), s.err.constData());
            QVERIFY2(!s.err.contains("out of range"), s.err.constData());
        }
        {
            Serve s;
            QVERIFY(s.launch({QStringLiteral("--port"), QStringLiteral("0"), QStringLiteral("--max-sessions"),
                              QString::number(ptyMax + 1)}));
            QVERIFY(s.waitFinished());
            QCOMPARE(s.proc.exitCode(), 2);
            QVERIFY2(s.err.contains("--max-sessions must be 1.." + QByteArray::number(ptyMax) + " "), s.err.constData());
            QVERIFY2(s.err.contains("/proc/sys/kernel/pty/max"), s.err.constData());
        }
        {
            Serve s;
            QVERIFY(s.launch({QStringLiteral("--help")}));
            QVERIFY(s.waitFinished());
            const QString entry = helpOptions(s.out).value(QStringLiteral("--max-sessions"));
            QVERIFY2(entry.contains(QStringLiteral("1..%1 (the kernel's limit on pseudo-terminals").arg(ptyMax)), qPrintable(entry));
        }
        for (const int value : {ptyMax, ptyMax + 1}) {
            Serve s("[sessions]\nmaxSessions=" + QByteArray::number(value) + "\n");
            QVERIFY2(s.start(), s.err.constData());
            QCOMPARE(s.err.contains("setting sessions/maxSessions out of range: " + QByteArray::number(value) + " using "
                                    + QByteArray::number(ptyMax)),
                     value > ptyMax);
        }
    }

    void helpVersionAndBadOptions()
    {
        {
            Serve s;
            QVERIFY(s.launch({QStringLiteral("--help")}));
            QVERIFY(s.waitFinished());
            QCOMPARE(s.proc.exitCode(), 0);
            for (const char *opt : {"--bind", "--port", "--ttl", "--buffer-size", "--max-sessions", "--command", "--help", "--version"})
                QVERIFY2(s.out.contains(opt), opt);
            // The usage line names the command as typed, not argv[0].
            QVERIFY2(s.out.startsWith("Usage: tether serve [options]"), s.out.left(80).constData());
        }
        {
            Serve s;
            QVERIFY(s.launch({QStringLiteral("--version")}));
            QVERIFY(s.waitFinished());
            QCOMPARE(s.proc.exitCode(), 0);
            QVERIFY(s.out.contains("tether"));
        }
        const QList<QStringList> bad = {
            {QStringLiteral("--port"), QStringLiteral("70000")},
            {QStringLiteral("--ttl"), QStringLiteral("-1")},
            {QStringLiteral("--buffer-size"), QStringLiteral("1K")},
            {QStringLiteral("--buffer-size"), QStringLiteral("lots")},
            {QStringLiteral("--max-sessions"), QStringLiteral("0")},
            {QStringLiteral("--bogus")},
            {QStringLiteral("extra")},
        };
        for (const QStringList &args : bad) {
            Serve s;
            QVERIFY(s.launch(args));
            QVERIFY(s.waitFinished());
            QVERIFY2(s.proc.exitCode() == 2, qPrintable(args.join(QLatin1Char(' '))));
            QVERIFY(s.out.isEmpty());
            QVERIFY(!s.err.isEmpty());
            QVERIFY(!QFile::exists(s.runtimeFile()));
        }
        {
            Serve s;
            QVERIFY(s.launch({QStringLiteral("--bind"), QStringLiteral("not-an-address"), QStringLiteral("--port"), QStringLiteral("0")}));
            QVERIFY(s.waitFinished());
            QCOMPARE(s.proc.exitCode(), 1);
            QVERIFY(s.err.contains("bind"));
        }
    }

    void helpStartsNoServer()
    {
        // `serve --help` lists --help-all (QCommandLineParser::addHelpOption()
        // adds both); `serve --help-all` started a server and printed its key.
        // Port 0 in the settings: a server started by mistake would not take
        // the default port from anybody.
        for (const QString &help : {QStringLiteral("--help-all"), QStringLiteral("--help"), QStringLiteral("-h")}) {
            Serve s("[server]\nport=0\n");
            QVERIFY(s.launch({help}));
            QVERIFY2(s.waitFinished(10000), qPrintable(help + QStringLiteral(" did not exit: ") + QString::fromUtf8(s.out)));
            QCOMPARE(s.proc.exitStatus(), QProcess::NormalExit);
            QVERIFY2(s.proc.exitCode() == 0, qPrintable(help));
            QVERIFY2(s.out.startsWith("Usage: tether serve [options]"), s.out.left(80).constData());
            QVERIFY2(s.out.contains("--port"), qPrintable(help));
            // The help quotes the line as "Tether is serving http://ADDR:PORT/?key=KEY".
            QVERIFY2(!s.out.contains("Tether is serving http://127."), s.out.constData());
            QVERIFY2(s.err.isEmpty(), s.err.constData());
            QVERIFY(!QFile::exists(s.runtimeFile()));
            QVERIFY(!QFileInfo::exists(s.runDir + QStringLiteral("/tether")));
        }
    }

    void topLevelWithoutDisplay()
    {
        // `tether --help`, a mistyped command and plain `tether` on a machine
        // without a display: words and an exit status, not QApplication's
        // abort for a missing platform plugin (found by a first-time user).
        struct Case {
            QStringList args;
            int code;
            QByteArray out, err;
        };
        const QList<Case> cases = {
            {{QStringLiteral("--help")}, 0, "attach", {}},
            {{QStringLiteral("--help-all")}, 0, "attach", {}},
            {{QStringLiteral("help")}, 0, "serve", {}},
            {{QStringLiteral("--version")}, 0, "tether ", {}},
            {{QStringLiteral("bogus")}, 2, {}, "unknown command \"bogus\""},
            {{QStringLiteral("--port")}, 2, {}, "--port"},
            {{}, 1, {}, "tether serve"},
        };
        for (const Case &c : cases) {
            QProcess p;
            QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
            for (const char *v : {"DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM"})
                env.remove(QString::fromLatin1(v));
            p.setProcessEnvironment(env);
            p.start(kTether, c.args);
            QVERIFY(p.waitForStarted(5000));
            QVERIFY(QSignalSpy(&p, QOverload<int, QProcess::ExitStatus>::of(&QProcess::finished)).wait(20000)
                    || p.state() == QProcess::NotRunning);
            const QByteArray out = p.readAllStandardOutput();
            const QByteArray err = p.readAllStandardError();
            const QByteArray what = c.args.join(QLatin1Char(' ')).toLocal8Bit() + ": " + out + err;
            QCOMPARE(p.exitStatus(), QProcess::NormalExit);
            QVERIFY2(p.exitCode() == c.code, what.constData());
            QVERIFY2(out.contains(c.out), what.constData());
            QVERIFY2(err.contains(c.err), what.constData());
        }
    }

    void badServerOptionIsAUsageErrorInBothPrograms_data()
    {
        QTest::addColumn<QStringList>("args");
        QTest::addColumn<QByteArray>("named");
        // 2^64 + 2^20 bytes: the desktop's own parser wrapped it to 1 MiB and started.
        QTest::newRow("buffer-size overflow") << QStringList{QStringLiteral("--buffer-size"), QStringLiteral("17592186044417M")}
                                              << QByteArray("--buffer-size");
        QTest::newRow("buffer-size 2^63") << QStringList{QStringLiteral("--buffer-size"), QStringLiteral("9223372036854775808")}
                                          << QByteArray("--buffer-size");
        QTest::newRow("buffer-size too small") << QStringList{QStringLiteral("--buffer-size"), QStringLiteral("1K")}
                                               << QByteArray("--buffer-size");
        QTest::newRow("buffer-size 1.5M") << QStringList{QStringLiteral("--buffer-size"), QStringLiteral("1.5M")}
                                          << QByteArray("--buffer-size");
        QTest::newRow("port") << QStringList{QStringLiteral("--port"), QStringLiteral("70000")} << QByteArray("--port");
        QTest::newRow("ttl") << QStringList{QStringLiteral("--ttl"), QStringLiteral("-1")} << QByteArray("--ttl");
        QTest::newRow("exited ttl") << QStringList{QStringLiteral("--exited-ttl"), QStringLiteral("x")} << QByteArray("--exited-ttl");
        QTest::newRow("max-sessions") << QStringList{QStringLiteral("--max-sessions"), QStringLiteral("0")}
                                      << QByteArray("--max-sessions");
        QTest::newRow("command open quote") << QStringList{QStringLiteral("--command"), QStringLiteral("sh -c 'echo hi")}
                                            << QByteArray("--command");
        // The desktop took -p and -b; `tether serve` never did.
        QTest::newRow("-p") << QStringList{QStringLiteral("-p"), QStringLiteral("0")} << QByteArray("'p'");
        QTest::newRow("-b") << QStringList{QStringLiteral("-b"), QStringLiteral("127.0.0.1")} << QByteArray("'b'");
    }

    void badServerOptionIsAUsageErrorInBothPrograms()
    {
        // One definition of the server's options (ServeOptions) for `tether
        // serve` and `tether`: the same value is refused the same way, exit 2
        // with the option named, by the headless server, by the desktop app
        // with a display (offscreen) and by the desktop app without one.
        QFETCH(QStringList, args);
        QFETCH(QByteArray, named);
        Serve s;
        const QStringList noDisplay{QStringLiteral("DISPLAY="), QStringLiteral("WAYLAND_DISPLAY="),
                                    QStringLiteral("QT_QPA_PLATFORM=")};
        struct Program {
            const char *name;
            QStringList args, env;
        };
        const QList<Program> programs = {
            {"tether serve", QStringList{QStringLiteral("serve")} + args, {}},
            {"tether (offscreen)", args, {QStringLiteral("QT_QPA_PLATFORM=offscreen")}},
            {"tether (no display)", args, noDisplay},
        };
        for (const Program &p : programs) {
            const TetherRun r = runTether(s, p.args, p.env);
            const QByteArray what = QByteArray(p.name) + ": " + r.out + r.err;
            QVERIFY2(r.code == 2, what.constData());
            QVERIFY2(r.out.isEmpty(), what.constData());
            QVERIFY2(r.err.contains(named), what.constData());
            QVERIFY2(r.err.contains("--help"), what.constData()); // where to look next
            QVERIFY(!QFile::exists(s.runtimeFile()));
        }
    }

    void desktopAndServeHelpListTheSameServerOptions()
    {
        // `tether --help` and `tether serve --help` show the same server
        // options, word for word (their defaults from the same settings);
        // the desktop adds only --no-tray.
        Serve s("[sessions]\nbufferSize=2097152\ncommand=sh -c 'exec bash'\n");
        const TetherRun serve = runTether(s, {QStringLiteral("serve"), QStringLiteral("--help")});
        const TetherRun desktop = runTether(s, {QStringLiteral("--help")});
        QCOMPARE(serve.code, 0);
        QCOMPARE(desktop.code, 0);
        const auto serverOptions = [](const QByteArray &help) {
            QMap<QString, QString> options = helpOptions(help);
            for (const char *generic : {"--help", "--help-all", "--version"})
                options.remove(QLatin1String(generic));
            return options;
        };
        const QMap<QString, QString> serverOnly = serverOptions(serve.out);
        QMap<QString, QString> desktopOptions = serverOptions(desktop.out);
        QVERIFY2(desktopOptions.remove(QStringLiteral("--no-tray")) == 1, desktop.out.constData());
        QCOMPARE(serverOnly.keys(),
                 (QStringList{QStringLiteral("--allow-host"), QStringLiteral("--bind"), QStringLiteral("--buffer-size"),
                              QStringLiteral("--command"), QStringLiteral("--exited-ttl"),
                              QStringLiteral("--insecure-bind"), QStringLiteral("--max-sessions"), QStringLiteral("--port"),
                              QStringLiteral("--tls-cert"), QStringLiteral("--tls-key"), QStringLiteral("--ttl")}));
        QCOMPARE(desktopOptions, serverOnly);
        // The defaults shown are the settings file's.
        QVERIFY2(serverOnly.value(QStringLiteral("--buffer-size")).contains(QStringLiteral("default 2097152")),
                 qPrintable(serverOnly.value(QStringLiteral("--buffer-size"))));
        QVERIFY2(serverOnly.value(QStringLiteral("--command")).contains(QStringLiteral("sh -c 'exec bash'")),
                 qPrintable(serverOnly.value(QStringLiteral("--command"))));
    }

    void serveAttachLeaveResumeAndTerminate()
    {
        Serve s;
        QVERIFY(s.launch({QStringLiteral("--port"), QStringLiteral("0"), QStringLiteral("--ttl"), QStringLiteral("60"),
                         QStringLiteral("--buffer-size"), QStringLiteral("2M"), QStringLiteral("--max-sessions"), QStringLiteral("5")}));
        QVERIFY2(s.waitLine(), s.out.constData());

        // The runtime file: 0700 directory, 0600 file, the same url/port/key and our pid.
        struct stat st;
        QCOMPARE(::stat(QFile::encodeName(s.dir.path() + QStringLiteral("/run/tether")).constData(), &st), 0);
        QCOMPARE(int(st.st_mode & 07777), 0700);
        QCOMPARE(::stat(QFile::encodeName(s.runtimeFile()).constData(), &st), 0);
        QCOMPARE(int(st.st_mode & 07777), 0600);
        const QJsonObject rt = QJsonDocument::fromJson(readFile(s.runtimeFile())).object();
        QCOMPARE(rt.value(QStringLiteral("url")).toString(), QStringLiteral("http://127.0.0.1:%1/").arg(s.port));
        QCOMPARE(rt.value(QStringLiteral("port")).toInt(), int(s.port));
        QCOMPARE(rt.value(QStringLiteral("key")).toString(), QString::fromLatin1(s.key));
        QCOMPARE(qint64(rt.value(QStringLiteral("pid")).toDouble()), s.proc.processId());

        // A real login shell (the default command), in the home directory.
        HttpReply r = s.http("POST", "/api/sessions", "");
        QCOMPARE(r.status, 201);
        const QString id = r.json().value(QStringLiteral("id")).toString();
        const pid_t shell = pid_t(r.json().value(QStringLiteral("pid")).toDouble());
        QVERIFY(shell > 0);
        QVERIFY(r.json().value(QStringLiteral("cwd")).toString().startsWith(QLatin1Char('/'))); // the home directory
        QCOMPARE(qint64(r.json().value(QStringLiteral("buffer_capacity")).toDouble()), qint64(2 * 1024 * 1024));
        QCOMPARE(qint64(r.json().value(QStringLiteral("expires_in")).toDouble()), qint64(60));

        WsClient a;
        a.open(s.port, QStringLiteral("/ws/") + id, s.key);
        QTRY_VERIFY(a.gotAttached());
        a.sendInput("echo hello-$((6*7))\n");
        QTRY_VERIFY(a.stream().contains("hello-42\r\n"));
        // Leave while the shell will still print something.
        a.sendInput("sleep 0.5; echo later-$((1+1))\n");
        QTRY_VERIFY(a.stream().contains("echo later"));
        a.ws.close();
        QTRY_VERIFY(a.disconnected);
        const qint64 have = a.num("replay_from") + a.stream().size();
        QTRY_VERIFY(!s.http("GET", "/api/sessions/" + id.toLatin1()).json().value(QStringLiteral("attached")).toBool(true));

        // Resume: exactly the missing bytes.
        WsClient b;
        b.open(s.port, QStringLiteral("/ws/%1?resume=%2").arg(id).arg(have), s.key);
        QTRY_VERIFY(b.gotAttached());
        QCOMPARE(b.attachedMsg.value(QStringLiteral("reset")).toBool(), false);
        QCOMPARE(b.num("replay_from"), have);
        QTRY_VERIFY_WITH_TIMEOUT(b.stream().contains("later-2\r\n"), 10000);
        b.sendInput("echo done\n");
        QTRY_VERIFY(b.stream().contains("done\r\n"));
        const QByteArray combined = a.stream() + b.stream();
        WsClient all;
        all.open(s.port, QStringLiteral("/ws/%1?mode=watch").arg(id), s.key);
        QTRY_VERIFY(all.gotAttached());
        QTRY_VERIFY(all.stream().size() >= combined.size());
        QCOMPARE(all.stream().left(combined.size()), combined); // nothing lost, nothing twice
        QCOMPARE(TestUtil::processState(shell) != 0, true);

        // SIGTERM: every session torn down, viewers closed, file removed, exit 0.
        s.proc.terminate();
        QVERIFY(s.waitFinished());
        QCOMPARE(s.proc.exitStatus(), QProcess::NormalExit);
        QCOMPARE(s.proc.exitCode(), 0);
        QTRY_VERIFY(b.disconnected);
        QCOMPARE(b.closeCode, 1001);
        QCOMPARE(b.closeReason, QStringLiteral("server shutting down"));
        QTRY_COMPARE(TestUtil::processState(shell), char(0));
        QVERIFY(!QFile::exists(s.runtimeFile()));
        QCOMPARE(s.out.count('\n'), 1);
    }

    void sigintAndBusyPort()
    {
        Serve a;
        QVERIFY(a.launch({QStringLiteral("--port"), QStringLiteral("0")}));
        QVERIFY(a.waitLine());
        // A second server on the same port fails cleanly and leaves a's file alone.
        {
            Serve b;
            QVERIFY(b.launch({QStringLiteral("--port"), QString::number(a.port)}));
            QVERIFY(b.waitFinished());
            QCOMPARE(b.proc.exitCode(), 1);
            QVERIFY(b.err.contains("cannot listen"));
            // Not Tether's own runtime directory: some other program, as far as b can tell.
            QVERIFY2(b.err.contains(QStringLiteral("another program uses port %1; choose another with --port N").arg(a.port).toUtf8()),
                     b.err.constData());
            QVERIFY(b.out.isEmpty());
        }
        // The same user's second server: it names the one running and how to
        // reach it (a new user got only "The bound address is already in use");
        // since issue 23 the single-host lock refuses it before the port.
        {
            Serve b;
            b.shareRuntimeDir(a);
            QVERIFY(b.launch({QStringLiteral("--port"), QString::number(a.port)}));
            QVERIFY(b.waitFinished());
            QCOMPARE(b.proc.exitCode(), 1);
            const QByteArray expected = QStringLiteral("Tether is already running (pid %1, http://127.0.0.1:%2/)")
                                            .arg(a.proc.processId()).arg(a.port).toUtf8();
            QVERIFY2(b.err.contains(expected), b.err.constData());
            QVERIFY(b.err.contains("To start another, stop that one first."));
            QVERIFY(!b.err.contains("cannot listen"));
            QVERIFY(b.out.isEmpty());
        }
        QVERIFY(QFile::exists(a.runtimeFile()));
        HttpReply r = a.http("POST", "/api/sessions", R"({"command":["/bin/sh","-c","trap '' HUP; exec sleep 300"]})");
        QCOMPARE(r.status, 201);
        const pid_t child = pid_t(r.json().value(QStringLiteral("pid")).toDouble());
        // Wait until it ignores SIGHUP (exec'd sleep), so teardown must escalate.
        QTRY_COMPARE(readFile(QStringLiteral("/proc/%1/comm").arg(child)), QByteArray("sleep\n"));
        QElapsedTimer t;
        t.start();
        QVERIFY(::kill(pid_t(a.proc.processId()), SIGINT) == 0);
        QVERIFY(a.waitFinished(20000)); // SIGHUP ignored: SIGTERM after the grace period
        QVERIFY(t.elapsed() >= 1500);
        QCOMPARE(a.proc.exitCode(), 0);
        QTRY_COMPARE(TestUtil::processState(child), char(0));
        QVERIFY(!QFile::exists(a.runtimeFile()));
    }

    void runtimeFallbackWithoutXdgRuntimeDir()
    {
        // su/sudo/cron leave XDG_RUNTIME_DIR unset: server and clients agree on
        // Qt's fallback ($TMPDIR/runtime-USER), made 0700, and no command
        // prints Qt's "XDG_RUNTIME_DIR not set" warning.
        Serve s;
        const QString tmp = s.dir.path() + QStringLiteral("/tmp");
        QVERIFY(QDir().mkpath(tmp));
        QProcessEnvironment env = s.proc.processEnvironment();
        env.remove(QStringLiteral("XDG_RUNTIME_DIR"));
        env.insert(QStringLiteral("TMPDIR"), tmp);
        s.proc.setProcessEnvironment(env);
        QVERIFY(s.launch({QStringLiteral("--port"), QStringLiteral("0")}));
        QVERIFY(s.waitLine());
        const struct passwd *pw = ::getpwuid(::geteuid());
        QVERIFY(pw);
        const QString base = tmp + QStringLiteral("/runtime-") + QString::fromLocal8Bit(pw->pw_name);
        struct stat st;
        QCOMPARE(::stat(QFile::encodeName(base).constData(), &st), 0);
        QCOMPARE(int(st.st_mode & 07777), 0700);
        const QJsonObject rt = QJsonDocument::fromJson(readFile(base + QStringLiteral("/tether/server.json"))).object();
        QCOMPARE(rt.value(QStringLiteral("port")).toInt(), int(s.port));

        QProcess list;
        list.setProcessEnvironment(env);
        list.start(kTether, {QStringLiteral("list")});
        QVERIFY(list.waitForFinished(15000));
        const QByteArray listErr = list.readAllStandardError();
        QCOMPARE(list.exitCode(), 0);
        QVERIFY2(listErr.isEmpty(), listErr.constData());
        QVERIFY(!s.err.contains("XDG_RUNTIME_DIR"));

        // A runtime file in a directory that is not ours is not trusted: it
        // could send our keystrokes to someone else's server.
        if (::geteuid() == 0) {
            QCOMPARE(::chown(QFile::encodeName(base + QStringLiteral("/tether")).constData(), 65534, 65534), 0);
            QProcess again;
            again.setProcessEnvironment(env);
            again.start(kTether, {QStringLiteral("list")});
            QVERIFY(again.waitForFinished(15000));
            QCOMPARE(again.exitCode(), 1);
            QVERIFY(again.readAllStandardError().contains("not running"));
            QCOMPARE(::chown(QFile::encodeName(base + QStringLiteral("/tether")).constData(), 0, 0), 0);
        }
        QVERIFY(::kill(pid_t(s.proc.processId()), SIGTERM) == 0);
        QVERIFY(s.waitFinished());
        QCOMPARE(s.proc.exitCode(), 0);
        QVERIFY(!QFile::exists(base + QStringLiteral("/tether/server.json")));
    }

    void foreignXdgRuntimeDirIgnored()
    {
        // Plain `su` (Debian) keeps the caller's XDG_RUNTIME_DIR: root's
        // server made a root-owned "<dir>/tether" there and the user's own
        // server then failed with "belongs to another user". A variable that
        // names another user's directory, or no directory, is ignored: the
        // fallback $TMPDIR/runtime-USER is used, by server and clients alike.
        if (::geteuid() != 0)
            QSKIP("needs root to make a directory of another user");
        Serve s;
        const QString tmp = s.dir.path() + QStringLiteral("/tmp");
        const QString foreign = s.dir.path() + QStringLiteral("/user-run");
        QVERIFY(QDir().mkpath(tmp));
        QVERIFY(QDir().mkpath(foreign));
        QCOMPARE(::chmod(QFile::encodeName(foreign).constData(), 0777), 0); // only the owner differs
        QCOMPARE(::chown(QFile::encodeName(foreign).constData(), 65534, 65534), 0);
        const struct passwd *pw = ::getpwuid(::geteuid());
        QVERIFY(pw);
        const QString fallback = tmp + QStringLiteral("/runtime-") + QString::fromLocal8Bit(pw->pw_name)
            + QStringLiteral("/tether/server.json");
        QProcessEnvironment env = s.proc.processEnvironment();
        env.insert(QStringLiteral("XDG_RUNTIME_DIR"), foreign);
        env.insert(QStringLiteral("TMPDIR"), tmp);
        s.proc.setProcessEnvironment(env);
        QVERIFY(s.start());
        QVERIFY2(!QFileInfo::exists(foreign + QStringLiteral("/tether")), "created in another user's XDG_RUNTIME_DIR");
        QCOMPARE(qint64(QJsonDocument::fromJson(readFile(fallback)).object().value(QStringLiteral("pid")).toDouble()),
                 s.proc.processId());
        QProcess list;
        list.setProcessEnvironment(env);
        list.start(kTether, {QStringLiteral("list")});
        QVERIFY(list.waitForFinished(15000));
        QCOMPARE(list.exitCode(), 0);

        // XDG_RUNTIME_DIR naming a plain file: the same fallback.
        const QString file = s.dir.path() + QStringLiteral("/not-a-dir");
        QVERIFY(QFile(file).open(QIODevice::WriteOnly));
        env.insert(QStringLiteral("XDG_RUNTIME_DIR"), file);
        QProcess list2;
        list2.setProcessEnvironment(env);
        list2.start(kTether, {QStringLiteral("list")});
        QVERIFY(list2.waitForFinished(15000));
        QCOMPARE(list2.exitCode(), 0);

        QVERIFY(::kill(pid_t(s.proc.processId()), SIGTERM) == 0);
        QVERIFY(s.waitFinished());
        QCOMPARE(s.proc.exitCode(), 0);
        QVERIFY(!QFile::exists(fallback));
    }

    void secondServerKeepsTheFirstOnesRuntimeFile()
    {
        // A second server used to overwrite the first one's server.json and
        // delete it on exit: `tether list` then said "not running" while the
        // first server and its sessions were alive. Since issue 23 it does not
        // start at all (one host per user: HostLock).
        Serve a;
        QVERIFY(a.start());
        QVERIFY(!a.create({QStringLiteral("/bin/sh"), QStringLiteral("-c"), QStringLiteral("exec sleep 300")}).isEmpty());
        const qint64 aPid = a.proc.processId();
        auto runtimePid = [&]() {
            return qint64(QJsonDocument::fromJson(readFile(a.runtimeFile())).object().value(QStringLiteral("pid")).toDouble());
        };
        QCOMPARE(runtimePid(), aPid);

        // One host per user (issue 23): the second one refuses, naming the
        // first, and leaves its file and sessions alone.
        Serve b;
        b.shareRuntimeDir(a);
        QVERIFY(b.launch({QStringLiteral("--port"), QStringLiteral("0")}));
        QVERIFY(b.waitFinished());
        QCOMPARE(b.proc.exitCode(), 1);
        const QByteArray aUrl = "http://127.0.0.1:" + QByteArray::number(a.port) + '/';
        QVERIFY2(b.err.contains("tether serve: Tether is already running (pid " + QByteArray::number(aPid) + ", " + aUrl + ")"),
                 b.err.constData());
        QVERIFY2(b.err.contains(QFile::encodeName(a.runDir) + "/tether/host.lock"), b.err.constData());
        QVERIFY(b.out.isEmpty());
        QCOMPARE(runtimePid(), aPid);
        const TetherRun list = runTether(a, {QStringLiteral("list")});
        QCOMPARE(list.code, 0);
        QVERIFY2(list.out.contains("sleep"), list.out.constData());

        // A stale file is replaced as before: a dead pid (a, after its exit) ...
        const QByteArray aFile = readFile(a.runtimeFile());
        QVERIFY(::kill(pid_t(aPid), SIGTERM) == 0);
        QVERIFY(a.waitFinished(20000));
        QVERIFY(!QFile::exists(a.runtimeFile()));
        auto plant = [&](const QByteArray &contents) {
            QFile f(a.runtimeFile());
            QVERIFY(f.open(QIODevice::WriteOnly));
            QVERIFY(f.write(contents) == contents.size());
            f.close();
            QVERIFY(f.setPermissions(QFile::ReadOwner | QFile::WriteOwner));
        };
        plant(aFile);
        Serve c;
        c.shareRuntimeDir(a);
        QVERIFY(c.start());
        QCOMPARE(runtimePid(), qint64(c.proc.processId()));
        QVERIFY2(!c.err.contains("warning"), c.err.constData());
        QVERIFY(::kill(pid_t(c.proc.processId()), SIGTERM) == 0);
        QVERIFY(c.waitFinished());
        QVERIFY(!QFile::exists(a.runtimeFile()));

        // ... and a live pid that is not a tether (this test process).
        QJsonObject foreign = QJsonDocument::fromJson(aFile).object();
        foreign.insert(QStringLiteral("pid"), qint64(::getpid()));
        plant(QJsonDocument(foreign).toJson(QJsonDocument::Compact));
        Serve d;
        d.shareRuntimeDir(a);
        QVERIFY(d.start());
        QCOMPARE(runtimePid(), qint64(d.proc.processId()));
        QVERIFY2(!d.err.contains("warning"), d.err.constData());
    }

    void twoHostsStartedAtOnceGiveOne()
    {
        // Two `tether serve` of one user started at the same instant (two
        // desktop launches, a unit and a hand): exactly one serves, the
        // other exits 1 naming it. A lock, not a race on the port (port 0:
        // both could listen) or on server.json.
        Serve a;
        Serve b;
        b.shareRuntimeDir(a);
        QVERIFY(a.launch({QStringLiteral("--port"), QStringLiteral("0")}));
        QVERIFY(b.launch({QStringLiteral("--port"), QStringLiteral("0")}));
        QTRY_VERIFY_WITH_TIMEOUT(a.proc.state() == QProcess::NotRunning || b.proc.state() == QProcess::NotRunning, 15000);
        Serve &loser = a.proc.state() == QProcess::NotRunning ? a : b;
        Serve &winner = &loser == &a ? b : a;
        QVERIFY(loser.waitFinished());
        QCOMPARE(loser.proc.exitCode(), 1);
        QVERIFY(winner.waitLine());
        QCOMPARE(winner.proc.state(), QProcess::Running);
        // (Its pid, unless the loser read the lock file in the instant
        // between the winner's flock and its writing the pid: "pid unknown".)
        QVERIFY2(loser.err.contains("tether serve: Tether is already running (pid "), loser.err.constData());
        QVERIFY(loser.out.isEmpty());
        QCOMPARE(winner.http("GET", "/api/sessions").status, 200);
    }

    void restartInPlaceKeepsTheHostLock()
    {
        // The lock's descriptor goes across the exec: after `tether restart`
        // the same host (same pid) still holds it, and a second one is still
        // refused; once the host exits the lock is free again.
        Serve a;
        // The binary the restart runs: a script that, in the middle of the
        // exec (the old image gone, the new one not started yet), starts a
        // second host, then becomes tether. Without the lock handed over
        // that second host would take it in this gap.
        const QString dir = a.dir.path();
        const QString script = dir + QStringLiteral("/restart-binary");
        {
            QFile f(script);
            QVERIFY(f.open(QIODevice::WriteOnly));
            // (Only for the restart's exec, `serve ...`: UpgradeWatch runs
            // the binary with --version too, at every start.)
            f.write(QStringLiteral("#!/bin/sh\n"
                                   "if [ \"$1\" = serve ]; then\n"
                                   "  env -i HOME=\"$HOME\" XDG_RUNTIME_DIR=\"$XDG_RUNTIME_DIR\" XDG_CONFIG_HOME=\"$XDG_CONFIG_HOME\" "
                                   "PATH=\"$PATH\" timeout 10 '%1' serve --port 0 >/dev/null 2>'%2/second.err'\n"
                                   "  echo $? > '%2/second.status'\n"
                                   "fi\n"
                                   "exec '%1' \"$@\"\n")
                        .arg(tetherBinary(), dir)
                        .toUtf8());
            f.close();
            QVERIFY(f.setPermissions(QFile::ReadOwner | QFile::WriteOwner | QFile::ExeOwner));
        }
        a.proc.setProcessEnvironment(a.environment({QStringLiteral("TETHER_RESTART_BINARY=") + script}));
        QVERIFY(a.start());
        const QString id = a.create({QStringLiteral("/bin/sh"), QStringLiteral("-c"), QStringLiteral("exec sleep 300")});
        QVERIFY(!id.isEmpty());
        const TetherRun restart = runTether(a, {QStringLiteral("restart")});
        QVERIFY2(restart.code == 0, restart.err.constData());
        QTRY_VERIFY_WITH_TIMEOUT(a.http("GET", "/api/restart").json().value(QStringLiteral("restarts")).toInt() == 1, 15000);
        QCOMPARE(QString::fromLatin1(readFile(a.runDir + QStringLiteral("/tether/host.lock"))).trimmed(),
                 QString::number(a.proc.processId()));
        // The host started in the gap was refused: the lock never left.
        QCOMPARE(readFile(dir + QStringLiteral("/second.status")).trimmed(), QByteArray("1"));
        const QByteArray second = readFile(dir + QStringLiteral("/second.err"));
        QVERIFY2(second.contains("Tether is already running (pid " + QByteArray::number(a.proc.processId())), second.constData());
        Serve b;
        b.shareRuntimeDir(a);
        QVERIFY(b.launch({QStringLiteral("--port"), QStringLiteral("0")}));
        QVERIFY(b.waitFinished());
        QCOMPARE(b.proc.exitCode(), 1);
        QVERIFY2(b.err.contains("Tether is already running (pid " + QByteArray::number(a.proc.processId())), b.err.constData());
        // The programs in sessions do not hold it (else a host that died
        // would leave it held by its shells, and no host could start again).
        const pid_t child = pid_t(a.http("GET", "/api/sessions/" + id.toUtf8()).json().value(QStringLiteral("pid")).toDouble());
        QVERIFY(child > 0);
        const QString lockPath = QFileInfo(a.runDir + QStringLiteral("/tether/host.lock")).canonicalFilePath();
        const QDir fds(QStringLiteral("/proc/%1/fd").arg(child));
        QVERIFY(fds.exists());
        for (const QString &fd : fds.entryList(QDir::NoDotAndDotDot | QDir::AllEntries | QDir::System))
            QVERIFY2(QFileInfo(fds.filePath(fd)).symLinkTarget() != lockPath, qPrintable(fd));
        // After a's exit a new host starts.
        QVERIFY(::kill(pid_t(a.proc.processId()), SIGTERM) == 0);
        QVERIFY(a.waitFinished(20000));
        Serve c;
        c.shareRuntimeDir(a);
        QVERIFY(c.start());
    }

    void servesWithoutItsRuntimeFile_data()
    {
        QTest::addColumn<bool>("fullDisk");
        // Home and runtime directory on a 64 KiB tmpfs that is full (as
        // reported); needs root, skipped without it.
        QTest::newRow("a full disk") << true;
        // Any user: a file where the runtime file's directory goes.
        QTest::newRow("a file where its directory goes") << false;
    }
    void servesWithoutItsRuntimeFile()
    {
        // `tether serve` exited 1 when it could not write server.json. Only
        // local clients' way to find it depends on that file: it serves, and
        // says what they need instead.
        QFETCH(bool, fullDisk);
        Serve s;
        const QString full = s.dir.path() + QStringLiteral("/full");
        std::unique_ptr<TestUtil::FullTmpfs> disk;
        if (fullDisk) {
            QVERIFY(QDir().mkpath(full));
            disk.reset(new TestUtil::FullTmpfs(full));
            if (!disk->ok())
                QSKIP(qPrintable(QStringLiteral("needs root for a tmpfs: ") + disk->why()));
            for (const char *d : {"run/tether", "config/Tether", "home"})
                QVERIFY(QDir(full).mkpath(QString::fromLatin1(d)));
            s.runDir = full + QStringLiteral("/run");
            s.proc.setProcessEnvironment(s.environment({QStringLiteral("XDG_CONFIG_HOME=") + full + QStringLiteral("/config"),
                                                        QStringLiteral("HOME=") + full + QStringLiteral("/home")}));
            // Left by a server that is gone, naming another port: it must not
            // send clients there.
            QFile stale(s.runtimeFile());
            QVERIFY(stale.open(QIODevice::WriteOnly));
            stale.write(QJsonDocument(QJsonObject{{QStringLiteral("url"), QStringLiteral("http://127.0.0.1:1/")},
                                                  {QStringLiteral("port"), 1},
                                                  {QStringLiteral("pid"), 999999999},
                                                  {QStringLiteral("key"), QStringLiteral("old")}})
                            .toJson(QJsonDocument::Compact));
            stale.close();
            QVERIFY(disk->fill());
        } else {
            QFile blocker(s.runDir + QStringLiteral("/tether"));
            QVERIFY(blocker.open(QIODevice::WriteOnly));
        }
        QVERIFY2(s.start(), s.err.constData());
        QTRY_VERIFY(s.err.contains("tether serve: warning: cannot write the runtime file ("));
        QVERIFY2(s.err.contains(fullDisk ? "No space left on device" : "tether is not a directory"), s.err.constData());
        QVERIFY2(s.err.contains("give them the address and key of the \"Tether is serving\" line in TETHER_URL and "
                                "TETHER_KEY (or --url and --key)"),
                 s.err.constData());
        if (fullDisk) // and the stale file is gone
            QVERIFY2(!QFile::exists(s.runtimeFile()), readFile(s.runtimeFile()).constData());
        QVERIFY(!s.create({QStringLiteral("/bin/sh"), QStringLiteral("-c"), QStringLiteral("exec sleep 300")}).isEmpty());

        // Clients do not find it by themselves; with the address and key they do.
        const TetherRun alone = runTether(s, {QStringLiteral("list")});
        QCOMPARE(alone.code, 1);
        QVERIFY2(alone.err.contains("not running"), alone.err.constData());
        const TetherRun told = runTether(s, {QStringLiteral("list")},
                                         {QStringLiteral("TETHER_URL=http://127.0.0.1:%1/").arg(s.port),
                                          QStringLiteral("TETHER_KEY=") + QString::fromLatin1(s.key)});
        QCOMPARE(told.code, 0);
        QVERIFY2(told.out.contains("sleep 300"), told.out.constData());

        QVERIFY(::kill(pid_t(s.proc.processId()), SIGTERM) == 0);
        QVERIFY(s.waitFinished(20000));
        QCOMPARE(s.proc.exitStatus(), QProcess::NormalExit);
        QCOMPARE(s.proc.exitCode(), 0);
    }

    void sighupShutsDownCleanly()
    {
        // Closing the terminal that runs `tether serve` sends SIGHUP: it must
        // not kill us and orphan the sessions (and leave a stale server.json).
        Serve a;
        QVERIFY(a.launch({QStringLiteral("--port"), QStringLiteral("0")}));
        QVERIFY(a.waitLine());
        HttpReply r = a.http("POST", "/api/sessions", R"({"command":["/bin/sh","-c","exec sleep 300"]})");
        QCOMPARE(r.status, 201);
        const pid_t child = pid_t(r.json().value(QStringLiteral("pid")).toDouble());
        QVERIFY(::kill(pid_t(a.proc.processId()), SIGHUP) == 0);
        QVERIFY(a.waitFinished(20000));
        QCOMPARE(a.proc.exitStatus(), QProcess::NormalExit);
        QCOMPARE(a.proc.exitCode(), 0);
        QTRY_COMPARE(TestUtil::processState(child), char(0));
        QVERIFY(!QFile::exists(a.runtimeFile()));
    }

    void blockedSignalsInheritedStillShutDown()
    {
        // The signal mask survives fork and exec: started by a parent that
        // blocks SIGTERM (some service managers and shells in scripts do),
        // `tether serve` must unblock the signals it handles, or SIGTERM stays
        // pending forever and the sessions are orphaned at logout.
        sigset_t block, old;
        sigemptyset(&block);
        sigaddset(&block, SIGTERM);
        sigaddset(&block, SIGINT);
        sigaddset(&block, SIGHUP);
        QCOMPARE(::pthread_sigmask(SIG_BLOCK, &block, &old), 0);
        Serve a;
        const bool started = a.launch({QStringLiteral("--port"), QStringLiteral("0")});
        QCOMPARE(::pthread_sigmask(SIG_SETMASK, &old, nullptr), 0);
        QVERIFY(started);
        QVERIFY(a.waitLine());
        HttpReply r = a.http("POST", "/api/sessions", R"({"command":["/bin/sh","-c","exec sleep 300"]})");
        QCOMPARE(r.status, 201);
        const pid_t child = pid_t(r.json().value(QStringLiteral("pid")).toDouble());
        QVERIFY(::kill(pid_t(a.proc.processId()), SIGTERM) == 0);
        QVERIFY(a.waitFinished(20000));
        QCOMPARE(a.proc.exitStatus(), QProcess::NormalExit);
        QCOMPARE(a.proc.exitCode(), 0);
        QTRY_COMPARE(TestUtil::processState(child), char(0));
        QVERIFY(!QFile::exists(a.runtimeFile()));
    }
};

QTEST_GUILESS_MAIN(TestServeCli)
#include "tst_serve_cli.moc"
