// SPDX-License-Identifier: GPL-2.0-or-later
#include "hostlock.h"
#include "runtimefile.h"

#include <QFile>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

namespace Tether {

const char HostLock::kHandoverEnv[] = "TETHER_HANDOVER_LOCK";

namespace {
QString errnoText(const QString &what, const QString &file, int err)
{
    return QStringLiteral("%1 %2: %3").arg(what, file, QString::fromLocal8Bit(std::strerror(err)));
}

/// The pid written in the lock file open as `fd`; 0 when none can be read.
qint64 readPid(int fd)
{
    char buf[32] = {};
    const ssize_t n = ::pread(fd, buf, sizeof buf - 1, 0);
    if (n <= 0)
        return 0;
    char *end = nullptr;
    const long long pid = std::strtoll(buf, &end, 10);
    return end != buf && pid > 0 ? qint64(pid) : 0;
}

void writePid(int fd)
{
    const QByteArray text = QByteArray::number(qint64(::getpid())) + '\n';
    if (::ftruncate(fd, 0) == 0) {
        const ssize_t ignored = ::pwrite(fd, text.constData(), size_t(text.size()), 0);
        Q_UNUSED(ignored); // the pid is for messages only; the lock is the flock
    }
}
} // namespace

HostLock::~HostLock()
{
    release();
}

QString HostLock::path()
{
    return RuntimeFile::directory() + QStringLiteral("/host.lock");
}

void HostLock::release()
{
    if (m_fd >= 0)
        ::close(m_fd);
    m_fd = -1;
}

HostLock::Result HostLock::acquire(QString *error, qint64 *holder)
{
    if (holder)
        *holder = 0;
    if (m_fd >= 0)
        return Result::Acquired;
    // A restart in place: the previous image's descriptor, still locked.
    const QByteArray inherited = qgetenv(kHandoverEnv);
    ::unsetenv(kHandoverEnv);
    if (!inherited.isEmpty()) {
        bool ok = false;
        const int fd = inherited.toInt(&ok);
        if (ok && fd >= 0 && ::fcntl(fd, F_GETFD) >= 0) {
            ::fcntl(fd, F_SETFD, FD_CLOEXEC);
            // Ours already (the same open file description); taking it again
            // is a no-op that confirms it.
            if (::flock(fd, LOCK_EX | LOCK_NB) == 0) {
                m_fd = fd;
                writePid(fd); // a guardian's takeover runs under another pid
                return Result::Acquired;
            }
            ::close(fd);
        }
    }
    QString why;
    if (!RuntimeFile::ensureDirectory(&why)) {
        if (error)
            *error = why;
        return Result::Unusable;
    }
    const QString file = path();
    const int fd = ::open(QFile::encodeName(file).constData(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0) {
        if (error)
            *error = errnoText(QStringLiteral("cannot open"), file, errno);
        return Result::Unusable;
    }
    int rc;
    do
        rc = ::flock(fd, LOCK_EX | LOCK_NB);
    while (rc != 0 && errno == EINTR);
    if (rc != 0) {
        const int err = errno;
        if (err == EWOULDBLOCK) {
            if (holder)
                *holder = readPid(fd);
            ::close(fd);
            return Result::Held;
        }
        ::close(fd);
        if (error)
            *error = errnoText(QStringLiteral("cannot lock"), file, err);
        return Result::Unusable;
    }
    ::fchmod(fd, 0600);
    writePid(fd);
    m_fd = fd;
    return Result::Acquired;
}

} // namespace Tether
