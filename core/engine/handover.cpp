// SPDX-License-Identifier: GPL-2.0-or-later
// The restart-in-place state: encoding, decoding, the bare fd list. The
// byte layout is documented in docs/architecture.md ("Restart in place");
// keep the two in step.
#include "handover.h"
#include "bytecodec.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <functional>
#include <limits>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace Tether::Handover {

namespace {

constexpr char kMagic[8] = {'T', 'E', 'T', 'H', 'E', 'R', 'H', 'O'};
constexpr char kTrailer[8] = {'T', 'E', 'T', 'H', 'E', 'N', 'D', '.'};
/// Largest ring a record may claim (RingBuffer::kMaxCapacity is 64 MiB; a
/// margin for a future larger bound). Anything above is a damaged state.
constexpr qsizetype kMaxRing = qsizetype(1) << 30;

enum SessionFlag : quint8 { Exited = 1, Dying = 2 };
enum PtyFlag : quint8 { LeaderExited = 1, Finished = 2, MasterEof = 4, TornDown = 8 };

using Sink = std::function<bool(const char *, qsizetype)>;

QByteArray sessionMeta(const SessionRecord &s)
{
    ByteWriter w;
    w.text(s.id);
    w.u32(quint32(s.command.size()));
    for (const QString &a : s.command)
        w.text(a);
    w.text(s.cwd);
    w.i64(s.createdMs);
    w.i64(s.exitedAtMs);
    w.i64(s.detachedSinceMs);
    w.i64(s.lastActivityMs);
    w.u8(quint8((s.exited ? Exited : 0) | (s.dying ? Dying : 0)));
    const PtyHandover &p = s.pty;
    w.i32(p.pid);
    w.i32(p.masterFd);
    w.i32(p.pidfd);
    w.i32(p.cols);
    w.i32(p.rows);
    w.u8(quint8((p.leaderExited ? LeaderExited : 0) | (p.finished ? Finished : 0)
                | (p.masterEof ? MasterEof : 0) | (p.tornDown ? TornDown : 0)));
    w.boolean(p.exitStatus.signaled);
    w.i32(p.exitStatus.code);
    w.i32(p.exitStatus.signal);
    w.bytes(p.pendingInput);
    w.i64(s.capacity);
    w.u64(s.ringStart);
    w.bytes(s.headState);
    w.bytes(s.tailState);
    w.u32(quint32(s.marginResets.size()));
    for (const quint64 r : s.marginResets)
        w.u64(r);
    // Version 2: the screen.
    const ScreenRecord &sc = s.screen;
    w.boolean(sc.present);
    if (sc.present) {
        w.u64(sc.offset);
        w.boolean(sc.synced);
        w.i32(sc.cols);
        w.i32(sc.rows);
        w.bytes(sc.snapshot);
        w.u32(quint32(sc.resizes.size()));
        for (const ResizeRecord &rz : sc.resizes) {
            w.u64(rz.offset);
            w.i32(rz.cols);
            w.i32(rz.rows);
        }
    }
    // Appended fields (same format version: readers skip what they do not
    // know). The name came after marginResets in version 1 and stays the
    // last field, after the screen, in version 2: a reader of version 2
    // without names still finds the screen where it expects it.
    w.text(s.name);
    w.u32(quint32(s.shares.size()));
    for (const ShareRecord &share : s.shares) {
        w.text(share.token);
        w.i64(share.createdMs);
    }
    // Appended after the links: the output hold (-1: none).
    w.i64(s.outputHold && *s.outputHold <= quint64(std::numeric_limits<qint64>::max()) ? qint64(*s.outputHold) : -1);
    // Appended after the hold: the command list (CommandLog::save()).
    w.bytes(s.commands);
    // Appended after the command list: the notification settings' flags.
    w.u32((s.notifyMuted ? 1u : 0u) | (s.notifyNext ? 2u : 0u) | (s.notifyActivity ? 4u : 0u)
          | (s.loginShell ? 8u : 0u) | (quint32(std::clamp(s.notifySilence, 0, 0xffffff)) << 8));
    return w.take();
}

bool encodeTo(const State &state, const Sink &sink)
{
    ByteWriter head;
    head.raw(QByteArray::fromRawData(kMagic, sizeof kMagic));
    const bool tls = !state.tlsCertificatePem.isEmpty() || !state.tlsKeyPem.isEmpty();
    head.u32(tls ? kVersion : kVersionWithoutTls);
    head.u32(state.restarts);
    head.text(state.key);
    head.i32(state.listenFd);
    head.u32(quint32(state.issuedIds.size()));
    for (const QString &id : state.issuedIds)
        head.text(id);
    head.u32(quint32(state.reap.size()));
    for (const pid_t pid : state.reap)
        head.i32(pid);
    if (tls) { // version 3
        head.bytes(state.tlsCertificatePem);
        head.bytes(state.tlsKeyPem);
    }
    head.u32(quint32(state.sessions.size()));
    if (!sink(head.data().constData(), head.data().size()))
        return false;
    for (const SessionRecord &s : state.sessions) {
        ByteWriter w;
        w.bytes(sessionMeta(s));
        w.u64(quint64(s.ringSize()));
        if (!sink(w.data().constData(), w.data().size()))
            return false;
        for (const QByteArray &piece : s.ring)
            if (!piece.isEmpty() && !sink(piece.constData(), piece.size()))
                return false;
    }
    return sink(kTrailer, sizeof kTrailer);
}

/// `borrow`: ring pieces point into the decoded memory instead of copying it.
bool decodeSession(ByteReader &r, quint32 version, SessionRecord *s, bool borrow, QString *why)
{
    const char *metaData = nullptr;
    const qsizetype metaSize = r.view(&metaData);
    ByteReader m(metaData, metaSize);
    s->id = m.text();
    const quint32 argc = m.u32();
    if (argc > quint32(m.remaining()))
        m.fail();
    for (quint32 i = 0; i < argc && m.ok(); ++i)
        s->command.append(m.text());
    s->cwd = m.text();
    s->createdMs = m.i64();
    s->exitedAtMs = m.i64();
    s->detachedSinceMs = m.i64();
    s->lastActivityMs = m.i64();
    const quint8 flags = m.u8();
    s->exited = flags & Exited;
    s->dying = flags & Dying;
    PtyHandover &p = s->pty;
    p.pid = m.i32();
    p.masterFd = m.i32();
    p.pidfd = m.i32();
    p.cols = m.i32();
    p.rows = m.i32();
    const quint8 pf = m.u8();
    p.leaderExited = pf & LeaderExited;
    p.finished = pf & Finished;
    p.masterEof = pf & MasterEof;
    p.tornDown = pf & TornDown;
    p.exitStatus.signaled = m.boolean();
    p.exitStatus.code = m.i32();
    p.exitStatus.signal = m.i32();
    p.pendingInput = m.bytes();
    s->capacity = qsizetype(m.i64());
    s->ringStart = m.u64();
    s->headState = m.bytes();
    s->tailState = m.bytes();
    const quint32 resets = m.u32();
    if (resets > quint32(m.remaining() / 8))
        m.fail();
    for (quint32 i = 0; i < resets && m.ok(); ++i)
        s->marginResets.append(m.u64());
    if (version >= 2) {
        ScreenRecord &sc = s->screen;
        sc.present = m.boolean();
        if (sc.present) {
            sc.offset = m.u64();
            sc.synced = m.boolean();
            sc.cols = m.i32();
            sc.rows = m.i32();
            sc.snapshot = m.bytes();
            const quint32 n = m.u32();
            if (n > quint32(m.remaining() / 16))
                m.fail();
            for (quint32 i = 0; i < n && m.ok(); ++i) {
                ResizeRecord rz;
                rz.offset = m.u64();
                rz.cols = m.i32();
                rz.rows = m.i32();
                sc.resizes.append(rz);
            }
        }
    }
    // Fields appended later within a format version (after marginResets in
    // version 1, after the screen in version 2); absent in a state written
    // by an older build of it.
    if (m.ok() && m.remaining() > 0)
        s->name = m.text();
    if (m.ok() && m.remaining() > 0) {
        const quint32 shares = m.u32();
        if (shares > quint32(m.remaining() / 12)) // each at least a length and a time
            m.fail();
        for (quint32 i = 0; i < shares && m.ok(); ++i) {
            ShareRecord share;
            share.token = m.text();
            share.createdMs = m.i64();
            s->shares.append(share);
        }
    }
    if (m.ok() && m.remaining() > 0) {
        const qint64 hold = m.i64();
        if (hold >= 0)
            s->outputHold = quint64(hold);
    }
    if (m.ok() && m.remaining() > 0)
        s->commands = m.bytes();
    if (m.ok() && m.remaining() > 0) {
        const quint32 flags = m.u32();
        s->notifyMuted = flags & 1u;
        s->notifyNext = flags & 2u;
        s->notifyActivity = flags & 4u;
        s->loginShell = flags & 8u;
        s->notifySilence = int(flags >> 8);
    }
    // Bytes past the fields known here were appended by a later build of the
    // same format version: skipped on purpose.
    if (!r.ok() || !m.ok()) {
        *why = QStringLiteral("session metadata truncated");
        return false;
    }
    const quint64 ringSize = r.u64();
    const ScreenRecord &sc = s->screen;
    const bool screenOk = !sc.present
        || (sc.offset >= s->ringStart && sc.offset <= s->ringStart + ringSize && sc.cols >= 1 && sc.cols <= 1000
            && sc.rows >= 1 && sc.rows <= 1000);
    if (s->pty.pid <= 0 || s->capacity < 1 || s->capacity > kMaxRing || ringSize > quint64(s->capacity)
        || s->ringStart > std::numeric_limits<quint64>::max() - ringSize || !screenOk) {
        *why = QStringLiteral("session %1: a field is out of range").arg(s->id);
        return false;
    }
    const char *ring = r.rawView(qsizetype(ringSize));
    if (!ring) {
        *why = QStringLiteral("session %1: output truncated").arg(s->id);
        return false;
    }
    s->ring = {borrow ? QByteArray::fromRawData(ring, int(ringSize)) : QByteArray(ring, int(ringSize))};
    return true;
}

QString errnoText(int err)
{
    return QString::fromLocal8Bit(std::strerror(err));
}

} // namespace

QByteArray encode(const State &state)
{
    QByteArray out;
    encodeTo(state, [&out](const char *d, qsizetype n) {
        out.append(d, int(n));
        return true;
    });
    return out;
}

int writeMemfd(const State &state, QString *error)
{
    const int fd = ::memfd_create("tether-restart-state", MFD_CLOEXEC);
    if (fd < 0) {
        if (error)
            *error = QStringLiteral("memfd_create: %1").arg(errnoText(errno));
        return -1;
    }
    // Small pieces are gathered, large ones (ring bytes) written as they are.
    QByteArray buffer;
    int err = 0;
    auto flush = [&](const char *d, qsizetype n) {
        while (n > 0) {
            const ssize_t w = ::write(fd, d, size_t(n));
            if (w < 0 && errno == EINTR)
                continue;
            if (w <= 0) {
                err = w < 0 ? errno : EIO;
                return false;
            }
            d += w;
            n -= w;
        }
        return true;
    };
    const bool ok = encodeTo(state, [&](const char *d, qsizetype n) {
        if (n >= 64 * 1024) {
            if (!flush(buffer.constData(), buffer.size()))
                return false;
            buffer.clear();
            return flush(d, n);
        }
        buffer.append(d, int(n));
        if (buffer.size() < 256 * 1024)
            return true;
        const bool done = flush(buffer.constData(), buffer.size());
        buffer.clear();
        return done;
    }) && flush(buffer.constData(), buffer.size());
    if (!ok || ::lseek(fd, 0, SEEK_SET) != 0) {
        if (error)
            *error = QStringLiteral("cannot write the state: %1").arg(errnoText(err ? err : errno));
        ::close(fd);
        return -1;
    }
    return fd;
}

namespace {

bool decodeState(const char *data, qsizetype size, bool borrow, State *state, QString *error)
{
    auto fail = [error](const QString &why) {
        if (error)
            *error = why;
        return false;
    };
    ByteReader r(data, size);
    const char *magic = r.rawView(sizeof kMagic);
    if (!magic || std::memcmp(magic, kMagic, sizeof kMagic) != 0)
        return fail(QStringLiteral("not a Tether restart state"));
    const quint32 version = r.u32();
    if (version < kOldestVersion || version > kVersion)
        return fail(QStringLiteral("state format version %1, this build reads versions %2 to %3")
                        .arg(version).arg(kOldestVersion).arg(kVersion));
    State s;
    s.restarts = r.u32();
    s.key = r.text();
    s.listenFd = r.i32();
    const quint32 ids = r.u32();
    if (ids > quint32(r.remaining() / 4))
        return fail(QStringLiteral("state truncated (ids)"));
    for (quint32 i = 0; i < ids && r.ok(); ++i)
        s.issuedIds.append(r.text());
    const quint32 reap = r.u32();
    if (reap > quint32(r.remaining() / 4))
        return fail(QStringLiteral("state truncated (pids)"));
    for (quint32 i = 0; i < reap && r.ok(); ++i)
        s.reap.append(pid_t(r.i32()));
    if (version >= 3) {
        s.tlsCertificatePem = r.bytes();
        s.tlsKeyPem = r.bytes();
    }
    const quint32 sessions = r.u32();
    if (!r.ok() || sessions > quint32(r.remaining() / 12))
        return fail(QStringLiteral("state truncated (header)"));
    for (quint32 i = 0; i < sessions; ++i) {
        SessionRecord rec;
        QString why;
        if (!decodeSession(r, version, &rec, borrow, &why))
            return fail(why);
        s.sessions.append(std::move(rec));
    }
    const char *trailer = r.rawView(sizeof kTrailer);
    if (!trailer || std::memcmp(trailer, kTrailer, sizeof kTrailer) != 0 || !r.atEnd())
        return fail(QStringLiteral("state truncated or followed by garbage"));
    *state = std::move(s);
    return true;
}

} // namespace

bool decode(const char *data, qsizetype size, State *state, QString *error)
{
    return decodeState(data, size, false, state, error);
}

bool read(int fd, State *state, QString *error)
{
    struct stat st;
    if (::fstat(fd, &st) != 0) {
        if (error)
            *error = QStringLiteral("state fd %1: %2").arg(fd).arg(errnoText(errno));
        return false;
    }
    if (st.st_size <= 0)
        return decode(nullptr, 0, state, error);
    void *map = ::mmap(nullptr, size_t(st.st_size), PROT_READ, MAP_PRIVATE, fd, 0);
    if (map == MAP_FAILED) {
        if (error)
            *error = QStringLiteral("cannot map the state: %1").arg(errnoText(errno));
        return false;
    }
    const size_t length = size_t(st.st_size);
    std::shared_ptr<const void> mapping(map, [length](const void *p) { ::munmap(const_cast<void *>(p), length); });
    if (!decodeState(static_cast<const char *>(map), qsizetype(st.st_size), true, state, error))
        return false;
    state->mapping = std::move(mapping);
    return true;
}

QByteArray fdList(const State &state)
{
    QList<QByteArray> entries;
    for (const SessionRecord &s : state.sessions) {
        const PtyHandover &p = s.pty;
        if (p.masterFd < 0 && p.leaderExited)
            continue;
        entries.append((s.dying ? QByteArray() : s.id.toLatin1()) + ':' + QByteArray::number(p.masterFd) + ':'
                       + QByteArray::number(p.pidfd) + ':' + QByteArray::number(p.pid));
    }
    return entries.join(' ');
}

QList<FdEntry> parseFdList(const QByteArray &text, int *skipped)
{
    QList<FdEntry> out;
    int bad = 0;
    for (const QByteArray &entry : text.split(' ')) {
        if (entry.isEmpty())
            continue;
        const QList<QByteArray> f = entry.split(':');
        bool ok1 = false, ok2 = false, ok3 = false;
        FdEntry e;
        if (f.size() == 4) {
            e.id = QString::fromLatin1(f.at(0));
            e.masterFd = f.at(1).toInt(&ok1);
            e.pidfd = f.at(2).toInt(&ok2);
            e.pid = pid_t(f.at(3).toInt(&ok3));
        }
        if (!ok1 || !ok2 || !ok3 || e.pid <= 0 || e.masterFd < -1 || e.pidfd < -1) {
            ++bad;
            continue;
        }
        out.append(e);
    }
    if (skipped)
        *skipped = bad;
    return out;
}

} // namespace Tether::Handover
