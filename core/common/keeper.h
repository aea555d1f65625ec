// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

/**
 * The session keeper (issue 24, docs/architecture.md "When Tether crashes"):
 * a tiny process of Tether's own, `tether keeper`, that holds a copy of each
 * session's PTY master (and the leader's pidfd) while `tether serve` runs,
 * so that a crash of the host (SIGKILL, SIGSEGV, an OOM kill) does not close
 * the last copy of a master: the kernel hangs up no shell, and the next
 * `tether serve` takes the descriptors back and adopts the sessions.
 *
 * The keeper is started by the host (KeeperLink, core/server), in a process
 * session of its own (double fork: not the host's child, not in its process
 * group), with two descriptors: a listening AF_UNIX SOCK_SEQPACKET socket
 * bound to socketPath() (in the private runtime directory, 0700) and the
 * keeper lock (lockPath(), flock(2) held for its whole life: one keeper per
 * user). It does nothing else: no Qt, no parsing of the metadata it is
 * given (opaque bytes whose first line is the session id), no network, no
 * reading of the masters. It waits in poll(2) on the listening socket, the
 * host's connection and an inotify watch of its directory: an idle keeper
 * costs no wakeup.
 *
 * Wire (one message per SOCK_SEQPACKET record, first byte the kind):
 *  host → keeper
 *   'H'               hello: answer every session held ('S'), then 'E'
 *   'A' META + fds    hold this session (1 fd: master; 2: master, pidfd);
 *                     replaces one with the same id
 *   'M' META          new metadata for the session of META's id
 *   'D' ID            drop (close) that session's descriptors
 *   'Q'               orderly stop: close everything and exit
 *  keeper → host
 *   'S' META + fds    a session held (answer to 'H')
 *   'L' MS            (answer to 'H', before 'E', once a host's connection
 *                     has ended) when the last one ended: ms since the epoch
 *                     (CLOCK_REALTIME), in decimal; after a crash of the
 *                     host, the time of the crash as the keeper saw it.
 *                     A host that does not know 'L' skips it.
 *   'E' PID           end of that list; PID: the keeper's, in decimal
 * META is "ID\n" followed by the host's own encoding (KeeperLink: JSON).
 *
 * The newest connection is the host: an older one is closed when another
 * is accepted (a restart in place closes its connection at the exec and
 * the next image connects again). When the host's connection ends, the
 * keeper goes on holding what it has (the host crashed) and exits when it
 * holds nothing. It exits, closing everything, on 'Q', when its socket file
 * or directory is removed (no host could find it again), or when no host
 * connected within 10 s of its start.
 */
namespace Tether::Keeper {

/// Environment variable of `tether keeper`: "LISTEN:LOCK", the descriptor
/// numbers of its listening socket and of the locked keeper lock.
inline constexpr char kFdsEnv[] = "TETHER_KEEPER_FDS";
/// Environment variable of `tether keeper`: the path its socket is bound to
/// (watched: the keeper exits when it is removed).
inline constexpr char kSocketEnv[] = "TETHER_KEEPER_SOCKET";
/// Largest message, bytes (metadata is an id, a name, argv and a cwd).
inline constexpr int kMaxMessage = 64 * 1024;

/// `tether keeper`: the keeper's main loop (above). Returns only on a bad
/// start (exit status 2: not started by `tether serve`); otherwise _exit()s.
int keeperMain(int argc, char **argv);

} // namespace Tether::Keeper
