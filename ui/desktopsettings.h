// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <QString>
#include <QStringList>

class QSettings;

namespace Tether {

/**
 * The desktop app's own settings: what only the desktop uses, never the
 * host (issue 28: the settings split into engine, server and desktop
 * parts). The host's settings (limits, default command, address) belong to
 * the host, which reads and writes them itself; the desktop app reads them
 * with `GET /api/settings` and changes them with `PATCH /api/settings`.
 *
 * Stored with QSettings in the same file as the host's (organization
 * "Tether", application "tether": ~/.config/Tether/tether.conf), under keys
 * the host never writes: desktop/terminal (terminal emulator command prefix
 * for "Attach here" when the build has no QTermWidget, e.g. "xterm -e";
 * empty = detect), terminal/colorScheme, terminal/fontFamily,
 * terminal/fontSize (the local terminal windows' QTermWidget colour scheme,
 * font family (empty: the system's fixed font) and size in points, 6..72).
 * A font size out of range in the file is clamped and logged. Start at
 * login is a file of its own (SettingsDialog::autostartPath()).
 */
struct DesktopSettings {
    static constexpr int kDefaultTerminalFontSize = 10;
    static constexpr int kMinTerminalFontSize = 6;
    static constexpr int kMaxTerminalFontSize = 72;

    /// desktop/terminal: command prefix that runs a program in a terminal
    /// emulator ("xterm -e"); `tether attach ID` is appended. Empty = detect.
    QString terminal;
    /// terminal/colorScheme: a QTermWidget colour scheme for every local
    /// terminal window. BlackOnWhite: every colour reads on its background
    /// (with "Linux", vim's Visual selection was white on light grey, 1:1).
    QString terminalColorScheme = QStringLiteral("BlackOnWhite");
    /// terminal/fontFamily: empty = the system's fixed-pitch font.
    QString terminalFontFamily;
    /// terminal/fontSize, points.
    int terminalFontSize = kDefaultTerminalFontSize;

    /// Reads the keys above (missing keys keep the defaults).
    static DesktopSettings load(QSettings &settings);
    /// Reads from the default QSettings location.
    static DesktopSettings load();
    /// Writes the keys above, and no other.
    void save(QSettings &settings) const;

    /// The terminal emulator prefix as argv: `terminal` split by
    /// ShellWords::split when set, else the first found in PATH of
    /// `x-terminal-emulator -e` (Debian's alternative), `xterm -e`,
    /// `gnome-terminal --`, `konsole -e`, `xfce4-terminal -x`. Empty when
    /// the program is not found in PATH (or none is), or `terminal` cannot
    /// be split (an open quote).
    QStringList terminalArgv() const;

    bool operator==(const DesktopSettings &o) const
    {
        return terminal == o.terminal && terminalColorScheme == o.terminalColorScheme
            && terminalFontFamily == o.terminalFontFamily && terminalFontSize == o.terminalFontSize;
    }
    bool operator!=(const DesktopSettings &o) const { return !(*this == o); }
};

} // namespace Tether
