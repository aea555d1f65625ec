// SPDX-License-Identifier: GPL-2.0-or-later
// DesktopApp: the desktop app's process as a client of the host (finding or
// starting it, its event stream, notifications, the windows, Close and
// Quit). The tray menu, a view of this state, is traymenu.* (issue 28).
#include "desktopapp.h"
#include "appicon.h"
#include "desktopnotifier.h"
#include "eventstream.h"
#include "hostlauncher.h"
#include "logging.h"
#include "runtimefile.h"
#include "sessionlistmodel.h"
#include "sessiontext.h"
#include "sessionswindow.h"
#include "settingsdialog.h"
#include "shellwords.h"
#include "terminalwindow.h"
#include "traymenu.h"

#include <QAction>
#include <QApplication>
#include <QDBusConnection>
#include <QDateTime>
#include <QDesktopServices>
#include <QFileInfo>
#include <QGuiApplication>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QMessageBox>
#include <QProcess>
#include <QPushButton>
#include <QStatusBar>
#include <QSystemTrayIcon>
#include <QTimer>
#include <QUrl>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <limits>
#include <memory>
#include <sys/types.h>

namespace Tether {

namespace {
/// How long Quit waits for the host to say it shuts down before the UI
/// leaves anyway (the host goes on with its SIGTERM regardless).
constexpr int kQuitDeadlineMs = 10000;

QString exitText(const QJsonObject &s)
{
    return SessionText::state(s);
}

QString pathOf(const QString &id)
{
    return QStringLiteral("api/sessions/") + QString::fromLatin1(QUrl::toPercentEncoding(id));
}
} // namespace

DesktopApp::DesktopApp(const DesktopSettings &settings, TrayMode trayMode, QObject *parent)
    : QObject(parent)
    , m_desktop(settings)
    , m_trayMode(trayMode)
{
    m_model = new SessionListModel(this);
    m_model->setRenamable(true);
    connect(m_model, &SessionListModel::listChanged, this, [this] {
        if (m_listPending) {
            m_listPending = false;
            qCInfo(lcUi) << "the host lists" << m_model->rowCount() << "sessions";
            reopenRememberedWindows();
        }
        m_trayMenuDirty = true;
        updateTrayToolTip();
        // A window on a session gone (killed elsewhere) was told so and
        // stays open to show the last screen; a new attach opens a fresh one.
        bool forgot = false;
        for (auto it = m_terminals.begin(); it != m_terminals.end();) {
            if (!it.value() || (m_model->rowOf(it.key()) < 0 && isConnected())) {
                it = m_terminals.erase(it);
                forgot = true;
            } else {
                ++it;
            }
        }
        if (forgot)
            rememberWindows();
    });
    connect(m_model, &SessionListModel::sessionExited, this, &DesktopApp::onSessionExited);
    connect(m_model, &SessionListModel::listChanged, this, &DesktopApp::checkExpiry);
    m_expiryTimer.setSingleShot(true);
    connect(&m_expiryTimer, &QTimer::timeout, this, &DesktopApp::checkExpiry);
    connect(m_model, &SessionListModel::renameRequested, this, &DesktopApp::renameSession);
    m_quitDeadline.setSingleShot(true);
    m_quitDeadline.setInterval(kQuitDeadlineMs);
    connect(&m_quitDeadline, &QTimer::timeout, this, [this] {
        qCWarning(lcUi) << "the host did not say it shuts down; closing the desktop app";
        Q_EMIT finished(0);
    });
}

DesktopApp::~DesktopApp()
{
    // The windows go with the app, as in a crash: they stay remembered.
    m_finishing = true;
    for (const QPointer<QWidget> &w : std::as_const(m_terminals))
        delete w.data();
    m_terminals.clear();
    delete m_settingsDialog.data();
    delete m_sessionsWindow.data();
    delete m_trayMenu;
}

void DesktopApp::start()
{
    showUi();
    launchHost();
}

void DesktopApp::launchHost()
{
    if (m_launcher)
        return;
    auto *launcher = new HostLauncher(this);
    m_launcher = launcher;
    if (!m_hostProgram.isEmpty())
        launcher->setProgram(m_hostProgram);
    launcher->setArguments(m_hostArguments);
    connect(launcher, &HostLauncher::ready, this, [this, launcher](const ServerEndpoint &endpoint, bool started) {
        launcher->deleteLater();
        if (started)
            qCInfo(lcUi) << "started the Tether host, pid" << launcher->startedPid() << "- its log:" << HostLauncher::logPath();
        else
            qCInfo(lcUi) << "connected to the running Tether host at" << endpoint.url.toString();
        if (!started && !m_hostArguments.isEmpty())
            qCWarning(lcUi).noquote() << "a Tether host was already running: the server options given ("
                                      << m_hostArguments.join(QLatin1Char(' '))
                                      << ") apply to a host this app starts, not to that one";
        connectTo(endpoint);
    });
    connect(launcher, &HostLauncher::failed, this, [this, launcher](const QString &why) {
        launcher->deleteLater();
        qCWarning(lcUi).noquote() << "no Tether host:" << why;
        Q_EMIT hostFailed(why);
        m_trayMenuDirty = true;
        updateTrayToolTip();
    });
    launcher->start();
}

void DesktopApp::startHostAgain()
{
    launchHost();
}

void DesktopApp::connectTo(const ServerEndpoint &endpoint)
{
    m_endpoint = endpoint;
    delete m_api;
    m_api = new ApiClient(endpoint, this);
    if (!m_events) {
        m_events = new EventStream(endpoint, this);
        connect(m_events, &EventStream::sessionsReceived, m_model, &SessionListModel::setSessions);
        connect(m_events, &EventStream::serverReceived, this, &DesktopApp::onServerStatus);
        connect(m_events, &EventStream::connectedChanged, this, &DesktopApp::onConnectedChanged);
        connect(m_events, &EventStream::refused, this, &DesktopApp::onRefused);
        connect(m_events, &EventStream::notifyReceived, this, &DesktopApp::onNotifyEvent);
        connect(m_events, &EventStream::shutdownReceived, this, [this](const QString &reason) {
            qCInfo(lcUi).noquote() << "the host shuts down:" << reason;
            if (m_quitDeadline.isActive()) {
                m_quitDeadline.stop();
                Q_EMIT finished(0);
            }
        });
    } else {
        m_events->setEndpoint(endpoint);
    }
#ifdef TETHER_HAVE_QTERMWIDGET
    // A host started again may listen elsewhere (`--port 0`): the open
    // windows follow it, as they follow a restart in place.
    for (const auto &t : std::as_const(m_terminals))
        if (auto *w = qobject_cast<TerminalWindow *>(t.data()))
            w->setEndpoint(endpoint);
#endif
    if (m_settingsDialog)
        m_settingsDialog->setHost(endpoint);
    if (m_sessionsWindow)
        m_sessionsWindow->setServerUrl((endpoint.publicUrl.isEmpty() ? endpoint.url : endpoint.publicUrl).toString());
    showUi();
    m_events->start();
    Q_EMIT hostReady();
}

bool DesktopApp::isConnected() const
{
    return m_events && m_events->isConnected();
}

QString DesktopApp::keyedUrl() const
{
    const QUrl base = m_endpoint.publicUrl.isEmpty() ? m_endpoint.url : m_endpoint.publicUrl;
    if (base.isEmpty())
        return QString();
    return base.toString() + QStringLiteral("?key=") + m_endpoint.key;
}

void DesktopApp::showUi()
{
    if (m_uiShown)
        return;
    m_uiShown = true;
    const bool tray = m_trayMode == TrayMode::On
        || (m_trayMode == TrayMode::Auto && QSystemTrayIcon::isSystemTrayAvailable());
    if (tray) {
        setupTray();
    } else {
        SessionsWindow *w = sessionsWindow();
        w->setMainWindowMode(true);
        showSessionsWindow();
        // Started before the panel (at login): the tray may come later.
        if (m_trayMode == TrayMode::Auto)
            watchForTray();
    }
}

void DesktopApp::onConnectedChanged(bool connected)
{
    if (m_finishing && !m_quitDeadline.isActive())
        return; // closing: the stream was stopped here
    qCInfo(lcUi) << (connected ? "connected to the Tether host" : "lost the Tether host; reconnecting");
    m_listPending = connected;
    if (connected)
        readTtls();
    m_trayMenuDirty = true;
    updateTrayToolTip();
    if (m_sessionsWindow)
        m_sessionsWindow->setConnectionNote(connected ? QString() : tr("Reconnecting to Tether…"));
    if (!connected && m_quitDeadline.isActive()) {
        // Quitting: the host ended the stream as it shut down.
        m_quitDeadline.stop();
        Q_EMIT finished(0);
        return;
    }
    Q_EMIT connectedChanged(connected);
}

void DesktopApp::onRefused(int status, const QString &error)
{
    // The key was rotated (401): the runtime file has the new one, when it
    // still names the host we were talking to.
    const QJsonObject rt = RuntimeFile::read();
    ServerEndpoint endpoint;
    QString why;
    if (status == 401 && QUrl(rt.value(QStringLiteral("url")).toString()) == m_endpoint.url
        && rt.value(QStringLiteral("key")).toString() != m_endpoint.key
        && ServerEndpoint::resolve(rt.value(QStringLiteral("url")).toString(), rt.value(QStringLiteral("key")).toString(),
                                   &endpoint, &why)) {
        qCInfo(lcUi) << "the access key changed; using the new one";
        connectTo(endpoint);
        return;
    }
    qCWarning(lcUi).noquote() << "the host refused the event stream:" << status << error;
    notify(tr("Tether"), tr("The Tether host refused this app: %1").arg(error));
}

void DesktopApp::onServerStatus(const QJsonObject &status)
{
    const qint64 pid = qint64(status.value(QStringLiteral("pid")).toDouble());
    if (pid > 0)
        m_hostPid = pid;
    // The host took its sessions over after a crash of the one before it:
    // said once per crash (this host's pid and the time of the crash), not
    // at each `server` event (every reconnection, every new keeper).
    const int recovered = status.value(QStringLiteral("recovered_after_crash")).toInt();
    const QString crashedAt = status.value(QStringLiteral("crashed_at")).toString();
    const QString crash = QString::number(pid) + QLatin1Char(' ') + crashedAt;
    if (recovered > 0 && crash != m_notifiedCrash) {
        m_notifiedCrash = crash;
        notify(tr("Tether crashed"),
               crashText(recovered, QDateTime::fromString(crashedAt, Qt::ISODate)) + QLatin1Char('\n')
                   + tr("Output from just before the crash may be missing."));
    }
    const QString v = status.value(QStringLiteral("update")).toObject().value(QStringLiteral("version")).toString();
    if (v == m_updateVersion)
        return;
    m_updateVersion = v;
    m_trayMenuDirty = true;
    // Without a tray the Sessions window is where it is seen.
    if (m_sessionsWindow)
        m_sessionsWindow->setUpdateNotice(v.isEmpty() ? QString() : updateText(v));
    if (v.isEmpty() || v == m_notifiedUpdate)
        return; // once per new version
    m_notifiedUpdate = v;
    notify(tr("Tether was updated"), updateText(v) + QLatin1Char('\n') + tr("Click to restart now."), QString(), true);
}

// --- tray ----------------------------------------------------------------------

void DesktopApp::watchForTray()
{
    // No timer: X11 announces a tray. The XEmbed tray owns the selection
    // _NET_SYSTEM_TRAY_S<screen> and says so with a MANAGER client message
    // on the root window (freedesktop System Tray Protocol); Qt's xcb plugin
    // follows that owner for QSystemTrayIcon (created by the
    // isSystemTrayAvailable() call in showUi()) and emits
    // systemTrayWindowChanged(QScreen*) from its native interface when it
    // changes (Qt >= 5.12.2 re-adds its own tray icons on it: QTBUG-61898).
    // The native interface's class (QPlatformNativeInterface) is private,
    // so the connection is made by name; it derives from QObject alone, so
    // its pointer is the QObject's. Other platforms have no such signal
    // (Wayland, offscreen): the Sessions window then stays the main window.
    auto *native = reinterpret_cast<QObject *>(QGuiApplication::platformNativeInterface());
    if (!native || native->metaObject()->indexOfSignal("systemTrayWindowChanged(QScreen*)") < 0) {
        qCInfo(lcUi) << "no system tray, and no way to hear of one appearing: the Sessions window is the main window";
        return;
    }
    m_trayWatch = connect(native, SIGNAL(systemTrayWindowChanged(QScreen*)), this, SLOT(onSystemTrayChanged()));
    qCInfo(lcUi) << "no system tray yet: the Sessions window is the main window until one appears";
}

void DesktopApp::onSystemTrayChanged()
{
    // Also sent when a tray goes away; only an available one is news here.
    if (m_tray || m_finishing || !QSystemTrayIcon::isSystemTrayAvailable())
        return;
    disconnect(m_trayWatch);
    qCInfo(lcUi) << "a system tray appeared: adding the tray icon";
    setupTray();
    // What the user sees stays: the Sessions window stays open, but from now
    // on closing it leaves Tether in the tray (no "quit or close?").
    if (m_sessionsWindow) {
        m_sessionsWindow->setMainWindowMode(false);
        if (m_sessionsWindow->isVisible())
            m_sessionsWindow->statusBar()->showMessage(
                tr("Tether is in the system tray now: closing this window keeps it running there."), 15000);
    }
}

void DesktopApp::setupTray()
{
    m_tray = new QSystemTrayIcon(appIcon(), this);
    m_trayMenu = new TrayMenu(this);
    connect(m_trayMenu, &QMenu::aboutToShow, this, [this] {
        if (m_trayMenuDirty)
            rebuildTrayMenu();
    });
    rebuildTrayMenu();
    m_tray->setContextMenu(m_trayMenu);
    connect(m_tray, &QSystemTrayIcon::activated, this, [this](QSystemTrayIcon::ActivationReason r) {
        if (r == QSystemTrayIcon::Trigger || r == QSystemTrayIcon::DoubleClick) {
            SessionsWindow *w = sessionsWindow();
            if (w->isVisible() && w->isActiveWindow())
                w->hide();
            else
                showSessionsWindow();
        }
    });
    connect(m_tray, &QSystemTrayIcon::messageClicked, this, &DesktopApp::onTrayMessageClicked);
    m_tray->setToolTip(trayToolTip());
    m_tray->show();
}

QString DesktopApp::trayToolTip() const
{
    return TrayMenu::toolTip(*this);
}

void DesktopApp::updateTrayToolTip()
{
    // Coalesced: a burst of changes costs one update, on the next pass.
    if (m_trayUpdatePending || !m_tray)
        return;
    m_trayUpdatePending = true;
    QTimer::singleShot(0, this, [this] {
        m_trayUpdatePending = false;
        if (!m_tray)
            return;
        m_tray->setToolTip(trayToolTip());
        // Also rebuilt when it opens; kept current for trays that export the
        // menu (StatusNotifierItem) and may not announce the opening.
        if (m_trayMenu && !m_trayMenu->isVisible() && m_trayMenuDirty)
            rebuildTrayMenu();
    });
}

void DesktopApp::rebuildTrayMenu()
{
    if (!m_trayMenu)
        return;
    m_trayMenuDirty = false;
    m_trayMenu->rebuild(!m_launcher.isNull());
}

void DesktopApp::onSessionExited(const QJsonObject &session)
{
    // Someone looking at it already sees the exit; tell only about detached ones.
    if (m_finishing || session.value(QStringLiteral("viewers")).toInt() > 0)
        return;
    notify(tr("Session ended"), QStringLiteral("%1 — %2").arg(SessionListModel::displayName(session), exitText(session)));
}

QString DesktopApp::updateText(const QString &version)
{
    return tr("Tether was updated — restart to use version %1 (sessions are kept)").arg(version);
}

QString DesktopApp::crashText(int recovered, const QDateTime &crashedAt, const QDateTime &now)
{
    const QString sessions = recovered == 1 ? tr("1 session") : tr("%1 sessions").arg(recovered);
    if (!crashedAt.isValid())
        return tr("Tether crashed and recovered %1").arg(sessions);
    const QDateTime at = crashedAt.toLocalTime();
    const QString time = at.toString(QStringLiteral("HH:mm"));
    if (at.date() == now.toLocalTime().date())
        return tr("Tether crashed at %1 and recovered %2").arg(time, sessions);
    return tr("Tether crashed on %1 at %2 and recovered %3").arg(at.toString(QStringLiteral("yyyy-MM-dd")), time, sessions);
}

qint64 DesktopApp::expiryWarningLeadMs(int ttlSeconds)
{
    if (ttlSeconds <= 0)
        return 0;
    return std::min<qint64>(60 * 1000, qint64(ttlSeconds) * 100);
}

void DesktopApp::readTtls()
{
    if (!m_api)
        return;
    m_api->get(QStringLiteral("api/settings"), [this](const ApiReply &reply) {
        if (reply.status != 200)
            return;
        m_ttl = reply.json().value(QStringLiteral("ttl")).toInt(-1);
        m_exitedTtl = reply.json().value(QStringLiteral("exited_ttl")).toInt(-1);
        checkExpiry();
    });
}

void DesktopApp::checkExpiry()
{
    m_expiryTimer.stop();
    if (m_finishing || m_ttl < 0 || !isConnected())
        return;
    const qint64 now = QDateTime::currentMSecsSinceEpoch();
    const qint64 age = m_model->listAgeMs();
    qint64 next = -1;
    QHash<QString, qint64> warned;
    for (int row = 0; row < m_model->rowCount(); ++row) {
        const QJsonObject s = m_model->sessionAt(row);
        const QJsonValue expires = s.value(QStringLiteral("expires_in"));
        const QString id = s.value(QStringLiteral("id")).toString();
        // Only sessions that can expire: nobody attached, a TTL.
        if (!expires.isDouble() || s.value(QStringLiteral("viewers")).toInt() > 0)
            continue;
        const qint64 left = qMax<qint64>(0, qint64(expires.toDouble() * 1000) - age); // ms
        const qint64 deadline = now + left;
        const qint64 lead = expiryWarningLeadMs(SessionListModel::isExited(s) ? m_exitedTtl : m_ttl);
        if (lead <= 0)
            continue;
        // The same deadline seen again (whole seconds, so within a second or two).
        const qint64 before = m_warnedDeadline.value(id, -1);
        if (before >= 0 && qAbs(before - deadline) < 2500) {
            warned.insert(id, before);
            continue;
        }
        if (left <= lead) {
            warned.insert(id, deadline);
            const bool attach = canAttachHere();
            notify(tr("Session about to expire"),
                   tr("%1 — expires in %2").arg(SessionListModel::displayName(s), SessionText::duration((left + 999) / 1000))
                       + QLatin1Char('\n')
                       + (attach ? tr("Click to attach and keep it.") : tr("Click to see your sessions.")),
                   attach ? id : QString());
            continue;
        }
        const qint64 in = left - lead;
        next = next < 0 ? in : qMin(next, in);
    }
    m_warnedDeadline = warned;
    if (next >= 0)
        m_expiryTimer.start(int(qMin<qint64>(next + 50, std::numeric_limits<int>::max())));
}

void DesktopApp::onTrayMessageClicked()
{
    // Trays report a click on the last message only: m_messageRestarts,
    // that it offered the restart to a new version; m_messageSessionId, the
    // session it was about.
    const bool restarts = m_messageRestarts;
    const QString id = m_messageSessionId;
    m_messageRestarts = false;
    m_messageSessionId.clear();
    actOnNotification(id, restarts);
}

void DesktopApp::actOnNotification(const QString &id, bool restarts)
{
    if (restarts) {
        if (!m_updateVersion.isEmpty())
            restartInPlace();
        return;
    }
    const QJsonObject s = id.isEmpty() ? QJsonObject() : m_model->session(id);
    // Someone attached since (a browser elsewhere): the session is safe, and
    // a late click must not take it away from them.
    const bool taken = s.value(QStringLiteral("attached")).toBool()
        && s.value(QStringLiteral("viewer_kind")).toString() != QLatin1String("local");
    if (!s.isEmpty() && !taken)
        attachHere(id);
    else
        showSessionsWindow();
}

void DesktopApp::notify(const QString &title, const QString &text, const QString &attachId, bool restarts)
{
    qCInfo(lcUi) << "notification:" << text;
    DesktopNotifier::Context context;
    context.sessionId = attachId;
    context.restarts = restarts;
    if (!notifier() || !m_notifier->show(title, text, context))
        notifyInTray(title, text, attachId, restarts);
    Q_EMIT notified(title, text);
}

void DesktopApp::notifyInTray(const QString &title, const QString &text, const QString &attachId, bool restarts)
{
    if (m_tray) {
        m_messageSessionId = attachId;
        m_messageRestarts = restarts;
        showTrayMessage(title, text, 8000);
    }
}

DesktopNotifier *DesktopApp::notifier()
{
    if (m_notifierTried)
        return m_notifier && m_notifier->available() ? m_notifier : nullptr;
    m_notifierTried = true;
    // Only a bus that is configured: libdbus would otherwise try X11
    // autolaunch (dbus-launch), starting a bus that outlives us.
    const QString runtime = qEnvironmentVariable("XDG_RUNTIME_DIR");
    if (qEnvironmentVariableIsEmpty("DBUS_SESSION_BUS_ADDRESS")
        && (runtime.isEmpty() || !QFileInfo::exists(runtime + QStringLiteral("/bus"))))
        return nullptr;
    m_notifier = new DesktopNotifier(QDBusConnection::sessionBus(), this);
    connect(m_notifier, &DesktopNotifier::failed, this,
            [this](const QString &title, const QString &text, const DesktopNotifier::Context &c) {
                notifyInTray(title, text, c.sessionId, c.restarts);
            });
    connect(m_notifier, &DesktopNotifier::actionInvoked, this,
            [this](const QString &action, const DesktopNotifier::Context &c) {
                if (action == QLatin1String("attach") && !c.sessionId.isEmpty())
                    attachHere(c.sessionId);
                else
                    actOnNotification(c.sessionId, c.restarts);
            });
    return m_notifier->available() ? m_notifier : nullptr;
}

void DesktopApp::onNotifyEvent(const QJsonObject &e)
{
    const QString kind = e.value(QStringLiteral("kind")).toString();
    const QString id = e.value(QStringLiteral("session")).toString();
    if (m_finishing || kind == QLatin1String("exit") || id.isEmpty())
        return;
    // Looking at it here: nothing to tell. Watched elsewhere (a browser):
    // only what the user asked for ("notify me when the next command ends").
    if (!m_terminals.value(id).isNull())
        return;
    if (e.value(QStringLiteral("watched")).toBool() && !e.value(QStringLiteral("requested")).toBool())
        return;
    const QJsonObject s = m_model->session(id);
    const QString name = s.isEmpty() ? e.value(QStringLiteral("name")).toString() : SessionListModel::displayName(s);
    const QString text = e.value(QStringLiteral("text")).toString();
    QString title, body;
    if (kind == QLatin1String("command")) {
        const QJsonObject c = e.value(QStringLiteral("command")).toObject();
        const QJsonValue status = c.value(QStringLiteral("exit_status"));
        title = status.isDouble() && status.toInt() != 0 ? tr("Command failed") : tr("Command finished");
        body = status.isDouble()
            ? tr("%1 — %2 — exited %3 after %4")
                  .arg(name, text)
                  .arg(status.toInt())
                  .arg(SessionText::duration(qint64(c.value(QStringLiteral("duration_ms")).toDouble()) / 1000))
            : QStringLiteral("%1 — %2").arg(name, text);
    } else if (kind == QLatin1String("bell")) {
        title = tr("Bell");
        body = name;
    } else if (kind == QLatin1String("message")) {
        title = name;
        body = text;
    } else if (kind == QLatin1String("activity")) {
        title = tr("Activity");
        body = QStringLiteral("%1 — %2").arg(name, text);
    } else if (kind == QLatin1String("silence")) {
        title = tr("Silence");
        body = QStringLiteral("%1 — %2").arg(name, text);
    } else {
        return; // a kind this version does not know
    }
    notify(title, body, canAttachHere() ? id : QString());
}

void DesktopApp::showTrayMessage(const QString &title, const QString &text, int msecs)
{
    if (m_tray && QSystemTrayIcon::supportsMessages())
        m_tray->showMessage(title, text, appIcon(), msecs);
}

void DesktopApp::showError(const QString &what, const ApiReply &reply)
{
    QMessageBox::warning(m_sessionsWindow, tr("Tether"), QStringLiteral("%1: %2").arg(what, reply.errorText()));
}

// --- windows --------------------------------------------------------------------

SessionsWindow *DesktopApp::sessionsWindow()
{
    if (!m_sessionsWindow) {
        auto *w = new SessionsWindow(m_model);
        m_sessionsWindow = w;
        if (!m_endpoint.url.isEmpty())
            w->setServerUrl((m_endpoint.publicUrl.isEmpty() ? m_endpoint.url : m_endpoint.publicUrl).toString());
        if (!isConnected())
            w->setConnectionNote(m_endpoint.url.isEmpty() ? tr("Starting Tether…") : tr("Reconnecting to Tether…"));
        w->setLocalTerminalAvailable(canAttachHere(), attachUnavailableReason());
        connect(w, &SessionsWindow::attachRequested, this, [this](const QString &id) { attachHere(id); });
        connect(w, &SessionsWindow::watchRequested, this,
                [this](const QString &id) { attachHere(id, ViewerMode::Watch); });
        connect(w, &SessionsWindow::openInBrowserRequested, this, &DesktopApp::openInBrowser);
        connect(w, &SessionsWindow::killRequested, this, &DesktopApp::killSession);
        connect(w, &SessionsWindow::newSessionRequested, this, &DesktopApp::newTerminal);
        connect(w, &SessionsWindow::dashboardRequested, this, &DesktopApp::openDashboard);
        connect(w, &SessionsWindow::settingsRequested, this, &DesktopApp::showSettings);
        connect(w, &SessionsWindow::restartRequested, this, &DesktopApp::restartInPlace);
        if (!m_updateVersion.isEmpty())
            w->setUpdateNotice(updateText(m_updateVersion));
        connect(w, &SessionsWindow::quitRequested, this, [this](bool confirmed) { quitTether(!confirmed); });
        connect(w, &SessionsWindow::closeRequested, this, &DesktopApp::closeUi);
    }
    return m_sessionsWindow;
}

void DesktopApp::showSessionsWindow()
{
    SessionsWindow *w = sessionsWindow();
    if (w->isMinimized())
        w->showNormal();
    w->show();
    w->raise();
    w->activateWindow();
}

QWidget *DesktopApp::terminalWindow(const QString &id) const
{
    return m_terminals.value(id).data();
}

bool DesktopApp::canAttachHere() const
{
    return localTerminalAvailable() || !m_desktop.terminalArgv().isEmpty();
}

QString DesktopApp::attachUnavailableReason() const
{
    if (canAttachHere())
        return QString();
    return localTerminalUnavailableReason() + QLatin1Char('\n')
        + tr("No terminal emulator to run “tether attach” in was found either: install xterm, or set "
             "desktop/terminal (e.g. “xterm -e”) in %1.").arg(QStringLiteral("~/.config/Tether/tether.conf"));
}

bool DesktopApp::attachInTerminalEmulator(const QString &id, ViewerMode mode, QString *error)
{
    const QStringList terminal = m_desktop.terminalArgv();
    if (terminal.isEmpty()) {
        if (error)
            *error = m_desktop.terminal.trimmed().isEmpty()
                ? attachUnavailableReason()
                : tr("The terminal command “%1” (setting desktop/terminal) was not found.").arg(m_desktop.terminal);
        return false;
    }
    const QString cli = m_cliProgram.isEmpty() ? QCoreApplication::applicationFilePath() : m_cliProgram;
    QStringList args = terminal.mid(1) + QStringList{cli, QStringLiteral("attach")};
    if (mode == ViewerMode::Watch)
        args << QStringLiteral("--watch");
    args << QStringLiteral("--") << id; // ids may start with '-'
    QProcess p;
    p.setProgram(terminal.first());
    p.setArguments(args);
    // Tell the client which host (environment, not argv: the key must not
    // show in ps).
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    if (!m_endpoint.url.isEmpty()) {
        env.insert(QStringLiteral("TETHER_URL"), m_endpoint.url.toString());
        env.insert(QStringLiteral("TETHER_KEY"), m_endpoint.key);
    }
    p.setProcessEnvironment(env);
    qint64 pid = 0;
    if (!p.startDetached(&pid)) {
        if (error)
            *error = tr("Could not start “%1”: %2").arg(ShellWords::quote(terminal), p.errorString());
        return false;
    }
    qCInfo(lcUi) << "attach in terminal emulator:" << terminal.first() << "pid" << pid;
    return true;
}

void DesktopApp::attachHere(const QString &id, ViewerMode mode)
{
    const QJsonObject s = m_model->session(id);
    if (s.isEmpty()) {
        QMessageBox::information(m_sessionsWindow, tr("Tether"), tr("That session no longer exists."));
        return;
    }
#ifdef TETHER_HAVE_QTERMWIDGET
    auto *w = qobject_cast<TerminalWindow *>(m_terminals.value(id).data());
    if (!w) {
        w = new TerminalWindow(m_endpoint, id, mode);
        w->setAppearance(m_desktop.terminalColorScheme, m_desktop.terminalFontFamily, m_desktop.terminalFontSize);
        // Open at the session's size (bounded by the screen).
        w->resize(w->sizeForCells(s.value(QStringLiteral("cols")).toInt(80), s.value(QStringLiteral("rows")).toInt(24)));
        w->setAttribute(Qt::WA_DeleteOnClose);
        m_terminals.insert(id, w);
        // Closed by the user: forgotten (closing the app keeps them: m_finishing).
        connect(w, &QObject::destroyed, this, [this] { rememberWindows(); });
        // Shown first: a shown window is laid out and attaches at its own
        // columns×rows (it opens at the session's, bounded by the screen).
        w->show();
        w->attachSession(mode);
        rememberWindows();
    } else if (!w->isAttached() || w->mode() != mode) {
        w->attachSession(mode);
        rememberWindows();
    }
    if (w->isMinimized())
        w->showNormal();
    w->raise();
    w->activateWindow();
#else
    // No QTermWidget (Qt 6 on Debian 12): `tether attach ID` in the
    // desktop's terminal emulator (issue 5).
    QString error;
    if (attachInTerminalEmulator(id, mode, &error))
        return;
    QMessageBox box(QMessageBox::Information, tr("No local terminal"),
                    error, QMessageBox::Cancel, m_sessionsWindow);
    QPushButton *browser = box.addButton(tr("Open in browser"), QMessageBox::AcceptRole);
    box.setDefaultButton(browser);
    box.exec();
    if (box.clickedButton() == browser)
        openInBrowser(id);
#endif
}

void DesktopApp::rememberWindows()
{
#ifdef TETHER_HAVE_QTERMWIDGET
    // Closing the app (or before the last run's windows were reopened):
    // what the file holds stays.
    if (m_finishing || (m_restoreWindows && !m_windowsRestored))
        return;
    QList<WindowState::Window> open;
    for (auto it = m_terminals.cbegin(); it != m_terminals.cend(); ++it)
        if (auto *w = qobject_cast<TerminalWindow *>(it.value().data()))
            open.append({it.key(), w->mode()});
    std::sort(open.begin(), open.end(), [](const WindowState::Window &a, const WindowState::Window &b) { return a.id < b.id; });
    if (open == m_rememberedWindows)
        return;
    QString error;
    if (!WindowState::save(open, &error))
        qCWarning(lcUi).noquote() << error;
    m_rememberedWindows = open;
#endif
}

void DesktopApp::reopenRememberedWindows()
{
    if (!m_restoreWindows || m_windowsRestored)
        return;
#ifdef TETHER_HAVE_QTERMWIDGET
    // rememberWindows() waits (m_windowsRestored) until all have reopened.
    m_rememberedWindows = WindowState::load();
    for (const WindowState::Window &w : std::as_const(m_rememberedWindows)) {
        // Only a session still running: an exited or ended one has nothing
        // to come back to.
        const QJsonObject s = m_model->session(w.id);
        if (s.isEmpty() || !SessionListModel::isRunning(s)
            || s.value(QStringLiteral("state")).toString() == QLatin1String("ended"))
            continue;
        qCInfo(lcUi).noquote() << "reopening the terminal window on session" << w.id;
        attachHere(w.id, w.mode);
    }
#endif
    m_windowsRestored = true;
    rememberWindows(); // without those that did not reopen
}

void DesktopApp::openInBrowser(const QString &id)
{
    const QString url = keyedUrl();
    if (url.isEmpty())
        return;
    const QString session = url + QStringLiteral("#/s/") + QString::fromLatin1(QUrl::toPercentEncoding(id));
    if (!QDesktopServices::openUrl(QUrl(session)))
        QMessageBox::warning(m_sessionsWindow, tr("Tether"),
                             tr("Could not start a web browser. Open this address yourself:\n%1").arg(session));
}

void DesktopApp::openDashboard()
{
    const QString url = keyedUrl();
    if (url.isEmpty())
        return;
    if (!QDesktopServices::openUrl(QUrl(url)))
        QMessageBox::warning(m_sessionsWindow, tr("Tether"),
                             tr("Could not start a web browser. Open this address yourself:\n%1").arg(url));
}

void DesktopApp::newTerminal()
{
    if (!m_api)
        return;
    // No command: the host's default (its settings, which it owns).
    m_api->post(QStringLiteral("api/sessions"), QByteArray(), [this](const ApiReply &reply) {
        if (reply.status != 201) {
            QMessageBox::warning(m_sessionsWindow, tr("New terminal"),
                                 tr("Could not start a session: %1").arg(reply.errorText()));
            return;
        }
        const QJsonObject s = reply.json();
        const QString id = s.value(QStringLiteral("id")).toString();
        // Listed now, not only at the next event: the window needs its size.
        if (m_model->rowOf(id) < 0) {
            QJsonArray list;
            for (int i = 0; i < m_model->rowCount(); ++i)
                list.append(m_model->sessionAt(i));
            list.append(s);
            m_model->setSessions(list);
        }
        if (canAttachHere())
            attachHere(id);
        else
            openInBrowser(id);
        Q_EMIT sessionCreated(id);
    });
}

void DesktopApp::killSession(const QString &id)
{
    if (!m_api)
        return;
    m_api->deleteResource(pathOf(id), [this](const ApiReply &reply) {
        if (reply.status != 204 && reply.status != 404)
            showError(tr("Could not kill the session"), reply);
    });
}

void DesktopApp::renameSession(const QString &id, const QString &name)
{
    if (!m_api)
        return;
    const QJsonObject body{{QStringLiteral("name"), name.isEmpty() ? QJsonValue() : QJsonValue(name)}};
    m_api->patch(pathOf(id), QJsonDocument(body).toJson(QJsonDocument::Compact), [this](const ApiReply &reply) {
        if (reply.status != 200 && m_sessionsWindow)
            m_sessionsWindow->showRenameRefused(reply.errorText());
    });
}

void DesktopApp::showSettings()
{
    if (!m_settingsDialog) {
        // The host's settings are the host's: the dialog reads them (GET
        // /api/settings) and sends what changed (PATCH), which the host
        // saves and applies at once. The desktop's own are saved by the
        // dialog and applied here.
        auto *d = new SettingsDialog(nullptr);
        d->setAttribute(Qt::WA_DeleteOnClose);
        m_settingsDialog = d;
        if (!m_endpoint.url.isEmpty())
            d->setHost(m_endpoint);
        connect(d, &SettingsDialog::applied, this, [this](const DesktopSettings &desktop) {
            m_desktop = desktop;
#ifdef TETHER_HAVE_QTERMWIDGET
            // Every terminal window looks the same, the open ones at once.
            for (const auto &t : std::as_const(m_terminals))
                if (auto *w = qobject_cast<TerminalWindow *>(t.data()))
                    w->setAppearance(desktop.terminalColorScheme, desktop.terminalFontFamily, desktop.terminalFontSize);
#endif
        });
        connect(d, &SettingsDialog::hostApplied, this, [this](const QJsonObject &settings, bool restart) {
            m_ttl = settings.value(QStringLiteral("ttl")).toInt(m_ttl);
            m_exitedTtl = settings.value(QStringLiteral("exited_ttl")).toInt(m_exitedTtl);
            m_warnedDeadline.clear(); // a new TTL is a new deadline
            checkExpiry();
            if (restart)
                notify(tr("Settings saved"), tr("The new address is used after Tether restarts."));
        });
        connect(d, &SettingsDialog::hostRefused, this, [this](const QString &why) {
            notify(tr("Settings not applied"), why);
        });
    }
    m_settingsDialog->show();
    m_settingsDialog->raise();
    m_settingsDialog->activateWindow();
}

void DesktopApp::restartInPlace()
{
    if (!m_api)
        return;
    m_api->post(QStringLiteral("api/restart"), QByteArray(), [this](const ApiReply &reply) {
        if (reply.status != 202)
            notify(tr("Tether cannot restart"), reply.errorText());
    });
}

void DesktopApp::quitTether(bool confirm)
{
    if (m_finishing)
        return;
    const int running = m_model->runningCount();
    if (confirm && running > 0) {
        QMessageBox box(QMessageBox::Question, tr("Quit Tether?"),
                        running == 1 ? tr("1 session is still running.")
                                     : tr("%1 sessions are still running.").arg(running), QMessageBox::Cancel,
                        m_sessionsWindow);
        box.setInformativeText(tr("Quitting ends them and every process in them. To keep them, "
                                  "close the tray or the windows instead: sessions live on in Tether's host."));
        QPushButton *quit = box.addButton(tr("Quit Tether"), QMessageBox::DestructiveRole);
        box.setDefaultButton(QMessageBox::Cancel);
        box.exec();
        if (box.clickedButton() != quit)
            return;
    }
    // The host is a local process (found by its runtime file): SIGTERM, as
    // `systemctl --user stop tether` or a logout would send it. Its pid is
    // the one it reports itself, and the runtime file must agree.
    const qint64 filePid = qint64(RuntimeFile::read().value(QStringLiteral("pid")).toDouble());
    const qint64 pid = m_hostPid > 0 ? m_hostPid : filePid;
    if (pid <= 0 || !m_endpoint.isLoopback() || (filePid > 0 && filePid != pid)) {
        notify(tr("Tether cannot quit"), tr("Its host's process is not known here (pid %1). Stop it with "
                                            "`systemctl --user stop tether` or `kill`.").arg(pid));
        return;
    }
    qCInfo(lcUi) << "quitting: asking the host (pid" << pid << ") to shut down," << running << "sessions running";
    if (::kill(pid_t(pid), SIGTERM) != 0) {
        notify(tr("Tether cannot quit"), tr("Cannot signal its host (pid %1): %2").arg(pid).arg(QString::fromLocal8Bit(strerror(errno))));
        return;
    }
    m_finishing = true;
    hideEverything();
    // Quit ends the sessions: nothing to reopen next time.
    QString error;
    if (!WindowState::save({}, &error))
        qCWarning(lcUi).noquote() << error;
    if (!isConnected()) {
        Q_EMIT finished(0);
        return;
    }
    m_quitDeadline.start(); // until the host's `shutdown` event or its stream's end
}

void DesktopApp::hideEverything()
{
    for (const QPointer<QWidget> &w : std::as_const(m_terminals)) {
        if (w)
            w->close();
    }
    if (m_sessionsWindow) {
        m_sessionsWindow->setMainWindowMode(false);
        m_sessionsWindow->hide();
    }
    if (m_settingsDialog)
        m_settingsDialog->close();
    if (m_tray)
        m_tray->hide();
}

void DesktopApp::closeUi()
{
    if (m_finishing)
        return;
    m_finishing = true;
    qCInfo(lcUi) << "closing the desktop app; the host keeps" << m_model->runningCount() << "sessions running";
    hideEverything();
    if (m_events)
        m_events->stop();
    QTimer::singleShot(0, this, [this] { Q_EMIT finished(0); });
}

} // namespace Tether
