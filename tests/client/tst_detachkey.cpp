// SPDX-License-Identifier: GPL-2.0-or-later
// DetachKeyFilter and parseDetachKey: where the detach key cuts a chunk of
// raw keyboard input. (tst_cli checks parsing through the binary's usage
// errors too.)
#include "detachkey.h"

#include <QTest>

using namespace Tether;

class TestDetachKey : public QObject
{
    Q_OBJECT
private Q_SLOTS:
    void scan_data()
    {
        QTest::addColumn<QString>("key");
        QTest::addColumn<QByteArray>("input");
        QTest::addColumn<int>("before"); // bytes sent before the key
        QTest::addColumn<bool>("hit");
        QTest::newRow("default key alone") << QStringLiteral("^\\") << QByteArray("\x1c") << 0 << true;
        QTest::newRow("typing, then the key, then more") << QStringLiteral("^\\") << QByteArray("ls\x1cxyz") << 2 << true;
        QTest::newRow("no key in the chunk") << QStringLiteral("^\\") << QByteArray("echo hi\r") << 8 << false;
        QTest::newRow("arrow keys are not ^]") << QStringLiteral("^]") << QByteArray("\x1b[A\x1b[B") << 6 << false;
        QTest::newRow("^] found after an arrow") << QStringLiteral("^]") << QByteArray("\x1b[A\x1d") << 3 << true;
        QTest::newRow("UTF-8 never holds a control byte") << QStringLiteral("^X") << QByteArray("\xc3\x98\xe2\x98\x83") << 5 << false;
        QTest::newRow("first of two keys") << QStringLiteral("^X") << QByteArray("a\x18" "b\x18") << 1 << true;
        QTest::newRow("none: never") << QStringLiteral("none") << QByteArray("\x1c\x18\x1d") << 3 << false;
        QTest::newRow("empty chunk") << QStringLiteral("^\\") << QByteArray() << 0 << false;
    }

    void scan()
    {
        QFETCH(QString, key);
        QFETCH(QByteArray, input);
        QFETCH(int, before);
        QFETCH(bool, hit);
        int k = 0;
        QVERIFY(parseDetachKey(key, &k));
        const DetachKeyFilter f(k);
        QCOMPARE(f.key(), k);
        bool found = !hit;
        QCOMPARE(f.scan(input.constData(), input.size(), &found), qsizetype(before));
        QCOMPARE(found, hit);
    }

    void parse_data()
    {
        QTest::addColumn<QString>("text");
        QTest::addColumn<int>("key"); // -2: refused
        QTest::newRow("^\\") << QStringLiteral("^\\") << 0x1c;
        QTest::newRow("^x lower case") << QStringLiteral("^x") << 0x18;
        QTest::newRow("^@ is NUL") << QStringLiteral("^@") << 0x00;
        QTest::newRow("^_") << QStringLiteral("^_") << 0x1f;
        QTest::newRow("literal Ctrl-X") << QString(QChar(0x18)) << 0x18;
        QTest::newRow("none") << QStringLiteral("NONE") << -1;
        QTest::newRow("printable") << QStringLiteral("x") << -2;
        QTest::newRow("^[ ESC") << QStringLiteral("^[") << -2;
        QTest::newRow("^M Enter") << QStringLiteral("^M") << -2;
        QTest::newRow("^? DEL") << QStringLiteral("^?") << -2;
        QTest::newRow("^1") << QStringLiteral("^1") << -2;
        QTest::newRow("empty") << QString() << -2;
    }

    void parse()
    {
        QFETCH(QString, text);
        QFETCH(int, key);
        int k = 1234;
        QString why;
        QCOMPARE(parseDetachKey(text, &k, &why), key != -2);
        if (key == -2) {
            QCOMPARE(k, 1234); // untouched
            QVERIFY(!why.isEmpty());
        } else {
            QCOMPARE(k, key);
            QVERIFY(why.isEmpty());
        }
    }
};

QTEST_GUILESS_MAIN(TestDetachKey)
#include "tst_detachkey.moc"
