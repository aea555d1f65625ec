// SPDX-License-Identifier: GPL-2.0-or-later
#include "runtimefile.h"
#include "logging.h"

#include <QFile>
#include <QJsonDocument>
#include <QStandardPaths>

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace Tether {
namespace RuntimeFile {

namespace {
QString errnoText(const QString &what, const QString &file, int err)
{
    return QStringLiteral("%1 %2: %3").arg(what, file, QString::fromLocal8Bit(std::strerror(err)));
}
} // namespace

QString directory()
{
    QString base = qEnvironmentVariable("XDG_RUNTIME_DIR");
    if (base.isEmpty())
        base = QStandardPaths::writableLocation(QStandardPaths::RuntimeLocation);
    return base + QStringLiteral("/tether");
}

QString path()
{
    return directory() + QStringLiteral("/server.json");
}

bool write(const QJsonObject &contents, QString *error)
{
    const QString dir = directory();
    const QByteArray dirLocal = QFile::encodeName(dir);
    if (::mkdir(dirLocal.constData(), 0700) != 0 && errno != EEXIST) {
        if (error)
            *error = errnoText(QStringLiteral("cannot create"), dir, errno);
        return false;
    }
    // An existing directory may have looser permissions (created by hand or
    // by an old version): tighten it, since it holds the key.
    struct stat st;
    if (::stat(dirLocal.constData(), &st) != 0 || !S_ISDIR(st.st_mode)) {
        if (error)
            *error = QStringLiteral("%1 is not a directory").arg(dir);
        return false;
    }
    if (st.st_uid != ::geteuid()) {
        if (error)
            *error = QStringLiteral("%1 belongs to another user").arg(dir);
        return false;
    }
    if ((st.st_mode & 07777) != 0700 && ::chmod(dirLocal.constData(), 0700) != 0) {
        if (error)
            *error = errnoText(QStringLiteral("cannot chmod"), dir, errno);
        return false;
    }

    const QString finalPath = path();
    const QString tmpPath = finalPath + QStringLiteral(".tmp-%1").arg(::getpid());
    const QByteArray tmpLocal = QFile::encodeName(tmpPath);
    ::unlink(tmpLocal.constData());
    const int fd = ::open(tmpLocal.constData(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0) {
        if (error)
            *error = errnoText(QStringLiteral("cannot create"), tmpPath, errno);
        return false;
    }
    // The umask can only remove bits; make the mode exact anyway.
    ::fchmod(fd, 0600);
    const QByteArray data = QJsonDocument(contents).toJson(QJsonDocument::Compact) + '\n';
    qsizetype done = 0;
    while (done < data.size()) {
        const ssize_t n = ::write(fd, data.constData() + done, size_t(data.size() - done));
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            const int err = errno;
            ::close(fd);
            ::unlink(tmpLocal.constData());
            if (error)
                *error = errnoText(QStringLiteral("cannot write"), tmpPath, err);
            return false;
        }
        done += n;
    }
    ::close(fd);
    if (::rename(tmpLocal.constData(), QFile::encodeName(finalPath).constData()) != 0) {
        const int err = errno;
        ::unlink(tmpLocal.constData());
        if (error)
            *error = errnoText(QStringLiteral("cannot rename to"), finalPath, err);
        return false;
    }
    qCDebug(lcServer) << "runtime file written:" << finalPath;
    return true;
}

QJsonObject read()
{
    QFile f(path());
    if (!f.open(QIODevice::ReadOnly))
        return QJsonObject();
    return QJsonDocument::fromJson(f.read(64 * 1024)).object();
}

bool removeIfOwned(qint64 pid)
{
    const QJsonObject o = read();
    if (o.isEmpty() || qint64(o.value(QStringLiteral("pid")).toDouble(-1)) != pid)
        return false;
    const bool ok = QFile::remove(path());
    qCDebug(lcServer) << "runtime file removed:" << ok;
    return ok;
}

} // namespace RuntimeFile
} // namespace Tether
