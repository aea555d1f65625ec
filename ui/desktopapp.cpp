// SPDX-License-Identifier: GPL-2.0-or-later
#include "desktopapp.h"
#include "commandline.h"
#include "fdlimit.h"
#include "hostlock.h"

#include "appicon.h"

#include "logging.h"
#include "procinfo.h"
#include "registry.h"
#include "restartinplace.h"
#include "runtimefile.h"
#include "server.h"
#include "serveoptions.h"
#include "session.h"
#include "sessionmodel.h"
#include "sessionswindow.h"
#include "shellwords.h"
#include "settingsdialog.h"
#include "signalpipe.h"
#include "singleinstance.h"
#include "systemdnotify.h"
#include "terminalwindow.h"
#include "upgradewatch.h"

#include <QAction>
#include <QApplication>
#include <QCommandLineParser>
#include <QDesktopServices>
#include <QGuiApplication>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QMenu>
#include <QMessageBox>
#include <QProcess>
#include <QPushButton>
#include <QSettings>
#include <QStatusBar>
#include <QSystemTrayIcon>
#include <QTextStream>
#include <QTimer>
#include <QUrl>

#include <csignal>

namespace Tether {

namespace {
constexpr int kMaxTrayMenuSessions = 20;
/// The local terminal windows open when Tether restarted in place, for the
/// next process image: "ID" or "ID:watch", separated by spaces. Set just
/// before the exec, read and removed by the next image's start().
const char kWindowsEnv[] = "TETHER_HANDOVER_WINDOWS";
/// The rest of the desktop as it was, for the next process image: compact
/// JSON {"sessions": [X,Y,W,H] (the Sessions window was open; its
/// geometry), "settings": true (the Settings dialog was open), "windows":
/// {"ID": [X,Y,W,H]} (geometry of the terminal windows kWindowsEnv lists)}.
/// Set just before the exec, read and removed by the next image's start().
const char kDesktopEnv[] = "TETHER_HANDOVER_DESKTOP";

QJsonArray rectJson(const QRect &r)
{
    return QJsonArray{r.x(), r.y(), r.width(), r.height()};
}

/// A geometry from rectJson(); null when malformed or empty.
QRect rectFromJson(const QJsonValue &v)
{
    const QJsonArray a = v.toArray();
    if (a.size() != 4)
        return QRect();
    const QRect r(a.at(0).toInt(), a.at(1).toInt(), a.at(2).toInt(), a.at(3).toInt());
    return r.width() > 0 && r.height() > 0 ? r : QRect();
}

/// Puts `w` where it was: the size always, the position only when it is on
/// a screen now (the screens may have changed; a window placed off every
/// screen could not be found).
void restoreGeometry(QWidget *w, const QRect &r)
{
    if (!w || r.isNull())
        return;
    if (QGuiApplication::screenAt(r.center()))
        w->setGeometry(r);
    else
        w->resize(r.size());
}

QString exitText(const ExitStatus &st)
{
    return st.signaled ? DesktopApp::tr("killed by signal %1").arg(st.signal)
                       : DesktopApp::tr("exited %1").arg(st.code);
}
} // namespace

DesktopApp::DesktopApp(const Config &config, TrayMode trayMode, QObject *parent)
    : QObject(parent)
    , m_config(config)
    , m_trayMode(trayMode)
    , m_registry(std::make_unique<SessionRegistry>(config.limits))
{
    m_model = new SessionModel(m_registry.get(), this);
    connect(m_registry.get(), &SessionRegistry::sessionAdded, this, [this](Session *s) {
        watchSession(s);
        m_trayMenuDirty = true;
        updateTrayToolTip();
    });
    connect(m_registry.get(), &SessionRegistry::sessionRemoved, this, [this](Session *s) {
        m_trayMenuDirty = true;
        updateTrayToolTip();
        // A window on a removed session was told Killed; it stays open to show
        // the last screen. Forget it so a new attach opens a fresh window.
        m_terminals.remove(s->id());
    });
    connect(m_registry.get(), &SessionRegistry::sessionChanged, this, [this](Session *) {
        m_trayMenuDirty = true;
        updateTrayToolTip();
    });
    connect(m_registry.get(), &SessionRegistry::expiringSoon, this, &DesktopApp::onSessionExpiringSoon);
    // The model notices background jobs ending (a state change no registry
    // signal carries); the menu shows that count too.
    connect(m_model, &QAbstractItemModel::dataChanged, this,
            [this](const QModelIndex &topLeft, const QModelIndex &bottomRight) {
                if (topLeft.column() <= SessionModel::StateColumn && bottomRight.column() >= SessionModel::StateColumn)
                    m_trayMenuDirty = true;
            });
}

DesktopApp::~DesktopApp()
{
    // Windows are viewers: they must detach before the sessions go away.
    for (const QPointer<QWidget> &w : std::as_const(m_terminals))
        delete w.data();
    m_terminals.clear();
    delete m_settingsDialog.data();
    delete m_sessionsWindow.data();
    delete m_trayMenu;
    m_server.reset();  // its viewers detach from the sessions
    m_registry.reset();
}

bool DesktopApp::start(QString *error, bool *badValue)
{
    m_server = std::make_unique<Server>(m_registry.get(), m_config);
    m_server->setSettingsFile(QSettings(QStringLiteral("Tether"), QStringLiteral("tether")).fileName());
    m_server->setKeepalive(m_config.pingIntervalSec * 1000, m_config.pingTimeoutSec * 1000);
    m_restart = new RestartInPlace(m_registry.get(), m_server.get(), this);
    connect(m_restart, &RestartInPlace::aboutToExec, this, &DesktopApp::prepareExec);
    connect(m_restart, &RestartInPlace::failed, this, [this](const QString &why) {
        reopenWindows(false); // closed for the exec that did not happen
        notify(tr("Tether could not restart"), tr("It carries on as it was: %1").arg(why));
    });
    // A newer Tether installed: say so, and offer the restart that uses it.
    connect(m_restart->upgradeWatch(), &UpgradeWatch::updateChanged, this, &DesktopApp::onUpdateChanged);
    // Exec'd by a restart in place: the socket and the sessions are ours.
    QString report;
    const RestartInPlace::Adoption adoption = m_restart->adoptHandover(&report);
    if (adoption != RestartInPlace::Adoption::None)
        qCInfo(lcUi).noquote() << report;
    m_restartedInPlace = adoption == RestartInPlace::Adoption::Adopted;
    // The address saved in the settings now, which the command line may
    // override for this run (`--port 0`): the Settings dialog opens with it,
    // and must not take it for an edit that needs a restart.
    const Config saved = Config::load();
    m_savedBind = saved.bind;
    m_savedPort = saved.port;
    QString err;
    if (!m_restartedInPlace && !m_server->listen(&err, badValue)) {
        if (error)
            *error = err;
        return false;
    }
    QJsonObject otherServer;
    if (!m_server->writeRuntimeFile(&err, &otherServer))
        qCWarning(lcUi) << "cannot write the runtime file:" << err;
    else if (!otherServer.isEmpty())
        qCWarning(lcUi) << "another tether server is running (pid"
                        << qint64(otherServer.value(QStringLiteral("pid")).toDouble()) << otherServer.value(QStringLiteral("url")).toString()
                        << "): its runtime file is kept, so tether attach/list talk to that one";
    qCInfo(lcUi) << "serving on" << m_server->url();
    SystemdNotify::notify("READY=1\nSTATUS=Serving " + m_server->url().toUtf8()); // under a Type=notify unit
    if (!m_server->startWarning().isEmpty()) // at every start, as `tether serve`
        qCWarning(lcUi).noquote() << m_server->startWarning();

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
    // Exec'd by a restart in place: the windows open before it, as they were.
    reopenWindows(true);
    return true;
}

// --- tray ----------------------------------------------------------------------

void DesktopApp::watchForTray()
{
    // No timer: X11 announces a tray. The XEmbed tray owns the selection
    // _NET_SYSTEM_TRAY_S<screen> and says so with a MANAGER client message
    // on the root window (freedesktop System Tray Protocol); Qt's xcb plugin
    // follows that owner for QSystemTrayIcon (created by the
    // isSystemTrayAvailable() call in start()) and emits
    // systemTrayWindowChanged(QScreen*) from its native interface when it
    // changes (Qt >= 5.12.2 re-adds its own tray icons on it: QTBUG-61898).
    // The native interface's class (QPlatformNativeInterface) is private,
    // so the connection is made by name; it derives from QObject alone, so
    // its pointer is the QObject's. Other platforms have no such signal
    // (Wayland, offscreen): the Sessions window then stays the main window,
    // as before.
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
    if (m_tray || m_quitting || !QSystemTrayIcon::isSystemTrayAvailable())
        return;
    disconnect(m_trayWatch);
    qCInfo(lcUi) << "a system tray appeared: adding the tray icon";
    setupTray();
    // What the user sees stays: the Sessions window stays open, but from now
    // on closing it leaves Tether in the tray (no "quit or keep serving?").
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
    m_trayMenu = new QMenu();
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
    int total = 0, attached = 0;
    const auto sessions = m_registry->sessions();
    for (const Session *s : sessions) {
        ++total;
        if (s->viewerCount() > 0)
            ++attached;
    }
    // Explicit plurals: without a translator loaded, %n would print "session(s)".
    if (total == 1)
        return tr("Tether — 1 session, %1 attached").arg(attached);
    return tr("Tether — %1 sessions, %2 attached").arg(total).arg(attached);
}

void DesktopApp::updateTrayToolTip()
{
    // Coalesced: a burst of changes (titles set per prompt, many sessions
    // ending at once) costs one update, on the next event loop pass.
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
    m_trayMenu->clear();
    const QString update = updateVersion();
    if (!update.isEmpty()) {
        connect(m_trayMenu->addAction(QIcon::fromTheme(QStringLiteral("system-software-update")),
                                      tr("Restart to use version %1").arg(update)),
                &QAction::triggered, this, &DesktopApp::restartInPlace);
        m_trayMenu->addSeparator();
    }
    const bool local = canAttachHere();
    const auto sessions = m_registry->sessions();
    if (sessions.isEmpty()) {
        m_trayMenu->addAction(tr("No sessions"))->setEnabled(false);
    } else {
        QAction *header = m_trayMenu->addAction(local ? tr("Attach here:") : tr("Open in browser:"));
        header->setEnabled(false);
        int shown = 0;
        for (Session *s : sessions) {
            if (++shown > kMaxTrayMenuSessions) {
                QAction *more = m_trayMenu->addAction(tr("%1 more…").arg(sessions.size() - kMaxTrayMenuSessions));
                connect(more, &QAction::triggered, this, &DesktopApp::showSessionsWindow);
                break;
            }
            QString name = SessionModel::displayName(s);
            if (name.size() > 48)
                name = name.left(47) + QChar(0x2026);
            QString state = s->state() == Session::State::Exited ? SessionModel::stateText(s)
                                                                 : SessionModel::attachedText(s);
            // "exited 0 · 1 background process": why an exited session stays.
            if (const int n = m_model->backgroundProcesses(s))
                state += QStringLiteral(" · ") + SessionModel::backgroundText(n);
            if (s->state() != Session::State::Exited && !s->controlViewer())
                state = tr("detached");
            // '&' would become a mnemonic.
            name.replace(QLatin1Char('&'), QStringLiteral("&&"));
            QAction *a = m_trayMenu->addAction(QStringLiteral("%1 — %2").arg(name, state));
            const QString id = s->id();
            a->setToolTip(ShellWords::quote(s->command()));
            connect(a, &QAction::triggered, this, [this, id, local] {
                if (local)
                    attachHere(id);
                else
                    openInBrowser(id);
            });
        }
        if (!local) {
            QAction *why = m_trayMenu->addAction(tr("(No local terminal: QTermWidget for Qt %1 is not installed, "
                                                    "and no terminal emulator was found)")
                                                     .arg(QT_VERSION_MAJOR));
            why->setEnabled(false);
        }
    }
    m_trayMenu->addSeparator();
    connect(m_trayMenu->addAction(QIcon::fromTheme(QStringLiteral("utilities-terminal")), tr("New terminal")),
            &QAction::triggered, this, [this] { newTerminal(); });
    connect(m_trayMenu->addAction(tr("Sessions…")), &QAction::triggered, this,
            &DesktopApp::showSessionsWindow);
    connect(m_trayMenu->addAction(QIcon::fromTheme(QStringLiteral("internet-web-browser")), tr("Open dashboard")),
            &QAction::triggered, this, &DesktopApp::openDashboard);
    connect(m_trayMenu->addAction(tr("Settings…")), &QAction::triggered, this, &DesktopApp::showSettings);
    m_trayMenu->addSeparator();
    connect(m_trayMenu->addAction(QIcon::fromTheme(QStringLiteral("view-refresh")), tr("Restart Tether")),
            &QAction::triggered, this, &DesktopApp::restartInPlace);
    connect(m_trayMenu->addAction(QIcon::fromTheme(QStringLiteral("application-exit")), tr("Quit")),
            &QAction::triggered, this, [this] { requestQuit(true); });
}

void DesktopApp::watchSession(Session *session)
{
    connect(session, &Session::exited, this, [this, session](const ExitStatus &st) {
        onSessionExited(session, st);
    });
}

void DesktopApp::onSessionExited(Session *session, const ExitStatus &status)
{
    // Someone looking at it already sees the exit; tell only about detached ones.
    if (m_quitting || session->viewerCount() > 0)
        return;
    QString text = QStringLiteral("%1 — %2").arg(SessionModel::displayName(session), exitText(status));
    // By design a session whose shell left jobs running stays until its TTL
    // or a kill; say so, or the user wonders why it is still listed. One
    // /proc scan, once per exit.
    if (!session->isTornDown()) {
        if (const int n = int(processesInSession(session->pid()).size()))
            text += QStringLiteral(" · ") + SessionModel::backgroundText(n);
    }
    notify(tr("Session ended"), text);
}

void DesktopApp::onSessionExpiringSoon(Session *session, int secondsLeft)
{
    // The registry announces only sessions that can expire (nobody attached,
    // TTL > 0), once per detach period.
    if (m_quitting || session->viewerCount() > 0)
        return;
    const bool attach = canAttachHere();
    notify(tr("Session about to expire"),
           tr("%1 — expires in %2").arg(SessionModel::displayName(session),
                                        SessionModel::formatDuration(secondsLeft))
               + QLatin1Char('\n')
               + (attach ? tr("Click to attach and keep it.") : tr("Click to see your sessions.")),
           attach ? session->id() : QString());
}

QString DesktopApp::updateVersion() const
{
    return m_restart ? m_restart->upgradeWatch()->update().version : QString();
}

QString DesktopApp::updateText(const QString &version)
{
    return tr("Tether was updated — restart to use version %1 (sessions are kept)").arg(version);
}

void DesktopApp::onUpdateChanged()
{
    m_trayMenuDirty = true;
    const QString v = updateVersion();
    // Without a tray the Sessions window is where it is seen.
    if (m_sessionsWindow)
        m_sessionsWindow->setUpdateNotice(v.isEmpty() ? QString() : updateText(v));
    if (v.isEmpty() || v == m_notifiedUpdate)
        return; // once per new version, not again for each look at the file
    m_notifiedUpdate = v;
    notify(tr("Tether was updated"), updateText(v) + QLatin1Char('\n') + tr("Click to restart now."));
    m_messageRestarts = true;
}

void DesktopApp::onTrayMessageClicked()
{
    // Trays report a click on the last message only: m_messageSessionId is
    // the session that message was about; m_messageRestarts, that it offered
    // the restart to a new version.
    if (m_messageRestarts) {
        m_messageRestarts = false;
        if (!updateVersion().isEmpty())
            restartInPlace();
        return;
    }
    const QString id = m_messageSessionId;
    m_messageSessionId.clear();
    const Session *s = id.isEmpty() ? nullptr : m_registry->find(id);
    // Someone attached since (a browser elsewhere): the session is safe, and
    // a late click must not take it away from them.
    const Viewer *v = s ? s->controlViewer() : nullptr;
    if (s && (!v || v->kind() == ViewerKind::LocalWindow))
        attachHere(id);
    else
        showSessionsWindow();
}

void DesktopApp::notify(const QString &title, const QString &text, const QString &attachId)
{
    qCInfo(lcUi) << "notification:" << text;
    if (m_tray) {
        m_messageSessionId = attachId;
        m_messageRestarts = false;
        showTrayMessage(title, text, 8000);
    }
    Q_EMIT notified(title, text);
}

void DesktopApp::showTrayMessage(const QString &title, const QString &text, int msecs)
{
    if (m_tray && QSystemTrayIcon::supportsMessages())
        m_tray->showMessage(title, text, appIcon(), msecs);
}

// --- windows --------------------------------------------------------------------

SessionsWindow *DesktopApp::sessionsWindow()
{
    if (!m_sessionsWindow) {
        auto *w = new SessionsWindow(m_model);
        m_sessionsWindow = w;
        if (m_server)
            w->setServerUrl(m_server->url());
        w->setLocalTerminalAvailable(canAttachHere(), attachUnavailableReason());
        connect(w, &SessionsWindow::attachRequested, this, [this](const QString &id) { attachHere(id); });
        connect(w, &SessionsWindow::watchRequested, this,
                [this](const QString &id) { attachHere(id, ViewerMode::Watch); });
        connect(w, &SessionsWindow::openInBrowserRequested, this, &DesktopApp::openInBrowser);
        connect(w, &SessionsWindow::killRequested, this, &DesktopApp::killSession);
        connect(w, &SessionsWindow::newSessionRequested, this, [this] { newTerminal(); });
        connect(w, &SessionsWindow::dashboardRequested, this, &DesktopApp::openDashboard);
        connect(w, &SessionsWindow::settingsRequested, this, &DesktopApp::showSettings);
        connect(w, &SessionsWindow::restartRequested, this, &DesktopApp::restartInPlace);
        if (!updateVersion().isEmpty())
            w->setUpdateNotice(updateText(updateVersion()));
        connect(w, &SessionsWindow::quitRequested, this, [this](bool confirmed) { requestQuit(!confirmed); });
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
    return localTerminalAvailable() || !m_config.terminalArgv().isEmpty();
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
    const QStringList terminal = m_config.terminalArgv();
    if (terminal.isEmpty()) {
        if (error)
            *error = m_config.terminal.trimmed().isEmpty()
                ? attachUnavailableReason()
                : tr("The terminal command “%1” (setting desktop/terminal) was not found.").arg(m_config.terminal);
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
    // The runtime file names this server too, but another one started later
    // may have replaced it: tell the client which server (environment, not
    // argv: the key must not show in ps).
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    if (m_server) {
        env.insert(QStringLiteral("TETHER_URL"), m_server->url());
        env.insert(QStringLiteral("TETHER_KEY"), m_server->accessKey());
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
    Session *s = m_registry->find(id);
    if (!s) {
        QMessageBox::information(m_sessionsWindow, tr("Tether"), tr("That session no longer exists."));
        return;
    }
#ifdef TETHER_HAVE_QTERMWIDGET
    auto *w = qobject_cast<TerminalWindow *>(m_terminals.value(id).data());
    if (!w) {
        // The window is a client of this process's server, over its URL and key.
        ServerEndpoint endpoint;
        QString error;
        if (!m_server || !ServerEndpoint::resolve(m_server->url(), m_server->accessKey(), &endpoint, &error)) {
            QMessageBox::warning(m_sessionsWindow, tr("Tether"), tr("Cannot open a terminal window: %1").arg(error));
            return;
        }
        w = new TerminalWindow(endpoint, id, mode);
        w->setAppearance(m_config.terminalColorScheme, m_config.terminalFontFamily, m_config.terminalFontSize);
        // Open at the session's size (bounded by the screen).
        w->resize(w->sizeForCells(s->cols(), s->rows()));
        w->setAttribute(Qt::WA_DeleteOnClose);
        m_terminals.insert(id, w);
        // Shown first: a shown window is laid out and attaches at its own
        // columns×rows (it opens at the session's, bounded by the screen).
        w->show();
        w->attachSession(mode);
    } else if (!w->isAttached() || w->mode() != mode) {
        w->attachSession(mode);
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

void DesktopApp::openInBrowser(const QString &id)
{
    if (!m_server)
        return;
    if (!QDesktopServices::openUrl(QUrl(m_server->sessionUrl(id))))
        QMessageBox::warning(m_sessionsWindow, tr("Tether"),
                             tr("Could not start a web browser. Open this address yourself:\n%1")
                                 .arg(m_server->sessionUrl(id)));
}

void DesktopApp::openDashboard()
{
    if (!m_server)
        return;
    if (!QDesktopServices::openUrl(QUrl(m_server->keyedUrl())))
        QMessageBox::warning(m_sessionsWindow, tr("Tether"),
                             tr("Could not start a web browser. Open this address yourself:\n%1")
                                 .arg(m_server->keyedUrl()));
}

QString DesktopApp::newTerminal()
{
    SpawnOptions options;
    options.argv = m_config.commandArgv();
    SessionRegistry::CreateError err = SessionRegistry::CreateError::None;
    QString text;
    Session *s = m_registry->create(options, &err, &text);
    if (!s) {
        QString msg;
        if (err == SessionRegistry::CreateError::TooManySessions)
            msg = tr("%1 sessions are running, the limit. A running session is never ended to make "
                     "room: kill one, or raise the limit in Settings.").arg(m_registry->limits().maxSessions);
        else
            msg = tr("Could not start “%1”: %2")
                      .arg(options.argv.isEmpty() ? tr("login shell") : ShellWords::quote(options.argv), text);
        QMessageBox::warning(m_sessionsWindow, tr("New terminal"), msg);
        return QString();
    }
    if (canAttachHere())
        attachHere(s->id());
    else
        openInBrowser(s->id());
    return s->id();
}

void DesktopApp::killSession(const QString &id)
{
    m_registry->kill(id);
}

void DesktopApp::showSettings()
{
    if (!m_settingsDialog) {
        auto *d = new SettingsDialog(m_registry.get());
        d->setAttribute(Qt::WA_DeleteOnClose);
        if (m_server)
            d->setRunningAddress(m_config.bind, m_server->port(), m_savedBind, m_savedPort);
        connect(d, &SettingsDialog::applied, this, [this](const Config &c, bool restart) {
            // Limits are already applied to the registry; the address is not
            // (it needs a restart), so keep the running one in m_config.
            // (The registry keeps command-line limits for fields left as saved.)
            m_config.limits = m_registry->limits();
            m_config.command = c.command;
            m_config.terminalColorScheme = c.terminalColorScheme;
            m_config.terminalFontFamily = c.terminalFontFamily;
            m_config.terminalFontSize = c.terminalFontSize;
#ifdef TETHER_HAVE_QTERMWIDGET
            // Every terminal window looks the same, the open ones at once.
            for (const auto &t : std::as_const(m_terminals))
                if (auto *w = qobject_cast<TerminalWindow *>(t.data()))
                    w->setAppearance(c.terminalColorScheme, c.terminalFontFamily, c.terminalFontSize);
#endif
            if (restart)
                notify(tr("Settings saved"), tr("The new address is used after Tether restarts."));
        });
        m_settingsDialog = d;
    }
    m_settingsDialog->show();
    m_settingsDialog->raise();
    m_settingsDialog->activateWindow();
}

void DesktopApp::restartInPlace()
{
    QString why;
    if (m_restart && !m_restart->request(&why))
        notify(tr("Tether cannot restart"), why);
}

void DesktopApp::prepareExec()
{
    // The windows go with this process image; the next one opens them again.
    // Closed here, not left to the exec: a viewer detaches, and the widget's
    // own PTY is closed rather than carried over.
    QStringList windows;
    QJsonObject geometries;
    for (auto it = m_terminals.cbegin(); it != m_terminals.cend(); ++it) {
#ifdef TETHER_HAVE_QTERMWIDGET
        auto *w = qobject_cast<TerminalWindow *>(it.value().data());
        if (w && w->isVisible() && w->isAttached()) {
            windows.append(it.key() + (w->mode() == ViewerMode::Watch ? QStringLiteral(":watch") : QString()));
            geometries.insert(it.key(), rectJson(w->geometry()));
        }
#endif
        delete it.value().data();
    }
    m_terminals.clear();
    qputenv(kWindowsEnv, windows.join(QLatin1Char(' ')).toUtf8());
    // The Sessions window and the Settings dialog stay open until the exec
    // (nothing of theirs must outlive the image); the next one reopens them.
    QJsonObject desktop;
    if (m_sessionsWindow && m_sessionsWindow->isVisible())
        desktop.insert(QStringLiteral("sessions"), rectJson(m_sessionsWindow->geometry()));
    if (m_settingsDialog && m_settingsDialog->isVisible())
        desktop.insert(QStringLiteral("settings"), true);
    desktop.insert(QStringLiteral("windows"), geometries);
    qputenv(kDesktopEnv, QJsonDocument(desktop).toJson(QJsonDocument::Compact));
}

void DesktopApp::reopenWindows(bool atStart)
{
    const QStringList windows = QString::fromUtf8(qgetenv(kWindowsEnv)).split(QLatin1Char(' '), Qt::SkipEmptyParts);
    const QJsonObject desktop = QJsonDocument::fromJson(qgetenv(kDesktopEnv)).object();
    // Read once: the shells this image starts must not inherit them.
    qunsetenv(kWindowsEnv);
    qunsetenv(kDesktopEnv);
    const QJsonObject geometries = desktop.value(QStringLiteral("windows")).toObject();
    for (const QString &w : windows) {
        const QString id = w.section(QLatin1Char(':'), 0, 0);
        const bool watch = w.endsWith(QLatin1String(":watch"));
        const QRect geometry = rectFromJson(geometries.value(id));
        if (m_registry->find(id))
            QTimer::singleShot(0, this, [this, id, watch, geometry] {
                attachHere(id, watch ? ViewerMode::Watch : ViewerMode::Control);
                restoreGeometry(terminalWindow(id), geometry);
            });
    }
    // After a failed exec the Sessions window and the Settings dialog are
    // still open as they were (prepareExec leaves them): nothing to do.
    if (!atStart)
        return;
    if (desktop.contains(QStringLiteral("sessions"))) {
        restoreGeometry(sessionsWindow(), rectFromJson(desktop.value(QStringLiteral("sessions"))));
        showSessionsWindow();
    }
    if (desktop.value(QStringLiteral("settings")).toBool())
        showSettings();
}

void DesktopApp::requestQuit(bool confirm)
{
    if (m_quitting)
        return;
    int running = 0;
    const auto sessions = m_registry->sessions();
    for (const Session *s : sessions) {
        if (s->state() != Session::State::Exited)
            ++running;
    }
    if (confirm && running > 0) {
        QMessageBox box(QMessageBox::Question, tr("Quit Tether?"),
                        running == 1 ? tr("1 session is still running.")
                                     : tr("%1 sessions are still running.").arg(running), QMessageBox::Cancel,
                        m_sessionsWindow);
        box.setInformativeText(tr("Quitting ends them and every process in them. To keep them, "
                                  "close the windows instead: sessions live on in the tray."));
        QPushButton *quit = box.addButton(tr("Quit"), QMessageBox::DestructiveRole);
        box.setDefaultButton(QMessageBox::Cancel);
        box.exec();
        if (box.clickedButton() != quit)
            return;
    }
    m_quitting = true;
    qCInfo(lcUi) << "quitting: shutting down" << sessions.size() << "sessions";
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
    // Like `tether serve`: stop accepting connections (browsers get 1001),
    // then tear every session down; the runtime file goes last.
    if (m_server)
        m_server->close();
    connect(m_registry.get(), &SessionRegistry::shutdownComplete, this, [this] {
        if (m_server)
            m_server->removeRuntimeFile();
        Q_EMIT finished();
    }, Qt::QueuedConnection);
    m_registry->shutdown();
}

// --- main -------------------------------------------------------------------------

namespace {

const QString kProgram = QStringLiteral("tether");

/// The parser of `tether`: the server's options (ServeOptions, as `tether
/// serve`), help, version and --no-tray, which it returns.
QCommandLineOption addDesktopOptions(QCommandLineParser &parser, const Config &defaults)
{
    parser.setApplicationDescription(
        DesktopApp::tr("Tether keeps terminal sessions alive. Without a command it runs the desktop "
                       "application (tray icon, local terminal windows) and the web dashboard "
                       "server.\n\nCommands (each has --help):\n"
                       "  serve    the server alone, headless\n"
                       "  attach   attach this terminal to a session (like tmux attach); also: a, at\n"
                       "  list     list sessions; also: ls\n"
                       "  new      start a session\n"
                       "  kill     end a session\n"
                       "  rename   name a session, or rename it\n"
                       "  share    print a read-only link to a session, list or revoke links\n"
                       "  key      print the dashboard link, or make a new key (--rotate)\n"
                       "  restart  restart Tether in place, keeping every session\n"
                       "  wait     wait for the command running in a session, exit with its status\n"
                       "  send     type text into a session (like tmux send-keys)"));
    parser.addHelpOption();
    parser.addVersionOption();
    ServeOptions::addTo(parser, defaults);
    const QCommandLineOption noTray(QStringLiteral("no-tray"),
        DesktopApp::tr("Do not use the system tray: the Sessions window is the main window."));
    parser.addOption(noTray);
    return noTray;
}

/// True when the command line must be answered before QApplication exists:
/// --help, --version, a mistyped command and a missing display must get words
/// on a machine without a display, where QApplication aborts ("could not load
/// the Qt platform plugin").
bool answeredWithoutDisplay(int argc, char **argv)
{
    bool early = argc > 1 && argv[1][0] != '-'; // "help", or an unknown command
    bool platformGiven = false;
    for (int i = 1; i < argc; ++i) {
        const QByteArray a(argv[i]);
        early = early || a == "-h" || a == "--help" || a == "-?" || a == "--help-all" || a == "-v" || a == "--version";
        platformGiven = platformGiven || a == "-platform";
    }
    const bool noDisplay = qEnvironmentVariableIsEmpty("DISPLAY") && qEnvironmentVariableIsEmpty("WAYLAND_DISPLAY")
        && qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM") && !platformGiven;
    return early || noDisplay;
}

/// Parses QCoreApplication::arguments() (without Qt's own options, such as
/// -platform, which QApplication has taken out) into `config`. Returns the
/// exit status when the run ends here (help and version: 0, usage errors:
/// ServeOptions::kUsageError), or -1 to go on.
int readArguments(QCommandLineParser &parser, Config *config)
{
    const QStringList args = QCoreApplication::arguments();
    QTextStream out(stdout);
    if (args.size() > 1 && args.at(1) == QLatin1String("help")) {
        out << parser.helpText();
        return 0;
    }
    if (!parser.parse(args))
        return ServeOptions::usageError(kProgram, parser.errorText());
    if (helpRequested(parser)) {
        out << parser.helpText();
        return 0;
    }
    if (parser.isSet(QStringLiteral("version"))) {
        out << versionLine();
        return 0;
    }
    if (!parser.positionalArguments().isEmpty())
        return ServeOptions::usageError(kProgram, QStringLiteral("unknown command \"%1\": use serve, attach, list, new, kill, rename, share, key, restart, wait or send (aliases: a, at, ls)")
                                                      .arg(parser.positionalArguments().constFirst()));
    QString error;
    if (!ServeOptions::read(parser, config, &error))
        return ServeOptions::usageError(kProgram, error);
    return -1;
}

/// Runs the desktop app with `config` in `app`'s event loop, or hands off to
/// the instance already running. Returns the exit status.
int runDesktop(QApplication &app, const Config &config, DesktopApp::TrayMode trayMode)
{
    QTextStream err(stderr);
    // One desktop instance per user: a second launch raises the first.
    SingleInstance instance;
    QString instanceError;
    if (!instance.claim(&instanceError)) {
        QObject::connect(&instance, &SingleInstance::handOffFinished, &app, [&](bool handedOff) {
            if (!handedOff) {
                err << "tether: another instance (pid " << instance.primaryPid()
                    << ") holds " << instance.lockPath() << " but does not answer\n";
            } else {
                // Said, so that a launch from a terminal does not look like
                // it did nothing. The address from the running instance's
                // runtime file, when the file is its own (no key: the first
                // launch printed the keyed one; the file has it, 0600).
                const QJsonObject running = RuntimeFile::read();
                const QString url = qint64(running.value(QStringLiteral("pid")).toDouble()) == instance.primaryPid()
                    ? running.value(QStringLiteral("url")).toString()
                    : QString();
                QTextStream out(stdout);
                out << "Tether is already running (pid " << instance.primaryPid() << "): its Sessions window was raised";
                if (!url.isEmpty())
                    out << "; it serves " << url;
                out << '\n';
                out.flush();
            }
            err.flush();
            QCoreApplication::exit(handedOff ? 0 : 1);
        });
        instance.requestRaise();
        return app.exec();
    }
    if (!instanceError.isEmpty())
        qCWarning(lcUi) << instanceError;

    // The desktop app still holds the sessions itself: it is a host like
    // `tether serve`, and one host per user holds them (HostLock; inherited
    // across a restart in place).
    HostLock hostLock;
    QString lockError;
    qint64 holder = 0;
    const HostLock::Result locked = hostLock.acquire(&lockError, &holder);
    if (locked == HostLock::Result::Held) {
        const QJsonObject running = RuntimeFile::read();
        const QString url = holder > 0 && qint64(running.value(QStringLiteral("pid")).toDouble()) == holder
            ? running.value(QStringLiteral("url")).toString()
            : QString();
        const QString msg = DesktopApp::tr("Tether is already running (pid %1%2) and holds your sessions: one Tether "
                                           "per user does. The desktop app cannot connect to it yet: use the "
                                           "dashboard or `tether attach`, or stop it (for example the systemd user "
                                           "service tether.service) and start the desktop app again.")
                                .arg(holder > 0 ? QString::number(holder) : DesktopApp::tr("unknown"),
                                     url.isEmpty() ? QString() : QStringLiteral(", ") + url);
        err << "tether: " << msg << '\n';
        err.flush();
        QMessageBox::critical(nullptr, QStringLiteral("Tether"), msg);
        return 1;
    }
    if (locked == HostLock::Result::Unusable)
        qCWarning(lcUi).noquote() << "no single-host lock (" << lockError << "); a second Tether may start beside this one";

    // QTermWidget 1.2 prints uncategorized debug lines at every search.
    installTerminalMessageFilter();
    DesktopApp desktop(config, trayMode);
    QString error;
    bool badValue = false;
    if (!desktop.start(&error, &badValue)) {
        if (badValue) {
            // As `tether serve`: a bad option value (a TLS file) is a usage
            // error, exit 2; the box too, for a start from the menu.
            QMessageBox::critical(nullptr, QStringLiteral("Tether"), DesktopApp::tr("Tether cannot start: %1").arg(error));
            return ServeOptions::usageError(QStringLiteral("tether"), error);
        }
        const QString msg = DesktopApp::tr("Tether cannot start its server on %1 port %2: %3\n\n"
                                           "If `tether serve` already runs (for example the systemd user "
                                           "service tether.service), stop it first, or pick another port "
                                           "with --port or in the settings file.")
                                .arg(config.bind).arg(config.port).arg(error);
        err << "tether: " << msg << '\n';
        err.flush();
        QMessageBox::critical(nullptr, QStringLiteral("Tether"), msg);
        return 1;
    }
    desktop.restarter()->setHostLock(&hostLock);
    QObject::connect(&instance, &SingleInstance::raiseRequested, &desktop, &DesktopApp::showSessionsWindow);
    QObject::connect(&desktop, &DesktopApp::finished, &app, [] { QCoreApplication::exit(0); });
    // SIGTERM / SIGINT / SIGHUP (logout, Ctrl+C, kill) quit cleanly: sessions
    // are torn down rather than left orphaned. SIGUSR2 restarts in place.
    SignalPipe signalPipe({SIGTERM, SIGINT, SIGHUP, SIGUSR2});
    if (!signalPipe.isValid())
        qCWarning(lcUi) << "cannot handle signals:" << signalPipe.errorString();
    QObject::connect(&signalPipe, &SignalPipe::receivedInfo, &desktop, [&desktop](const SignalInfo &info) {
        // As `tether serve`: kill -HUP reloads a TLS certificate.
        if (info.number == SIGHUP && desktop.server()->isTls() && info.fromProcess()) {
            qCInfo(lcUi).noquote() << "signal received:" << info.describe() << "- reloading the TLS certificate";
            desktop.server()->reloadTls();
            return;
        }
        // Who sent it, as `tether serve` logs it.
        qCInfo(lcUi).noquote() << "signal received:" << info.describe()
                               << (info.number == SIGUSR2 ? "- restarting in place" : "- quitting");
        if (info.number == SIGUSR2)
            desktop.restartInPlace();
        else
            desktop.requestQuit(false);
    });
    // The next process image (same pid) claims the single-instance lock anew.
    QObject::connect(desktop.restarter(), &RestartInPlace::aboutToExec, &instance, &SingleInstance::release);
    QObject::connect(desktop.restarter(), &RestartInPlace::failed, &instance, [&instance] {
        if (instance.isPrimary())
            return; // failed before letting go of it
        QString why;
        if (!instance.claim(&why) || !why.isEmpty())
            qCWarning(lcUi) << "single instance after a failed restart:" << why;
    });
    // The same line as `tether serve`, for scripts and for people; once per
    // start (a restart in place is the same server going on).
    if (!desktop.restartedInPlace()) {
        QTextStream out(stdout);
        out << "Tether is serving " << desktop.server()->keyedUrl() << '\n';
        out.flush();
    }
    return app.exec();
}

} // namespace

int desktopMain(int argc, char **argv)
{
    // Before QApplication, which removes the arguments it knows (-platform).
    RestartInPlace::guardIfAsked(argv); // never returns in a restart's guardian
    RestartInPlace::recordStartup(argc, argv);
    // As `tether serve`: NOTIFY_SOCKET is kept for READY=1 and restarts, and
    // out of the environment the shells inherit.
    SystemdNotify::takeFromEnvironment();
    // Before anything opens descriptors or starts a thread (it edits the
    // environment); the sessions get the limit we started with back.
    FdLimit::raiseSoftLimit();
    QCoreApplication::setOrganizationName(QStringLiteral("Tether"));
    QCoreApplication::setApplicationName(QStringLiteral("tether"));
    QCoreApplication::setApplicationVersion(version());

    Config config = Config::load();
    QCommandLineParser parser;
    const QCommandLineOption noTray = addDesktopOptions(parser, config);

    if (answeredWithoutDisplay(argc, argv)) {
        // A plain QCoreApplication for the parser (Qt 5's helpText() needs one).
        QCoreApplication pre(argc, argv);
        const int status = readArguments(parser, &config);
        if (status >= 0)
            return status;
        QTextStream(stderr) << "tether: no display for the desktop app; run `tether serve` for the headless "
                               "server (see tether --help)\n";
        return 1;
    }

    QApplication app(argc, argv);
    QGuiApplication::setApplicationDisplayName(QStringLiteral("Tether"));
    QGuiApplication::setDesktopFileName(QStringLiteral("tether"));
    QApplication::setWindowIcon(appIcon());
    // The tray keeps us alive with no window open.
    QApplication::setQuitOnLastWindowClosed(false);
    const int status = readArguments(parser, &config);
    if (status >= 0)
        return status;
    return runDesktop(app, config, parser.isSet(noTray) ? DesktopApp::TrayMode::Off : DesktopApp::TrayMode::Auto);
}

} // namespace Tether
