#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Makes the dashboard's app icons (resources/dashboard/icons/*.png, named in
# manifest.webmanifest and index.html) from resources/dashboard/icon.svg with
# rsvg-convert (Debian package librsvg2-bin; scripts/install-deps.sh installs
# it). Run it again after changing icon.svg, and commit the PNGs.
#   icon-192.png, icon-512.png   the icon on transparency ("any")
#   icon-maskable-512.png        on a full square of its background, inside
#                                the central 80 % (the safe zone a launcher's
#                                mask keeps: W3C Web App Manifest, "maskable")
#   apple-touch-icon.png         180 px, opaque (iOS fills transparency black)
set -euo pipefail
cd "$(dirname "$0")/.."
src=resources/dashboard/icon.svg
out=resources/dashboard/icons
command -v rsvg-convert >/dev/null || { echo "make-icons: rsvg-convert not found: install librsvg2-bin (scripts/install-deps.sh)" >&2; exit 1; }
mkdir -p "$out"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

rsvg-convert -w 192 -h 192 -o "$out/icon-192.png" "$src"
rsvg-convert -w 512 -h 512 -o "$out/icon-512.png" "$src"

# The icon's drawing (what is inside <svg>), scaled to 80 % on its background.
inner="$(sed -n '/<svg/,/<\/svg>/p' "$src" | sed '1d;$d')"
cat > "$tmp/padded.svg" <<SVG
<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 64 64">
  <rect width="64" height="64" fill="#12151b"/>
  <g transform="translate(6.4 6.4) scale(0.8)">
$inner
  </g>
</svg>
SVG
rsvg-convert -w 512 -h 512 -o "$out/icon-maskable-512.png" "$tmp/padded.svg"
rsvg-convert -w 180 -h 180 -o "$out/apple-touch-icon.png" "$tmp/padded.svg"
echo "make-icons: wrote $(ls "$out" | tr '\n' ' ')"
