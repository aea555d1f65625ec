// SPDX-License-Identifier: GPL-2.0-or-later
#include "appicon.h"

// Q_INIT_RESOURCE must be used outside any namespace.
static void initIconResources()
{
    Q_INIT_RESOURCE(icons);
}

namespace Tether {

QIcon appIcon()
{
    static const bool initialized = (initIconResources(), true);
    Q_UNUSED(initialized);
    return QIcon(QStringLiteral(":/icons/tether.svg"));
}

} // namespace Tether
