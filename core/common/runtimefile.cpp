// SPDX-License-Identifier: GPL-2.0-or-later
#include "runtimefile.h"
#include "logging.h"
#include "procinfo.h"

#include <QFile>
#include <QJsonDocument>
#include <QDir>

#include <cerrno>
#include <csignal>
#include <cstring>
#include <limits>
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

/// The fallback base directory: Qt's QStandardPaths::RuntimeLocation
/// fallback (Qt 5.15 and 6: tempPath + "/runtime-" + the user's name),
/// computed without its warning.
QString fallbackBaseDirectory()
{
    const uid_t uid = ::geteuid();
    const struct passwd *pw = ::getpwuid(uid);
    const QString user = pw && pw->pw_name ? QString::fromLocal8Bit(pw->pw_name) : QString::number(uid);
    return QDir::tempPath() + QStringLiteral("/runtime-") + user;
}

/// $XDG_RUNTIME_DIR when it is set and a directory owned by the effective
/// uid; else empty. Plain `su` (Debian) keeps the caller's XDG_RUNTIME_DIR:
/// root's server would create a root-owned "<dir>/tether" there and the
/// user's own server would then fail with "belongs to another user".
QString usableXdgRuntimeDir()
{
    const QString xdg = qEnvironmentVariable("XDG_RUNTIME_DIR");
    if (xdg.isEmpty())
        return QString();
    struct stat st;
    if (::stat(QFile::encodeName(xdg).constData(), &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != ::geteuid())
        return QString();
    return xdg;
}

/// After server.json could not be replaced by `contents`: removes the file
/// there (`existing`, as read before; not a live other server's, or write()
/// would not have tried) unless it leads clients to the same server anyway
/// (sameServer(): written by this process before a restart in place, or by
/// an earlier run on the same port with the same key). Else clients would
/// follow it to an address nobody serves, another program's, or with an old
/// key.
void removeStale(const QJsonObject &existing, const QJsonObject &contents, const QByteArray &finalPath)
{
    if (existing.isEmpty() || sameServer(existing, contents))
        return;
    if (::unlink(finalPath.constData()) == 0)
        qCDebug(lcServer) << "stale runtime file removed:" << QFile::decodeName(finalPath);
}

} // namespace

QString baseDirectory()
{
    const QString xdg = usableXdgRuntimeDir();
    return xdg.isEmpty() ? fallbackBaseDirectory() : xdg;
}

bool isLiveOtherServer(const QJsonObject &contents)
{
    const qint64 pid = qint64(contents.value(QStringLiteral("pid")).toDouble(-1));
    if (pid <= 0 || pid > std::numeric_limits<pid_t>::max() || pid == qint64(::getpid()))
        return false;
    // EPERM: alive, but another user's (a pid reused after a reboot, say):
    // the comm check below decides.
    if (::kill(pid_t(pid), 0) != 0 && errno != EPERM)
        return false;
    // A zombie answers kill(0) but serves nothing: the image a restart's
    // guardian took over from is one until its parent reaps it.
    QFile stat(QStringLiteral("/proc/%1/stat").arg(pid));
    if (stat.open(QIODevice::ReadOnly)) {
        const QByteArray st = stat.readAll();
        const int close = st.lastIndexOf(')');
        if (close >= 0 && st.mid(close + 2, 1) == "Z")
            return false;
    }
    // A pid reused by an unrelated program after a crash is stale: only a
    // process with our own name counts as a server.
    const QString name = processName(pid_t(pid));
    return !name.isEmpty() && name == processName(::getpid());
}

bool sameServer(const QJsonObject &a, const QJsonObject &b)
{
    for (const char *field : {"url", "key", "cert_sha256"})
        if (a.value(QLatin1String(field)) != b.value(QLatin1String(field)))
            return false;
    return !a.value(QStringLiteral("url")).toString().isEmpty();
}

QString directory()
{
    return baseDirectory() + QStringLiteral("/tether");
}

QString path()
{
    return directory() + QStringLiteral("/server.json");
}

bool ensureDirectory(QString *error)
{
    if (usableXdgRuntimeDir().isEmpty()) {
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
    return true;
}

bool write(const QJsonObject &contents, QString *error, QJsonObject *other)
{
    if (other)
        *other = QJsonObject();
    if (!ensureDirectory(error))
        return false;

    const QString finalPath = path();
    // A second server must not take the file of a first one still running:
    // it would delete it on exit and `tether list` would say "not running"
    // while the first server and its sessions live on.
    const QJsonObject existing = read();
    if (isLiveOtherServer(existing)) {
        qCDebug(lcServer) << "runtime file kept: it names a running server";
        if (other)
            *other = existing;
        return true;
    }
    const QByteArray finalLocal = QFile::encodeName(finalPath);
    const QString tmpPath = finalPath + QStringLiteral(".tmp-%1").arg(::getpid());
    const QByteArray tmpLocal = QFile::encodeName(tmpPath);
    ::unlink(tmpLocal.constData());
    const int fd = ::open(tmpLocal.constData(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0) {
        if (error)
            *error = errnoText(QStringLiteral("cannot create"), tmpPath, errno);
        removeStale(existing, contents, finalLocal);
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
            removeStale(existing, contents, finalLocal);
            return false;
        }
        done += n;
    }
    ::close(fd);
    if (::rename(tmpLocal.constData(), finalLocal.constData()) != 0) {
        const int err = errno;
        ::unlink(tmpLocal.constData());
        if (error)
            *error = errnoText(QStringLiteral("cannot rename to"), finalPath, err);
        removeStale(existing, contents, finalLocal);
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
