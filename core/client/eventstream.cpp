// SPDX-License-Identifier: GPL-2.0-or-later
#include "eventstream.h"

#include <QJsonDocument>
#include <QNetworkReply>

namespace Tether {

namespace {
/// A stream that sends more than this without a blank line is not the API's.
constexpr qsizetype kMaxEventBytes = 16 * 1024 * 1024;
} // namespace

EventStream::EventStream(const ServerEndpoint &endpoint, QObject *parent)
    : QObject(parent)
    , m_api(new ApiClient(endpoint, this))
{
    m_retry.setSingleShot(true);
    connect(&m_retry, &QTimer::timeout, this, &EventStream::open);
}

EventStream::~EventStream()
{
    delete m_reply.data();
}

void EventStream::setEndpoint(const ServerEndpoint &endpoint)
{
    const bool running = m_running;
    stop();
    delete m_api;
    m_api = new ApiClient(endpoint, this);
    if (running)
        start();
}

void EventStream::start()
{
    m_running = true;
    m_nextRetryMs = m_firstRetryMs;
    m_retry.stop();
    open();
}

void EventStream::stop()
{
    m_running = false;
    m_retry.stop();
    if (m_reply) {
        QNetworkReply *r = m_reply;
        m_reply = nullptr;
        r->disconnect(this);
        r->abort();
        r->deleteLater();
    }
    m_buffer.clear();
    setConnected(false);
}

void EventStream::open()
{
    if (!m_running || m_reply)
        return;
    m_buffer.clear();
    m_reply = m_api->openStream(QStringLiteral("api/events"));
    connect(m_reply, &QIODevice::readyRead, this, &EventStream::onReadyRead);
    connect(m_reply, &QNetworkReply::finished, this, &EventStream::onFinished);
}

void EventStream::onReadyRead()
{
    if (!m_reply)
        return;
    const int status = m_reply->attribute(QNetworkRequest::HttpStatusCodeAttribute).toInt();
    if (status != 200)
        return; // the body is an error; onFinished() reads it
    m_buffer += m_reply->readAll();
    ApiClient::takeEvents(&m_buffer, [this](const QByteArray &event, const QByteArray &data) {
        dispatch(event, data);
        return m_reply != nullptr; // false: a handler stopped us
    });
    if (!m_reply)
        return;
    if (m_buffer.size() > kMaxEventBytes) {
        m_reply->abort(); // onFinished() reconnects
    }
}

void EventStream::dispatch(const QByteArray &event, const QByteArray &data)
{
    const QJsonObject o = QJsonDocument::fromJson(data).object();
    if (event == "sessions") {
        m_nextRetryMs = m_firstRetryMs; // it works: the next drop retries soon
        setConnected(true);
        Q_EMIT sessionsReceived(o.value(QStringLiteral("sessions")).toArray());
    } else if (event == "server") {
        Q_EMIT serverReceived(o);
    } else if (event == "shutdown") {
        Q_EMIT shutdownReceived(o.value(QStringLiteral("reason")).toString());
    } else if (event == "key") {
        Q_EMIT keyRotated();
    } else if (event == "notify") {
        Q_EMIT notifyReceived(o);
    }
}

void EventStream::onFinished()
{
    QNetworkReply *r = m_reply;
    if (!r)
        return;
    m_reply = nullptr;
    r->deleteLater();
    const int status = r->attribute(QNetworkRequest::HttpStatusCodeAttribute).toInt();
    setConnected(false);
    if (status != 0 && status != 200) {
        const QString error = QJsonDocument::fromJson(r->readAll()).object().value(QStringLiteral("error")).toString();
        m_running = false;
        Q_EMIT refused(status, error.isEmpty() ? QStringLiteral("HTTP %1").arg(status) : error);
        return;
    }
    scheduleRetry();
}

void EventStream::scheduleRetry()
{
    if (!m_running)
        return;
    m_retry.start(m_nextRetryMs);
    m_nextRetryMs = qMin(m_nextRetryMs * 2, m_maxRetryMs);
}

void EventStream::setConnected(bool connected)
{
    if (m_connected == connected)
        return;
    m_connected = connected;
    Q_EMIT connectedChanged(connected);
}

} // namespace Tether
