#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# How many sessions a private `tether serve` can start under a descriptor
# limit (docs/reliability.md): runs it under `prlimit --nofile=SOFT:HARD`,
# creates sessions running `sleep` until N exist or POST fails, prints the
# count, the first refusal and the server's own limit, then ends them all.
#
# Usage: scripts/session-limit-demo.sh TETHER SOFT HARD N
#   e.g. scripts/session-limit-demo.sh build-qt6/app/tether 1024 20000 1500
# Needs curl and prlimit (util-linux).
set -u
T=$1 SOFT=$2 HARD=$3 N=$4
D=$(mktemp -d)
trap 'rm -rf "$D"' EXIT
mkdir -p "$D/run" "$D/cfg" "$D/home"
chmod 700 "$D/run"
export XDG_RUNTIME_DIR=$D/run XDG_CONFIG_HOME=$D/cfg HOME=$D/home
setsid prlimit --nofile="$SOFT:$HARD" -- "$T" serve --port 0 --max-sessions "$N" > "$D/out" 2> "$D/err" &
SERVER=$!
for _ in $(seq 100); do grep -q serving "$D/out" && break; sleep 0.1; done
URL=$(sed -E 's/.* (http[^?]*)\?key=.*/\1/' "$D/out")
KEY=$(sed -E 's/.*key=//' "$D/out")
echo "server: $(grep 'Max open files' /proc/$SERVER/limits)"
created=0
start=$(date +%s%N)
while [ "$created" -lt "$N" ]; do
    reply=$(curl -s -w ' %{http_code}' -H "Authorization: Bearer $KEY" \
        -d '{"command":["sleep","1000"]}' "${URL}api/sessions")
    [ "${reply##* }" = 201 ] || { echo "refused after $created sessions: $reply"; break; }
    created=$((created + 1))
done
end=$(date +%s%N)
echo "created $created sessions in $(( (end - start) / 1000000 )) ms; server fds: $(ls /proc/$SERVER/fd | wc -l)"
kill "$SERVER"
for _ in $(seq 300); do kill -0 "$SERVER" 2> /dev/null || break; sleep 0.1; done
exit 0
