// SPDX-License-Identifier: GPL-2.0-or-later
// What a test of the desktop app (DesktopApp, a client of its host, issue 23)
// needs around it: a user of its own inside the test's directory, and the
// host that the app started stopped again whatever the test's outcome.
#pragma once

#include "runtimefile.h"

#include <QDir>
#include <QFile>
#include <QTemporaryDir>
#include <QTest>
#include <QtGlobal>

#include <cerrno>
#include <csignal>

namespace DesktopHost {

/// Whether process `pid` exists (not reaped; a host is not the test's child,
/// so init reaps it as soon as it exits).
inline bool alive(qint64 pid)
{
    return pid > 0 && (::kill(pid_t(pid), 0) == 0 || errno == EPERM);
}

/// The pid the runtime file names (0 when none).
inline qint64 runtimePid()
{
    return qint64(Tether::RuntimeFile::read().value(QStringLiteral("pid")).toDouble());
}

/// Makes this process a user of its own inside `dir`: XDG_RUNTIME_DIR (mode
/// 0700, as pam_systemd makes it), XDG_CONFIG_HOME, XDG_STATE_HOME and HOME,
/// TETHER_URL/KEY unset, SIGPIPE ignored. A host the app starts inherits it:
/// its settings, runtime file, log and session records stay in `dir`. The
/// session bus is the caller's choice (DBUS_SESSION_BUS_ADDRESS).
inline void isolateUser(const QTemporaryDir &dir)
{
    const QString runtime = dir.filePath(QStringLiteral("runtime"));
    QDir().mkpath(runtime);
    QFile::setPermissions(runtime, QFile::ReadOwner | QFile::WriteOwner | QFile::ExeOwner);
    qputenv("XDG_RUNTIME_DIR", runtime.toLocal8Bit());
    qputenv("XDG_CONFIG_HOME", dir.filePath(QStringLiteral("config")).toLocal8Bit());
    qputenv("XDG_STATE_HOME", dir.filePath(QStringLiteral("state")).toLocal8Bit());
    qputenv("HOME", dir.filePath(QStringLiteral("home")).toLocal8Bit());
    QDir().mkpath(dir.filePath(QStringLiteral("home")));
    qunsetenv("TETHER_URL");
    qunsetenv("TETHER_KEY");
    ::signal(SIGPIPE, SIG_IGN);
}

/// SIGTERM to the host the runtime file names (this user's), and waits for it
/// to be gone; SIGKILL after 15 s. Nothing when none runs. Call it from a
/// test's cleanup(), which runs whether the test failed or not: a host is a
/// process apart that would otherwise outlive the test.
inline void stopHost()
{
    const qint64 pid = runtimePid();
    if (!alive(pid))
        return;
    ::kill(pid_t(pid), SIGTERM);
    if (!QTest::qWaitFor([pid] { return !alive(pid); }, 15000)) {
        ::kill(pid_t(pid), SIGKILL);
        (void)QTest::qWaitFor([pid] { return !alive(pid); }, 5000); // SIGKILL cannot be refused
    }
}

} // namespace DesktopHost
