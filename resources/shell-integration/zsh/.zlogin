# SPDX-License-Identifier: GPL-2.0-or-later
# Tether shell integration for zsh (see .zshenv): your .zlogin, and ZDOTDIR
# is yours from here on.
ZDOTDIR=$__tether_user_dir
[[ -r $ZDOTDIR/.zlogin ]] && . $ZDOTDIR/.zlogin
if [[ -z $TETHER_USER_ZDOTDIR && $ZDOTDIR == $HOME ]]; then unset ZDOTDIR; fi
unset TETHER_USER_ZDOTDIR __tether_dir __tether_user_dir
