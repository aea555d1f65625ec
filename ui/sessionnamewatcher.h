// SPDX-License-Identifier: GPL-2.0-or-later
// SessionNameWatcher: follows one session's name and command in the host's
// live list (GET /api/events) for a terminal window's title. A unit of its
// own because names are not in the attach stream: this is the window's
// second, independent connection to the host, with its own parser and
// lifetime (issue 28 split it out of terminalwindow.cpp).
#pragma once

#include "apiclient.h"

#include <QByteArray>
#include <QObject>
#include <QPointer>
#include <QString>
#include <QStringList>

class QNetworkAccessManager;
class QNetworkReply;

namespace Tether {

/**
 * Reads the server's `GET /api/events` stream (Server-Sent Events,
 * docs/protocol.md "Live list") while started, and says the name and the
 * command of session `sessionId` each time a `sessions` event lists it
 * (sessionChanged()). A session the event does not list is left unsaid.
 *
 * The stream ends with the server (a restart in place ends it too); it is
 * not opened again by itself: the owner calls start() again (TerminalWindow
 * does at each `attached`). A loopback endpoint is reached without a proxy;
 * an `https` one with the endpoint's TLS configuration, a certificate
 * error passing only for the endpoint's pinned certificate.
 */
class SessionNameWatcher : public QObject
{
    Q_OBJECT
public:
    SessionNameWatcher(const ServerEndpoint &endpoint, const QString &sessionId, QObject *parent = nullptr);

    /// Opens the stream; nothing when it is open already.
    void start();
    /// Closes the stream (if open); start() opens it again.
    void stop();
    /// The host moved: closes the stream of the old one (start() opens the
    /// new one) and takes `endpoint`'s proxy rule.
    void setEndpoint(const ServerEndpoint &endpoint);

Q_SIGNALS:
    /// A `sessions` event listed the session: its name ("" if none) and
    /// command (argv).
    void sessionChanged(const QString &name, const QStringList &command);

private:
    void onData();
    void onSessionsEvent(const QByteArray &json);

    ServerEndpoint m_endpoint;
    QString m_sessionId;
    QNetworkAccessManager *m_nam = nullptr;
    QPointer<QNetworkReply> m_events;
    QByteArray m_buffer;           ///< event-stream bytes not yet parsed (an unfinished event)
};

} // namespace Tether
