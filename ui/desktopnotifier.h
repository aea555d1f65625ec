// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <QDBusConnection>
#include <QHash>
#include <QObject>
#include <QString>

class QDBusPendingCallWatcher;

namespace Tether {

/**
 * Desktop notifications through the freedesktop notification service
 * (org.freedesktop.Notifications on the session bus; Desktop Notifications
 * Specification 1.2, https://specifications.freedesktop.org/notification-spec/),
 * with an **Attach** action for notifications about a session (issue 25).
 *
 * show() sends `Notify` asynchronously: the event loop never waits for the
 * bus or the daemon. When the call fails (no session bus, no daemon owns
 * the name, a timeout), failed() is emitted with the same title and text, so
 * that the caller shows it another way (the tray balloon), and the notifier
 * stops trying for this process (available() is false from then on): a
 * desktop without a notification daemon does not pay a failing call per
 * notification.
 *
 * Actions (the spec's "actions" and `ActionInvoked` signal): every
 * notification has `default` (a click on its body), one about a session also
 * `attach` ("Attach"). actionInvoked() reports which, with the context given
 * to show(). Notifications closed (`NotificationClosed`) are forgotten. Only
 * signals for ids this notifier created are taken: other applications'
 * notifications share the bus.
 */
class DesktopNotifier : public QObject
{
    Q_OBJECT
public:
    /// What a notification was about, handed back by actionInvoked().
    struct Context {
        QString sessionId; ///< empty: not about one session (no Attach action)
        bool restarts = false; ///< a click restarts Tether into a new version
    };

    /// Uses `bus` (default: the session bus of DBUS_SESSION_BUS_ADDRESS).
    explicit DesktopNotifier(const QDBusConnection &bus = QDBusConnection::sessionBus(), QObject *parent = nullptr);

    /// False once a call failed, or when there is no bus connection at all.
    bool available() const { return m_available; }

    /// Sends a notification (asynchronous; see the class). `timeoutMs` is the
    /// spec's expire_timeout (-1: the daemon's default). Returns false, and
    /// sends nothing, when !available().
    bool show(const QString &title, const QString &text, const Context &context, int timeoutMs = -1);

    /// Notifications sent and not yet closed (tests).
    int pending() const { return int(m_contexts.size()); }

Q_SIGNALS:
    /// The user chose `action` ("default" or "attach") on one of ours.
    void actionInvoked(const QString &action, const Tether::DesktopNotifier::Context &context);
    /// The notification could not be shown over D-Bus (see the class).
    void failed(const QString &title, const QString &text, const Tether::DesktopNotifier::Context &context);
    /// The daemon answered Notify with `id` (tests).
    void shown(uint id);

private Q_SLOTS:
    // Connected by name (QDBusConnection::connect), hence slots.
    void onActionInvoked(uint id, const QString &action);
    void onNotificationClosed(uint id, uint reason);

private:
    QDBusConnection m_bus;
    bool m_available = false;
    QHash<uint, Context> m_contexts;
};

} // namespace Tether

Q_DECLARE_METATYPE(Tether::DesktopNotifier::Context)
