// SPDX-License-Identifier: GPL-2.0-or-later
// SignalPipe: real signals sent to this process arrive on the event loop; an
// inherited blocked mask is undone; previous dispositions come back.
#include "signalpipe.h"
#include "testutil.h"

#include <QSignalSpy>
#include <QtTest>

#include <csignal>

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

    void uncatchableSignalFails()
    {
        SignalPipe pipe({SIGUSR1, SIGKILL});
        QVERIFY(!pipe.isValid());
        QVERIFY2(pipe.errorString().contains(QString::number(SIGKILL)), qPrintable(pipe.errorString()));
    }
};

QTEST_GUILESS_MAIN(TestSignalPipe)
#include "tst_signalpipe.moc"
