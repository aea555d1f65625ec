// SPDX-License-Identifier: GPL-2.0-or-later
// TrayMenu: the desktop app's tray menu and tooltip, made from the host's
// list (see traymenu.h for why this is a unit of its own).
#include "traymenu.h"
#include "desktopapp.h"
#include "sessionlistmodel.h"
#include "sessiontext.h"
#include "shellwords.h"

#include <QAction>
#include <QJsonArray>
#include <QJsonObject>

namespace Tether {

TrayMenu::TrayMenu(DesktopApp *app)
    : m_app(app)
{
}

QString TrayMenu::toolTip(const DesktopApp &app)
{
    if (!app.isConnected())
        return app.endpoint().url.isEmpty() ? tr("Tether — starting its host…") : tr("Tether — not connected to its host");
    const int total = app.model()->rowCount();
    const int attached = app.model()->attachedCount();
    // Explicit plurals: without a translator loaded, %n would print "session(s)".
    if (total == 1)
        return tr("Tether — 1 session, %1 attached").arg(attached);
    return tr("Tether — %1 sessions, %2 attached").arg(total).arg(attached);
}

void TrayMenu::rebuild(bool hostStarting)
{
    DesktopApp *const app = m_app;
    clear();
    if (!app->updateVersion().isEmpty()) {
        connect(addAction(QIcon::fromTheme(QStringLiteral("system-software-update")),
                          tr("Restart to use version %1").arg(app->updateVersion())),
                &QAction::triggered, app, &DesktopApp::restartInPlace);
        addSeparator();
    }
    const bool connected = app->isConnected();
    if (!connected) {
        addAction(toolTip(*app))->setEnabled(false);
        if (!app->endpoint().url.isEmpty() || !hostStarting) {
            QAction *again = addAction(QIcon::fromTheme(QStringLiteral("view-refresh")), tr("Start Tether again"));
            again->setObjectName(QStringLiteral("startHostAgain"));
            again->setEnabled(!hostStarting);
            connect(again, &QAction::triggered, app, &DesktopApp::startHostAgain);
        }
    }
    const bool local = app->canAttachHere();
    const int count = app->model()->rowCount();
    if (connected && count == 0) {
        addAction(tr("No sessions"))->setEnabled(false);
    } else if (count > 0) {
        QAction *header = addAction(local ? tr("Attach here:") : tr("Open in browser:"));
        header->setEnabled(false);
        for (int row = 0; row < count; ++row) {
            if (row >= kMaxSessions) {
                QAction *more = addAction(tr("%1 more…").arg(count - kMaxSessions));
                connect(more, &QAction::triggered, app, &DesktopApp::showSessionsWindow);
                break;
            }
            const QJsonObject s = app->model()->sessionAt(row);
            QString name = SessionListModel::displayName(s);
            if (name.size() > 48)
                name = name.left(47) + QChar(0x2026);
            const bool running = SessionListModel::isRunning(s);
            QString state = running ? SessionListModel::attachedText(s) : SessionText::state(s);
            if (running && !s.value(QStringLiteral("attached")).toBool())
                state = tr("detached");
            // '&' would become a mnemonic.
            name.replace(QLatin1Char('&'), QStringLiteral("&&"));
            QAction *a = addAction(QStringLiteral("%1 — %2").arg(name, state));
            QStringList command;
            for (const QJsonValue &v : s.value(QStringLiteral("command")).toArray())
                command << v.toString();
            a->setToolTip(ShellWords::quote(command));
            const QString id = s.value(QStringLiteral("id")).toString();
            // An ended session (a record kept across a reboot or crash) cannot
            // be attached: the dashboard offers Revive for it.
            const bool ended = s.value(QStringLiteral("state")).toString() == QLatin1String("ended");
            connect(a, &QAction::triggered, app, [app, id, local, ended] {
                if (local && !ended)
                    app->attachHere(id);
                else
                    app->openInBrowser(id);
            });
        }
        if (!local) {
            QAction *why = addAction(tr("(No local terminal: QTermWidget for Qt %1 is not installed, "
                                        "and no terminal emulator was found)")
                                         .arg(QT_VERSION_MAJOR));
            why->setEnabled(false);
        }
    }
    addSeparator();
    QAction *newTerm = addAction(QIcon::fromTheme(QStringLiteral("utilities-terminal")), tr("New terminal"));
    newTerm->setEnabled(connected);
    connect(newTerm, &QAction::triggered, app, &DesktopApp::newTerminal);
    connect(addAction(tr("Sessions…")), &QAction::triggered, app, &DesktopApp::showSessionsWindow);
    QAction *dashboard = addAction(QIcon::fromTheme(QStringLiteral("internet-web-browser")), tr("Open dashboard"));
    dashboard->setEnabled(!app->endpoint().url.isEmpty());
    connect(dashboard, &QAction::triggered, app, &DesktopApp::openDashboard);
    QAction *settings = addAction(tr("Settings…"));
    settings->setEnabled(connected);
    connect(settings, &QAction::triggered, app, &DesktopApp::showSettings);
    addSeparator();
    QAction *restart = addAction(QIcon::fromTheme(QStringLiteral("view-refresh")), tr("Restart Tether"));
    restart->setEnabled(connected);
    connect(restart, &QAction::triggered, app, &DesktopApp::restartInPlace);
    QAction *close = addAction(tr("Close the tray (sessions keep running)"));
    close->setObjectName(QStringLiteral("closeUi"));
    connect(close, &QAction::triggered, app, &DesktopApp::closeUi);
    const int running = app->model()->runningCount();
    QAction *quit = addAction(QIcon::fromTheme(QStringLiteral("application-exit")),
                              running == 1 ? tr("Quit Tether (end 1 session)")
                                           : tr("Quit Tether (end %1 sessions)").arg(running));
    quit->setObjectName(QStringLiteral("quitTether"));
    quit->setEnabled(connected);
    connect(quit, &QAction::triggered, app, [app] { app->quitTether(true); });
}

} // namespace Tether
