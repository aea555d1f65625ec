#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Installs every Debian package (and the dashboard's npm packages) that Tether's
# build, run and tests need. Idempotent: when nothing is missing it only checks
# dpkg and returns in well under a second. Uses sudo only when not root.
set -euo pipefail
cd "$(dirname "$0")/.."

PACKAGES=(
  # build
  cmake ninja-build g++ pkg-config
  qt6-base-dev qt6-base-dev-tools qt6-websockets-dev
  qtbase5-dev qtbase5-dev-tools libqt5websockets5-dev
  libqtermwidget5-1-dev libutf8proc-dev   # qtermwidget5's CMake config links libutf8proc.so
  libhttp-parser-dev libgl-dev
  libvterm-dev                           # the server-side terminal screen (issue: screen-exact reattach)
  python3                                # packaging/generate.py: the manual page, metainfo, changelog
  # run
  libqt6svg6 libqt5svg5 xdg-utils
  # scripts/make-icons.sh: the dashboard's app icons from icon.svg
  librsvg2-bin
  # tests: shells, process tools, browser, X server, tray host, screenshots
  procps tmux less chromium xvfb xauth tint2 imagemagick x11-utils
  dbus-daemon                            # tst_desktopnotifier: a private session bus with a test notification daemon
  openssl                                # TLS tests: certificates made with `openssl req -x509`, s_client
  # desktop screenshots: window manager and input simulation under Xvfb
  openbox xdotool
  # the package and its checks (packaging/tst_deb, tst_manpage, tst_completion)
  dpkg-dev lintian desktop-file-utils appstream man-db binutils zsh fish
  systemd                                # systemd-analyze verify of the user unit
  # reattach fidelity corpus: the programs it runs
  htop vim python3 locales
  # make fuzz: clang with libFuzzer and its sanitizer runtimes (tests/fuzz)
  clang libclang-rt-dev
  # make bench: the peers Tether is measured against (tmux is above)
  dtach
  # make test-loaded: the CPU hog beside make test
  stress-ng
)
# Node.js and npm: the machine's own when present (a nodesource build bundles npm
# and conflicts with Debian's npm package), Debian's otherwise.
command -v npm >/dev/null 2>&1 || PACKAGES+=(nodejs npm)

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if ((${#missing[@]})); then
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  echo "install-deps: installing ${missing[*]}"
  # A fresh machine finds nothing until the package lists exist: update once.
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# Dashboard packages from npm (xterm.js); nothing is copied into the repository.
# A node_modules that is a symbolic link (a git worktree sharing another
# checkout's) is left alone: npm ci empties the directory it points to, and
# a fresh checkout's package-lock.json is always newer than that stamp.
for dir in resources/dashboard tests/browser; do
  [ -f "$dir/package-lock.json" ] && [ ! -L "$dir/node_modules" ] || continue
  stamp=$dir/node_modules/.package-lock.json
  if [ ! -f "$stamp" ] || [ "$dir/package-lock.json" -nt "$stamp" ]; then
    (cd "$dir" && npm ci --no-audit --no-fund --loglevel=error)
  fi
done
