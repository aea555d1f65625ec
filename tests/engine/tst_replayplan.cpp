// SPDX-License-Identifier: GPL-2.0-or-later
// planReplay(): the replay an attach gets, from the ring, the state at its
// start and the recorded margin resets alone. A table of streams, how much of
// each was dropped and what the viewer already has, against the replay rules
// of docs/protocol.md ("Replay rules", "Safe-boundary replay and the prelude").
#include "protocol.h"
#include "replayplan.h"
#include "ringbuffer.h"
#include "terminalstate.h"

#include <QTest>

#include <algorithm>
#include <limits>

using namespace Tether;

namespace {
using Offsets = QList<quint64>;
constexpr quint64 kNone = std::numeric_limits<quint64>::max() - 1; ///< no resume offset
constexpr quint64 kMax = std::numeric_limits<quint64>::max();      ///< what an unparsable one becomes
} // namespace

class TestReplayPlan : public QObject
{
    Q_OBJECT
private Q_SLOTS:
    void plan_data();
    void plan();
    void snapshot_data();
    void snapshot();
    void snapshotAtANewSize();
    void wholeScreenMarginsAtAnotherSize();
};

void TestReplayPlan::plan_data()
{
    // stream: every byte the session ever output. dropped: how many of them
    // the ring has evicted (its capacity is the rest). resume: the offset the
    // viewer has (kNone: none). resets: where a resize reset the margins.
    QTest::addColumn<QByteArray>("stream");
    QTest::addColumn<int>("dropped");
    QTest::addColumn<quint64>("resume");
    QTest::addColumn<Offsets>("resets");
    QTest::addColumn<QByteArray>("reason");
    QTest::addColumn<bool>("reset");
    QTest::addColumn<quint64>("replayFrom");
    QTest::addColumn<QByteArray>("prelude");
    QTest::addColumn<Offsets>("fixups");

    const auto after = [](const QByteArray &s, const char *what) {
        return quint64(s.indexOf(what) + qsizetype(qstrlen(what)));
    };

    // --- the empty ring ------------------------------------------------------
    QTest::newRow("empty ring, no resume") << QByteArray() << 0 << kNone << Offsets()
        << QByteArray("initial") << true << quint64(0) << QByteArray() << Offsets();
    QTest::newRow("empty ring, resume 0") << QByteArray() << 0 << quint64(0) << Offsets()
        << QByteArray("resume") << false << quint64(0) << QByteArray() << Offsets();
    QTest::newRow("empty ring, resume 1: ahead") << QByteArray() << 0 << quint64(1) << Offsets()
        << QByteArray("ahead") << true << quint64(0) << QByteArray() << Offsets();

    // --- nothing dropped: the viewer's reset is the stream's initial state ---
    {
        const QByteArray s("\x1b[?1049hvim\r\n\x1b[?25l");
        QTest::newRow("initial, nothing dropped: no prelude") << s << 0 << kNone << Offsets()
            << QByteArray("initial") << true << quint64(0) << QByteArray() << Offsets();
        QTest::newRow("ahead, nothing dropped") << s << 0 << quint64(s.size() + 1) << Offsets()
            << QByteArray("ahead") << true << quint64(0) << QByteArray() << Offsets();
        QTest::newRow("unparsable (largest offset): ahead") << s << 0 << kMax << Offsets()
            << QByteArray("ahead") << true << quint64(0) << QByteArray() << Offsets();
    }

    // --- resume: the missing bytes, no reset, no boundary search ---------------
    {
        const QByteArray s("hello\r\nworld");
        QTest::newRow("resume at the end: nothing") << s << 0 << quint64(s.size()) << Offsets()
            << QByteArray("resume") << false << quint64(s.size()) << QByteArray() << Offsets();
        QTest::newRow("resume inside the range") << s << 0 << quint64(2) << Offsets()
            << QByteArray("resume") << false << quint64(2) << QByteArray() << Offsets();
        QTest::newRow("resume at 0") << s << 0 << quint64(0) << Offsets()
            << QByteArray("resume") << false << quint64(0) << QByteArray() << Offsets();
        QTest::newRow("resume one past the end: ahead") << s << 0 << quint64(s.size() + 1) << Offsets()
            << QByteArray("ahead") << true << quint64(0) << QByteArray() << Offsets();
    }
    {
        // a0 b1 ESC2 [3 '3'4 '1'5 m6 x7
        const QByteArray s("ab\x1b[31mx");
        QTest::newRow("resume at the retained start inside a CSI: kept") << s << 3 << quint64(3) << Offsets()
            << QByteArray("resume") << false << quint64(3) << QByteArray() << Offsets();
        QTest::newRow("resume inside a CSI: kept") << s << 3 << quint64(5) << Offsets()
            << QByteArray("resume") << false << quint64(5) << QByteArray() << Offsets();
        QTest::newRow("resume before the retained start: rolled out, safe start") << s << 3 << quint64(2)
            << Offsets() << QByteArray("rolled_out") << true << quint64(7) << QByteArray() << Offsets();
        QTest::newRow("resume 0 after a rollover: rolled out") << s << 3 << quint64(0)
            << Offsets() << QByteArray("rolled_out") << true << quint64(7) << QByteArray() << Offsets();
        QTest::newRow("ahead after a rollover: safe start") << s << 3 << quint64(100)
            << Offsets() << QByteArray("ahead") << true << quint64(7) << QByteArray() << Offsets();
        QTest::newRow("unparsable after a rollover: safe start") << s << 3 << kMax
            << Offsets() << QByteArray("ahead") << true << quint64(7) << QByteArray() << Offsets();
    }

    // --- the safe boundary -------------------------------------------------------
    {
        const QByteArray s("0123456789\x1b[31mred text");
        QTest::newRow("start inside a CSI: after its final byte") << s << 12 << kNone << Offsets()
            << QByteArray("initial") << true << after(s, "\x1b[31m") << QByteArray() << Offsets();
        QTest::newRow("start on the CSI's ESC: already safe") << s << 10 << kNone << Offsets()
            << QByteArray("initial") << true << quint64(10) << QByteArray() << Offsets();
    }
    {
        const QByteArray s("abc\xe2\x82\xac" "def"); // "€" is E2 82 AC at 3..5
        QTest::newRow("start inside a UTF-8 character: after it") << s << 4 << kNone << Offsets()
            << QByteArray("initial") << true << quint64(6) << QByteArray() << Offsets();
        QTest::newRow("start on its last byte: after it") << s << 5 << kNone << Offsets()
            << QByteArray("initial") << true << quint64(6) << QByteArray() << Offsets();
    }
    {
        const QByteArray s("ab\x1b]0;title\x07rest");
        QTest::newRow("start inside an OSC title: after its BEL") << s << 5 << kNone << Offsets()
            << QByteArray("initial") << true << after(s, "\x07") << QByteArray() << Offsets();
    }
    {
        const QByteArray s = QByteArray("ab\x1bP") + QByteArray(1000, 'q') + "\x1b\\" + "after";
        QTest::newRow("start inside a DCS: after its ST") << s << 4 << kNone << Offsets()
            << QByteArray("initial") << true << after(s, "\x1b\\") << QByteArray() << Offsets();
    }
    {
        // Nothing of a string longer than the scan bound is replayed; the
        // prelude still restores the modes in force.
        const QByteArray s = QByteArray("\x1b[?1049h" "ab\x1bP")
            + QByteArray(qsizetype(kMaxReplayBoundaryScan) + 10, 'q');
        QTest::newRow("unterminated DCS beyond the scan bound: nothing replayed") << s << 12 << kNone
            << Offsets() << QByteArray("initial") << true << quint64(s.size())
            << QByteArray("\x1b[?1049h") << Offsets();
        const QByteArray ends = QByteArray("ab\x1bP") + QByteArray(qsizetype(kMaxReplayBoundaryScan) - 2, 'q')
            + "\x1b\\" "after";
        // Bytes scanned from offset 4: the q's, ESC, '\' as the bound-th byte.
        QTest::newRow("DCS ending on the scan bound's last byte") << ends << 4 << kNone
            << Offsets() << QByteArray("initial") << true << after(ends, "\x1b\\")
            << QByteArray() << Offsets();
        const QByteArray past = QByteArray("ab\x1bP") + QByteArray(qsizetype(kMaxReplayBoundaryScan) - 1, 'q')
            + "\x1b\\" "after";
        QTest::newRow("DCS ending one byte past the scan bound") << past << 4 << kNone
            << Offsets() << QByteArray("initial") << true << quint64(past.size())
            << QByteArray() << Offsets();
    }

    // --- whole lines on the normal screen ---------------------------------------
    {
        const QByteArray s("line one\r\nline two\r\nline three");
        QTest::newRow("mid-line start: after the next newline") << s << 3 << kNone << Offsets()
            << QByteArray("initial") << true << after(s, "\n") << QByteArray() << Offsets();
        QTest::newRow("start right after a newline: still skips to the next one") << s << 10 << kNone << Offsets()
            << QByteArray("initial") << true << after(s, "two\r\n") << QByteArray() << Offsets();
    }
    {
        const QByteArray s("xx\x1b[1mbold\r\nnext");
        QTest::newRow("inside a CSI, then the next line") << s << 3 << kNone << Offsets()
            << QByteArray("initial") << true << after(s, "\n") << QByteArray() << Offsets();
    }
    {
        const QByteArray s = QByteArray("a") + QByteArray(4095, 'x') + "\nnext";
        QTest::newRow("newline as the 4096th byte scanned: taken") << s << 1 << kNone << Offsets()
            << QByteArray("initial") << true << after(s, "\n") << QByteArray() << Offsets();
        const QByteArray far = QByteArray("a") + QByteArray(4096, 'x') + "\nnext";
        QTest::newRow("newline as the 4097th byte scanned: boundary kept") << far << 1 << kNone << Offsets()
            << QByteArray("initial") << true << quint64(1) << QByteArray() << Offsets();
    }
    {
        const QByteArray s("abc\r\n");
        QTest::newRow("newline as the last byte: boundary kept") << s << 1 << kNone << Offsets()
            << QByteArray("initial") << true << quint64(1) << QByteArray() << Offsets();
    }
    {
        const QByteArray s("ab\x1b]0;x\ny\x07tail\nnext");
        QTest::newRow("newline inside an OSC does not count") << s << 1 << kNone << Offsets()
            << QByteArray("initial") << true << after(s, "tail\n") << QByteArray() << Offsets();
    }
    {
        const QByteArray s("ab\x1b[?1049h\nscreen");
        QTest::newRow("newline after entering the alternate screen: boundary kept") << s << 1 << kNone
            << Offsets() << QByteArray("initial") << true << quint64(1) << QByteArray() << Offsets();
    }
    {
        const QByteArray s("\x1b[?1049htop row\r\nsecond row\r\n");
        QTest::newRow("alternate screen: no line skip") << s << 10 << kNone << Offsets()
            << QByteArray("initial") << true << quint64(10) << QByteArray("\x1b[?1049h") << Offsets();
        QTest::newRow("alternate screen, inside its CSI: after it") << s << 4 << kNone << Offsets()
            << QByteArray("initial") << true << quint64(8) << QByteArray("\x1b[?1049h") << Offsets();
    }

    // --- the prelude ------------------------------------------------------------
    {
        const QByteArray s("\x1b[?25l\x1b[?2004h\x1b[?1hprompt$ ls\r\nfile\r\n");
        QTest::newRow("modes before the start are restored") << s << 20 << kNone << Offsets()
            << QByteArray("initial") << true << after(s, "ls\r\n")
            << QByteArray("\x1b[?1h\x1b[?2004h\x1b[?25l") << Offsets();
    }
    {
        const QByteArray s("ab\x1b[?2004hcd\r\nnext");
        QTest::newRow("a mode set in the skipped part of the line is restored") << s << 1 << kNone
            << Offsets() << QByteArray("initial") << true << after(s, "\n")
            << QByteArray("\x1b[?2004h") << Offsets();
    }
    {
        // a0 b1 ESC2 [3 '3'4 ;5 '2'6 '0'7 r8 c9 d10 \r11 \n12 n13
        const QByteArray s("ab\x1b[3;20rcd\r\nnext");
        QTest::newRow("margins set in the skipped bytes: restored, cursor at their bottom") << s << 1
            << kNone << Offsets() << QByteArray("initial") << true << quint64(13)
            << QByteArray("\x1b[3;20r\x1b[20;1H") << Offsets();
        QTest::newRow("margins reset by a resize inside the skipped bytes: not restored") << s << 1
            << kNone << Offsets{10} << QByteArray("initial") << true << quint64(13)
            << QByteArray() << Offsets();
        QTest::newRow("a resize before the margins were set: they are restored") << s << 1
            << kNone << Offsets{2} << QByteArray("initial") << true << quint64(13)
            << QByteArray("\x1b[3;20r\x1b[20;1H") << Offsets();
    }
    {
        const QByteArray s("\x1b[3;20rab\r\nnext");
        QTest::newRow("margins in force at the retained start") << s << 8 << kNone << Offsets()
            << QByteArray("initial") << true << after(s, "\n") << QByteArray("\x1b[3;20r\x1b[20;1H")
            << Offsets();
        // The reset is in the evicted bytes: the tail state has it, no fixup.
        QTest::newRow("margins reset before the retained start") << s << 8 << kNone << Offsets{7}
            << QByteArray("initial") << true << after(s, "\n") << QByteArray() << Offsets();
    }

    // --- fixups -------------------------------------------------------------------
    {
        const QByteArray s("0123456789abcdef");
        QTest::newRow("fixups before the resume offset dropped, at and after it kept") << s << 0
            << quint64(5) << Offsets{2, 5, 9, 16} << QByteArray("resume") << false << quint64(5)
            << QByteArray() << Offsets{5, 9, 16};
        QTest::newRow("fixups beyond the end ignored") << s << 0 << quint64(0) << Offsets{3, 17}
            << QByteArray("resume") << false << quint64(0) << QByteArray() << Offsets{3};
        QTest::newRow("initial replay: every fixup in range") << s << 0 << kNone << Offsets{0, 4}
            << QByteArray("initial") << true << quint64(0) << QByteArray() << Offsets{0, 4};
        QTest::newRow("resume at the end: a fixup there is kept") << s << 0 << quint64(16) << Offsets{16}
            << QByteArray("resume") << false << quint64(16) << QByteArray() << Offsets{16};
    }
    {
        const QByteArray s("abc\r\nline\r\nmore");
        QTest::newRow("reset replay: fixups before the safe start dropped") << s << 1 << kNone
            << Offsets{2, 5, 8} << QByteArray("initial") << true << quint64(5) << QByteArray()
            << Offsets{5, 8};
        QTest::newRow("rolled out: fixups in the evicted bytes dropped") << s << 1 << quint64(0)
            << Offsets{0, 1, 8} << QByteArray("rolled_out") << true << quint64(5) << QByteArray()
            << Offsets{8};
    }
}

void TestReplayPlan::plan()
{
    QFETCH(QByteArray, stream);
    QFETCH(int, dropped);
    QFETCH(quint64, resume);
    QFETCH(Offsets, resets);
    QFETCH(QByteArray, reason);
    QFETCH(bool, reset);
    QFETCH(quint64, replayFrom);
    QFETCH(QByteArray, prelude);
    QFETCH(Offsets, fixups);

    // The ring as a session keeps it: the evicted bytes go through a
    // TerminalState (the tail), with the margin resets applied where they
    // were recorded. Appended in 5-byte pieces, so the ring wraps.
    RingBuffer ring(std::max<qsizetype>(1, stream.size() - dropped));
    TerminalState tail;
    quint64 tailAt = 0;
    ring.setEvictionHandler([&](const char *data, qsizetype size) {
        for (qsizetype i = 0; i < size; ++i) {
            tail.feed(data + i, 1);
            if (resets.contains(++tailAt))
                tail.marginsResetByResize();
        }
    });
    for (qsizetype off = 0; off < stream.size(); off += 5)
        ring.append(stream.constData() + off, std::min<qsizetype>(5, stream.size() - off));
    QCOMPARE(ring.startOffset(), quint64(dropped));
    QCOMPARE(ring.endOffset(), quint64(stream.size()));
    const quint32 tailModes = tail.modes();
    const bool tailSafe = tail.atSafeBoundary();

    const ReplayPlan plan = planReplay(ring, tail, resets,
                                       resume == kNone ? std::nullopt : std::optional<quint64>(resume));
    QCOMPARE(QByteArray(Protocol::replayReasonName(plan.reason)), reason);
    QCOMPARE(plan.reset, reset);
    QCOMPARE(plan.replayFrom, replayFrom);
    QCOMPARE(plan.offset, quint64(stream.size()));
    QCOMPARE(plan.replayBytes(), qsizetype(quint64(stream.size()) - replayFrom));
    QCOMPARE(plan.prelude, prelude);
    QCOMPARE(plan.fixups, fixups);

    // Pure: the inputs are as they were.
    QCOMPARE(tail.modes(), tailModes);
    QCOMPARE(tail.atSafeBoundary(), tailSafe);
    QCOMPARE(ring.startOffset(), quint64(dropped));
    // A reset replay of a truncated stream starts at a real safe boundary.
    if (reset && dropped > 0) {
        TerminalState real;
        real.feed(stream.constData(), qsizetype(replayFrom));
        QVERIFY(real.atSafeBoundary() || replayFrom == quint64(stream.size()));
    }
}

QTEST_GUILESS_MAIN(TestReplayPlan)

void TestReplayPlan::snapshot_data()
{
    // The session's screen offers a snapshot at `at` (its S). stream: as in
    // plan(); with the ring holding all but `dropped` bytes.
    QTest::addColumn<QByteArray>("stream");
    QTest::addColumn<int>("dropped");
    QTest::addColumn<quint64>("resume");
    QTest::addColumn<Offsets>("resets");
    QTest::addColumn<quint64>("at");
    QTest::addColumn<bool>("screenReplay");
    QTest::addColumn<quint64>("snapshotAt"); // kNone: no snapshot
    QTest::addColumn<quint64>("replayFrom");
    QTest::addColumn<QByteArray>("prelude");
    QTest::addColumn<Offsets>("fixups");
    // Offsets: ESC[?2004h is 0..7, a=8 b=9 \n=10 c=11 d=12 \n=13 e=14 f=15, end 16.
    const QByteArray s = QByteArrayLiteral("\x1b[?2004h" "ab\ncd\nef");
    const QByteArray paste = QByteArrayLiteral("\x1b[?2004h");
    QTest::newRow("nothing dropped: the raw replay is exact, no snapshot")
        << s << 0 << kNone << Offsets() << quint64(16) << false << kNone << quint64(0) << QByteArray() << Offsets();
    QTest::newRow("nothing dropped, replay=screen: the snapshot, then from S")
        << s << 0 << kNone << Offsets() << quint64(14) << true << quint64(14) << quint64(14) << QByteArray() << Offsets();
    QTest::newRow("dropped: the raw replay as before, the snapshot at S")
        << s << 9 << kNone << Offsets() << quint64(14) << false << quint64(14) << quint64(11) << paste << Offsets();
    QTest::newRow("dropped, S at the end")
        << s << 9 << kNone << Offsets() << quint64(16) << false << quint64(16) << quint64(11) << paste << Offsets();
    QTest::newRow("S before the safe line start: the replay starts at S, no prelude")
        << s << 9 << kNone << Offsets() << quint64(10) << false << quint64(10) << quint64(10) << QByteArray() << Offsets();
    QTest::newRow("a fixup at S is kept (the viewer writes it before the snapshot)")
        << s << 9 << kNone << Offsets{12, 14} << quint64(14) << false << quint64(14) << quint64(11) << paste
        << Offsets{12, 14};
    QTest::newRow("replay=screen: fixups before S are not replayed, one at S is")
        << s << 9 << kNone << Offsets{12, 14} << quint64(14) << true << quint64(14) << quint64(14) << QByteArray()
        << Offsets{14};
    QTest::newRow("a resume inside the ring: no snapshot, even with replay=screen")
        << s << 9 << quint64(12) << Offsets() << quint64(14) << true << kNone << quint64(12) << QByteArray() << Offsets();
    QTest::newRow("rolled out, replay=screen")
        << s << 9 << quint64(2) << Offsets() << quint64(14) << true << quint64(14) << quint64(14) << QByteArray() << Offsets();
    QTest::newRow("ahead, default: the snapshot at S")
        << s << 9 << kMax << Offsets() << quint64(16) << false << quint64(16) << quint64(11) << paste << Offsets();
    QTest::newRow("an offer below the ring's start is ignored")
        << s << 9 << kNone << Offsets() << quint64(5) << false << kNone << quint64(11) << paste << Offsets();
}

void TestReplayPlan::snapshot()
{
    QFETCH(QByteArray, stream);
    QFETCH(int, dropped);
    QFETCH(quint64, resume);
    QFETCH(Offsets, resets);
    QFETCH(quint64, at);
    QFETCH(bool, screenReplay);
    QFETCH(quint64, snapshotAt);
    QFETCH(quint64, replayFrom);
    QFETCH(QByteArray, prelude);
    QFETCH(Offsets, fixups);
    RingBuffer ring(std::max<qsizetype>(1, stream.size() - dropped));
    TerminalState tail;
    ring.setEvictionHandler([&](const char *data, qsizetype size) { tail.feed(data, size); });
    ring.append(stream.constData(), stream.size());
    QCOMPARE(ring.startOffset(), quint64(dropped));
    const ReplayPlan plan = planReplay(ring, tail, resets, resume == kNone ? std::nullopt : std::optional<quint64>(resume),
                                       SnapshotOffer{at, screenReplay});
    QCOMPARE(plan.snapshotAt.has_value(), snapshotAt != kNone);
    if (plan.snapshotAt)
        QCOMPARE(*plan.snapshotAt, snapshotAt);
    QCOMPARE(plan.screenReplay, screenReplay && snapshotAt != kNone);
    QCOMPARE(plan.replayFrom, replayFrom);
    QCOMPARE(plan.offset, quint64(stream.size()));
    QCOMPARE(plan.prelude, prelude);
    QCOMPARE(plan.fixups, fixups);
}

void TestReplayPlan::snapshotAtANewSize()
{
    // A control attach that resized the session (Session::attach) offers
    // its snapshot with `repaint`: the bytes were written for the old size,
    // so it goes in (in place, after the raw replay) even when nothing was
    // dropped; never into a resume.
    const QByteArray s = QByteArrayLiteral("\x1b[?2004h" "ab\ncd\nef");
    RingBuffer ring(1024);
    TerminalState tail;
    ring.append(s.constData(), s.size());
    const quint64 end = quint64(s.size());
    const ReplayPlan plain = planReplay(ring, tail, {}, std::nullopt, SnapshotOffer{end, false, false});
    QVERIFY(!plain.snapshotAt);
    const ReplayPlan repaint = planReplay(ring, tail, {}, std::nullopt, SnapshotOffer{end, false, true});
    QVERIFY(repaint.snapshotAt);
    QCOMPARE(*repaint.snapshotAt, end);
    QCOMPARE(repaint.replayFrom, quint64(0)); // the whole raw replay before it
    QVERIFY(repaint.prelude.isEmpty());
    QVERIFY(!repaint.screenReplay);
    QVERIFY(repaint.reset);
    const ReplayPlan ahead = planReplay(ring, tail, {}, end + 5, SnapshotOffer{end, false, true});
    QVERIFY(ahead.snapshotAt);
    const ReplayPlan resume = planReplay(ring, tail, {}, quint64(3), SnapshotOffer{end, false, true});
    QVERIFY(!resume.reset);
    QVERIFY(!resume.snapshotAt);
}

void TestReplayPlan::wholeScreenMarginsAtAnotherSize()
{
    // Issue 29: "CSI 1;24 r" was the whole screen at 24 rows; a viewer at
    // another size gets "CSI r" right after it (wholeScreenFixups), and a
    // prelude whose start is past it restores no margins.
    const QByteArray s = QByteArrayLiteral("ab\x1b[1;24r" "cd\nef\ngh\n");
    const quint64 after = quint64(s.indexOf('r') + 1);
    {
        RingBuffer ring(1024);
        TerminalState tail;
        ring.append(s.constData(), s.size());
        const ReplayPlan plan = planReplay(ring, tail, {}, std::nullopt, std::nullopt, {after});
        QCOMPARE(plan.replayFrom, quint64(0));
        QCOMPARE(plan.wholeScreenFixups, Offsets{after});
        QVERIFY(plan.fixups.isEmpty());
        // A resume past it: not replayed, no fixup.
        const ReplayPlan resume = planReplay(ring, tail, {}, after + 1, std::nullopt, {after});
        QVERIFY(resume.wholeScreenFixups.isEmpty());
        // A resume at it: the fixup comes first (the viewer may not have it).
        QCOMPARE(planReplay(ring, tail, {}, after, std::nullopt, {after}).wholeScreenFixups, Offsets{after});
    }
    {
        // Rolled over: the DECSTBM is retained, before the safe start (the
        // line it is on is skipped). Without the
        // offset the prelude restores the margins (and puts the cursor at
        // their bottom); with it, none.
        RingBuffer ring(qsizetype(s.size()) - 1);
        TerminalState tail;
        ring.setEvictionHandler([&](const char *data, qsizetype size) { tail.feed(data, size); });
        ring.append(s.constData(), s.size());
        const ReplayPlan kept = planReplay(ring, tail, {}, std::nullopt);
        QVERIFY2(kept.prelude.contains("\x1b[1;24r"), kept.prelude.constData());
        const ReplayPlan whole = planReplay(ring, tail, {}, std::nullopt, std::nullopt, {after});
        QVERIFY(whole.replayFrom > after);
        QVERIFY2(!whole.prelude.contains('r'), whole.prelude.constData());
        QVERIFY(whole.wholeScreenFixups.isEmpty());
    }
}

#include "tst_replayplan.moc"
