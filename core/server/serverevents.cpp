// SPDX-License-Identifier: GPL-2.0-or-later
// Server's event stream, GET /api/events (docs/protocol.md section 4): the
// `sessions`, `server`, `command`, `notify`, `output` and `shutdown` events,
// their coalescing timers and the streams they go to.
#include "server.h"
#include "httpconnection.h"
#include "protocol.h"
#include "registry.h"
#include "serverutil.h"
#include "sessionjson.h"

#include <QJsonDocument>

#include <algorithm>

namespace Tether {

namespace {
/// At most one `output` event per this many ms (docs/protocol.md "Live list").
constexpr int kOutputEventMs = 1000;
} // namespace

QByteArray Server::sessionsEvent() const
{
    return "event: sessions\ndata: "
        + QJsonDocument(listJson()).toJson(QJsonDocument::Compact) + "\n\n";
}

QByteArray Server::shutdownEvent()
{
    return "event: shutdown\ndata: {\"reason\":\"" + QByteArray(Protocol::CloseReason::ServerShutdown) + "\"}\n\n";
}

QByteArray Server::serverEvent() const
{
    if (!m_restartHooks.status)
        return QByteArray();
    return "event: server\ndata: " + QJsonDocument(m_restartHooks.status()).toJson(QJsonDocument::Compact) + "\n\n";
}

void Server::sendServerEvent()
{
    const QByteArray event = serverEvent();
    if (event.isEmpty() || m_restarting)
        return;
    const auto streams = m_eventStreams;
    for (HttpConnection *c : streams)
        c->writeStream(event);
}

void Server::writeEvent(const QByteArray &event)
{
    if (m_restarting)
        return;
    const auto streams = m_eventStreams;
    for (HttpConnection *c : streams)
        c->writeStream(event);
}

void Server::sendCommandEvent(Session *s, const CommandRecord &record, bool finished)
{
    if (m_eventStreams.isEmpty())
        return;
    QJsonObject o;
    o.insert(QStringLiteral("session"), s->id());
    o.insert(QStringLiteral("phase"), finished ? QStringLiteral("finished") : QStringLiteral("started"));
    o.insert(QStringLiteral("command"), commandToJson(record));
    writeEvent("event: command\ndata: " + QJsonDocument(o).toJson(QJsonDocument::Compact) + "\n\n");
}

void Server::sendNotifyEvent(Session *s, const QString &kind, const QString &text, bool watched, bool requested,
                             const CommandRecord &record)
{
    if (m_eventStreams.isEmpty())
        return;
    QJsonObject o;
    o.insert(QStringLiteral("session"), s->id());
    o.insert(QStringLiteral("name"), s->name());
    o.insert(QStringLiteral("kind"), kind);
    o.insert(QStringLiteral("text"), text);
    o.insert(QStringLiteral("watched"), watched);
    o.insert(QStringLiteral("requested"), requested);
    o.insert(QStringLiteral("command"), record.id ? QJsonValue(commandToJson(record)) : QJsonValue(QJsonValue::Null));
    writeEvent("event: notify\ndata: " + QJsonDocument(o).toJson(QJsonDocument::Compact) + "\n\n");
}

void Server::startEventStream(HttpConnection *c)
{
    Headers h;
    h.append(qMakePair(QByteArray("Content-Type"), QByteArray("text/event-stream; charset=utf-8")));
    h.append(qMakePair(QByteArray("Cache-Control"), QByteArray("no-cache")));
    c->startStream(200, h);
    m_eventStreams.insert(c);
    if (!m_eventKeepalive.isActive())
        m_eventKeepalive.start();
    c->writeStream(sessionsEvent());
    const QByteArray server = serverEvent(); // version and update; none without hooks
    if (!server.isEmpty())
        c->writeStream(server);
    if (m_restarting)
        c->endStream(); // EventSource reconnects, to the next process image
}

void Server::scheduleEvents()
{
    if (!m_eventStreams.isEmpty() && !m_eventTimer.isActive())
        m_eventTimer.start();
}

void Server::broadcastEvents()
{
    if (m_eventStreams.isEmpty() || !m_registry)
        return;
    const QByteArray event = sessionsEvent();
    const auto streams = m_eventStreams;
    for (HttpConnection *c : streams)
        c->writeStream(event);
}

void Server::watchOutput(Session *session)
{
    connect(session, &Session::outputArrived, this, &Server::scheduleOutputEvent, Qt::UniqueConnection);
}

void Server::scheduleOutputEvent()
{
    if (m_outputStreams.isEmpty() || m_outputTimer.isActive())
        return;
    // The first output after a quiet second soon; then one event a second.
    const qint64 since = m_outputSentAt.isValid() ? m_outputSentAt.elapsed() : kOutputEventMs;
    m_outputTimer.start(int(std::max<qint64>(kEventCoalesceMs, kOutputEventMs - since)));
}

void Server::sendOutputEvent()
{
    if (m_outputStreams.isEmpty() || !m_registry || m_restarting)
        return;
    QJsonObject moved;
    QHash<QString, quint64> now;
    const auto sessions = m_registry->sessions();
    now.reserve(sessions.size());
    for (const Session *s : sessions) {
        const quint64 offset = s->offset();
        now.insert(s->id(), offset);
        const auto was = m_outputSent.constFind(s->id());
        if (was == m_outputSent.cend() || was.value() != offset)
            moved.insert(s->id(), double(offset));
    }
    m_outputSent = now;
    m_outputSentAt.start();
    if (moved.isEmpty())
        return;
    QJsonObject o;
    o.insert(QStringLiteral("sessions"), moved);
    const QByteArray event = "event: output\ndata: " + QJsonDocument(o).toJson(QJsonDocument::Compact) + "\n\n";
    const auto streams = m_outputStreams;
    for (HttpConnection *c : streams)
        c->writeStream(event);
}

} // namespace Tether
