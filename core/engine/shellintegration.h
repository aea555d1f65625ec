// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include "ptyprocess.h"

#include <QString>

namespace Tether {

/**
 * Loads Tether's shell-integration scripts (resources/shell-integration:
 * tether.bash, zsh/.zshenv..., tether.fish) into the shells a session
 * starts, the way VS Code does: without touching the user's rc files, which
 * the scripts source themselves before installing their hooks (which emit
 * OSC 133/633/7 marks, ShellMarkScanner).
 *
 *  - bash: `bash --init-file DIR/tether.bash` (interactive, not login: bash
 *    ignores --init-file for a login shell); for a login shell
 *    TETHER_SHELL_LOGIN=1 tells the script to read the login files
 *    (/etc/profile, then the first of ~/.bash_profile, ~/.bash_login,
 *    ~/.profile) instead of ~/.bashrc.
 *  - zsh: ZDOTDIR=DIR/zsh, whose startup files source the user's own (from
 *    TETHER_USER_ZDOTDIR: the inherited ZDOTDIR, else $HOME) and put
 *    ZDOTDIR back.
 *  - fish: `--init-command 'source DIR/tether.fish'` (run after fish's own
 *    configuration).
 * Only a session whose command is one of those shells alone (no arguments,
 * e.g. the default login shell, or `tether new bash`) is changed; anything
 * else runs as given. The session's `command` still shows what was asked.
 */
namespace ShellIntegration {

/// Where the scripts are: $TETHER_SHELL_INTEGRATION_DIR when set (the
/// server's environment), else APPDIR/../share/tether/shell-integration
/// (an installed /usr/bin/tether: /usr/share/tether/shell-integration; the
/// build tree has the same layout, build/share/..., copied at configure
/// time), else /usr/share/tether/shell-integration. Empty when none of them
/// holds tether.bash.
QString scriptDir();

/// Rewrites `options` (already resolved: resolveSpawnOptions) to load the
/// integration from `dir` into the shell it starts. Returns false, changing
/// nothing, for a command that is not a bare bash, zsh or fish, or when
/// `dir` is empty.
bool apply(SpawnOptions *options, const QString &dir);

} // namespace ShellIntegration

} // namespace Tether
