#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# packaging/tst_make_run: `make run` builds only the program, not the tests
# and benchmarks (issue 14: the first start waited for all of them), while
# `make test` still builds everything. Reads make's dry run (-n: the
# commands are printed, none is run).
set -uo pipefail
src=${1:?usage: tst_make_run.sh SOURCE_DIR}
. "$(dirname "$0")/lib.sh"

for v in qt6 qt5; do
  run=$(make -s -n -C "$src" run RUN_VARIANT=$v 2>&1)
  builds=$(grep -E "^cmake --build build-$v( |$)" <<<"$run")
  if [ -n "$builds" ] && ! grep -qv -- "--target tether$" <<<"$builds"; then
    pass "make run ($v) builds the tether target only"
  else
    fail "make run ($v) builds: '${builds}'"
  fi
  grep -q "scripts/run.sh build-$v" <<<"$run" && pass "make run ($v) then runs it" || fail "make run ($v) does not run scripts/run.sh: $run"
done

# What make puts in the environment of its recipes (MAKELEVEL, MAKEFLAGS with
# -j and the jobserver...) describes the `make run` that started Tether, and
# every session inherits Tether's environment: a plain `make` in a session
# printed "make[1]: Entering directory" (found by a new user), and after
# `make -j3 run` it would look for a jobserver that is not there.
# scripts/run.sh starts Tether without them. Run through a real make, with a
# stand-in binary that records its environment.
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/build/app"
printf '#!/bin/sh\nenv > "%s/env"\necho "args: $*" >> "%s/env"\n' "$tmp" "$tmp" > "$tmp/build/app/tether"
chmod +x "$tmp/build/app/tether"
printf 'run:\n\t@%s %s\n' "$src/scripts/run.sh" "$tmp/build" > "$tmp/Makefile"
env -u DISPLAY -u WAYLAND_DISPLAY make -s -j3 -C "$tmp" run >/dev/null 2>&1
if ! grep -q "^args: serve$" "$tmp/env" 2>/dev/null; then
  fail "scripts/run.sh did not run the stand-in tether serve: $(cat "$tmp/env" 2>&1)"
elif leaked=$(grep -E '^(MAKELEVEL|MAKEFLAGS|MFLAGS|MAKEOVERRIDES|MAKE_TERMOUT|MAKE_TERMERR)=' "$tmp/env"); then
  fail "make run passes make's variables on to Tether and its sessions: $(tr '\n' ' ' <<<"$leaked")"
else
  pass "make run starts Tether without make's variables"
fi

# The Qt 6 variant of make test is the sanitized tree, build-asan.
test_builds=$(make -s -n -C "$src" test 2>&1 | grep -E "^cmake --build build-(asan|qt5)( |$)")
if [ "$(grep -c -- '--target' <<<"$test_builds")" -eq 0 ] && [ "$(grep -c . <<<"$test_builds")" -eq 2 ]; then
  pass "make test builds everything in both variants"
else
  fail "make test builds: '$test_builds'"
fi

echo "tst_make_run: $failures failure(s)"
[ "$failures" -eq 0 ]
