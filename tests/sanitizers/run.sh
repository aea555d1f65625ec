#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Runs one ctest test of the sanitized tree (build-asan: ASan + UBSan) so that
# a sanitizer report from ANY process it starts fails it: the test itself,
# the `tether serve` it drives, a restarted image, the restart guardian, a
# `tether attach` inside a PTY. A report ends its process with an error
# (halt_on_error, -fno-sanitize-recover), but a test that kills its server or
# ignores a client's exit status would not notice; so every report goes to a
# file in a private directory (log_path, inherited through the environment
# with the other options tests/CMakeLists.txt sets), and any file there after
# the test fails it and is printed.
#
# Usage: run.sh COMMAND [ARGS...]; exit status: the command's, or 1 when it
# passed but a process wrote a sanitizer report.
set -u

dir=$(mktemp -d "${TMPDIR:-/tmp}/tether-sanitizer.XXXXXX") || exit 1
trap 'rm -rf "$dir"' EXIT
# log_path is a common flag: set for each runtime that reads its own options.
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}log_path=$dir/report"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:+$UBSAN_OPTIONS:}log_path=$dir/report"
export LSAN_OPTIONS="${LSAN_OPTIONS:+$LSAN_OPTIONS:}log_path=$dir/report"

"$@"
rc=$?

shopt -s nullglob
reports=("$dir"/report*)
if [ ${#reports[@]} -gt 0 ]; then
    for r in "${reports[@]}"; do
        # report.PID: the process that wrote it.
        pid=${r##*.}
        echo "=== sanitizer report of pid $pid ($(basename "$r")):"
        cat "$r"
    done
    echo "FAIL: ${#reports[@]} sanitizer report(s) (tests/sanitizers/run.sh)"
    [ $rc -eq 0 ] && rc=1
fi
exit $rc
