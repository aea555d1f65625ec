// SPDX-License-Identifier: GPL-2.0-or-later
#include "repeatlimiter.h"

#include <QCoreApplication>
#include <QDeadlineTimer>
#include <QLocale>
#include <QLoggingCategory>
#include <QPointer>
#include <QTimer>

#include <algorithm>
#include <memory>

namespace Tether {

RepeatLimiter::RepeatLimiter(qint64 windowMs, Clock clock)
    : m_windowMs(qMax<qint64>(1, windowMs))
    , m_clock(clock ? std::move(clock) : Clock([] {
        return QDeadlineTimer(0).deadline(); // now, in ms of the monotonic clock
    }))
{
}

bool RepeatLimiter::admit(const QString &message)
{
    const qint64 now = m_clock();
    expire(now);
    auto it = m_open.find(message);
    if (it != m_open.end()) {
        ++it->repeats;
        return false;
    }
    if (m_open.size() >= kMaxTracked) {
        if (!m_othersOpen) {
            m_others = Window{now, m_windowMs, 0, m_nextOrder++};
            m_othersOpen = true;
        }
        ++m_others.repeats;
        return false;
    }
    m_open.insert(message, Window{now, m_windowMs, 0, m_nextOrder++});
    return true;
}

QString RepeatLimiter::windowText(qint64 length)
{
    return length % 1000 == 0 ? QStringLiteral("%1 s").arg(length / 1000) : QStringLiteral("%1 ms").arg(length);
}

QString RepeatLimiter::summary(const QString &what, qint64 repeats, qint64 length) const
{
    // "5,883": counts from a flood are long.
    const QString count = QLocale(QLocale::English).toString(repeats);
    return QStringLiteral("%1 (repeated %2 %3 in %4)")
        .arg(what, count, repeats == 1 ? QStringLiteral("time") : QStringLiteral("times"), windowText(length));
}

bool RepeatLimiter::advance(Window &w, qint64 now, bool all,
                            const std::function<QString(qint64 repeats, qint64 length)> &line,
                            QList<QPair<qint64, QString>> *ended)
{
    // Every window that has ended by now, in turn (a collection may come
    // late): a counted one says so and the episode goes on in one twice as
    // long; an empty one ends the episode.
    while (all || now - w.start >= w.length) {
        if (w.repeats == 0)
            return false;
        ended->append(qMakePair(w.order, line(w.repeats, w.length)));
        if (all)
            return false;
        w.start += w.length;
        w.length = qMin(w.length * 2, qMax(kMaxWindowMs, m_windowMs));
        w.repeats = 0;
    }
    return true;
}

void RepeatLimiter::expire(qint64 now, bool all)
{
    QList<QPair<qint64, QString>> ended; // (order, line)
    for (auto it = m_open.begin(); it != m_open.end();) {
        const QString &what = it.key();
        const bool goesOn = advance(*it, now, all, [&](qint64 repeats, qint64 length) {
            return summary(what, repeats, length);
        }, &ended);
        it = goesOn ? std::next(it) : m_open.erase(it);
    }
    if (m_othersOpen) {
        m_othersOpen = advance(m_others, now, all, [](qint64 repeats, qint64 length) {
            const QString count = QLocale(QLocale::English).toString(repeats);
            return QStringLiteral("%1 other message%2 not logged in %3 (too many kinds at once)")
                .arg(count, repeats == 1 ? QString() : QStringLiteral("s"), windowText(length));
        }, &ended);
    }
    std::sort(ended.begin(), ended.end(),
              [](const QPair<qint64, QString> &a, const QPair<qint64, QString> &b) { return a.first < b.first; });
    for (const auto &e : std::as_const(ended))
        m_ended.append(e.second);
}

QStringList RepeatLimiter::takeSummaries()
{
    expire(m_clock());
    QStringList out;
    out.swap(m_ended);
    return out;
}

QStringList RepeatLimiter::takeAll()
{
    expire(m_clock(), true);
    QStringList out;
    out.swap(m_ended);
    return out;
}

qint64 RepeatLimiter::msUntilNextSummary() const
{
    if (!m_ended.isEmpty())
        return 0;
    qint64 earliest = -1; // the earliest end of an open window
    for (const Window &w : m_open)
        earliest = earliest < 0 ? w.start + w.length : qMin(earliest, w.start + w.length);
    if (m_othersOpen)
        earliest = earliest < 0 ? m_others.start + m_others.length : qMin(earliest, m_others.start + m_others.length);
    if (earliest < 0)
        return -1;
    return qMax<qint64>(0, earliest - m_clock());
}

// --- logLimited ------------------------------------------------------------------

namespace {

void write(const QLoggingCategory &category, QtMsgType type, const QString &text)
{
    QMessageLogger logger(nullptr, 0, nullptr, category.categoryName());
    switch (type) {
    case QtDebugMsg: logger.debug("%s", qUtf8Printable(text)); break;
    case QtInfoMsg: logger.info("%s", qUtf8Printable(text)); break;
    default: logger.warning("%s", qUtf8Printable(text)); break;
    }
}

/// The process-wide limiters of logLimited(), one per (category, type), and
/// the timer that writes their summaries when windows end.
class LimitedLog : public QObject
{
public:
    explicit LimitedLog(QObject *parent)
        : QObject(parent)
    {
        m_timer.setSingleShot(true);
        connect(&m_timer, &QTimer::timeout, this, [this] { flush(); });
    }
    ~LimitedLog() override
    {
        // The application ends: say what was counted and not written yet.
        for (const Entry &e : std::as_const(m_entries)) {
            const QStringList ended = e.limiter->takeAll();
            for (const QString &line : ended)
                write(*e.category, e.type, line);
        }
    }

    bool log(const QLoggingCategory &category, QtMsgType type, const QString &message)
    {
        Entry &e = entry(category, type);
        const QStringList ended = e.limiter->takeSummaries(); // before, to keep the order
        for (const QString &line : ended)
            write(category, type, line);
        const bool admitted = e.limiter->admit(message);
        if (admitted)
            write(category, type, message);
        schedule();
        return admitted;
    }

private:
    struct Entry {
        const QLoggingCategory *category;
        QtMsgType type;
        std::shared_ptr<RepeatLimiter> limiter;
    };

    Entry &entry(const QLoggingCategory &category, QtMsgType type)
    {
        for (Entry &e : m_entries) {
            if (e.category == &category && e.type == type)
                return e;
        }
        m_entries.append(Entry{&category, type, std::make_shared<RepeatLimiter>()});
        return m_entries.last();
    }

    void flush()
    {
        for (const Entry &e : std::as_const(m_entries)) {
            const QStringList ended = e.limiter->takeSummaries();
            for (const QString &line : ended)
                write(*e.category, e.type, line);
        }
        schedule();
    }

    void schedule()
    {
        qint64 next = -1;
        for (const Entry &e : std::as_const(m_entries)) {
            const qint64 ms = e.limiter->msUntilNextSummary();
            if (ms >= 0)
                next = next < 0 ? ms : qMin(next, ms);
        }
        if (next < 0) {
            m_timer.stop();
            return;
        }
        // +1: a window ends at start + window; firing at that very ms finds it open.
        const int ms = int(qMin<qint64>(next + 1, RepeatLimiter::kDefaultWindowMs + 1));
        if (!m_timer.isActive() || m_timer.remainingTime() > ms)
            m_timer.start(ms);
    }

    QList<Entry> m_entries;
    QTimer m_timer;
};

QPointer<LimitedLog> g_limitedLog;

} // namespace

bool logLimited(const QLoggingCategory &category, QtMsgType type, const QString &message)
{
    if (!category.isEnabled(type))
        return false;
    QCoreApplication *app = QCoreApplication::instance();
    if (!app) {
        write(category, type, message);
        return true;
    }
    if (!g_limitedLog)
        g_limitedLog = new LimitedLog(app); // deleted with the application
    return g_limitedLog->log(category, type, message);
}

} // namespace Tether
