// SPDX-License-Identifier: GPL-2.0-or-later
// isLoopbackHost, the one loopback predicate the bind policy, the client's
// proxy choice and the Settings dialog share (issue 28).
#include "loopback.h"

#include <QTest>

using namespace Tether;

class TestLoopback : public QObject
{
    Q_OBJECT
private Q_SLOTS:
    void isLoopbackHost_data()
    {
        QTest::addColumn<QString>("host");
        QTest::addColumn<bool>("loopback");
        QTest::newRow("localhost") << QStringLiteral("localhost") << true;
        QTest::newRow("LocalHost") << QStringLiteral("LocalHost") << true;
        QTest::newRow("spaces") << QStringLiteral("  127.0.0.1 ") << true;
        QTest::newRow("127.0.0.1") << QStringLiteral("127.0.0.1") << true;
        QTest::newRow("127.255.0.9") << QStringLiteral("127.255.0.9") << true;
        QTest::newRow("::1") << QStringLiteral("::1") << true;
        QTest::newRow("[::1]") << QStringLiteral("[::1]") << true;
        QTest::newRow("long ::1") << QStringLiteral("0:0:0:0:0:0:0:1") << true;
        QTest::newRow("mapped") << QStringLiteral("::ffff:127.0.0.1") << true;
        QTest::newRow("mapped hex") << QStringLiteral("[::ffff:7f00:1]") << true;
        QTest::newRow("empty") << QString() << false;
        QTest::newRow("wildcard v4") << QStringLiteral("0.0.0.0") << false;
        QTest::newRow("wildcard v6") << QStringLiteral("::") << false;
        QTest::newRow("lan") << QStringLiteral("192.168.1.5") << false;
        QTest::newRow("128.0.0.1") << QStringLiteral("128.0.0.1") << false;
        QTest::newRow("mapped lan") << QStringLiteral("::ffff:10.0.0.1") << false;
        QTest::newRow("compat") << QStringLiteral("::127.0.0.1") << false;
        QTest::newRow("::2") << QStringLiteral("::2") << false;
        QTest::newRow("short form") << QStringLiteral("127.1") << false;
        QTest::newRow("name") << QStringLiteral("localhost.example") << false;
        QTest::newRow("sub localhost") << QStringLiteral("a.localhost") << false;
        QTest::newRow("half bracket") << QStringLiteral("[::1") << false;
        QTest::newRow("non-Latin-1") << QStringLiteral("127.0.0.1\u2024") << false;
    }
    void isLoopbackHost()
    {
        QFETCH(QString, host);
        QFETCH(bool, loopback);
        QCOMPARE(Tether::isLoopbackHost(host), loopback);
    }
};

QTEST_GUILESS_MAIN(TestLoopback)
#include "tst_loopback.moc"
