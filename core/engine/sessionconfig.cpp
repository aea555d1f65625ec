// SPDX-License-Identifier: GPL-2.0-or-later
#include "sessionconfig.h"
#include "logging.h"
#include "shellwords.h"

#include <QFile>
#include <QSettings>

namespace Tether {

qint64 clampedSetting(const char *key, qint64 value, qint64 lo, qint64 hi)
{
    if (value < lo || value > hi) {
        const qint64 c = qBound(lo, value, hi);
        qCWarning(lcRegistry) << "setting" << key << "out of range:" << value << "using" << c;
        return c;
    }
    return value;
}

int SessionConfig::maxSessionsLimit(const QString &ptyMaxFile)
{
    QFile f(ptyMaxFile);
    if (!f.open(QIODevice::ReadOnly))
        return kDefaultPtyMax;
    bool ok = false;
    const qlonglong v = f.read(32).trimmed().toLongLong(&ok);
    if (!ok || v < 1)
        return kDefaultPtyMax;
    return int(qMin(v, qlonglong(kPtyMaxCeiling)));
}

SessionConfig SessionConfig::load(QSettings &s)
{
    SessionConfig c;
    c.limits.ttlSeconds = int(clampedSetting("sessions/ttl", s.value(QStringLiteral("sessions/ttl"), c.limits.ttlSeconds).toInt(), 0, kMaxTtlSeconds));
    c.limits.exitedTtlSeconds = int(clampedSetting("sessions/exitedTtl", s.value(QStringLiteral("sessions/exitedTtl"), c.limits.exitedTtlSeconds).toInt(), 0, kMaxTtlSeconds));
    c.limits.bufferCapacity = qsizetype(clampedSetting("sessions/bufferSize",
        s.value(QStringLiteral("sessions/bufferSize"), qlonglong(c.limits.bufferCapacity)).toLongLong(),
        RingBuffer::kMinCapacity, RingBuffer::kMaxCapacity));
    c.limits.screen = s.value(QStringLiteral("sessions/screen"), c.limits.screen).toBool();
    c.limits.shellIntegration = s.value(QStringLiteral("sessions/shellIntegration"), c.limits.shellIntegration).toBool();
    c.limits.notifyAfterSeconds = int(clampedSetting("sessions/notifyAfter", s.value(QStringLiteral("sessions/notifyAfter"), c.limits.notifyAfterSeconds).toInt(), 0, 86400));
    c.limits.maxSessions = int(clampedSetting("sessions/maxSessions", s.value(QStringLiteral("sessions/maxSessions"), c.limits.maxSessions).toInt(), 1, maxSessionsLimit()));
    c.savedScrollbackLines = int(clampedSetting("sessions/savedScrollbackLines", s.value(QStringLiteral("sessions/savedScrollbackLines"), c.savedScrollbackLines).toInt(), 0,
                                         kMaxSavedScrollbackLines));
    c.command = s.value(QStringLiteral("sessions/command"), c.command).toString();
    QString why;
    if (!ShellWords::split(c.command, &why))
        qCWarning(lcRegistry).noquote() << QStringLiteral("setting sessions/command cannot be split (%1): %2; "
                                                          "new sessions run the login shell").arg(why, c.command);
    return c;
}

void SessionConfig::save(QSettings &s) const
{
    s.setValue(QStringLiteral("sessions/ttl"), limits.ttlSeconds);
    s.setValue(QStringLiteral("sessions/exitedTtl"), limits.exitedTtlSeconds);
    s.setValue(QStringLiteral("sessions/bufferSize"), qlonglong(limits.bufferCapacity));
    s.setValue(QStringLiteral("sessions/maxSessions"), limits.maxSessions);
    s.setValue(QStringLiteral("sessions/screen"), limits.screen);
    s.setValue(QStringLiteral("sessions/shellIntegration"), limits.shellIntegration);
    s.setValue(QStringLiteral("sessions/notifyAfter"), limits.notifyAfterSeconds);
    s.setValue(QStringLiteral("sessions/savedScrollbackLines"), savedScrollbackLines);
    s.setValue(QStringLiteral("sessions/command"), command);
}

QStringList SessionConfig::commandArgv() const
{
    return ShellWords::split(command).value_or(QStringList());
}

} // namespace Tether
