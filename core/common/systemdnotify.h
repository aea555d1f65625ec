// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <QByteArray>
#include <QString>

#include <cstddef>

namespace Tether {

/**
 * Tells the service manager that started Tether what it is doing, as
 * sd_notify(3) does, without libsystemd (not a dependency): one datagram
 * per call on the AF_UNIX socket named by $NOTIFY_SOCKET (a path, or an
 * abstract address written with a leading '@'), holding newline-separated
 * assignments ("READY=1", "RELOADING=1", "MAINPID=N", "STOPPING=1",
 * "STATUS=text"). The manager learns the sender's pid from the socket
 * (SCM_CREDENTIALS), and with NotifyAccess=all (systemd.service(5)) takes
 * them from any process of the unit: that is how the restart guardian, a
 * second process, becomes the unit's main process while a restart in place
 * is under way (docs/architecture.md, "Restart in place").
 *
 * Without $NOTIFY_SOCKET (`tether` from a desktop or a shell, or a unit of
 * Type=simple) every call does nothing and succeeds.
 *
 * The variable is taken out of the environment at start
 * (takeFromEnvironment()), as sd_notify(3)'s unset_environment does: the
 * programs in sessions must not inherit it, or a `tether serve` started in
 * a session would tell Tether's unit that it is its main process. A restart
 * in place gives it back to the next image (environmentEntry()).
 */
namespace SystemdNotify {

/// The environment variable systemd sets for Type=notify services.
inline constexpr char kSocketEnv[] = "NOTIFY_SOCKET";

/// Records $NOTIFY_SOCKET and removes it from the environment. Call once at
/// start, before any thread exists (it edits the environment).
void takeFromEnvironment();

/// Whether a service manager listens (NOTIFY_SOCKET was set at start).
bool isEnabled();

/// "NOTIFY_SOCKET=ADDRESS" for the environment of the next process image of
/// a restart in place; empty when none was set.
QByteArray environmentEntry();

/// Sends `state` (assignments separated by '\n', sd_notify(3)) to the
/// recorded socket. Never blocks (MSG_DONTWAIT: a manager that does not read
/// loses the message rather than stalling Tether). True when sent or when no
/// manager listens; false with *error (the address and errno's text) when
/// the socket cannot be reached.
bool notify(const QByteArray &state, QString *error = nullptr);

/// "MONOTONIC_USEC=N": CLOCK_MONOTONIC now, in microseconds, which
/// sd_notify(3) asks to send along with RELOADING=1.
QByteArray monotonicUsec();

/**
 * The datagram itself, for code that runs before anything else of the
 * program (the restart guardian, Qt-free): sends `length` bytes of
 * `message` to `address` ("/path" or "@abstract"). Returns 0, or an errno
 * value: EINVAL for an empty or relative address or one longer than
 * sun_path, EAFNOSUPPORT for other schemes (systemd 253's "vsock:"), else
 * socket(2)'s or sendto(2)'s (ECONNREFUSED: nobody bound there; EAGAIN:
 * the manager's queue is full).
 */
int sendDatagram(const char *address, const char *message, std::size_t length);

/**
 * sd_notify_barrier(3) without libsystemd, Qt-free like sendDatagram():
 * sends "BARRIER=1" with the write end of a new pipe attached
 * (SCM_RIGHTS), closes ours, and waits in poll(2) until the manager has
 * closed its copy, which it does once it has processed every message this
 * process sent before. Blocks up to `timeoutMs`: for the restart guardian
 * only, which must not exit before systemd has read that it is no longer
 * the main process. Returns 0, ETIMEDOUT, or the errno of a step
 * (sendDatagram()'s for the address).
 */
int barrier(const char *address, int timeoutMs);

} // namespace SystemdNotify
} // namespace Tether
