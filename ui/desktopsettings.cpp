// SPDX-License-Identifier: GPL-2.0-or-later
#include "desktopsettings.h"
#include "logging.h"
#include "shellwords.h"

#include <QSettings>
#include <QStandardPaths>

namespace Tether {

DesktopSettings DesktopSettings::load(QSettings &s)
{
    DesktopSettings d;
    d.terminal = s.value(QStringLiteral("desktop/terminal"), d.terminal).toString();
    d.terminalColorScheme = s.value(QStringLiteral("terminal/colorScheme"), d.terminalColorScheme).toString();
    d.terminalFontFamily = s.value(QStringLiteral("terminal/fontFamily"), d.terminalFontFamily).toString();
    const int size = s.value(QStringLiteral("terminal/fontSize"), d.terminalFontSize).toInt();
    d.terminalFontSize = qBound(kMinTerminalFontSize, size, kMaxTerminalFontSize);
    if (d.terminalFontSize != size)
        qCWarning(lcUi) << "setting terminal/fontSize out of range:" << size << "using" << d.terminalFontSize;
    return d;
}

DesktopSettings DesktopSettings::load()
{
    QSettings s(QStringLiteral("Tether"), QStringLiteral("tether"));
    return load(s);
}

void DesktopSettings::save(QSettings &s) const
{
    s.setValue(QStringLiteral("desktop/terminal"), terminal);
    s.setValue(QStringLiteral("terminal/colorScheme"), terminalColorScheme);
    s.setValue(QStringLiteral("terminal/fontFamily"), terminalFontFamily);
    s.setValue(QStringLiteral("terminal/fontSize"), terminalFontSize);
}

QStringList DesktopSettings::terminalArgv() const
{
    if (!terminal.trimmed().isEmpty()) {
        const QStringList argv = ShellWords::split(terminal).value_or(QStringList());
        if (argv.isEmpty() || QStandardPaths::findExecutable(argv.first()).isEmpty())
            return {};
        return argv;
    }
    const QList<QStringList> candidates = {
        {QStringLiteral("x-terminal-emulator"), QStringLiteral("-e")},
        {QStringLiteral("xterm"), QStringLiteral("-e")},
        {QStringLiteral("gnome-terminal"), QStringLiteral("--")},
        {QStringLiteral("konsole"), QStringLiteral("-e")},
        {QStringLiteral("xfce4-terminal"), QStringLiteral("-x")},
    };
    for (const QStringList &c : candidates) {
        if (!QStandardPaths::findExecutable(c.first()).isEmpty())
            return c;
    }
    return {};
}

} // namespace Tether
