#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# packaging/tst_completion: the shell completion in packaging/completions
# against a real `tether serve` (port 0, its own runtime directory, started
# with setsid) holding two sessions, one with a title:
#   bash: the commands are the ones the binary names; each command's options
#         are the ones its --help lists, and an alias `tether --help` names
#         (ls, a, at) completes as its command; attach and kill complete the live
#         session ids and names (a prefix narrows them; a name with a space
#         comes quoted; none after the id); --cwd
#         completes directories, `new --` a command; with the server gone, no ids and no wait.
#   zsh:  attach offers the ids with their titles as descriptions (through a
#         real interactive zsh, tests/packaging/zsh-complete.zsh); after
#         `new --` a command.
#   fish: the same through `complete -C`.
# Usage: tst_completion.sh TETHER_BINARY SOURCE_DIR
set -uo pipefail
bin=$1
src=$2
completions=$(cd "$src/packaging/completions" && pwd)
source "$(dirname "$0")/lib.sh"
tmp=$(mktemp -d)
server=""
cleanup() {
  [ -z "$server" ] || kill "$server" 2>/dev/null
  rm -rf "$tmp"
}
trap cleanup EXIT
export XDG_RUNTIME_DIR="$tmp/run" XDG_CONFIG_HOME="$tmp/config" HOME="$tmp/home" LC_ALL=C.UTF-8
unset DISPLAY WAYLAND_DISPLAY QT_QPA_PLATFORM TETHER_URL TETHER_KEY
mkdir -m 0700 -p "$XDG_RUNTIME_DIR" "$HOME" "$tmp/bin" "$tmp/dirs/alpha" "$tmp/dirs/beta"
# The completions run `tether` as typed: put this build's first on PATH.
ln -s "$(readlink -f "$bin")" "$tmp/bin/tether"
export PATH="$tmp/bin:$PATH"
bin=$tmp/bin/tether

setsid tether serve --port 0 >"$tmp/serve.log" 2>&1 &
server=$!
for _ in $(seq 100); do
  grep -q '^Tether is serving' "$tmp/serve.log" && break
  sleep 0.1
done
grep -q '^Tether is serving' "$tmp/serve.log" || { cat "$tmp/serve.log"; echo "FAIL: no server"; exit 1; }
titled=$(tether new -- sh -c 'printf "\033]2;%s\007" "build: \"all\""; exec sleep 600')
plain_id=$(tether new -- sleep 600)
# A title a program chose to mislead: U+202E (right-to-left override) and a
# DEL. The menus show it escaped as `tether list` does, never raw.
bidi_id=$(tether new -- sh -c 'printf "\033]2;rev\342\200\256txt\177x\007"; exec sleep 600')
# The title reaches the server with the session's first output.
for _ in $(seq 50); do
  tether list --json | grep -q 'build: \\"all\\"' && break
  sleep 0.1
done
for _ in $(seq 50); do
  tether list --json | grep -q 'rev.*txt' && break
  sleep 0.1
done
ids=$(printf '%s\n' "$titled" "$plain_id" "$bidi_id" | sort)
echo "sessions: $titled (titled), $plain_id"

# --- bash ------------------------------------------------------------------------
# complete LINE...: the words of a command line, the last one being completed.
bash_complete() {
  bash --norc --noprofile -c '
    source "$1"; shift
    COMP_WORDS=("$@"); COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
    COMP_LINE="$*"; COMP_POINT=${#COMP_LINE}
    _tether
    printf "%s\n" "${COMPREPLY[@]}"' bash "$completions/tether.bash" "$@" | sed '/^$/d' | sort
}

got=$(bash_complete tether "")
want=$(binary_commands | sort)
[ "$got" = "$want" ] && pass "bash: tether <TAB> gives the binary's commands" \
  || { fail "bash: commands differ (< binary, > completion)"; diff <(echo "$want") <(echo "$got"); }

for cmd in "" $(binary_commands); do
  got=$(bash_complete tether $cmd -)
  want=$(help_options "$cmd")
  [ "$got" = "$want" ] && pass "bash: tether $cmd -<TAB> gives the $(wc -l <<<"$want") options of --help" \
    || { fail "bash: tether $cmd - differs (< --help, > completion)"; diff <(echo "$want") <(echo "$got"); }
done

got=$(bash_complete tether attach "")
[ "$got" = "$ids" ] && pass "bash: tether attach <TAB> gives the live session ids" \
  || fail "bash: tether attach gives '$got', want '$ids'"

# The aliases `tether --help` names complete as their commands.
mapfile -t aliases < <(binary_aliases)
[ "${#aliases[@]}" -ge 3 ] && pass "the binary names ${#aliases[@]} aliases: ${aliases[*]}" \
  || fail "could not read the aliases from tether --help: ${aliases[*]}"
for pair in "${aliases[@]}"; do
  read -r alias cmd <<<"$pair"
  got=$(bash_complete tether "$alias" -)
  want=$(help_options "$cmd")
  [ "$got" = "$want" ] && pass "bash: tether $alias -<TAB> gives the options of $cmd" \
    || { fail "bash: tether $alias - differs from $cmd (< --help, > completion)"; diff <(echo "$want") <(echo "$got"); }
  if [ "$cmd" = attach ]; then
    got=$(bash_complete tether "$alias" "")
    [ "$got" = "$ids" ] && pass "bash: tether $alias <TAB> gives the live session ids" \
      || fail "bash: tether $alias gives '$got', want '$ids'"
  fi
done
# Names too (issue 29: only the 22-character ids were offered), quoted as they
# must be typed; a name is never taken for the foreground process's "name".
roll_id=$(tether new -n roll -- sleep 600)
spaced_id=$(tether new -n "my build" -- sleep 600)
# An id may begin with "ro" by chance: the ids are left out of what is compared.
not_an_id() { grep -vxF -f <(printf '%s\n' $ids "$roll_id" "$spaced_id") || true; }
got=$(bash_complete tether attach ro | not_an_id)
[ "$got" = roll ] && pass "bash: tether attach ro<TAB> gives the name roll" \
  || fail "bash: tether attach ro gives '$got', want 'roll'"
got=$(bash_complete tether kill my | not_an_id)
[ "$got" = 'my\ build' ] && pass "bash: tether kill my<TAB> gives 'my\\ build'" \
  || fail "bash: tether kill my gives '$got', want 'my\\ build'"
got=$(bash_complete tether attach sle | not_an_id)
[ -z "$got" ] && pass "bash: the foreground program (sleep) is not offered as a name" \
  || fail "bash: tether attach sle gives '$got'"
got=$(bash_complete tether attach "")
want=$(printf '%s\n' $ids "$roll_id" "$spaced_id" roll 'my\ build' | sort)
[ "$got" = "$want" ] && pass "bash: tether attach <TAB> gives the ids and the names" \
  || { fail "bash: tether attach <TAB> differs (< want, > got)"; diff <(echo "$want") <(echo "$got"); }
tether kill "$roll_id" >/dev/null && tether kill "$spaced_id" >/dev/null

got=$(bash_complete tether kill "${plain_id:0:3}")
[ "$got" = "$plain_id" ] && pass "bash: tether kill ${plain_id:0:3}<TAB> gives $plain_id" \
  || fail "bash: tether kill ${plain_id:0:3} gives '$got'"
got=$(bash_complete tether attach --watch "")
[ "$got" = "$ids" ] && pass "bash: ids after an option" || fail "bash: attach --watch gives '$got'"
got=$(bash_complete tether kill "$titled" "")
[ -z "$got" ] && pass "bash: nothing after the id" || fail "bash: kill ID <TAB> gives '$got'"
got=$(bash_complete tether list "")
[ -z "$got" ] && pass "bash: list takes no id" || fail "bash: list <TAB> gives '$got'"
got=$(cd "$tmp/dirs" && bash_complete tether new --cwd "")
[ "$got" = "$(printf 'alpha\nbeta')" ] && pass "bash: --cwd completes directories" \
  || fail "bash: --cwd gives '$got'"
got=$(bash_complete tether new --cwd /tmp -- tru)
grep -qx true <<<"$got" && pass "bash: after new -- a command" || fail "bash: new -- tru gives '$got'"

# --- zsh and fish -------------------------------------------------------------------
title_line() { grep -F "$titled" | grep -F 'build: "all"'; }
# The misleading title, escaped (rev\u202etxt\x7fx), on its session's line,
# and no raw U+202E anywhere.
bidi_escaped() { grep -F "$bidi_id" <<<"$1" | grep -qF 'rev\u202etxt\x7fx' && ! grep -q $'\u202e' <<<"$1"; }
if command -v zsh >/dev/null; then
  out=$(timeout 30 zsh -f "$(dirname "$0")/zsh-complete.zsh" "tether attach " "$completions")
  if title_line <<<"$out" >/dev/null && grep -qF "$plain_id" <<<"$out"; then
    pass "zsh: tether attach <TAB> gives the ids with their titles"
  else
    fail "zsh: tether attach gives: $out"
  fi
  bidi_escaped "$out" && pass "zsh: a title with U+202E and DEL is shown escaped" \
    || fail "zsh: the U+202E title is not shown escaped: $(grep -F "$bidi_id" <<<"$out" | od -c | head -5)"
  out=$(timeout 30 zsh -f "$(dirname "$0")/zsh-complete.zsh" "tether a " "$completions")
  if title_line <<<"$out" >/dev/null && grep -qF "$plain_id" <<<"$out"; then
    pass "zsh: tether a <TAB> (alias of attach) gives the ids with their titles"
  else
    fail "zsh: tether a gives: $out"
  fi
  out=$(timeout 30 zsh -f "$(dirname "$0")/zsh-complete.zsh" "tether new --cwd /tmp -- tru" "$completions")
  grep -q "^true" <<<"$out" && pass "zsh: after new -- a command" || fail "zsh: new -- tru gives: $out"
else
  fail "zsh is not installed (scripts/install-deps.sh installs it)"
fi
if command -v fish >/dev/null; then
  out=$(fish --no-config -c "source $completions/tether.fish; complete -C'tether attach '")
  if title_line <<<"$out" >/dev/null && grep -qF "$plain_id" <<<"$out"; then
    pass "fish: tether attach <TAB> gives the ids with their titles"
  else
    fail "fish: tether attach gives: $out"
  fi
  bidi_escaped "$out" && pass "fish: a title with U+202E and DEL is shown escaped" \
    || fail "fish: the U+202E title is not shown escaped: $(grep -F "$bidi_id" <<<"$out" | od -c | head -5)"
  out=$(fish --no-config -c "source $completions/tether.fish; complete -C'tether at '")
  if title_line <<<"$out" >/dev/null && grep -qF "$plain_id" <<<"$out"; then
    pass "fish: tether at <TAB> (alias of attach) gives the ids with their titles"
  else
    fail "fish: tether at gives: $out"
  fi
  out=$(fish --no-config -c "source $completions/tether.fish; complete -C'tether ls --j'")
  grep -q '^--json	' <<<"$out" && pass "fish: tether ls --j<TAB> gives list's --json" \
    || fail "fish: tether ls --j gives: $out"
  out=$(fish --no-config -c "source $completions/tether.fish; complete -C'tether attach --w'")
  grep -q '^--watch	Watch only' <<<"$out" && pass "fish: options with their --help descriptions" \
    || fail "fish: tether attach --w gives: $out"
else
  fail "fish is not installed (scripts/install-deps.sh installs it)"
fi

# --- no server ------------------------------------------------------------------------
kill -TERM "$server"
wait "$server"
server=""
start=$(date +%s%N)
got=$(bash_complete tether attach "")
ms=$((($(date +%s%N) - start) / 1000000))
[ -z "$got" ] && pass "bash: no server, no ids (${ms} ms)" || fail "bash: no server gives '$got'"
[ "$ms" -lt 2000 ] || fail "bash: completing without a server took ${ms} ms"

echo "tst_completion: $failures failure(s)"
[ "$failures" -eq 0 ]
