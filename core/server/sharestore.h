// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include "handover.h"

#include <QByteArray>
#include <QDateTime>
#include <QHash>
#include <QList>
#include <QObject>
#include <QString>
#include <QStringList>

namespace Tether {

/**
 * The read-only links ("shares") of a server (docs/protocol.md, "Read-only
 * links"): each is a token that lets whoever holds it watch ONE session and
 * do nothing else. This class only keeps the tokens and answers "which
 * session does this token watch"; what a token grants is Server's business.
 *
 * Tokens are made like the access key (generateAccessKey: 256 bits from the
 * system CSPRNG, base64url) and looked up in constant time, as the key is
 * compared (constantTimeEquals against every live token, no early exit), so
 * timing 401 answers tells nothing about a token.
 *
 * A share ends when it is revoked (revoke, revokeSession, revokeAll: the
 * `revoked` signal names the tokens, so open viewers can be closed), or when
 * its session leaves the list (sessionEnded; no signal: the session closes
 * its viewers itself). The last kMaxRemembered ended tokens are remembered
 * by their SHA-256 only, so that a later use of a dead link can be told why
 * (whyEnded) without keeping the secret.
 *
 * In memory only: shares are handed over across a restart in place
 * (records, adopt) and never written to disk, since a normal restart ends
 * every session and a share cannot outlive its session.
 */
class ShareStore : public QObject
{
    Q_OBJECT
public:
    /// Live shares per session at most: bounds memory and the constant-time
    /// lookup (a script that shares in a loop meets 409).
    static constexpr int kMaxPerSession = 32;
    /// Ended tokens whose ending is remembered (oldest forgotten first).
    static constexpr int kMaxRemembered = 1024;

    struct Share {
        QString token;
        QString sessionId;
        QDateTime created; ///< UTC
    };
    /// Why a token no longer works.
    enum class Ended { Unknown, Revoked, SessionEnded };

    explicit ShareStore(QObject *parent = nullptr);

    /// A new share of `sessionId` (which the caller checked exists). False
    /// when the session already has kMaxPerSession shares.
    bool create(const QString &sessionId, Share *out);
    /// Every live share, oldest first.
    QList<Share> list() const { return m_shares; }
    /// The live share whose token is `token`, compared in constant time
    /// against every live token. False when none.
    bool find(const QByteArray &token, Share *out) const;
    /// Why `token` is not (any more) a live share: Unknown when it never was
    /// one, or was forgotten.
    Ended whyEnded(const QByteArray &token) const;

    /// Revokes one share; false when no live share has that token.
    bool revoke(const QString &token);
    /// Revokes every share of `sessionId`; returns how many.
    int revokeSession(const QString &sessionId);
    /// Revokes every share (the access key was rotated).
    int revokeAll();
    /// `sessionId` left the list: its shares end (no `revoked` signal).
    void sessionEnded(const QString &sessionId);

    /// The shares of `sessionId`, for the restart-in-place state.
    QList<Handover::ShareRecord> records(const QString &sessionId) const;
    /// Takes the handed-over shares of `sessionId` back (a restart in
    /// place). Malformed tokens are skipped, and so are shares beyond
    /// kMaxPerSession.
    void adopt(const QString &sessionId, const QList<Handover::ShareRecord> &records);

Q_SIGNALS:
    /// These tokens were revoked: close the viewers that used them.
    void revoked(const QStringList &tokens);
    /// The shares of `sessionId` changed (one made, revoked, ended or
    /// adopted): KeeperLink hands them to the session keeper again.
    void sharesChanged(const QString &sessionId);

private:
    int countFor(const QString &sessionId) const;
    /// Removes the shares `which` selects, remembering why; returns their tokens.
    template<typename Pred>
    QStringList removeIf(Pred which, Ended why);
    void remember(const QString &token, Ended why);

    QList<Share> m_shares;
    QHash<QByteArray, Ended> m_ended; ///< SHA-256 of an ended token → why
    QList<QByteArray> m_endedOrder;   ///< the same keys, oldest first
};

} // namespace Tether
