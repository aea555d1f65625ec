// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include "apiclient.h"

#include <QJsonArray>
#include <QJsonObject>
#include <QObject>
#include <QPointer>
#include <QTimer>

class QNetworkReply;

namespace Tether {

/**
 * A client of the session event stream, `GET /api/events` (docs/protocol.md
 * section 4, "Live list"): Server-Sent Events parsed as they arrive, one
 * signal per event. What the desktop app's tray and Sessions window are fed
 * from when the sessions live in the host (issue 23).
 *
 * Reconnects by itself, as EventSource does, when the stream ends (a restart
 * in place ends it; the next image answers the reconnection) or cannot be
 * opened (the host is not serving: connection refused): after 250 ms, then
 * doubling to at most 2 s; only while disconnected, so a connected stream
 * costs no timer (the server's keepalive comment arrives every 20 s). A
 * `401` (the key was rotated, or is wrong) stops it: refused() says so and
 * the holder decides (a new key from the runtime file: setEndpoint(), start()).
 */
class EventStream : public QObject
{
    Q_OBJECT
public:
    explicit EventStream(const ServerEndpoint &endpoint, QObject *parent = nullptr);
    ~EventStream() override;

    void setEndpoint(const ServerEndpoint &endpoint);
    const ServerEndpoint &endpoint() const { return m_api->endpoint(); }
    /// Opens the stream (again); reconnects by itself from then on.
    void start();
    /// Closes the stream and stops reconnecting.
    void stop();
    /// The stream is open and its first `sessions` event has arrived.
    bool isConnected() const { return m_connected; }
    /// Reconnection delay bounds, ms (tests).
    void setRetryDelays(int firstMs, int maxMs)
    {
        m_firstRetryMs = firstMs;
        m_maxRetryMs = maxMs;
    }

Q_SIGNALS:
    /// `event: sessions`: the complete list (replace, do not merge).
    void sessionsReceived(const QJsonArray &sessions);
    /// `event: server`: the server's status (GET /api/restart's object).
    void serverReceived(const QJsonObject &status);
    /// `event: shutdown`: the server is shutting down, its sessions end.
    void shutdownReceived(const QString &reason);
    /// `event: notify`: something for the user's attention (docs/protocol.md,
    /// "Commands": kind, session, text, watched, requested, command).
    void notifyReceived(const QJsonObject &event);
    /// `event: key`: the access key was rotated; the stream ends.
    void keyRotated();
    /// Open (first `sessions` event in) or closed.
    void connectedChanged(bool connected);
    /// The server answered something other than 200 (401: the key); the
    /// stream stopped reconnecting. `error` is the API's text.
    void refused(int status, const QString &error);

private:
    void open();
    void onReadyRead();
    void onFinished();
    void dispatch(const QByteArray &event, const QByteArray &data);
    void setConnected(bool connected);
    void scheduleRetry();

    ApiClient *m_api = nullptr;
    QPointer<QNetworkReply> m_reply;
    QByteArray m_buffer;
    QTimer m_retry;
    int m_firstRetryMs = 250;
    int m_maxRetryMs = 2000;
    int m_nextRetryMs = 250;
    bool m_running = false;
    bool m_connected = false;
};

} // namespace Tether
