// SPDX-License-Identifier: GPL-2.0-or-later
#include "runtimefile.h"
#include "logging.h"

#include <QFile>
#include <QJsonDocument>
#include <QDir>

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

namespace Tether {
namespace RuntimeFile {

namespace {
QString errnoText(const QString &what, const QString &file, int err)
{
    return QStringLiteral("%1 %2: %3").arg(what, file, QString::fromLocal8Bit(std::strerror(err)));
}

/// True when `path` is a directory (not a symlink) owned by us; else *error.
bool ownDirectory(const QString &path, QString *error)
{
    struct stat st;
    if (::lstat(QFile::encodeName(path).constData(), &st) != 0 || !S_ISDIR(st.st_mode)) {
        if (error)
            *error = QStringLiteral("%1 is not a directory").arg(path);
        return false;
    }
    if (st.st_uid != ::geteuid()) {
        if (error)
            *error = QStringLiteral("%1 belongs to another user").arg(path);
        return false;
    }
    return true;
}
} // namespace

QString baseDirectory()
{
    const QString xdg = qEnvironmentVariable("XDG_RUNTIME_DIR");
    if (!xdg.isEmpty())
        return xdg;
    // The same path as Qt's QStandardPaths::RuntimeLocation fallback (Qt 5.15
    // and 6: tempPath + "/runtime-" + the user's name), without its warning.
    const uid_t uid = ::geteuid();
    const struct passwd *pw = ::getpwuid(uid);
    const QString user = pw && pw->pw_name ? QString::fromLocal8Bit(pw->pw_name) : QString::number(uid);
    return QDir::tempPath() + QStringLiteral("/runtime-") + user;
}

QString directory()
{
    return baseDirectory() + QStringLiteral("/tether");
}

QString path()
{
    return directory() + QStringLiteral("/server.json");
}

bool write(const QJsonObject &contents, QString *error)
{
    if (qEnvironmentVariableIsEmpty("XDG_RUNTIME_DIR")) {
        // Our fallback lives in a shared /tmp: it must be ours alone.
        const QString base = baseDirectory();
        if (::mkdir(QFile::encodeName(base).constData(), 0700) != 0 && errno != EEXIST) {
            if (error)
                *error = errnoText(QStringLiteral("cannot create"), base, errno);
            return false;
        }
        if (!ownDirectory(base, error))
            return false;
    }
    const QString dir = directory();
    const QByteArray dirLocal = QFile::encodeName(dir);
    if (::mkdir(dirLocal.constData(), 0700) != 0 && errno != EEXIST) {
        if (error)
            *error = errnoText(QStringLiteral("cannot create"), dir, errno);
        return false;
    }
    // An existing directory may have looser permissions (created by hand or
    // by an old version): tighten it, since it holds the key.
    if (!ownDirectory(dir, error))
        return false;
    struct stat st;
    if (::lstat(dirLocal.constData(), &st) != 0)
        return false;
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
    if (!ownDirectory(directory(), nullptr))
        return QJsonObject();
    QFile f(path());
    if (!f.open(QIODevice::ReadOnly))
        return QJsonObject();
    struct stat st;
    if (::fstat(f.handle(), &st) != 0 || st.st_uid != ::geteuid())
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
