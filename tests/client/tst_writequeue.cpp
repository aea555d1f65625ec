// SPDX-License-Identifier: GPL-2.0-or-later
// WriteQueue, the non-blocking writer behind `tether attach`'s stdout and the
// terminal window's PTY: real pipes, socket pairs and PTYs, nobody reading or
// reading slowly; watermarks, EAGAIN, EPIPE/EIO, chunking, wakeup budget,
// allocations.
#include "alloccounter.h"
#include "writequeue.h"

#include <QElapsedTimer>
#include <QSignalSpy>
#include <QTest>

#include <cerrno>
#include <csignal>
#include <fcntl.h>
#include <pty.h>
#include <sys/socket.h>
#include <unistd.h>

using namespace Tether;

namespace {

/// A pipe with a small buffer (one page): its write end is non-blocking.
struct Pipe {
    int r = -1;
    int w = -1;
    Pipe()
    {
        int fds[2];
        if (::pipe2(fds, O_CLOEXEC) != 0)
            return;
        r = fds[0];
        w = fds[1];
        ::fcntl(w, F_SETPIPE_SZ, 4096);
        ::fcntl(w, F_SETFL, ::fcntl(w, F_GETFL) | O_NONBLOCK);
        ::fcntl(r, F_SETFL, ::fcntl(r, F_GETFL) | O_NONBLOCK);
    }
    ~Pipe()
    {
        closeRead();
        if (w >= 0)
            ::close(w);
    }
    void closeRead()
    {
        if (r >= 0)
            ::close(r);
        r = -1;
    }
    /// Everything readable now (non-blocking).
    QByteArray readSome(qsizetype max = 1 << 20)
    {
        QByteArray out;
        char buf[65536];
        while (out.size() < max) {
            const ssize_t n = ::read(r, buf, size_t(qMin<qsizetype>(sizeof buf, max - out.size())));
            if (n <= 0)
                break;
            out.append(buf, int(n));
        }
        return out;
    }
    qsizetype capacity() const { return ::fcntl(w, F_GETPIPE_SZ); }
};

/// Runs `step` and the event loop (the queue's notifier) until `step`
/// returns true; false after `timeoutMs`. No fixed sleeps: a reader that
/// reads as fast as the writer writes.
template<typename F> bool pump(F &&step, int timeoutMs = 20000)
{
    QElapsedTimer t;
    t.start();
    while (!step()) {
        if (t.elapsed() > timeoutMs)
            return false;
        QCoreApplication::processEvents(QEventLoop::AllEvents);
    }
    return true;
}

QByteArray pattern(qsizetype size, int seed = 0)
{
    QByteArray b(size, Qt::Uninitialized);
    for (qsizetype i = 0; i < size; ++i)
        b.data()[i] = char('a' + (i + seed) % 26);
    return b;
}

} // namespace

class TestWriteQueue : public QObject
{
    Q_OBJECT
private Q_SLOTS:
    void initTestCase()
    {
        // EPIPE must come back as an error, not kill the test (as `tether
        // attach` and the app ignore SIGPIPE too).
        ::signal(SIGPIPE, SIG_IGN);
    }

    void writesAtOnceWhenTheFdTakesIt()
    {
        Pipe p;
        QVERIFY(p.w >= 0);
        WriteQueue q(p.w, 1000, 100);
        QSignalSpy progressed(&q, &WriteQueue::progressed);
        q.append(QByteArrayLiteral("hello "));
        q.append("world", 5);
        QCOMPARE(q.pending(), 0);
        QCOMPARE(q.written(), quint64(11));
        QCOMPARE(q.end(), quint64(11));
        QCOMPARE(progressed.count(), 2);
        QCOMPARE(p.readSome(), QByteArrayLiteral("hello world"));
    }

    void queuesOnEagainAndDrainsInOrder()
    {
        Pipe p;
        const qsizetype cap = p.capacity();
        QVERIFY(cap > 0);
        WriteQueue q(p.w, 1 << 30, 1 << 29);
        QSignalSpy drained(&q, &WriteQueue::drained);
        const QByteArray a = pattern(300 * 1024, 0);
        const QByteArray b = pattern(77 * 1024 + 5, 7);
        q.append(a);                            // shared
        q.append(b.constData(), b.size());      // copied
        QVERIFY(q.written() <= quint64(cap));   // the pipe took what fits, no more
        QCOMPARE(q.pending(), a.size() + b.size() - qsizetype(q.written()));
        QVERIFY(q.pending() > 0);
        QCOMPARE(drained.count(), 0);
        // A slow reader: the notifier writes more as the pipe empties.
        QByteArray got;
        QVERIFY(pump([&]() { got += p.readSome(1000); return got.size() == a.size() + b.size(); }));
        QVERIFY(got == a + b);
        QCOMPARE(q.pending(), 0);
        QCOMPARE(drained.count(), 1);
        QCOMPARE(q.written(), quint64(a.size() + b.size()));
    }

    void watermarks_data()
    {
        QTest::addColumn<qsizetype>("high");
        QTest::addColumn<qsizetype>("low");
        QTest::newRow("64k/16k") << qsizetype(64 * 1024) << qsizetype(16 * 1024);
        QTest::newRow("attach: 4M/256k") << qsizetype(4 * 1024 * 1024) << qsizetype(256 * 1024);
        QTest::newRow("window: 1M/256k") << qsizetype(1024 * 1024) << qsizetype(256 * 1024);
    }

    void watermarks()
    {
        QFETCH(qsizetype, high);
        QFETCH(qsizetype, low);
        Pipe p;
        WriteQueue q(p.w, high, low);
        QSignalSpy blocked(&q, &WriteQueue::blockedChanged);
        // Up to the high watermark: not blocked.
        const QByteArray chunk = pattern(8192);
        while (q.pending() + chunk.size() <= high)
            q.append(chunk);
        QCOMPARE(blocked.count(), 0);
        QVERIFY(!q.isBlocked());
        // Over it: blocked, once, however much more comes.
        q.append(chunk);
        QCOMPARE(blocked.count(), 1);
        QCOMPARE(blocked.at(0).at(0).toBool(), true);
        q.append(chunk);
        q.append(chunk);
        QCOMPARE(blocked.count(), 1);
        QVERIFY(q.isBlocked());
        // Draining to just above the low watermark: still blocked (no flapping).
        QVERIFY(pump([&]() { p.readSome(4096); return q.pending() < low + 16384; }));
        if (q.pending() >= low)
            QCOMPARE(blocked.count(), 1);
        // Under the low watermark: unblocked, once.
        QVERIFY(pump([&]() { p.readSome(); return q.pending() == 0; }));
        QCOMPARE(blocked.count(), 2);
        QCOMPARE(blocked.at(1).at(0).toBool(), false);
        QVERIFY(!q.isBlocked());
    }

    void clearDropsPendingAndUnblocks()
    {
        Pipe p;
        WriteQueue q(p.w, 10000, 1000);
        QSignalSpy blocked(&q, &WriteQueue::blockedChanged);
        q.append(pattern(50000));
        QVERIFY(q.isBlocked());
        const quint64 written = q.written();
        q.clear();
        QCOMPARE(q.pending(), 0);
        QCOMPARE(q.end(), written); // dropped bytes are not part of the stream
        QCOMPARE(blocked.count(), 2);
        QVERIFY(!q.isBlocked());
        // Nothing more arrives than what was written before the clear, and
        // the queue goes on working: what it writes next follows at once
        // (a marker through the same pipe: a dropped byte written late
        // would come before it).
        q.append(QByteArrayLiteral("next"));
        QByteArray got;
        QVERIFY(pump([&]() { got += p.readSome(); return got.endsWith("next"); }));
        QCOMPARE(quint64(got.size()), written + 4);
    }

    void epipeFailsOnce()
    {
        Pipe p;
        WriteQueue q(p.w, 1000, 100);
        QSignalSpy failed(&q, &WriteQueue::failed);
        p.closeRead(); // nobody reads any more
        q.append(QByteArrayLiteral("lost"));
        QCOMPARE(failed.count(), 1);
        QCOMPARE(failed.at(0).at(0).toInt(), EPIPE);
        QVERIFY(q.hasFailed());
        QCOMPARE(q.error(), EPIPE);
        QCOMPARE(q.pending(), 0);
        q.append(QByteArrayLiteral("more"));
        q.append("and more", 8);
        QCOMPARE(failed.count(), 1);
        QCOMPARE(q.pending(), 0);
    }

    void epipeWhileQueued()
    {
        // The reader goes away while bytes wait: the notifier's write fails.
        Pipe p;
        WriteQueue q(p.w, 1 << 20, 1 << 19);
        QSignalSpy failed(&q, &WriteQueue::failed);
        q.append(pattern(100000));
        QVERIFY(q.pending() > 0);
        p.readSome(1000); // room again: the notifier fires...
        p.closeRead();    // ...into a pipe nobody reads
        QTRY_COMPARE(failed.count(), 1);
        QCOMPARE(failed.at(0).at(0).toInt(), EPIPE);
        QCOMPARE(q.pending(), 0);
        QTest::qWait(20); // a negative check (failed() once), after the first failure
        QCOMPARE(failed.count(), 1);
    }

    void eioWhenTheTerminalHangsUp()
    {
        int master = -1, slave = -1;
        QVERIFY(::openpty(&master, &slave, nullptr, nullptr, nullptr) == 0);
        ::fcntl(slave, F_SETFL, ::fcntl(slave, F_GETFL) | O_NONBLOCK);
        WriteQueue q(slave, 1000, 100);
        QSignalSpy failed(&q, &WriteQueue::failed);
        q.append(QByteArrayLiteral("before\n"));
        QCOMPARE(failed.count(), 0);
        ::close(master); // the terminal is gone
        q.append(QByteArrayLiteral("after\n"));
        QCOMPARE(failed.count(), 1);
        QCOMPARE(failed.at(0).at(0).toInt(), EIO);
        ::close(slave);
    }

    void chunksAndWakeupBudget_data()
    {
        QTest::addColumn<qsizetype>("chunk");
        QTest::addColumn<qsizetype>("budget");
        QTest::addColumn<qsizetype>("total");
        QTest::newRow("window: 16k chunks, 256k a wakeup") << qsizetype(16384) << qsizetype(262144) << qsizetype(600000);
        QTest::newRow("1000 / 5000") << qsizetype(1000) << qsizetype(5000) << qsizetype(20500);
        QTest::newRow("no budget") << qsizetype(4096) << qsizetype(0) << qsizetype(40000);
    }

    void chunksAndWakeupBudget()
    {
        QFETCH(qsizetype, chunk);
        QFETCH(qsizetype, budget);
        QFETCH(qsizetype, total);
        // SOCK_SEQPACKET keeps each write(2) one message: the reader sees the
        // chunks as written.
        int sv[2];
        QVERIFY(::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) == 0);
        int sndbuf = 4 * 1024 * 1024;
        ::setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof sndbuf);
        ::fcntl(sv[0], F_SETFL, ::fcntl(sv[0], F_GETFL) | O_NONBLOCK);
        ::fcntl(sv[1], F_SETFL, ::fcntl(sv[1], F_GETFL) | O_NONBLOCK);
        {
            WriteQueue q(sv[0], 1 << 30, 1 << 29);
            q.setChunkSize(chunk);
            q.setWakeupBudget(budget);
            const QByteArray data = pattern(total);
            q.append(data);
            // One wakeup writes at most the budget (the reader, on this
            // thread, gets its turn in between).
            if (budget > 0)
                QCOMPARE(qsizetype(q.written()), qMin(budget, total));
            QByteArray got;
            QList<qsizetype> sizes;
            QByteArray buf(1 << 20, Qt::Uninitialized);
            QVERIFY(pump([&]() {
                ssize_t n;
                while ((n = ::read(sv[1], buf.data(), size_t(buf.size()))) > 0) {
                    sizes << qsizetype(n);
                    got.append(buf.constData(), int(n));
                }
                return got.size() == total;
            }));
            QVERIFY(got == data);
            for (qsizetype s : sizes)
                QVERIFY2(s <= chunk, QByteArray::number(qint64(s)).constData());
            QCOMPARE(sizes.size(), int((total + chunk - 1) / chunk));
        }
        ::close(sv[0]);
        ::close(sv[1]);
    }

    void noAllocationPerAppend()
    {
#ifdef TETHER_COUNT_ALLOCS
        // A stuck terminal and many small appends (keystroke echo, a TUI's
        // small writes): copies go into 64 KiB blocks, one allocation per
        // block, never one per append.
        Pipe p;
        WriteQueue q(p.w, 1 << 30, 1 << 29);
        q.append(pattern(int(p.capacity()))); // the pipe is full from here on
        const QByteArray small = pattern(10);
        q.append(small.constData(), small.size()); // first block
        const long allocs = allocationsDuring([&]() {
            for (int i = 0; i < 10000; ++i)
                q.append(small.constData(), small.size());
        });
        // 100 000 bytes: one more block (and a deque node).
        QVERIFY2(allocs <= 4, QByteArray::number(qint64(allocs)).constData());
        QCOMPARE(q.pending(), 10 * 10001);

        // A shared QByteArray is queued, not copied.
        const QByteArray big = pattern(1 << 20);
        const long sharedAllocs = allocationsDuring([&]() { q.append(big); });
        QVERIFY2(sharedAllocs <= 2, QByteArray::number(qint64(sharedAllocs)).constData());

        // Drained and refilled: the spare block is reused.
        QVERIFY(pump([&]() { p.readSome(); return q.pending() == 0; }));
        const long refill = allocationsDuring([&]() {
            for (int i = 0; i < 1000; ++i)
                q.append(small.constData(), small.size());
        });
        // 10 000 bytes into a 4 KiB pipe: the rest goes into the spare block
        // (no allocation); at most a deque node.
        QVERIFY2(refill <= 1, QByteArray::number(qint64(refill)).constData());
#else
        QSKIP("allocation counting needs glibc or AddressSanitizer");
#endif
    }

    void boundedByTheHolder()
    {
        // The holder stops its source while blocked: the queue never holds
        // more than the high watermark plus one append.
        Pipe p;
        const qsizetype high = 128 * 1024, low = 32 * 1024, piece = 8192;
        WriteQueue q(p.w, high, low);
        bool paused = false;
        connect(&q, &WriteQueue::blockedChanged, this, [&](bool b) { paused = b; });
        qsizetype produced = 0, consumed = 0, maxPending = 0;
        const qsizetype total = 4 * 1024 * 1024;
        const QByteArray chunk = pattern(piece);
        QVERIFY(pump([&]() {
            while (!paused && produced < total) {
                q.append(chunk);
                produced += piece;
                maxPending = qMax(maxPending, q.pending());
            }
            consumed += p.readSome(16384).size();
            return consumed == total;
        }));
        QVERIFY2(maxPending <= high + piece, QByteArray::number(qint64(maxPending)).constData());
    }
};

QTEST_GUILESS_MAIN(TestWriteQueue)
#include "tst_writequeue.moc"
