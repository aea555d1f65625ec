// SPDX-License-Identifier: GPL-2.0-or-later
// parseByteSize: the one text-to-bytes parser. Binary units, whole numbers,
// and no value past 2^63 - 1 (a wrapped multiplication once turned
// 17592186044417M into 1 MiB).
#include "bytesize.h"

#include <QtTest>

#include <limits>

using namespace Tether;

class TestByteSize : public QObject
{
    Q_OBJECT
private Q_SLOTS:
    void parse_data()
    {
        QTest::addColumn<QString>("text");
        QTest::addColumn<bool>("ok");
        QTest::addColumn<qint64>("bytes");
        QTest::addColumn<QString>("errorMentions");

        const qint64 max = std::numeric_limits<qint64>::max();
        auto good = [](const char *name, const QString &text, qint64 bytes) {
            QTest::newRow(name) << text << true << bytes << QString();
        };
        auto bad = [](const char *name, const QString &text, const char *mentions) {
            QTest::newRow(name) << text << false << qint64(0) << QString::fromLatin1(mentions);
        };
        good("plain", QStringLiteral("65536"), 65536);
        good("zero", QStringLiteral("0"), 0);
        good("K", QStringLiteral("64K"), 64 * 1024);
        good("k", QStringLiteral("64k"), 64 * 1024);
        good("KiB", QStringLiteral("64KiB"), 64 * 1024);
        good("kib", QStringLiteral("64kib"), 64 * 1024);
        good("M", QStringLiteral("16M"), 16 << 20);
        good("MiB", QStringLiteral("16MiB"), 16 << 20);
        good("G", QStringLiteral("2G"), qint64(2) << 30);
        good("GiB", QStringLiteral("2GiB"), qint64(2) << 30);
        good("B", QStringLiteral("512B"), 512);
        good("blanks", QStringLiteral(" \t16 M "), 16 << 20);
        good("leading zeros", QStringLiteral("0001K"), 1024);
        // 2^63 boundaries, in each unit.
        good("2^63-1", QStringLiteral("9223372036854775807"), max);
        bad("2^63", QStringLiteral("9223372036854775808"), "too large");
        bad("2^64+1", QStringLiteral("18446744073709551617"), "too large");
        bad("many digits", QStringLiteral("99999999999999999999999999999"), "too large");
        good("2^63-2^10 in K", QStringLiteral("9007199254740991K"), max - 1023);
        bad("2^63 in K", QStringLiteral("9007199254740992K"), "too large");
        good("2^63-2^20 in M", QStringLiteral("8796093022207M"), max - (1 << 20) + 1);
        bad("2^63 in M", QStringLiteral("8796093022208M"), "too large");
        good("2^63-2^30 in G", QStringLiteral("8589934591G"), max - (1 << 30) + 1);
        bad("2^63 in G", QStringLiteral("8589934592G"), "too large");
        // 2^64 + 2^20: wrapped to 1 MiB in the old parser.
        bad("17592186044417M", QStringLiteral("17592186044417M"), "too large");
        bad("empty", QString(), "empty");
        bad("blank", QStringLiteral("  "), "empty");
        bad("-1", QStringLiteral("-1"), "negative");
        bad("-1K", QStringLiteral("-1K"), "negative");
        bad("+1", QStringLiteral("+1"), "not a size");
        bad("1Q", QStringLiteral("1Q"), "unknown unit");
        bad("1KK", QStringLiteral("1KK"), "unknown unit");
        bad("1 K B", QStringLiteral("1 K B"), "unknown unit");
        bad("1.5M", QStringLiteral("1.5M"), "whole number");
        bad("1,5M", QStringLiteral("1,5M"), "whole number");
        bad("KB is ambiguous", QStringLiteral("64KB"), "ambiguous");
        bad("MB is ambiguous", QStringLiteral("1MB"), "ambiguous");
        bad("unit only", QStringLiteral("M"), "not a size");
        bad("words", QStringLiteral("lots"), "not a size");
        bad("hex", QStringLiteral("0x10"), "unknown unit");
        bad("two numbers", QStringLiteral("1 2"), "unknown unit");
        bad("arabic-indic digits", QStringLiteral("\u0661\u0662"), "not a size");
    }

    void parse()
    {
        QFETCH(QString, text);
        QFETCH(bool, ok);
        QFETCH(qint64, bytes);
        QFETCH(QString, errorMentions);
        QString error = QStringLiteral("stale");
        const std::optional<qint64> got = parseByteSize(text, &error);
        QCOMPARE(got.has_value(), ok);
        if (ok) {
            QCOMPARE(*got, bytes);
            QVERIFY(error.isEmpty());
        } else {
            QVERIFY2(error.contains(errorMentions), qPrintable(error));
            if (!text.trimmed().isEmpty())
                QVERIFY2(error.contains(text), qPrintable(error)); // the user sees what was wrong
        }
        QCOMPARE(parseByteSize(text).has_value(), ok);
    }
};

QTEST_GUILESS_MAIN(TestByteSize)
#include "tst_bytesize.moc"
