// SPDX-License-Identifier: GPL-2.0-or-later
// TrayMenu: the tray icon's context menu (and its tooltip's words), made from
// the desktop app's state and the host's list. A unit of its own (issue 28):
// what the menu offers and how a session reads in it is a view of
// DesktopApp's public state, apart from the process's life (finding the
// host, the event stream, quitting) that desktopapp.cpp holds.
#pragma once

#include <QMenu>
#include <QString>

namespace Tether {

class DesktopApp;

/**
 * The tray's menu: an update's restart, the host's state when not connected
 * (with "Start Tether again" when it went away), up to kMaxSessions sessions
 * (Attach here, or Open in browser when nothing local can attach or the
 * session ended; the rest behind "N more…"), then New terminal, Sessions…,
 * Open dashboard, Settings…, Restart Tether, Close the tray and Quit Tether.
 * Its actions call DesktopApp's public slots. It reads DesktopApp's public
 * state only, and only in rebuild(): DesktopApp decides when (the list
 * changed, the menu opens).
 */
class TrayMenu : public QMenu
{
    Q_OBJECT
public:
    /// Sessions listed in the menu; the others are behind "N more…".
    static constexpr int kMaxSessions = 20;

    /// An empty menu for `app`'s tray (no parent widget: a tray menu is a
    /// top-level popup). `app` outlives it (DesktopApp deletes it).
    explicit TrayMenu(DesktopApp *app);

    /// Makes the menu again from `app`'s state and list. `hostStarting`:
    /// a HostLauncher is finding or starting the host ("Start Tether again"
    /// is disabled meanwhile, and shown only once the host was known).
    void rebuild(bool hostStarting);

    /// The tray's tooltip: "Tether — 3 sessions, 1 attached"; "Tether —
    /// starting its host…" before the host is known, "Tether — not
    /// connected to its host" while it is away (DesktopApp::trayToolTip()).
    static QString toolTip(const DesktopApp &app);

private:
    DesktopApp *m_app;
};

} // namespace Tether
