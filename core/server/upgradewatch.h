// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <QByteArray>
#include <QHash>
#include <QJsonValue>
#include <QObject>
#include <QPointer>
#include <QSet>
#include <QString>
#include <QTimer>

#include <functional>
#include <sys/types.h>

class QProcess;
class QSocketNotifier;

namespace Tether {

/**
 * Notices that the Tether binary on disk was replaced (a package upgrade, a
 * `make install`) while this process runs the old one, and finds out the new
 * version, so that the tray, the dashboard and the API can say "Tether was
 * updated — restart to use version X (sessions are kept)".
 *
 * What counts: the file a restart in place would execute (the `binary`
 * function: RestartInPlace::binary()) is another file than the running
 * image, compared by device and inode with stat("/proc/self/exe"), which
 * names the running image even after it was deleted (proc(5)). An upgrade
 * never rewrites the running file in place (the kernel refuses writes to a
 * running executable with ETXTBSY, execve(2)); dpkg and install(1) write a
 * new file and rename it over the old name, so the inode changes.
 *
 * How: inotify(7) on the binary's directory (and on its symlink target's
 * directory, when it is a symlink), filtered by file name. Not
 * QFileSystemWatcher: when the user's inotify instances run out
 * (fs.inotify.max_user_instances, 128 by default) it falls back silently to
 * a polling engine with a timer, and an idle Tether must not wake up; it
 * also reports every change in /usr/bin (each package install) without the
 * name, and has no close-after-write event, so a binary still being copied
 * would be run. Here an idle server costs nothing: no timer runs until an
 * event for the binary's name arrives. Events are coalesced (settleMs after
 * the last one), then the file is stat'ed; a file not seen before is run as
 * `BINARY --version` with QProcess, asynchronously (never waited for),
 * bounded by probeTimeoutMs (then killed), its output capped at 4 KiB, and
 * its first line parsed (parseVersionLine, "tether 1.2.3"). A binary that
 * fails that (half-written, broken, not Tether), or is not executable
 * (access(2) X_OK: a restart would be refused), is no update.
 *
 * Errors: without inotify (inotify_init1 fails, e.g. EMFILE) nothing is
 * watched; start() returns false with the reason, which the caller logs.
 */
class UpgradeWatch : public QObject
{
    Q_OBJECT
public:
    /// `binary` returns the path a restart would execute (read at each check).
    explicit UpgradeWatch(std::function<QString()> binary, QObject *parent = nullptr);
    ~UpgradeWatch() override;

    /// Starts watching and checks once (the binary may have been replaced
    /// before this process started watching). False with *error when inotify
    /// is not available or the binary is unknown; nothing is watched then.
    bool start(QString *error);

    /// The binary on disk is another Tether than the one running: its
    /// version (as it printed it) and path. Empty version when there is none.
    struct Update {
        QString version;
        QString binary;
    };
    Update update() const { return m_update; }
    /// {"version": "1.2.3", "binary": "/usr/bin/tether"}, or null when there
    /// is no update: the `update` field of GET /api/restart (docs/protocol.md).
    QJsonValue updateJson() const;

    /// Delay after the last inotify event before the file is looked at, ms
    /// (default 300): an install writes, renames and chmods in a burst.
    void setSettleDelay(int msec) { m_settle.setInterval(msec); }
    /// Bound on `BINARY --version`, ms (default 5000).
    void setProbeTimeout(int msec) { m_probeTimeout.setInterval(msec); }

    /**
     * Before an execve(2) of this process: a `--version` probe still running
     * would outlive this image as an unknown child (a zombie the next image
     * never reaps). Kills it (SIGKILL) and returns its pid, for the next
     * image to reap (Handover::State::reap); 0 when none runs. If the exec
     * fails, QProcess reaps it as usual and the file is checked again.
     */
    pid_t abandonProbe();

Q_SIGNALS:
    /// update() changed (an update appeared, changed version or went away).
    void updateChanged();

private:
    struct Identity {
        dev_t dev = 0;
        ino_t ino = 0;
        qint64 mtimeNs = 0;
        qint64 size = -1;
        mode_t mode = 0;
        bool operator==(const Identity &o) const
        {
            return dev == o.dev && ino == o.ino && mtimeNs == o.mtimeNs && size == o.size && mode == o.mode;
        }
        bool operator!=(const Identity &o) const { return !(*this == o); }
    };

    void onInotify();
    /// Adds watches on the directories of the binary and of its target.
    void updateWatches();
    void check();
    void probe(const QString &path, const Identity &id);
    void probeDone(bool ok, const QByteArray &output);
    void setUpdate(const Update &u);
    void killProbe();

    std::function<QString()> m_binary;
    int m_inotify = -1;
    QSocketNotifier *m_notifier = nullptr;
    QHash<int, QString> m_dirs;      ///< inotify watch descriptor → directory
    QSet<QString> m_names;           ///< absolute paths whose events matter
    QTimer m_settle;                 ///< single shot: coalesces events
    QTimer m_probeTimeout;           ///< single shot: kills a hung probe
    QPointer<QProcess> m_probe;
    QString m_probePath;
    Identity m_probeId;
    Identity m_seen;                 ///< the last file probed (or being probed)
    bool m_recheck = false;          ///< an event came during the probe
    Update m_update;
    QByteArray m_buf;                ///< inotify read buffer
};

} // namespace Tether
