# SPDX-License-Identifier: GPL-2.0-or-later
# Tether shell integration for zsh (see .zshenv): your .zprofile.
ZDOTDIR=$__tether_user_dir
[[ -r $ZDOTDIR/.zprofile ]] && . $ZDOTDIR/.zprofile
__tether_user_dir=$ZDOTDIR
ZDOTDIR=$__tether_dir
