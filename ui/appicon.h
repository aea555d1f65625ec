// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <QIcon>

namespace Tether {

/// Tether's icon (resources/icons/tether.svg, compiled into tether_ui).
/// Registers the icon resources first: a resource file in a static library is
/// not linked in unless something references it (Q_INIT_RESOURCE), so windows
/// built before any explicit init would otherwise get an empty icon.
QIcon appIcon();

} // namespace Tether
