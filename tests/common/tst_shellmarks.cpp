// SPDX-License-Identifier: GPL-2.0-or-later
// ShellMarkScanner: OSC 133/633/7/9/777/99 and BEL found at exact offsets,
// whatever the split; untrusted input bounded; no allocation while scanning.
#include "shellmarks.h"

#include <QTest>

#include "alloccounter.h"

using Tether::ShellMark;
using Tether::ShellMarkScanner;

namespace {

struct Collect : ShellMarkScanner::Handler {
    QStringList marks;
    qsizetype longestPayload = 0;
    void shellMark(const ShellMark &m) override
    {
        static const char *const kNames[] = {"A", "B", "C", "D", "E", "cwd", "notify", "bell"};
        longestPayload = std::max(longestPayload, m.payloadSize);
        marks << QStringLiteral("%1@%2-%3[%4]%5")
                     .arg(QLatin1String(kNames[m.kind]))
                     .arg(m.at)
                     .arg(m.end)
                     .arg(QString::fromUtf8(m.payloadBytes()))
                     .arg(m.truncated ? QStringLiteral("+") : QString());
    }
};

QStringList scanned(const QByteArray &bytes, qsizetype piece = 0)
{
    ShellMarkScanner s;
    Collect c;
    if (piece <= 0) {
        s.scan(bytes.constData(), bytes.size(), 0, c);
    } else {
        for (qsizetype i = 0; i < bytes.size(); i += piece)
            s.scan(bytes.constData() + i, std::min(piece, bytes.size() - i), quint64(i), c);
    }
    return c.marks;
}

void noAllocation() {}

} // namespace

class TestShellMarks : public QObject
{
    Q_OBJECT
private Q_SLOTS:
    void marks_data();
    void marks();
    void anySplitGivesTheSame();
    void payloadIsBounded();
    void noAllocationWhileScanning();
    void vsCodeEscapes_data();
    void vsCodeEscapes();
};

void TestShellMarks::marks_data()
{
    QTest::addColumn<QByteArray>("stream");
    QTest::addColumn<QStringList>("expected");
    QTest::newRow("prompt, command, output, end")
        << QByteArray("\x1b]133;A\x07$ \x1b]133;B\x07ls\r\n\x1b]133;C\x07" "a b\r\n\x1b]133;D;0\x07")
        << QStringList{"A@0-8[]", "B@10-18[]", "C@22-30[]", "D@35-45[0]"};
    QTest::newRow("ST terminator, and C1 ST")
        << QByteArray("\x1b]133;A\x1b\\x\x1b]133;D;2\xc2\x9c")
        << QStringList{"A@0-9[]", "D@10-21[2]"};
    QTest::newRow("options after the mark letter are ignored")
        << QByteArray("\x1b]133;A;cl=m\x07\x1b]133;D;1;aid=5\x07")
        << QStringList{"A@0-13[]", "D@13-29[1;aid=5]"};
    QTest::newRow("633 command line and cwd")
        << QByteArray("\x1b]633;E;make -j8\x07\x1b]633;P;Cwd=/tmp/x\x07")
        << QStringList{"E@0-17[make -j8]", "cwd@17-36[/tmp/x]"};
    QTest::newRow("OSC 7 with a host, percent-encoded")
        << QByteArray("\x1b]7;file://host/home/me/a%20b\x07")
        << QStringList{"cwd@0-30[/home/me/a b]"};
    QTest::newRow("notifications")
        << QByteArray("\x1b]9;build done\x07\x1b]777;notify;Title;Body\x07\x1b]99;i=1;hello\x1b\\")
        << QStringList{"notify@0-15[build done]", "notify@15-39[Title;Body]", "notify@39-55[hello]"};
    QTest::newRow("ConEmu progress is not a notification")
        << QByteArray("\x1b]9;4;1;50\x07") << QStringList{};
    QTest::newRow("bell outside sequences, not as a terminator")
        << QByteArray("a\x07" "b\x1b]0;title\x07" "c\x1b[1m\x07")
        << QStringList{"bell@1-2[]", "bell@18-19[]"};
    QTest::newRow("titles, clipboard, DCS: nothing")
        << QByteArray("\x1b]0;t\x07\x1b]52;c;QUJD\x07\x1bPq#0;1\x1b\\\x1b]8;;http://x\x07")
        << QStringList{};
    QTest::newRow("BEL inside a DCS is not a bell")
        << QByteArray("\x1bPab\x07" "cd\x1b\\") << QStringList{};
    QTest::newRow("CAN aborts an OSC")
        << QByteArray("\x1b]133;D;0\x18\x1b]133;A\x07") << QStringList{"A@10-18[]"};
    QTest::newRow("ESC ends an OSC, then starts the next")
        << QByteArray("\x1b]133;A\x1b]133;B\x07") << QStringList{"A@0-7[]", "B@7-15[]"};
    QTest::newRow("unknown 133 letters and numbers ignored")
        << QByteArray("\x1b]133;Z\x07\x1b]1330;A\x07\x1b]633;E\x07\x1b]133;AB\x07") << QStringList{"E@17-25[]"};
    QTest::newRow("OSC 7 without file:// ignored")
        << QByteArray("\x1b]7;/tmp\x07\x1b]7;file://host\x07") << QStringList{};
}

void TestShellMarks::marks()
{
    QFETCH(QByteArray, stream);
    QFETCH(QStringList, expected);
    QCOMPARE(scanned(stream), expected);
}

void TestShellMarks::anySplitGivesTheSame()
{
    QByteArray stream;
    for (int i = 0; i < 3; ++i)
        stream += QByteArray("\x1b]133;A\x07\x1b[1;32m$ \x1b[0m\x1b]133;B\x07\x1b]633;E;echo a\\x3bb\x07\x1b]133;C\x07"
                             "a;b\xc3\xa9\r\n\x07\x1b]7;file:///tmp\x1b\\\x1b]133;D;0\xc2\x9c");
    const QStringList whole = scanned(stream);
    QCOMPARE(whole.size(), 3 * 7);
    for (qsizetype piece = 1; piece <= 17; ++piece)
        QCOMPARE(scanned(stream, piece), whole);
}

void TestShellMarks::payloadIsBounded()
{
    // A program's marks are untrusted: an endless command line or status
    // is cut at kMaxPayload, and the scanner goes on as usual after it.
    const QByteArray huge = "\x1b]633;E;" + QByteArray(1 << 20, 'x') + "\x07\x1b]133;D;" + QByteArray(100000, '9')
        + "\x07\x1b]133;A\x07";
    ShellMarkScanner s;
    Collect c;
    s.scan(huge.constData(), huge.size(), 0, c);
    QCOMPARE(c.marks.size(), 3);
    QVERIFY(c.marks.at(0).endsWith(QLatin1Char('+')));
    QVERIFY(c.marks.at(1).endsWith(QLatin1Char('+')));
    QVERIFY(c.marks.at(2).startsWith(QLatin1String("A@")));
    QCOMPARE(c.longestPayload, ShellMarkScanner::kMaxPayload - 2); // "E;" is not part of the line
}

void TestShellMarks::noAllocationWhileScanning()
{
#ifdef TETHER_COUNT_ALLOCS
    QByteArray stream;
    for (int i = 0; i < 200; ++i)
        stream += QByteArray("\x1b]133;A\x07$ \x1b]133;B\x07\x1b]633;E;make\x07\x1b]133;C\x07out\x07\r\n"
                             "\x1b]7;file://h/tmp%20x\x07\x1b]9;done\x07\x1b]133;D;0\x07\x1b[31mred\x1b[0m");
    stream += "\x1b]633;E;" + QByteArray(100000, 'y') + "\x07";
    ShellMarkScanner s;
    struct Count : ShellMarkScanner::Handler {
        int n = 0;
        void shellMark(const ShellMark &) override { ++n; }
    } count;
    QCOMPARE(allocationsDuring(oneAllocation), 1L); // the counter works
    const long allocs = allocationsDuring([&] {
        for (qsizetype i = 0; i < stream.size(); i += 7)
            s.scan(stream.constData() + i, std::min<qsizetype>(7, stream.size() - i), quint64(i), count);
    });
    QCOMPARE(allocs, 0L);
    QCOMPARE(count.n, 200 * 8 + 1);
#else
    QSKIP("no allocation counter here");
#endif
    noAllocation();
}

void TestShellMarks::vsCodeEscapes_data()
{
    QTest::addColumn<QByteArray>("in");
    QTest::addColumn<QByteArray>("out");
    QTest::newRow("plain") << QByteArray("make -j8") << QByteArray("make -j8");
    QTest::newRow("semicolon and backslash") << QByteArray("a\\x3bb\\\\c") << QByteArray("a;b\\c");
    QTest::newRow("newline") << QByteArray("for x\\x0ado") << QByteArray("for x\ndo");
    QTest::newRow("nonce after ;") << QByteArray("ls;abc123") << QByteArray("ls");
    QTest::newRow("bad escape kept") << QByteArray("a\\xZZ\\") << QByteArray("a\\xZZ\\");
}

void TestShellMarks::vsCodeEscapes()
{
    QFETCH(QByteArray, in);
    QFETCH(QByteArray, out);
    QCOMPARE(Tether::decodeVsCodeEscapes(in), out);
}

QTEST_APPLESS_MAIN(TestShellMarks)
#include "tst_shellmarks.moc"
