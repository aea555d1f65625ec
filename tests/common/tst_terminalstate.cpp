// SPDX-License-Identifier: GPL-2.0-or-later
// TerminalState: safe replay boundaries, DEC private modes, restore
// sequences, titles; results independent of how the stream is split.
#include "inertruns.h"
#include "terminalstate.h"

#include <QRandomGenerator>
#include <QTest>

#include <atomic>
#include <cstdlib>

#include "alloccounter.h"

using Tether::InertRuns;
using Tether::TerminalState;

namespace {

TerminalState fed(const QByteArray &bytes)
{
    TerminalState s;
    s.feed(bytes);
    return s;
}

// Everything observable, for comparing two states.
QString summary(const TerminalState &s)
{
    return QStringLiteral("modes=%1 safe=%2 title=[%3] serial=%4 restore=%5 charsets=%6 tabs=%7 queries=%8 printed=%9")
        .arg(s.modes(), 0, 16)
        .arg(s.atSafeBoundary())
        .arg(s.title())
        .arg(s.titleSerial())
        .arg(QString::fromLatin1(s.restoreSequence().toHex()))
        .arg(QString::fromLatin1(s.charsetSequence().toHex()))
        .arg(s.tabStopsChanged())
        .arg(s.queriesSeen())
        .arg(s.lastPrintMayWrap());
}

// A stream with a bit of everything: modes, titles (BEL, ESC \, C1 ST),
// UTF-8 text of every length, DCS/APC strings, aborted sequences, SGR with
// sub-parameters, C1 controls encoded as UTF-8.
QByteArray corpus()
{
    QByteArray b;
    b += "plain text\r\n";
    b += "\x1b[?1049;2004h";
    b += "\x1b]0;h\xc3\xa9llo \xe2\x9c\x93 \xf0\x9f\x98\x80\x07";
    b += "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x8e\x89\n";
    b += "\x1b[38:2:255:0:0mred\x1b[0m";
    b += "\x1bP1$r0m\x1b\\";
    b += "\x1b[?1000h\x1b[?1006h\x1b[?25l";
    b += "\x1b]2;second\x1b\\";
    b += "\x1b[?1;1004h";
    b += "\x1b_apc payload\x1b\\";
    b += "\x1b[?1002\x18h";               // CAN aborts: no 1002
    b += "\x1b]2;aborted\x1a";             // SUB aborts: no title
    b += "\x1b(B\x1b)0\x1b" "7\x1b" "8";   // charsets, DECSC/DECRC
    b += "\xc2\x9b?2004l";                 // C1 CSI as UTF-8: resets 2004
    b += "\xc2\x9d" "2;c1 title\xc2\x9c"; // C1 OSC ... C1 ST
    b += "\x1b]52;c;aGVsbG8=\x07";         // clipboard: not a title
    b += "\x1b[?1049l\x1b[?47h";
    b += "tail \xe4\xb8\xad\xe6\x96\x87";
    return b;
}

} // namespace

class TestTerminalState : public QObject
{
    Q_OBJECT
private slots:
    void initialState();
    void splitAtEveryPosition();
    void randomSplitsAndCopies();
    void wholeRunsMatchBytewise();
    void safeBoundary_data();
    void safeBoundary();
    void safeBoundaryEveryPrefix();
    void modes_data();
    void modes();
    void restoreSequence_data();
    void restoreSequence();
    void titles();
    void overlongTitleIsCapped();
    void risResets();
    void decstr();
    void scrollMargins();
    void titleStackAndOriginMode();
    void cancelAborts();
    void malformedUtf8();
    void noAllocationPerByte();
    void saveRestoreAtEveryPosition();
    void restoreRefusesWhatSaveDidNotMake();
    void restoreReadsVersion1();
    void charsets_data();
    void charsets();
    void tabStopsChanged_data();
    void tabStopsChanged();
    void queriesSeen_data();
    void queriesSeen();
    void lastPrintMayWrap_data();
    void lastPrintMayWrap();
    void feedUntilEvent_data();
    void feedUntilEvent();
    void inertPrefix_data();
    void inertPrefix();
    void tailSkippingInertRunsMatches_data();
    void tailSkippingInertRunsMatches();
    void inertRunsAreBounded();
};

void TestTerminalState::initialState()
{
    TerminalState s;
    QVERIFY(s.atSafeBoundary());
    QCOMPARE(s.modes(), quint32(0));
    QVERIFY(s.restoreSequence().isEmpty());
    QVERIFY(s.title().isEmpty());
    QCOMPARE(s.titleSerial(), quint64(0));
    s.feed(nullptr, 0);
    s.feed("abc", -1);
    QVERIFY(s.atSafeBoundary());
}

void TestTerminalState::splitAtEveryPosition()
{
    const QByteArray all = corpus();
    const TerminalState whole = fed(all);
    // Sanity: the corpus really exercises the parser.
    QCOMPARE(whole.title(), QStringLiteral("c1 title"));
    QCOMPARE(whole.titleSerial(), quint64(3));
    QVERIFY(whole.hasMode(TerminalState::AltScreen));
    QVERIFY(!whole.hasMode(TerminalState::AltScreen1049));
    QVERIFY(!whole.hasMode(TerminalState::BracketedPaste));
    QVERIFY(!whole.hasMode(TerminalState::MouseButton));
    QVERIFY(whole.hasMode(TerminalState::MouseNormal));
    QVERIFY(whole.atSafeBoundary());

    for (int i = 0; i <= all.size(); ++i) {
        TerminalState s;
        s.feed(all.constData(), i);
        s.feed(all.constData() + i, all.size() - i);
        QCOMPARE(summary(s), summary(whole));
    }
    TerminalState bytewise;
    for (char c : all)
        bytewise.feed(&c, 1);
    QCOMPARE(summary(bytewise), summary(whole));
}

void TestTerminalState::randomSplitsAndCopies()
{
    // Many random chunkings, and a copy taken at a random point continuing
    // on its own (the session copies the state at the retained start).
    const QByteArray all = corpus() + corpus();
    const TerminalState whole = fed(all);
    QRandomGenerator rng(7);
    for (int round = 0; round < 300; ++round) {
        TerminalState s;
        TerminalState copy;
        const int copyAt = rng.bounded(all.size() + 1);
        bool copied = false;
        int pos = 0;
        while (pos < all.size()) {
            // Never past the end: the last chunk fed up to 10 bytes beyond the
            // corpus (ASan, build-asan: heap-buffer-overflow in feed()).
            int n = qMin(rng.bounded(1, 12), int(all.size()) - pos);
            if (!copied && pos + n > copyAt)
                n = copyAt - pos;
            s.feed(all.constData() + pos, n);
            pos += n;
            if (!copied && pos == copyAt) {
                copy = s;
                copied = true;
            }
        }
        if (!copied)
            copy = s;
        copy.feed(all.constData() + copyAt, all.size() - copyAt);
        QCOMPARE(summary(s), summary(whole));
        QCOMPARE(summary(copy), summary(whole));
    }
}

void TestTerminalState::wholeRunsMatchBytewise()
{
    // The ground state skips what changes nothing 16 bytes at a time (SSE2):
    // the byte that ends a skip may sit at any position of a block, and the
    // skipped run may hold controls but no printable character (where
    // lastPrintMayWrap() must stay). Fed whole (blocks), and byte by byte
    // (never a block), the state must be the same, to the last saved field.
    const QList<QByteArray> pieces = {
        "a", "the quick brown fox ", "\r\n", "\n", "\t", "\x07", "\x08", "\x7f", "\x18", "\x1a", "\x0e",
        "\x0f", "\x1b", "\x1b[", "\x1b[?7l", "\x1b[?7h", "\x1b[?2004h", "\x1b[H", "\x1b]0;t\x07", "\x1b(0",
        "\xc3\xa9", "\xe2\x82", "\xac", "\xc2\x9b", "\xff", "\x1bP", "\x1b\\", QByteArray(40, ' '),
        QByteArray(33, 'x') + "\r\n\r\n",
    };
    QRandomGenerator rng(11);
    for (int round = 0; round < 3000; ++round) {
        QByteArray all;
        const int n = rng.bounded(1, 24);
        for (int i = 0; i < n; ++i)
            all += pieces.at(rng.bounded(int(pieces.size())));
        TerminalState whole;
        whole.feed(all.constData(), all.size());
        TerminalState bytewise;
        for (char c : std::as_const(all))
            bytewise.feed(&c, 1);
        if (whole.save() != bytewise.save())
            QFAIL(qPrintable(QStringLiteral("differs for %1").arg(QString::fromLatin1(all.toHex()))));
        QCOMPARE(summary(whole), summary(bytewise));
    }
}

void TestTerminalState::safeBoundary_data()
{
    QTest::addColumn<QByteArray>("bytes");
    QTest::addColumn<bool>("safe");
    QTest::newRow("text") << QByteArray("hello") << true;
    QTest::newRow("ESC") << QByteArray("\x1b") << false;
    QTest::newRow("ESC intermediate") << QByteArray("\x1b(") << false;
    QTest::newRow("ESC ( B") << QByteArray("\x1b(B") << true;
    QTest::newRow("CSI entry") << QByteArray("\x1b[") << false;
    QTest::newRow("CSI param") << QByteArray("\x1b[?104") << false;
    QTest::newRow("CSI intermediate") << QByteArray("\x1b[!") << false;
    QTest::newRow("CSI ignore") << QByteArray("\x1b[1?2") << false;
    QTest::newRow("CSI done") << QByteArray("\x1b[?1049h") << true;
    QTest::newRow("CSI with C0 inside") << QByteArray("\x1b[3\n1") << false;
    QTest::newRow("CSI with C0 done") << QByteArray("\x1b[3\n1m") << true;
    QTest::newRow("OSC") << QByteArray("\x1b]0;title") << false;
    QTest::newRow("OSC BEL") << QByteArray("\x1b]0;title\x07") << true;
    QTest::newRow("OSC ESC") << QByteArray("\x1b]0;title\x1b") << false;
    QTest::newRow("OSC ST") << QByteArray("\x1b]0;title\x1b\\") << true;
    QTest::newRow("DCS") << QByteArray("\x1bP1$r") << false;
    QTest::newRow("DCS payload") << QByteArray("\x1bPq#0;2;0;0;0#1!10~") << false;
    QTest::newRow("DCS BEL does not end") << QByteArray("\x1bPabc\x07") << false;
    QTest::newRow("DCS ESC") << QByteArray("\x1bPabc\x1b") << false;
    QTest::newRow("DCS ST") << QByteArray("\x1bPabc\x1b\\") << true;
    QTest::newRow("SOS") << QByteArray("\x1bXsos") << false;
    QTest::newRow("PM") << QByteArray("\x1b^pm") << false;
    QTest::newRow("APC") << QByteArray("\x1b_apc") << false;
    QTest::newRow("APC ST") << QByteArray("\x1b_apc\x1b\\") << true;
    QTest::newRow("C1 CSI") << QByteArray("\xc2\x9b" "1") << false;
    QTest::newRow("C1 CSI done") << QByteArray("\xc2\x9b" "1m") << true;
    QTest::newRow("C1 DCS ... C1 ST") << QByteArray("\xc2\x90xyz\xc2\x9c") << true;
    QTest::newRow("2-byte lead") << QByteArray("a\xc3") << false;
    QTest::newRow("2-byte done") << QByteArray("a\xc3\xa9") << true;
    QTest::newRow("3-byte 1") << QByteArray("\xe2") << false;
    QTest::newRow("3-byte 2") << QByteArray("\xe2\x82") << false;
    QTest::newRow("3-byte done") << QByteArray("\xe2\x82\xac") << true;
    QTest::newRow("4-byte 1") << QByteArray("\xf0") << false;
    QTest::newRow("4-byte 2") << QByteArray("\xf0\x9f") << false;
    QTest::newRow("4-byte 3") << QByteArray("\xf0\x9f\x98") << false;
    QTest::newRow("4-byte done") << QByteArray("\xf0\x9f\x98\x80") << true;
    QTest::newRow("UTF-8 inside OSC") << QByteArray("\x1b]2;\xe2\x82\xac\x07\xe2") << false;
    QTest::newRow("CAN") << QByteArray("\x1b[?10\x18") << true;
    QTest::newRow("SUB in OSC") << QByteArray("\x1b]0;abc\x1a") << true;
    QTest::newRow("CAN in DCS") << QByteArray("\x1bPabc\x18") << true;
    QTest::newRow("non-ASCII aborts CSI") << QByteArray("\x1b[1\xc3\xa9") << true;
    QTest::newRow("non-ASCII inside CSI ignore") << QByteArray("\x1b[1?\xc3\xa9") << false;
}

void TestTerminalState::safeBoundary()
{
    QFETCH(QByteArray, bytes);
    QFETCH(bool, safe);
    QCOMPARE(fed(bytes).atSafeBoundary(), safe);
}

void TestTerminalState::safeBoundaryEveryPrefix()
{
    // Walk the corpus byte by byte and compare atSafeBoundary() with an
    // independent, deliberately naive classification of each prefix.
    const QByteArray text = "ab\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80z\x1b[1;31m\x1b]2;t\x07q";
    const bool expected[] = {
        true, true,                 // a b
        false, true,                // é
        false, false, true,         // €
        false, false, false, true,  // 😀
        true,                       // z
        false, false, false, false, false, false, true, // ESC [ 1 ; 3 1 m
        false, false, false, false, false, true,        // ESC ] 2 ; t BEL
        true,                       // q
    };
    QCOMPARE(int(sizeof(expected)), text.size());
    TerminalState s;
    for (int i = 0; i < text.size(); ++i) {
        s.feed(text.constData() + i, 1);
        QVERIFY2(s.atSafeBoundary() == expected[i], qPrintable(QStringLiteral("after byte %1").arg(i)));
    }
}

void TestTerminalState::modes_data()
{
    using T = TerminalState;
    QTest::addColumn<QByteArray>("bytes");
    QTest::addColumn<quint32>("modes");
    QTest::newRow("1049+2004 one sequence") << QByteArray("\x1b[?1049;2004h")
        << quint32(T::AltScreen | T::AltScreen1049 | T::BracketedPaste);
    QTest::newRow("then reset 2004") << QByteArray("\x1b[?1049;2004h\x1b[?2004l")
        << quint32(T::AltScreen | T::AltScreen1049);
    QTest::newRow("reset both in one") << QByteArray("\x1b[?1049;2004h\x1b[?2004;1049l") << quint32(0);
    QTest::newRow("47") << QByteArray("\x1b[?47h") << quint32(T::AltScreen);
    QTest::newRow("1047") << QByteArray("\x1b[?1047h") << quint32(T::AltScreen);
    QTest::newRow("1049 left by 47l") << QByteArray("\x1b[?1049h\x1b[?47l") << quint32(0);
    QTest::newRow("47 then 1049") << QByteArray("\x1b[?47h\x1b[?1049h")
        << quint32(T::AltScreen | T::AltScreen1049);
    QTest::newRow("cursor hidden") << QByteArray("\x1b[?25l") << quint32(T::CursorHidden);
    QTest::newRow("cursor shown again") << QByteArray("\x1b[?25l\x1b[?25h") << quint32(0);
    QTest::newRow("DECCKM") << QByteArray("\x1b[?1h") << quint32(T::AppCursorKeys);
    QTest::newRow("focus") << QByteArray("\x1b[?1004h") << quint32(T::FocusEvents);
    QTest::newRow("mouse x10") << QByteArray("\x1b[?9h") << quint32(T::MouseX10);
    QTest::newRow("mouse 1000+1006") << QByteArray("\x1b[?1000;1006h") << quint32(T::MouseNormal | T::MouseSgr);
    QTest::newRow("mouse tracking exclusive") << QByteArray("\x1b[?1000h\x1b[?1003h") << quint32(T::MouseAny);
    QTest::newRow("mouse reset any clears") << QByteArray("\x1b[?1002h\x1b[?1000l") << quint32(0);
    QTest::newRow("encoding exclusive") << QByteArray("\x1b[?1005h\x1b[?1015h") << quint32(T::MouseUrxvt);
    QTest::newRow("encoding reset other keeps") << QByteArray("\x1b[?1006h\x1b[?1015l") << quint32(T::MouseSgr);
    QTest::newRow("encoding reset") << QByteArray("\x1b[?1006h\x1b[?1006l") << quint32(0);
    QTest::newRow("all at once") << QByteArray("\x1b[?1;25;47;2004;9;1005;1004l\x1b[?1;2004;1002;1006;1004h")
        << quint32(T::AppCursorKeys | T::CursorHidden | T::BracketedPaste | T::MouseButton | T::MouseSgr
                   | T::FocusEvents);
    QTest::newRow("empty params ignored") << QByteArray("\x1b[?;;2004;h") << quint32(T::BracketedPaste);
    QTest::newRow("no ? is ANSI SM") << QByteArray("\x1b[2004h\x1b[1049h") << quint32(0);
    QTest::newRow("> marker is not DEC") << QByteArray("\x1b[>1h") << quint32(0);
    QTest::newRow("intermediate spoils") << QByteArray("\x1b[?2004$h") << quint32(0);
    QTest::newRow("DECRQM is not a set") << QByteArray("\x1b[?2004$p") << quint32(0);
    QTest::newRow("sub-param not a mode") << QByteArray("\x1b[?5:2004h") << quint32(0);
    QTest::newRow("huge param") << QByteArray("\x1b[?99999999999h\x1b[?1h") << quint32(T::AppCursorKeys);
    QTest::newRow("unknown mode") << QByteArray("\x1b[?12;7;1048h") << quint32(0);
    QTest::newRow("17 params") << QByteArray("\x1b[?0;0;0;0;0;0;0;0;0;0;0;0;0;0;0;1;2004h")
        << quint32(T::AppCursorKeys); // the 17th is beyond the kept 16
    QTest::newRow("C0 inside CSI") << QByteArray("\x1b[?20\r04h") << quint32(T::BracketedPaste);
    QTest::newRow("ESC restarts") << QByteArray("\x1b[?20\x1b[?1h04h") << quint32(T::AppCursorKeys);
    QTest::newRow("in OSC no effect") << QByteArray("\x1b]2;\x1b[?1h") << quint32(T::AppCursorKeys);
    QTest::newRow("in DCS no effect") << QByteArray("\x1bP[?1h\x1b\\") << quint32(0);
}

void TestTerminalState::modes()
{
    QFETCH(QByteArray, bytes);
    QFETCH(quint32, modes);
    QCOMPARE(fed(bytes).modes(), modes);
}

void TestTerminalState::restoreSequence_data()
{
    QTest::addColumn<QByteArray>("bytes");
    QTest::addColumn<QByteArray>("restore");
    QTest::newRow("default") << QByteArray("text\x1b[1m") << QByteArray();
    QTest::newRow("all reset again") << QByteArray("\x1b[?1049h\x1b[?25l\x1b[?1049l\x1b[?25h") << QByteArray();
    QTest::newRow("1049") << QByteArray("\x1b[?1049h") << QByteArray("\x1b[?1049h");
    QTest::newRow("1047") << QByteArray("\x1b[?1047h") << QByteArray("\x1b[?1047h");
    QTest::newRow("47") << QByteArray("\x1b[?47h") << QByteArray("\x1b[?47h");
    QTest::newRow("47 then 1047") << QByteArray("\x1b[?47h\x1b[?1047h") << QByteArray("\x1b[?47h");
    QTest::newRow("47 then 1049") << QByteArray("\x1b[?47h\x1b[?1049h") << QByteArray("\x1b[?1049h");
    QTest::newRow("hidden only") << QByteArray("\x1b[?25l") << QByteArray("\x1b[?25l");
    QTest::newRow("vim-like") << QByteArray("\x1b[?1049h\x1b[?1h\x1b=\x1b[?2004h\x1b[?25l\x1b[?1000;1006h")
        << QByteArray("\x1b[?1049h\x1b[?1h\x1b[?2004h\x1b[?1000h\x1b[?1006h\x1b=\x1b[?25l");
    // A program scrolling in rows 3..20 without autowrap, inserting, with
    // the application keypad (a first-time user's replay after rollover
    // put every line on one row without these).
    QTest::newRow("margins, insert, no wrap, keypad") << QByteArray("\x1b[3;20r\x1b[4h\x1b[?7l\x1b=text")
        << QByteArray("\x1b[?7l\x1b[4h\x1b=\x1b[3;20r\x1b[20;1H");
    QTest::newRow("top margin only") << QByteArray("\x1b[5r") << QByteArray("\x1b[5r");
    QTest::newRow("bottom margin only") << QByteArray("\x1b[;9r") << QByteArray("\x1b[;9r\x1b[9;1H");
    QTest::newRow("all undone") << QByteArray("\x1b[3;20r\x1b[4;20h\x1b[?7l\x1b=\x1b[r\x1b[4l\x1b[?7h\x1b>")
        << QByteArray();
    QTest::newRow("DECSTR undoes them") << QByteArray("\x1b[3;20r\x1b[4h\x1b[?7l\x1b=\x1b[?2004h\x1b[!p")
        << QByteArray("\x1b[?2004h");
    QTest::newRow("everything") << QByteArray("\x1b[?1004;1015;1003;2004;1;25l\x1b[?1004;1015;1003;2004;1;1049h")
        << QByteArray("\x1b[?1049h\x1b[?1h\x1b[?2004h\x1b[?1003h\x1b[?1015h\x1b[?1004h\x1b[?25l");
    QTest::newRow("x10 utf8") << QByteArray("\x1b[?9;1005h") << QByteArray("\x1b[?9h\x1b[?1005h");
    QTest::newRow("button") << QByteArray("\x1b[?1002h") << QByteArray("\x1b[?1002h");
}

void TestTerminalState::restoreSequence()
{
    QFETCH(QByteArray, bytes);
    QFETCH(QByteArray, restore);
    const TerminalState s = fed(bytes);
    QCOMPARE(s.restoreSequence(), restore);
    // Replaying the restore sequence into a fresh state reproduces the modes.
    QCOMPARE(fed(s.restoreSequence()).modes(), s.modes());
}

void TestTerminalState::titles()
{
    TerminalState s;
    s.feed(QByteArray("\x1b]0;first\x07"));
    QCOMPARE(s.title(), QStringLiteral("first"));
    QCOMPARE(s.titleSerial(), quint64(1));
    s.feed(QByteArray("\x1b]2;second\x1b\\"));
    QCOMPARE(s.title(), QStringLiteral("second"));
    QCOMPARE(s.titleSerial(), quint64(2));
    s.feed(QByteArray("\x1b]2;second\x07")); // same text still counts
    QCOMPARE(s.titleSerial(), quint64(3));
    s.feed(QByteArray("\x1b]1;icon only\x07\x1b]52;c;Zm9v\x07\x1b]8;;http://x\x1b\\\x1b]7;file:///\x07"));
    QCOMPARE(s.title(), QStringLiteral("second")); // OSC 1/52/8/7 are not titles
    QCOMPARE(s.titleSerial(), quint64(3));
    s.feed(QByteArray("\x1b]02;leading zero\x07"));
    QCOMPARE(s.title(), QStringLiteral("leading zero"));
    s.feed(QByteArray("\x1b];no number\x07\x1b]2x;bad\x07\x1b]22;pushed\x07"));
    QCOMPARE(s.title(), QStringLiteral("leading zero"));
    QCOMPARE(s.titleSerial(), quint64(4));
    // UTF-8, including 3- and 4-byte characters, decoded.
    s.feed(QByteArray("\x1b]2;h\xc3\xa9llo \xe2\x9c\x93 \xf0\x9f\x98\x80\x07"));
    QCOMPARE(s.title(), QString::fromUtf8("h\xc3\xa9llo \xe2\x9c\x93 \xf0\x9f\x98\x80"));
    QCOMPARE(s.titleSerial(), quint64(5));
    // Semicolons belong to the text; C0 other than BEL is dropped.
    s.feed(QByteArray("\x1b]0;a;b\tc\x07"));
    QCOMPARE(s.title(), QStringLiteral("a;bc"));
    // Empty title.
    s.feed(QByteArray("\x1b]2;\x07"));
    QCOMPARE(s.title(), QString());
    QCOMPARE(s.titleSerial(), quint64(7));
    // C1 ST (U+009C) terminates as well.
    s.feed(QByteArray("\x1b]2;c1\xc2\x9c"));
    QCOMPARE(s.title(), QStringLiteral("c1"));
    QCOMPARE(s.titleSerial(), quint64(8));
    QVERIFY(s.atSafeBoundary());
    // Unterminated: nothing yet.
    s.feed(QByteArray("\x1b]2;pending"));
    QCOMPARE(s.title(), QStringLiteral("c1"));
    QVERIFY(!s.atSafeBoundary());
    s.feed(QByteArray("\x07"));
    QCOMPARE(s.title(), QStringLiteral("pending"));
    // A control in the middle of a character: the partial character is dropped.
    s.feed(QByteArray("\x1b]2;ab\xe2\x82\x07"));
    QCOMPARE(s.title(), QStringLiteral("ab"));
    // ESC followed by something else ends the string too (Williams, xterm.js).
    s.feed(QByteArray("\x1b]2;cut\x1b[?1h"));
    QCOMPARE(s.title(), QStringLiteral("cut"));
    QVERIFY(s.hasMode(TerminalState::AppCursorKeys));
    QVERIFY(s.atSafeBoundary());
}

void TestTerminalState::overlongTitleIsCapped()
{
    const int max = TerminalState::kMaxTitle;
    {
        TerminalState s;
        QByteArray t(max + 5000, 'x');
        s.feed(QByteArray("\x1b]2;") + t + "\x07");
        QCOMPARE(s.title().size(), max);
        QCOMPARE(s.title(), QString(max, QLatin1Char('x')));
        QCOMPARE(s.titleSerial(), quint64(1));
        QVERIFY(s.atSafeBoundary());
        // The next title is not affected by the overflow.
        s.feed(QByteArray("\x1b]2;short\x07"));
        QCOMPARE(s.title(), QStringLiteral("short"));
    }
    {
        // The cap falls inside a 3-byte character: cut before it, no U+FFFD.
        TerminalState s;
        QByteArray t = QByteArray(max - 1, 'a') + "\xe2\x82\xac" + QByteArray(100, 'b');
        s.feed(QByteArray("\x1b]0;") + t + "\x1b\\");
        QCOMPARE(s.title(), QString(max - 1, QLatin1Char('a')));
        QCOMPARE(s.title().toUtf8().size(), max - 1);
    }
    {
        // Exactly kMaxTitle bytes of 4-byte characters are kept whole.
        TerminalState s;
        QByteArray t;
        while (t.size() < max)
            t += "\xf0\x9f\x98\x80";
        s.feed(QByteArray("\x1b]0;") + t + t + "\x07");
        QCOMPARE(s.title().toUtf8(), t);
    }
}

void TestTerminalState::risResets()
{
    TerminalState s;
    s.feed(QByteArray("\x1b[?1049;1;2004;1003;1006;1004h\x1b[?25l\x1b]2;kept\x07"));
    QVERIFY(!s.restoreSequence().isEmpty());
    s.feed(QByteArray("\x1b" "c"));
    QCOMPARE(s.modes(), quint32(0));
    QVERIFY(s.restoreSequence().isEmpty());
    QVERIFY(s.atSafeBoundary());
    QCOMPARE(s.title(), QStringLiteral("kept"));
    // After RIS the alt-screen flavour is forgotten too.
    s.feed(QByteArray("\x1b[?47h"));
    QCOMPARE(s.restoreSequence(), QByteArray("\x1b[?47h"));
    // ESC with an intermediate then 'c' is not RIS.
    s.feed(QByteArray("\x1b#c"));
    QVERIFY(s.hasMode(TerminalState::AltScreen));
    // RIS in the middle of an OSC: ESC ends the OSC, 'c' resets.
    s.feed(QByteArray("\x1b]2;x\x1b" "c"));
    QCOMPARE(s.modes(), quint32(0));
}

void TestTerminalState::decstr()
{
    TerminalState s;
    s.feed(QByteArray("\x1b[?1049;1;2004;1000;1006;1004h\x1b[?25l"));
    s.feed(QByteArray("\x1b[!p"));
    using T = TerminalState;
    QCOMPARE(s.modes(), quint32(T::AltScreen | T::AltScreen1049 | T::BracketedPaste | T::MouseNormal
                                | T::MouseSgr | T::FocusEvents));
    // CSI ? ! p and CSI ! q are not DECSTR.
    s.feed(QByteArray("\x1b[?1h\x1b[?25l\x1b[?!p\x1b[!q"));
    QVERIFY(s.hasMode(T::AppCursorKeys));
    QVERIFY(s.hasMode(T::CursorHidden));
}

void TestTerminalState::scrollMargins()
{
    TerminalState s;
    QVERIFY(!s.marginsSet());
    s.feed(QByteArray("\x1b[1;20r"));          // vim at 20 rows
    QVERIFY(s.marginsSet());
    s.marginsResetByResize();                  // the window grew: the terminal reset them
    QVERIFY(!s.marginsSet());
    // Split anywhere, still DECSTBM.
    for (const char c : QByteArray("\x1b[5;9r"))
        if (c)
            s.feed(&c, 1);
    QVERIFY(s.marginsSet());
    s.feed(QByteArray("\x1b[r"));               // full screen again
    QVERIFY(!s.marginsSet());
    s.feed(QByteArray("\x1b[2r"));
    QVERIFY(s.marginsSet());
    s.feed(QByteArray("\x1b[0;0r"));
    QVERIFY(!s.marginsSet());
    // Not DECSTBM: DEC private mode restore (CSI ? r), DECCARA (CSI $ r).
    s.feed(QByteArray("\x1b[?1;2r\x1b[1;1;2;2;1$r"));
    QVERIFY(!s.marginsSet());
    s.feed(QByteArray("\x1b[3;7r\x1b" "c"));  // RIS
    QVERIFY(!s.marginsSet());
    s.feed(QByteArray("\x1b[3;7r\x1b[!p"));   // DECSTR
    QVERIFY(!s.marginsSet());
    QCOMPARE(TerminalState::marginResetSequence(), QByteArray("\x1b" "7\x1b[r\x1b" "8"));
}

void TestTerminalState::titleStackAndOriginMode()
{
    TerminalState s;
    QCOMPARE(s.titleStackDepth(), 0);
    s.feed(QByteArray("\x1b[22;2t\x1b[22;1t")); // vim at start
    QCOMPARE(s.titleStackDepth(), 2);
    s.feed(QByteArray("\x1b[23;1t"));
    QCOMPARE(s.titleStackDepth(), 1);
    s.feed(QByteArray("\x1b[23;0t\x1b[23;0t"));  // more pops than pushes: 0
    QCOMPARE(s.titleStackDepth(), 0);
    for (int i = 0; i < 15; ++i)
        s.feed(QByteArray("\x1b[22;0t"));
    QCOMPARE(s.titleStackDepth(), TerminalState::kMaxTitleStack);
    s.feed(QByteArray("\x1b[8;24;80t\x1b[?22t"));  // other XTWINOPS, private: ignored
    QCOMPARE(s.titleStackDepth(), TerminalState::kMaxTitleStack);

    s.feed(QByteArray("\x1b[?6h"));
    QVERIFY(s.hasMode(TerminalState::OriginMode));
    QVERIFY(s.restoreSequence().isEmpty()); // not replayed: it would home the cursor
    s.feed(QByteArray("\x1b[!p"));
    QVERIFY(!s.hasMode(TerminalState::OriginMode));
}

void TestTerminalState::cancelAborts()
{
    TerminalState s;
    s.feed(QByteArray("\x1b[?1049\x18h"));
    QCOMPARE(s.modes(), quint32(0)); // the 'h' after CAN is printed text
    QVERIFY(s.atSafeBoundary());
    s.feed(QByteArray("\x1b[?2004\x1ah"));
    QCOMPARE(s.modes(), quint32(0));
    s.feed(QByteArray("\x1b]2;never\x18\x07"));
    QVERIFY(s.title().isEmpty());
    QCOMPARE(s.titleSerial(), quint64(0));
    s.feed(QByteArray("\x1bPdata\x18"));
    QVERIFY(s.atSafeBoundary());
    s.feed(QByteArray("\x1bP\x1b[?1\x18h")); // ESC ends the DCS, starts a CSI which CAN aborts
    QCOMPARE(s.modes(), quint32(0));
    QVERIFY(s.atSafeBoundary());
    // Other C1 controls abort too (xterm.js): U+0085 NEL inside a CSI.
    s.feed(QByteArray("\x1b[?1\xc2\x85h"));
    QCOMPARE(s.modes(), quint32(0));
    QVERIFY(s.atSafeBoundary());
}

void TestTerminalState::malformedUtf8()
{
    // Each malformed sequence ends where a decoder would resynchronise.
    QVERIFY(fed("\xc3" "A").atSafeBoundary());        // truncated 2-byte
    QVERIFY(fed("\xe2\x82" "A").atSafeBoundary());    // truncated 3-byte
    QVERIFY(fed("\x80\x80\xbf").atSafeBoundary());    // stray continuations
    QVERIFY(fed("\xc0\xc1\xf5\xff").atSafeBoundary()); // never-valid bytes
    QVERIFY(fed("\xe0\x80").atSafeBoundary());        // overlong: 0x80 not allowed after E0
    QVERIFY(!fed("\xe0\xa0").atSafeBoundary());       // valid so far
    QVERIFY(fed("\xed\xa0").atSafeBoundary());        // surrogate rejected at once
    QVERIFY(fed("\xf4\x90").atSafeBoundary());        // > U+10FFFF
    QVERIFY(!fed("\xf4\x8f").atSafeBoundary());
    QVERIFY(!fed("\xc3\xc3").atSafeBoundary());       // new lead restarts
    QVERIFY(fed("\xc3\xc3\xa9").atSafeBoundary());
    // ESC in the middle of a character: the character is abandoned.
    QCOMPARE(fed("\xe2\x1b[?1h").modes(), quint32(TerminalState::AppCursorKeys));
}

void TestTerminalState::noAllocationPerByte()
{
#ifdef TETHER_COUNT_ALLOCS
    // Output without titles: no heap allocation at all, however much of it.
    QByteArray noTitles = corpus();
    noTitles.replace("\x1b]0;", "\x1b]7;").replace("\x1b]2;", "\x1b]7;").replace("\xc2\x9d" "2;", "\xc2\x9d" "7;");
    noTitles += "\x1b]52;c;" + QByteArray(100000, 'A') + "\x07"; // big clipboard OSC: not stored
    noTitles += "\x1bP" + QByteArray(100000, 'q') + "\x1b\\";    // big DCS
    TerminalState s;
    QVERIFY(allocationsDuring(oneAllocation) == 1); // the counter works
    const long plain = allocationsDuring([&] {
        for (int i = 0; i < 50; ++i)
            s.feed(noTitles);
    });
    QCOMPARE(plain, 0L);
    QVERIFY(s.hasMode(TerminalState::AltScreen));
    QCOMPARE(s.titleSerial(), quint64(0));

    // Titles: the text buffer is reserved once; then only the title QString
    // of each completed OSC allocates, never the bytes one by one.
    s.feed(QByteArray("\x1b]2;warm-up\x07"));
    QByteArray titles;
    for (int i = 0; i < 200; ++i)
        titles += "\x1b]2;some window title " + QByteArray::number(i) + "\x07";
    const long withTitles = allocationsDuring([&] { s.feed(titles); });
    QVERIFY2(withTitles <= 200, qPrintable(QString::number(withTitles)));
    QCOMPARE(s.title(), QStringLiteral("some window title 199"));
    // A maximal title grows the buffer geometrically: a handful of reallocs.
    const QByteArray huge = "\x1b]2;" + QByteArray(TerminalState::kMaxTitle * 4, 'x') + "\x07";
    const long longTitle = allocationsDuring([&] { s.feed(huge); });
    QVERIFY2(longTitle <= 12, qPrintable(QString::number(longTitle)));
#else
    QSKIP("allocation counting needs glibc or AddressSanitizer");
#endif
}

void TestTerminalState::saveRestoreAtEveryPosition()
{
    // Restart in place hands the parser state to the next process: a state
    // restored at any point (inside a CSI, an OSC title, a UTF-8 character)
    // continues exactly as the original does.
    const QByteArray all = corpus() + "\x1b[22;0t\x1b[3;20r\x1b[4h\x1b=" + corpus();
    const TerminalState whole = fed(all);
    for (int i = 0; i <= all.size(); ++i) {
        TerminalState s;
        s.feed(all.constData(), i);
        const QByteArray saved = s.save();
        TerminalState t;
        t.feed("\x1b[?1h\x1b]0;junk\x07"); // restore replaces, it does not merge
        QVERIFY(t.restore(saved));
        QCOMPARE(t.save(), saved);
        QCOMPARE(summary(t), summary(s));
        QCOMPARE(t.titleStackDepth(), s.titleStackDepth());
        QCOMPARE(t.marginsSet(), s.marginsSet());
        t.feed(all.constData() + i, all.size() - i);
        QCOMPARE(summary(t), summary(whole));
        QCOMPARE(t.save(), whole.save());
    }
}

void TestTerminalState::restoreRefusesWhatSaveDidNotMake()
{
    TerminalState s;
    s.feed("\x1b[?1049h\x1b]2;title\x07\x1b[1;2"); // inside a CSI with parameters
    const QByteArray saved = s.save();
    const QByteArray before = fed("\x1b[?2004h").save();
    auto refused = [&](const QByteArray &bad) {
        TerminalState t = fed("\x1b[?2004h");
        return !t.restore(bad) && t.save() == before; // unchanged
    };
    QVERIFY(refused(QByteArray()));
    QVERIFY(refused(QByteArray(1, '\x03') + saved.mid(1))); // another layout version
    for (int n = 0; n < saved.size(); ++n)
        QVERIFY2(refused(saved.left(n)), qPrintable(QString::number(n)));
    QVERIFY(refused(saved + 'x'));
    QByteArray badState = saved;
    badState[1] = char(42); // no such parser state
    QVERIFY(refused(badState));
    QByteArray badParams = saved;
    badParams[10] = char(100); // paramCount beyond m_params
    QVERIFY(refused(badParams));
    // Numbers the parser never makes (it caps them at 99999): INT_MAX in a
    // parameter overflowed an int at the next digit (UBSan, build-asan).
    auto withI32 = [&](int offset, qint32 v) {
        QByteArray b = saved;
        for (int i = 0; i < 4; ++i)
            b[offset + i] = char((quint32(v) >> (8 * i)) & 0xff);
        return b;
    };
    // version, state, 4 UTF-8 bytes, marker, intermediate, count, subParam,
    // paramCount (i32, at 10), 16 params, modes, alt screen, marginsSet,
    // marginTop (at 87), marginBottom, titleStackDepth, oscCommand (at 99)
    QVERIFY(!refused(withI32(14, 99999))); // the largest the parser makes
    QVERIFY(refused(withI32(14, 2147483647)));
    QVERIFY(refused(withI32(18, -1)));
    QVERIFY(refused(withI32(14 + 15 * 4, 100000)));
    QVERIFY(refused(withI32(87, 2147483647)));
    QVERIFY(refused(withI32(91, -5)));
    QVERIFY(refused(withI32(99, 2147483647)));
    QVERIFY(refused(withI32(99, -3)));
    TerminalState capped;
    QVERIFY(capped.restore(withI32(14, 99999)));
    capped.feed("99m"); // stays capped, no overflow
    TerminalState ok;
    QVERIFY(ok.restore(saved));
    QCOMPARE(summary(ok), summary(s));
}

void TestTerminalState::restoreReadsVersion1()
{
    // A state saved by the previous build (layout version 1, before the
    // charset fields) during a restart in place still restores: the new
    // fields take their reset values.
    TerminalState s;
    s.feed("\x1b[?1049;2004h\x1b]2;title\x07\x1b[1;2");
    QByteArray v1 = s.save();
    QCOMPARE(v1.at(0), '\x02');
    v1[0] = '\x01';
    v1.chop(1 + 1 + 1 + 1 + 1 + 8); // g0, g1, shiftOut, tabStopsChanged, lastPrintMayWrap, queriesSeen
    TerminalState t;
    QVERIFY(t.restore(v1));
    QCOMPARE(t.modes(), s.modes());
    QCOMPARE(t.title(), QStringLiteral("title"));
    QCOMPARE(t.charset(0), 'B');
    QVERIFY(!t.shiftOut());
    QCOMPARE(t.queriesSeen(), quint64(0));
    t.feed("4h"); // the CSI continues where it was cut
    QVERIFY(!t.hasMode(TerminalState::InsertMode)); // "CSI 1;24h": no IRM
    QVERIFY(!t.restore(v1 + 'x'));
}

void TestTerminalState::charsets_data()
{
    QTest::addColumn<QByteArray>("input");
    QTest::addColumn<char>("g0");
    QTest::addColumn<char>("g1");
    QTest::addColumn<bool>("shiftOut");
    QTest::addColumn<QByteArray>("sequence");
    QTest::newRow("default") << QByteArray("text") << 'B' << 'B' << false << QByteArray();
    QTest::newRow("line drawing in G0") << QByteArray("\x1b(0lqk") << '0' << 'B' << false << QByteArray("\x1b(0");
    QTest::newRow("back to ASCII") << QByteArray("\x1b(0q\x1b(B") << 'B' << 'B' << false << QByteArray();
    QTest::newRow("UK") << QByteArray("\x1b(A") << 'A' << 'B' << false << QByteArray("\x1b(A");
    QTest::newRow("G1 shifted in") << QByteArray("\x1b)0\x0e") << 'B' << '0' << true << QByteArray("\x1b)0\x0e");
    QTest::newRow("shifted out again") << QByteArray("\x1b)0\x0eq\x0f") << 'B' << '0' << false
                                       << QByteArray("\x1b)0");
    QTest::newRow("SO inside a CSI executes") << QByteArray("\x1b[1\x0e;2H") << 'B' << 'B' << true
                                              << QByteArray("\x0e");
    QTest::newRow("SO inside an OSC does not") << QByteArray("\x1b]2;a\x0e\x07") << 'B' << 'B' << false
                                               << QByteArray();
    QTest::newRow("unknown set ignored") << QByteArray("\x1b(0\x1b(<") << '0' << 'B' << false << QByteArray("\x1b(0");
    QTest::newRow("G2 not tracked") << QByteArray("\x1b*0") << 'B' << 'B' << false << QByteArray();
    QTest::newRow("RIS resets") << QByteArray("\x1b(0\x1b)A\x0e\x1b" "c") << 'B' << 'B' << false << QByteArray();
    QTest::newRow("DECSTR resets") << QByteArray("\x1b(0\x0e\x1b[!p") << 'B' << 'B' << false << QByteArray();
    QTest::newRow("CAN aborts the designation") << QByteArray("\x1b(\x18" "0") << 'B' << 'B' << false << QByteArray();
}

void TestTerminalState::charsets()
{
    QFETCH(QByteArray, input);
    QFETCH(char, g0);
    QFETCH(char, g1);
    QFETCH(bool, shiftOut);
    QFETCH(QByteArray, sequence);
    const TerminalState s = fed(input);
    QCOMPARE(s.charset(0), g0);
    QCOMPARE(s.charset(1), g1);
    QCOMPARE(s.shiftOut(), shiftOut);
    QCOMPARE(s.charsetSequence(), sequence);
    QCOMPARE(s.restoreSequence(), TerminalState().restoreSequence()); // not part of it
    // The sequence brings a reset state to the same charsets.
    const TerminalState t = fed(sequence);
    QCOMPARE(t.charsetSequence(), sequence);
}

void TestTerminalState::tabStopsChanged_data()
{
    QTest::addColumn<QByteArray>("input");
    QTest::addColumn<bool>("changed");
    QTest::newRow("none") << QByteArray("a\tb") << false;
    QTest::newRow("HTS") << QByteArray("\x1b[5G\x1bH") << true;
    QTest::newRow("C1 HTS") << QByteArray("\xc2\x88") << true;
    QTest::newRow("TBC") << QByteArray("\x1b[g") << true;
    QTest::newRow("TBC 0") << QByteArray("\x1b[0g") << true;
    QTest::newRow("TBC 3") << QByteArray("\x1b[3g") << true;
    QTest::newRow("TBC 2 (line stops, not ours)") << QByteArray("\x1b[2g") << false;
    QTest::newRow("ESC # H is not HTS") << QByteArray("\x1b#H") << false;
    QTest::newRow("reset by RIS") << QByteArray("\x1b[3g\x1b" "c") << false;
    QTest::newRow("set after RIS") << QByteArray("\x1b" "c\x1bH") << true;
}

void TestTerminalState::tabStopsChanged()
{
    QFETCH(QByteArray, input);
    QFETCH(bool, changed);
    QCOMPARE(fed(input).tabStopsChanged(), changed);
}

void TestTerminalState::queriesSeen_data()
{
    QTest::addColumn<QByteArray>("input");
    QTest::addColumn<int>("queries");
    QTest::newRow("DA1") << QByteArray("\x1b[c") << 1;
    QTest::newRow("DA1 0") << QByteArray("\x1b[0c") << 1;
    QTest::newRow("DA2") << QByteArray("\x1b[>c") << 1;
    QTest::newRow("DA2 0") << QByteArray("\x1b[>0c") << 1;
    QTest::newRow("DSR 5") << QByteArray("\x1b[5n") << 1;
    QTest::newRow("CPR") << QByteArray("\x1b[6n") << 1;
    QTest::newRow("DECXCPR") << QByteArray("\x1b[?6n") << 1;
    QTest::newRow("DECRQM ANSI") << QByteArray("\x1b[4$p") << 1;
    QTest::newRow("DECRQM DEC") << QByteArray("\x1b[?2004$p") << 1;
    QTest::newRow("C1 CSI") << QByteArray("\xc2\x9b" "6n") << 1;
    QTest::newRow("several") << QByteArray("text\x1b[c more\x1b[6n\x1b[6n") << 3;
    QTest::newRow("DA3 is not") << QByteArray("\x1b[=c") << 0;
    QTest::newRow("DA with a parameter is not") << QByteArray("\x1b[1c") << 0;
    QTest::newRow("replies are not") << QByteArray("\x1b[0n\x1b[3n\x1b[?1;2c") << 0;
    QTest::newRow("DECSTR is not") << QByteArray("\x1b[!p") << 0;
    QTest::newRow("DSR ? 5 is not") << QByteArray("\x1b[?5n") << 0;
    QTest::newRow("aborted by CAN") << QByteArray("\x1b[6\x18n") << 0;
    QTest::newRow("inside an OSC") << QByteArray("\x1b]2;\x1b[6n") << 1; // ESC ends the OSC first
}

void TestTerminalState::queriesSeen()
{
    QFETCH(QByteArray, input);
    QFETCH(int, queries);
    QCOMPARE(fed(input).queriesSeen(), quint64(queries));
    TerminalState bytewise;
    for (const char c : input)
        bytewise.feed(&c, 1);
    QCOMPARE(bytewise.queriesSeen(), quint64(queries));
}

void TestTerminalState::lastPrintMayWrap_data()
{
    QTest::addColumn<QByteArray>("input");
    QTest::addColumn<bool>("mayWrap");
    QTest::newRow("nothing") << QByteArray() << false;
    QTest::newRow("ASCII") << QByteArray("abc") << true;
    QTest::newRow("UTF-8") << QByteArray("\xe4\xb8\xad") << true;
    QTest::newRow("incomplete UTF-8") << QByteArray("\x1b[H\xe4\xb8") << false;
    QTest::newRow("then SGR, modes, title") << QByteArray("abc\x1b[1;31m\x1b[?25l\x1b[4h\x1b]2;t\x07") << true;
    QTest::newRow("then controls (the screen sees moves)") << QByteArray("abc\r\n\b\t\x07") << true;
    QTest::newRow("then erase, insert, delete, scroll") << QByteArray("abc\x1b[K\x1b[2J\x1b[X\x1b[@\x1b[P\x1b[L\x1b[M\x1b[S\x1b[T")
                                                       << true;
    QTest::newRow("then DECSC, DECRC, IND, RI, alt screen") << QByteArray("abc\x1b" "7\x1b" "8\x1b" "D\x1b" "M\x1b[?1049h")
                                                           << true;
    QTest::newRow("then CUP") << QByteArray("abc\x1b[1;1H") << false;
    QTest::newRow("then CUF") << QByteArray("abc\x1b[C") << false;
    QTest::newRow("then CHA") << QByteArray("abc\x1b[3G") << false;
    QTest::newRow("then HPA") << QByteArray("abc\x1b[3`") << false;
    QTest::newRow("then VPA") << QByteArray("abc\x1b[3d") << false;
    QTest::newRow("then HVP") << QByteArray("abc\x1b[3;3f") << false;
    QTest::newRow("then RIS") << QByteArray("abc\x1b" "c") << false;
    QTest::newRow("DEC CUP-like with a marker is not") << QByteArray("abc\x1b[?3H") << true;
    QTest::newRow("printed after a move") << QByteArray("\x1b[Hx") << true;
    QTest::newRow("printed with autowrap off") << QByteArray("\x1b[?7lx") << false;
    QTest::newRow("UTF-8 with autowrap off") << QByteArray("\x1b[?7l\xc3\xa9") << false;
    QTest::newRow("autowrap on after the print") << QByteArray("\x1b[?7lx\x1b[?7h") << false;
    QTest::newRow("autowrap off after the print") << QByteArray("x\x1b[?7l") << true;
    QTest::newRow("REP") << QByteArray("x\x1b[H\x1b[5b") << true;
    // Controls (and DEL) print nothing, also in a long run of them.
    QTest::newRow("controls after a move") << QByteArray("abc\x1b[H\r\n\t\x07\x18\x1a") << false;
    QTest::newRow("DEL after a move") << QByteArray("abc\x1b[H\x7f") << false;
    QTest::newRow("autowrap off after the print, then controls")
        << (QByteArray("x\x1b[?7l") + QByteArray(40, '\n')) << true;
    QTest::newRow("REP with autowrap off") << QByteArray("\x1b[?7lx\x1b[H\x1b[5b") << false;
}

void TestTerminalState::lastPrintMayWrap()
{
    QFETCH(QByteArray, input);
    QFETCH(bool, mayWrap);
    QCOMPARE(fed(input).lastPrintMayWrap(), mayWrap);
}

void TestTerminalState::feedUntilEvent_data()
{
    using T = TerminalState;
    QTest::addColumn<QByteArray>("input");
    QTest::addColumn<int>("consumed"); // bytes up to and including the event's final byte
    QTest::addColumn<int>("events");
    QTest::newRow("none") << QByteArray("abc\x1b[31m") << 8 << 0;
    QTest::newRow("1049 h") << QByteArray("ab\x1b[?1049hcd") << 10 << int(T::AltScreenEntered | T::CursorSaved);
    QTest::newRow("1049 h again") << QByteArray("\x1b[?1049h\x1b[?1049h") << 8 << int(T::AltScreenEntered | T::CursorSaved);
    QTest::newRow("47 h") << QByteArray("\x1b[?47hx") << 6 << int(T::AltScreenEntered);
    QTest::newRow("1048 h") << QByteArray("\x1b[?1048h") << 8 << int(T::CursorSaved);
    QTest::newRow("DECSC") << QByteArray("x\x1b" "7y") << 3 << int(T::CursorSaved);
    QTest::newRow("HTS") << QByteArray("\x1bHz") << 2 << int(T::TabStopSet);
    QTest::newRow("TBC") << QByteArray("\x1b[g") << 3 << int(T::TabStopCleared);
    QTest::newRow("TBC 3") << QByteArray("\x1b[3g") << 4 << int(T::TabStopsCleared);
    QTest::newRow("ED 2") << QByteArray("\x1b[2J") << 4 << int(T::ScreenErased);
    QTest::newRow("ED 3 is not") << QByteArray("\x1b[3J") << 4 << 0;
    QTest::newRow("RIS") << QByteArray("\x1b" "cx") << 2 << int(T::FullReset);
    QTest::newRow("mode list") << QByteArray("\x1b[?1;2004h") << 10 << int(T::ModeList);
    QTest::newRow("ANSI mode list") << QByteArray("\x1b[4;20l") << 7 << int(T::ModeList);
    QTest::newRow("mode list entering") << QByteArray("\x1b[?2004;1049h") << 13
                                        << int(T::ModeList | T::AltScreenEntered | T::CursorSaved);
    QTest::newRow("DECSTBM") << QByteArray("\x1b[2;5r") << 6 << int(T::MarginsChanged);
    QTest::newRow("EL") << QByteArray("ab\x1b[Kc") << 5 << int(T::LineErasedRight);
    QTest::newRow("EL 0") << QByteArray("\x1b[0K") << 4 << int(T::LineErasedRight);
    QTest::newRow("DECSEL 0") << QByteArray("\x1b[?K") << 4 << int(T::LineErasedRight);
    QTest::newRow("EL 1 is not") << QByteArray("\x1b[1K") << 4 << 0;
    QTest::newRow("EL 2 is not") << QByteArray("\x1b[2K") << 4 << 0;
    QTest::newRow("ED") << QByteArray("ab\x1b[Jc") << 5 << int(T::ScreenErasedBelow);
    QTest::newRow("ED 0") << QByteArray("\x1b[0J") << 4 << int(T::ScreenErasedBelow);
    QTest::newRow("DECSED 0") << QByteArray("\x1b[?J") << 4 << int(T::ScreenErasedBelow);
    QTest::newRow("ED 1 is not") << QByteArray("\x1b[1J") << 4 << 0;
}

void TestTerminalState::feedUntilEvent()
{
    QFETCH(QByteArray, input);
    QFETCH(int, consumed);
    QFETCH(int, events);
    TerminalState s;
    quint16 got = 0xFFFF;
    QCOMPARE(s.feedUntilEvent(input.constData(), input.size(), &got), qsizetype(consumed));
    QCOMPARE(int(got), events);
    // Stepping from event to event ends in the same state as feed().
    TerminalState all;
    all.feed(input);
    TerminalState stepped;
    qsizetype at = 0;
    while (at < input.size())
        at += stepped.feedUntilEvent(input.constData() + at, input.size() - at, &got);
    QCOMPARE(summary(stepped), summary(all));
    QCOMPARE(s.feedUntilEvent(nullptr, 0, &got), qsizetype(0));
    QCOMPARE(int(got), 0);
}

void TestTerminalState::inertPrefix_data()
{
    QTest::addColumn<QByteArray>("before");
    QTest::addColumn<QByteArray>("bytes");
    QTest::addColumn<int>("inert");
    QTest::newRow("text") << QByteArray() << QByteArray("hello\r\n") << 7;
    QTest::newRow("controls") << QByteArray() << QByteArray("\x07\x08\t\r\n\x7f\x18\x1a") << 8;
    QTest::newRow("up to ESC") << QByteArray() << QByteArray("ab\x1b[1mcd") << 2;
    QTest::newRow("up to SO") << QByteArray() << QByteArray("ab\x0e" "cd") << 2;
    QTest::newRow("up to SI") << QByteArray() << QByteArray("ab\x0f" "cd") << 2;
    QTest::newRow("up to UTF-8") << QByteArray() << QByteArray("ab\xc3\xa9") << 2;
    QTest::newRow("ESC first") << QByteArray() << QByteArray("\x1b[H") << 0;
    QTest::newRow("inside CSI") << QByteArray("\x1b[") << QByteArray("12;3") << 0;
    QTest::newRow("inside OSC") << QByteArray("\x1b]0;") << QByteArray("title") << 0;
    QTest::newRow("inside a character") << QByteArray("\xe2\x82") << QByteArray("abc") << 0;
    QTest::newRow("after a sequence") << QByteArray("\x1b[?1049h") << QByteArray("abc\x1b") << 3;
    QTest::newRow("past 16 bytes") << QByteArray() << QByteArray(37, 'x') + "\x1b" << 37;
}

void TestTerminalState::inertPrefix()
{
    // The prefix the head reports is exactly what the tail may take unscanned:
    // bytes taken in the ground state that change nothing but lastPrintMayWrap.
    QFETCH(QByteArray, before);
    QFETCH(QByteArray, bytes);
    QFETCH(int, inert);
    TerminalState reporting = fed(before);
    QCOMPARE(reporting.feedReportingInert(bytes.constData(), bytes.size()), qsizetype(inert));
    TerminalState plain = fed(before + bytes);
    QCOMPARE(reporting.save(), plain.save());
    // The tail's way: the prefix unscanned, the rest parsed.
    TerminalState tail = fed(before);
    tail.feedInert(bytes.constData(), inert);
    tail.feed(bytes.constData() + inert, bytes.size() - inert);
    QCOMPARE(tail.save(), plain.save());
    QCOMPARE(summary(tail), summary(plain));
}

void TestTerminalState::tailSkippingInertRunsMatches_data()
{
    QTest::addColumn<QList<QByteArray>>("pieces");
    QTest::addColumn<int>("seed");
    const QByteArray line = "line 1 the quick brown fox jumps over the lazy dog\n";
    QTest::newRow("cat of text") << QList<QByteArray>{line} << 1;
    QTest::newRow("text, autowrap off") << QList<QByteArray>{line, line + "\x1b[?7l", "\x1b[?7h"} << 2;
    QTest::newRow("controls only") << QList<QByteArray>{"\r\n", "\x07", "\x08\x08", "\t"} << 3;
    QTest::newRow("colours") << QList<QByteArray>{line, "\x1b[31m", "\x1b[0m", QByteArray(300, 'x')} << 4;
    QTest::newRow("UTF-8 and charsets")
        << QList<QByteArray>{line, "\xc3\xa9", "\xe2\x82", "\xac", "\x0e", "\x0f", "\x1b(0", "\x1b(B"} << 5;
    QTest::newRow("titles and strings")
        << QList<QByteArray>{line, "\x1b]0;a title", "\x07", "\x1bP", QByteArray(400, 'q'), "\x1b\\"} << 6;
    QTest::newRow("modes") << QList<QByteArray>{QByteArray(700, 'y'), "\x1b[?1049h", "\x1b[?1049l", "\x1b[?2004h",
                                                "\x1b[?1000h", "\x1b[?25l", "\x1b[2;20r", "\x1b[r", "\x1b"} << 7;
}

void TestTerminalState::tailSkippingInertRunsMatches()
{
    // A session's head reports inert ranges as the output arrives (chunks of
    // any size); its tail takes the same stream later, in other pieces (what
    // each append evicts), skipping the recorded ranges. At every piece the
    // tail must equal a state that parsed everything, to the last saved
    // field (modes, margins, title, charsets, pending wrap, queries).
    QFETCH(QList<QByteArray>, pieces);
    QFETCH(int, seed);
    QRandomGenerator rng{quint32(seed)};
    for (int round = 0; round < 200; ++round) {
        QByteArray all;
        while (all.size() < 20000)
            all += pieces.at(rng.bounded(int(pieces.size())));
        TerminalState head;
        InertRuns runs;
        for (qsizetype at = 0; at < all.size();) {
            const qsizetype n = std::min<qsizetype>(all.size() - at, rng.bounded(1, 5000));
            runs.add(quint64(at), quint64(at) + quint64(head.feedReportingInert(all.constData() + at, n)));
            at += n;
        }
        QCOMPARE(head.save(), fed(all).save());
        TerminalState tail;
        TerminalState reference;
        for (qsizetype at = 0; at < all.size();) {
            const qsizetype n = std::min<qsizetype>(all.size() - at, rng.bounded(1, 5000));
            runs.feed(tail, quint64(at), all.constData() + at, n);
            reference.feed(all.constData() + at, n);
            at += n;
            runs.dropBefore(quint64(at));
            if (tail.save() != reference.save())
                QFAIL(qPrintable(QStringLiteral("round %1: differs at offset %2").arg(round).arg(at)));
        }
        QCOMPARE(summary(tail), summary(reference));
        QCOMPARE(runs.count(), 0);
    }
}

void TestTerminalState::inertRunsAreBounded()
{
    InertRuns runs;
    // A short range alone is not worth a slot (a keystroke's echo)...
    runs.add(0, 1);
    QCOMPARE(runs.count(), 0);
    // ...but once one is kept, what continues it merges into it however
    // short (a `cat`: one range that grows).
    runs.add(1, 1 + quint64(InertRuns::kMinRun));
    for (quint64 at = 1 + quint64(InertRuns::kMinRun); at < 1000; ++at)
        runs.add(at, at + 1);
    QCOMPARE(runs.count(), 1);
    // A short range apart from the last is not worth a slot.
    runs.add(1001, 1001 + quint64(InertRuns::kMinRun) - 1);
    QCOMPARE(runs.count(), 1);
    // At most kMaxRuns: the oldest go first.
    for (int i = 0; i < 2 * InertRuns::kMaxRuns; ++i)
        runs.add(2000 + quint64(i) * 1000, 2000 + quint64(i) * 1000 + 500);
    QCOMPARE(runs.count(), InertRuns::kMaxRuns);
    runs.dropBefore(2000 + quint64(InertRuns::kMaxRuns + 1) * 1000 + 250);
    QCOMPARE(runs.count(), InertRuns::kMaxRuns - 1);
    // What is forgotten is parsed: still exact. "\x1b[?1049h" is not inert,
    // but after dropBefore() no range claims it.
    TerminalState st;
    const QByteArray bytes("\x1b[?1049h");
    runs.feed(st, 0, bytes.constData(), bytes.size());
    QVERIFY(st.hasMode(TerminalState::AltScreen));
}

QTEST_GUILESS_MAIN(TestTerminalState)
#include "tst_terminalstate.moc"
