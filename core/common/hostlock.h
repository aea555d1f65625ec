// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <QByteArray>
#include <QString>

namespace Tether {

/**
 * Exactly one Tether host (the process that holds the sessions: `tether
 * serve`, or the desktop app while it still hosts them) per user, whatever
 * starts first: an exclusive flock(2) on `RuntimeFile::directory()/host.lock`
 * (`$XDG_RUNTIME_DIR/tether/host.lock`, directory 0700, file 0600), held
 * for the life of the process. The kernel lets go of it when the process
 * ends however it ends (exit, crash, SIGKILL), so a stale lock cannot
 * exist; two hosts started at the same instant cannot both get it (a lock,
 * not a race on the port or on server.json).
 *
 * The file holds the holder's pid as decimal text and a newline, written
 * after the lock is taken; holderPid() reads it, for the refusal's message.
 *
 * Restart in place: the descriptor is close-on-exec, except across the
 * exec of a restart (RestartInPlace clears the flag on fd() like on the
 * PTY masters and passes its number in kHandoverEnv); the guardian of that
 * restart inherits it too, so the lock is held without a gap until the
 * image that keeps the sessions adopts it (acquire() takes it from the
 * environment).
 */
class HostLock
{
public:
    /// TETHER_HANDOVER_LOCK=FD: the lock's descriptor, inherited across the
    /// exec of a restart in place. Read and removed by acquire().
    static const char kHandoverEnv[];

    HostLock() = default;
    ~HostLock();
    HostLock(const HostLock &) = delete;
    HostLock &operator=(const HostLock &) = delete;

    /// What acquire() found.
    enum class Result {
        Acquired,  ///< this process holds the lock (taken, or adopted from a restart in place)
        Held,      ///< another process holds it: another host runs (holderPid())
        Unusable,  ///< the file cannot be made or locked (*error says why): no lock is held
    };
    /**
     * Takes the lock without waiting (LOCK_EX | LOCK_NB): adopts the
     * descriptor named by kHandoverEnv when there is one (a restart in
     * place; the variable is removed either way), else opens (O_CREAT,
     * 0600, O_NOFOLLOW) and locks path(), creating the directory as
     * RuntimeFile::ensureDirectory() does. On Acquired writes our pid into
     * the file. Held: *holder (if given) gets the pid the holder wrote (0 if
     * none could be read). Unusable: *error (errno text and path); callers
     * serve all the same (as without server.json) and warn.
     */
    Result acquire(QString *error = nullptr, qint64 *holder = nullptr);
    /// Lets go of the lock (closes the descriptor). Also done by the destructor.
    void release();
    bool isHeld() const { return m_fd >= 0; }
    /// The locked descriptor, -1 when not held (RestartInPlace keeps it open across the exec).
    int fd() const { return m_fd; }

    /// The lock file: RuntimeFile::directory() + "/host.lock".
    static QString path();

private:
    int m_fd = -1;
};

} // namespace Tether
