# SPDX-License-Identifier: GPL-2.0-or-later
# Tether shell integration for zsh. Tether starts zsh with ZDOTDIR pointing
# here; each of these startup files reads yours (from $TETHER_USER_ZDOTDIR,
# else $HOME) with ZDOTDIR set to your directory, then points it back here,
# until .zshrc (or .zlogin for a login shell) has run: from then on ZDOTDIR
# is yours again. Off: setting sessions/shellIntegration=false.
__tether_dir=$ZDOTDIR
ZDOTDIR=${TETHER_USER_ZDOTDIR:-$HOME}
[[ -r $ZDOTDIR/.zshenv ]] && . $ZDOTDIR/.zshenv
__tether_user_dir=$ZDOTDIR
ZDOTDIR=$__tether_dir
