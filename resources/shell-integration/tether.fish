# SPDX-License-Identifier: GPL-2.0-or-later
# Tether shell integration for fish. Tether starts fish with
# `--init-command 'source THIS'`, which fish runs after your own
# configuration: these event handlers mark the prompt and each command
# (OSC 133 / 633 / 7). Off: setting sessions/shellIntegration=false.
if status is-interactive; and not set -q __tether_hooked
    set -g __tether_hooked 1
    function __tether_postexec --on-event fish_postexec
        printf '\e]133;D;%s\a' $status
    end
    function __tether_prompt_start --on-event fish_prompt
        printf '\e]7;file://%s%s\a' $hostname (string replace -a '%' '%25' -- $PWD)
        printf '\e]133;A\a'
    end
    function __tether_preexec --on-event fish_preexec
        set -l s (string join \n -- $argv[1] | string replace -a '\\' '\\\\' | string replace -a ';' '\\x3b' | string replace -a \r '\\x0d' | string replace -a \e '\\x1b' | string replace -a \a '\\x07')
        printf '\e]633;E;%s\a\e]133;C\a' (string join '\\x0a' -- $s)
    end
end
