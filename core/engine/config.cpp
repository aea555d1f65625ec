// SPDX-License-Identifier: GPL-2.0-or-later
#include "config.h"
#include "logging.h"
#include "shellwords.h"

#include <QFile>
#include <QFileInfo>
#include <QSettings>

namespace Tether {

namespace {
template<typename T>
T clamped(const char *key, T value, T lo, T hi)
{
    if (value < lo || value > hi) {
        const T c = qBound(lo, value, hi);
        qCWarning(lcRegistry) << "setting" << key << "out of range:" << value << "using" << c;
        return c;
    }
    return value;
}
} // namespace

int Config::maxSessionsLimit(const QString &ptyMaxFile)
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

Config Config::load(QSettings &s)
{
    Config c;
    c.limits.ttlSeconds = clamped("sessions/ttl", s.value(QStringLiteral("sessions/ttl"), c.limits.ttlSeconds).toInt(), 0, kMaxTtlSeconds);
    c.limits.exitedTtlSeconds = clamped("sessions/exitedTtl", s.value(QStringLiteral("sessions/exitedTtl"), c.limits.exitedTtlSeconds).toInt(), 0, kMaxTtlSeconds);
    c.limits.bufferCapacity = clamped<qsizetype>("sessions/bufferSize",
        s.value(QStringLiteral("sessions/bufferSize"), qlonglong(c.limits.bufferCapacity)).toLongLong(),
        RingBuffer::kMinCapacity, RingBuffer::kMaxCapacity);
    c.limits.screen = s.value(QStringLiteral("sessions/screen"), c.limits.screen).toBool();
    c.limits.shellIntegration = s.value(QStringLiteral("sessions/shellIntegration"), c.limits.shellIntegration).toBool();
    c.limits.notifyAfterSeconds = clamped("sessions/notifyAfter",
        s.value(QStringLiteral("sessions/notifyAfter"), c.limits.notifyAfterSeconds).toInt(), 0, 86400);
    c.limits.maxSessions = clamped("sessions/maxSessions", s.value(QStringLiteral("sessions/maxSessions"), c.limits.maxSessions).toInt(), 1, maxSessionsLimit());
    c.savedScrollbackLines = clamped("sessions/savedScrollbackLines",
        s.value(QStringLiteral("sessions/savedScrollbackLines"), c.savedScrollbackLines).toInt(), 0,
        kMaxSavedScrollbackLines);
    c.command = s.value(QStringLiteral("sessions/command"), c.command).toString();
    QString why;
    if (!ShellWords::split(c.command, &why))
        qCWarning(lcRegistry).noquote() << QStringLiteral("setting sessions/command cannot be split (%1): %2; "
                                                          "new sessions run the login shell").arg(why, c.command);
    c.bind = s.value(QStringLiteral("server/bind"), c.bind).toString();
    c.port = quint16(clamped("server/port", s.value(QStringLiteral("server/port"), int(c.port)).toInt(), 0, 65535));
    c.pingIntervalSec = clamped("server/pingInterval", s.value(QStringLiteral("server/pingInterval"), c.pingIntervalSec).toInt(), 1, 3600);
    c.pingTimeoutSec = clamped("server/pingTimeout", s.value(QStringLiteral("server/pingTimeout"), c.pingTimeoutSec).toInt(), 1, 3600);
    c.tlsCert = s.value(QStringLiteral("server/tlsCert"), c.tlsCert).toString();
    c.tlsKey = s.value(QStringLiteral("server/tlsKey"), c.tlsKey).toString();
    // QSettings reads "a, b" in the file as a list, a single name as a string.
    for (const QString &h : s.value(QStringLiteral("server/allowHosts")).toStringList())
        if (!h.trimmed().isEmpty())
            c.allowHosts.append(h.trimmed());
    if (!s.fileName().isEmpty())
        c.accessKeyFile = QFileInfo(s.fileName()).absolutePath() + QStringLiteral("/access-key");
    return c;
}

Config Config::load()
{
    QSettings s(QStringLiteral("Tether"), QStringLiteral("tether"));
    return load(s);
}

void Config::save(QSettings &s) const
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
    s.setValue(QStringLiteral("server/bind"), bind);
    s.setValue(QStringLiteral("server/port"), int(port));
    s.setValue(QStringLiteral("server/pingInterval"), pingIntervalSec);
    s.setValue(QStringLiteral("server/pingTimeout"), pingTimeoutSec);
}

void Config::save() const
{
    QSettings s(QStringLiteral("Tether"), QStringLiteral("tether"));
    save(s);
}

QStringList Config::commandArgv() const
{
    return ShellWords::split(command).value_or(QStringList());
}

} // namespace Tether
