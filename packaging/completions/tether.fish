# SPDX-License-Identifier: GPL-2.0-or-later
# fish completion for tether(1), installed as
# /usr/share/fish/vendor_completions.d/tether.fish.
#
# Commands, their options with their descriptions (read from
# `tether COMMAND --help`, so they follow the binary) and the live sessions,
# ids with their titles as descriptions (`tether list --tsv`), for attach,
# kill, rename, share, wait and send.

set -g __tether_commands serve attach list new kill rename share key restart wait send

# The command given so far on the line ("" for none); an alias a tmux user
# types (`tether --help` names them) stands for its command. Aliases are
# completed as their commands, not offered as words of their own.
function __tether_command
    set -l tokens (commandline -opc)
    for t in $tokens[2..-1]
        switch $t
            case a at
                echo attach
                return
            case ls
                echo list
                return
        end
        if contains -- $t $__tether_commands
            echo $t
            return
        end
    end
end

# "NAME<TAB>DESCRIPTION" for each option of `tether $argv[1] --help`.
function __tether_options
    set -l bin (commandline -opc)[1]
    LC_ALL=C $bin $argv --help 2>/dev/null | awk '
        function flush() {
            if (spec == "") return
            gsub(/  +/, " ", text); sub(/^ /, "", text)
            sub(/ <[^>]*>$/, "", spec)
            n = split(spec, names, /, /)
            for (i = 1; i <= n; i++) print names[i] "\t" text
            spec = ""
        }
        /^Options:$/ { inside = 1; next }
        /^[^ ]/ || /^$/ { flush(); inside = 0 }
        inside && /^  -/ {
            flush()
            spec = substr($0, 3); text = ""; cut = index(spec, "  ")
            if (cut) { text = substr(spec, cut); spec = substr(spec, 1, cut - 1) }
            next
        }
        inside { text = text " " $0 }
        END { flush() }'
end

# "ID<TAB>TITLE (STATE)" for each live session, with the --url and --key
# given on the line.
function __tether_sessions
    set -l tokens (commandline -opc)
    set -l conn
    for i in (seq 2 (count $tokens))
        if contains -- $tokens[$i] --url --key --cacert; and test $i -lt (count $tokens)
            set -a conn $tokens[$i] $tokens[(math $i + 1)]
        end
    end
    # `tether list --tsv`: id, name, state, title a line; the title escaped
    # as `tether list` shows it (raw, U+202E turned the menu backwards).
    # A command substitution, not `read`: read would take the title's
    # backslashes as escapes.
    for line in (timeout 2 $tokens[1] list --tsv $conn 2>/dev/null)
        set -l f (string split \t -- $line)
        test -n "$f[4]"; or set f[4] '(no title)'
        printf '%s\t%s (%s)\n' $f[1] $f[4] $f[3]
    end
end

# Options of the command given (or the desktop app's), as arguments: fish
# offers them with their descriptions when the word starts with '-'.
function __tether_complete_options
    string match -q -- '-*' (commandline -ct); or return
    __tether_options (__tether_command)
end

complete -c tether -f
complete -c tether -n 'test -z (__tether_command)' -a serve -d 'the server alone, headless'
complete -c tether -n 'test -z (__tether_command)' -a attach -d 'attach this terminal to a session (like tmux attach)'
complete -c tether -n 'test -z (__tether_command)' -a list -d 'list sessions'
complete -c tether -n 'test -z (__tether_command)' -a new -d 'start a session'
complete -c tether -n 'test -z (__tether_command)' -a kill -d 'end a session'
complete -c tether -n 'test -z (__tether_command)' -a rename -d 'name a session, or rename it'
complete -c tether -n 'test -z (__tether_command)' -a share -d 'print a read-only link to a session, list or revoke links'
complete -c tether -n 'test -z (__tether_command)' -a key -d 'print the dashboard link with the access key'
complete -c tether -n 'test -z (__tether_command)' -a restart -d 'restart Tether in place, keeping every session'
complete -c tether -n 'test -z (__tether_command)' -a wait -d 'wait for the command running in a session, exit with its status'
complete -c tether -n 'test -z (__tether_command)' -a send -d 'type text into a session (like tmux send-keys)'
complete -c tether -a '(__tether_complete_options)'
complete -c tether -n 'contains -- (__tether_command) attach kill rename share wait send' -a '(__tether_sessions)'
complete -c tether -n '__fish_seen_subcommand_from new; and __fish_prev_arg_in --cwd' -x -a '(__fish_complete_directories)'
complete -c tether -n '__fish_seen_subcommand_from new; and contains -- -- (commandline -opc)' -F
