// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <QHash>
#include <QList>
#include <QString>
#include <QStringList>
#include <sys/types.h>

/// Readers of /proc (Linux, proc(5)) shared by the engine (teardown, the
/// Sessions window's background-process count), the server (SESSION's
/// "foreground") and the runtime file's live-server check. Each reads a few
/// small files and never blocks on anything but the kernel.
namespace Tether {

/// The short program name of `pid` (/proc/<pid>/comm, at most 15 bytes, as
/// `ps -o comm` and tmux's pane_current_command show it); empty when the
/// process is gone or /proc is unreadable.
QString processName(pid_t pid);

/// The argv of `pid` (/proc/<pid>/cmdline, NUL-separated, proc(5)); empty
/// when the process is gone, is a zombie, or /proc is unreadable.
QStringList processCommandLine(pid_t pid);
/// The working directory of `pid` (the /proc/<pid>/cwd link); empty when it
/// cannot be read (gone, or another user's).
QString processCwd(pid_t pid);

/// Pids of every process whose session id (/proc/<pid>/stat field 6) is `sid`.
/// Zombies are included only if `includeZombies`.
QList<pid_t> processesInSession(pid_t sid, bool includeZombies = false);

/// Every session's processes (not zombies) from one scan of /proc: what
/// processesInSession() gives for each session id, for a caller that asks
/// about many sessions at once (the teardown of many sessions, issue 27).
QHash<pid_t, QList<pid_t>> processesBySession();

} // namespace Tether
