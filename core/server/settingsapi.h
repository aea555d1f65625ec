// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include "hostconfig.h"

#include <QByteArray>
#include <QJsonObject>
#include <QString>

namespace Tether {

/**
 * The settings of `GET /api/settings` and `PATCH /api/settings`
 * (docs/protocol.md section 4, "Settings"): the host owns the settings file
 * and applies what can change live (issue 23: the desktop app's Settings
 * dialog is a client of them). Pure functions of a HostConfig; Server reads and
 * writes the file and applies the result.
 */
namespace SettingsApi {

/// The JSON object of the settings in `c` (every field of the PATCH body,
/// plus "max_sessions_limit", SessionConfig::maxSessionsLimit()).
QJsonObject toJson(const HostConfig &c);

/**
 * Applies the PATCH body `body` to `*c`: every field named is checked
 * first and nothing is changed when one is wrong (false, *error the text of
 * the 400: "invalid JSON: ...", "body must be a JSON object", "nothing to
 * change: the body has no setting", "ttl must be an integer 0..31536000", ...).
 * Unknown fields are ignored. *changed (if given) gets the names of the
 * fields whose value differs from before.
 */
bool applyPatch(const QByteArray &body, HostConfig *c, QString *error, QStringList *changed = nullptr);

} // namespace SettingsApi
} // namespace Tether
