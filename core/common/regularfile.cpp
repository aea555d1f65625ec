// SPDX-License-Identifier: GPL-2.0-or-later
#include "regularfile.h"

#include <QFile>

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace Tether {

bool readRegularFile(const QString &path, qint64 maxBytes, Symlinks symlinks, QByteArray *out, QString *error)
{
    out->clear();
    const int flags = O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY | (symlinks == Symlinks::Refuse ? O_NOFOLLOW : 0);
    const int fd = ::open(QFile::encodeName(path).constData(), flags);
    if (fd < 0) {
        const int e = errno;
        *error = e == ELOOP && symlinks == Symlinks::Refuse
            ? QStringLiteral("not a regular file (a symbolic link), not followed")
            : QString::fromLocal8Bit(std::strerror(e));
        return false;
    }
    struct stat st {};
    if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        ::close(fd);
        *error = QStringLiteral("not a regular file");
        return false;
    }
    QFile f;
    if (!f.open(fd, QIODevice::ReadOnly, QFileDevice::AutoCloseHandle)) {
        *error = f.errorString();
        ::close(fd);
        return false;
    }
    *out = f.read(maxBytes + 1);
    if (f.error() != QFileDevice::NoError) {
        *error = f.errorString();
        return false;
    }
    return true;
}

} // namespace Tether
