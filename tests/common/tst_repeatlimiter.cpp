// SPDX-License-Identifier: GPL-2.0-or-later
// RepeatLimiter: what is written, and when, for a sequence of occurrences on
// an injected clock (issue 10: a peer without the key could make the server
// write a line per request).
#include "repeatlimiter.h"

#include <QtTest>

using namespace Tether;

namespace {
/// One step of a script: at `at` ms, `message` occurs, or (empty message)
/// the summaries are collected, as the timer of logLimited() does.
struct Step {
    qint64 at;
    QString message;
};
using Script = QList<Step>;

Step at(qint64 ms, const QString &message = QString())
{
    return Step{ms, message};
}

/// Runs `script` the way logLimited() uses the limiter (summaries first,
/// then the occurrence) and returns every line written, in order; ends with
/// a collection long after the last step.
QStringList run(const Script &script, qint64 windowMs = 2000)
{
    qint64 now = 0;
    RepeatLimiter limiter(windowMs, [&now] { return now; });
    QStringList out;
    for (const Step &s : script) {
        now = s.at;
        out += limiter.takeSummaries();
        if (!s.message.isEmpty() && limiter.admit(s.message))
            out.append(s.message);
    }
    now += 100000;
    out += limiter.takeSummaries();
    return out;
}
} // namespace

Q_DECLARE_METATYPE(Script)

class TestRepeatLimiter : public QObject
{
    Q_OBJECT
private Q_SLOTS:
    void lines_data()
    {
        QTest::addColumn<Script>("script");
        QTest::addColumn<qint64>("windowMs");
        QTest::addColumn<QStringList>("lines");
        const QString a = QStringLiteral("refused: Host not allowed");
        const QString b = QStringLiteral("too many HTTP connections: dropping the oldest idle one");

        QTest::newRow("once: written, no summary") << Script{at(0, a)} << qint64(2000) << QStringList{a};
        QTest::newRow("repeats counted in one line")
            << Script{at(0, a), at(1, a), at(2, a), at(1999, a)} << qint64(2000)
            << QStringList{a, a + QStringLiteral(" (repeated 3 times in 2 s)")};
        QTest::newRow("one repeat: singular")
            << Script{at(0, a), at(5, a)} << qint64(2000) << QStringList{a, a + QStringLiteral(" (repeated 1 time in 2 s)")};
        QTest::newRow("window ends at start + window: the summary; the episode goes on in a 4 s window")
            << Script{at(0, a), at(1999, a), at(2000, a)} << qint64(2000)
            << QStringList{a, a + QStringLiteral(" (repeated 1 time in 2 s)"), a + QStringLiteral(" (repeated 1 time in 4 s)")};
        // Issue 29: fixed 2 s windows wrote the message and its count every
        // 2 s for as long as a flood went on (3.8-5.3 lines a second).
        QTest::newRow("an episode: windows double while it goes on, nothing else is written")
            << Script{at(0, a), at(1000, a), at(3000, a), at(3001, a), at(7000, a), at(13999, a)} << qint64(2000)
            << QStringList{a, a + QStringLiteral(" (repeated 1 time in 2 s)"), a + QStringLiteral(" (repeated 2 times in 4 s)"),
                           a + QStringLiteral(" (repeated 2 times in 8 s)")};
        QTest::newRow("a window without an occurrence ends the episode: the next one is written")
            << Script{at(0, a), at(1000, a), at(3000, a), at(6000), at(14000, a), at(14001, a)} << qint64(2000)
            << QStringList{a, a + QStringLiteral(" (repeated 1 time in 2 s)"), a + QStringLiteral(" (repeated 1 time in 4 s)"),
                           a, a + QStringLiteral(" (repeated 1 time in 2 s)")};
        QTest::newRow("a late collection: every window that ended, in turn")
            << Script{at(0, a), at(1, a), at(2500, a), at(20000), at(20001, a)} << qint64(2000)
            << QStringList{a, a + QStringLiteral(" (repeated 1 time in 2 s)"), a + QStringLiteral(" (repeated 1 time in 4 s)"), a};
        QTest::newRow("spaced out: every one written")
            << Script{at(0, a), at(2000, a), at(4500, a)} << qint64(2000) << QStringList{a, a, a};
        QTest::newRow("summary when collected, before a later message")
            << Script{at(0, a), at(10, a), at(2001), at(3000, b)} << qint64(2000)
            << QStringList{a, a + QStringLiteral(" (repeated 1 time in 2 s)"), b};
        QTest::newRow("messages counted apart, summaries in order of first occurrence")
            << Script{at(0, b), at(1, a), at(2, a), at(3, b), at(4, b)} << qint64(2000)
            << QStringList{b, a, b + QStringLiteral(" (repeated 2 times in 2 s)"),
                           a + QStringLiteral(" (repeated 1 time in 2 s)")};
        QTest::newRow("sub-second window") << Script{at(0, a), at(1, a)} << qint64(500)
                                           << QStringList{a, a + QStringLiteral(" (repeated 1 time in 500 ms)")};

        Script flood{at(0, a)};
        for (int i = 1; i <= 5883; ++i)
            flood.append(at(i * 2000 / 5884, a));
        QTest::newRow("a flood: thousands separated")
            << flood << qint64(2000) << QStringList{a, a + QStringLiteral(" (repeated 5,883 times in 2 s)")};

        // Memory is bounded: beyond kMaxTracked kinds, the rest is counted together.
        Script many;
        QStringList written;
        for (int i = 0; i < RepeatLimiter::kMaxTracked; ++i) {
            many.append(at(0, QStringLiteral("m%1").arg(i)));
            written.append(QStringLiteral("m%1").arg(i));
        }
        many.append(at(1, QStringLiteral("extra 1")));
        many.append(at(2, QStringLiteral("extra 2")));
        many.append(at(3, QStringLiteral("extra 1")));
        written.append(QStringLiteral("3 other messages not logged in 2 s (too many kinds at once)"));
        QTest::newRow("too many kinds") << many << qint64(2000) << written;
    }
    void lines()
    {
        QFETCH(Script, script);
        QFETCH(qint64, windowMs);
        QFETCH(QStringList, lines);
        QCOMPARE(run(script, windowMs), lines);
    }

    /// A day of 10 occurrences a second of each of 5 messages (a sustained
    /// flood without the key): a bounded number of lines, the counts adding
    /// up to every occurrence (issue 29: it was 2 lines per 2 s per message,
    /// 432,000 lines a day here).
    void aDayOfFloodWritesFewLines()
    {
        qint64 now = 0;
        RepeatLimiter limiter(2000, [&now] { return now; });
        QStringList out;
        const QStringList kinds{QStringLiteral("refused: Host not allowed"), QStringLiteral("refused: cross-origin request"),
                                QStringLiteral("refused: bad key"), QStringLiteral("evicted"), QStringLiteral("other")};
        qint64 occurrences = 0;
        for (now = 0; now < 24 * 3600 * 1000LL; now += 100) {
            out += limiter.takeSummaries();
            for (const QString &k : kinds) {
                ++occurrences;
                if (limiter.admit(k))
                    out.append(k);
            }
        }
        out += limiter.takeAll();
        qInfo("a day of 5 messages 10 times a second each: %d lines", int(out.size()));
        // Per message: the first line, 11 windows of 2 s .. 2048 s (about 68
        // minutes), then one an hour.
        QVERIFY2(out.size() <= kinds.size() * (1 + 11 + 24), qPrintable(QString::number(out.size())));
        qint64 counted = 0;
        const QRegularExpression repeated(QStringLiteral("\\(repeated ([0-9,]+) times? in "));
        for (const QString &line : std::as_const(out)) {
            const QRegularExpressionMatch m = repeated.match(line);
            counted += m.hasMatch() ? m.captured(1).remove(QLatin1Char(',')).toLongLong() : 1;
        }
        QCOMPARE(counted, occurrences);
        QVERIFY(out.contains(kinds.first() + QStringLiteral(" (repeated 36,000 times in 3600 s)")));
    }

    void takeAllEndsOpenWindows()
    {
        qint64 now = 0;
        RepeatLimiter limiter(2000, [&now] { return now; });
        QVERIFY(limiter.admit(QStringLiteral("x")));
        QVERIFY(!limiter.admit(QStringLiteral("x")));
        QVERIFY(limiter.admit(QStringLiteral("y"))); // no repeat: no summary
        now = 10;
        QCOMPARE(limiter.takeSummaries(), QStringList()); // the window is still open
        QCOMPARE(limiter.takeAll(), QStringList{QStringLiteral("x (repeated 1 time in 2 s)")});
        QCOMPARE(limiter.msUntilNextSummary(), qint64(-1));
        QVERIFY(limiter.admit(QStringLiteral("x"))); // a new window
    }

    void nextSummary()
    {
        qint64 now = 1000;
        RepeatLimiter limiter(2000, [&now] { return now; });
        QCOMPARE(limiter.msUntilNextSummary(), qint64(-1)); // nothing open
        QVERIFY(limiter.admit(QStringLiteral("x")));
        now = 1500;
        QVERIFY(limiter.admit(QStringLiteral("y")));
        QCOMPARE(limiter.msUntilNextSummary(), qint64(1500)); // x's window ends at 3000
        QVERIFY(!limiter.admit(QStringLiteral("x")));
        now = 3200;
        QCOMPARE(limiter.msUntilNextSummary(), qint64(0));
        QCOMPARE(limiter.takeSummaries(), QStringList{QStringLiteral("x (repeated 1 time in 2 s)")});
        QCOMPARE(limiter.msUntilNextSummary(), qint64(300)); // y's, at 3500
        now = 3500;
        QCOMPARE(limiter.takeSummaries(), QStringList()); // y was not repeated
        QCOMPARE(limiter.msUntilNextSummary(), qint64(3500)); // x's episode goes on: its 4 s window ends at 7000
        now = 7000;
        QCOMPARE(limiter.takeSummaries(), QStringList()); // nothing in it: the episode is over
        QCOMPARE(limiter.msUntilNextSummary(), qint64(-1));
    }
};

QTEST_GUILESS_MAIN(TestRepeatLimiter)
#include "tst_repeatlimiter.moc"
