// SPDX-License-Identifier: GPL-2.0-or-later
// SessionConfig::maxSessionsLimit(): the ceiling of --max-sessions and
// sessions/maxSessions is the kernel's PTY limit, read from a file
// (/proc/sys/kernel/pty/max in the product; a temporary file here, so that
// no test depends on, or exhausts, the machine's pseudo-terminals).
#include "sessionconfig.h"

#include <QSettings>
#include <QTemporaryDir>
#include <QTest>

using namespace Tether;

class TestConfig : public QObject
{
    Q_OBJECT
private Q_SLOTS:
    void maxSessionsLimitIsTheKernelsPtyMax_data()
    {
        QTest::addColumn<QByteArray>("contents"); // "<missing>": no file
        QTest::addColumn<int>("limit");
        QTest::newRow("default kernel") << QByteArray("4096\n") << 4096;
        QTest::newRow("raised") << QByteArray("20000\n") << 20000;
        QTest::newRow("small") << QByteArray("8\n") << 8;
        QTest::newRow("one") << QByteArray("1\n") << 1;
        QTest::newRow("no newline") << QByteArray("512") << 512;
        QTest::newRow("kernel ceiling") << QByteArray("1048576\n") << 1048576;
        QTest::newRow("beyond the kernel ceiling") << QByteArray("99999999999\n") << SessionConfig::kPtyMaxCeiling;
        QTest::newRow("zero") << QByteArray("0\n") << SessionConfig::kDefaultPtyMax;
        QTest::newRow("negative") << QByteArray("-5\n") << SessionConfig::kDefaultPtyMax;
        QTest::newRow("garbage") << QByteArray("lots\n") << SessionConfig::kDefaultPtyMax;
        QTest::newRow("empty") << QByteArray() << SessionConfig::kDefaultPtyMax;
        QTest::newRow("missing") << QByteArray("<missing>") << SessionConfig::kDefaultPtyMax;
    }
    void maxSessionsLimitIsTheKernelsPtyMax()
    {
        QFETCH(QByteArray, contents);
        QFETCH(int, limit);
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        const QString path = dir.filePath(QStringLiteral("max"));
        if (contents != "<missing>") {
            QFile f(path);
            QVERIFY(f.open(QIODevice::WriteOnly));
            f.write(contents);
        }
        QCOMPARE(SessionConfig::maxSessionsLimit(path), limit);
    }

    /// The product reads the real file: on Linux the kernel's value.
    void maxSessionsLimitReadsProc()
    {
        QFile f(QLatin1String(SessionConfig::kPtyMaxFile));
        if (!f.open(QIODevice::ReadOnly))
            QSKIP("no /proc/sys/kernel/pty/max here");
        QCOMPARE(SessionConfig::maxSessionsLimit(), f.readAll().trimmed().toInt());
    }

    /// The settings file may ask for up to that limit; more is clamped to it.
    void settingsFileIsClampedToTheLimit_data()
    {
        QTest::addColumn<int>("asked");
        QTest::addColumn<int>("got");
        const int most = SessionConfig::maxSessionsLimit();
        QTest::newRow("1") << 1 << 1;
        QTest::newRow("the limit") << most << most;
        QTest::newRow("beyond") << most + 1 << most;
        QTest::newRow("0") << 0 << 1;
    }
    void settingsFileIsClampedToTheLimit()
    {
        QFETCH(int, asked);
        QFETCH(int, got);
        QTemporaryDir dir;
        QSettings s(dir.filePath(QStringLiteral("tether.conf")), QSettings::IniFormat);
        s.setValue(QStringLiteral("sessions/maxSessions"), asked);
        QCOMPARE(SessionConfig::load(s).limits.maxSessions, got);
    }
};

QTEST_GUILESS_MAIN(TestConfig)
#include "tst_config.moc"
