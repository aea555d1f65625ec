# SPDX-License-Identifier: GPL-2.0-or-later
# The README's two commands: `make run` and `make test`.
JOBS ?= $(shell nproc)
CMAKE_GEN := $(shell command -v ninja >/dev/null 2>&1 && echo "-G Ninja")
# ccache, where installed, makes rebuilds of unchanged files nearly free.
CMAKE_LAUNCHER := $(shell command -v ccache >/dev/null 2>&1 && echo "-DCMAKE_CXX_COMPILER_LAUNCHER=ccache")

.PHONY: all deps run test test-loaded test-asan soak fuzz bench build build-qt6 build-qt5 build-asan package package-check clean

all: build

deps:
	@scripts/install-deps.sh

build-qt6/CMakeCache.txt:
	cmake -S . -B build-qt6 $(CMAKE_GEN) $(CMAKE_LAUNCHER) -DTETHER_QT_MAJOR=6
build-qt5/CMakeCache.txt:
	cmake -S . -B build-qt5 $(CMAKE_GEN) $(CMAKE_LAUNCHER) -DTETHER_QT_MAJOR=5

build-qt6: deps build-qt6/CMakeCache.txt
	cmake --build build-qt6 -j $(JOBS)
build-qt5: deps build-qt5/CMakeCache.txt
	cmake --build build-qt5 -j $(JOBS)

# The variant that has QTermWidget: Qt 6 when qtermwidget6 exists, else Qt 5.
RUN_VARIANT := $(shell scripts/pick-variant.sh 2>/dev/null || echo qt5)
build: build-$(RUN_VARIANT)

# Only the program: tests and benchmarks are built by `make test` / `make bench`.
run: deps build-$(RUN_VARIANT)/CMakeCache.txt
	cmake --build build-$(RUN_VARIANT) -j $(JOBS) --target tether
	@scripts/run.sh build-$(RUN_VARIANT)

# make test's Qt 6 variant is this tree: built with AddressSanitizer and
# UndefinedBehaviorSanitizer (at -O1 -g1, the tests' own objects at -O0,
# without vptr, and with a memmove of its own: CMakeLists.txt and
# tests/CMakeLists.txt say why), every test of every layer run in it
# (issue 10). Instead of a plain Qt 6 tree, not beside it: a third tree would
# not fit make test's 25 minutes on 2 cores. The Qt 5 tree stays plain (what
# make package ships) and runs every test but three browser tests, which run
# here (tests/CMakeLists.txt says why); build-qt6 stays plain for make run
# and make bench. A
# report fails its test: every report is fatal (-fno-sanitize-recover,
# halt_on_error), and tests/sanitizers/run.sh fails a test when any process
# it started (the tether server, a restarted image, a client) wrote one.
# Runtime options and leak suppressions (library-owned memory only) are in
# tests/sanitizers/. What runs where and what it costs: docs/reliability.md,
# "make test: what runs where, and what it costs".
build-asan/CMakeCache.txt:
	cmake -S . -B build-asan $(CMAKE_GEN) $(CMAKE_LAUNCHER) -DTETHER_QT_MAJOR=6 -DTETHER_SANITIZE=address,undefined
build-asan: deps build-asan/CMakeCache.txt
	cmake --build build-asan -j $(JOBS)

# Both trees always run; the target fails at the end if any failed.
# ctest's parallel level per tree (issue 28): 4 on 2 cores, as the tests
# mostly wait (processes starting, sockets, timers). Measured: the Qt 5
# tree's C++ tests 201 s at -j 2, 137 s at -j 4 (158 s of CPU); the
# sanitized tree's 211 s at -j 4 with 364 s of CPU (about 330 s at -j 2),
# every test passing. The browser tests still run alone (RUN_SERIAL).
# The sanitized tree stays at 2 until -j 4 has passed beside a CPU hog
# (its tests are the timing-sensitive ones: ASan slows them 2-3 times).
# docs/performance.md, "Issue 28: 25 minutes with room".
CTEST_JOBS_ASAN ?= 2
CTEST_JOBS_QT5 ?= 4
test: build-asan build-qt5
	@rc=0; \
	for v in asan qt5; do \
	  j=$(CTEST_JOBS_ASAN); [ $$v = qt5 ] && j=$(CTEST_JOBS_QT5); \
	  echo "=== ctest: build-$$v (-j $$j)"; \
	  (cd build-$$v && ctest --output-on-failure -j $$j --timeout 300) || rc=1; \
	done; \
	if [ $$rc -eq 0 ]; then echo "make test: all tests passed in both Qt variants (Qt 6 under ASan and UBSan)"; \
	else echo "make test: FAILED (see above)"; fi; \
	exit $$rc

# make test beside a CPU hog on every core (issue 28): CI's machine is slower
# than a developer's, and a test that passes only on an idle machine has
# found a race. stress-ng (Debian) runs in its own process session and only
# the pid recorded here is stopped afterwards; its own --timeout bounds it
# should this make be killed first. Run it before every submission.
LOAD_WORKERS ?= $(JOBS)
test-loaded: build-asan build-qt5
	@setsid stress-ng --cpu $(LOAD_WORKERS) --timeout 3600 --quiet & hog=$$!; \
	echo "test-loaded: stress-ng --cpu $(LOAD_WORKERS) beside make test (pid $$hog)"; \
	$(MAKE) --no-print-directory test; rc=$$?; \
	kill -- -$$hog 2>/dev/null; wait $$hog 2>/dev/null; \
	exit $$rc

# The sanitized tree's tests alone.
test-asan: build-asan
	cd build-asan && ctest --output-on-failure -j 2 --timeout 300

# Longer than `make test` wants: restarts in place in a row while a session
# floods output and two viewers read it (make test runs 10 of them;
# tests/server/tst_restart.cpp, restartsInARowWhileFlooding);
# then SOAK_SECONDS of the attach/detach mix of issue 10 (clean, reset,
# reset mid-replay, supersede storms, spawn/kill; make test runs 10 s of it;
# tests/server/tst_soak.cpp), printing the server's descriptors, resident
# memory and zombies at checkpoints and failing on growth.
SOAK_RESTARTS ?= 500
SOAK_SECONDS ?= 600
soak: build-qt6
	cd build-qt6 && TETHER_TEST_RESTARTS=$(SOAK_RESTARTS) QT_QPA_PLATFORM=offscreen \
	  tests/tst_restart restartsInARowWhileFlooding
	cd build-qt6 && TETHER_SOAK_SECONDS=$(SOAK_SECONDS) QT_QPA_PLATFORM=offscreen tests/tst_soak

# libFuzzer (clang): each target of tests/fuzz for FUZZ_SECONDS, starting
# from its seeds in tests/fuzz/corpus/<target>/ (read only: what it finds
# goes to build-fuzz/corpus/<target>/, a crash to build-fuzz/crash-*). A
# crash fails the target; add the input to the seeds to keep it in make
# test (tests/fuzz/README.md). Leaks are left to make test's replays under
# LeakSanitizer: libFuzzer's check per input takes what Qt allocates once,
# on first use, for a leak.
FUZZ_SECONDS ?= 60
FUZZ_TARGETS ?= httprequest controlmessage spawnrequest terminalstate
build-fuzz/CMakeCache.txt:
	cmake -S . -B build-fuzz $(CMAKE_GEN) $(CMAKE_LAUNCHER) -DTETHER_QT_MAJOR=6 \
	  -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ -DTETHER_SANITIZE=address,undefined -DTETHER_FUZZ=ON
fuzz: deps build-fuzz/CMakeCache.txt
	cmake --build build-fuzz -j $(JOBS) --target fuzzers
	@for t in $(FUZZ_TARGETS); do \
	  echo "=== fuzz: $$t for $(FUZZ_SECONDS) s"; \
	  mkdir -p build-fuzz/corpus/$$t && \
	  (cd build-fuzz && ASAN_OPTIONS=detect_leaks=0 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
	    tests/fuzz/fuzz_$$t -max_total_time=$(FUZZ_SECONDS) -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
	      -artifact_prefix=$(CURDIR)/build-fuzz/ corpus/$$t $(CURDIR)/tests/fuzz/corpus/$$t) || exit 1; \
	done

# The figures of docs/performance.md (issue 11; not part of `make test`):
# builds Tether and the bench client (Qt 6), runs bench/run.py (about 10
# minutes, bounded; it starts its own servers with setsid on 127.0.0.1 port
# 0, and tmux and dtach as peers) and writes this run's figures into
# docs/performance.md. `make bench BENCH_QUICK=1` is a one-minute smoke run;
# `make bench BENCH_WRITE_DOC=` only prints the figures.
BENCH_WRITE_DOC ?= --write-doc
# The terminal window's keystroke echo (bench_window) needs QTermWidget:
# it is built in the Qt 5 tree and measured against the same servers.
bench: deps build-qt6/CMakeCache.txt build-qt5/CMakeCache.txt
	cmake --build build-qt6 -j $(JOBS) --target tether bench_client bench_nodelay_off
	cmake --build build-qt5 -j $(JOBS) --target bench_window
	BENCH_WINDOW=build-qt5/bench/bench_window bench/run.py build-qt6 $(BENCH_WRITE_DOC)

# The Debian package of the variant `make run` runs (the one with the local
# terminal window: Qt 5 on Debian 12), built from its build tree:
# build-qt5/tether_VERSION_ARCH.deb (packaging/README.md).
package: build-$(RUN_VARIANT)
	cd build-$(RUN_VARIANT) && cpack -G DEB
	@ls build-$(RUN_VARIANT)/tether_*.deb

# Installs that package with apt on a clean Debian 12 (a debootstrap root,
# needs root and the network; a few minutes, not part of `make test`).
package-check: package
	packaging/check-install.sh $$(ls -t build-$(RUN_VARIANT)/tether_*.deb | head -1)

clean:
	rm -rf build-qt6 build-qt5 build-asan
