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

/// Zombie children of this process (their /proc stat has state Z and ppid = us),
/// each printed with qDebug (a zombie seen for an instant, e.g. a leader just
/// killed by ~PtyProcess before the reaper's next event-loop pass, prints too).
/// Run as PID 1 of a PID namespace (`unshare --pid --fork ./tst_x`), a test is
/// also the parent of every orphan in the namespace: a session member whose
/// shell died is reparented to it, and only an init reaps such strangers (we
/// never waitpid(-1)). There only our own spawned children count: session
/// leaders (pid = session id, /proc stat field 6), which every PtyProcess
/// child is and no orphaned member can be.
inline int zombieChildren()
{
    int n = 0;
    const bool weAreInit = getpid() == 1;
    const QByteArray me = QByteArray::number(qint64(getpid()));
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
        // After "pid (comm) ": state ppid pgrp session ...
        const QList<QByteArray> fields = s.mid(close + 2).split(' ');
        if (fields.size() < 4 || fields.at(0) != "Z" || fields.at(1) != me)
            continue;
        if (weAreInit && fields.at(3) != e.toLatin1()) {
            qDebug("orphan zombie (not ours; we are PID 1): %s", s.constData());
            continue;
        }
        qDebug("zombie child: %s", s.constData());
        ++n;
    }
    return n;
}

} // namespace TestUtil
