# SPDX-License-Identifier: GPL-2.0-or-later
# Prints what zsh's completion offers for the line $1 (without a newline),
# one "MATCH<TAB>DESCRIPTION" a line: an interactive zsh in a pseudo-terminal
# (zsh/zpty), compinit with $2 first in fpath, and compadd wrapped to print
# the matches it is given, then Tab.
# Usage: zsh -f zsh-complete.zsh LINE FPATH_DIR
zmodload zsh/zpty || exit 1
zpty z zsh -f -i
zpty -w z "fpath=(${(q)2} \$fpath); autoload -U compinit; compinit -u -D"
# _describe passes the descriptions with -d ARRAY.
zpty -w z 'compadd () { local -a __m __d; builtin compadd -O __m "$@"; (( $@[(I)-d] )) && __d=(${(P)${@[$@[(I)-d]+1]}}); local i; for ((i = 1; i <= $#__m; i++)); do print -r -- "<<${__m[i]}>>${__d[i]}"; done; builtin compadd "$@" }'
zpty -w z 'bindkey "^I" complete-word; PROMPT="> "; print -r -- "SETUP""DONE"'
zpty -r z line '*SETUPDONE*' || exit 1
zpty -w -n z "$1"$'\t'
local out all
# Read until the shell has been quiet for a second (the completion runs
# tether list, which takes a few tens of milliseconds).
integer quiet=0
while (( quiet < 10 )); do
  if zpty -r -t z out 2>/dev/null; then all+=$out; quiet=0; else sleep 0.1; (( quiet++ )); fi
done
zpty -d z
print -r -- "$all" | tr -d '\r' | grep -a '<<' | sed -E 's/.*<<([^>]*)>>(.*)/\1\t\2/' | sort -u
