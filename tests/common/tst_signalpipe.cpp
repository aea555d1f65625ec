// SPDX-License-Identifier: GPL-2.0-or-later
// SignalPipe: real signals sent to this process arrive on the event loop; an
// inherited blocked mask is undone; previous dispositions come back.
#include "signalpipe.h"
#include "testutil.h"

#include <QProcess>
#include <QSignalSpy>
#include <QtTest>

#include <csignal>
#include <unistd.h>

using namespace Tether;

namespace {
volatile sig_atomic_t g_previousHandlerRan = 0;
void previousHandler(int) { g_previousHandlerRan = 1; }

bool isBlocked(int sig)
{
    sigset_t cur;
    ::pthread_sigmask(SIG_BLOCK, nullptr, &cur);
    return sigismember(&cur, sig) == 1;
}
} // namespace

class TestSignalPipe : public QObject
{
    Q_OBJECT
private Q_SLOTS:
    void deliversInOrderOnTheEventLoop()
    {
        const int fds = TestUtil::openFdCount();
        {
            SignalPipe pipe({SIGUSR1, SIGUSR2});
            QVERIFY2(pipe.isValid(), qPrintable(pipe.errorString()));
            QSignalSpy spy(&pipe, &SignalPipe::received);
            QCOMPARE(::kill(::getpid(), SIGUSR1), 0);
            QTRY_COMPARE(spy.count(), 1);
            QCOMPARE(::kill(::getpid(), SIGUSR2), 0);
            QTRY_COMPARE(spy.count(), 2);
            QCOMPARE(spy.at(0).at(0).toInt(), SIGUSR1);
            QCOMPARE(spy.at(1).at(0).toInt(), SIGUSR2);
            QVERIFY(::signal(SIGPIPE, SIG_IGN) == SIG_IGN); // set by the pipe
        }
        QCOMPARE(TestUtil::openFdCount(), fds); // both ends closed
    }

    void unblocksAnInheritedMask()
    {
        // A parent that blocked SIGTERM: the mask survives fork and exec.
        sigset_t block, old;
        sigemptyset(&block);
        sigaddset(&block, SIGUSR1);
        QCOMPARE(::pthread_sigmask(SIG_BLOCK, &block, &old), 0);
        QVERIFY(isBlocked(SIGUSR1));
        {
            SignalPipe pipe({SIGUSR1});
            QVERIFY(pipe.isValid());
            QVERIFY(!isBlocked(SIGUSR1));
            QSignalSpy spy(&pipe, &SignalPipe::received);
            QCOMPARE(::kill(::getpid(), SIGUSR1), 0);
            QTRY_COMPARE(spy.count(), 1);
        }
        QCOMPARE(::pthread_sigmask(SIG_SETMASK, &old, nullptr), 0);
    }

    void restoresPreviousDisposition()
    {
        struct sigaction sa {}, old {};
        sa.sa_handler = previousHandler;
        sigemptyset(&sa.sa_mask);
        QCOMPARE(::sigaction(SIGUSR2, &sa, &old), 0);
        {
            SignalPipe pipe({SIGUSR2});
            QVERIFY(pipe.isValid());
            QSignalSpy spy(&pipe, &SignalPipe::received);
            QCOMPARE(::kill(::getpid(), SIGUSR2), 0);
            QTRY_COMPARE(spy.count(), 1);
            QCOMPARE(int(g_previousHandlerRan), 0);
        }
        QCOMPARE(::kill(::getpid(), SIGUSR2), 0); // synchronous for a signal to ourselves
        QTRY_COMPARE(int(g_previousHandlerRan), 1);
        ::sigaction(SIGUSR2, &old, nullptr);
    }

    void oneAtATimeAndUncatchableRefused()
    {
        SignalPipe first({SIGUSR1});
        QVERIFY(first.isValid());
        SignalPipe second({SIGUSR2});
        QVERIFY(!second.isValid());
        QVERIFY(!second.errorString().isEmpty());
        // The failed second one leaves the first working.
        QSignalSpy spy(&first, &SignalPipe::received);
        QCOMPARE(::kill(::getpid(), SIGUSR1), 0);
        QTRY_COMPARE(spy.count(), 1);
    }

    void namesTheSender()
    {
        // SA_SIGINFO: the pid and uid of the process that sent it, and its
        // command line while it still runs (issue 10: "shutting down" named
        // neither the signal nor who sent it).
        SignalPipe pipe({SIGUSR1});
        QVERIFY(pipe.isValid());
        QSignalSpy spy(&pipe, &SignalPipe::receivedInfo);
        QSignalSpy plain(&pipe, &SignalPipe::received);
        QProcess sender;
        // ": " last, so that sh forks sleep instead of exec'ing it: the sender
        // keeps its command line while the test reads it.
        const QString script = QStringLiteral("kill -USR1 %1; sleep 30; :").arg(::getpid());
        sender.start(QStringLiteral("/bin/sh"), {QStringLiteral("-c"), script});
        QVERIFY(sender.waitForStarted());
        QTRY_COMPARE(spy.count(), 1);
        QCOMPARE(plain.count(), 1);
        const SignalInfo info = spy.at(0).at(0).value<SignalInfo>();
        QCOMPARE(info.number, SIGUSR1);
        QCOMPARE(info.code, int(SI_USER));
        QVERIFY(info.fromProcess());
        QCOMPARE(qint64(info.senderPid), sender.processId());
        QCOMPARE(info.senderUid, ::getuid());
        QCOMPARE(info.describe(), QStringLiteral("SIGUSR1 from pid %1 (/bin/sh -c %2), uid %3")
                                      .arg(sender.processId()).arg(script).arg(::getuid()));
        sender.kill();
        sender.waitForFinished();

        // A sender that is gone by the time the event loop gets to it.
        QProcess quick;
        quick.start(QStringLiteral("/bin/sh"), {QStringLiteral("-c"), QStringLiteral("kill -USR1 %1").arg(::getpid())});
        QVERIFY(quick.waitForStarted());
        const qint64 quickPid = quick.processId();
        QVERIFY(quick.waitForFinished()); // reaped: no /proc entry left
        QTRY_COMPARE(spy.count(), 2);
        const SignalInfo gone = spy.at(1).at(0).value<SignalInfo>();
        QCOMPARE(qint64(gone.senderPid), quickPid);
        QCOMPARE(gone.describe(), QStringLiteral("SIGUSR1 from pid %1 (gone), uid %2").arg(quickPid).arg(::getuid()));
    }

    void signalNames_data()
    {
        QTest::addColumn<int>("number");
        QTest::addColumn<QString>("name");
        QTest::newRow("SIGTERM") << int(SIGTERM) << QStringLiteral("SIGTERM");
        QTest::newRow("SIGHUP") << int(SIGHUP) << QStringLiteral("SIGHUP");
        QTest::newRow("SIGINT") << int(SIGINT) << QStringLiteral("SIGINT");
        QTest::newRow("SIGUSR2") << int(SIGUSR2) << QStringLiteral("SIGUSR2");
        QTest::newRow("unnamed") << 40 << QStringLiteral("signal 40");
    }
    void signalNames()
    {
        QFETCH(int, number);
        QFETCH(QString, name);
        QCOMPARE(signalName(number), name);
    }

    void uncatchableSignalFails()
    {
        SignalPipe pipe({SIGUSR1, SIGKILL});
        QVERIFY(!pipe.isValid());
        QVERIFY2(pipe.errorString().contains(QString::number(SIGKILL)), qPrintable(pipe.errorString()));
    }
};

QTEST_GUILESS_MAIN(TestSignalPipe)
#include "tst_signalpipe.moc"
