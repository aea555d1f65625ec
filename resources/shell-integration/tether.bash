# SPDX-License-Identifier: GPL-2.0-or-later
# Tether shell integration for bash (docs/protocol.md, "Commands and
# notifications"). Tether starts bash as `bash --init-file THIS` (no edit of
# your rc files): this file reads your usual startup files, then adds hooks
# that mark the prompt and each command with OSC 133 / 633 / 7 sequences.
# Your PS1, PS0 and PROMPT_COMMAND are kept (wrapped, not replaced).
# Off: setting sessions/shellIntegration=false.

# Startup files, as bash would have read them.
if [ -n "${TETHER_SHELL_LOGIN-}" ]; then
    unset TETHER_SHELL_LOGIN
    [ -r /etc/profile ] && . /etc/profile
    if [ -r ~/.bash_profile ]; then
        . ~/.bash_profile
    elif [ -r ~/.bash_login ]; then
        . ~/.bash_login
    elif [ -r ~/.profile ]; then
        . ~/.profile
    fi
else
    [ -r ~/.bashrc ] && . ~/.bashrc
fi

# Only in an interactive bash with PS0 (bash >= 4.4), and once.
if [[ $- == *i* && -z ${__tether_hooked-} && ${BASH_VERSINFO[0]:-0}${BASH_VERSINFO[1]:-0} -ge 44 ]]; then
__tether_hooked=1
__tether_first=1
__tether_histno=

# The command line for OSC 633;E, VS Code's escaping: \ as \\, ; and
# control characters as \xNN.
__tether_escape() {
    local s=$1
    s=${s//\\/\\\\}
    s=${s//;/\\x3b}
    s=${s//$'\n'/\\x0a}
    s=${s//$'\r'/\\x0d}
    s=${s//$'\a'/\\x07}
    s=${s//$'\e'/\\x1b}
    printf '%s' "$s"
}

# Expanded in PS0 (in a subshell, after the line was read, before it runs):
# the command line (when history recorded it) and the output-start mark.
__tether_preexec() {
    local h line=
    h=$(HISTTIMEFORMAT= builtin history 1)
    if [[ $h =~ ^\ *([0-9]+)\*?\ \ (.*)$ ]] && [[ ${BASH_REMATCH[1]} != "$__tether_histno" ]]; then
        line=${BASH_REMATCH[2]}
    fi
    printf '\e]633;E;%s\a\e]133;C\a' "$(__tether_escape "$line")"
}

# First in PROMPT_COMMAND: the status of the command that ended, then the
# directory. Returns that status, so your PROMPT_COMMAND sees the same $?.
__tether_precmd() {
    local status=$?
    if [[ -z $__tether_first ]]; then
        printf '\e]133;D;%s\a' "$status"
    fi
    __tether_first=
    local h
    h=$(HISTTIMEFORMAT= builtin history 1)
    [[ $h =~ ^\ *([0-9]+) ]] && __tether_histno=${BASH_REMATCH[1]}
    local d=${PWD//%/%25}
    printf '\e]7;file://%s%s\a' "${HOSTNAME-}" "$d"
    return $status
}

# Last in PROMPT_COMMAND: wrap PS1 (again, if your PROMPT_COMMAND set a new
# one) in the prompt marks, and put the output mark in front of PS0.
__tether_prompt() {
    local status=$?
    if [[ $PS1 != *'133;B'* ]]; then
        PS1='\[\e]133;A\a\]'"$PS1"'\[\e]133;B\a\]'
    fi
    if [[ ${PS0-} != *'__tether_preexec'* ]]; then
        PS0='$(__tether_preexec)'"${PS0-}"
    fi
    return $status
}

__tether_pc=${PROMPT_COMMAND-}
while [[ $__tether_pc == *[\;\ $'\n'] ]]; do __tether_pc=${__tether_pc%?}; done
PROMPT_COMMAND="__tether_precmd${__tether_pc:+; $__tether_pc}; __tether_prompt"
unset __tether_pc
fi
