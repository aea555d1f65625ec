// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include "attachinfo.h"

#include <QList>
#include <QString>

namespace Tether {

/**
 * The desktop app's memory of its open terminal windows, so that windows
 * open when the app went away without a Quit (a crash, `kill -9`, a lost
 * display, logout, Close) reopen at its next start (issue 23: "windows that
 * were open may reopen"), as VS Code reconnects its terminals after a
 * window reload.
 *
 * A JSON file in the UI's state directory, path() ($XDG_STATE_HOME/tether/
 * desktop.json, $HOME/.local/state/... when unset or not absolute):
 * `{"windows": [{"id": "ID", "mode": "control"}, ...]}` ("watch" for a
 * watch window), in the order they were opened. Written whole and
 * atomically (QSaveFile), mode 0600; only the desktop app reads it. A file
 * that cannot be read or parsed is an empty list (nothing reopens).
 */
namespace WindowState {

/// One remembered window: its session and its mode.
struct Window {
    QString id;
    ViewerMode mode = ViewerMode::Control;
    bool operator==(const Window &o) const { return id == o.id && mode == o.mode; }
};

/// $XDG_STATE_HOME/tether/desktop.json.
QString path();
/// The windows remembered in `file` (empty when there is none or it is bad).
QList<Window> load(const QString &file = path());
/// Replaces the list in `file` (creating its directory). False with *error
/// when it cannot be written.
bool save(const QList<Window> &windows, QString *error = nullptr, const QString &file = path());

} // namespace WindowState
} // namespace Tether
