# SPDX-License-Identifier: GPL-2.0-or-later
# Tether shell integration for zsh (see .zshenv): your .zshrc, then the hooks
# that mark the prompt and each command (OSC 133 / 633 / 7). Your PS1 and
# precmd/preexec hooks are kept.
ZDOTDIR=$__tether_user_dir
[[ -r $ZDOTDIR/.zshrc ]] && . $ZDOTDIR/.zshrc
__tether_user_dir=$ZDOTDIR
if [[ -o login ]]; then
    ZDOTDIR=$__tether_dir # .zlogin is next
else
    if [[ -z $TETHER_USER_ZDOTDIR && $ZDOTDIR == $HOME ]]; then unset ZDOTDIR; fi
    unset TETHER_USER_ZDOTDIR __tether_dir __tether_user_dir
fi

if [[ -o interactive && -z ${__tether_hooked-} ]]; then
    __tether_hooked=1
    __tether_ran=
    __tether_precmd() {
        local s=$?
        [[ -n $__tether_ran ]] && printf '\e]133;D;%s\a' "$s"
        __tether_ran=
        printf '\e]7;file://%s%s\a' "${HOST-}" "${PWD//\%/%25}"
        return $s
    }
    __tether_prompt() {
        if [[ $PS1 != *'133;B'* ]]; then
            PS1=$'%{\e]133;A\a%}'"$PS1"$'%{\e]133;B\a%}'
        fi
    }
    __tether_preexec() {
        __tether_ran=1
        local s=$1
        s=${s//\\/\\\\}
        s=${s//;/\\x3b}
        s=${s//$'\n'/\\x0a}
        s=${s//$'\r'/\\x0d}
        s=${s//$'\a'/\\x07}
        s=${s//$'\e'/\\x1b}
        printf '\e]633;E;%s\a\e]133;C\a' "$s"
    }
    precmd_functions=(__tether_precmd $precmd_functions __tether_prompt)
    preexec_functions=($preexec_functions __tether_preexec)
fi
