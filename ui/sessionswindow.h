// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <QMainWindow>
#include <QTimer>

class QAction;
class QFrame;
class QLabel;
class QMessageBox;
class QSortFilterProxyModel;
class QStackedWidget;
class QTableView;

namespace Tether {

class SessionListModel;

/**
 * The Sessions window: a sortable table of every session of the host
 * (SessionListModel, fed from `/api/events`, behind a QSortFilterProxyModel)
 * with the actions Attach here, Watch, Open in browser, Rename, Kill and
 * New. Double-click attaches; Rename (F2) edits the name in place
 * (SessionListModel::setData emits renameRequested, which the DesktopApp
 * sends to the host), a refused name is said in the status bar
 * (showRenameRefused()).
 *
 * The window does not act on sessions itself; it emits requests that the
 * DesktopApp carries out (Kill is confirmed here first). The clock columns
 * (idle, expires in) refresh once a second only while the window is shown:
 * no timer runs while it is hidden.
 *
 * Main-window mode (no system tray): closing asks whether to quit Tether
 * (the host ends every session) or only close the window (the desktop app
 * exits, the host and its sessions go on).
 */
class SessionsWindow : public QMainWindow
{
    Q_OBJECT
public:
    explicit SessionsWindow(SessionListModel *model, QWidget *parent = nullptr);
    ~SessionsWindow() override;

    /// Says in the status bar why the rename was refused (the host's text).
    void showRenameRefused(const QString &why);
    /// A lasting status-bar note ("Reconnecting to Tether…"); empty clears it.
    void setConnectionNote(const QString &text);
    /// Shows the dashboard address in the status bar.
    void setServerUrl(const QString &url);
    /// Shows `text` ("Tether was updated — restart to use version X
    /// (sessions are kept)") above the list with a Restart button (which
    /// emits restartRequested); empty hides it.
    void setUpdateNotice(const QString &text);
    /// Enables the local terminal actions, or disables them with `reason` as
    /// tooltip and status text (a build without QTermWidget).
    void setLocalTerminalAvailable(bool available, const QString &reason = QString());
    /// When true (no tray), closing asks "quit Tether or close the window".
    void setMainWindowMode(bool on) { m_mainWindowMode = on; }
    bool isMainWindowMode() const { return m_mainWindowMode; }

    /// Makes `box` at least as wide as its title needs in the window
    /// manager's title bar ("TITLE — Tether", bold, beside an icon and three
    /// buttons). QMessageBox is only as wide as its texts: with a short
    /// session name openbox cut "Kill session — Tether" to "Kill ses… Tether".
    static void keepTitleRoom(QMessageBox &box);

    /// Id of the selected session (empty if none).
    QString currentSessionId() const;
    /// Selects the row of `id` (no-op when absent).
    void selectSession(const QString &id);

    QTableView *view() const { return m_view; }
    QAction *attachAction() const { return m_attach; }
    QAction *watchAction() const { return m_watch; }
    QAction *browserAction() const { return m_browser; }
    QAction *killAction() const { return m_kill; }
    /// Opens the name of the selected session for editing (F2).
    QAction *renameAction() const { return m_rename; }
    QAction *newAction() const { return m_new; }
    /// True while the clock refresh timer runs (the window is shown).
    bool isClockRunning() const { return m_clock.isActive(); }

Q_SIGNALS:
    void attachRequested(const QString &id);
    void watchRequested(const QString &id);
    void openInBrowserRequested(const QString &id);
    /// Emitted after the user confirmed.
    void killRequested(const QString &id);
    void newSessionRequested();
    void dashboardRequested();
    void settingsRequested();
    /// Tether menu: Restart Tether (in place, every session kept).
    void restartRequested();
    /// The user chose Quit Tether (menu, or closing in main-window mode):
    /// the host is to shut down, ending every session. `confirmed`: the user
    /// already agreed to end the running sessions.
    void quitRequested(bool confirmed);
    /// The user chose to close the desktop app only (menu Close, or "Close
    /// the window" when closing in main-window mode): the sessions keep
    /// running in the host.
    void closeRequested();

protected:
    void showEvent(QShowEvent *event) override;
    void hideEvent(QHideEvent *event) override;
    void closeEvent(QCloseEvent *event) override;

private:
    void updateActions();
    void updateEmptyState();
    void confirmKill();

    SessionListModel *m_model;
    QSortFilterProxyModel *m_proxy;
    QStackedWidget *m_stack;
    QTableView *m_view;
    QLabel *m_urlLabel;
    QFrame *m_updateBar = nullptr;
    QLabel *m_updateText = nullptr;
    QAction *m_attach;
    QAction *m_watch;
    QAction *m_browser;
    QAction *m_kill;
    QAction *m_rename;
    QAction *m_new;
    QTimer m_clock;
    bool m_localTerminal = true;
    QString m_localTerminalReason;
    bool m_mainWindowMode = false;
};

} // namespace Tether
