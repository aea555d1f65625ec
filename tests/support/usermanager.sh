#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# Runs a systemd user manager (`systemd --user`) for a test, on a machine
# whose PID 1 is not systemd (a container, a VM's own init), without
# touching the rest of the machine:
#  - in a mount namespace of its own (`unshare -m`): /run/systemd/system
#    exists there only (systemd refuses to run as a user instance unless the
#    system "was booted with systemd", sd_booted(3): that directory), and
#    /sys/fs/cgroup there holds only the name=systemd (v1) and unified (v2)
#    hierarchies, so the manager never moves a process in the memory, cpu or
#    pids controllers;
#  - in a cgroup of its own, NAME (a new directory in each hierarchy), which
#    it treats as its delegated subtree: at start a manager moves every
#    process of its root cgroup into init.scope, so it must never start in a
#    shared one (started by hand in this machine's root cgroup, it moved
#    every process of the machine).
# Usage: usermanager.sh NAME RUNTIME_DIR CONFIG_HOME LOG
# LOG: a file for what the manager and its generators write (stderr, and
# /dev/console and /dev/kmsg, bind-mounted over both in its namespace: there
# is no journal); TETHER_TEST_SYSTEMD_LOG_LEVEL=debug for more.
# Needs root (mount namespace, cgroup directories); exits 77 with the reason
# on stderr when it cannot. The manager replaces this shell (exec), dies with
# its parent (setpriv --pdeathsig) and leaves its cgroup directories behind:
# the caller removes them (rmdir, deepest first) after the manager ended.
set -eu
name=$1 rt=$2 cfg=$3 log=$4
skip() { echo "usermanager: $*" >&2; exit 77; }
[ "$(id -u)" = 0 ] || skip "needs root (a mount namespace and cgroup directories)"
command -v systemd >/dev/null 2>&1 || [ -x /lib/systemd/systemd ] || skip "systemd is not installed"
sd=$(command -v systemd 2>/dev/null || echo /lib/systemd/systemd)
[ -d /sys/fs/cgroup/systemd ] || [ -f /sys/fs/cgroup/cgroup.controllers ] || skip "no cgroup hierarchy for systemd"
if [ "${TETHER_SD_IN_NS:-}" != 1 ]; then
    err=$(unshare -m --propagation private true 2>&1) || skip "no mount namespace: $err"
    TETHER_SD_IN_NS=1 exec unshare -m --propagation private "$0" "$@"
fi
hier=""
for h in systemd unified; do
    [ -d /sys/fs/cgroup/$h ] && hier="$hier $h"
done
# A pure cgroup v2 machine: /sys/fs/cgroup is the unified hierarchy itself.
[ -z "$hier" ] && hier=.
for h in $hier; do
    mkdir /sys/fs/cgroup/$h/$name || skip "cannot create a cgroup in /sys/fs/cgroup/$h"
    echo $$ > /sys/fs/cgroup/$h/$name/cgroup.procs || skip "cannot enter cgroup /sys/fs/cgroup/$h/$name"
done
if [ "$hier" != . ]; then
    keep=$(mktemp -d)
    for h in $hier; do mkdir "$keep/$h"; mount --bind /sys/fs/cgroup/$h "$keep/$h"; done
    mount -t tmpfs -o mode=0755 tether-cgroup /sys/fs/cgroup
    for h in $hier; do mkdir /sys/fs/cgroup/$h; mount --move "$keep/$h" /sys/fs/cgroup/$h; done
    rmdir "$keep"/* "$keep"
fi
mkdir -p /run/systemd
mount -t tmpfs -o mode=0755 tether-run-systemd /run/systemd
mkdir /run/systemd/system
touch "$log"
mount --bind "$log" /dev/console
mount --bind "$log" /dev/kmsg
export XDG_RUNTIME_DIR="$rt" XDG_CONFIG_HOME="$cfg"
unset NOTIFY_SOCKET LISTEN_FDS LISTEN_PID LISTEN_FDNAMES
# From here on everything the manager says goes to LOG (console = its stderr).
exec >>"$log" 2>&1
exec setpriv --pdeathsig TERM "$sd" --user --log-target=console --log-color=no \
    --log-level="${TETHER_TEST_SYSTEMD_LOG_LEVEL:-info}"
