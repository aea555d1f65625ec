// SPDX-License-Identifier: GPL-2.0-or-later
#include "registry.h"
#include "logging.h"

#include <QRandomGenerator>
#include <algorithm>

namespace Tether {

namespace {
// QTimer intervals are int milliseconds (~24.8 days); longer deadlines are
// reached in steps, re-computing at each wakeup.
constexpr qint64 kMaxTimerMs = 24LL * 3600 * 1000;
} // namespace

SessionRegistry::SessionRegistry(const Limits &limits, QObject *parent)
    : QObject(parent)
    , m_limits(limits)
{
    m_expiryTimer.setSingleShot(true);
    connect(&m_expiryTimer, &QTimer::timeout, this, &SessionRegistry::expireDue);
}

SessionRegistry::~SessionRegistry()
{
    // Sessions are children: their PtyProcess destructors kill and hand the
    // processes to the reaper without blocking.
    m_expiryTimer.stop();
}

QString SessionRegistry::newId()
{
    // 128 random bits from the system CSPRNG, URL-safe base64 without padding
    // (22 characters). Ids already issued are never handed out again.
    for (;;) {
        quint32 words[4];
        QRandomGenerator::system()->fillRange(words);
        const QByteArray raw(reinterpret_cast<const char *>(words), sizeof(words));
        const QString id = QString::fromLatin1(
            raw.toBase64(QByteArray::Base64UrlEncoding | QByteArray::OmitTrailingEquals));
        if (!m_issuedIds.contains(id)) {
            m_issuedIds.insert(id);
            return id;
        }
    }
}

Session *SessionRegistry::create(const SpawnOptions &options, CreateError *error, QString *errorText,
                                 QString *evictedId)
{
    if (evictedId)
        evictedId->clear();
    auto fail = [&](CreateError e, const QString &text) -> Session * {
        if (error)
            *error = e;
        if (errorText)
            *errorText = text;
        qCInfo(lcRegistry) << "create refused:" << text;
        return nullptr;
    };
    if (m_shuttingDown)
        return fail(CreateError::SpawnFailed, QStringLiteral("server is shutting down"));

    Session *evict = nullptr;
    if (count() >= m_limits.maxSessions) {
        // Evict the session detached longest, finished ones first; never one
        // somebody is looking at.
        Session *victim = nullptr;
        for (Session *s : std::as_const(m_order)) {
            if (s->viewerCount() > 0)
                continue;
            if (!victim) {
                victim = s;
                continue;
            }
            const bool sExited = s->state() == Session::State::Exited;
            const bool vExited = victim->state() == Session::State::Exited;
            if (sExited != vExited) {
                if (sExited)
                    victim = s;
            } else if (s->detachedSince() < victim->detachedSince()) {
                victim = s;
            }
        }
        if (!victim)
            return fail(CreateError::TooManySessions,
                        QStringLiteral("too many sessions: the limit is %1 and every session has a viewer").arg(m_limits.maxSessions));
        evict = victim;
    }

    auto *s = new Session(newId(), options, m_limits.bufferCapacity, this);
    s->process()->setTeardownGrace(m_graceMs);
    QString text;
    if (!s->start(&text)) {
        // Nothing is evicted for a command that cannot start.
        const bool resources = s->process()->startFailure() == PtyProcess::StartFailure::Resources;
        delete s;
        return fail(resources ? CreateError::OutOfResources : CreateError::SpawnFailed, text);
    }
    if (evict) {
        qCInfo(lcRegistry) << "evicting session" << evict->id() << "to make room";
        if (evictedId)
            *evictedId = evict->id();
        remove(evict, DetachReason::Killed);
    }
    m_order.append(s);
    m_byId.insert(s->id(), s);

    auto changed = [this, s] { Q_EMIT sessionChanged(s); };
    connect(s, &Session::titleChanged, this, changed);
    connect(s, &Session::sizeChanged, this, changed);
    connect(s, &Session::exited, this, [this, s] {
        rescheduleExpiry();
        Q_EMIT sessionChanged(s);
    });
    connect(s, &Session::viewersChanged, this, [this, s] {
        rescheduleExpiry();
        Q_EMIT sessionChanged(s);
    });

    if (error)
        *error = CreateError::None;
    Q_EMIT sessionAdded(s);
    rescheduleExpiry();
    return s;
}

Session *SessionRegistry::find(const QString &id) const
{
    return m_byId.value(id, nullptr);
}

bool SessionRegistry::kill(const QString &id)
{
    Session *s = find(id);
    if (!s)
        return false;
    remove(s, DetachReason::Killed);
    return true;
}

void SessionRegistry::remove(Session *s, DetachReason reason)
{
    m_order.removeOne(s);
    m_byId.remove(s->id());
    m_warnedDeadline.remove(s);
    disconnect(s, nullptr, this, nullptr);
    Q_EMIT sessionRemoved(s);

    m_dying.insert(s);
    auto finish = [this, s] {
        if (!m_dying.remove(s))
            return;
        s->deleteLater();
        maybeFinishShutdown();
    };
    connect(s, &Session::tornDown, this, finish);
    s->kill(reason);
    if (s->isTornDown())
        finish();
    rescheduleExpiry();
}

QDateTime SessionRegistry::expiryDeadline(const Session *s) const
{
    if (m_limits.ttlSeconds <= 0 || s->viewerCount() > 0)
        return QDateTime();
    QDateTime base = s->detachedSince();
    if (base.isNull())
        return QDateTime();
    // A finished session counts from its exit when that is later.
    if (s->state() == Session::State::Exited && s->exitedAt() > base)
        base = s->exitedAt();
    return base.addSecs(m_limits.ttlSeconds);
}

qint64 SessionRegistry::expiresIn(const Session *s) const
{
    const QDateTime d = expiryDeadline(s);
    if (d.isNull())
        return -1;
    const qint64 ms = d.toMSecsSinceEpoch() - QDateTime::currentMSecsSinceEpoch();
    return ms <= 0 ? 0 : (ms + 999) / 1000; // whole seconds, rounded up
}

qint64 SessionRegistry::expiryWarningLeadMs(int ttlSeconds)
{
    if (ttlSeconds <= 0)
        return 0;
    return std::min<qint64>(60 * 1000, qint64(ttlSeconds) * 100);
}

qint64 SessionRegistry::warningLeadMs() const
{
    return m_warningLeadMs >= 0 ? m_warningLeadMs : expiryWarningLeadMs(m_limits.ttlSeconds);
}

qint64 SessionRegistry::nextWakeupMs(const Session *s) const
{
    const QDateTime d = expiryDeadline(s);
    if (d.isNull())
        return -1;
    const qint64 deadline = d.toMSecsSinceEpoch();
    if (m_warnedDeadline.value(s, -1) == deadline)
        return deadline;
    return deadline - warningLeadMs();
}

void SessionRegistry::rescheduleExpiry()
{
    qint64 next = -1;
    for (Session *s : std::as_const(m_order)) {
        const qint64 ms = nextWakeupMs(s);
        if (ms >= 0 && (next < 0 || ms < next))
            next = ms;
    }
    if (next < 0) {
        m_expiryTimer.stop();
        return;
    }
    const qint64 wait = std::clamp<qint64>(next - QDateTime::currentMSecsSinceEpoch(), 0, kMaxTimerMs);
    m_expiryTimer.start(int(wait));
}

void SessionRegistry::expireDue()
{
    const qint64 now = QDateTime::currentMSecsSinceEpoch();
    const QList<Session *> all = m_order;
    QList<QPair<Session *, int>> warn;
    for (Session *s : all) {
        const QDateTime d = expiryDeadline(s);
        if (d.isNull())
            continue;
        const qint64 deadline = d.toMSecsSinceEpoch();
        if (deadline <= now) {
            qCInfo(lcRegistry) << "session" << s->id() << "expired";
            remove(s, DetachReason::Killed);
        } else if (m_warnedDeadline.value(s, -1) != deadline
                   && deadline - warningLeadMs() <= now) {
            m_warnedDeadline.insert(s, deadline);
            warn.append({s, int((deadline - now + 999) / 1000)});
        }
    }
    rescheduleExpiry();
    // Emitted last: a receiver may attach, kill or create sessions.
    for (const auto &w : std::as_const(warn)) {
        if (!m_order.contains(w.first))
            continue;
        qCInfo(lcRegistry) << "session" << w.first->id() << "expires in" << w.second << "s";
        Q_EMIT expiringSoon(w.first, w.second);
    }
}

void SessionRegistry::setLimits(const Limits &limits)
{
    const bool capacityChanged = limits.bufferCapacity != m_limits.bufferCapacity;
    m_limits = limits;
    if (capacityChanged)
        for (Session *s : std::as_const(m_order))
            s->setBufferCapacity(limits.bufferCapacity);
    rescheduleExpiry();
}

void SessionRegistry::shutdown()
{
    if (m_shuttingDown)
        return;
    m_shuttingDown = true;
    m_expiryTimer.stop();
    m_warnedDeadline.clear();
    const QList<Session *> all = m_order;
    for (Session *s : all)
        remove(s, DetachReason::Shutdown);
    // Queued, so a caller may connect to shutdownComplete after calling us.
    QMetaObject::invokeMethod(this, &SessionRegistry::maybeFinishShutdown, Qt::QueuedConnection);
}

void SessionRegistry::maybeFinishShutdown()
{
    if (!m_shuttingDown || m_shutdownDone || !m_order.isEmpty() || !m_dying.isEmpty())
        return;
    m_shutdownDone = true;
    qCInfo(lcRegistry) << "shutdown complete";
    Q_EMIT shutdownComplete();
}

} // namespace Tether
