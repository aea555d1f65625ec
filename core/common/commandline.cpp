// SPDX-License-Identifier: GPL-2.0-or-later
#include "commandline.h"

#include <QCommandLineParser>
#include <QCoreApplication>
#include <QStringList>

namespace Tether {

QString commandHelp(const QCommandLineParser &parser, const QString &command)
{
    QString text = parser.helpText();
    const QStringList argv = QCoreApplication::arguments();
    const QString qtUsage = QStringLiteral("Usage: ") + (argv.isEmpty() ? QString() : argv.constFirst());
    if (!argv.isEmpty() && text.startsWith(qtUsage))
        text.replace(0, qtUsage.size(), QStringLiteral("Usage: tether ") + command);
    return text;
}

bool helpRequested(const QCommandLineParser &parser)
{
    return parser.isSet(QStringLiteral("help")) || parser.isSet(QStringLiteral("help-all"));
}

} // namespace Tether
