// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include "config.h"
#include "viewer.h"

#include <QHash>
#include <QObject>
#include <QPointer>
#include <memory>

class QMenu;
class QSystemTrayIcon;
class QWidget;

namespace Tether {

class RestartInPlace;
class Server;
class Session;
class SessionModel;
class SessionRegistry;
class SessionsWindow;
class SettingsDialog;

/**
 * The desktop application: the same registry and server as `tether serve`,
 * plus a tray icon, the Sessions window, local terminal windows and the
 * settings dialog, all in one Qt event loop.
 *
 * Tray (when QSystemTrayIcon::isSystemTrayAvailable()): tooltip
 * "Tether — N sessions, M attached"; menu with the live sessions (click =
 * attach here), New terminal, Sessions…, Open dashboard, Settings…, Quit.
 * A detached session whose process exits produces a tray notification
 * ("make — exited 0"); clicking it opens the Sessions window. A detached
 * session about to expire produces one too ("bash — expires in 1 min"), once
 * per detach period, SessionRegistry::expiryWarningLeadMs() before the TTL
 * runs out (60 s, or a tenth of a TTL under 10 min; never with TTL 0, which
 * never expires); clicking it attaches here, which keeps the session (without
 * a local terminal it opens the Sessions window). Without a tray the Sessions
 * window is the main window and closing it asks whether to quit or keep
 * serving. A tray that appears later (Tether started at login before the
 * panel) gets the icon then (X11; watchForTray()): the Sessions window stays
 * open, and closing it from then on leaves Tether in the tray.
 *
 * When a newer Tether is installed over the running one (UpgradeWatch), the
 * tray says "Tether was updated — restart to use version X (sessions are
 * kept)" (a click restarts in place), its menu starts with "Restart to
 * use version X", and the Sessions window shows the same above the list
 * with a Restart button (seen without a tray too).
 *
 * Quit asks first when sessions are running, then shuts the registry down
 * (every session torn down, bounded) and leaves the event loop.
 *
 * Local terminal windows (builds with QTermWidget) are one per session: a
 * second "attach" raises the existing window (taking over again if another
 * viewer superseded it).
 */
class DesktopApp : public QObject
{
    Q_OBJECT
public:
    /// `trayMode`: Auto follows isSystemTrayAvailable(); Off forces the
    /// main-window mode (tests, --no-tray); On creates the tray icon even when
    /// no tray is reported (tests: offscreen has none, and messages are
    /// recorded by overriding showTrayMessage()).
    enum class TrayMode { Auto, Off, On };

    explicit DesktopApp(const Config &config, TrayMode trayMode = TrayMode::Auto,
                        QObject *parent = nullptr);
    ~DesktopApp() override;

    /// Starts the server (listen, runtime file) and shows the tray or the
    /// Sessions window. False with *error set when the server cannot listen;
    /// `*badValue` as Server::listen()'s (a bad TLS file: a usage error).
    bool start(QString *error, bool *badValue = nullptr);

    SessionRegistry *registry() const { return m_registry.get(); }
    Server *server() const { return m_server.get(); }
    /// Restarts in place (tray: Restart Tether, SIGUSR2); after start().
    RestartInPlace *restarter() const { return m_restart; }
    /// start() took over a handover: this process image was exec'd by a
    /// restart in place (the sessions and the socket were adopted).
    bool restartedInPlace() const { return m_restartedInPlace; }
    SessionModel *model() const { return m_model; }
    const Config &config() const { return m_config; }
    /// The tray icon, null in main-window mode.
    QSystemTrayIcon *trayIcon() const { return m_tray; }
    /// The tray's context menu (rebuilt from the registry each time it opens).
    QMenu *trayMenu() const { return m_trayMenu; }
    /// "Tether — 3 sessions, 1 attached".
    QString trayToolTip() const;
    /// The version of a newer Tether installed over the running one
    /// (UpgradeWatch), empty when there is none. While there is one, the tray
    /// menu starts with "Restart to use version X", and a notification
    /// (updateText(), once per version; a click restarts in place) says so.
    QString updateVersion() const;
    /// "Tether was updated — restart to use version X (sessions are kept)".
    static QString updateText(const QString &version);
    /// The Sessions window (created on first use).
    SessionsWindow *sessionsWindow();
    /// The local window on session `id`, or null.
    QWidget *terminalWindow(const QString &id) const;
    /// Rebuilds the tray menu now (it is also rebuilt whenever it opens).
    void rebuildTrayMenu();
    /// True when "Attach here" can work: the QTermWidget window, or else a
    /// terminal emulator (Config::terminalArgv()) to run `tether attach` in.
    bool canAttachHere() const;
    /// Why "Attach here" cannot work, for the user (empty when it can).
    QString attachUnavailableReason() const;
    /// Runs `<cli program> attach [--watch] -- ID` in the terminal emulator
    /// (QProcess::startDetached of Config::terminalArgv() + that), with
    /// TETHER_URL/TETHER_KEY of this server in its environment. The path
    /// used when the build has no QTermWidget (Qt 6 on Debian 12). False with
    /// *error (for the user) when no terminal emulator is found or it cannot
    /// start.
    bool attachInTerminalEmulator(const QString &id, Tether::ViewerMode mode, QString *error);
    /// The `tether` executable run by attachInTerminalEmulator(); default
    /// (empty) QCoreApplication::applicationFilePath(). For tests and wrappers.
    void setCliProgram(const QString &path) { m_cliProgram = path; }

public Q_SLOTS:
    /// Shows, raises and activates the Sessions window.
    void showSessionsWindow();
    /// Opens (or raises) a local terminal window attached to `id` in `mode`.
    /// Without QTermWidget: `tether attach` in the desktop's terminal
    /// emulator (attachInTerminalEmulator()); without one either, explains
    /// why and offers the browser instead.
    void attachHere(const QString &id, Tether::ViewerMode mode = Tether::ViewerMode::Control);
    void openInBrowser(const QString &id);
    void openDashboard();
    /// Starts a session with the default command and attaches here (or opens
    /// it in the browser without QTermWidget). Returns its id (empty on error,
    /// which is shown to the user).
    QString newTerminal();
    void killSession(const QString &id);
    void showSettings();
    /// Restarts Tether in place (RestartInPlace): every session is kept, and
    /// the new process image comes back as this one was: the tray, the
    /// Sessions window and the Settings dialog if they were open, the local
    /// terminal windows open now attached in the same mode, where they were. When it cannot restart, the
    /// reason is shown as a notification (and the app carries on).
    void restartInPlace();
    /// Quits: asks first when `confirm` and sessions are running; then shuts
    /// the registry down and exits the event loop once all are torn down.
    void requestQuit(bool confirm = true);

Q_SIGNALS:
    /// Quitting is complete: the registry shut down and the server closed.
    /// desktopMain leaves the event loop on it.
    void finished();
    /// A notification was shown (or would have been, without a tray).
    void notified(const QString &title, const QString &text);

protected:
    /// The last step of every notification: QSystemTrayIcon::showMessage on
    /// the tray icon, when the tray supports messages. Called only with a tray
    /// icon. Virtual as a test seam: everything up to this call is the real
    /// path; a test override records instead of showing.
    virtual void showTrayMessage(const QString &title, const QString &text, int msecs);

private Q_SLOTS:
    /// The platform's tray changed (xcb: systemTrayWindowChanged): adds the
    /// tray icon when a tray is now available (see watchForTray()).
    void onSystemTrayChanged();

private:
    void setupTray();
    /// Started without a tray (TrayMode::Auto): listens for one to appear
    /// (X11: the _NET_SYSTEM_TRAY_S<n> selection's new owner, through Qt's
    /// xcb plugin; no timer), then adds the tray icon and turns the Sessions
    /// window's main-window mode off (it stays open).
    void watchForTray();
    /// RestartInPlace::aboutToExec: closes the terminal windows, noting them
    /// (id, mode, geometry) in the environment for the next image, with
    /// whether the Sessions window (and its geometry) and the Settings dialog
    /// were open (TETHER_HANDOVER_WINDOWS, TETHER_HANDOVER_DESKTOP:
    /// docs/architecture.md, "Restart in place").
    void prepareExec();
    /// Reads and removes what prepareExec() noted and opens the terminal
    /// windows again, attached in the same mode, where they were. `atStart`
    /// (an image exec'd by a restart): the Sessions window and the Settings
    /// dialog too; else (the restart failed) they are still open.
    void reopenWindows(bool atStart);
    void updateTrayToolTip();
    void watchSession(Session *session);
    void onSessionExited(Session *session, const ExitStatus &status);
    void onSessionExpiringSoon(Session *session, int secondsLeft);
    void onTrayMessageClicked();
    /// UpgradeWatch::updateChanged: menu entry and notification.
    void onUpdateChanged();
    /// `attachId`: the session a click on the message attaches to (empty:
    /// the click opens the Sessions window).
    void notify(const QString &title, const QString &text, const QString &attachId = QString());

    Config m_config;
    TrayMode m_trayMode;
    std::unique_ptr<SessionRegistry> m_registry;
    std::unique_ptr<Server> m_server;
    SessionModel *m_model = nullptr;
    QSystemTrayIcon *m_tray = nullptr;
    QMetaObject::Connection m_trayWatch; ///< to the platform's tray-changed signal, until a tray appears
    QMenu *m_trayMenu = nullptr;
    bool m_trayMenuDirty = true;
    bool m_trayUpdatePending = false;
    QString m_messageSessionId; ///< the session the last tray message is about, if a click attaches
    bool m_messageRestarts = false; ///< the last tray message offered the restart to a new version
    QString m_notifiedUpdate;   ///< the update version already announced
    QPointer<SessionsWindow> m_sessionsWindow;
    QPointer<SettingsDialog> m_settingsDialog;
    QHash<QString, QPointer<QWidget>> m_terminals;
    bool m_quitting = false;
    RestartInPlace *m_restart = nullptr;
    bool m_restartedInPlace = false;
    QString m_cliProgram;
    QString m_savedBind;   ///< server/bind saved when start() ran (SettingsDialog::setRunningAddress)
    quint16 m_savedPort = 0; ///< server/port saved when start() ran
};

/// `tether` without a subcommand: parses the command line (same options as
/// `tether serve`, plus --no-tray), hands off to a running instance if there is
/// one (exit 0), else runs the desktop application. Returns the exit code.
int desktopMain(int argc, char **argv);

} // namespace Tether
