// SPDX-License-Identifier: GPL-2.0-or-later
// SessionNameWatcher: one session's name and command from the host's live
// list, for a terminal window's title (see sessionnamewatcher.h).
#include "sessionnamewatcher.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QNetworkAccessManager>
#include <QNetworkProxy>
#include <QNetworkReply>
#include <QNetworkRequest>

namespace Tether {

SessionNameWatcher::SessionNameWatcher(const ServerEndpoint &endpoint, const QString &sessionId, QObject *parent)
    : QObject(parent)
    , m_endpoint(endpoint)
    , m_sessionId(sessionId)
{
    m_nam = new QNetworkAccessManager(this);
    if (m_endpoint.isLoopback())
        m_nam->setProxy(QNetworkProxy::NoProxy);
}

void SessionNameWatcher::stop()
{
    if (m_events)
        m_events->abort();
}

void SessionNameWatcher::setEndpoint(const ServerEndpoint &endpoint)
{
    m_endpoint = endpoint;
    m_nam->setProxy(m_endpoint.isLoopback() ? QNetworkProxy::NoProxy : QNetworkProxy::DefaultProxy);
    // The stream of the old host: the next start() opens the new one.
    stop();
}

void SessionNameWatcher::start()
{
    if (m_events)
        return;
    QNetworkRequest req(m_endpoint.resolved(QStringLiteral("api/events")));
    req.setRawHeader("Authorization", "Bearer " + m_endpoint.key.toUtf8());
    req.setRawHeader("Accept", "text/event-stream");
    if (m_endpoint.url.scheme() == QLatin1String("https"))
        req.setSslConfiguration(m_endpoint.sslConfiguration());
    QNetworkReply *reply = m_nam->get(req);
    m_events = reply;
    m_buffer.clear();
    connect(reply, &QNetworkReply::sslErrors, this, [this, reply](const QList<QSslError> &) {
        if (m_endpoint.isPinned(reply->sslConfiguration().peerCertificate()))
            reply->ignoreSslErrors();
    });
    connect(reply, &QIODevice::readyRead, this, &SessionNameWatcher::onData);
    // The stream ends with the server (a restart in place ends it too): the
    // owner's next start() (the window's next `attached`) opens it again.
    connect(reply, &QNetworkReply::finished, reply, &QObject::deleteLater);
}

void SessionNameWatcher::onData()
{
    QNetworkReply *reply = m_events;
    if (!reply)
        return;
    m_buffer += reply->readAll();
    // Server-Sent Events: blocks separated by a blank line, "event: NAME"
    // and "data: JSON" lines (docs/protocol.md "Live list").
    for (;;) {
        const int end = m_buffer.indexOf("\n\n");
        if (end < 0)
            break;
        const QByteArray block = m_buffer.left(end);
        m_buffer.remove(0, end + 2);
        QByteArray event;
        QByteArray data;
        for (const QByteArray &line : block.split('\n')) {
            if (line.startsWith("event:"))
                event = line.mid(6).trimmed();
            else if (line.startsWith("data:"))
                data += line.mid(5).trimmed();
        }
        if (event == "sessions")
            onSessionsEvent(data);
    }
}

void SessionNameWatcher::onSessionsEvent(const QByteArray &json)
{
    const QJsonArray sessions = QJsonDocument::fromJson(json).object().value(QStringLiteral("sessions")).toArray();
    for (const QJsonValue &v : sessions) {
        const QJsonObject o = v.toObject();
        if (o.value(QStringLiteral("id")).toString() != m_sessionId)
            continue;
        QStringList command;
        for (const QJsonValue &a : o.value(QStringLiteral("command")).toArray())
            command << a.toString();
        Q_EMIT sessionChanged(o.value(QStringLiteral("name")).toString(), command);
        return;
    }
}

} // namespace Tether
