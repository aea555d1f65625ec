#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# make package-check: installs the .deb on a clean Debian 12 (a throw-away
# root made with debootstrap, minbase) with apt, as a user would, and checks
# what the package alone gives there:
#   - apt resolves every dependency; tether is /usr/bin/tether and every
#     shared library of it resolves in that root (ldd);
#   - the Qt SVG image plugin (the icon) and xdg-open are installed;
#   - `tether serve` runs a session (`tether new`, `tether list`, the
#     installed bash completion of `tether attach`, `tether kill`) and `tether` (the desktop app, offscreen) starts serving;
#   - the systemd user unit passes `systemd-analyze verify` (ExecStart exists);
#   - the desktop entry, icon, metainfo, man page and completions are where
#     the desktop, the software centre, man and the shells look.
# It needs root (debootstrap, chroot, mounts) and the network (a Debian
# mirror: MIRROR, default deb.debian.org), and takes a few minutes (the base
# system and the downloaded packages are kept in ~/.cache/tether/ for the
# next run). Not part of `make test`.
# Usage: check-install.sh PACKAGE.deb
set -euo pipefail
deb=$(readlink -f "$1")
[ "$(id -u)" -eq 0 ] || exec sudo "$0" "$@"
mirror=${MIRROR:-http://deb.debian.org/debian}
cache=${XDG_CACHE_HOME:-$HOME/.cache}/tether
base=$cache/bookworm-minbase.tar
root=$(mktemp -d /tmp/tether-root.XXXXXX)
mounted=()
cleanup() {
  for ((i = ${#mounted[@]} - 1; i >= 0; i--)); do umount -l "${mounted[i]}" 2>/dev/null || true; done
  rm -rf --one-file-system "$root"
}
trap cleanup EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
pass() { echo "PASS: $*"; }
in_root() { chroot "$root" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 "$@"; }

mkdir -p "$cache"
if [ ! -f "$base" ]; then
  echo "== debootstrap bookworm (minbase) from $mirror"
  debootstrap --variant=minbase bookworm "$root" "$mirror" >"$root.log" 2>&1 || { tail -20 "$root.log"; exit 1; }
  rm -f "$root.log"
  tar -C "$root" -cf "$base.new" . && mv "$base.new" "$base"
else
  echo "== base system from $base"
  tar -C "$root" -xf "$base"
fi
chmod 0755 "$root" # mktemp made it 0700: apt's user _apt must enter it
for m in proc sys dev dev/pts; do
  case $m in
    proc) mount -t proc proc "$root/proc" ;;
    sys) mount -t sysfs sys "$root/sys" ;;
    dev) mount --bind /dev "$root/dev" ;;
    dev/pts) mount -t devpts -o newinstance,ptmxmode=0666 devpts "$root/dev/pts" || mount --bind /dev/pts "$root/dev/pts" ;;
  esac
  mounted+=("$root/$m")
done
# Downloaded packages are kept for the next run.
mkdir -p "$cache/archives/partial"
mount --bind "$cache/archives" "$root/var/cache/apt/archives"
mounted+=("$root/var/cache/apt/archives")
cp /etc/resolv.conf "$root/etc/resolv.conf"
cp "$deb" "$root/tmp/"

echo "== apt install ./$(basename "$deb") (and systemd, for systemd-analyze)"
in_root apt-get update -qq
if in_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
     "/tmp/$(basename "$deb")" systemd >"$root/tmp/apt.log" 2>&1; then
  pass "apt installs the package and its dependencies"
else
  tail -30 "$root/tmp/apt.log"
  fail "apt install"
  exit 1
fi

[ "$(in_root sh -c 'command -v tether')" = /usr/bin/tether ] && pass "tether is /usr/bin/tether on PATH" || fail "tether not on PATH"
if in_root ldd /usr/bin/tether | grep 'not found'; then fail "unresolved libraries"; else pass "every library resolves"; fi
in_root sh -c 'ls /usr/lib/*/qt[56]/plugins/imageformats/libqsvg.so' >/dev/null && pass "the Qt SVG image plugin is installed" \
  || fail "no Qt SVG image plugin"
in_root sh -c 'command -v xdg-open' >/dev/null && pass "xdg-open is installed" || fail "no xdg-open"
for f in /usr/share/applications/tether.desktop /usr/share/icons/hicolor/scalable/apps/tether.svg \
         /usr/share/metainfo/io.github.tether_terminal.tether.metainfo.xml /usr/share/man/man1/tether.1.gz \
         /usr/share/bash-completion/completions/tether /usr/share/zsh/vendor-completions/_tether \
         /usr/share/fish/vendor_completions.d/tether.fish; do
  [ -f "$root$f" ] && pass "$f" || fail "missing $f"
done
in_root systemd-analyze verify /usr/lib/systemd/user/tether.service >"$root/tmp/verify.log" 2>&1 \
  && pass "systemd-analyze verify tether.service" || { cat "$root/tmp/verify.log"; fail "systemd-analyze verify"; }

# A user's session: the server, a session's output read back, then the
# desktop app (offscreen platform: no X server in the root).
cat >"$root/tmp/session.sh" <<'SH'
set -u
export HOME=/tmp/home XDG_RUNTIME_DIR=/tmp/run
mkdir -p -m 0700 $HOME $XDG_RUNTIME_DIR
tether --version
setsid tether serve --port 0 >/tmp/serve.log 2>&1 &
pid=$!
for i in $(seq 100); do grep -q '^Tether is serving' /tmp/serve.log && break; sleep 0.1; done
id=$(tether new -- sh -c 'echo installed-and-running; sleep 60') || exit 1
sleep 1
tether list --json | grep -q "\"id\":\"$id\"" || { echo "no session $id"; exit 1; }
tether list | grep -q "^$(echo "$id" | cut -c1-8) *running" || { tether list; exit 1; }
# The installed bash completion offers the session (without the
# bash-completion package: the file stands alone).
ids=$(bash -c 'source /usr/share/bash-completion/completions/tether
  COMP_WORDS=(tether attach ""); COMP_CWORD=2; _tether; echo "${COMPREPLY[*]}"')
[ "$ids" = "$id" ] || { echo "bash completion of tether attach gave '$ids', not $id"; exit 1; }
tether kill "$id" || exit 1
kill -TERM $pid; wait $pid || exit 1
QT_QPA_PLATFORM=offscreen timeout 20 tether --no-tray --port 0 >/tmp/desktop.log 2>&1 &
dpid=$!
for i in $(seq 100); do grep -q '^Tether is serving' /tmp/desktop.log && break; sleep 0.1; done
grep -q '^Tether is serving' /tmp/desktop.log || { cat /tmp/desktop.log; exit 1; }
kill -TERM $dpid; wait $dpid
# The desktop app started its host (`tether serve`), which outlives it:
# still serving after the app closed; then stopped.
hpid=$(sed -n 's/.*"pid":\([0-9]*\).*/\1/p' $XDG_RUNTIME_DIR/tether/server.json)
[ -n "$hpid" ] && kill -0 "$hpid" || { echo "no host left by the desktop app"; exit 1; }
tether list >/dev/null || exit 1
kill -TERM "$hpid"
echo session-ok
SH
if in_root bash /tmp/session.sh >"$root/tmp/session.log" 2>&1 && grep -q session-ok "$root/tmp/session.log"; then
  pass "tether serve runs a session, bash completes its id, the desktop app starts ($(head -1 "$root/tmp/session.log"))"
else
  cat "$root/tmp/session.log"
  fail "running tether in the clean root"
fi

echo "package-check: $failures failure(s)"
[ "$failures" -eq 0 ]
