// SPDX-License-Identifier: GPL-2.0-or-later
#include "desktopnotifier.h"
#include "logging.h"

#include <QDBusMessage>
#include <QDBusPendingCallWatcher>
#include <QDBusPendingReply>
#include <QVariantMap>

namespace Tether {

namespace {
const QString kService = QStringLiteral("org.freedesktop.Notifications");
const QString kPath = QStringLiteral("/org/freedesktop/Notifications");
const QString kInterface = QStringLiteral("org.freedesktop.Notifications");
} // namespace

DesktopNotifier::DesktopNotifier(const QDBusConnection &bus, QObject *parent)
    : QObject(parent)
    , m_bus(bus)
    , m_available(bus.isConnected())
{
    if (!m_available)
        return;
    // Signals from any sender of the service name: the daemon's unique name
    // may change if it is restarted.
    m_bus.connect(kService, kPath, kInterface, QStringLiteral("ActionInvoked"), this,
                  SLOT(onActionInvoked(uint,QString)));
    m_bus.connect(kService, kPath, kInterface, QStringLiteral("NotificationClosed"), this,
                  SLOT(onNotificationClosed(uint,uint)));
}

bool DesktopNotifier::show(const QString &title, const QString &text, const Context &context, int timeoutMs)
{
    if (!m_available)
        return false;
    QStringList actions{QStringLiteral("default"), tr("Open")};
    if (!context.sessionId.isEmpty())
        actions << QStringLiteral("attach") << tr("Attach");
    QVariantMap hints;
    // The spec's standard hints: the .desktop file (for the icon and the
    // daemon's per-application settings).
    hints.insert(QStringLiteral("desktop-entry"), QStringLiteral("tether"));
    QDBusMessage call = QDBusMessage::createMethodCall(kService, kPath, kInterface, QStringLiteral("Notify"));
    call << QStringLiteral("Tether") << uint(0) << QStringLiteral("tether") << title << text << actions << hints
         << qint32(timeoutMs);
    auto *watcher = new QDBusPendingCallWatcher(m_bus.asyncCall(call), this);
    connect(watcher, &QDBusPendingCallWatcher::finished, this, [this, watcher, title, text, context] {
        watcher->deleteLater();
        const QDBusPendingReply<uint> reply = *watcher;
        if (reply.isError()) {
            if (m_available)
                qCInfo(lcUi).noquote() << "no desktop notifications over D-Bus:" << reply.error().message()
                                       << "- the tray shows them";
            m_available = false;
            Q_EMIT failed(title, text, context);
            return;
        }
        m_contexts.insert(reply.value(), context);
        Q_EMIT shown(reply.value());
    });
    return true;
}

void DesktopNotifier::onActionInvoked(uint id, const QString &action)
{
    const auto it = m_contexts.constFind(id);
    if (it == m_contexts.constEnd())
        return; // another application's
    const Context context = it.value();
    // Daemons close the notification after an action (NotificationClosed
    // follows); forget it now all the same, so one is acted on once.
    m_contexts.erase(it);
    Q_EMIT actionInvoked(action, context);
}

void DesktopNotifier::onNotificationClosed(uint id, uint reason)
{
    Q_UNUSED(reason)
    m_contexts.remove(id);
}

} // namespace Tether
