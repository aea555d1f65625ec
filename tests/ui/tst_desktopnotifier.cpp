// SPDX-License-Identifier: GPL-2.0-or-later
// Desktop notifications over D-Bus (issue 25): DesktopNotifier against a
// real dbus-daemon of the test's own (a private session bus), where the test
// owns org.freedesktop.Notifications as a notification daemon does and
// records each Notify; then the desktop app on a real `tether serve`: a
// program's message (OSC 9) in a session nobody watches reaches that daemon,
// with an Attach action where this build can attach, and the daemon's
// action opens it.
#include "apiclient.h"
#include "desktopapp.h"
#include "desktophost.h"
#include "desktopnotifier.h"
#include "runtimefile.h"
#include "serveprocess.h"
#include "sessionlistmodel.h"
#include "sessionswindow.h"

#include <QApplication>
#include <QDBusConnection>
#include <QDBusConnectionInterface>
#include <QDBusMessage>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTest>

#include <cerrno>
#include <csignal>
#include <sys/types.h>

using namespace Tether;

/// The notification daemon's side (Desktop Notifications Specification
/// 1.2): records each Notify and answers ids from 1.
class FakeNotifications : public QObject
{
    Q_OBJECT
    Q_CLASSINFO("D-Bus Interface", "org.freedesktop.Notifications")
public:
    struct Call {
        QString app, icon, summary, body;
        QStringList actions;
        QVariantMap hints;
        int timeout = 0;
    };
    QList<Call> calls;
    uint nextId = 1;

public Q_SLOTS:
    uint Notify(const QString &app, uint replaces, const QString &icon, const QString &summary, const QString &body,
                const QStringList &actions, const QVariantMap &hints, int timeout)
    {
        Q_UNUSED(replaces)
        calls << Call{app, icon, summary, body, actions, hints, timeout};
        return nextId++;
    }
    QStringList GetCapabilities() { return {QStringLiteral("actions"), QStringLiteral("body")}; }
    void CloseNotification(uint id) { Q_UNUSED(id) }
};

/// The desktop app with its tray fallback recorded (offscreen has no tray).
class RecordingDesktopApp : public DesktopApp
{
public:
    using DesktopApp::DesktopApp;
    QList<QStringList> trayMessages;

protected:
    void showTrayMessage(const QString &title, const QString &text, int) override
    {
        trayMessages << QStringList{title, text};
    }
};

namespace {

using DesktopHost::alive;

/// The spec's signal, as the daemon sends it.
void emitSignal(QDBusConnection &bus, const QString &name, const QVariantList &args)
{
    QDBusMessage m = QDBusMessage::createSignal(QStringLiteral("/org/freedesktop/Notifications"),
                                                QStringLiteral("org.freedesktop.Notifications"), name);
    m.setArguments(args);
    QVERIFY(bus.send(m));
}

} // namespace

class TestDesktopNotifier : public QObject
{
    Q_OBJECT
private Q_SLOTS:
    void initTestCase();
    void cleanup();
    void cleanupTestCase();
    void notifiesWithAnAttachAction();
    void onlyItsOwnNotificationsAreActedOn();
    void fallsBackWhenNoDaemonAnswers();
    void programMessageReachesTheDaemon();

private:
    QTemporaryDir m_dir;
    QProcess m_bus;
    QString m_address;
    FakeNotifications m_daemon;
};

void TestDesktopNotifier::initTestCase()
{
    QVERIFY(m_dir.isValid());
    qRegisterMetaType<DesktopNotifier::Context>();
    // A session bus of our own: never the user's (whose daemon would show
    // the test's notifications).
    m_bus.setProgram(QStringLiteral("dbus-daemon"));
    m_bus.setArguments({QStringLiteral("--session"), QStringLiteral("--nofork"), QStringLiteral("--nopidfile"),
                        QStringLiteral("--print-address=1"),
                        QStringLiteral("--address=unix:path=") + m_dir.filePath(QStringLiteral("bus"))});
    m_bus.start();
    if (!m_bus.waitForStarted(5000))
        QSKIP("dbus-daemon cannot be started here (scripts/install-deps.sh installs it)");
    QTRY_VERIFY_WITH_TIMEOUT(m_bus.canReadLine(), 10000);
    m_address = QString::fromLatin1(m_bus.readLine().trimmed());
    QVERIFY(m_address.startsWith(QStringLiteral("unix:")));
    // The daemon's connection.
    QDBusConnection daemon = QDBusConnection::connectToBus(m_address, QStringLiteral("daemon"));
    QVERIFY2(daemon.isConnected(), qPrintable(daemon.lastError().message()));
    QVERIFY(daemon.registerObject(QStringLiteral("/org/freedesktop/Notifications"), &m_daemon,
                                  QDBusConnection::ExportAllSlots));
    QVERIFY(daemon.registerService(QStringLiteral("org.freedesktop.Notifications")));
    // The desktop app of the last test finds its bus where a desktop
    // session says it is.
    qputenv("DBUS_SESSION_BUS_ADDRESS", m_address.toLocal8Bit());
}

void TestDesktopNotifier::cleanup()
{
    DesktopHost::stopHost(); // a failed test leaves no host running
}

void TestDesktopNotifier::cleanupTestCase()
{
    QDBusConnection::disconnectFromBus(QStringLiteral("daemon"));
    QDBusConnection::disconnectFromBus(QStringLiteral("client"));
    QDBusConnection::disconnectFromBus(QStringLiteral("nobody"));
    if (m_bus.state() != QProcess::NotRunning) {
        m_bus.terminate();
        m_bus.waitForFinished(5000);
    }
}

void TestDesktopNotifier::notifiesWithAnAttachAction()
{
    m_daemon.calls.clear();
    DesktopNotifier n(QDBusConnection::connectToBus(m_address, QStringLiteral("client")));
    QVERIFY(n.available());
    QSignalSpy shown(&n, &DesktopNotifier::shown);
    QSignalSpy acted(&n, &DesktopNotifier::actionInvoked);
    QSignalSpy failed(&n, &DesktopNotifier::failed);
    DesktopNotifier::Context about;
    about.sessionId = QStringLiteral("abc");
    QVERIFY(n.show(QStringLiteral("Command finished"), QStringLiteral("build — make — exited 0"), about));
    QTRY_COMPARE(shown.size(), 1);
    QCOMPARE(m_daemon.calls.size(), 1);
    const FakeNotifications::Call c = m_daemon.calls.at(0);
    QCOMPARE(c.app, QStringLiteral("Tether"));
    QCOMPARE(c.summary, QStringLiteral("Command finished"));
    QCOMPARE(c.body, QStringLiteral("build — make — exited 0"));
    // The spec's actions: key, label pairs.
    QCOMPARE(c.actions, (QStringList{QStringLiteral("default"), QStringLiteral("Open"), QStringLiteral("attach"),
                                     QStringLiteral("Attach")}));
    QCOMPARE(c.hints.value(QStringLiteral("desktop-entry")).toString(), QStringLiteral("tether"));
    QCOMPARE(n.pending(), 1);

    // The user clicks Attach.
    QDBusConnection daemon(QStringLiteral("daemon"));
    emitSignal(daemon, QStringLiteral("ActionInvoked"), {shown.at(0).at(0).toUInt(), QStringLiteral("attach")});
    QTRY_COMPARE(acted.size(), 1);
    QCOMPARE(acted.at(0).at(0).toString(), QStringLiteral("attach"));
    QCOMPARE(acted.at(0).at(1).value<DesktopNotifier::Context>().sessionId, QStringLiteral("abc"));
    QCOMPARE(n.pending(), 0);

    // Not about a session: no Attach.
    QVERIFY(n.show(QStringLiteral("Tether"), QStringLiteral("text"), DesktopNotifier::Context()));
    QTRY_COMPARE(shown.size(), 2);
    QCOMPARE(m_daemon.calls.at(1).actions, (QStringList{QStringLiteral("default"), QStringLiteral("Open")}));
    // Closed by the daemon (expired, dismissed): forgotten.
    emitSignal(daemon, QStringLiteral("NotificationClosed"), {shown.at(1).at(0).toUInt(), 1u});
    QTRY_COMPARE(n.pending(), 0);
    QVERIFY(failed.isEmpty());
}

void TestDesktopNotifier::onlyItsOwnNotificationsAreActedOn()
{
    DesktopNotifier n(QDBusConnection(QStringLiteral("client")));
    QSignalSpy shown(&n, &DesktopNotifier::shown);
    QSignalSpy acted(&n, &DesktopNotifier::actionInvoked);
    DesktopNotifier::Context about;
    about.sessionId = QStringLiteral("xyz");
    QVERIFY(n.show(QStringLiteral("Bell"), QStringLiteral("xyz"), about));
    QTRY_COMPARE(shown.size(), 1);
    const uint ours = shown.at(0).at(0).toUInt();
    QDBusConnection daemon(QStringLiteral("daemon"));
    // Another application's notification, then ours twice: acted on once.
    emitSignal(daemon, QStringLiteral("ActionInvoked"), {ours + 1000, QStringLiteral("default")});
    emitSignal(daemon, QStringLiteral("ActionInvoked"), {ours, QStringLiteral("default")});
    emitSignal(daemon, QStringLiteral("ActionInvoked"), {ours, QStringLiteral("default")});
    QTRY_COMPARE(acted.size(), 1);
    // Both later signals have been delivered once a round trip through the
    // bus is answered (the bus keeps order per sender).
    QVERIFY(n.show(QStringLiteral("Bell"), QStringLiteral("again"), about));
    QTRY_COMPARE(shown.size(), 2);
    QCOMPARE(acted.size(), 1);
    QCOMPARE(acted.at(0).at(0).toString(), QStringLiteral("default"));
}

void TestDesktopNotifier::fallsBackWhenNoDaemonAnswers()
{
    QDBusConnection daemon(QStringLiteral("daemon"));
    QVERIFY(daemon.unregisterService(QStringLiteral("org.freedesktop.Notifications")));
    DesktopNotifier n(QDBusConnection::connectToBus(m_address, QStringLiteral("nobody")));
    QSignalSpy failed(&n, &DesktopNotifier::failed);
    DesktopNotifier::Context about;
    about.sessionId = QStringLiteral("s1");
    QVERIFY(n.show(QStringLiteral("Silence"), QStringLiteral("s1 — no output for 30 s"), about));
    QTRY_COMPARE(failed.size(), 1);
    QCOMPARE(failed.at(0).at(0).toString(), QStringLiteral("Silence"));
    QCOMPARE(failed.at(0).at(1).toString(), QStringLiteral("s1 — no output for 30 s"));
    QCOMPARE(failed.at(0).at(2).value<DesktopNotifier::Context>().sessionId, QStringLiteral("s1"));
    // Given up for good: no failing call per notification.
    QVERIFY(!n.available());
    QVERIFY(!n.show(QStringLiteral("Silence"), QStringLiteral("again"), about));
    QVERIFY(daemon.registerService(QStringLiteral("org.freedesktop.Notifications")));
    // And without a bus at all.
    DesktopNotifier none(QDBusConnection(QStringLiteral("no such connection")));
    QVERIFY(!none.available());
}

void TestDesktopNotifier::programMessageReachesTheDaemon()
{
    if (ServerTest::tetherBinary().isEmpty())
        QSKIP("the tether executable is not built in this tree");
    ServerTest::registerProcessTypes();
    // The host this app starts stays in the test's directory.
    DesktopHost::isolateUser(m_dir);

    m_daemon.calls.clear();
    qint64 host = 0;
    {
        RecordingDesktopApp a(DesktopSettings(), DesktopApp::TrayMode::Off);
        a.setHostProgram(ServerTest::tetherBinary());
        a.setHostArguments({QStringLiteral("--port"), QStringLiteral("0")});
        a.start();
        QTRY_VERIFY_WITH_TIMEOUT(a.isConnected(), 30000);
        host = qint64(RuntimeFile::read().value(QStringLiteral("pid")).toDouble());
        QVERIFY(alive(host));

        // A program's message (OSC 9) in a session nobody watches.
        ApiClient api(a.endpoint());
        QString id;
        const QJsonObject body{{QStringLiteral("name"), QStringLiteral("build")},
                               {QStringLiteral("command"),
                                QJsonArray{QStringLiteral("/bin/sh"), QStringLiteral("-c"),
                                           QStringLiteral("printf '\\033]9;tests passed\\007'; exec sleep 100")}}};
        api.post(QStringLiteral("api/sessions"), QJsonDocument(body).toJson(QJsonDocument::Compact),
                 [&](const ApiReply &r) { id = r.json().value(QStringLiteral("id")).toString(); });
        QTRY_VERIFY_WITH_TIMEOUT(!id.isEmpty(), 10000);
        QTRY_COMPARE_WITH_TIMEOUT(m_daemon.calls.size(), 1, 15000);
        const FakeNotifications::Call c = m_daemon.calls.at(0);
        QCOMPARE(c.summary, QStringLiteral("build"));
        QCOMPARE(c.body, QStringLiteral("tests passed"));
        QCOMPARE(c.actions.contains(QStringLiteral("attach")), a.canAttachHere());
        QVERIFY(a.trayMessages.isEmpty()); // not the tray as well

        // The daemon's default action (a click on it): the session opened
        // here, or the Sessions window in a build that cannot attach here.
        // (A person clicks once the list has the session: the `sessions`
        // event is coalesced, the `notify` event is not.)
        QTRY_VERIFY_WITH_TIMEOUT(!a.model()->session(id).isEmpty(), 10000);
        QDBusConnection daemon(QStringLiteral("daemon"));
        emitSignal(daemon, QStringLiteral("ActionInvoked"), {m_daemon.nextId - 1, QStringLiteral("default")});
        if (a.canAttachHere()) {
#ifdef TETHER_HAVE_QTERMWIDGET
            QTRY_VERIFY_WITH_TIMEOUT(a.terminalWindow(id), 10000);
#endif
        } else {
            QTRY_VERIFY_WITH_TIMEOUT(a.sessionsWindow()->isVisible(), 10000);
        }
        QCOMPARE(m_daemon.calls.size(), 1);
    }
    // cleanup() ends the host, passed or failed.
}

QTEST_MAIN(TestDesktopNotifier)
#include "tst_desktopnotifier.moc"
