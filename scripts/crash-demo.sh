#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# What a crash of Tether does to its sessions (docs/reliability.md): start a
# private `tether serve` in a session of its own, create one session whose
# shell (bash with job control) runs a foreground program, a background job
# and a disowned job, SIGKILL the server, and report who is left.
#
# Usage: scripts/crash-demo.sh [path/to/tether]   (default: tether on PATH)
# Needs curl, pgrep, ps.
set -u
T=${1:-tether}
D=$(mktemp -d)
trap 'rm -rf "$D"' EXIT
mkdir -p "$D/run" "$D/cfg" "$D/home"
chmod 700 "$D/run"
export XDG_RUNTIME_DIR=$D/run XDG_CONFIG_HOME=$D/cfg HOME=$D/home
setsid "$T" serve --port 0 > "$D/out" 2> "$D/err" &
SERVER=$!
for _ in $(seq 100); do grep -q serving "$D/out" && break; sleep 0.1; done
URL=$(sed -E 's/.* (http[^?]*)\?key=.*/\1/' "$D/out")
KEY=$(sed -E 's/.*key=//' "$D/out")
# bash -m: job control, so `sleep 1001 &` runs in a process group of its own
# and `sleep 1003` is the terminal's foreground job; ": " last keeps bash
# itself running (it would exec its last command otherwise).
SCRIPT="sleep 1001 & echo \$! > $D/bg; sleep 1002 & disown; echo \$! > $D/disowned; echo \$\$ > $D/shell; sleep 1003; :"
curl -s -H "Authorization: Bearer $KEY" -d "{\"command\":[\"bash\",\"-m\",\"-c\",\"$SCRIPT\"]}" \
    "${URL}api/sessions" > /dev/null
for _ in $(seq 100); do [ -s "$D/shell" ] && pgrep -f "^sleep 1003" > /dev/null && break; sleep 0.1; done
FG=$(pgrep -f "^sleep 1003")
state() { # alive (with its parent) or gone; a zombie counts as gone
    local s
    s=$(ps -o stat= -p "$1" 2>/dev/null)
    if [ -n "$s" ] && [ "${s#Z}" = "$s" ]; then echo "alive, parent $(ps -o ppid= -p "$1" | tr -d ' ')"; else echo gone; fi
}
report() {
    echo "  shell (pid $(cat "$D/shell")): $(state "$(cat "$D/shell")")"
    echo "  foreground job (pid $FG): $(state "$FG")"
    echo "  background job, own process group (pid $(cat "$D/bg")): $(state "$(cat "$D/bg")")"
    echo "  disowned job (pid $(cat "$D/disowned")): $(state "$(cat "$D/disowned")")"
}
echo "before the crash (server pid $SERVER):"
report
kill -9 "$SERVER"
wait "$SERVER" 2> /dev/null
sleep 1
echo "1 s after SIGKILL of the server:"
report
kill "$(cat "$D/bg")" "$(cat "$D/disowned")" "$FG" 2> /dev/null
exit 0
