// SPDX-License-Identifier: GPL-2.0-or-later
// The desktop application as a client of its host (issue 23): DesktopApp
// in this process finds or starts a real `tether serve` (the built binary,
// a process of its own), shows its sessions from /api/events and acts on
// them through the API; closing the UI leaves the host running, Quit ends
// it. Then the real `tether` binary's single-instance hand-off.
#include "apiclient.h"
#include "desktopapp.h"
#include "desktophost.h"
#include "hostlauncher.h"
#include "runtimefile.h"
#include "serveprocess.h"
#include "sessionlistmodel.h"
#include "sessionswindow.h"
#include "settingsdialog.h"
#include "terminalwindow.h"
#include "windowstate.h"

#include <QAction>
#include <QApplication>
#include <QJsonArray>
#include <QStatusBar>
#include <QTableView>
#include <QDesktopServices>
#include <QDir>
#include <QJsonDocument>
#include <QJsonObject>
#include <QLabel>
#include <QLineEdit>
#include <QMenu>
#include <QProcess>
#include <QRegularExpression>
#include <QSettings>
#include <QSignalSpy>
#include <QSpinBox>
#include <QSystemTrayIcon>
#include <QTemporaryDir>
#include <QTest>
#include <QUrl>

#include <algorithm>
#include <cerrno>
#include <memory>
#include <csignal>
#include <unistd.h>

using namespace Tether;

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

namespace {

using DesktopHost::alive;
using DesktopHost::runtimePid;

/// One synchronous API call (spins the event loop; the host is another process).
ApiReply call(const ServerEndpoint &endpoint, const QByteArray &method, const QString &path,
              const QByteArray &body = QByteArray())
{
    ApiClient api(endpoint);
    ApiReply result;
    bool done = false;
    const auto take = [&](const ApiReply &r) {
        result = r;
        done = true;
    };
    if (method == "GET")
        api.get(path, take);
    else if (method == "POST")
        api.post(path, body, take);
    else if (method == "PATCH")
        api.patch(path, body, take);
    else
        api.deleteResource(path, take);
    (void)QTest::qWaitFor([&] { return done; }, 15000); // no reply: the caller checks the empty result
    return result;
}

QByteArray commandBody(const QStringList &argv)
{
    return QJsonDocument(QJsonObject{{QStringLiteral("command"), QJsonArray::fromStringList(argv)}})
        .toJson(QJsonDocument::Compact);
}

} // namespace

class TestDesktopApp : public QObject
{
    Q_OBJECT
private Q_SLOTS:
    void initTestCase();
    void cleanup();
    void cleanupTestCase();
    void startsItsHostApartAndListsSessions();
    void actionsGoThroughTheHost();
    void notifiesWhenDetachedSessionExits();
    void trayMessageBeforeExpiryAttachesOnClick();
    void trayOffersCloseAndQuit();
    void followsARestartInPlace();
    void offersToStartTheHostAgain();
    void tellsOfACrashOnce();
    void windowsFollowTheHostStartedAgain();
    void windowsReopenAtTheNextStart();
    void settingsGoToTheHost();
    void binarySingleInstanceHandOff();

private:
    /// A desktop app of this test on the host it finds or starts (the
    /// built `tether serve`); true once connected with the list in.
    bool startApp(DesktopApp &app, const QStringList &hostOptions = {});

    QTemporaryDir m_home;
    UrlCatcher m_urls;
};

void TestDesktopApp::initTestCase()
{
    ServerTest::registerProcessTypes();
    if (ServerTest::tetherBinary().isEmpty())
        QSKIP("the tether executable is not built in this tree");
    QVERIFY(m_home.isValid());
    // Settings, runtime files, the host's log and the host itself stay
    // inside the test dir: the host this test starts inherits them.
    DesktopHost::isolateUser(m_home);
    // Notifications go to the tray (recorded), never to the user's desktop
    // notification daemon (tst_desktopnotifier tests that path).
    qunsetenv("DBUS_SESSION_BUS_ADDRESS");
    qputenv("PS1", "$ ");
    QDesktopServices::setUrlHandler(QStringLiteral("http"), &m_urls, "open");
}

void TestDesktopApp::cleanup()
{
    DesktopHost::stopHost(); // no test leaves a host running
    // Each test starts with no sessions: a host ended by SIGTERM keeps its
    // running sessions' records ("ended by shutdown", issue 24), which the
    // next test's host would list.
    QDir(m_home.filePath(QStringLiteral("state/tether/sessions"))).removeRecursively();
    // ... and no window of an earlier test to reopen.
    QFile::remove(WindowState::path());
}

void TestDesktopApp::cleanupTestCase()
{
    QDesktopServices::unsetUrlHandler(QStringLiteral("http"));
}

bool TestDesktopApp::startApp(DesktopApp &app, const QStringList &hostOptions)
{
    app.setHostProgram(ServerTest::tetherBinary());
    app.setHostArguments(QStringList{QStringLiteral("--port"), QStringLiteral("0")} + hostOptions);
    QSignalSpy failed(&app, &DesktopApp::hostFailed);
    app.start();
    if (!QTest::qWaitFor([&] { return app.isConnected() || !failed.isEmpty(); }, 30000))
        return false;
    if (!failed.isEmpty())
        qWarning("no host: %s", qPrintable(failed.at(0).at(0).toString()));
    return failed.isEmpty();
}

void TestDesktopApp::startsItsHostApartAndListsSessions()
{
    qint64 host = 0;
    QString id;
    {
        DesktopApp a(DesktopSettings(), DesktopApp::TrayMode::Off);
        QVERIFY(startApp(a));
        // The host is another process, in a process session of its own (not
        // our child, nor in our session: a kill of the UI's session, the end
        // of its display or terminal do not reach it).
        host = runtimePid();
        QVERIFY(alive(host));
        QVERIFY(host != ::getpid());
        QTRY_COMPARE(a.hostPid(), host);
        QVERIFY(::getsid(pid_t(host)) > 0);
        QVERIFY(::getsid(pid_t(host)) != ::getsid(0));
        QFile stat(QStringLiteral("/proc/%1/stat").arg(host));
        QVERIFY(stat.open(QIODevice::ReadOnly));
        const QList<QByteArray> fields = stat.readAll().split(')').last().trimmed().split(' ');
        QVERIFY(fields.value(1).toLongLong() != ::getpid()); // its parent is not us
        QVERIFY(QFile::exists(HostLauncher::logPath()));
        // No tray: the Sessions window is the main window, listing the host's sessions.
        QVERIFY(a.sessionsWindow()->isVisible());
        QVERIFY(a.sessionsWindow()->isMainWindowMode());
        QCOMPARE(a.model()->rowCount(), 0);
        const ApiReply made = call(a.endpoint(), "POST", QStringLiteral("api/sessions"),
                                   commandBody({QStringLiteral("/bin/sh")}));
        QCOMPARE(made.status, 201);
        id = made.json().value(QStringLiteral("id")).toString();
        QTRY_COMPARE(a.model()->rowCount(), 1);
        QCOMPARE(a.sessionsWindow()->view()->model()->rowCount(), 1);
        QCOMPARE(a.trayToolTip(), QStringLiteral("Tether — 1 session, 0 attached"));

        // Close (not quit): the UI is done, the host and the session go on.
        QSignalSpy finished(&a, &DesktopApp::finished);
        a.closeUi();
        QTRY_COMPARE(finished.size(), 1);
        QCOMPARE(finished.at(0).at(0).toInt(), 0);
    }
    QVERIFY(alive(host));
    QCOMPARE(runtimePid(), host);

    // The next desktop app finds that host (starts none) and lists the session.
    DesktopApp b(DesktopSettings(), DesktopApp::TrayMode::Off);
    QVERIFY(startApp(b));
    QCOMPARE(runtimePid(), host);
    QTRY_COMPARE(b.model()->rowCount(), 1);
    QCOMPARE(b.model()->sessionAt(0).value(QStringLiteral("id")).toString(), id);
    const qint64 shell = qint64(b.model()->sessionAt(0).value(QStringLiteral("pid")).toDouble());
    QVERIFY(alive(shell));

    // Quit: the host shuts down, and the session's shell with it.
    QSignalSpy finished(&b, &DesktopApp::finished);
    QTRY_VERIFY(b.hostPid() == host);
    b.quitTether(false);
    QTRY_COMPARE_WITH_TIMEOUT(finished.size(), 1, 15000);
    QTRY_VERIFY_WITH_TIMEOUT(!alive(host), 15000);
    QTRY_VERIFY_WITH_TIMEOUT(!alive(shell), 15000);
}

void TestDesktopApp::actionsGoThroughTheHost()
{
    DesktopApp a(DesktopSettings(), DesktopApp::TrayMode::Off);
    QVERIFY(startApp(a));
    // New terminal: a session of the host, with its default command.
    QSignalSpy created(&a, &DesktopApp::sessionCreated);
    a.newTerminal();
    QTRY_COMPARE_WITH_TIMEOUT(created.size(), 1, 15000);
    const QString id = created.at(0).at(0).toString();
    QTRY_COMPARE(a.model()->rowCount(), 1);
    QCOMPARE(a.model()->sessionAt(0).value(QStringLiteral("id")).toString(), id);
#ifdef TETHER_HAVE_QTERMWIDGET
    // And a terminal window attached to it, over the WebSocket.
    auto *w = qobject_cast<TerminalWindow *>(a.terminalWindow(id));
    QVERIFY(w);
    QTRY_VERIFY_WITH_TIMEOUT(w->isAttached(), 15000);
    QTRY_COMPARE(a.model()->sessionAt(0).value(QStringLiteral("viewer_kind")).toString(), QStringLiteral("local"));
    w->close();
    QTRY_VERIFY(!a.model()->sessionAt(0).value(QStringLiteral("attached")).toBool());
#endif
    // Rename, from the Sessions window's model (as F2 does).
    SessionListModel *m = a.model();
    QVERIFY(m->flags(m->index(0, SessionListModel::TitleColumn)) & Qt::ItemIsEditable);
    QVERIFY(m->setData(m->index(0, SessionListModel::TitleColumn), QStringLiteral("build")));
    QTRY_COMPARE(m->sessionAt(0).value(QStringLiteral("name")).toString(), QStringLiteral("build"));
    QCOMPARE(call(a.endpoint(), "GET", QStringLiteral("api/sessions/") + id).json().value(QStringLiteral("name")).toString(),
             QStringLiteral("build"));
    // A name the host refuses: said in the Sessions window's status bar.
    a.renameSession(id, QStringLiteral(" starts with a space"));
    QTRY_VERIFY(a.sessionsWindow()->statusBar()->currentMessage().startsWith(QStringLiteral("Not renamed:")));
    // Open in browser: the host's address with its key, at the session.
    m_urls.urls.clear();
    a.openInBrowser(id);
    QCOMPARE(m_urls.urls.size(), 1);
    QCOMPARE(m_urls.urls.at(0).toString(), a.keyedUrl() + QStringLiteral("#/s/") + id);
    QVERIFY(a.keyedUrl().startsWith(RuntimeFile::read().value(QStringLiteral("url")).toString() + QStringLiteral("?key=")));
    // Kill.
    a.killSession(id);
    QTRY_COMPARE(a.model()->rowCount(), 0);
    QCOMPARE(call(a.endpoint(), "GET", QStringLiteral("api/sessions/") + id).status, 404);
}

void TestDesktopApp::notifiesWhenDetachedSessionExits()
{
    RecordingDesktopApp a(DesktopSettings(), DesktopApp::TrayMode::On);
    QVERIFY(startApp(a));
    QVERIFY(a.trayIcon());
    // A session that ends when told to (a file appears), once it is listed running.
    const QString flag = m_home.filePath(QStringLiteral("go"));
    const ApiReply made = call(a.endpoint(), "POST", QStringLiteral("api/sessions"),
                               commandBody({QStringLiteral("/bin/sh"), QStringLiteral("-c"),
                                            QStringLiteral("while [ ! -e '%1' ]; do sleep 0.05; done; exit 3").arg(flag)}));
    QCOMPARE(made.status, 201);
    QTRY_COMPARE(a.model()->runningCount(), 1);
    QFile f(flag);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.close();
    QTRY_COMPARE_WITH_TIMEOUT(a.messages.size(), 1, 15000);
    QCOMPARE(a.messages.at(0).at(0), QStringLiteral("Session ended"));
    QVERIFY2(a.messages.at(0).at(1).endsWith(QStringLiteral(" — exited 3")), qPrintable(a.messages.at(0).at(1)));
    QFile::remove(flag);
}

void TestDesktopApp::trayMessageBeforeExpiryAttachesOnClick()
{
    // A host with a 10 s TTL for detached sessions: the warning comes a
    // tenth of it (1 s) before the deadline, once.
    QCOMPARE(DesktopApp::expiryWarningLeadMs(5), 500);
    QCOMPARE(DesktopApp::expiryWarningLeadMs(3600), 60000);
    QCOMPARE(DesktopApp::expiryWarningLeadMs(0), 0);
    RecordingDesktopApp a(DesktopSettings(), DesktopApp::TrayMode::On);
    QVERIFY(startApp(a, {QStringLiteral("--ttl"), QStringLiteral("10")}));
    const ApiReply made = call(a.endpoint(), "POST", QStringLiteral("api/sessions"), commandBody({QStringLiteral("/bin/sh")}));
    QCOMPARE(made.status, 201);
    const QString id = made.json().value(QStringLiteral("id")).toString();
    Q_UNUSED(id); // without QTermWidget
    QTRY_COMPARE_WITH_TIMEOUT(a.messages.size(), 1, 15000);
    QCOMPARE(a.messages.at(0).at(0), QStringLiteral("Session about to expire"));
    QVERIFY2(a.messages.at(0).at(1).contains(QStringLiteral(" — expires in ")), qPrintable(a.messages.at(0).at(1)));
    if (!a.canAttachHere())
        return; // the click opens the Sessions window instead (a build without a local terminal)
    QVERIFY2(a.messages.at(0).at(1).endsWith(QStringLiteral("Click to attach and keep it.")), qPrintable(a.messages.at(0).at(1)));
#ifdef TETHER_HAVE_QTERMWIDGET
    // The click attaches here, which keeps the session.
    Q_EMIT a.trayIcon()->messageClicked();
    QVERIFY(a.terminalWindow(id));
    QTRY_VERIFY_WITH_TIMEOUT(a.model()->session(id).value(QStringLiteral("attached")).toBool(), 10000);
    QVERIFY(a.model()->session(id).value(QStringLiteral("expires_in")).isNull());
    QCOMPARE(a.messages.size(), 1);
#endif
}

void TestDesktopApp::trayOffersCloseAndQuit()
{
    qint64 host = 0;
    {
        DesktopApp a(DesktopSettings(), DesktopApp::TrayMode::On);
        QVERIFY(startApp(a));
        host = runtimePid();
        QCOMPARE(call(a.endpoint(), "POST", QStringLiteral("api/sessions"), commandBody({QStringLiteral("/bin/sh")})).status, 201);
        QTRY_COMPARE(a.model()->rowCount(), 1);
        a.rebuildTrayMenu();
        QStringList texts;
        for (QAction *act : a.trayMenu()->actions())
            texts << act->text();
        QVERIFY2(texts.contains(QStringLiteral("Close the tray (sessions keep running)")), qPrintable(texts.join(QLatin1Char('|'))));
        QVERIFY2(texts.contains(QStringLiteral("Quit Tether (end 1 session)")), qPrintable(texts.join(QLatin1Char('|'))));
        QVERIFY(!a.sessionsWindow()->isVisible()); // a tray app starts without it
        QSignalSpy finished(&a, &DesktopApp::finished);
        QAction *close = a.trayMenu()->findChild<QAction *>(QStringLiteral("closeUi"));
        QVERIFY(close);
        close->trigger();
        QTRY_COMPARE(finished.size(), 1);
    }
    QVERIFY(alive(host));
    // The session is still the host's.
    ServerEndpoint endpoint;
    QString error;
    const QJsonObject rt = RuntimeFile::read();
    QVERIFY(ServerEndpoint::resolve(rt.value(QStringLiteral("url")).toString(), rt.value(QStringLiteral("key")).toString(),
                                    &endpoint, &error));
    QCOMPARE(call(endpoint, "GET", QStringLiteral("api/sessions")).json().value(QStringLiteral("sessions")).toArray().size(), 1);

    // Quit from the tray's menu (confirmed in a box first: here without).
    DesktopApp b(DesktopSettings(), DesktopApp::TrayMode::On);
    QVERIFY(startApp(b));
    QTRY_VERIFY(b.hostPid() == host);
    QSignalSpy finished(&b, &DesktopApp::finished);
    b.quitTether(false);
    QTRY_COMPARE_WITH_TIMEOUT(finished.size(), 1, 15000);
    QTRY_VERIFY_WITH_TIMEOUT(!alive(host), 15000);
}

void TestDesktopApp::followsARestartInPlace()
{
    DesktopApp a(DesktopSettings(), DesktopApp::TrayMode::Off);
    QVERIFY(startApp(a));
    const qint64 host = runtimePid();
    const ApiReply made = call(a.endpoint(), "POST", QStringLiteral("api/sessions"), commandBody({QStringLiteral("/bin/sh")}));
    QCOMPARE(made.status, 201);
    const QString id = made.json().value(QStringLiteral("id")).toString();
    QTRY_COMPARE(a.model()->rowCount(), 1);
#ifdef TETHER_HAVE_QTERMWIDGET
    a.attachHere(id);
    auto *w = qobject_cast<TerminalWindow *>(a.terminalWindow(id));
    QVERIFY(w);
    QTRY_VERIFY_WITH_TIMEOUT(w->isAttached(), 15000);
    QSignalSpy attachment(w, &TerminalWindow::attachmentChanged);
#endif
    const QString instance = call(a.endpoint(), "GET", QStringLiteral("api/restart")).json().value(QStringLiteral("instance")).toString();
    QVERIFY(!instance.isEmpty());
    QSignalSpy connected(&a, &DesktopApp::connectedChanged);
    a.restartInPlace(); // the tray's Restart Tether: POST /api/restart
    // The stream ends with the old image and comes back with the new one.
    QTRY_VERIFY_WITH_TIMEOUT(connected.size() >= 2, 20000);
    QVERIFY(!connected.first().at(0).toBool());
    QTRY_VERIFY_WITH_TIMEOUT(a.isConnected(), 20000);
    const QString after = call(a.endpoint(), "GET", QStringLiteral("api/restart")).json().value(QStringLiteral("instance")).toString();
    QVERIFY(!after.isEmpty() && after != instance);
    QCOMPARE(runtimePid(), host);
    QCOMPARE(a.model()->rowCount(), 1);
    QCOMPARE(a.model()->sessionAt(0).value(QStringLiteral("id")).toString(), id);
#ifdef TETHER_HAVE_QTERMWIDGET
    // The window lost its connection and resumed on the new image.
    QTRY_VERIFY_WITH_TIMEOUT(attachment.size() >= 2, 20000);
    QTRY_VERIFY_WITH_TIMEOUT(w->isAttached(), 20000);
#endif
}

void TestDesktopApp::offersToStartTheHostAgain()
{
    // The host is stopped elsewhere (`systemctl --user stop`, a kill): the
    // tray says so and offers to start it again, which starts a new one.
    DesktopApp a(DesktopSettings(), DesktopApp::TrayMode::On);
    QVERIFY(startApp(a));
    const qint64 first = runtimePid();
    a.rebuildTrayMenu();
    QVERIFY(!a.trayMenu()->findChild<QAction *>(QStringLiteral("startHostAgain")));
    QSignalSpy connected(&a, &DesktopApp::connectedChanged);
    QCOMPARE(::kill(pid_t(first), SIGTERM), 0);
    QTRY_VERIFY_WITH_TIMEOUT(!a.isConnected(), 15000);
    QTRY_VERIFY_WITH_TIMEOUT(!alive(first), 15000);
    QCOMPARE(a.trayToolTip(), QStringLiteral("Tether — not connected to its host"));
    a.rebuildTrayMenu();
    QAction *again = a.trayMenu()->findChild<QAction *>(QStringLiteral("startHostAgain"));
    QVERIFY(again);
    QVERIFY(again->isEnabled());
    QAction *quit = a.trayMenu()->findChild<QAction *>(QStringLiteral("quitTether"));
    QVERIFY(quit && !quit->isEnabled());
    again->trigger();
    QTRY_VERIFY_WITH_TIMEOUT(a.isConnected(), 30000);
    const qint64 second = runtimePid();
    QVERIFY(alive(second));
    QVERIFY(second != first);
    QTRY_COMPARE(a.hostPid(), second);
    a.rebuildTrayMenu();
    QVERIFY(!a.trayMenu()->findChild<QAction *>(QStringLiteral("startHostAgain")));
}

void TestDesktopApp::tellsOfACrashOnce()
{
    // The host is killed (SIGKILL: a crash) with a session running; its
    // session keeper holds the session, and the host started again takes it
    // over. The tray (here: the desktop's notification path, recorded) says
    // so once: not again when the same host's `server` event comes again
    // (its keeper was replaced).
    RecordingDesktopApp a(DesktopSettings(), DesktopApp::TrayMode::On);
    QVERIFY(startApp(a));
    const qint64 first = runtimePid();
    const ApiReply made = call(a.endpoint(), "POST", QStringLiteral("api/sessions"), commandBody({QStringLiteral("/bin/sh")}));
    QCOMPARE(made.status, 201);
    const QString id = made.json().value(QStringLiteral("id")).toString();
    QTRY_COMPARE(a.model()->rowCount(), 1);
    const auto crashMessages = [&a]() {
        QList<QStringList> m;
        for (const QStringList &msg : std::as_const(a.messages))
            if (msg.value(0) == QLatin1String("Tether crashed"))
                m << msg;
        return m;
    };
    QVERIFY(crashMessages().isEmpty());

    QCOMPARE(::kill(pid_t(first), SIGKILL), 0);
    QTRY_VERIFY_WITH_TIMEOUT(!alive(first), 15000);
    QTRY_VERIFY_WITH_TIMEOUT(!a.isConnected(), 15000);
    a.startHostAgain();
    QTRY_VERIFY_WITH_TIMEOUT(a.isConnected(), 30000);
    QVERIFY(runtimePid() != first);
    const QJsonObject status = call(a.endpoint(), "GET", QStringLiteral("api/restart")).json();
    QCOMPARE(status.value(QStringLiteral("recovered_after_crash")).toInt(), 1);
    const QDateTime crashedAt = QDateTime::fromString(status.value(QStringLiteral("crashed_at")).toString(), Qt::ISODate);
    QVERIFY(crashedAt.isValid());
    QTRY_COMPARE_WITH_TIMEOUT(crashMessages().size(), 1, 15000);
    QCOMPARE(crashMessages().at(0).at(1),
             QStringLiteral("Tether crashed at %1 and recovered 1 session\nOutput from just before the crash may be missing.")
                 .arg(crashedAt.toLocalTime().toString(QStringLiteral("HH:mm"))));
    QCOMPARE(a.model()->rowCount(), 1); // the same session, kept
    QCOMPARE(a.model()->index(0, 0).data(SessionListModel::SessionIdRole).toString(), id);

    // The keeper dies and the host starts another: a new `server` event,
    // the same crash. The session made after it is the fence: the events
    // come in order, so the list with it arrives after that `server` event.
    const qint64 keeper = qint64(status.value(QStringLiteral("keeper_pid")).toDouble());
    QVERIFY(keeper > 0);
    QCOMPARE(::kill(pid_t(keeper), SIGKILL), 0);
    QTRY_VERIFY_WITH_TIMEOUT(
        [&] {
            const qint64 now = qint64(call(a.endpoint(), "GET", QStringLiteral("api/restart"))
                                          .json()
                                          .value(QStringLiteral("keeper_pid"))
                                          .toDouble());
            return now > 0 && now != keeper;
        }(),
        20000);
    QCOMPARE(call(a.endpoint(), "POST", QStringLiteral("api/sessions"), commandBody({QStringLiteral("/bin/sh")})).status, 201);
    QTRY_COMPARE(a.model()->rowCount(), 2);
    QCOMPARE(crashMessages().size(), 1);

    // The words for a crash of another day, and one of unknown time.
    const QDateTime otherDay(QDate(2026, 1, 2), QTime(9, 5));
    QCOMPARE(DesktopApp::crashText(3, otherDay, QDateTime(QDate(2026, 1, 3), QTime(10, 0))),
             QStringLiteral("Tether crashed on 2026-01-02 at 09:05 and recovered 3 sessions"));
    QCOMPARE(DesktopApp::crashText(2, QDateTime()), QStringLiteral("Tether crashed and recovered 2 sessions"));
}

void TestDesktopApp::windowsFollowTheHostStartedAgain()
{
#ifndef TETHER_HAVE_QTERMWIDGET
    QSKIP("this build has no terminal window (QTermWidget)");
#else
    // A terminal window is open when the host dies (kill -9); "Start Tether
    // again" starts a new one, which `--port 0` puts on another port. The
    // window follows it, as it follows a restart in place: it asks the new
    // host for its session (which died with the old one, and the new host
    // says so), instead of knocking at the old port until it gives up.
    DesktopApp a(DesktopSettings(), DesktopApp::TrayMode::On);
    QVERIFY(startApp(a));
    const qint64 first = runtimePid();
    const ServerEndpoint before = a.endpoint();
    const ApiReply made = call(a.endpoint(), "POST", QStringLiteral("api/sessions"), commandBody({QStringLiteral("/bin/sh")}));
    QCOMPARE(made.status, 201);
    const QString id = made.json().value(QStringLiteral("id")).toString();
    QTRY_COMPARE(a.model()->rowCount(), 1);
    a.attachHere(id);
    auto *w = qobject_cast<TerminalWindow *>(a.terminalWindow(id));
    QVERIFY(w);
    QTRY_VERIFY_WITH_TIMEOUT(w->isAttached(), 15000);
    // Long enough not to give up on the old host before the new one is up.
    w->setLostServerAfter(120000);

    QCOMPARE(::kill(pid_t(first), SIGKILL), 0);
    QTRY_VERIFY_WITH_TIMEOUT(!alive(first), 15000);
    QTRY_VERIFY_WITH_TIMEOUT(!a.isConnected(), 15000);
    QTRY_VERIFY_WITH_TIMEOUT(w->isReconnecting(), 15000);
    a.rebuildTrayMenu();
    QAction *again = a.trayMenu()->findChild<QAction *>(QStringLiteral("startHostAgain"));
    QVERIFY(again && again->isEnabled());
    again->trigger();
    QTRY_VERIFY_WITH_TIMEOUT(a.isConnected(), 30000);
    QVERIFY(a.endpoint().url != before.url); // another port (`--port 0`)
    QCOMPARE(w->endpoint().url, a.endpoint().url);
    QCOMPARE(w->endpoint().key, a.endpoint().key);
    // The new host's answer: no such session, or its record of the session
    // that ended with the old host (issue 24), which is as killed; or, where
    // the session outlived its host (a session keeper), the window is back
    // on it, at the new host.
    const QStringList answers{QStringLiteral("This session no longer exists."), QStringLiteral("The session was killed.")};
    QTRY_VERIFY2_WITH_TIMEOUT(w->isAttached() || answers.contains(w->bannerText()), qPrintable(w->bannerText()), 20000);
    QVERIFY(!w->isReconnecting());
    if (w->isAttached()) {
        const ApiReply s = call(a.endpoint(), "GET", QStringLiteral("api/sessions/%1").arg(id));
        QCOMPARE(s.status, 200);
        QTRY_COMPARE(call(a.endpoint(), "GET", QStringLiteral("api/sessions/%1").arg(id)).json().value(QStringLiteral("viewers")).toInt(), 1);
    }
#endif
}

void TestDesktopApp::windowsReopenAtTheNextStart()
{
#ifndef TETHER_HAVE_QTERMWIDGET
    QSKIP("this build has no terminal window (QTermWidget)");
#else
    // Terminal windows open when the desktop app goes away without a Quit
    // (here its object is destroyed, as in a crash nothing of it runs on the
    // way out) reopen at its next start, attached, each in its mode, with
    // the session's output: not one the user closed, not one whose session
    // ended meanwhile. Quit forgets them.
    QVERIFY(WindowState::path().startsWith(m_home.path()));
    auto a = std::make_unique<DesktopApp>(DesktopSettings(), DesktopApp::TrayMode::Off);
    QVERIFY(startApp(*a));
    const ServerEndpoint host = a->endpoint();
    QStringList ids;
    for (int i = 0; i < 4; ++i) {
        const ApiReply made = call(host, "POST", QStringLiteral("api/sessions"), commandBody({QStringLiteral("/bin/sh")}));
        QCOMPARE(made.status, 201);
        ids << made.json().value(QStringLiteral("id")).toString();
    }
    QTRY_COMPARE(a->model()->rowCount(), 4);
    const QString kept = ids.at(0), watched = ids.at(1), closed = ids.at(2), killed = ids.at(3);
    a->attachHere(kept);
    a->attachHere(watched, ViewerMode::Watch);
    a->attachHere(closed);
    a->attachHere(killed);
    for (const QString &id : std::as_const(ids)) {
        auto *w = qobject_cast<TerminalWindow *>(a->terminalWindow(id));
        QVERIFY(w);
        QTRY_VERIFY_WITH_TIMEOUT(w->isAttached(), 15000);
    }
    const QByteArray input = QJsonDocument(QJsonObject{{QStringLiteral("data"), QStringLiteral("echo kept-$((6*7))\n")}})
                                 .toJson(QJsonDocument::Compact);
    QCOMPARE(call(host, "POST", QStringLiteral("api/sessions/%1/input").arg(kept), input).status, 204);
    auto *keptWindow = qobject_cast<TerminalWindow *>(a->terminalWindow(kept));
    QTRY_VERIFY_WITH_TIMEOUT(keptWindow->screenText().contains(QStringLiteral("kept-42")), 15000);
    // The user closes one window: forgotten.
    a->terminalWindow(closed)->close();
    QTRY_VERIFY(!a->terminalWindow(closed));
    const QList<WindowState::Window> remembered{{kept, ViewerMode::Control}, {killed, ViewerMode::Control},
                                                {watched, ViewerMode::Watch}};
    const auto sorted = [](QList<WindowState::Window> l) {
        std::sort(l.begin(), l.end(), [](const WindowState::Window &x, const WindowState::Window &y) { return x.id < y.id; });
        return l;
    };
    QTRY_VERIFY(sorted(WindowState::load()) == sorted(remembered));
    a.reset(); // gone without a Quit: the host and its sessions go on
    QCOMPARE(sorted(WindowState::load()), sorted(remembered));
    QCOMPARE(call(host, "DELETE", QStringLiteral("api/sessions/%1").arg(killed)).status, 204);

    DesktopApp b(DesktopSettings(), DesktopApp::TrayMode::Off);
    QVERIFY(startApp(b));
    QTRY_VERIFY_WITH_TIMEOUT(b.terminalWindow(kept) && b.terminalWindow(watched), 15000);
    auto *again = qobject_cast<TerminalWindow *>(b.terminalWindow(kept));
    auto *watch = qobject_cast<TerminalWindow *>(b.terminalWindow(watched));
    QVERIFY(again && watch);
    QTRY_VERIFY_WITH_TIMEOUT(again->isAttached() && watch->isAttached(), 15000);
    QVERIFY(again->isVisible());
    QCOMPARE(again->mode(), ViewerMode::Control);
    QCOMPARE(watch->mode(), ViewerMode::Watch);
    QTRY_VERIFY_WITH_TIMEOUT(again->screenText().contains(QStringLiteral("kept-42")), 15000);
    QVERIFY(!b.terminalWindow(closed));
    QVERIFY(!b.terminalWindow(killed));
    QTRY_VERIFY(sorted(WindowState::load()) == sorted({{kept, ViewerMode::Control}, {watched, ViewerMode::Watch}}));

    // Quit: nothing to reopen.
    QSignalSpy finished(&b, &DesktopApp::finished);
    b.quitTether(false);
    QTRY_COMPARE_WITH_TIMEOUT(finished.size(), 1, 15000);
    QVERIFY(WindowState::load().isEmpty());
#endif
}

void TestDesktopApp::settingsGoToTheHost()
{
    // The host keeps its settings in a file of its own here (its
    // XDG_CONFIG_HOME differs from this process's): the dialog can only know
    // them from the host (GET /api/settings) and change them through it
    // (PATCH), and the host's keys never reach this process's file.
    const QString hostConfig = m_home.filePath(QStringLiteral("hostconfig"));
    const QString hostFile = hostConfig + QStringLiteral("/Tether/tether.conf");
    QDir().mkpath(hostConfig + QStringLiteral("/Tether"));
    {
        QSettings f(hostFile, QSettings::IniFormat);
        f.setValue(QStringLiteral("sessions/command"), QStringLiteral("/bin/sh -i"));
    }
    const QString wrapper = m_home.filePath(QStringLiteral("host-with-own-config"));
    {
        QFile w(wrapper);
        QVERIFY(w.open(QIODevice::WriteOnly));
        w.write(QStringLiteral("#!/bin/sh\nXDG_CONFIG_HOME='%1' exec '%2' \"$@\"\n")
                    .arg(hostConfig, ServerTest::tetherBinary()).toUtf8());
        QVERIFY(w.setPermissions(w.permissions() | QFile::ExeOwner));
    }
    const QString ownFile = QSettings(QStringLiteral("Tether"), QStringLiteral("tether")).fileName();
    QVERIFY(ownFile != hostFile);
    QFile::remove(ownFile);

    // The host runs with a command-line TTL (`--ttl 120`) over the saved 0.
    DesktopApp a(DesktopSettings(), DesktopApp::TrayMode::Off);
    a.setHostProgram(wrapper);
    a.setHostArguments({QStringLiteral("--port"), QStringLiteral("0"), QStringLiteral("--ttl"), QStringLiteral("120")});
    a.start();
    QTRY_VERIFY_WITH_TIMEOUT(a.isConnected(), 30000);
    const auto settings = [&a] { return call(a.endpoint(), "GET", QStringLiteral("api/settings")).json(); };
    QCOMPARE(settings().value(QStringLiteral("max_sessions")).toInt(), 256);
    QCOMPARE(settings().value(QStringLiteral("ttl")).toInt(), 120);
    QCOMPARE(settings().value(QStringLiteral("overridden")).toArray(), QJsonArray{QStringLiteral("ttl")});
    a.showSettings();
    SettingsDialog *d = nullptr;
    for (QWidget *w : QApplication::topLevelWidgets()) {
        if (auto *s = qobject_cast<SettingsDialog *>(w); s && s->isVisible())
            d = s;
    }
    QVERIFY(d);
    QTRY_VERIFY_WITH_TIMEOUT(d->hasHostSettings(), 10000);
    // The form shows the host's settings, its file's command included.
    auto *command = d->findChild<QLineEdit *>(QStringLiteral("command"));
    QVERIFY(command);
    QCOMPARE(command->text(), QStringLiteral("/bin/sh -i"));
    // It says which values this run has from the command line (the host's
    // `overridden`).
    auto *note = d->findChild<QLabel *>(QStringLiteral("overrideNote"));
    QVERIFY(note);
    QVERIFY(!note->isHidden());
    QVERIFY2(note->text().contains(QStringLiteral("close after 120 s")), qPrintable(note->text()));
    auto *max = d->findChild<QSpinBox *>(QStringLiteral("maxSessions"));
    QVERIFY(max);
    max->setValue(17);
    QCOMPARE(d->hostChanges(), (QJsonObject{{QStringLiteral("max_sessions"), 17}}));
    QSignalSpy applied(d, &SettingsDialog::hostApplied);
    QVERIFY(d->apply());
    // The host applies it at once (PATCH /api/settings), no restart; the
    // field left as it was keeps the command line's value.
    QTRY_COMPARE_WITH_TIMEOUT(applied.size(), 1, 10000);
    QCOMPARE(applied.at(0).at(1).toBool(), false);
    QCOMPARE(settings().value(QStringLiteral("max_sessions")).toInt(), 17);
    QCOMPARE(settings().value(QStringLiteral("ttl")).toInt(), 120);
    // The host saved it in its file; the desktop's file has only the
    // desktop's keys.
    QCOMPARE(QSettings(hostFile, QSettings::IniFormat).value(QStringLiteral("sessions/maxSessions")).toInt(), 17);
    QVERIFY(!QSettings(hostFile, QSettings::IniFormat).contains(QStringLiteral("sessions/ttl"))
            || QSettings(hostFile, QSettings::IniFormat).value(QStringLiteral("sessions/ttl")).toInt() == 0);
    QSettings own(ownFile, QSettings::IniFormat);
    QVERIFY2(own.childGroups().filter(QRegularExpression(QStringLiteral("^(sessions|server)$"))).isEmpty(),
             qPrintable(own.allKeys().join(QLatin1Char(' '))));
    QVERIFY(own.contains(QStringLiteral("terminal/fontSize")));
    // A second Apply with nothing changed sends nothing.
    QVERIFY(d->hostChanges().isEmpty());
    // A value the host refuses is said in the dialog, which stays open.
    QSignalSpy refused(d, &SettingsDialog::hostRefused);
    max->setMaximum(1 << 20);
    max->setValue(1 << 20);
    d->accept();
    QTRY_COMPARE_WITH_TIMEOUT(refused.size(), 1, 10000);
    QVERIFY2(refused.at(0).at(0).toString().contains(QStringLiteral("max_sessions must be an integer")),
             qPrintable(refused.at(0).at(0).toString()));
    QVERIFY(d->isVisible());
    auto *hostNote = d->findChild<QLabel *>(QStringLiteral("hostNote"));
    QVERIFY(hostNote && !hostNote->isHidden());
    QCOMPARE(settings().value(QStringLiteral("max_sessions")).toInt(), 17);
    d->close();
}

void TestDesktopApp::binarySingleInstanceHandOff()
{
    // The real binary, twice: the second launch raises the first and exits 0.
    ServerTest::ServeProcess first;
    QProcessEnvironment env = first.environment({QStringLiteral("QT_QPA_PLATFORM=offscreen")});
    env.insert(QStringLiteral("QT_LOGGING_RULES"), QStringLiteral("tether.*.debug=false"));
    first.proc.setProcessEnvironment(env);
    const QStringList args{QStringLiteral("--no-tray"), QStringLiteral("--port"), QStringLiteral("0")};
    first.proc.start(ServerTest::tetherBinary(), args);
    QVERIFY(first.proc.waitForStarted(5000));
    QVERIFY2(first.waitLine(), first.err.constData());
    const QString runtimeFile = first.runtimeFile();
    QTRY_VERIFY(QFile::exists(runtimeFile));
    const QJsonObject running = QJsonDocument::fromJson([&] {
        QFile f(runtimeFile);
        return f.open(QIODevice::ReadOnly) ? f.readAll() : QByteArray();
    }()).object();
    const qint64 host = qint64(running.value(QStringLiteral("pid")).toDouble());
    QVERIFY(alive(host));
    QVERIFY(host != first.proc.processId()); // the host is not the desktop app
    struct StopHost {
        qint64 pid;
        ~StopHost()
        {
            if (alive(pid))
                ::kill(pid_t(pid), SIGTERM);
            (void)QTest::qWaitFor([this] { return !alive(pid); }, 15000); // cleanup: the check is elsewhere
        }
    } stop{host};

    QProcess second;
    second.setProcessEnvironment(env);
    second.setProcessChannelMode(QProcess::MergedChannels);
    QSignalSpy secondDone(&second, QOverload<int, QProcess::ExitStatus>::of(&QProcess::finished));
    second.start(ServerTest::tetherBinary(), args);
    QVERIFY(secondDone.wait(10000));
    QCOMPARE(second.exitStatus(), QProcess::NormalExit);
    QCOMPARE(second.exitCode(), 0);
    const QByteArray secondOut = second.readAll();
    QVERIFY2(!secondOut.contains("Tether is serving http://127.0.0.1:"), "the second launch must not serve");
    const QString url = running.value(QStringLiteral("url")).toString();
    const QByteArray said = QStringLiteral("Tether is already running (pid %1): its Sessions window was raised; it serves %2\n")
                                .arg(first.proc.processId()).arg(url).toUtf8();
    QVERIFY2(secondOut.startsWith(said) || secondOut.contains("\n" + said), secondOut.constData());
    QCOMPARE(first.proc.state(), QProcess::Running);
    QTRY_VERIFY_WITH_TIMEOUT(first.err.contains("asked to raise"), 5000);

    // SIGTERM (logout, kill) closes the desktop app with exit code 0; the
    // host and its runtime file stay.
    first.proc.terminate();
    QVERIFY(first.waitFinished(10000));
    QCOMPARE(first.proc.exitStatus(), QProcess::NormalExit);
    QCOMPARE(first.proc.exitCode(), 0);
    QVERIFY(!QFile::exists(first.runDir + QStringLiteral("/tether-desktop.sock")));
    QVERIFY(alive(host));
    QVERIFY(QFile::exists(runtimeFile));
}

QTEST_MAIN(TestDesktopApp)
#include "tst_desktopapp.moc"
