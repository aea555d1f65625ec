// SPDX-License-Identifier: GPL-2.0-or-later
#include "shellintegration.h"

#include <QCoreApplication>
#include <QDir>
#include <QFileInfo>

namespace Tether::ShellIntegration {

namespace {
bool holdsScripts(const QString &dir)
{
    return !dir.isEmpty() && QFileInfo::exists(dir + QStringLiteral("/tether.bash"));
}
} // namespace

QString scriptDir()
{
    const QString env = qEnvironmentVariable("TETHER_SHELL_INTEGRATION_DIR");
    if (!env.isEmpty())
        return holdsScripts(env) ? QDir(env).absolutePath() : QString();
    if (QCoreApplication::instance()) {
        const QString besides = QDir::cleanPath(QCoreApplication::applicationDirPath()
                                                + QStringLiteral("/../share/tether/shell-integration"));
        if (holdsScripts(besides))
            return besides;
    }
    const QString system = QStringLiteral("/usr/share/tether/shell-integration");
    return holdsScripts(system) ? system : QString();
}

bool apply(SpawnOptions *options, const QString &dir)
{
    if (dir.isEmpty() || options->argv.size() != 1)
        return false;
    const QString shell = options->argv.first();
    const QString name = QFileInfo(shell).fileName();
    if (name == QLatin1String("bash")) {
        options->argv = QStringList{shell, QStringLiteral("--init-file"), dir + QStringLiteral("/tether.bash")};
        if (options->loginShell)
            options->extraEnv.append(QStringLiteral("TETHER_SHELL_LOGIN=1"));
        options->loginShell = false;
        return true;
    }
    if (name == QLatin1String("zsh")) {
        const QString userZdotdir = qEnvironmentVariable("ZDOTDIR");
        if (!userZdotdir.isEmpty())
            options->extraEnv.append(QStringLiteral("TETHER_USER_ZDOTDIR=") + userZdotdir);
        options->extraEnv.append(QStringLiteral("ZDOTDIR=") + dir + QStringLiteral("/zsh"));
        return true;
    }
    if (name == QLatin1String("fish")) {
        QString quoted = dir + QStringLiteral("/tether.fish");
        quoted.replace(QLatin1Char('\\'), QStringLiteral("\\\\")).replace(QLatin1Char('\''), QStringLiteral("\\'"));
        options->argv = QStringList{shell, QStringLiteral("--init-command"),
                                    QStringLiteral("source '") + quoted + QLatin1Char('\'')};
        return true;
    }
    return false;
}

} // namespace Tether::ShellIntegration
