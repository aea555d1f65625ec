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

# The Qt 6 variant of make test is the sanitized tree, build-asan.
test_builds=$(make -s -n -C "$src" test 2>&1 | grep -E "^cmake --build build-(asan|qt5)( |$)")
if [ "$(grep -c -- '--target' <<<"$test_builds")" -eq 0 ] && [ "$(grep -c . <<<"$test_builds")" -eq 2 ]; then
  pass "make test builds everything in both variants"
else
  fail "make test builds: '$test_builds'"
fi

echo "tst_make_run: $failures failure(s)"
[ "$failures" -eq 0 ]
