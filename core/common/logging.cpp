// SPDX-License-Identifier: GPL-2.0-or-later
#include "logging.h"

Q_LOGGING_CATEGORY(lcPty, "tether.pty", QtInfoMsg)
Q_LOGGING_CATEGORY(lcSession, "tether.session", QtInfoMsg)
Q_LOGGING_CATEGORY(lcRegistry, "tether.registry", QtInfoMsg)
Q_LOGGING_CATEGORY(lcServer, "tether.server", QtInfoMsg)
Q_LOGGING_CATEGORY(lcUi, "tether.ui", QtInfoMsg)
