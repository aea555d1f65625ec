// SPDX-License-Identifier: GPL-2.0-or-later
// ReplayInputGate, the one replay input gate of `tether attach` and the
// terminal window: the DSR fence, answers split between reads, typing during
// a replay, the fallbacks (no answer, no fence) and the drain when leaving.
#include "replayinputgate.h"

#include <QElapsedTimer>
#include <QSignalSpy>
#include <QTest>

using namespace Tether;

namespace {
/// Feeds `inputs` through the gate; returns what passes, concatenated.
QByteArray feed(ReplayInputGate &gate, const QByteArrayList &inputs)
{
    QByteArray sent;
    for (const QByteArray &in : inputs) {
        const ReplayInputGate::Verdict v = gate.filter(in.constData(), in.size());
        if (v.from < 0 || v.from + v.size > in.size())
            return "out of range";
        if (v.pass)
            sent += in.mid(v.from, v.size);
    }
    return sent;
}
} // namespace

class TestReplayInputGate : public QObject
{
    Q_OBJECT
private Q_SLOTS:
    void filter_data()
    {
        QTest::addColumn<bool>("replay");
        QTest::addColumn<bool>("fence");
        QTest::addColumn<QByteArrayList>("inputs");
        QTest::addColumn<QByteArray>("sent");
        QTest::addColumn<bool>("open");
        QTest::newRow("no replay: open, everything passes")
            << false << false << QByteArrayList{"\x1b[A", "ab"} << QByteArray("\x1b[Aab") << true;
        QTest::newRow("replay being written: answers dropped, typing passes")
            << true << false << QByteArrayList{"\x1b[5;1R", "ls", "\x1b[?1;2c"} << QByteArray("ls") << false;
        QTest::newRow("fence answered: the answers before it dropped, what follows passes")
            << true << true << QByteArrayList{"\x1b[3;4R\x1b[0nls"} << QByteArray("ls") << true;
        QTest::newRow("answer split between reads")
            << true << true << QByteArrayList{"\x1b[1;1R\x1b[", "0n", "x"} << QByteArray("x") << true;
        QTest::newRow("answer split after ESC")
            << true << true << QByteArrayList{"\x1b[?6c\x1b", "[0nyz"} << QByteArray("yz") << true;
        QTest::newRow("malfunction answer (3 n) opens too")
            << true << true << QByteArrayList{"\x1b[3n", "\x1b[B"} << QByteArray("\x1b[B") << true;
        QTest::newRow("before the answer: ESC input dropped, plain typing passes")
            << true << true << QByteArrayList{"\x1b[2;2R", "abc", "\x1b]11;rgb:0/0/0\x07"} << QByteArray("abc") << false;
        QTest::newRow("everything up to the answer in one read is dropped")
            << true << true << QByteArrayList{"ab\x1b[0ncd"} << QByteArray("cd") << true;
        QTest::newRow("an answer-like string without a fence does not open")
            << true << false << QByteArrayList{"\x1b[0n", "q"} << QByteArray("q") << false;
        QTest::newRow("a stray 0n without ESC is typing")
            << true << true << QByteArrayList{"[0n"} << QByteArray("[0n") << false;
    }

    void filter()
    {
        QFETCH(bool, replay);
        QFETCH(bool, fence);
        QFETCH(QByteArrayList, inputs);
        QFETCH(QByteArray, sent);
        QFETCH(bool, open);
        ReplayInputGate gate;
        QSignalSpy opened(&gate, &ReplayInputGate::opened);
        gate.begin(replay);
        QCOMPARE(gate.isOpen(), !replay);
        if (fence) {
            gate.fenceWritten();
            QVERIFY(gate.isFencePending());
        }
        QCOMPARE(feed(gate, inputs), sent);
        QCOMPARE(gate.isOpen(), open);
        QCOMPARE(opened.count(), (open && replay) ? 1 : 0);
    }

    void fenceOnlyAfterRendering()
    {
        // A fence is only a fence for a replay: no effect when open.
        ReplayInputGate gate;
        gate.begin(false);
        gate.fenceWritten();
        QVERIFY(gate.isOpen());
        QCOMPARE(feed(gate, {"\x1b[0n"}), QByteArray("\x1b[0n"));
    }

    void terminalThatNeverAnswers()
    {
        ReplayInputGate gate;
        QSignalSpy opened(&gate, &ReplayInputGate::opened);
        gate.begin(true);
        QElapsedTimer since;
        since.start();
        gate.fenceWritten();
        QVERIFY(!gate.isOpen());
        QTRY_VERIFY_WITH_TIMEOUT(gate.isOpen(), ReplayInputGate::kAnswerTimeoutMs + 20000);
        // Not before its timeout (a lower bound: load only makes it later;
        // a coarse QTimer may fire up to 5 % early).
        QVERIFY2(since.elapsed() >= ReplayInputGate::kAnswerTimeoutMs * 95 / 100, qPrintable(QString::number(since.elapsed())));
        QCOMPARE(opened.count(), 1);
        QCOMPARE(feed(gate, {"\x1b[A"}), QByteArray("\x1b[A"));
    }

    void settlesAfterTheSinkTookTheReplay()
    {
        // No fence possible (output not a terminal): open kSettleMs after
        // the sink has the replay's last byte, not before.
        ReplayInputGate gate;
        QSignalSpy opened(&gate, &ReplayInputGate::opened);
        gate.begin(true);
        gate.settleAfter(1000, 400);
        QCOMPARE(gate.state(), ReplayInputGate::State::Settling);
        QTest::qWait(ReplayInputGate::kSettleMs * 3);
        QVERIFY(!gate.isOpen());
        gate.rendered(999);
        QTest::qWait(ReplayInputGate::kSettleMs * 3);
        QVERIFY(!gate.isOpen());
        gate.rendered(1000);
        QVERIFY(!gate.isOpen()); // the terminal answers just after parsing
        QTRY_VERIFY(gate.isOpen());
        QCOMPARE(opened.count(), 1);
    }

    void closeGatesUntilTheNextAttach()
    {
        // `tether attach` continued after SIGTSTP: gated until the redraw's
        // fence, whatever the state was.
        ReplayInputGate gate;
        gate.begin(true);
        gate.fenceWritten();
        QCOMPARE(feed(gate, {"\x1b[1;1R\x1b["}), QByteArray());
        gate.close();
        QVERIFY(!gate.isOpen());
        QVERIFY(!gate.isFencePending());
        QCOMPARE(feed(gate, {"0n"}), QByteArray("0n")); // the old split answer is forgotten
        QVERIFY(!gate.isOpen());
        gate.begin(true);
        gate.fenceWritten();
        QCOMPARE(feed(gate, {"\x1b[0nok"}), QByteArray("ok"));
        QVERIFY(gate.isOpen());
        gate.close();
        gate.begin(false); // a redraw with nothing to replay
        QVERIFY(gate.isOpen());
    }

    void openStopsTheTimers()
    {
        ReplayInputGate gate;
        QSignalSpy opened(&gate, &ReplayInputGate::opened);
        gate.begin(true);
        gate.fenceWritten();
        gate.open(); // detached: nothing to protect
        QVERIFY(gate.isOpen());
        gate.begin(true);
        QTest::qWait(ReplayInputGate::kAnswerTimeoutMs + 200);
        QVERIFY(!gate.isOpen()); // the old fence's timer did not open this replay
        QCOMPARE(opened.count(), 0);
    }

    void drainSwallowsUntilTheAnswer()
    {
        ReplayInputGate gate;
        QSignalSpy opened(&gate, &ReplayInputGate::opened);
        gate.begin(true);
        gate.drain(5000); // the holder wrote a fresh DSR
        QCOMPARE(gate.state(), ReplayInputGate::State::Draining);
        QCOMPARE(feed(gate, {"plain", "\x1b[24;80R"}), QByteArray()); // everything dropped
        QCOMPARE(opened.count(), 0);
        QCOMPARE(feed(gate, {"\x1b[0n"}), QByteArray());
        QCOMPARE(opened.count(), 1);
        QVERIFY(gate.isOpen());
    }

    void drainKeepsAPendingFencesSplitAnswer()
    {
        // Leaving right after a replay: the fence's answer is on its way,
        // half of it already read. No second DSR: its answer would come
        // after we are gone, at the shell prompt.
        ReplayInputGate gate;
        QSignalSpy opened(&gate, &ReplayInputGate::opened);
        gate.begin(true);
        gate.fenceWritten();
        QCOMPARE(feed(gate, {"\x1b[?62c\x1b[0"}), QByteArray());
        gate.drain(5000);
        QCOMPARE(feed(gate, {"n"}), QByteArray());
        QCOMPARE(opened.count(), 1);
    }

    void drainTimesOut()
    {
        ReplayInputGate gate;
        QSignalSpy opened(&gate, &ReplayInputGate::opened);
        gate.begin(true);
        gate.drain(100);
        QCOMPARE(feed(gate, {"x"}), QByteArray());
        QTRY_COMPARE(opened.count(), 1);
        QVERIFY(gate.isOpen());
    }
};

QTEST_GUILESS_MAIN(TestReplayInputGate)
#include "tst_replayinputgate.moc"
