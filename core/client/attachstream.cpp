// SPDX-License-Identifier: GPL-2.0-or-later
#include "attachstream.h"
#include "protocol.h"

#include <QJsonObject>
#include <QJsonValue>

namespace Tether {

bool AttachStream::begin(const AttachInfo &info)
{
    m_info = info;
    m_exit.reset();
    m_offset = info.replayFrom;
    m_preludeLeft = qMax<qint64>(0, info.preludeBytes);
    m_replayLeft = qMax<qint64>(0, info.replayBytes);
    // A snapshot outside the replay's offsets cannot be placed: ignored.
    const bool snapshot = info.snapshotAt && *info.snapshotAt >= info.replayFrom
        && *info.snapshotAt <= info.replayFrom + quint64(m_replayLeft);
    m_snapshotLeft = snapshot ? qMax<qint64>(0, info.snapshotBytes) : 0;
    m_snapshotAt = snapshot ? *info.snapshotAt : 0;
    m_active = true;
    m_hasOffset = true;
    return pendingReplay() == 0;
}

void AttachStream::stop()
{
    m_active = false;
    m_preludeLeft = 0;
    m_replayLeft = 0;
    m_snapshotLeft = 0;
}

void AttachStream::forget()
{
    stop();
    m_hasOffset = false;
}

AttachStream::Split AttachStream::output(qsizetype size)
{
    Split s;
    if (size <= 0)
        return s;
    if (!m_active) {
        s.pieces[s.count++] = {Part::Live, 0, size};
        return s;
    }
    const bool hadReplay = pendingReplay() > 0;
    qsizetype pos = 0;
    // Prelude: re-establishes modes; it has no offsets (protocol.md "prelude").
    if (m_preludeLeft > 0) {
        const qsizetype n = qsizetype(qMin<qint64>(size, m_preludeLeft));
        m_preludeLeft -= n;
        s.pieces[s.count++] = {Part::Prelude, pos, n};
        pos += n;
    }
    // Replay, with the snapshot (no offsets) where it reaches snapshot_at.
    while (pos < size && (m_replayLeft > 0 || m_snapshotLeft > 0)) {
        if (m_snapshotLeft > 0 && m_offset == m_snapshotAt) {
            const qsizetype n = qsizetype(qMin<qint64>(size - pos, m_snapshotLeft));
            m_snapshotLeft -= n;
            s.pieces[s.count++] = {Part::Snapshot, pos, n};
            pos += n;
            continue;
        }
        qint64 room = m_replayLeft;
        if (m_snapshotLeft > 0)
            room = qMin<qint64>(room, qint64(m_snapshotAt - m_offset));
        const qsizetype n = qsizetype(qMin<qint64>(size - pos, room));
        m_replayLeft -= n;
        m_offset += quint64(n);
        s.pieces[s.count++] = {Part::Replay, pos, n};
        pos += n;
    }
    if (hadReplay && pendingReplay() == 0) {
        s.replayFinished = true;
        s.replayEndsAfter = s.count - 1;
    }
    if (pos < size) {
        m_offset += quint64(size - pos);
        s.pieces[s.count++] = {Part::Live, pos, size - pos};
    }
    return s;
}

AttachInfo AttachStream::parseAttached(const QJsonObject &m)
{
    AttachInfo info;
    info.mode = m.value(QStringLiteral("mode")).toString() == QLatin1String("watch") ? ViewerMode::Watch
                                                                                    : ViewerMode::Control;
    info.reset = m.value(QStringLiteral("reset")).toBool();
    const QString reason = m.value(QStringLiteral("reason")).toString();
    for (ReplayReason r : {ReplayReason::Initial, ReplayReason::Resume, ReplayReason::RolledOut, ReplayReason::Ahead}) {
        if (reason == QLatin1String(Protocol::replayReasonName(r)))
            info.reason = r;
    }
    // JSON numbers are doubles: exact up to 2^53, far beyond any offset.
    info.replayFrom = quint64(qMax(0.0, m.value(QStringLiteral("replay_from")).toDouble()));
    info.preludeBytes = qsizetype(qMax(0.0, m.value(QStringLiteral("prelude_bytes")).toDouble()));
    info.replayBytes = qsizetype(qMax(0.0, m.value(QStringLiteral("replay_bytes")).toDouble()));
    info.offset = quint64(qMax(0.0, m.value(QStringLiteral("offset")).toDouble()));
    // A server without a screen sends neither (or null): no snapshot.
    const QJsonValue at = m.value(QStringLiteral("snapshot_at"));
    if (at.isDouble() && at.toDouble() >= 0) {
        info.snapshotAt = quint64(at.toDouble());
        info.snapshotBytes = qsizetype(qMax(0.0, m.value(QStringLiteral("snapshot_bytes")).toDouble()));
    }
    info.screenReplay = m.value(QStringLiteral("replay_mode")).toString() == QLatin1String("screen");
    info.exited = m.value(QStringLiteral("state")).toString() == QLatin1String("exited");
    info.cols = m.value(QStringLiteral("cols")).toInt(info.cols);
    info.rows = m.value(QStringLiteral("rows")).toInt(info.rows);
    return info;
}

std::optional<ExitStatus> AttachStream::parseExit(const QJsonObject &m)
{
    const QJsonValue code = m.value(QStringLiteral("code"));
    const QJsonValue sig = m.value(QStringLiteral("signal"));
    ExitStatus status;
    if (code.isDouble()) {
        status.code = code.toInt();
        return status;
    }
    if (sig.isDouble()) {
        status.signaled = true;
        status.signal = sig.toInt();
        return status;
    }
    return std::nullopt;
}

QString AttachStream::exitLine(const std::optional<ExitStatus> &status)
{
    if (!status)
        return QStringLiteral("[process exited]");
    return QStringLiteral("[process %1]").arg(Protocol::exitStatusText(*status));
}

AttachStream::Close AttachStream::closeMeaning(int code, const QString &reason)
{
    switch (code) {
    case Protocol::Exited:
        return Close::Exited;
    case Protocol::Superseded:
        return Close::TakenOver;
    case Protocol::NotFound:
        return Close::NotFound;
    case Protocol::Ended:
        // "session ended by reboot": its processes are gone, only its
        // record is left (docs/protocol.md, "Ended sessions"): as killed.
        return Close::SessionKilled;
    case Protocol::GoingAway:
        if (reason == QLatin1String(Protocol::CloseReason::SessionKilled))
            return Close::SessionKilled;
        if (reason == QLatin1String(Protocol::CloseReason::ServerShutdown))
            return Close::ServerShutdown;
        return Close::GoingAway;
    case Protocol::TooManyViewers:
        return Close::TooManyViewers;
    case Protocol::BadRequest:
        return Close::BadRequest;
    case Protocol::TooBig:
        return Close::TooBig;
    case Protocol::Unauthorized:
        return Close::Revoked;
    case Protocol::ServiceRestart:
        // Tether restarts in place; the next process image accepts on the
        // same socket (Qt 5.15 and 6.4 report 1002 for it: the default).
    default:
        // No close frame (Qt reports 1000 or 1006), 1012, 1013 (input
        // stalled, too far behind), Qt's 1002 for a 1012 or 1013 close
        // (protocol.md "Note for Qt clients"), or a code this client does not
        // know: resume.
        return Close::Retry;
    }
}

bool AttachStream::isQtRefusedCode(int code, const QString &reason)
{
    // QWebSocketDataProcessor's text (Qt 5.15 and 6.4): it formats the code
    // after replacing it by 1002, so the code sent is not in it.
    return code == 1002 /* RFC 6455 §7.4.1, protocol error */ && reason.startsWith(QLatin1String("Invalid close code "))
        && reason.endsWith(QLatin1String(" detected."));
}

QString AttachStream::closeText(int code, const QString &reason)
{
    if (isQtRefusedCode(code, reason))
        return QStringLiteral("1012 or 1013 (the server restarts in place or is busy; Qt reports them as 1002)");
    if ((code == 1000 || code == 1006) && reason.isEmpty())
        return QStringLiteral("no close frame");
    return reason.isEmpty() ? QString::number(code) : QStringLiteral("%1 \"%2\"").arg(code).arg(reason);
}

std::optional<AttachStream::End> AttachStream::closeEnd(Close meaning)
{
    switch (meaning) {
    case Close::Retry: return std::nullopt;
    case Close::TakenOver: return End::TakenOver;
    case Close::Exited: return End::Exited;
    case Close::NotFound: return End::NotFound;
    case Close::SessionKilled: return End::SessionKilled;
    case Close::ServerShutdown: return End::ServerShutdown;
    case Close::GoingAway: return End::SessionKilled;
    case Close::TooManyViewers: return End::TooManyViewers;
    case Close::BadRequest: return End::ProtocolError;
    case Close::TooBig: return End::ProtocolError;
    case Close::Revoked: return End::AuthFailed; // retrying meets 401
    }
    return std::nullopt;
}

const char *AttachStream::closeName(Close meaning)
{
    switch (meaning) {
    case Close::Retry: return "retry";
    case Close::TakenOver: return "taken_over";
    case Close::Exited: return "exited";
    case Close::NotFound: return "not_found";
    case Close::SessionKilled: return "session_killed";
    case Close::ServerShutdown: return "server_shutdown";
    case Close::GoingAway: return "going_away";
    case Close::TooManyViewers: return "too_many_viewers";
    case Close::BadRequest: return "bad_request";
    case Close::TooBig: return "too_big";
    case Close::Revoked: return "revoked";
    }
    return "retry";
}

const char *AttachStream::endName(End end)
{
    switch (end) {
    case End::Detached: return "detached";
    case End::Exited: return "exited";
    case End::TakenOver: return "taken_over";
    case End::NotFound: return "not_found";
    case End::SessionKilled: return "session_killed";
    case End::ServerShutdown: return "server_shutdown";
    case End::AuthFailed: return "auth_failed";
    case End::NotRunning: return "not_running";
    case End::LostServer: return "lost_server";
    case End::TooManyViewers: return "too_many_viewers";
    case End::ProtocolError: return "protocol_error";
    }
    return "protocol_error";
}

const char *AttachStream::partName(Part part)
{
    switch (part) {
    case Part::Prelude: return "prelude";
    case Part::Replay: return "replay";
    case Part::Live: return "live";
    case Part::Snapshot: return "snapshot";
    }
    return "live";
}

} // namespace Tether
