// SPDX-License-Identifier: GPL-2.0-or-later
#include "registry.h"
#include "logging.h"
#include "shellintegration.h"

#include <QRandomGenerator>
#include <algorithm>
#include <csignal>
#include <unistd.h>

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

QString SessionRegistry::randomId()
{
    // 128 random bits from the system CSPRNG, URL-safe base64 without padding
    // (22 characters). Never with a leading '-': such an id reads as an
    // option on a command line (`tether kill -Drs…`, and the grep in the
    // shell completions; found by packaging/tst_completion, 1 run in ~30).
    for (;;) {
        quint32 words[4];
        QRandomGenerator::system()->fillRange(words);
        const QByteArray raw(reinterpret_cast<const char *>(words), sizeof(words));
        const QString id = QString::fromLatin1(
            raw.toBase64(QByteArray::Base64UrlEncoding | QByteArray::OmitTrailingEquals));
        if (!id.startsWith(QLatin1Char('-')))
            return id;
    }
}

QString SessionRegistry::newId()
{
    // Ids already issued are never handed out again.
    for (;;) {
        const QString id = randomId();
        if (!m_issuedIds.contains(id)) {
            m_issuedIds.insert(id);
            return id;
        }
    }
}

QString SessionRegistry::nameProblem(const QString &name)
{
    if (name.isEmpty())
        return QString();
    int points = 0;
    for (int i = 0; i < name.size(); ++i, ++points) {
        uint c = name.at(i).unicode();
        // Not surrogateToUcs4(name.at(i), name.at(++i)): the order in which
        // arguments are evaluated is unspecified, and GCC (-Wsequence-point)
        // may read the low surrogate twice.
        if (QChar::isHighSurrogate(c) && i + 1 < name.size() && name.at(i + 1).isLowSurrogate()) {
            c = QChar::surrogateToUcs4(name.at(i), name.at(i + 1));
            ++i;
        } else if (QChar::isSurrogate(c)) {
            return QStringLiteral("name must be valid Unicode");
        }
        const QChar::Category cat = QChar::category(c);
        if (cat == QChar::Other_Control || cat == QChar::Separator_Line || cat == QChar::Separator_Paragraph)
            return QStringLiteral("name must not contain control characters or line breaks");
    }
    if (points > kMaxNameLength)
        return QStringLiteral("name is longer than %1 characters").arg(kMaxNameLength);
    if (name.trimmed() != name)
        return QStringLiteral("name must not start or end with white space");
    // The form of a session id (randomId(): 22 characters of base64url):
    // such a name could be another session's id, and `tether attach X`
    // would mean either.
    if (name.size() == kIdLength
        && std::all_of(name.cbegin(), name.cend(), [](QChar c) {
               return (c >= QLatin1Char('a') && c <= QLatin1Char('z')) || (c >= QLatin1Char('A') && c <= QLatin1Char('Z'))
                   || (c >= QLatin1Char('0') && c <= QLatin1Char('9')) || c == QLatin1Char('-') || c == QLatin1Char('_');
           }))
        return QStringLiteral("name must not look like a session id (%1 letters, digits, '-' or '_'): "
                              "`tether attach NAME` could mean another session")
            .arg(kIdLength);
    return QString();
}

Session *SessionRegistry::findByName(const QString &name) const
{
    if (name.isEmpty())
        return nullptr;
    for (Session *s : m_order)
        if (s->name() == name)
            return s;
    return nullptr;
}

QString SessionRegistry::nameRefusal(const Session *session, const QString &name, CreateError *error) const
{
    QString problem = nameProblem(name);
    if (!problem.isEmpty()) {
        *error = CreateError::BadName;
        return problem;
    }
    const Session *holder = findByName(name);
    if (holder && holder != session) {
        *error = CreateError::NameTaken;
        return QStringLiteral("name \"%1\" is taken by session %2").arg(name, holder->id());
    }
    *error = CreateError::None;
    return QString();
}

bool SessionRegistry::rename(Session *session, const QString &name, CreateError *error, QString *errorText)
{
    CreateError e = CreateError::None;
    const QString refusal = nameRefusal(session, name, &e);
    if (error)
        *error = e;
    if (!refusal.isEmpty()) {
        if (errorText)
            *errorText = refusal;
        return false;
    }
    session->setName(name); // sessionChanged follows through track()
    return true;
}

Session *SessionRegistry::create(const SpawnOptions &options, const QString &name, CreateError *error,
                                 QString *errorText, QString *evictedId)
{
    if (evictedId)
        evictedId->clear();
    auto fail = [&](CreateError e, const QString &text) -> Session * {
        if (error)
            *error = e;
        if (errorText)
            *errorText = text;
        if (e == CreateError::OutOfResources) {
            // Once per shortage, however often clients retry while it lasts
            // (issue 10: logged once, not per attempt); the count follows
            // when a session starts again.
            if (m_refusedForResources++ == 0)
                qCWarning(lcRegistry).noquote() << "cannot create sessions, out of resources:" << text
                                                << "- further refusals are counted until one starts";
        } else {
            qCInfo(lcRegistry) << "create refused:" << text;
        }
        return nullptr;
    };
    if (m_shuttingDown)
        return fail(CreateError::SpawnFailed, QStringLiteral("server is shutting down"));
    CreateError nameError = CreateError::None;
    const QString refusal = nameRefusal(nullptr, name, &nameError);
    if (!refusal.isEmpty())
        return fail(nameError, refusal);

    Session *evict = nullptr;
    if (count() >= m_limits.maxSessions) {
        // Make room only by ending an exited session nobody is looking at,
        // the one detached longest: running work is never ended unasked.
        Session *victim = nullptr;
        for (Session *s : std::as_const(m_order)) {
            if (s->viewerCount() > 0 || s->state() != Session::State::Exited)
                continue;
            if (!victim || s->detachedSince() < victim->detachedSince())
                victim = s;
        }
        if (!victim)
            return fail(CreateError::TooManySessions,
                        QStringLiteral("too many sessions: %1 are running (the limit); end one with `tether kill ID`, "
                                       "or raise the limit with --max-sessions or the sessions/maxSessions setting")
                            .arg(m_limits.maxSessions));
        evict = victim;
    }

    auto *s = new Session(newId(), options, m_limits.bufferCapacity, this);
    s->setName(name);
    s->setScreenEnabled(m_limits.screen);
    s->setNotifyAfterMs(qint64(m_limits.notifyAfterSeconds) * 1000);
    if (m_limits.shellIntegration)
        s->setShellIntegration(ShellIntegration::scriptDir());
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
    if (m_refusedForResources > 0) {
        qCInfo(lcRegistry).noquote() << QStringLiteral("sessions start again; %1 refused for lack of resources")
                                            .arg(m_refusedForResources);
        m_refusedForResources = 0;
    }
    track(s);
    if (error)
        *error = CreateError::None;
    Q_EMIT sessionAdded(s);
    rescheduleExpiry();
    return s;
}

void SessionRegistry::track(Session *s)
{
    m_order.append(s);
    m_byId.insert(s->id(), s);
    m_issuedIds.insert(s->id());

    auto changed = [this, s] { Q_EMIT sessionChanged(s); };
    connect(s, &Session::titleChanged, this, changed);
    connect(s, &Session::sizeChanged, this, changed);
    connect(s, &Session::nameChanged, this, changed);
    connect(s, &Session::exited, this, [this, s] {
        rescheduleExpiry();
        Q_EMIT sessionChanged(s);
    });
    connect(s, &Session::viewersChanged, this, [this, s] {
        rescheduleExpiry();
        Q_EMIT sessionChanged(s);
    });
    connect(s, &Session::shellStateChanged, this, changed);
    connect(s, &Session::commandStarted, this, [this, s](const CommandRecord &c) {
        Q_EMIT sessionCommand(s, c, false);
        Q_EMIT sessionChanged(s);
    });
    connect(s, &Session::commandFinished, this, [this, s](const CommandRecord &c) {
        Q_EMIT sessionCommand(s, c, true);
        Q_EMIT sessionChanged(s);
    });
    connect(s, &Session::notifySettingsChanged, this, changed);
    connect(s, &Session::notify, this,
            [this, s](const QString &kind, const QString &text, bool watched, bool requested, const CommandRecord &c) {
                Q_EMIT sessionNotify(s, kind, text, watched, requested, c);
            });
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
    bury(s, reason);
    rescheduleExpiry();
}

void SessionRegistry::bury(Session *s, DetachReason reason)
{
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
}

int SessionRegistry::ttlFor(const Session *s) const
{
    return s->state() == Session::State::Exited ? m_limits.exitedTtlSeconds : m_limits.ttlSeconds;
}

QDateTime SessionRegistry::expiryDeadline(const Session *s) const
{
    const int ttl = ttlFor(s);
    if (ttl <= 0 || s->viewerCount() > 0)
        return QDateTime();
    QDateTime base = s->detachedSince();
    if (base.isNull())
        return QDateTime();
    // A finished session counts from its exit when that is later.
    if (s->state() == Session::State::Exited && s->exitedAt() > base)
        base = s->exitedAt();
    return base.addSecs(ttl);
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

qint64 SessionRegistry::warningLeadMs(const Session *s) const
{
    return m_warningLeadMs >= 0 ? m_warningLeadMs : expiryWarningLeadMs(ttlFor(s));
}

qint64 SessionRegistry::nextWakeupMs(const Session *s) const
{
    const QDateTime d = expiryDeadline(s);
    if (d.isNull())
        return -1;
    const qint64 deadline = d.toMSecsSinceEpoch();
    if (m_warnedDeadline.value(s, -1) == deadline)
        return deadline;
    return deadline - warningLeadMs(s);
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
                   && deadline - warningLeadMs(s) <= now) {
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
    for (Session *s : std::as_const(m_order)) {
        if (capacityChanged)
            s->setBufferCapacity(limits.bufferCapacity);
        s->setScreenEnabled(limits.screen);
        s->setNotifyAfterMs(qint64(limits.notifyAfterSeconds) * 1000);
    }
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

// --- restart in place --------------------------------------------------------------

Handover::State SessionRegistry::handover() const
{
    Handover::State state;
    for (Session *s : m_order)
        state.sessions.append(s->handover());
    for (Session *s : m_dying) {
        Handover::SessionRecord r = s->handover();
        r.dying = true;
        if (r.pty.pid > 0 && !r.pty.tornDown)
            state.sessions.append(r);
    }
    state.issuedIds = QStringList(m_issuedIds.begin(), m_issuedIds.end());
    state.reap = childrenAwaitingReap();
    return state;
}

void SessionRegistry::releaseAll()
{
    for (Session *s : std::as_const(m_order))
        s->process()->release();
    for (Session *s : std::as_const(m_dying))
        s->process()->release();
}

void SessionRegistry::abandon(const PtyHandover &pty)
{
    // Nothing could take this PTY over: do what losing it would do anyway
    // (the kernel hangs up the session when its master closes), but leave
    // no zombie behind.
    if (pty.masterFd >= 0)
        ::close(pty.masterFd);
    if (pty.pidfd >= 0)
        ::close(pty.pidfd);
    if (pty.pid > 0 && !pty.leaderExited) {
        ::kill(pty.pid, SIGHUP);
        ::kill(pty.pid, SIGCONT);
        reapChildLater(pty.pid);
    }
}

bool SessionRegistry::enlist(Session *s, bool dying)
{
    s->process()->setTeardownGrace(m_graceMs);
    // A duplicate id can only come from a damaged state: never two sessions
    // under one id.
    if (dying || m_byId.contains(s->id())) {
        bury(s, DetachReason::Killed);
        return false;
    }
    if (s->buffer().capacity() != m_limits.bufferCapacity)
        s->setBufferCapacity(m_limits.bufferCapacity);
    s->setScreenEnabled(m_limits.screen);
    s->setNotifyAfterMs(qint64(m_limits.notifyAfterSeconds) * 1000);
    track(s);
    Q_EMIT sessionAdded(s);
    return true;
}

int SessionRegistry::adopt(const Handover::State &state, QStringList *problems)
{
    for (const QString &id : state.issuedIds)
        m_issuedIds.insert(id);
    for (const pid_t pid : state.reap)
        reapChildLater(pid);
    int adopted = 0;
    for (const Handover::SessionRecord &r : state.sessions) {
        QString error;
        Session *s = Session::restore(r, this, &error);
        if (!s) {
            if (problems)
                problems->append(error);
            Handover::FdEntry bare{r.dying ? QString() : r.id, r.pty.masterFd,
                                   r.pty.leaderExited ? -1 : r.pty.pidfd, r.pty.pid};
            s = Session::adoptBare(bare, r.capacity > 0 ? r.capacity : m_limits.bufferCapacity, this, &error);
            if (!s) {
                if (problems)
                    problems->append(error);
                abandon(r.pty);
                continue;
            }
        }
        adopted += enlist(s, r.dying) ? 1 : 0;
    }
    rescheduleExpiry();
    qCInfo(lcRegistry) << "adopted" << adopted << "sessions";
    return adopted;
}

int SessionRegistry::adoptBare(const QList<Handover::FdEntry> &entries, QStringList *problems)
{
    int adopted = 0;
    for (const Handover::FdEntry &e : entries) {
        QString error;
        Session *s = Session::adoptBare(e, m_limits.bufferCapacity, this, &error);
        if (!s) {
            if (problems)
                problems->append(error);
            PtyHandover pty;
            pty.pid = e.pid;
            pty.masterFd = e.masterFd;
            pty.pidfd = e.pidfd;
            abandon(pty);
            continue;
        }
        adopted += enlist(s, e.id.isEmpty()) ? 1 : 0;
    }
    rescheduleExpiry();
    qCInfo(lcRegistry) << "adopted" << adopted << "sessions without their state";
    return adopted;
}

} // namespace Tether
