# SPDX-License-Identifier: GPL-2.0-or-later
# bash completion for tether(1), installed as
# /usr/share/bash-completion/completions/tether.
#
# Commands (and their aliases), their options and the live sessions. The options are read
# from `tether COMMAND --help` (once per shell and command), so they follow the
# binary; the sessions' ids and names come from `tether list --tsv` (with the --url and
# --key typed on the line, if any), for attach, kill, rename, share, wait and send: `tether attach ro<Tab>`
# gives `roll`, a name with a space or a quote comes quoted (`my\ build`). Works without the
# bash-completion package's helpers.

_tether_commands="serve attach list new kill rename share key restart wait send"
# Aliases a tmux user types (`tether --help` names them): completed as their
# commands once typed, not offered as words of their own.
declare -gA _tether_aliases=([a]=attach [at]=attach [ls]=list)

# The options of `tether $2 --help` ($2 empty: the desktop app), one a line,
# "NAME" or "NAME=" for one that takes a value. $1 is the binary.
_tether_options() {
    local key="$1 $2"
    declare -gA _tether_options_cache
    if [[ -z ${_tether_options_cache[$key]+set} ]]; then
        _tether_options_cache[$key]=$(LC_ALL=C "$1" $2 --help 2>/dev/null | awk '
            /^Options:$/ { inside = 1; next }
            /^[^ ]/ || /^$/ { inside = 0 }
            inside && /^  -/ {
                spec = substr($0, 3); cut = index(spec, "  ")
                if (cut) spec = substr(spec, 1, cut - 1)
                value = spec ~ / </; sub(/ <[^>]*>$/, "", spec)
                n = split(spec, names, /, /)
                for (i = 1; i <= n; i++) print names[i] (value ? "=" : "")
            }')
    fi
    printf '%s\n' "${_tether_options_cache[$key]}"
}

# The ids and names of the live sessions, one a line (`tether list --tsv`:
# id, name, state, title; neither an id nor a name holds a tab or a line
# break). $1 is the binary, the rest --url/--key/--cacert words.
_tether_session_words() {
    local tether=$1
    shift
    timeout 2 "$tether" list --tsv "$@" 2>/dev/null | cut -f1,2 | tr '\t' '\n' | sed '/^$/d'
}

_tether() {
    local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]}
    local tether=${COMP_WORDS[0]} cmd="" w i dashdash=-1 positional=0
    [[ $tether == "~/"* ]] && tether=$HOME/${tether#"~/"}
    local -a conn=()
    COMPREPLY=()

    # Which command, where "--" is, how many arguments, --url/--key given.
    local valued=" $(_tether_options "$tether" "" | sed -n 's/=$//p' | tr '\n' ' ') "
    for ((i = 1; i < COMP_CWORD; i++)); do
        w=${COMP_WORDS[i]}
        if ((dashdash >= 0)); then
            continue
        elif [[ $w == -- ]]; then
            dashdash=$i
        elif [[ $valued == *" $w "* ]]; then
            [[ $w == --url || $w == --key || $w == --cacert ]] && conn+=("$w" "${COMP_WORDS[i+1]}")
            ((i++))
        elif [[ $w == -* && ( -z $cmd || ( $cmd != attach && $cmd != kill && $cmd != rename && $cmd != share && $cmd != wait && $cmd != send ) ) ]]; then
            :
        elif [[ -z $cmd ]]; then
            cmd=${_tether_aliases[$w]:-$w}
            valued=" $(_tether_options "$tether" "$cmd" | sed -n 's/=$//p' | tr '\n' ' ') "
        elif [[ $w == -* && $(_tether_options "$tether" "$cmd") == *"$w"* ]]; then
            :
        else
            ((positional++))
        fi
    done

    # After "--" (tether new -- CMD ARGS): a command, then its arguments.
    if ((dashdash >= 0)); then
        if ((COMP_CWORD == dashdash + 1)); then
            mapfile -t COMPREPLY < <(compgen -c -- "$cur")
        else
            mapfile -t COMPREPLY < <(compgen -f -- "$cur")
        fi
        return 0
    fi

    # The value of an option.
    if [[ $valued == *" $prev "* ]]; then
        case $prev in
            --cwd) mapfile -t COMPREPLY < <(compgen -d -- "$cur") ;;
            --command) mapfile -t COMPREPLY < <(compgen -c -- "$cur") ;;
            --detach-key) mapfile -t COMPREPLY < <(compgen -W '^\\ none' -- "$cur") ;;
            --tls-cert|--tls-key|--cacert) mapfile -t COMPREPLY < <(compgen -f -- "$cur") ;;
        esac
        return 0
    fi

    local words=""
    [[ $cur == -* ]] && words=$(_tether_options "$tether" "$cmd" | sed 's/=$//')
    if [[ -z $cmd ]]; then
        words+=" $_tether_commands"
    elif [[ ($cmd == attach || $cmd == kill || $cmd == rename || $cmd == share || $cmd == wait || $cmd == send) && $positional -eq 0 ]]; then
        # Ids and names, shell-quoted as they must be typed (printf %q),
        # matched against the word as typed so far.
        local s q
        while IFS= read -r s; do
            q=$(printf '%q' "$s")
            [[ $q == "$cur"* ]] && COMPREPLY+=("$q")
        done < <(_tether_session_words "$tether" "${conn[@]}")
    fi
    [[ -n $words ]] && mapfile -t -O "${#COMPREPLY[@]}" COMPREPLY < <(compgen -W "$words" -- "$cur")
    return 0
}

complete -F _tether tether
