// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include "apiclient.h"

#include <QObject>
#include <QPointer>
#include <QString>
#include <QStringList>
#include <QTimer>

class QFileSystemWatcher;
class QSocketNotifier;

namespace Tether {

/**
 * Finds this user's Tether host (`tether serve`, the process that holds the
 * sessions), or starts one that outlives whoever started it: the desktop
 * app's way to its sessions (issue 23), as tmux's first client starts the
 * tmux server.
 *
 * start():
 *  1. The runtime file (RuntimeFile::read()) names a live process (not a
 *     zombie) that answers `GET /api/restart` with the file's key: it is
 *     the host, ready(endpoint, false). (Its name is not checked: the
 *     answer is the proof, whatever the binary is called.)
 *  2. Else it starts `PROGRAM serve ARGS` detached: QProcess::startDetached
 *     (fork, setsid(2), fork again: its own process session and group, not
 *     our child, so a SIGKILL of the caller, the end of its terminal or
 *     display, and the kernel's SIGHUP to the caller's session reach it
 *     not), stdin /dev/null, stdout and stderr appended to logPath().
 *     Then it waits, event-driven (no polling): a QFileSystemWatcher on the
 *     runtime file's directory notices server.json (re)written, and step 1
 *     is tried again; a pidfd of the started host notices its exit.
 *  3. Two callers racing (two desktop launches at once) each start one;
 *     the host lock (HostLock) lets exactly one serve; the other exits 1
 *     saying "Tether is already running", and both callers find the
 *     winner's runtime file: ready() for both, with the same endpoint.
 *
 * failed(why) when the started host exits without a host serving (its log
 * said something other than "already running": the text is in `why`),
 * or when nothing serves within the timeout (default 15 s). Each start()
 * ends in exactly one of ready() and failed().
 */
class HostLauncher : public QObject
{
    Q_OBJECT
public:
    explicit HostLauncher(QObject *parent = nullptr);
    ~HostLauncher() override;

    /// The `tether` executable to run as `PROGRAM serve` (default:
    /// QCoreApplication::applicationFilePath(), this very binary).
    void setProgram(const QString &program) { m_program = program; }
    /// Arguments after `serve` (e.g. the desktop's --port and --bind).
    void setArguments(const QStringList &args) { m_arguments = args; }
    /// How long to wait for a started host to serve, ms (default 15000).
    void setTimeout(int msec) { m_timeoutMs = msec; }

    /// Where a started host's stdout and stderr go (appended):
    /// $XDG_STATE_HOME/tether/host.log ($HOME/.local/state/... when unset).
    static QString logPath();

    /// See the class comment. Call once per object.
    void start();
    /// The pid of the host this object started (0 when it found one running
    /// or has not started any). It may have exited since (lost the race).
    qint64 startedPid() const { return m_startedPid; }

Q_SIGNALS:
    /// A host serves at `endpoint`; `started`: the one this object started.
    void ready(const Tether::ServerEndpoint &endpoint, bool started);
    void failed(const QString &why);

private:
    void probe();
    void spawn();
    void onHostExited();
    void finish(bool ok, const ServerEndpoint &endpoint, bool started, const QString &why);
    /// What the started host wrote to the log since we started it.
    QString newLogText() const;

    QString m_program;
    QStringList m_arguments;
    int m_timeoutMs = 15000;
    bool m_done = false;
    bool m_probing = false;
    bool m_probeAgain = false;
    bool m_spawned = false;
    bool m_hostExited = false;
    qint64 m_startedPid = 0;
    qint64 m_logStart = 0;
    int m_pidfd = -1;
    QSocketNotifier *m_exitNotifier = nullptr;
    QFileSystemWatcher *m_watcher = nullptr;
    QPointer<ApiClient> m_api;
    QTimer m_timeout;
};

} // namespace Tether
