// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include "serverconfig.h"
#include "sessionconfig.h"

class QSettings;

namespace Tether {

/**
 * The host's settings: the sessions' part (SessionConfig, engine) and the
 * server's (ServerConfig), in one settings file through QSettings
 * (organization "Tether", application "tether": ~/.config/Tether/tether.conf).
 * What composes the host uses it: `tether serve` (serveMain, with
 * ServeOptions), the settings API (SettingsApi, Server) and the restart in
 * place (the successor is started with the same options). The host owns the
 * settings: clients (the desktop app's Settings dialog) read and change them
 * through `GET`/`PATCH /api/settings`. The desktop app's own keys in the same
 * file (desktop/terminal, the terminal/ group, ui/autostart) are not here:
 * DesktopSettings (ui). Precedence: command-line option > settings file >
 * built-in default. The keys: SessionConfig (sessions/), ServerConfig
 * (server/).
 */
struct HostConfig : SessionConfig, ServerConfig {
    /// Reads every key of both parts (missing keys keep the defaults).
    static HostConfig load(QSettings &settings);
    /// Reads from the default QSettings location.
    static HostConfig load();
    /// Writes both parts (SessionConfig::save, ServerConfig::save).
    void save(QSettings &settings) const;
    void save() const;
};

} // namespace Tether
