// SPDX-License-Identifier: GPL-2.0-or-later
// A real full filesystem for the tests of what Tether does when it cannot
// write (tst_serve_cli, tst_restart): a small tmpfs, filled up.
#pragma once

#include <QByteArray>
#include <QFile>
#include <QString>

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sched.h>
#include <sys/mount.h>
#include <unistd.h>

namespace TestUtil {

/**
 * A tmpfs of `kib` KiB (mode 0700, ours) mounted at `path`, an existing
 * empty directory. fill() then writes a file until write(2) fails with
 * ENOSPC: from then on no file there can get a byte (directories can still
 * be made: they take no data pages), as on a full disk.
 *
 * The mount is made in a mount namespace of the calling thread alone
 * (unshare(2) CLONE_NEWNS, every mount in it made private first): no other
 * process on the machine sees it, and it goes with this process however the
 * test ends. Processes started from this thread afterwards (a server,
 * client commands) inherit the namespace, so they see it. The destructor
 * unmounts it (lazily: a server may still have a file open there).
 *
 * Needs CAP_SYS_ADMIN (root): without it ok() is false and why() says what
 * failed, for the test's QSKIP.
 */
class FullTmpfs
{
public:
    explicit FullTmpfs(const QString &path, int kib = 64)
        : m_path(QFile::encodeName(path))
    {
        if (::unshare(CLONE_NEWNS) != 0) {
            const int err = errno;
            m_why = errnoText("unshare(CLONE_NEWNS)", err);
            return;
        }
        // Mounts on Debian are shared (systemd): without this the tmpfs
        // would propagate to the machine's own namespace.
        if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) {
            const int err = errno;
            m_why = errnoText("making the mounts private", err);
            return;
        }
        const QByteArray options = "size=" + QByteArray::number(kib) + "k,mode=0700";
        if (::mount("tmpfs", m_path.constData(), "tmpfs", MS_NOSUID | MS_NODEV, options.constData()) != 0) {
            const int err = errno;
            m_why = errnoText("mounting a tmpfs on " + m_path, err);
            return;
        }
        m_mounted = true;
    }
    ~FullTmpfs()
    {
        if (m_mounted)
            ::umount2(m_path.constData(), MNT_DETACH);
    }
    FullTmpfs(const FullTmpfs &) = delete;
    FullTmpfs &operator=(const FullTmpfs &) = delete;

    bool ok() const { return m_mounted; }
    QString why() const { return m_why; }

    /// Writes `path`/filler until the filesystem is full; true when a write
    /// failed with ENOSPC.
    bool fill()
    {
        const int fd = ::open((m_path + "/filler").constData(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        if (fd < 0)
            return false;
        char block[4096] = {};
        int err = 0;
        for (;;) {
            const ssize_t n = ::write(fd, block, sizeof block);
            if (n < 0 && errno == EINTR)
                continue;
            if (n <= 0) {
                err = n < 0 ? errno : 0;
                break;
            }
        }
        ::close(fd);
        return err == ENOSPC;
    }
    /// Frees the space fill() took.
    bool makeRoom() { return ::unlink((m_path + "/filler").constData()) == 0; }

private:
    static QString errnoText(const QByteArray &what, int err)
    {
        return QString::fromLocal8Bit(QByteArray(what).append(": ").append(std::strerror(err)));
    }

    QByteArray m_path;
    bool m_mounted = false;
    QString m_why;
};

} // namespace TestUtil
