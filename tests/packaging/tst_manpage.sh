#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# packaging/tst_manpage: tether(1) as built (packaging/generate.py) says what
# the binary does:
#   - a section for every command the binary names (`tether nosuchcommand`
#     lists them), and for the desktop app;
#   - in each, exactly the options `tether COMMAND --help` lists;
#   - the aliases `tether --help` names, each in its command's section;
#   - every settings key HostConfig::load() reads (SessionConfig's in
#     core/engine/sessionconfig.cpp, ServerConfig's in
#     core/server/serverconfig.cpp) and
#     every environment variable the sources read by name;
#   - the version `tether --version` prints;
#   - it formats without a warning.
# Usage: tst_manpage.sh TETHER_BINARY MANPAGE SOURCE_DIR
set -uo pipefail
bin=$1
page=$2
src=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export HOME="$tmp" XDG_CONFIG_HOME="$tmp/config" LC_ALL=C.UTF-8
unset DISPLAY WAYLAND_DISPLAY QT_QPA_PLATFORM
source "$(dirname "$0")/lib.sh"

[ -s "$page" ] || { echo "FAIL: no manual page at $page"; exit 1; }

# The roff source with its escapes undone, for plain comparisons.
plain() { sed -e 's/\\f[BIRP]//g' -e 's/\\-/-/g' -e 's/\\e/\\/g' -e 's/\\&//g' "$page"; }

# The options listed (.TP tags) in the page's section for command $1.
page_options() {
  local title="tether $1"
  [ -n "$1" ] || title="tether (the desktop application)"
  plain | awk -v title="$title" '
    /^\.S[SH] / { inside = (substr($0, 5) == title); options = 0; next }
    inside && /^(Options|Arguments):$/ { options = ($0 == "Options:"); next }
    inside && options && /^\.TP$/ { tag = 1; next }
    inside && tag { tag = 0; if ($1 ~ /^-/) { gsub(/,/, ""); for (i = 1; i <= NF; i++) if ($i ~ /^-/) print $i } }
  ' | sort
}

# The commands the binary itself names, as generate.py reads them.
mapfile -t commands < <(binary_commands)
if [ "${#commands[@]}" -ge 7 ]; then
  pass "the binary names ${#commands[@]} commands: ${commands[*]}"
else
  fail "could not read the commands from the binary: ${commands[*]}"
fi

for cmd in "" "${commands[@]}"; do
  want=$(help_options "$cmd")
  got=$(page_options "$cmd")
  name=${cmd:-(desktop app)}
  if [ -z "$want" ]; then
    fail "tether $cmd --help lists no options"
  elif [ "$want" = "$got" ]; then
    pass "$name: the page lists the $(wc -l <<<"$want") options of --help"
  else
    fail "$name: options differ (< --help, > page)"
    diff <(echo "$want") <(echo "$got")
  fi
done

# The aliases `tether --help` names (ls, a, at), each in its command's section.
mapfile -t aliases < <(binary_aliases)
[ "${#aliases[@]}" -ge 3 ] || fail "could not read the aliases from tether --help: ${aliases[*]}"
for pair in "${aliases[@]}"; do
  read -r alias cmd <<<"$pair"
  section=$(plain | awk -v title="tether $cmd" '/^\.S[SH] / { inside = (substr($0, 5) == title); next } inside')
  grep -qE "tether $alias([^A-Za-z0-9_-]|\$)" <<<"$section" && pass "tether $cmd's section names its alias tether $alias" \
    || fail "tether $cmd's section does not name its alias tether $alias"
done

# Settings keys read by HostConfig::load(): both parts, each must have some.
for part in core/engine/sessionconfig.cpp core/server/serverconfig.cpp; do
  grep -qE 's\.value\(QStringLiteral\("[A-Za-z]+/[A-Za-z]+"\)' "$src/$part" || fail "no settings keys found in $part"
done
keys=$(grep -ohE 's\.value\(QStringLiteral\("[A-Za-z]+/[A-Za-z]+"\)' "$src/core/engine/sessionconfig.cpp" "$src/core/server/serverconfig.cpp" \
  | sed -E 's/.*"(.*)".*/\1/' | sort -u)
settings=$(plain | awk '/^\.SH SETTINGS/ { inside = 1; next } /^\.SH / { inside = 0 } inside')
for k in $keys; do
  grep -q -- "$k" <<<"$settings" && pass "SETTINGS documents $k" || fail "SETTINGS lacks $k"
done

# Environment variables read by name (qgetenv / qEnvironmentVariable with a
# literal, and the named constants), except the restart handover's own
# (TETHER_HANDOVER_*: set by Tether for its successor, never by a user) and
# the tests' hooks (TETHER_TEST_*).
vars=$( { grep -rhoE '(qgetenv|qEnvironmentVariable(IsEmpty)?)\("[A-Z_]+"\)' "$src/core" "$src/ui" "$src/app";
          grep -rhoE 'char k[A-Za-z]*Env\[\] = "[A-Z_]+"' "$src/core" "$src/ui" "$src/app"; } \
  | grep -oE '"[A-Z_]+"' | tr -d '"' | grep -Ev '^TETHER_(HANDOVER|TEST)_' | sort -u)
environment=$(plain | awk '/^\.SH ENVIRONMENT/ { inside = 1; next } /^\.SH / { inside = 0 } inside')
for v in $vars; do
  grep -qw -- "$v" <<<"$environment" && pass "ENVIRONMENT documents $v" || fail "ENVIRONMENT lacks $v"
done

version=$("$bin" --version 2>/dev/null | awk '{print $NF; exit}')
if [ -n "$version" ] && grep -q "^\.TH TETHER 1 \"[0-9-]*\" \"Tether $version\"" "$page"; then
  pass "the page is for version $version"
else
  fail "the page's .TH ($(grep '^\.TH' "$page")) does not name version '$version'"
fi

warnings=$(MANWIDTH=80 man --warnings -E UTF-8 -l "$page" 2>&1 >/dev/null)
[ -z "$warnings" ] && pass "formats without a warning" || fail "man warnings: $warnings"

echo "tst_manpage: $failures failure(s)"
[ "$failures" -eq 0 ]
