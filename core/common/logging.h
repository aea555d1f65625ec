// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <QLoggingCategory>

// One category per module; enable with QT_LOGGING_RULES="tether.*.debug=true".
// Input bytes, keys and cookies are never logged.
Q_DECLARE_LOGGING_CATEGORY(lcPty)      // "tether.pty"
Q_DECLARE_LOGGING_CATEGORY(lcSession)  // "tether.session"
Q_DECLARE_LOGGING_CATEGORY(lcRegistry) // "tether.registry"
Q_DECLARE_LOGGING_CATEGORY(lcServer)   // "tether.server"
Q_DECLARE_LOGGING_CATEGORY(lcUi)       // "tether.ui"
