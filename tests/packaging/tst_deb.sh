#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# packaging/tst_deb: builds the Debian package from this build tree (cpack into
# a temporary directory, so `make package`'s own output is left alone) and
# checks what a clean Debian 12 would get from it:
#   - its name and its exact file list;
#   - Depends: dpkg-shlibdeps' libraries plus the run-time loaded ones;
#   - lintian: no error and no warning (the info tags kept are listed in
#     packaging/README.md);
#   - desktop-file-validate and appstreamcli validate --no-net on the files
#     as packaged; the manual page formats without a warning;
#   - dpkg -x: the systemd unit runs the packaged binary; every shared
#     library of that binary resolves (ldd), and every library it links
#     directly belongs to a package named in Depends; the stripped binary
#     starts a server, restarts in place through the unit's ExecReload and
#     stops on SIGTERM.
# Usage: tst_deb.sh BUILD_DIR VERSION QT_MAJOR
set -euo pipefail
build=$1
version=$2
qt=$3
tmp=$(mktemp -d)
server=""
cleanup() {
  [ -z "$server" ] || kill "$server" 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT
source "$(dirname "$0")/lib.sh"

if ! cpack --config "$build/CPackConfig.cmake" -G DEB -B "$tmp/out" >"$tmp/cpack.log" 2>&1; then
  cat "$tmp/cpack.log"
  echo "FAIL: cpack"
  exit 1
fi
deb="$tmp/out/tether_${version}_$(dpkg --print-architecture).deb"
[ -f "$deb" ] || { ls "$tmp/out"; echo "FAIL: no $deb"; exit 1; }
pass "built $(basename "$deb")"

# --- the file list -------------------------------------------------------------
metainfo=io.github.tether_terminal.tether.metainfo.xml
expected="./usr/bin/tether
./usr/lib/systemd/user/tether.service
./usr/share/applications/tether.desktop
./usr/share/bash-completion/completions/tether
./usr/share/doc/tether/changelog.gz
./usr/share/doc/tether/copyright
./usr/share/fish/vendor_completions.d/tether.fish
./usr/share/icons/hicolor/scalable/apps/tether.svg
./usr/share/man/man1/tether.1.gz
./usr/share/metainfo/$metainfo
./usr/share/tether/shell-integration/tether.bash
./usr/share/tether/shell-integration/tether.fish
./usr/share/tether/shell-integration/zsh/.zlogin
./usr/share/tether/shell-integration/zsh/.zprofile
./usr/share/tether/shell-integration/zsh/.zshenv
./usr/share/tether/shell-integration/zsh/.zshrc
./usr/share/zsh/vendor-completions/_tether"
actual=$(dpkg-deb --fsys-tarfile "$deb" | tar -t | grep -v '/$' | sort)
if [ "$actual" = "$(sort <<<"$expected")" ]; then
  pass "file list"
else
  fail "file list differs (< expected, > packaged):"
  diff <(sort <<<"$expected") <(echo "$actual") || true
fi

# --- control -------------------------------------------------------------------
depends=$(dpkg-deb -f "$deb" Depends)
echo "Depends: $depends"
# The package names in Depends (alternatives included), one a line.
depends_names=$(tr ',|' '\n\n' <<<"$depends" | awk '{print $1}' | sed '/^$/d')
depends_on() { grep -qxF -- "$1" <<<"$depends_names"; }
# Loaded at run time, so only named by hand (dpkg-shlibdeps cannot see them).
for p in "libqt${qt}svg${qt}" xdg-utils; do
  depends_on "$p" && pass "Depends names $p" || fail "Depends lacks $p"
done
# The packaged variant is the one with the terminal window.
grep -q "^libqtermwidget${qt}-" <<<"$depends_names" && pass "Depends names QTermWidget for Qt $qt" \
  || fail "Depends names no libqtermwidget${qt}-*: not the variant with the terminal window"
# The bash completion is loaded by bash-completion: recommended (issue 29).
tr ',' '\n' <<<"$(dpkg-deb -f "$deb" Recommends)" | awk '{print $1}' | grep -qx bash-completion \
  && pass "Recommends names bash-completion" || fail "Recommends lacks bash-completion: '$(dpkg-deb -f "$deb" Recommends)'"
[ "$(dpkg-deb -f "$deb" Version)" = "$version" ] && pass "Version $version" || fail "Version is $(dpkg-deb -f "$deb" Version)"

# --- lintian -------------------------------------------------------------------
# Tags E: (error) and W: (warning) fail; I: (info) and P: (pedantic) are shown.
if lintian --pedantic --display-info --fail-on error,warning "$deb" >"$tmp/lintian.log" 2>&1; then
  grep -v '^running with root privileges' "$tmp/lintian.log" || true
  pass "lintian: no error, no warning"
else
  cat "$tmp/lintian.log"
  fail "lintian reports errors or warnings (or did not run)"
fi

# --- the files as packaged -----------------------------------------------------
root="$tmp/root"
dpkg -x "$deb" "$root"
desktop-file-validate "$root/usr/share/applications/tether.desktop" && pass "desktop-file-validate" \
  || fail "desktop-file-validate"
appstreamcli validate --no-net --pedantic "$root/usr/share/metainfo/$metainfo" >"$tmp/as.log" 2>&1 \
  && pass "appstreamcli validate --no-net" || { cat "$tmp/as.log"; fail "appstreamcli validate"; }
grep -q "<release version=\"$version\"" "$root/usr/share/metainfo/$metainfo" && pass "metainfo has release $version" \
  || fail "metainfo lacks release $version"
man_warnings=$(LC_ALL=C.UTF-8 MANWIDTH=80 man --warnings -E UTF-8 -l "$root/usr/share/man/man1/tether.1.gz" 2>&1 >/dev/null)
[ -z "$man_warnings" ] && pass "man page formats cleanly" || fail "man page warnings: $man_warnings"
grep -qx 'ExecStart=/usr/bin/tether serve' "$root/usr/lib/systemd/user/tether.service" && pass "unit runs /usr/bin/tether" \
  || fail "unit: $(grep ExecStart "$root/usr/lib/systemd/user/tether.service")"

# --- shared libraries ------------------------------------------------------------
bin="$root/usr/bin/tether"
ldd "$bin" >"$tmp/ldd.log" 2>&1 || { cat "$tmp/ldd.log"; fail "ldd failed"; }
if grep -q 'not found' "$tmp/ldd.log"; then
  grep 'not found' "$tmp/ldd.log"
  fail "unresolved shared libraries"
else
  pass "every shared library resolves ($(grep -c '=>' "$tmp/ldd.log") libraries)"
fi
owner() { # the package that ships library path $1 (dpkg knows /lib and /usr/lib apart)
  local p=$1 alt
  case $p in /usr/*) alt=${p#/usr} ;; *) alt=/usr$p ;; esac
  { dpkg -S "$p" 2>/dev/null || dpkg -S "$alt" 2>/dev/null; } | head -1 | cut -d: -f1
}
for lib in $(objdump -p "$bin" | awk '$1 == "NEEDED" {print $2}'); do
  path=$(awk -v l="$lib" '$1 == l && $2 == "=>" {print $3}' "$tmp/ldd.log")
  # The dynamic loader has no "=>" in ldd's output, only its path (NEEDED
  # once the binary calls into it, e.g. __tls_get_addr for thread_local).
  [ -n "$path" ] || path=$(awk -v l="/$lib" 'substr($1, length($1) - length(l) + 1) == l {print $1}' "$tmp/ldd.log")
  if [ -z "$path" ]; then
    fail "$lib: ldd names no path for it"
    continue
  fi
  pkg=$(owner "$path")
  if [ -z "$pkg" ]; then
    fail "$lib ($path) belongs to no package"
  elif depends_on "$pkg"; then
    pass "$lib from $pkg, in Depends"
  else
    fail "$lib from $pkg, which Depends does not name"
  fi
done

# --- the packaged binary runs ---------------------------------------------------
export XDG_RUNTIME_DIR="$tmp/run" XDG_CONFIG_HOME="$tmp/config" HOME="$tmp/home"
mkdir -m 0700 -p "$XDG_RUNTIME_DIR" "$HOME"
"$bin" --help >/dev/null && pass "tether --help" || fail "tether --help"
setsid "$bin" serve --port 0 >"$tmp/serve.log" 2>&1 &
server=$!
for _ in $(seq 100); do
  grep -q '^Tether is serving http://127.0.0.1:' "$tmp/serve.log" && break
  sleep 0.1
done
if grep -q '^Tether is serving http://127.0.0.1:' "$tmp/serve.log" && "$bin" list >/dev/null; then
  pass "the packaged tether serves and answers tether list"
else
  cat "$tmp/serve.log"
  fail "the packaged tether serve did not start"
fi
# systemctl --user reload: the unit's ExecReload, run as systemd runs it
# (MAINPID in its environment), restarts the server in place.
reload=$(sed -n 's/^ExecReload=//p' "$root/usr/lib/systemd/user/tether.service")
before=$(wc -l <"$tmp/serve.log")
MAINPID=$server bash -c "$reload" || fail "ExecReload ($reload) failed"
restarted="tether serve: restarted in place (pid $server)"
for _ in $(seq 150); do
  tail -n +$((before + 1)) "$tmp/serve.log" | grep -qF "$restarted" && break
  sleep 0.1
done
if tail -n +$((before + 1)) "$tmp/serve.log" | grep -qF "$restarted" && "$bin" list >/dev/null; then
  pass "the unit's ExecReload restarts it in place: $(grep -F "$restarted" "$tmp/serve.log")"
else
  cat "$tmp/serve.log"
  fail "ExecReload ($reload) did not restart the server in place"
fi
kill -TERM "$server"
wait "$server" && pass "tether serve exits 0 on SIGTERM" || fail "tether serve exit status $?"
server=""

echo "tst_deb: $failures failure(s)"
[ "$failures" -eq 0 ]
