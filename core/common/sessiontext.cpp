// SPDX-License-Identifier: GPL-2.0-or-later
#include "sessiontext.h"
#include "protocol.h"

#include <QJsonValue>

namespace Tether::SessionText {

QString duration(qint64 seconds)
{
    const qint64 s = qMax<qint64>(0, seconds);
    const auto two = [](qint64 big, const char *bigUnit, qint64 small, const char *smallUnit) {
        const QString first = QString::number(big) + QLatin1String(bigUnit);
        return small ? first + QLatin1Char(' ') + QString::number(small) + QLatin1String(smallUnit) : first;
    };
    if (s < 60)
        return QString::number(s) + QLatin1Char('s');
    if (s < 3600)
        return QString::number(s / 60) + QLatin1Char('m');
    if (s < 86400)
        return two(s / 3600, "h", (s % 3600) / 60, "m");
    return two(s / 86400, "d", (s % 86400) / 3600, "h");
}

QString bytes(qint64 bytes)
{
    const qint64 b = qMax<qint64>(0, bytes);
    if (b < 1024)
        return QString::number(b) + QLatin1String(" B");
    static const char *const units[] = {" KiB", " MiB", " GiB"};
    double v = double(b) / 1024.0;
    int u = 0;
    while (v >= 1024.0 && u < 2) {
        v /= 1024.0;
        ++u;
    }
    const bool whole = v == double(qint64(v));
    const QString n = v >= 10.0 || whole ? QString::number(qint64(v + 0.5)) : QString::number(v, 'f', 1);
    return n + QLatin1String(units[u]);
}

QString exitStatus(int code, int signal)
{
    // The wording is the protocol's (Protocol::exitStatusText), which the
    // server's exit line and notifications use.
    if (signal > 0)
        return Protocol::exitStatusText(ExitStatus{true, 0, signal});
    if (code >= 0)
        return Protocol::exitStatusText(ExitStatus{false, code, 0});
    return QStringLiteral("exited");
}

QString state(const QJsonObject &s)
{
    const QString st = s.value(QStringLiteral("state")).toString();
    if (st == QLatin1String("ended"))
        return QStringLiteral("ended by ") + s.value(QStringLiteral("ended")).toString();
    if (st != QLatin1String("exited"))
        return QStringLiteral("running");
    const QJsonValue sig = s.value(QStringLiteral("exit_signal"));
    if (sig.isDouble() && sig.toInt() > 0)
        return QStringLiteral("killed by signal %1").arg(sig.toInt());
    const QJsonValue code = s.value(QStringLiteral("exit_code"));
    if (code.isDouble())
        return QStringLiteral("exited %1").arg(code.toInt());
    return QStringLiteral("exited");
}

} // namespace Tether::SessionText
