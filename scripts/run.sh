#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Starts Tether from a build dir: the tray app when a display exists,
# `tether serve` (printing its URL) otherwise.
set -euo pipefail
dir=${1:-build-qt5}
bin="$dir/app/tether"
if [ -n "${DISPLAY:-}" ] || [ -n "${WAYLAND_DISPLAY:-}" ]; then
  exec "$bin"
else
  echo "No display: running headless (tether serve). Ctrl-C stops it."
  exec "$bin" serve
fi
