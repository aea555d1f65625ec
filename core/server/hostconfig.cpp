// SPDX-License-Identifier: GPL-2.0-or-later
#include "hostconfig.h"

#include <QSettings>

namespace Tether {

HostConfig HostConfig::load(QSettings &s)
{
    HostConfig c;
    static_cast<SessionConfig &>(c) = SessionConfig::load(s);
    static_cast<ServerConfig &>(c) = ServerConfig::load(s);
    return c;
}

HostConfig HostConfig::load()
{
    QSettings s(QStringLiteral("Tether"), QStringLiteral("tether"));
    return load(s);
}

void HostConfig::save(QSettings &s) const
{
    SessionConfig::save(s);
    ServerConfig::save(s);
}

void HostConfig::save() const
{
    QSettings s(QStringLiteral("Tether"), QStringLiteral("tether"));
    save(s);
}

} // namespace Tether
