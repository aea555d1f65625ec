#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Starts Tether from a build dir: the tray app when a display exists,
# `tether serve` (printing its URL) otherwise.
set -euo pipefail
dir=${1:-build-qt5}
bin="$dir/app/tether"
# Started from `make run`: make's variables describe that make, not the
# sessions' shells, which inherit Tether's environment (a `make` there said
# "make[1]: Entering directory", and after `make -j3 run` it looked for
# make's jobserver).
unset MAKELEVEL MAKEFLAGS MFLAGS MAKEOVERRIDES MAKE_TERMOUT MAKE_TERMERR
if [ -n "${DISPLAY:-}" ] || [ -n "${WAYLAND_DISPLAY:-}" ]; then
  exec "$bin"
else
  echo "No display: running headless (tether serve). Ctrl-C stops it."
  exec "$bin" serve
fi
