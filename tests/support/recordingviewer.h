// SPDX-License-Identifier: GPL-2.0-or-later
// A Viewer that records everything a session tells it, for tests.
#pragma once

#include "session.h"
#include "viewer.h"

#include <QByteArray>
#include <QList>

namespace TestUtil {

class RecordingViewer : public Tether::Viewer
{
public:
    Tether::Session *session = nullptr;
    QList<Tether::AttachInfo> attachInfos;
    QByteArray received;              ///< prelude + replay + live, as delivered
    int exitedCount = 0;
    qsizetype bytesAtExit = -1;       ///< received.size() when exited() came
    Tether::ExitStatus exitStatus;
    QList<Tether::DetachReason> detachReasons;
    QStringList titles;
    QList<QPair<int, int>> sizes;
    /// received.size() at each fixup() call, and the sequences (not in received).
    QList<qsizetype> fixupAt;
    QList<QByteArray> fixups;

    void attached(Tether::Session *s, const Tether::AttachInfo &info) override
    {
        session = s;
        attachInfos.append(info);
    }
    void output(const char *data, qsizetype size) override { received.append(data, int(size)); }
    void titleChanged(const QString &t) override { titles.append(t); }
    void sizeChanged(int c, int r) override { sizes.append({c, r}); }
    void fixup(const QByteArray &sequence) override
    {
        fixupAt.append(received.size());
        fixups.append(sequence);
    }
    void exited(const Tether::ExitStatus &st) override
    {
        ++exitedCount;
        exitStatus = st;
        bytesAtExit = received.size();
    }
    void detached(Tether::DetachReason reason) override
    {
        detachReasons.append(reason);
        session = nullptr;
    }
};

} // namespace TestUtil
