// SPDX-License-Identifier: GPL-2.0-or-later
// leaveSequence: what `tether attach` writes on leaving (detach, exit,
// SIGTSTP) for the modes the session's programs left on, as the client's
// TerminalState saw them. (tst_cli checks it on a real terminal.)
#include "leavesequence.h"

#include <QTest>

using namespace Tether;

class TestLeaveSequence : public QObject
{
    Q_OBJECT
private Q_SLOTS:
    void leave_data()
    {
        QTest::addColumn<QByteArray>("written");  // what the client wrote to its terminal
        QTest::addColumn<QByteArrayList>("has");  // in the leave sequence
        QTest::addColumn<QByteArrayList>("hasNot");
        const QByteArrayList always{"\x1b[0m", "\x0f\x1b(B", "\x1b[4l", "\x1b[?7h", "\x1b>", "\x1b" "7\x1b[r\x1b" "8",
                                    "\x1b[0 q", "\x1b[23;0t"};
        QTest::newRow("plain shell output: only the unconditional resets")
            << QByteArray("$ ls\r\nfile\r\n$ ") << always
            << QByteArrayList{"\x1b[?1049l", "\x1b[?25h", "\x1b[?2004l", "\x1b[?1000l", "\x1b[?6l"};
        QTest::newRow("vim: alternate screen, app cursor keys, bracketed paste, hidden cursor")
            << QByteArray("\x1b[?1049h\x1b[?1h\x1b[?2004h\x1b[?25l")
            << (always + QByteArrayList{"\x1b[?1049l", "\x1b[?1l", "\x1b[?2004l", "\x1b[?25h"})
            << QByteArrayList{"\x1b[?1047l", "\x1b[?1000l"};
        QTest::newRow("1047 alternate screen is left with 1047")
            << QByteArray("\x1b[?1047h") << (always + QByteArrayList{"\x1b[?1047l"}) << QByteArrayList{"\x1b[?1049l"};
        QTest::newRow("mouse tracking, SGR, focus events")
            << QByteArray("\x1b[?1000h\x1b[?1006h\x1b[?1004h")
            << (always + QByteArrayList{"\x1b[?1000l", "\x1b[?1006l", "\x1b[?1004l"})
            << QByteArrayList{"\x1b[?1002l", "\x1b[?1003l", "\x1b[?9l"};
        QTest::newRow("a later tracking mode replaces the earlier (as in xterm)")
            << QByteArray("\x1b[?1000h\x1b[?1002h") << (always + QByteArrayList{"\x1b[?1002l"})
            << QByteArrayList{"\x1b[?1000l"};
        QTest::newRow("modes switched off again are not touched")
            << QByteArray("\x1b[?1049h\x1b[?1049l\x1b[?25l\x1b[?25h") << always
            << QByteArrayList{"\x1b[?1049l", "\x1b[?25h"};
        QTest::newRow("origin mode: reset and the cursor to the last row")
            << QByteArray("\x1b[5;10r\x1b[?6h") << (always + QByteArrayList{"\x1b[?6l\x1b[999;1H"}) << QByteArrayList{};
    }

    void leave()
    {
        QFETCH(QByteArray, written);
        QFETCH(QByteArrayList, has);
        QFETCH(QByteArrayList, hasNot);
        TerminalState t;
        t.feed(written);
        const QByteArray s = leaveSequence(t);
        for (const QByteArray &h : has)
            QVERIFY2(s.contains(h), (h.toPercentEncoding() + " not in " + s.toPercentEncoding()).constData());
        for (const QByteArray &h : hasNot)
            QVERIFY2(!s.contains(h), (h.toPercentEncoding() + " in " + s.toPercentEncoding()).constData());
    }

    void titleStackPoppedPastWhatTheProgramPushed()
    {
        // Our push at attach, plus two pushes of the program: three pops.
        TerminalState t;
        t.feed("\x1b[22;0t\x1b[22;0t");
        QCOMPARE(t.titleStackDepth(), 2);
        QCOMPARE(leaveSequence(t).count("\x1b[23;0t"), 3);
        TerminalState fresh;
        QCOMPARE(leaveSequence(fresh).count("\x1b[23;0t"), 1);
    }

    void modesOffBeforeTheMainScreenComesBack()
    {
        // Mouse and paste modes go off while still on the alternate screen;
        // the cursor is shown after the switch back.
        TerminalState t;
        t.feed("\x1b[?1049h\x1b[?1000h\x1b[?25l");
        const QByteArray s = leaveSequence(t);
        QVERIFY(s.indexOf("\x1b[?1000l") < s.indexOf("\x1b[?1049l"));
        QVERIFY(s.indexOf("\x1b[?1049l") < s.indexOf("\x1b[?25h"));
    }
};

QTEST_GUILESS_MAIN(TestLeaveSequence)
#include "tst_leavesequence.moc"
