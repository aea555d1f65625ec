# SPDX-License-Identifier: GPL-2.0-or-later
# The README's two commands: `make run` and `make test`.
JOBS ?= $(shell nproc)
CMAKE_GEN := $(shell command -v ninja >/dev/null 2>&1 && echo "-G Ninja")
# ccache, where installed, makes rebuilds of unchanged files nearly free.
CMAKE_LAUNCHER := $(shell command -v ccache >/dev/null 2>&1 && echo "-DCMAKE_CXX_COMPILER_LAUNCHER=ccache")

.PHONY: all deps run test soak bench build build-qt6 build-qt5 package package-check clean

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

run: build-$(RUN_VARIANT)
	@scripts/run.sh build-$(RUN_VARIANT)

# Both variants always run; the target fails at the end if either failed.
test: build-qt6 build-qt5
	@rc=0; \
	for v in qt6 qt5; do \
	  echo "=== ctest: build-$$v"; \
	  (cd build-$$v && ctest --output-on-failure -j 2 --timeout 300) || rc=1; \
	done; \
	if [ $$rc -eq 0 ]; then echo "make test: all tests passed in both Qt variants"; \
	else echo "make test: FAILED (see above)"; fi; \
	exit $$rc

# Longer than `make test` wants: restarts in place in a row while a session
# floods output and two viewers read it (make test runs 100 of them, in
# 15-60 s here; tests/server/tst_restart.cpp, restartsInARowWhileFlooding).
SOAK_RESTARTS ?= 500
soak: build-qt6
	cd build-qt6 && TETHER_TEST_RESTARTS=$(SOAK_RESTARTS) QT_QPA_PLATFORM=offscreen \
	  tests/tst_restart restartsInARowWhileFlooding

# The figures of docs/performance.md (issue 11; not part of `make test`):
# builds Tether and the bench client (Qt 6), runs bench/run.py (under 10
# minutes, bounded; it starts its own servers with setsid on 127.0.0.1 port
# 0, and tmux and dtach as peers) and writes this run's figures into
# docs/performance.md. `make bench BENCH_QUICK=1` is a one-minute smoke run;
# `make bench BENCH_WRITE_DOC=` only prints the figures.
BENCH_WRITE_DOC ?= --write-doc
bench: deps build-qt6/CMakeCache.txt
	cmake --build build-qt6 -j $(JOBS) --target tether bench_client bench_nodelay_off
	bench/run.py build-qt6 $(BENCH_WRITE_DOC)

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
	rm -rf build-qt6 build-qt5
