// SPDX-License-Identifier: GPL-2.0-or-later
#include "fdutil.h"

#include <QSocketNotifier>

#include <cerrno>
#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace Tether {

int pidfdOpen(pid_t pid)
{
#ifdef SYS_pidfd_open
    // The returned fd is always close-on-exec (pidfd_open(2)).
    return int(::syscall(SYS_pidfd_open, pid, 0));
#else
    Q_UNUSED(pid);
    errno = ENOSYS;
    return -1;
#endif
}

void closeFd(int &fd)
{
    if (fd >= 0) {
        ::close(fd);
        fd = -1;
    }
}

void dropNotifier(QSocketNotifier *&n)
{
    if (n) {
        n->setEnabled(false);
        n->deleteLater();
        n = nullptr;
    }
}

int moveAbove2(int fd)
{
    if (fd < 0 || fd > 2)
        return fd;
    const int moved = ::fcntl(fd, F_DUPFD_CLOEXEC, 3);
    ::close(fd);
    return moved;
}

} // namespace Tether
