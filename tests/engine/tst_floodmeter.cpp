// SPDX-License-Identifier: GPL-2.0-or-later
// FloodMeter: when the server-side screen pauses for a flood and when it
// resumes (issue 9). Pure logic, fed scripted events: output reads with
// their monotonic time and the process's CPU time, and the screen's parses
// with their CPU cost, on the output path (the read waited for them) or not.
#include "floodmeter.h"

#include <QTest>

using Tether::FloodMeter;

class TestFloodMeter : public QObject
{
    Q_OBJECT

    /// Runs `script` and returns the changes it made, "S<i>" (a flood
    /// started at event i) and "E<i>" (ended), space-separated. Events,
    /// separated by ';':
    ///  - "o T B C": B bytes read at T ms; the process's CPU time then is C
    ///    ms (passed only when the window is due, as Session does);
    ///  - "r N B": the screen parsed B bytes on the output path in N ms of
    ///    CPU (fractions allowed);
    ///  - "s N B": the same off the output path (a timer slice);
    ///  - "c": the screen caught up with the end of the ring;
    ///  - "x K T DT DC B N": K rounds, every DT ms from T ms: a read of B
    ///    bytes (the process's CPU at DC ms a round), then, when N > 0,
    ///    its parse on the output path in N ms of CPU (two events).
    static QString run(FloodMeter &m, const QString &script)
    {
        QStringList changes;
        int index = 0;
        const auto note = [&](FloodMeter::Change c) {
            if (c == FloodMeter::Change::Started)
                changes << QStringLiteral("S%1").arg(index);
            else if (c == FloodMeter::Change::Ended)
                changes << QStringLiteral("E%1").arg(index);
            ++index;
        };
        const auto output = [&](double t, qint64 bytes, double cpuMs) {
            const qint64 ms = qint64(t);
            const qint64 cpu = m.windowDue(ms) ? qint64(cpuMs * 1e6) : -1;
            note(m.output(ms, bytes, cpu));
        };
        for (const QString &event : script.split(QLatin1Char(';'), Qt::SkipEmptyParts)) {
            const QStringList f = event.simplified().split(QLatin1Char(' '));
            if (f.first() == QLatin1String("o")) {
                output(f.at(1).toDouble(), f.at(2).toLongLong(), f.at(3).toDouble());
            } else if (f.first() == QLatin1String("r") || f.first() == QLatin1String("s")) {
                note(m.parsed(qint64(f.at(1).toDouble() * 1e6), f.at(2).toLongLong(), f.first() == QLatin1String("r")));
            } else if (f.first() == QLatin1String("c")) {
                m.caughtUp();
            } else if (f.first() == QLatin1String("x")) {
                const double n = f.at(6).toDouble();
                for (int k = 0; k < f.at(1).toInt(); ++k) {
                    output(f.at(2).toDouble() + k * f.at(3).toDouble(), f.at(5).toLongLong(), k * f.at(4).toDouble());
                    if (n > 0)
                        note(m.parsed(qint64(n * 1e6), f.at(5).toLongLong(), true));
                }
            } else {
                qFatal("bad event %s", qPrintable(event));
            }
        }
        return changes.join(QLatin1Char(' '));
    }

private Q_SLOTS:
    void decisions_data()
    {
        QTest::addColumn<QString>("script");
        QTest::addColumn<QString>("changes");
        QTest::addColumn<bool>("flooding");

        // The rule this replaced: 5 ms of parse in a 100 ms window that was
        // half the process's CPU was a flood. A TUI burst on a slow CPU
        // (issue 9: fidelity rows wide-redraw, progress-cr under ASan).
        QTest::newRow("5 ms of parse in a window is no flood")
            << "o 1000 30000 0; r 6 30000; o 1050 30000 8; o 1100 1000 12; o 1210 100 13" << "" << false;
        // A burst that holds the output up for most of the budget (140 ms
        // of 150), over two windows, at 90 % of the process's CPU.
        QTest::newRow("burst below the budget")
            << "o 1000 65536 0; r 70 65536; o 1080 65536 78; r 70 65536; o 1160 1000 156" << "" << false;
        // The same burst, longer: the budget runs out within the third
        // rescue (refilled only by 25 % of the first window's CPU).
        QTest::newRow("burst beyond the budget")
            << "o 1000 65536 0; r 70 65536; o 1080 65536 78; r 70 65536; o 1160 65536 156; r 70 65536"
            << "S5" << true;
        // Output sustained faster than the screen parses, slowed to its
        // speed (far below kFloodBytes): the screen is on the output path
        // nearly all the time (9.5 ms of each 10): the budget, refilled by
        // 25 ms a window, empties in the 19th round (its parse: event 37).
        QTest::newRow("sustained rescue floods")
            << "x 40 1000 10 10 8192 9.5" << "S37" << true;
        // The screen keeping up with its timer slices takes a core and holds
        // nothing up: never a flood, however long.
        QTest::newRow("slices taking a whole core")
            << "x 30 1000 100 100 20000 0; s 2900 200000; o 4000 10 3000" << "" << false;
        // The budget refills at 25 % of the process's CPU: rescue taking
        // a fifth of the process's CPU does not empty it (200 KB: below
        // the rescue bytes).
        QTest::newRow("rescue within the sustained share")
            << "x 20 1000 50 50 10000 10" << "" << false;
        // A pause of a window or more refills it: bursts apart are bursts.
        QTest::newRow("a pause refills the budget")
            << "o 1000 65536 0; r 140 65536; o 1300 65536 141; r 140 65536; o 1600 10 282" << "" << false;
        QTest::newRow("no pause: the second burst floods")
            << "o 1000 65536 0; r 140 65536; o 1150 65536 141; r 140 65536" << "S3" << true;
        // Rescue bytes: 256 KiB parsed on the output path without the
        // screen catching up is a flood however cheap, here at 0.1 ms a
        // read: on a loaded machine a rescue takes long in wall time, and
        // the gaps it makes between reads refill the budget (tst_handover
        // under CPU hogs). 32 rounds of 8 KiB: the 32nd parse, event 63.
        QTest::newRow("rescue bytes without catching up")
            << "x 40 1000 10 10 8192 0.1" << "S63" << true;
        // Gaps of two windows between the reads (a rescue that long in wall
        // time, under load) refill the budget, not the rescue bytes; the
        // flood then ends at the next read after such a gap.
        QTest::newRow("gaps between rescues refill no rescue bytes")
            << "x 33 1000 250 10 8192 0.1" << "S63 E64" << false;
        // Catching up (the burst ended) starts the count again.
        QTest::newRow("catching up between bursts")
            << "x 20 1000 10 10 8192 0.1; c; x 20 1300 10 10 8192 0.1" << "" << false;
        // A flood started mid-window by rescue is not ended by that window,
        // whose bytes came at the screen's pace (they are far below what it
        // parses in 25 ms); the first window wholly in the flood decides:
        // here `yes` unpaced, 300 KiB in it, so the flood goes on ...
        QTest::newRow("a paced window does not end the flood")
            << "s 1 4096; x 32 1000 4 2 8192 0.1; o 1200 100000 70; o 1250 200000 80; o 1300 100 90"
            << "S64" << true;
        // ... and a quiet one ends it.
        QTest::newRow("the next window does")
            << "s 1 4096; x 32 1000 4 2 8192 0.1; o 1200 100 70; o 1300 100 90"
            << "S64 E66" << false;
        // The bytes arm: kFloodBytes in a window, whatever the CPU.
        QTest::newRow("bytes in a window")
            << "o 1000 131072 0; o 1050 131072 1" << "S1" << true;
        QTest::newRow("the same bytes over two windows")
            << "o 1000 131072 0; o 1100 131071 1; o 1150 1 2" << "" << false;
        // A flood ends with a window with no output (the flood timer's
        // check finds the last window empty) ...
        QTest::newRow("ends after a quiet window")
            << "o 1000 262144 0; o 1100 0 5; o 1200 0 6" << "S0 E2" << false;
        // ... or after a pause (the next read comes two windows later) ...
        QTest::newRow("ends at a read after a pause")
            << "o 1000 262144 0; o 1250 100 5" << "S0 E1" << false;
        // ... or with a window whose output the screen parses in 25 ms, at
        // its last speed (a moving average from 1000 bytes per ms: after a
        // parse of 4096 bytes in 1 ms, 1,774; 44,350 bytes in 25 ms).
        QTest::newRow("ends when the output is parsable")
            << "s 1 4096; o 1000 262144 0; o 1100 40000 10; o 1200 100 20" << "S1 E3" << false;
        QTest::newRow("goes on while it is not")
            << "s 1 4096; o 1000 262144 0; o 1100 50000 10; o 1200 100 20" << "S1" << true;
        // A parse during a flood (the session makes none) starts no second
        // one.
        QTest::newRow("a parse during a flood")
            << "o 1000 262144 0; r 500 65536" << "S0" << true;
    }

    void decisions()
    {
        QFETCH(QString, script);
        QFETCH(QString, changes);
        QFETCH(bool, flooding);
        FloodMeter m;
        QCOMPARE(run(m, script), changes);
        QCOMPARE(m.flooding(), flooding);
        QVERIFY(m.budgetNs() >= 0 && m.budgetNs() <= FloodMeter::kBurstNs);
    }

    void processCpuOnlyWhenAWindowEnds()
    {
        // The session reads the process's CPU clock only when windowDue():
        // once per window while output flows.
        FloodMeter m;
        QVERIFY(m.windowDue(1000)); // the first read starts a window
        m.output(1000, 10, 0);
        QVERIFY(!m.windowDue(1000));
        QVERIFY(!m.windowDue(1099));
        QVERIFY(m.windowDue(1100));
    }

    void resetAfterAFlood()
    {
        FloodMeter m;
        QCOMPARE(m.output(1000, FloodMeter::kFloodBytes, 0), FloodMeter::Change::Started);
        m.parsed(FloodMeter::kBurstNs, 4096, false);
        m.reset();
        QVERIFY(!m.flooding());
        QCOMPARE(m.budgetNs(), FloodMeter::kBurstNs);
        QCOMPARE(m.parseBytesPerMs(), FloodMeter().parseBytesPerMs());
    }
};

QTEST_GUILESS_MAIN(TestFloodMeter)
#include "tst_floodmeter.moc"
