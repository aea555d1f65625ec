// SPDX-License-Identifier: GPL-2.0-or-later
// "Attach here" without QTermWidget (Qt 6 on Debian 12): the desktop app runs
// the BUILT `tether attach ID` in the terminal emulator from desktop/terminal.
// The terminal emulator here is tmux (a detached session of a private tmux
// server), so the test can read the screen (capture-pane) and type
// (send-keys) like a user.
#include "apiclient.h"
#include "hostconfig.h"
#include "desktopapp.h"
#include "registry.h"
#include "server.h"
#include "session.h"
#include "sessionswindow.h"
#include "terminalwindow.h"

#include <QAction>
#include <QItemSelectionModel>
#include <QAbstractItemView>
#include <QPointer>
#include <QProcess>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QTest>

#include <cerrno>
#include <csignal>
#include <sys/stat.h>

using namespace Tether;

namespace {
#ifdef TETHER_BINARY
const QString kTether = QStringLiteral(TETHER_BINARY);
#else
const QString kTether;
#endif

/// A host in this process (registry + server on port 0) that a DesktopApp
/// connects to (DesktopApp::connectTo()), so that the test sees the
/// sessions' viewers as the host does.
struct InProcessHost {
    SessionRegistry registry;
    std::unique_ptr<Server> server;
    ServerEndpoint endpoint;
    ~InProcessHost()
    {
        if (server)
            server->removeRuntimeFile();
    }
    bool start()
    {
        HostConfig config;
        config.port = 0;
        server = std::make_unique<Server>(&registry, config);
        QString error;
        if (!server->listen(&error))
            return false;
        // `tether attach ID` typed in a pane finds it as it finds a host.
        QJsonObject other;
        if (!server->writeRuntimeFile(&error, &other))
            return false;
        return ServerEndpoint::resolve(server->url(), server->accessKey(), &endpoint, &error);
    }
};

/// Runs `tmux ARGS` and returns its stdout (empty after 10 s). Waits by
/// spinning the event loop, never in QProcess::waitForFinished: the server
/// under test (DesktopApp) and its sessions live in this thread, and `tether
/// attach` in the pane talks to them. A blocking wait froze them for every
/// capture-pane of a QTRY: under load one took about 0.7 s (a 15 s QTRY ran
/// 228 s), so the server ran 50 ms in every 750.
QByteArray tmux(const QStringList &args)
{
    QProcess p;
    p.start(QStringLiteral("tmux"), args);
    if (!QTest::qWaitFor([&] { return p.state() == QProcess::NotRunning; }, 10000)) {
        p.kill();
        p.waitForFinished(1000);
        return QByteArray();
    }
    return p.readAllStandardOutput();
}
} // namespace

class TestUiCliTerminal : public QObject
{
    Q_OBJECT
    QTemporaryDir m_dir;

private Q_SLOTS:
    void initTestCase()
    {
        if (kTether.isEmpty())
            QSKIP("the tether executable is not built in this tree");
        if (QStandardPaths::findExecutable(QStringLiteral("tmux")).isEmpty())
            QSKIP("tmux is not installed (scripts/install-deps.sh installs it)");
        QVERIFY(m_dir.isValid());
        for (const char *d : {"run", "home", "config", "tmux"})
            QDir(m_dir.path()).mkpath(QString::fromLatin1(d));
        ::chmod(QFile::encodeName(m_dir.path() + QStringLiteral("/run")).constData(), 0700);
        ::chmod(QFile::encodeName(m_dir.path() + QStringLiteral("/tmux")).constData(), 0700);
        qputenv("XDG_RUNTIME_DIR", QFile::encodeName(m_dir.path() + QStringLiteral("/run")));
        qputenv("XDG_CONFIG_HOME", QFile::encodeName(m_dir.path() + QStringLiteral("/config")));
        qputenv("XDG_STATE_HOME", QFile::encodeName(m_dir.path() + QStringLiteral("/state")));
        qputenv("HOME", QFile::encodeName(m_dir.path() + QStringLiteral("/home")));
        qputenv("TMUX_TMPDIR", QFile::encodeName(m_dir.path() + QStringLiteral("/tmux")));
        qunsetenv("TMUX");
        qputenv("PS1", "$ ");
    }

    void cleanupTestCase()
    {
        if (!kTether.isEmpty())
            tmux({QStringLiteral("kill-server")});
    }

    void terminalDetection()
    {
        DesktopSettings c;
        c.terminal = QStringLiteral("tmux new-session -d");
        QCOMPARE(c.terminalArgv(), (QStringList{QStringLiteral("tmux"), QStringLiteral("new-session"), QStringLiteral("-d")}));
        c.terminal = QStringLiteral("/nonexistent/term -e");
        QVERIFY(c.terminalArgv().isEmpty());
    }

    void attachHereRunsTheCliInTheTerminalEmulator()
    {
        DesktopSettings config;
        config.terminal = QStringLiteral("tmux new-session -d -x 100 -y 30 -s T");
        InProcessHost host;
        QVERIFY(host.start());
        DesktopApp app(config, DesktopApp::TrayMode::Off);
        app.setCliProgram(kTether);
        app.connectTo(host.endpoint);
        QTRY_VERIFY(app.isConnected());
        QVERIFY(app.canAttachHere());

        QString error;
        SpawnOptions o;
        o.argv = QStringList{QStringLiteral("/bin/sh")};
        Session *s = host.registry.create(o, nullptr, &error);
        QVERIFY2(s, qPrintable(error));
        const QString id = s->id();

        if (localTerminalAvailable()) {
            // This build has the QTermWidget window (Qt 5): Attach here opens
            // that; the terminal-emulator path is called directly.
            QVERIFY2(app.attachInTerminalEmulator(id, ViewerMode::Control, &error), qPrintable(error));
        } else {
            // The Sessions window's "Attach here" on the selected session.
            SessionsWindow *w = app.sessionsWindow();
            auto *view = w->findChild<QAbstractItemView *>();
            QVERIFY(view);
            QTRY_VERIFY(view->model()->rowCount() == 1);
            view->setCurrentIndex(view->model()->index(0, 0));
            view->selectionModel()->select(view->model()->index(0, 0),
                                           QItemSelectionModel::ClearAndSelect | QItemSelectionModel::Rows);
            QTRY_VERIFY(w->attachAction()->isEnabled());
            w->attachAction()->trigger();
        }
        // The CLI attached (as a CLI viewer) in a 100x30 terminal.
        QTRY_VERIFY_WITH_TIMEOUT(s->controlViewer() != nullptr, 20000);
        QCOMPARE(s->controlViewer()->kind(), ViewerKind::Cli);
        QTRY_COMPARE_WITH_TIMEOUT(s->cols(), 100, 10000);
        QCOMPARE(s->rows(), 30);
        QTRY_VERIFY_WITH_TIMEOUT(tmux({QStringLiteral("capture-pane"), QStringLiteral("-p"), QStringLiteral("-t"), QStringLiteral("T")})
                                     .contains("$"), 10000);
        // Keys typed in the terminal emulator reach the shell.
        tmux({QStringLiteral("send-keys"), QStringLiteral("-t"), QStringLiteral("T"), QStringLiteral("echo hi-$((6*7))"),
              QStringLiteral("Enter")});
        QTRY_VERIFY_WITH_TIMEOUT(tmux({QStringLiteral("capture-pane"), QStringLiteral("-p"), QStringLiteral("-t"), QStringLiteral("T")})
                                     .contains("hi-42"), 10000);
        // The detach key ends the client; the session lives on.
        tmux({QStringLiteral("send-keys"), QStringLiteral("-t"), QStringLiteral("T"), QStringLiteral("C-\\")});
        QTRY_VERIFY_WITH_TIMEOUT(s->controlViewer() == nullptr, 10000);
        QCOMPARE(s->state(), Session::State::Running);

        // A terminal command that does not exist: said plainly, nothing runs.
        DesktopSettings bad = config;
        bad.terminal = QStringLiteral("/nonexistent/term -e");
        DesktopApp other(bad, DesktopApp::TrayMode::Off);
        QVERIFY(!other.attachInTerminalEmulator(id, ViewerMode::Control, &error));
        QVERIFY2(error.contains(QStringLiteral("/nonexistent/term")), qPrintable(error));

        // The host's shutdown ends the session: the registry drops it at
        // once, then it is torn down (its shell ended and reaped) and deleted.
        const QPointer<Session> session(s);
        const pid_t shell = s->pid();
        QVERIFY(shell > 0);
        QSignalSpy finished(&app, &DesktopApp::finished);
        host.registry.shutdown();
        QVERIFY(host.registry.sessions().isEmpty());
        app.closeUi();
        QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, 15000);
        QTRY_VERIFY_WITH_TIMEOUT(session.isNull(), 15000); // deleteLater, queued
        errno = 0;
        QVERIFY2(::kill(shell, 0) == -1 && errno == ESRCH,
                 qPrintable(QStringLiteral("the shell (pid %1) outlived the quit").arg(shell)));
    }

    void noQueryAnswersLeftAtThePrompt()
    {
        // Attaching to an exited session replays its output and ends at once.
        // A real terminal answers the queries in that replay (cursor position,
        // device attributes) a moment later: those answers must not land in
        // the shell the user returns to (a first-time user saw "2RR84;0;0c"
        // at the prompt after attaching to an exited vim session).
        InProcessHost host;
        QVERIFY(host.start());
        QString error;
        SpawnOptions o;
        o.argv = QStringList{QStringLiteral("/bin/sh"), QStringLiteral("-c"),
                             QStringLiteral("printf 'asking\\033[6n\\033[c\\033[>c\\n'; exit 7")};
        Session *s = host.registry.create(o, nullptr, &error);
        QVERIFY2(s, qPrintable(error));
        const QString id = s->id();
        QTRY_COMPARE_WITH_TIMEOUT(s->state(), Session::State::Exited, 10000);

        tmux({QStringLiteral("new-session"), QStringLiteral("-d"), QStringLiteral("-x"), QStringLiteral("80"),
              QStringLiteral("-y"), QStringLiteral("24"), QStringLiteral("-s"), QStringLiteral("Q"),
              QStringLiteral("PS1='$ ' exec /bin/sh")});
        QTRY_VERIFY_WITH_TIMEOUT(tmux({QStringLiteral("capture-pane"), QStringLiteral("-p"), QStringLiteral("-t"), QStringLiteral("Q")})
                                     .contains("$"), 10000);
        tmux({QStringLiteral("send-keys"), QStringLiteral("-t"), QStringLiteral("Q"),
              kTether + QStringLiteral(" attach ") + id + QStringLiteral("; echo after:$?"), QStringLiteral("Enter")});
        // On failure the pane is printed: this wait failed twice under load
        // in Qt 6 (not reproduced in 32 runs since), with nothing to go on.
        QTRY_VERIFY2_WITH_TIMEOUT(tmux({QStringLiteral("capture-pane"), QStringLiteral("-p"), QStringLiteral("-t"), QStringLiteral("Q")})
                                      .contains("after:0"),
                                  tmux({QStringLiteral("capture-pane"), QStringLiteral("-p"), QStringLiteral("-t"), QStringLiteral("Q")})
                                      .constData(),
                                  15000);
        QByteArray screen = tmux({QStringLiteral("capture-pane"), QStringLiteral("-p"), QStringLiteral("-t"), QStringLiteral("Q")});
        QVERIFY2(screen.contains("[process exited with code 7]"), screen.constData());
        // The shell's next line must be exactly what we type: answers left
        // in its input would be prepended to the command.
        tmux({QStringLiteral("send-keys"), QStringLiteral("-t"), QStringLiteral("Q"), QStringLiteral("echo clean-$((1+1))"),
              QStringLiteral("Enter")});
        QTRY_VERIFY_WITH_TIMEOUT(tmux({QStringLiteral("capture-pane"), QStringLiteral("-p"), QStringLiteral("-t"), QStringLiteral("Q")})
                                     .contains("\nclean-2"), 10000);
        screen = tmux({QStringLiteral("capture-pane"), QStringLiteral("-p"), QStringLiteral("-t"), QStringLiteral("Q")});
        QVERIFY2(!screen.contains("not found"), screen.constData());
        tmux({QStringLiteral("kill-session"), QStringLiteral("-t"), QStringLiteral("Q")});
        host.registry.shutdown();
        QTRY_VERIFY_WITH_TIMEOUT(host.registry.sessions().isEmpty(), 15000);
    }
};

QTEST_MAIN(TestUiCliTerminal)
#include "tst_cliterminal.moc"
