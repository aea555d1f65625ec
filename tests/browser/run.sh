#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Runs the dashboard's browser tests: Debian's Chromium (never a downloaded
# browser) driven by playwright-core against a real `tether serve`.
#   tests/browser/run.sh <path-to-tether-binary> [test files...]
# Screenshots go to test-artifacts/ at the repository root.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
if [ $# -lt 1 ]; then
  echo "usage: $0 <path-to-tether-binary> [test files...]" >&2
  exit 2
fi
bin="$(realpath "$1")"
shift
if [ ! -x "$bin" ]; then
  echo "run.sh: $bin is not an executable tether binary" >&2
  exit 2
fi
if [ ! -f "$here/node_modules/playwright-core/package.json" ]; then
  echo "run.sh: playwright-core is not installed in tests/browser: run scripts/install-deps.sh" >&2
  exit 1
fi
if [ ! -x "${CHROMIUM:-/usr/bin/chromium}" ]; then
  echo "run.sh: ${CHROMIUM:-/usr/bin/chromium} not found: run scripts/install-deps.sh (Debian package chromium)" >&2
  exit 1
fi
export TETHER_BIN="$bin"
cd "$here"
# Without files: every test but those ctest runs on their own, so that no one
# run nears ctest's timeout: the terminal's own features (browser/terminal:
# clipboard, search, meter, names) and the fidelity corpus (browser/fidelity:
# a minute of programs rolling rings over), the read-only links
# (browser/share), the dashboard over TLS (browser/https) and what the page
# shows at phone widths, to a narrow watcher and when Tether quits
# (browser/display), commands and notifications (browser/commands), and the
# dashboard on an emulated phone (browser/phone).
if [ $# -eq 0 ]; then
  set -- $(ls *.test.mjs | grep -vx -e 'terminal.test.mjs' -e 'fidelity.test.mjs' -e 'share.test.mjs' \
    -e 'https.test.mjs' -e 'display.test.mjs' -e 'commands.test.mjs' -e 'phone.test.mjs')
fi
# The report of a run of one file is kept under that file's name (ctest runs
# browser/terminal and browser/fidelity beside browser/dashboard in the same
# build).
suffix=""
[ $# -eq 1 ] && suffix="-$(basename "$1" .test.mjs)"
# One file at a time: each starts its own tether and Chromium, on a shared 2-core machine.
# The report is also kept in test-artifacts/ (ctest shows only the last run's).
artifacts="$here/../../test-artifacts"
mkdir -p "$artifacts"
log="$artifacts/browser-$(basename "$(dirname "$(dirname "$bin")")")${suffix}.log"
set -o pipefail
node --test --test-concurrency=1 --test-reporter=spec "$@" 2>&1 | tee "$log"
