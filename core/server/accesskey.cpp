// SPDX-License-Identifier: GPL-2.0-or-later
#include "accesskey.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QRandomGenerator>

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace Tether {

QString generateAccessKey()
{
    quint32 words[8];
    QRandomGenerator::system()->fillRange(words);
    const QByteArray raw(reinterpret_cast<const char *>(words), int(sizeof(words)));
    return QString::fromLatin1(raw.toBase64(QByteArray::Base64UrlEncoding | QByteArray::OmitTrailingEquals));
}

bool isWellFormedAccessKey(const QString &key)
{
    if (key.size() != 43)
        return false;
    for (const QChar c : key) {
        const ushort u = c.unicode();
        const bool ok = (u >= 'a' && u <= 'z') || (u >= 'A' && u <= 'Z') || (u >= '0' && u <= '9') || u == '-' || u == '_';
        if (!ok)
            return false;
    }
    return true;
}

namespace {
QString errnoText(const QString &what, const QString &path)
{
    return QStringLiteral("%1 %2: %3").arg(what, path, QString::fromLocal8Bit(std::strerror(errno)));
}

/// The key in `path` if the file can be trusted (see loadOrCreateAccessKey), else empty.
QString trustedKey(const QString &path)
{
    const QByteArray native = QFile::encodeName(path);
    const int fd = ::open(native.constData(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0)
        return QString();
    struct stat st;
    QByteArray text(128, '\0');
    ssize_t n = -1;
    if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == ::geteuid() && (st.st_mode & 077) == 0)
        n = ::read(fd, text.data(), text.size());
    ::close(fd);
    if (n <= 0)
        return QString();
    text.truncate(int(n));
    const QString key = QString::fromLatin1(text).trimmed();
    return isWellFormedAccessKey(key) ? key : QString();
}
} // namespace

bool storeAccessKey(const QString &path, const QString &key, QString *error)
{
    const QString dir = QFileInfo(path).absolutePath();
    if (!QDir().mkpath(dir)) {
        if (error)
            *error = QStringLiteral("cannot create %1").arg(dir);
        return false;
    }
    const QString tmp = path + QStringLiteral(".new");
    const QByteArray nativeTmp = QFile::encodeName(tmp);
    ::unlink(nativeTmp.constData()); // a leftover of a crash, or someone's trap: never written through
    const int fd = ::open(nativeTmp.constData(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0) {
        if (error)
            *error = errnoText(QStringLiteral("cannot create"), tmp);
        return false;
    }
    const QByteArray line = key.toLatin1() + '\n';
    const bool written = ::write(fd, line.constData(), size_t(line.size())) == line.size() && ::fsync(fd) == 0;
    if (error && !written)
        *error = errnoText(QStringLiteral("cannot write"), tmp);
    ::close(fd);
    if (!written) {
        ::unlink(nativeTmp.constData());
        return false;
    }
    if (::rename(nativeTmp.constData(), QFile::encodeName(path).constData()) != 0) {
        if (error)
            *error = errnoText(QStringLiteral("cannot rename to"), path);
        ::unlink(nativeTmp.constData());
        return false;
    }
    return true;
}

QString loadOrCreateAccessKey(const QString &path, QString *error)
{
    const QString kept = trustedKey(path);
    if (!kept.isEmpty())
        return kept;
    const QString key = generateAccessKey();
    return storeAccessKey(path, key, error) ? key : QString();
}

bool constantTimeEquals(const QByteArray &a, const QByteArray &b)
{
    if (a.size() != b.size())
        return false;
    // Accumulate differences without an early exit; volatile keeps the
    // compiler from turning the loop back into a short-circuit memcmp.
    volatile unsigned char diff = 0;
    for (int i = 0; i < a.size(); ++i)
        diff = diff | (static_cast<unsigned char>(a.at(i)) ^ static_cast<unsigned char>(b.at(i)));
    return diff == 0;
}

} // namespace Tether
