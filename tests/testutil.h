// SPDX-License-Identifier: GPL-2.0-or-later
// Small helpers shared by the tests.
#pragma once

#include "ptyprocess.h"

#include <QDir>
#include <QFile>
#include <QString>
#include <QTest>
#include <unistd.h>

namespace TestUtil {

/// Options running `script` with /bin/sh -c.
inline Tether::SpawnOptions shell(const QString &script)
{
    Tether::SpawnOptions o;
    o.argv = QStringList{QStringLiteral("/bin/sh"), QStringLiteral("-c"), script};
    return o;
}

/// Number of open file descriptors of this process (entries of /proc/self/fd).
inline int openFdCount()
{
    return int(QDir(QStringLiteral("/proc/self/fd")).entryList(QDir::Files | QDir::System | QDir::NoDotAndDotDot).size());
}

/// State letter of /proc/<pid>/stat ('Z' zombie, 'S', 'R', ...), or 0 if gone.
inline char processState(pid_t pid)
{
    QFile f(QStringLiteral("/proc/%1/stat").arg(pid));
    if (!f.open(QIODevice::ReadOnly))
        return 0;
    const QByteArray s = f.readAll();
    const int close = s.lastIndexOf(')');
    return close > 0 && close + 2 < s.size() ? s.at(close + 2) : 0;
}

/// Zombie children of this process (their /proc stat has state Z and ppid = us).
inline int zombieChildren()
{
    int n = 0;
    const QString me = QString::number(getpid());
    const auto entries = QDir(QStringLiteral("/proc")).entryList(QDir::Dirs | QDir::NoDotAndDotDot);
    for (const QString &e : entries) {
        bool ok = false;
        e.toInt(&ok);
        if (!ok)
            continue;
        QFile f(QStringLiteral("/proc/%1/stat").arg(e));
        if (!f.open(QIODevice::ReadOnly))
            continue;
        const QByteArray s = f.readAll();
        const int close = s.lastIndexOf(')');
        const QList<QByteArray> fields = s.mid(close + 2).split(' ');
        if (fields.size() > 1 && fields.at(0) == "Z" && fields.at(1) == me.toLatin1()) {
            qDebug("zombie child: %s", s.constData());
            ++n;
        }
    }
    return n;
}

} // namespace TestUtil
