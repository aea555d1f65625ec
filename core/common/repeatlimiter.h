// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <QHash>
#include <QString>
#include <QStringList>

#include <functional>

class QLoggingCategory;

namespace Tether {

/**
 * Bounds how often one message is written, per episode: the first
 * occurrence of a message is let through, the rest are counted, and when
 * the window (2 s) that began with it ends, one line says how many there
 * were: "refused: Host not allowed (repeated 5,883 times in 2 s)". While
 * the message keeps coming, the episode goes on in windows of twice the
 * length each time (2 s, 4 s, 8 s, ... up to kMaxWindowMs, one hour), each
 * ending with its count, and nothing else is written: a sustained flood
 * writes about a dozen lines per message in its first hour and one an hour
 * after that. A window without an occurrence ends the episode silently; the
 * next occurrence is written again and starts a new one.
 *
 * Why: anyone who can reach the port, without the key, can make the server
 * warn (a request with a wrong Host, idle connections that get evicted, a
 * descriptor shortage on accept); one line each let a peer write the disk
 * full (issue 10: 742,920 attach cycles wrote 93 MB of log), and fixed 2 s
 * windows still let a sustained flood add a line a second per message
 * (3.8-5.3 lines a second, 20-35 MB a day; issue 29).
 *
 * Pure logic with an injectable clock (ms, monotonic; the default is
 * QDeadlineTimer's monotonic clock): the caller asks admit() per occurrence,
 * and collects takeSummaries() when msUntilNextSummary() says a window has
 * ended (logLimited() does both with a timer). Memory is bounded: at most
 * kMaxTracked messages are tracked per window; occurrences of further
 * messages are counted together and summarised as "N other messages not
 * logged in 2 s (too many kinds at once)". Messages are compared as whole strings: callers keep
 * peer-controlled text out of them.
 */
class RepeatLimiter
{
public:
    using Clock = std::function<qint64()>; ///< monotonic milliseconds
    static constexpr qint64 kDefaultWindowMs = 2000;
    /// The longest window of an episode (windows double up to it).
    static constexpr qint64 kMaxWindowMs = 3600 * 1000;
    static constexpr int kMaxTracked = 64;

    explicit RepeatLimiter(qint64 windowMs = kDefaultWindowMs, Clock clock = {});

    /// One occurrence of `message` now. True: write it now (the first of an
    /// episode). False: counted, and reported by takeSummaries() once the
    /// window it fell in has ended.
    bool admit(const QString &message);
    /// Summary lines of every window that has ended with repeats, oldest
    /// first: "MESSAGE (repeated N times in W s)", W the window's length; the
    /// episode goes on in a window twice as long. A window without repeats
    /// ends the episode silently, and it is forgotten.
    QStringList takeSummaries();
    /// Ends every window now, ended or not, and returns the summaries as
    /// takeSummaries() does: for a process that exits (nothing counted is
    /// left unsaid).
    QStringList takeAll();
    /// Milliseconds until the earliest open window ends (0 when one has
    /// ended already), -1 when no window is open.
    qint64 msUntilNextSummary() const;

private:
    struct Window {
        qint64 start = 0;
        qint64 length = 0;  ///< ms: m_windowMs, doubling per window of an episode
        qint64 repeats = 0;
        qint64 order = 0; ///< admission order, for a stable summary order
    };
    void expire(qint64 now, bool all = false);
    /// Ends `w` if it has ended by `now` (or `all`): its summary, made by
    /// `line`, to `ended`, and the episode's next window, or false (forget
    /// it) when the episode is over.
    bool advance(Window &w, qint64 now, bool all, const std::function<QString(qint64 repeats, qint64 length)> &line,
                 QList<QPair<qint64, QString>> *ended);
    QString summary(const QString &what, qint64 repeats, qint64 length) const;
    static QString windowText(qint64 length); ///< "2 s", "500 ms"

    qint64 m_windowMs;
    Clock m_clock;
    QHash<QString, Window> m_open;
    Window m_others;            ///< untracked messages while m_open is full
    bool m_othersOpen = false;
    qint64 m_nextOrder = 0;
    QStringList m_ended;        ///< summaries of windows ended, not yet taken
};

/// Writes `message` to `category` at `type` (QtDebugMsg, QtInfoMsg,
/// QtWarningMsg) through a process-wide RepeatLimiter per category and type
/// (window RepeatLimiter::kDefaultWindowMs): repeats within a window are
/// counted and summarised in one line when it ends (a timer on the event
/// loop). Nothing is counted while the category has that type disabled
/// (QT_LOGGING_RULES). Counts still open when the QCoreApplication is
/// destroyed are written then. Main thread only; without a QCoreApplication the
/// message is written at once, unlimited. Returns true when `message` was
/// written now, false when it was counted (or the category is disabled).
bool logLimited(const QLoggingCategory &category, QtMsgType type, const QString &message);

} // namespace Tether
