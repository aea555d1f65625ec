// SPDX-License-Identifier: GPL-2.0-or-later
// The desktop application: registry + server + windows in one process, and the
// real `tether` binary's single-instance hand-off and clean shutdown.
#include "desktopapp.h"
#include "registry.h"
#include "restartinplace.h"
#include "serveprocess.h"
#include "server.h"
#include "session.h"
#include "sessionswindow.h"
#include "settingsdialog.h"
#include "terminalwindow.h"
#include "testutil.h"

#include <QDesktopServices>
#include <QAction>
#include <QDir>
#include <QJsonDocument>
#include <QJsonObject>
#include <QLabel>
#include <QMenu>
#include <QRegularExpression>
#include <QProcess>
#include <QSettings>
#include <QSignalSpy>
#include <QSpinBox>
#include <QSystemTrayIcon>
#include <QTemporaryDir>
#include <QTest>
#include <QUrl>

#include <signal.h>

using namespace Tether;

namespace {

class FakeBrowser : public Viewer
{
public:
    void attached(Session *, const AttachInfo &) override {}
    void output(const char *, qsizetype) override {}
    void exited(const ExitStatus &) override {}
    void detached(DetachReason r) override { reasons << r; }
    ViewerKind kind() const override { return ViewerKind::Browser; }
    QList<DetachReason> reasons;
};

SpawnOptions shell()
{
    SpawnOptions o;
    o.argv = QStringList{QStringLiteral("/bin/sh")};
    return o;
}

} // namespace

/// The desktop app with its last step to the tray recorded instead of shown
/// (offscreen has no tray): everything before QSystemTrayIcon::showMessage is
/// the real path.
class RecordingDesktopApp : public DesktopApp
{
public:
    using DesktopApp::DesktopApp;
    QList<QStringList> messages; ///< {title, text}
protected:
    void showTrayMessage(const QString &title, const QString &text, int msecs) override
    {
        QVERIFY(msecs > 0);
        messages << QStringList{title, text};
    }
};

/// Receives the URLs DesktopApp asks the desktop to open (no real browser).
class UrlCatcher : public QObject
{
    Q_OBJECT
public:
    QList<QUrl> urls;
public Q_SLOTS:
    void open(const QUrl &url) { urls << url; }
};

class TestDesktopApp : public QObject
{
    Q_OBJECT
private Q_SLOTS:
    void initTestCase();
    void cleanupTestCase();
    void startsAsMainWindowWithoutTray();
    void newTerminalAndAttachHere();
    void browserUrls();
    void notifiesWhenDetachedSessionExits();
    void trayMessageBeforeExpiryAttachesOnClick();
    void quitTearsEverythingDown();
    void binarySingleInstanceHandOff();
#ifdef TETHER_HAVE_QTERMWIDGET
    // Only with local terminal windows (a QSKIP would mark the whole test
    // skipped in ctest).
    void restartReopensTerminalWindows();
#endif
    void binaryRestartsInPlace();
    void trayAnnouncesAnUpdate();
    void restartReopensSessionsWindowAndSettings();
    void settingsKeepQuietAboutPortChosenAtStart();

private:
    Config testConfig() const;
    QTemporaryDir m_home;
    UrlCatcher m_urls;
};

void TestDesktopApp::initTestCase()
{
    qRegisterMetaType<QProcess::ExitStatus>("QProcess::ExitStatus"); // for QSignalSpy (Qt 5)
    QVERIFY(m_home.isValid());
    // Settings, autostart and runtime files stay inside the test dir.
    qputenv("XDG_CONFIG_HOME", m_home.filePath(QStringLiteral("config")).toLocal8Bit());
    const QString runtime = m_home.filePath(QStringLiteral("runtime"));
    QDir().mkpath(runtime);
    QFile::setPermissions(runtime, QFile::ReadOwner | QFile::WriteOwner | QFile::ExeOwner);
    qputenv("XDG_RUNTIME_DIR", runtime.toLocal8Bit());
    QDesktopServices::setUrlHandler(QStringLiteral("http"), &m_urls, "open");
    signal(SIGPIPE, SIG_IGN);
    qRegisterMetaType<Tether::Session *>();
}

void TestDesktopApp::cleanupTestCase()
{
    QDesktopServices::unsetUrlHandler(QStringLiteral("http"));
}

Config TestDesktopApp::testConfig() const
{
    Config c;
    c.bind = QStringLiteral("127.0.0.1");
    c.port = 0; // any free port
    c.command = QStringLiteral("/bin/sh");
    return c;
}

void TestDesktopApp::startsAsMainWindowWithoutTray()
{
    DesktopApp app(testConfig(), DesktopApp::TrayMode::Off);
    QString error;
    QVERIFY2(app.start(&error), qPrintable(error));
    QVERIFY(app.server()->port() != 0);
    QCOMPARE(app.trayIcon(), nullptr);
    SessionsWindow *w = app.sessionsWindow();
    QVERIFY(w->isVisible());
    QVERIFY(w->isMainWindowMode());
    QCOMPARE(app.trayToolTip(), QStringLiteral("Tether — 0 sessions, 0 attached"));
}

void TestDesktopApp::newTerminalAndAttachHere()
{
    DesktopApp app(testConfig(), DesktopApp::TrayMode::Off);
    QString error;
    QVERIFY2(app.start(&error), qPrintable(error));
    m_urls.urls.clear();
    const QString id = app.newTerminal();
    QVERIFY(!id.isEmpty());
    Session *s = app.registry()->find(id);
    QVERIFY(s);
    QCOMPARE(s->command().value(0), QStringLiteral("/bin/sh")); // the configured default command
    // The window attaches over WebSocket, asynchronously.
    QTRY_COMPARE(app.trayToolTip(), QStringLiteral("Tether — 1 session, %1 attached").arg(localTerminalAvailable() ? 1 : 0));
#ifdef TETHER_HAVE_QTERMWIDGET
    // Attached here in a local window.
    auto *w = qobject_cast<TerminalWindow *>(app.terminalWindow(id));
    QVERIFY(w);
    QVERIFY(w->isVisible());
    QTRY_VERIFY(w->isAttached());
    QVERIFY(s->controlViewer());
    QVERIFY(m_urls.urls.isEmpty());

    // A second "attach here" raises the same window.
    app.attachHere(id);
    QCOMPARE(app.terminalWindow(id), w);

    // A browser takes over; attach here takes it back in the same window.
    FakeBrowser browser;
    s->attach(&browser, ViewerMode::Control, std::nullopt);
    QTRY_VERIFY(!w->isAttached());
    app.attachHere(id);
    QCOMPARE(app.terminalWindow(id), w);
    QTRY_VERIFY(w->isAttached());
    QTRY_COMPARE(browser.reasons, QList<DetachReason>{DetachReason::Superseded});

    // Closing the window leaves the session running and detached.
    w->close();
    QTRY_VERIFY(!app.terminalWindow(id));
    QTRY_COMPARE(s->controlViewer(), nullptr);
    QCOMPARE(app.registry()->find(id), s);
    QTRY_COMPARE(app.trayToolTip(), QStringLiteral("Tether — 1 session, 0 attached"));
#else
    // No local terminal: the new session opens in the browser instead.
    QCOMPARE(m_urls.urls.size(), 1);
    QCOMPARE(m_urls.urls.at(0).toString(), app.server()->sessionUrl(id));
#endif
}

void TestDesktopApp::browserUrls()
{
    DesktopApp app(testConfig(), DesktopApp::TrayMode::Off);
    QString error;
    QVERIFY2(app.start(&error), qPrintable(error));
    m_urls.urls.clear();
    app.openDashboard();
    QCOMPARE(m_urls.urls.size(), 1);
    QCOMPARE(m_urls.urls.at(0), QUrl(app.server()->keyedUrl()));
    Session *s = app.registry()->create(shell());
    QVERIFY(s);
    app.openInBrowser(s->id());
    QCOMPARE(m_urls.urls.size(), 2);
    QCOMPARE(m_urls.urls.at(1), QUrl(app.server()->sessionUrl(s->id())));
}

void TestDesktopApp::notifiesWhenDetachedSessionExits()
{
    RecordingDesktopApp app(testConfig(), DesktopApp::TrayMode::On);
    QString error;
    QVERIFY2(app.start(&error), qPrintable(error));
    QSignalSpy notified(&app, &DesktopApp::notified);

    // Attached: the viewer sees the exit, no notification.
    FakeBrowser viewer;
    SpawnOptions o;
    o.argv = QStringList{QStringLiteral("/bin/sh")};
    Session *attached = app.registry()->create(o);
    QVERIFY(attached);
    attached->attach(&viewer, ViewerMode::Control, std::nullopt);
    QVERIFY(attached->sendInput(&viewer, QByteArrayLiteral("exit 2\n")));
    QTRY_COMPARE(attached->state(), Session::State::Exited);

    // Detached: "make — exited 0" style notification.
    o.argv = QStringList{QStringLiteral("/bin/sh"), QStringLiteral("-c"), QStringLiteral("exit 5")};
    Session *detached = app.registry()->create(o);
    QVERIFY(detached);
    QVERIFY(notified.wait(5000));
    QCOMPARE(notified.count(), 1);
    QCOMPARE(notified.at(0).at(1).toString(), QStringLiteral("sh -c 'exit 5' — exited 5"));

    // Jobs left running keep the session (by design): the notification says so.
    o.argv = QStringList{QStringLiteral("/bin/sh"), QStringLiteral("-c"),
                         QStringLiteral("trap '' HUP; sleep 60 & exit 0")};
    Session *jobs = app.registry()->create(o);
    QVERIFY(jobs);
    QVERIFY(notified.wait(5000));
    QCOMPARE(notified.count(), 2);
    QCOMPARE(notified.at(1).at(1).toString(),
             QStringLiteral("sh -c 'trap '\\'''\\'' HUP; sleep 60 & exit 0' — exited 0 · 1 background process"));
    // Both reached the tray.
    QCOMPARE(app.messages.size(), 2);
    QCOMPARE(app.messages.at(1).at(1), notified.at(1).at(1).toString());
    // The tray menu says it too.
    app.rebuildTrayMenu();
    QStringList items;
    const auto actions = app.trayMenu()->actions();
    for (const QAction *a : actions)
        items << a->text();
    QVERIFY2(items.contains(QStringLiteral("sh -c 'trap '\\'''\\'' HUP; sleep 60 && exit 0' — exited 0 · 1 background process")),
             qPrintable(items.join(QLatin1Char('\n'))));
    // Its tooltip: the whole command, quoted as `tether list` shows it.
    for (const QAction *a : actions)
        if (a->text().contains(QStringLiteral("background process")))
            QCOMPARE(a->toolTip(), QStringLiteral("/bin/sh -c 'trap '\\'''\\'' HUP; sleep 60 & exit 0'"));
    // Named: the name, in place of the command.
    QVERIFY(app.registry()->rename(jobs, QStringLiteral("my jobs")));
    app.rebuildTrayMenu();
    items.clear();
    for (const QAction *a : app.trayMenu()->actions())
        items << a->text();
    QVERIFY2(items.contains(QStringLiteral("my jobs — exited 0 · 1 background process")),
             qPrintable(items.join(QLatin1Char('\n'))));
    QVERIFY(app.registry()->kill(jobs->id()));
    attached->detach(&viewer);
}

void TestDesktopApp::trayMessageBeforeExpiryAttachesOnClick()
{
    Config c = testConfig();
    c.limits.ttlSeconds = 4;
    RecordingDesktopApp app(c, DesktopApp::TrayMode::On);
    QString error;
    QVERIFY2(app.start(&error), qPrintable(error));
    QVERIFY(app.trayIcon());
    // Warned 3.5 s ahead of a 4 s TTL: about 0.5 s after creation, with
    // slack for a loaded machine before the deadline would overtake it.
    app.registry()->setExpiryWarningLead(3500);
    app.registry()->setTeardownGrace(200);

    // Attached the whole time: never announced.
    FakeBrowser viewer;
    Session *watched = app.registry()->create(shell());
    QVERIFY(watched);
    watched->attach(&viewer, ViewerMode::Control, std::nullopt);
    Session *s = app.registry()->create(shell());
    QVERIFY(s);
    QTRY_COMPARE_WITH_TIMEOUT(app.messages.size(), 1, 10000);
    QCOMPARE(app.messages.at(0).at(0), QStringLiteral("Session about to expire"));
    const QString text = app.messages.at(0).at(1);
    QVERIFY2(QRegularExpression(QStringLiteral("^sh — expires in [1-4] s\n")).match(text).hasMatch(), qPrintable(text));
    QVERIFY(app.registry()->expiresIn(s) > 0);

    // A click on the message.
    Q_EMIT app.trayIcon()->messageClicked();
#ifdef TETHER_HAVE_QTERMWIDGET
    // Attaches here, which keeps the session.
    QVERIFY(text.endsWith(QStringLiteral("Click to attach and keep it.")));
    auto *w = qobject_cast<TerminalWindow *>(app.terminalWindow(s->id()));
    QVERIFY(w);
    QTRY_VERIFY(w->isAttached());
    QVERIFY(s->controlViewer());
    QCOMPARE(app.registry()->expiresIn(s), qint64(-1));
    w->close();
    QTRY_VERIFY(!app.terminalWindow(s->id()));

    // Detached again: a new period, announced once more. A click that comes
    // after a browser attached elsewhere does not take the session from it.
    QTRY_COMPARE_WITH_TIMEOUT(app.messages.size(), 2, 10000);
    FakeBrowser late;
    s->attach(&late, ViewerMode::Control, std::nullopt);
    Q_EMIT app.trayIcon()->messageClicked();
    QVERIFY(late.reasons.isEmpty());
    QCOMPARE(s->controlViewer(), static_cast<Viewer *>(&late));
    QVERIFY(!app.terminalWindow(s->id()));
    QTRY_VERIFY(app.sessionsWindow()->isVisible());
    s->detach(&late);
#else
    QVERIFY(text.endsWith(QStringLiteral("Click to see your sessions.")));
    QTRY_VERIFY(app.sessionsWindow()->isVisible());
#endif
    // Left detached: announced (once more), then it expires; the session
    // watched all along never was.
    QSignalSpy removed(app.registry(), &SessionRegistry::sessionRemoved);
    QVERIFY(removed.wait(15000));
    QCOMPARE(removed.at(0).at(0).value<Session *>(), s);
    QCOMPARE(app.messages.size(), localTerminalAvailable() ? 3 : 1);
    for (const QStringList &m : std::as_const(app.messages))
        QVERIFY(m.at(1).startsWith(QStringLiteral("sh — expires in ")));
    QCOMPARE(app.registry()->find(watched->id()), watched);
    watched->detach(&viewer);
}

void TestDesktopApp::quitTearsEverythingDown()
{
    DesktopApp app(testConfig(), DesktopApp::TrayMode::Off);
    QString error;
    QVERIFY2(app.start(&error), qPrintable(error));
    app.registry()->setTeardownGrace(200);
    QList<pid_t> pids;
    for (int i = 0; i < 3; ++i) {
        Session *s = app.registry()->create(shell());
        QVERIFY(s);
        pids << s->pid();
    }
#ifdef TETHER_HAVE_QTERMWIDGET
    app.attachHere(app.registry()->sessions().first()->id());
#endif
    QSignalSpy finished(&app, &DesktopApp::finished);
    app.requestQuit(false);
    QVERIFY(finished.wait(10000));
    QCOMPARE(app.registry()->count(), 0);
    QVERIFY(!app.sessionsWindow()->isVisible());
    for (pid_t pid : pids)
        QTRY_VERIFY(TestUtil::processState(pid) == 0);
    QCOMPARE(TestUtil::zombieChildren(), 0);
}

void TestDesktopApp::binarySingleInstanceHandOff()
{
#ifdef TETHER_BINARY
    const QString bin = QStringLiteral(TETHER_BINARY);
#else
    const QString bin;
#endif
    if (bin.isEmpty() || !QFile::exists(bin))
        QSKIP("the tether executable is not built");
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const QString runtime = dir.filePath(QStringLiteral("run"));
    QDir().mkpath(runtime);
    QFile::setPermissions(runtime, QFile::ReadOwner | QFile::WriteOwner | QFile::ExeOwner);
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.insert(QStringLiteral("HOME"), dir.path());
    env.insert(QStringLiteral("XDG_CONFIG_HOME"), dir.filePath(QStringLiteral("config")));
    env.insert(QStringLiteral("XDG_RUNTIME_DIR"), runtime);
    env.insert(QStringLiteral("QT_QPA_PLATFORM"), QStringLiteral("offscreen"));
    env.insert(QStringLiteral("QT_LOGGING_RULES"), QStringLiteral("tether.*.debug=false"));
    const QStringList args{QStringLiteral("--no-tray"), QStringLiteral("--port"), QStringLiteral("0")};

    QProcess first;
    first.setProcessEnvironment(env);
    first.setProcessChannelMode(QProcess::MergedChannels);
    first.start(bin, args);
    QByteArray firstOut;
    QTRY_VERIFY_WITH_TIMEOUT((firstOut += first.readAll()).contains("Tether is serving http://127.0.0.1:"), 10000);
    const QString runtimeFile = QDir(runtime).filePath(QStringLiteral("tether/server.json"));
    QVERIFY(QFile::exists(runtimeFile));

    QProcess second;
    second.setProcessEnvironment(env);
    second.setProcessChannelMode(QProcess::MergedChannels);
    QSignalSpy secondDone(&second, QOverload<int, QProcess::ExitStatus>::of(&QProcess::finished));
    second.start(bin, args);
    QVERIFY(secondDone.wait(10000));
    QCOMPARE(second.exitStatus(), QProcess::NormalExit);
    QCOMPARE(second.exitCode(), 0);
    const QByteArray secondOut = second.readAll();
    QVERIFY2(!secondOut.contains("Tether is serving http://127.0.0.1:"), "the second launch must not serve");
    // It says so, in one line, with the first one's address (no key).
    const QJsonObject running = QJsonDocument::fromJson([&] {
        QFile f(runtimeFile);
        return f.open(QIODevice::ReadOnly) ? f.readAll() : QByteArray();
    }()).object();
    const QString url = running.value(QStringLiteral("url")).toString();
    QVERIFY(url.startsWith(QStringLiteral("http://127.0.0.1:")));
    const QByteArray said = QStringLiteral("Tether is already running (pid %1): its Sessions window was raised; it serves %2\n")
                                .arg(first.processId()).arg(url).toUtf8();
    QVERIFY2(secondOut.startsWith(said) || secondOut.contains("\n" + said), secondOut.constData());
    QCOMPARE(secondOut.count("Tether is already running"), 1);
    QCOMPARE(first.state(), QProcess::Running);
    QTRY_VERIFY_WITH_TIMEOUT((firstOut += first.readAll()).contains("asked to raise"), 5000);

    // SIGTERM (logout, systemctl stop) quits cleanly with exit code 0.
    QSignalSpy firstDone(&first, QOverload<int, QProcess::ExitStatus>::of(&QProcess::finished));
    first.terminate();
    QVERIFY(firstDone.wait(10000));
    QCOMPARE(first.exitStatus(), QProcess::NormalExit);
    QCOMPARE(first.exitCode(), 0);
    QVERIFY(!QFile::exists(QDir(runtime).filePath(QStringLiteral("tether-desktop.sock"))));
    QVERIFY(!QFile::exists(runtimeFile));
}

#ifdef TETHER_HAVE_QTERMWIDGET
void TestDesktopApp::restartReopensTerminalWindows()
{
    // The windows go with the process image; the next one opens them again,
    // in the same mode. (The exec itself: binaryRestartsInPlace.)
    QTemporaryDir dir;
    Config config;
    config.port = 0;
    DesktopApp a(config, DesktopApp::TrayMode::Off);
    QString error;
    QVERIFY2(a.start(&error), qPrintable(error));
    QVERIFY(!a.restartedInPlace());
    Session *s1 = a.registry()->create(shell());
    Session *s2 = a.registry()->create(shell());
    QVERIFY(s1 && s2);
    a.attachHere(s1->id());
    a.attachHere(s2->id(), ViewerMode::Watch);
    QTRY_VERIFY(a.terminalWindow(s1->id()) && a.terminalWindow(s2->id()));
    QTRY_VERIFY(s1->controlViewer() && s2->watchers().size() == 1);
    Q_EMIT a.restarter()->aboutToExec();
    QVERIFY(!a.terminalWindow(s1->id()) && !a.terminalWindow(s2->id()));
    QTRY_COMPARE(s1->viewerCount() + s2->viewerCount(), 0); // detached, not left dangling
    QStringList windows = QString::fromLatin1(qgetenv("TETHER_HANDOVER_WINDOWS")).split(QLatin1Char(' '));
    windows.sort();
    QStringList expected{s1->id(), s2->id() + QStringLiteral(":watch")};
    expected.sort();
    QCOMPARE(windows, expected);
    const QJsonObject noted = QJsonDocument::fromJson(qgetenv("TETHER_HANDOVER_DESKTOP")).object();
    QCOMPARE(noted.value(QStringLiteral("windows")).toObject().keys().size(), 2); // their geometry too

    // The exec did not happen: the windows come back in this image.
    Q_EMIT a.restarter()->failed(QStringLiteral("test"));
    QVERIFY(qgetenv("TETHER_HANDOVER_WINDOWS").isEmpty());
    QTRY_VERIFY(a.terminalWindow(s1->id()) && a.terminalWindow(s2->id()));
    QTRY_VERIFY(s1->controlViewer() && s2->watchers().size() == 1);

    // The next image (here: another app on the same registry's sessions).
    DesktopApp b(config, DesktopApp::TrayMode::Off);
    Session *t1 = b.registry()->create(shell());
    QVERIFY(t1);
    qputenv("TETHER_HANDOVER_WINDOWS", t1->id().toLatin1() + ":watch nosuchid");
    qputenv("TETHER_HANDOVER_DESKTOP", "{\"windows\":{\"" + t1->id().toLatin1() + "\":[60,50,640,380]}}");
    QVERIFY2(b.start(&error), qPrintable(error));
    QVERIFY(qgetenv("TETHER_HANDOVER_WINDOWS").isEmpty());
    QVERIFY(qgetenv("TETHER_HANDOVER_DESKTOP").isEmpty());
    QTRY_VERIFY(b.terminalWindow(t1->id()));
    QTRY_COMPARE(t1->watchers().size(), 1);
    // Where it was; a watch window's size then follows the session's once
    // its attachment (over WebSocket, asynchronous) says what it is.
    QTRY_COMPARE(b.terminalWindow(t1->id())->geometry().topLeft(), QPoint(60, 50));
    QVERIFY(!b.terminalWindow(QStringLiteral("nosuchid")));
}
#endif

void TestDesktopApp::binaryRestartsInPlace()
{
    if (ServerTest::tetherBinary().isEmpty())
        QSKIP("the tether executable is not built");
    // The desktop app (`tether` without a subcommand), headless here.
    ServerTest::ServeProcess s;
    s.proc.setProcessEnvironment(s.environment({QStringLiteral("QT_QPA_PLATFORM=offscreen")}));
    s.proc.start(ServerTest::tetherBinary(), {QStringLiteral("--no-tray"), QStringLiteral("--port"), QStringLiteral("0")});
    QVERIFY(s.proc.waitForStarted(5000));
    QVERIFY(s.waitLine());
    const qint64 pid = s.proc.processId();
    const QString id = s.create({QStringLiteral("/bin/sh"), QStringLiteral("-c"), QStringLiteral("echo ready; exec sleep 1000")});
    QVERIFY(!id.isEmpty());
    QTRY_VERIFY(s.session(id).value(QStringLiteral("offset")).toInt() > 0);
    const QJsonObject before = s.session(id);
    const QString instance = s.http("GET", "/api/restart").json().value(QStringLiteral("instance")).toString();
    QVERIFY(!instance.isEmpty());

    QCOMPARE(::kill(pid_t(pid), SIGUSR2), 0);
    QTRY_VERIFY_WITH_TIMEOUT([&]() {
        const QString now = s.http("GET", "/api/restart").json().value(QStringLiteral("instance")).toString();
        return !now.isEmpty() && now != instance;
    }(), 15000);
    QCOMPARE(s.proc.state(), QProcess::Running);
    QCOMPARE(s.proc.processId(), pid);
    const QJsonObject after = s.session(id);
    for (const char *field : {"pid", "offset", "created", "command"})
        QCOMPARE(after.value(QLatin1String(field)), before.value(QLatin1String(field)));
    QCOMPARE(s.out.count('\n'), 1); // "Tether is serving" once

    // The new image holds the single-instance lock: a second launch hands off.
    QProcess second;
    second.setProcessEnvironment(s.proc.processEnvironment());
    QSignalSpy secondDone(&second, QOverload<int, QProcess::ExitStatus>::of(&QProcess::finished));
    second.start(ServerTest::tetherBinary(), {QStringLiteral("--no-tray"), QStringLiteral("--port"), QStringLiteral("0")});
    QVERIFY(secondDone.wait(10000));
    QCOMPARE(second.exitCode(), 0);
    QVERIFY(!second.readAllStandardOutput().contains("Tether is serving"));

    s.proc.terminate(); // a clean quit still ends the sessions and exits 0
    QVERIFY(s.waitFinished());
    QCOMPARE(s.proc.exitCode(), 0);
}

void TestDesktopApp::trayAnnouncesAnUpdate()
{
    // The binary this process was "started from" is another Tether than
    // the running image (here: a script answering --version): the tray says
    // so once, its menu offers the restart, and a click on the message
    // restarts in place.
    QTemporaryDir dir;
    const QString bin = dir.filePath(QStringLiteral("tether"));
    {
        QFile f(bin);
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write("#!/bin/sh\necho \"tether 9.9.9\"\n");
    }
    QVERIFY(QFile::setPermissions(bin, QFile::ReadOwner | QFile::WriteOwner | QFile::ExeOwner));
    QByteArray argv0 = QFile::encodeName(bin);
    char *argv[] = {argv0.data(), nullptr};
    RestartInPlace::recordStartup(1, argv);
    struct Reset {
        ~Reset() { RestartInPlace::recordStartup(0, nullptr); }
    } reset;

    RecordingDesktopApp app(testConfig(), DesktopApp::TrayMode::On);
    QString error;
    QVERIFY2(app.start(&error), qPrintable(error));
    QTRY_COMPARE(app.updateVersion(), QStringLiteral("9.9.9"));
    QTRY_COMPARE(app.messages.size(), 1);
    QCOMPARE(app.messages.at(0).at(0), QStringLiteral("Tether was updated"));
    QCOMPARE(app.messages.at(0).at(1), QStringLiteral("Tether was updated — restart to use version 9.9.9 (sessions are kept)\n"
                                                      "Click to restart now."));
    app.rebuildTrayMenu();
    QAction *first = app.trayMenu()->actions().value(0);
    QVERIFY(first);
    QCOMPARE(first->text(), QStringLiteral("Restart to use version 9.9.9"));
    // The Sessions window says it too (the main window when there is no tray).
    auto *updateText = app.sessionsWindow()->findChild<QLabel *>(QStringLiteral("updateText"));
    QVERIFY(updateText);
    QCOMPARE(updateText->text(), DesktopApp::updateText(QStringLiteral("9.9.9")));
    QVERIFY(!app.sessionsWindow()->findChild<QWidget *>(QStringLiteral("updateBar"))->isHidden());

    // Looked at again (same file): not announced twice.
    QVERIFY(QFile::setPermissions(bin, QFile::ReadOwner | QFile::WriteOwner | QFile::ExeOwner | QFile::ReadGroup));
    QTest::qWait(800);
    QCOMPARE(app.messages.size(), 1);

    // The click restarts in place. (The binary is made unrunnable before
    // the exec, which comes at the earliest one event-loop pass later, so
    // the restart fails and this test process goes on.)
    QSignalSpy failed(app.restarter(), &RestartInPlace::failed);
    Q_EMIT app.trayIcon()->messageClicked();
    QVERIFY(app.restarter()->isRestarting());
    QVERIFY(QFile::setPermissions(bin, QFile::ReadOwner | QFile::WriteOwner));
    QVERIFY(failed.wait(5000));
    QVERIFY2(failed.at(0).at(0).toString().contains(QStringLiteral("Permission denied")),
             qPrintable(failed.at(0).at(0).toString()));
    // Not a runnable Tether any more: no update, and the menu says nothing.
    QTRY_VERIFY(app.updateVersion().isEmpty());
    QVERIFY(app.sessionsWindow()->findChild<QWidget *>(QStringLiteral("updateBar"))->isHidden());
    app.rebuildTrayMenu();
    QVERIFY(!app.trayMenu()->actions().value(0)->text().startsWith(QStringLiteral("Restart to use")));
}

void TestDesktopApp::restartReopensSessionsWindowAndSettings()
{
    // The desktop comes back as it was: the next image (same pid, after
    // execve) shows the Sessions window where it was and the Settings
    // dialog, with the tray. (Terminal windows: restartReopensTerminalWindows.)
    const QRect where(140, 120, 960, 600); // above the window's minimum size in both builds
    {
        DesktopApp a(testConfig(), DesktopApp::TrayMode::On);
        QString error;
        QVERIFY2(a.start(&error), qPrintable(error));
        QVERIFY(!a.sessionsWindow()->isVisible()); // a tray app starts without it
        a.showSessionsWindow();
        a.sessionsWindow()->setGeometry(where);
        QTRY_COMPARE(a.sessionsWindow()->geometry(), where);
        a.showSettings();
        QVERIFY(qgetenv("TETHER_HANDOVER_DESKTOP").isEmpty());
        Q_EMIT a.restarter()->aboutToExec();
        QVERIFY(!qgetenv("TETHER_HANDOVER_DESKTOP").isEmpty());
        // The exec did not happen: nothing is reopened twice, the note is gone.
        Q_EMIT a.restarter()->failed(QStringLiteral("test"));
        QVERIFY(qgetenv("TETHER_HANDOVER_DESKTOP").isEmpty());
        QCOMPARE(a.sessionsWindow()->geometry(), where);
        Q_EMIT a.restarter()->aboutToExec(); // again, for the "next image" below
    }
    // The next image: the sessions window is back, where it was, and the
    // settings dialog; the note is read once and removed.
    DesktopApp b(testConfig(), DesktopApp::TrayMode::On);
    QString error;
    QVERIFY2(b.start(&error), qPrintable(error));
    QVERIFY(qgetenv("TETHER_HANDOVER_DESKTOP").isEmpty());
    QVERIFY(b.trayIcon());
    QTRY_VERIFY(b.sessionsWindow()->isVisible());
    QCOMPARE(b.sessionsWindow()->geometry(), where);
    QWidget *settings = nullptr;
    for (QWidget *w : QApplication::topLevelWidgets()) {
        if (qobject_cast<SettingsDialog *>(w) && w->isVisible())
            settings = w;
    }
    QVERIFY(settings);

    // Without a note (a plain start), a tray app opens no window.
    DesktopApp c(testConfig(), DesktopApp::TrayMode::On);
    QVERIFY2(c.start(&error), qPrintable(error));
    QVERIFY(!c.sessionsWindow()->isVisible());
}

void TestDesktopApp::settingsKeepQuietAboutPortChosenAtStart()
{
    // `tether --port 0` with server/port saved: the server listens on a port
    // picked at start, the Settings dialog shows the saved one. It said
    // "Restart Tether to use the new address" at once, without any edit.
    {
        QSettings saved(QStringLiteral("Tether"), QStringLiteral("tether"));
        saved.setValue(QStringLiteral("server/port"), 7555);
        saved.sync();
    }
    DesktopApp a(testConfig(), DesktopApp::TrayMode::Off); // port 0, as --port 0
    QString error;
    QVERIFY2(a.start(&error), qPrintable(error));
    QVERIFY(a.server()->port() != 7555);
    a.showSettings();
    SettingsDialog *d = nullptr;
    for (QWidget *w : QApplication::topLevelWidgets()) {
        if (auto *s = qobject_cast<SettingsDialog *>(w); s && s->isVisible())
            d = s;
    }
    QVERIFY(d);
    auto *note = d->findChild<QLabel *>(QStringLiteral("serverNote"));
    auto *port = d->findChild<QSpinBox *>(QStringLiteral("port"));
    QVERIFY(note && port);
    QCOMPARE(port->value(), 7555);
    QVERIFY2(note->text().contains(QStringLiteral("port %1").arg(a.server()->port())), qPrintable(note->text()));
    QVERIFY2(!note->text().contains(QStringLiteral("Restart Tether")), qPrintable(note->text()));
    port->setValue(7556); // an edit: a restart is needed for it
    QVERIFY2(note->text().contains(QStringLiteral("Restart Tether")), qPrintable(note->text()));
    d->close();
    QSettings(QStringLiteral("Tether"), QStringLiteral("tether")).remove(QStringLiteral("server/port"));
}

QTEST_MAIN(TestDesktopApp)
#include "tst_desktopapp.moc"
