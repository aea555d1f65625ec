// SPDX-License-Identifier: GPL-2.0-or-later
// outputText(): the text a command's raw output shows (the terminal
// window's Copy Last Output, issue 25).
#include "outputtext.h"

#include <QTest>

using namespace Tether;

class TestOutputText : public QObject
{
    Q_OBJECT
private Q_SLOTS:
    void text_data()
    {
        QTest::addColumn<QByteArray>("bytes");
        QTest::addColumn<QString>("text");
        QTest::newRow("empty") << QByteArray() << QString();
        QTest::newRow("lines, final LF dropped") << QByteArray("red\r\nplain\r\n") << QStringLiteral("red\nplain");
        QTest::newRow("no final LF") << QByteArray("a\nb") << QStringLiteral("a\nb");
        QTest::newRow("empty line kept") << QByteArray("a\r\n\r\nb\r\n") << QStringLiteral("a\n\nb");
        QTest::newRow("SGR") << QByteArray("\x1b[31mred\x1b[0m \x1b[1;4mbold\x1b[m\r\n") << QStringLiteral("red bold");
        QTest::newRow("OSC BEL and ST") << QByteArray("\x1b]0;title\x07x\x1b]8;;http://a\x1b\\link\x1b]8;;\x1b\\\n")
                                        << QStringLiteral("xlink");
        QTest::newRow("DCS, charset, keypad") << QByteArray("\x1bP1$r0m\x1b\\\x1b(Bab\x1b=c\x1b[?2004l\n")
                                              << QStringLiteral("abc");
        QTest::newRow("CR overwrites (progress)") << QByteArray("10%\r50%\r100%\r\n") << QStringLiteral("100%");
        QTest::newRow("CR then shorter text") << QByteArray("abcdef\rxy\n") << QStringLiteral("xycdef");
        QTest::newRow("BS") << QByteArray("ab\bc\n") << QStringLiteral("ac");
        QTest::newRow("TAB") << QByteArray("a\tb\n") << QStringLiteral("a       b");
        QTest::newRow("trailing spaces cut") << QByteArray("a   \r\n") << QStringLiteral("a");
        QTest::newRow("BEL and other C0 dropped") << QByteArray("a\x07\x01" "b\n") << QStringLiteral("ab");
        QTest::newRow("CAN aborts a sequence") << QByteArray("\x1b[31\x18x\n") << QStringLiteral("x");
        QTest::newRow("UTF-8") << QByteArray("caf\xc3\xa9 \xe2\x9c\x93\n") << QStringLiteral("caf\u00e9 \u2713");
        QTest::newRow("unterminated escape at end") << QByteArray("a\x1b[") << QStringLiteral("a");
    }
    void text()
    {
        QFETCH(QByteArray, bytes);
        QFETCH(QString, text);
        QCOMPARE(outputText(bytes), text);
    }
};

QTEST_GUILESS_MAIN(TestOutputText)
#include "tst_outputtext.moc"
