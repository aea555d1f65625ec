// SPDX-License-Identifier: GPL-2.0-or-later
#include "commandline.h"

#include <QCommandLineParser>
#include <QCoreApplication>
#include <QRegularExpression>
#include <QStringList>

#ifndef TETHER_VERSION
#error "TETHER_VERSION must come from CMake's project(VERSION) (core/CMakeLists.txt)"
#endif

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

QString version()
{
    return QStringLiteral(TETHER_VERSION);
}

QString versionLine()
{
    return QStringLiteral("tether ") + version() + QLatin1Char('\n');
}

QString parseVersionLine(const QByteArray &text)
{
    // The first line only; a version is digits and dots with an optional
    // suffix such as "~rc1" or "+git20240501" (Debian versions).
    static const QRegularExpression re(QStringLiteral("^tether ([0-9][0-9A-Za-z.+~:-]*)\\s*$"));
    const QString first = QString::fromUtf8(text.left(256)).section(QLatin1Char('\n'), 0, 0);
    const QRegularExpressionMatch m = re.match(first);
    return m.hasMatch() ? m.captured(1) : QString();
}

} // namespace Tether
