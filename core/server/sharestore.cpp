// SPDX-License-Identifier: GPL-2.0-or-later
#include "sharestore.h"
#include "accesskey.h"

#include <QCryptographicHash>

namespace Tether {

namespace {
QByteArray digest(const QByteArray &token)
{
    return QCryptographicHash::hash(token, QCryptographicHash::Sha256);
}
} // namespace

ShareStore::ShareStore(QObject *parent)
    : QObject(parent)
{
}

int ShareStore::countFor(const QString &sessionId) const
{
    int n = 0;
    for (const Share &s : m_shares)
        n += s.sessionId == sessionId ? 1 : 0;
    return n;
}

bool ShareStore::create(const QString &sessionId, Share *out)
{
    if (countFor(sessionId) >= kMaxPerSession)
        return false;
    Share s;
    s.token = generateAccessKey();
    s.sessionId = sessionId;
    s.created = QDateTime::currentDateTimeUtc();
    m_shares.append(s);
    if (out)
        *out = s;
    Q_EMIT sharesChanged(sessionId);
    return true;
}

bool ShareStore::find(const QByteArray &token, Share *out) const
{
    // Every live token is compared, without an early exit, so the time
    // depends only on how many there are (accesskey.h, constantTimeEquals).
    int found = -1;
    for (int i = 0; i < m_shares.size(); ++i) {
        if (constantTimeEquals(token, m_shares.at(i).token.toLatin1()))
            found = i;
    }
    if (found < 0)
        return false;
    if (out)
        *out = m_shares.at(found);
    return true;
}

ShareStore::Ended ShareStore::whyEnded(const QByteArray &token) const
{
    // By digest: a lookup's timing can reveal nothing of the token itself.
    return m_ended.value(digest(token), Ended::Unknown);
}

void ShareStore::remember(const QString &token, Ended why)
{
    const QByteArray key = digest(token.toLatin1());
    if (!m_ended.contains(key))
        m_endedOrder.append(key);
    m_ended.insert(key, why);
    while (m_endedOrder.size() > kMaxRemembered)
        m_ended.remove(m_endedOrder.takeFirst());
}

template<typename Pred>
QStringList ShareStore::removeIf(Pred which, Ended why)
{
    QStringList tokens;
    QStringList sessions;
    for (int i = m_shares.size() - 1; i >= 0; --i) {
        if (which(m_shares.at(i))) {
            tokens.prepend(m_shares.at(i).token);
            if (!sessions.contains(m_shares.at(i).sessionId))
                sessions.append(m_shares.at(i).sessionId);
            remember(m_shares.at(i).token, why);
            m_shares.removeAt(i);
        }
    }
    for (const QString &id : std::as_const(sessions))
        Q_EMIT sharesChanged(id);
    return tokens;
}

bool ShareStore::revoke(const QString &token)
{
    Share s;
    if (!find(token.toLatin1(), &s))
        return false;
    const QStringList tokens = removeIf([&](const Share &x) { return x.token == s.token; }, Ended::Revoked);
    Q_EMIT revoked(tokens);
    return true;
}

int ShareStore::revokeSession(const QString &sessionId)
{
    const QStringList tokens = removeIf([&](const Share &x) { return x.sessionId == sessionId; }, Ended::Revoked);
    if (!tokens.isEmpty())
        Q_EMIT revoked(tokens);
    return int(tokens.size());
}

int ShareStore::revokeAll()
{
    const QStringList tokens = removeIf([](const Share &) { return true; }, Ended::Revoked);
    if (!tokens.isEmpty())
        Q_EMIT revoked(tokens);
    return int(tokens.size());
}

void ShareStore::sessionEnded(const QString &sessionId)
{
    removeIf([&](const Share &x) { return x.sessionId == sessionId; }, Ended::SessionEnded);
}

QList<Handover::ShareRecord> ShareStore::records(const QString &sessionId) const
{
    QList<Handover::ShareRecord> out;
    for (const Share &s : m_shares) {
        if (s.sessionId == sessionId)
            out.append({s.token, s.created.toMSecsSinceEpoch()});
    }
    return out;
}

void ShareStore::adopt(const QString &sessionId, const QList<Handover::ShareRecord> &records)
{
    for (const Handover::ShareRecord &r : records) {
        if (!isWellFormedAccessKey(r.token) || countFor(sessionId) >= kMaxPerSession || find(r.token.toLatin1(), nullptr))
            continue;
        m_shares.append({r.token, sessionId, QDateTime::fromMSecsSinceEpoch(r.createdMs, Qt::UTC)});
    }
    if (!records.isEmpty())
        Q_EMIT sharesChanged(sessionId);
}

} // namespace Tether
