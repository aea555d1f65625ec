// SPDX-License-Identifier: GPL-2.0-or-later
// Single-instance election and hand-off over a QLocalSocket in a temp runtime dir.
#include "singleinstance.h"

#include <QFile>
#include <QFileInfo>
#include <QLocalServer>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTest>

using namespace Tether;

class TestSingleInstance : public QObject
{
    Q_OBJECT
private Q_SLOTS:
    void secondLaunchRaisesFirst();
    void staleLockAndSocketAreTakenOver();
    void primaryGoneAfterLockFails();
    void defaultsToRuntimeDir();
};

void TestSingleInstance::secondLaunchRaisesFirst()
{
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    SingleInstance first(dir.path());
    QVERIFY(first.claim());
    QVERIFY(first.isPrimary());
    QVERIFY(QFileInfo(first.socketPath()).exists());
    // Only the user may connect.
    QCOMPARE(QFileInfo(first.socketPath()).permissions() & (QFile::ReadOther | QFile::WriteOther), QFile::Permissions());

    QSignalSpy raised(&first, &SingleInstance::raiseRequested);
    SingleInstance second(dir.path());
    QVERIFY(!second.claim());
    QVERIFY(!second.isPrimary());
    QCOMPARE(second.primaryPid(), QCoreApplication::applicationPid());
    QSignalSpy done(&second, &SingleInstance::handOffFinished);
    second.requestRaise();
    QVERIFY(done.wait(5000));
    QCOMPARE(done.count(), 1);
    QCOMPARE(done.at(0).at(0).toBool(), true);
    QCOMPARE(raised.count(), 1);

    // Again: each launch raises once.
    SingleInstance third(dir.path());
    QVERIFY(!third.claim());
    QSignalSpy done3(&third, &SingleInstance::handOffFinished);
    third.requestRaise();
    QVERIFY(done3.wait(5000));
    QCOMPARE(done3.at(0).at(0).toBool(), true);
    QCOMPARE(raised.count(), 2);
}

void TestSingleInstance::staleLockAndSocketAreTakenOver()
{
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    QString sock, lock;
    {
        SingleInstance probe(dir.path());
        sock = probe.socketPath();
        lock = probe.lockPath();
    }
    // A crashed instance leaves a lock naming a dead pid and a socket file.
    {
        QFile f(lock);
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write("999999\ntether\n" + QSysInfo::machineHostName().toUtf8() + "\n");
    }
    {
        QFile f(sock);
        QVERIFY(f.open(QIODevice::WriteOnly));
    }
    SingleInstance next(dir.path());
    QString error;
    QVERIFY(next.claim(&error));
    QVERIFY2(error.isEmpty(), qPrintable(error));
    QVERIFY(next.isPrimary());
    QSignalSpy raised(&next, &SingleInstance::raiseRequested);
    SingleInstance second(dir.path());
    QVERIFY(!second.claim());
    QSignalSpy done(&second, &SingleInstance::handOffFinished);
    second.requestRaise();
    QVERIFY(done.wait(5000));
    QVERIFY(done.at(0).at(0).toBool());
    QCOMPARE(raised.count(), 1);
}

void TestSingleInstance::primaryGoneAfterLockFails()
{
    // The lock is held but nobody answers: the hand-off fails within its
    // timeout instead of hanging.
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    SingleInstance holder(dir.path());
    QVERIFY(holder.claim());
    QLocalServer::removeServer(holder.socketPath()); // deaf primary
    SingleInstance second(dir.path());
    QVERIFY(!second.claim());
    QSignalSpy done(&second, &SingleInstance::handOffFinished);
    second.requestRaise();
    QVERIFY(done.wait(SingleInstance::kHandOffTimeoutMs + 3000));
    QCOMPARE(done.at(0).at(0).toBool(), false);
}

void TestSingleInstance::defaultsToRuntimeDir()
{
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    QFile::setPermissions(dir.path(), QFile::ReadOwner | QFile::WriteOwner | QFile::ExeOwner);
    qputenv("XDG_RUNTIME_DIR", dir.path().toLocal8Bit());
    SingleInstance s;
    QCOMPARE(QFileInfo(s.socketPath()).absolutePath(), QFileInfo(dir.path()).absoluteFilePath());
    QVERIFY(s.claim());
}

QTEST_GUILESS_MAIN(TestSingleInstance)
#include "tst_singleinstance.moc"
