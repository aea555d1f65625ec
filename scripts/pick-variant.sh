#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Prints the build variant `make run` uses: qt6 when qtermwidget6 is installed
# (QTermWidget 2.x for Qt 6), otherwise qt5 (Debian 12 has QTermWidget for Qt 5 only).
for d in /usr/lib/*/cmake/qtermwidget6 /usr/lib/cmake/qtermwidget6 /usr/local/lib/cmake/qtermwidget6; do
  [ -d "$d" ] && { echo qt6; exit 0; }
done
echo qt5
