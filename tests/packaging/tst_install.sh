#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# packaging/tst_install: `cmake --install BUILD --prefix X` puts every file
# under X, and the systemd user unit runs X/bin/tether (it named
# /usr/local/bin/tether whatever the prefix was: issue 14), also when X has a
# space or a '%' in it (systemd-analyze verify reads it as systemd does).
# Usage: tst_install.sh BUILD_DIR
set -uo pipefail
build=$1
source "$(dirname "$0")/lib.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

for prefix in "$tmp/one" "$tmp/two words" "$tmp/100%"; do
  if ! cmake --install "$build" --prefix "$prefix" >"$tmp/install.log" 2>&1; then
    cat "$tmp/install.log"
    fail "cmake --install --prefix '$prefix'"
    continue
  fi
  outside=$(sed -n 's/^-- \(Installing\|Up-to-date\): //p' "$tmp/install.log" | grep -vF "$prefix/")
  [ -z "$outside" ] && pass "every file under '$prefix'" || fail "installed outside the prefix: $outside"
  unit="$prefix/lib/systemd/user/tether.service"
  exec_start=$(sed -n 's/^ExecStart=//p' "$unit" 2>/dev/null)
  # A path with a space is one word only in quotes.
  want="$prefix/bin/tether serve"
  [[ $prefix == *" "* ]] && want="\"$prefix/bin/tether\" serve"
  want=${want//%/%%} # '%' starts a systemd specifier
  if [ "$exec_start" = "$want" ]; then
    pass "ExecStart=$exec_start"
  else
    fail "ExecStart is '$exec_start', want '$want'"
  fi
  # systemd's own reading of the unit: the ExecStart binary exists.
  systemd-analyze verify "$unit" >"$tmp/verify.log" 2>&1 && pass "systemd-analyze verify" \
    || { cat "$tmp/verify.log"; fail "systemd-analyze verify $unit"; }
  [ -x "$prefix/bin/tether" ] && pass "$prefix/bin/tether" || fail "no $prefix/bin/tether"
done

echo "tst_install: $failures failure(s)"
[ "$failures" -eq 0 ]
