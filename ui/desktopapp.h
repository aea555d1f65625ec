// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include "apiclient.h"
#include "attachinfo.h"
#include "desktopsettings.h"
#include "traymenu.h"
#include "windowstate.h"

#include <QDateTime>
#include <QHash>
#include <QJsonObject>
#include <QObject>
#include <QPointer>
#include <QTimer>

class QMenu;
class QSystemTrayIcon;
class QWidget;

namespace Tether {

class DesktopNotifier;
class EventStream;
class HostLauncher;
class SessionListModel;
class SessionsWindow;
class SettingsDialog;

/**
 * The desktop application: a client of the Tether host (`tether serve`,
 * the process that holds the sessions), with a tray icon, the Sessions
 * window, local terminal windows and the settings dialog (issue 23). It
 * holds no session: a lost display, a crash or a `kill -9` of this process
 * ends the UI only; the host and every session go on, and the next start
 * of the desktop app lists them again.
 *
 * The host: start() finds the one running (its runtime file, answered by
 * the API) or starts one that outlives this process (HostLauncher: `tether
 * serve` in its own process session, stdio to $XDG_STATE_HOME/tether/host.log),
 * with the host arguments (the desktop's --port, --bind, ... as given).
 * One host per user (HostLock): two desktop apps, a `tether serve` by hand
 * or the systemd unit all meet the same one. connectTo() skips the search.
 *
 * Everything the UI shows comes over the same API as the dashboard's
 * (docs/protocol.md): the tray menu, its tooltip and the Sessions window
 * from `GET /api/events` (EventStream into a SessionListModel); new, kill
 * and rename are REST calls (ApiClient); terminal windows attach over the
 * WebSocket (TerminalWindow, AttachClient); the Settings dialog reads the
 * host's settings with `GET /api/settings` and changes them with `PATCH
 * /api/settings` (the host saves and applies them live); the desktop's own
 * settings (DesktopSettings) are this app's.
 * The event stream reconnects by itself, so a `tether restart` (restart in
 * place) is followed without anything lost: the list stays and the
 * terminal windows resume.
 *
 * Tray (when QSystemTrayIcon::isSystemTrayAvailable()): tooltip
 * "Tether — N sessions, M attached"; menu with the live sessions (click =
 * attach here), New terminal, Sessions…, Open dashboard, Settings…, Restart
 * Tether, "Close the tray (sessions keep running)" and "Quit Tether (end N
 * sessions)". A detached session whose process exits produces a
 * notification ("make — exited 0"); clicking it opens the Sessions window.
 * A detached session about to expire produces one too ("bash — expires in
 * 1 min"), once per deadline, expiryWarningLeadMs() before it (its
 * `expires_in` counted from the list's arrival; the TTL from `GET
 * /api/settings`); clicking it attaches here, which keeps the session.
 * One single-shot timer, set only while some session can expire.
 * Without a tray the Sessions window is the main window and closing it asks
 * whether to quit Tether or close the window only. A tray that appears
 * later (Tether started at login before the panel) gets the icon then
 * (X11; watchForTray()).
 *
 * When a newer Tether is installed over the running host (its `server`
 * event's `update`), the tray says "Tether was updated — restart to use
 * version X (sessions are kept)" (a click restarts the host in place), its
 * menu starts with "Restart to use version X", and the Sessions window
 * shows the same with a Restart button.
 *
 * Quit (quitTether()) asks first when sessions run, then asks the host to
 * shut down (SIGTERM to its pid, as `systemctl --user stop` does) and
 * leaves once the host said it shuts down. Close (closeUi()) and SIGTERM,
 * SIGINT or SIGHUP to this process leave the host running.
 *
 * When the host took its sessions over after a crash of the previous one
 * (its `server` event's `recovered_after_crash`), a notification says
 * "Tether crashed at HH:MM and recovered N sessions", once per crash for
 * this process (a new `server` event of the same host, at a reconnection
 * or when its keeper changes, does not repeat it; a desktop app started
 * later on that host says it again).
 *
 * When the host goes away (its event stream stays refused), the tray says
 * so and offers "Start Tether again" (a new HostLauncher).
 *
 * Open terminal windows are remembered (WindowState: the session ids and
 * modes, rewritten when a window opens or the user closes one): when the
 * app went away without a Quit (a crash, a lost display, Close, SIGTERM),
 * its next start reopens those whose session the host still lists (not the
 * ended ones), once, when the first list arrives. Quit forgets them.
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

    /// `settings`: the desktop's own (DesktopSettings::load() at start).
    explicit DesktopApp(const DesktopSettings &settings, TrayMode trayMode = TrayMode::Auto,
                        QObject *parent = nullptr);
    ~DesktopApp() override;

    /// The `tether` executable started as `PROGRAM serve` when no host runs
    /// (default: this very binary). For tests.
    void setHostProgram(const QString &program) { m_hostProgram = program; }
    /// Arguments after `serve` for a host this app starts (the desktop's
    /// own server options, e.g. `--port 0`).
    void setHostArguments(const QStringList &args) { m_hostArguments = args; }

    /// Finds or starts the host (HostLauncher) and shows the tray or the
    /// Sessions window at once. hostReady() or hostFailed() follows.
    void start();
    /// Shows the UI on the host at `endpoint` without searching for one
    /// (tests; a host known otherwise).
    void connectTo(const ServerEndpoint &endpoint);
    /// The host's address and key (empty before hostReady()).
    const ServerEndpoint &endpoint() const { return m_endpoint; }
    /// The host's event stream is open and its list has arrived.
    bool isConnected() const;
    /// The host's pid, from its `server` event (GET /api/restart's `pid`);
    /// 0 before it arrived.
    qint64 hostPid() const { return m_hostPid; }
    /// The host's dashboard link with the key (`URL?key=KEY`).
    QString keyedUrl() const;

    SessionListModel *model() const { return m_model; }
    const DesktopSettings &desktopSettings() const { return m_desktop; }
    /// The tray icon, null in main-window mode.
    QSystemTrayIcon *trayIcon() const { return m_tray; }
    /// The tray's context menu (rebuilt from the list each time it opens).
    QMenu *trayMenu() const { return m_trayMenu; }
    /// "Tether — 3 sessions, 1 attached"; "Tether — not connected to its
    /// host" while the host is away.
    QString trayToolTip() const;
    /// The version of a newer Tether installed over the running host, empty
    /// when there is none (its `server` event's `update`).
    QString updateVersion() const { return m_updateVersion; }
    /// "Tether was updated — restart to use version X (sessions are kept)".
    static QString updateText(const QString &version);
    /// "Tether crashed at 14:05 and recovered 3 sessions" (`crashedAt` in
    /// local time; "on 2026-01-02 at 14:05" when it is not `now`'s day;
    /// without a time when `crashedAt` is invalid: not known).
    static QString crashText(int recovered, const QDateTime &crashedAt,
                             const QDateTime &now = QDateTime::currentDateTime());
    /// How long before its deadline a session is announced, ms: 60 s, or a
    /// tenth of the TTL when it is under 10 min (the host's rule,
    /// SessionRegistry::expiryWarningLeadMs); 0 for ttlSeconds <= 0.
    static qint64 expiryWarningLeadMs(int ttlSeconds);
    /// The Sessions window (created on first use).
    SessionsWindow *sessionsWindow();
    /// The local window on session `id`, or null.
    QWidget *terminalWindow(const QString &id) const;
    /// Whether windows remembered from the last run (WindowState) reopen
    /// when the first list arrives (default true; false for tests that
    /// open their own).
    void setRestoreWindows(bool restore) { m_restoreWindows = restore; }
    /// Rebuilds the tray menu now (it is also rebuilt whenever it opens;
    /// TrayMenu::rebuild()).
    void rebuildTrayMenu();
    /// True when "Attach here" can work: the QTermWidget window, or else a
    /// terminal emulator (DesktopSettings::terminalArgv()) to run `tether attach` in.
    bool canAttachHere() const;
    /// Why "Attach here" cannot work, for the user (empty when it can).
    QString attachUnavailableReason() const;
    /// Runs `<cli program> attach [--watch] -- ID` in the terminal emulator
    /// (QProcess::startDetached of DesktopSettings::terminalArgv() + that), with
    /// TETHER_URL/TETHER_KEY of the host in its environment. False with
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
    /// Asks the host for a session with its default command (`POST
    /// /api/sessions`), then attaches here (or opens it in the browser when
    /// nothing local can); sessionCreated() says its id. An error is shown.
    void newTerminal();
    /// `DELETE /api/sessions/{id}`.
    void killSession(const QString &id);
    /// `PATCH /api/sessions/{id}` with the name (empty: no name); a refusal
    /// is said in the Sessions window.
    void renameSession(const QString &id, const QString &name);
    void showSettings();
    /// Asks the host to restart in place (`POST /api/restart`): every
    /// session is kept; the event stream and the terminal windows reconnect
    /// by themselves. A refusal is shown as a notification.
    void restartInPlace();
    /// Quit Tether: asks first when `confirm` and sessions are running;
    /// then asks the host to shut down (SIGTERM to hostPid()), which ends
    /// every session, and finishes once it said so (its `shutdown` event,
    /// or its stream ending; at most 10 s).
    void quitTether(bool confirm = true);
    /// Closes the desktop app only: windows and tray go, the host and its
    /// sessions go on. finished() follows.
    void closeUi();
    /// Starts the host again (the tray's "Start Tether again" when it went
    /// away): a new HostLauncher, as start() does.
    void startHostAgain();

private:
    /// Closes the terminal windows, the Settings dialog, hides the Sessions
    /// window and the tray: what quitTether() and closeUi() both do first.
    void hideEverything();

Q_SIGNALS:
    /// The desktop app is done (closeUi(), quitTether(), or the host could
    /// not be found nor started: `status` 1). desktopMain leaves the event
    /// loop on it.
    void finished(int status);
    /// The host is known (found, started, or connectTo()); the list follows.
    void hostReady();
    /// No host could be found nor started: `why` (also shown to the user).
    void hostFailed(const QString &why);
    /// The host's event stream opened (its list arrived) or closed.
    void connectedChanged(bool connected);
    /// newTerminal() made session `id`.
    void sessionCreated(const QString &id);
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
    void showUi();
    void launchHost();
    void setupTray();
    /// Started without a tray (TrayMode::Auto): listens for one to appear
    /// (X11: the _NET_SYSTEM_TRAY_S<n> selection's new owner, through Qt's
    /// xcb plugin; no timer), then adds the tray icon and turns the Sessions
    /// window's main-window mode off (it stays open).
    void watchForTray();
    void updateTrayToolTip();
    void onConnectedChanged(bool connected);
    void onServerStatus(const QJsonObject &status);
    void onSessionExited(const QJsonObject &session);
    /// `event: notify` (docs/protocol.md, "Commands"): a command that ended,
    /// a bell, a program's message, an activity or silence alert. Shown
    /// when nobody watched the session, or when the user asked for it
    /// ("requested") and has no window of it open here. `exit` is left to
    /// onSessionExited() (which the list's changes drive), so an exit is
    /// announced once.
    void onNotifyEvent(const QJsonObject &event);
    void onTrayMessageClicked();
    /// What a click on a notification (the tray's, or a desktop
    /// notification's default action) does: restart into a new version, or
    /// attach to its session unless another viewer took it since, else
    /// open the Sessions window.
    void actOnNotification(const QString &sessionId, bool restarts);
    /// The desktop notification service (DesktopNotifier), made at the
    /// first notification; null when no session bus is configured
    /// (DBUS_SESSION_BUS_ADDRESS unset and no $XDG_RUNTIME_DIR/bus: no
    /// D-Bus autolaunch) or once it failed.
    DesktopNotifier *notifier();
    /// Notifies the sessions whose warning time came, and sets the timer
    /// for the next one (none when nothing can expire).
    void checkExpiry();
    /// Reads the TTLs the host applies (GET /api/settings).
    void readTtls();
    /// The event stream was refused (401: the key was rotated): the new key
    /// from the runtime file, when it names the same host.
    void onRefused(int status, const QString &error);
    /// `attachId`: the session a click on the message attaches to (empty:
    /// the click opens the Sessions window); `restarts`: a click restarts
    /// into the new version. A desktop notification (with an Attach action
    /// when `attachId` is set) where the session bus has a notification
    /// service, else the tray's message.
    void notify(const QString &title, const QString &text, const QString &attachId = QString(), bool restarts = false);
    /// The tray's message (the fallback of notify()).
    void notifyInTray(const QString &title, const QString &text, const QString &attachId, bool restarts);
    /// A message box for a failed request (`what`: "Could not kill the session").
    void showError(const QString &what, const ApiReply &reply);
    /// Writes the open terminal windows to the state file (WindowState),
    /// when they differ from what it holds.
    void rememberWindows();
    /// Reopens the windows of the last run whose sessions the host lists
    /// (once per process, at the first list).
    void reopenRememberedWindows();

    DesktopSettings m_desktop;
    TrayMode m_trayMode;
    QString m_hostProgram;
    QStringList m_hostArguments;
    ServerEndpoint m_endpoint;
    qint64 m_hostPid = 0;
    QString m_updateVersion;
    SessionListModel *m_model = nullptr;
    EventStream *m_events = nullptr;
    ApiClient *m_api = nullptr;
    QPointer<HostLauncher> m_launcher;
    bool m_uiShown = false;
    bool m_listPending = false; ///< connected; the first list is to be logged
    QSystemTrayIcon *m_tray = nullptr;
    QMetaObject::Connection m_trayWatch; ///< to the platform's tray-changed signal, until a tray appears
    TrayMenu *m_trayMenu = nullptr;
    bool m_trayMenuDirty = true;
    bool m_trayUpdatePending = false;
    bool m_messageRestarts = false; ///< the last tray message offered the restart to a new version
    QString m_messageSessionId; ///< the session the last tray message is about, if a click attaches
    DesktopNotifier *m_notifier = nullptr;
    bool m_notifierTried = false;
    int m_ttl = -1;        ///< the host's TTL of a detached running session, s (-1: not known yet)
    int m_exitedTtl = -1;  ///< ... of an exited session
    QTimer m_expiryTimer;  ///< single shot, to the next expiry warning
    QHash<QString, qint64> m_warnedDeadline; ///< id -> deadline (ms since epoch) already announced
    QString m_notifiedUpdate;   ///< the update version already announced
    QString m_notifiedCrash;    ///< "PID CRASHED_AT" of the crash recovery already announced
    QPointer<SessionsWindow> m_sessionsWindow;
    QPointer<SettingsDialog> m_settingsDialog;
    QHash<QString, QPointer<QWidget>> m_terminals;
    bool m_restoreWindows = true;
    bool m_windowsRestored = false; ///< reopenRememberedWindows() ran (or was not to)
    QList<WindowState::Window> m_rememberedWindows; ///< what the state file holds
    bool m_finishing = false;
    QTimer m_quitDeadline;
    QString m_cliProgram;
};

} // namespace Tether
