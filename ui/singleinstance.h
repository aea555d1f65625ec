// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <QLockFile>
#include <QObject>
#include <QTimer>
#include <memory>

class QLocalServer;
class QLocalSocket;

namespace Tether {

/**
 * One desktop Tether per user: the first launch becomes the primary instance,
 * a later launch asks it to raise its Sessions window and exits.
 *
 * Race-free election with a QLockFile (<dir>/tether-desktop.lock; a lock left
 * by a dead process is taken over), then a QLocalServer on
 * <dir>/tether-desktop.sock for hand-offs. `dir` defaults to the per-user
 * runtime directory (RuntimeFile::baseDirectory(): $XDG_RUNTIME_DIR or Qt's fallback,
 * mode 0700), so other users can neither see nor reach it; the socket is also
 * created with QLocalServer::UserAccessOption.
 *
 * Protocol: the secondary sends the line "raise\n", the primary emits
 * raiseRequested() and answers "ok\n". Everything is event driven: the
 * secondary retries connecting every 100 ms (the primary may still be starting
 * up) and gives up after kHandOffTimeoutMs.
 */
class SingleInstance : public QObject
{
    Q_OBJECT
public:
    static constexpr int kHandOffTimeoutMs = 5000;

    /// `dir`: where the lock and socket live; empty = the runtime directory.
    explicit SingleInstance(const QString &dir = QString(), QObject *parent = nullptr);
    ~SingleInstance() override;

    /// Tries to become the primary instance: takes the lock and listens.
    /// Returns false when another live instance holds the lock (then call
    /// requestRaise()), or when listening fails (*error set; then
    /// isPrimary() is still true: the lock is ours, hand-offs will not work).
    bool claim(QString *error = nullptr);
    bool isPrimary() const { return m_primary; }
    /// Pid of the instance holding the lock (0 if unknown).
    qint64 primaryPid() const;

    /// Primary: lets go of the lock and the socket (removing both files), as
    /// the destructor does, so that the process image a restart in place
    /// execs (same pid) can claim() them: a lock naming a live pid would
    /// otherwise look held by another instance. claim() again if the exec
    /// fails.
    void release();

    /// Secondary: asks the primary to raise its window; handOffFinished follows.
    void requestRaise();

    QString socketPath() const { return m_socketPath; }
    QString lockPath() const { return m_lockPath; }

Q_SIGNALS:
    /// Primary: another launch asked us to show ourselves.
    void raiseRequested();
    /// Secondary: the primary answered (true) or could not be reached (false).
    void handOffFinished(bool ok);

private:
    void onNewConnection();
    void tryConnect();
    void finishHandOff(bool ok);

    QString m_socketPath;
    QString m_lockPath;
    std::unique_ptr<QLockFile> m_lock;
    QLocalServer *m_server = nullptr;
    QLocalSocket *m_client = nullptr;
    QTimer m_retry;
    QTimer m_deadline;
    bool m_primary = false;
    bool m_handOffDone = false;
};

} // namespace Tether
