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
        QTest::newRow("window ends at start + window: the summary, then a new window")
            << Script{at(0, a), at(1999, a), at(2000, a)} << qint64(2000)
            << QStringList{a, a + QStringLiteral(" (repeated 1 time in 2 s)"), a};
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
        QCOMPARE(limiter.msUntilNextSummary(), qint64(-1));
    }
};

QTEST_GUILESS_MAIN(TestRepeatLimiter)
#include "tst_repeatlimiter.moc"
