// SPDX-License-Identifier: GPL-2.0-or-later
#include "serverconfig.h"
#include "sessionconfig.h"

#include <QFileInfo>
#include <QSettings>

namespace Tether {

ServerConfig ServerConfig::load(QSettings &s)
{
    ServerConfig c;
    c.bind = s.value(QStringLiteral("server/bind"), c.bind).toString();
    c.port = quint16(clampedSetting("server/port", s.value(QStringLiteral("server/port"), int(c.port)).toInt(), 0, 65535));
    c.pingIntervalSec = int(clampedSetting("server/pingInterval", s.value(QStringLiteral("server/pingInterval"), c.pingIntervalSec).toInt(), 1, 3600));
    c.pingTimeoutSec = int(clampedSetting("server/pingTimeout", s.value(QStringLiteral("server/pingTimeout"), c.pingTimeoutSec).toInt(), 1, 3600));
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

void ServerConfig::save(QSettings &s) const
{
    s.setValue(QStringLiteral("server/bind"), bind);
    s.setValue(QStringLiteral("server/port"), int(port));
    s.setValue(QStringLiteral("server/pingInterval"), pingIntervalSec);
    s.setValue(QStringLiteral("server/pingTimeout"), pingTimeoutSec);
}

} // namespace Tether
