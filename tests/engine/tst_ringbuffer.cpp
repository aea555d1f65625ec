// SPDX-License-Identifier: GPL-2.0-or-later
// RingBuffer: offsets, eviction order and content, wrap-around reads, memory
// growth. Content is checked byte-exact against a std::string model.
#include "ringbuffer.h"

#include <QRandomGenerator>
#include <QTest>

#include <atomic>
#include <cstring>
#include <limits>
#include <string>

#include "alloccounter.h"

using Tether::RingBuffer;

namespace {

// Model: every byte appended, and every byte the eviction handler saw.
struct Model
{
    std::string all;
    std::string evicted;
    int evictCalls = 0;
    size_t evictedChecked = 0; ///< prefix of `evicted` already compared
};

void attach(RingBuffer &ring, Model &m)
{
    ring.setEvictionHandler([&m](const char *data, qsizetype size) {
        QVERIFY(size > 0);
        m.evicted.append(data, size_t(size));
        ++m.evictCalls;
    });
}

std::string retained(const RingBuffer &ring)
{
    const auto parts = ring.spans(ring.startOffset(), ring.size());
    std::string s(parts.first.data ? parts.first.data : "", size_t(parts.first.size));
    if (parts.second.size)
        s.append(parts.second.data, size_t(parts.second.size));
    return s;
}

std::string randomBytes(QRandomGenerator &rng, qsizetype n, quint64 &counter)
{
    // Mostly a running counter (so misplaced bytes show up) with some noise.
    std::string s(size_t(n), '\0');
    for (auto &c : s)
        c = char((counter++ * 131u + (rng.bounded(4) == 0 ? rng.bounded(256) : 0)) & 0xff);
    return s;
}

// The core invariant: handler bytes + retained bytes == all appended bytes.
void checkAgainstModel(const RingBuffer &ring, Model &m)
{
    QCOMPARE(ring.endOffset(), quint64(m.all.size()));
    QCOMPARE(ring.startOffset(), quint64(m.evicted.size()));
    QVERIFY(ring.size() <= ring.capacity());
    QVERIFY(ring.allocated() <= ring.capacity());
    // Only the newly evicted bytes need comparing (keeps the test linear).
    QVERIFY(m.evicted.compare(m.evictedChecked, std::string::npos, m.all, m.evictedChecked,
                              m.evicted.size() - m.evictedChecked) == 0);
    m.evictedChecked = m.evicted.size();
    QVERIFY(m.all.compare(size_t(ring.startOffset()), std::string::npos, retained(ring)) == 0);
}

} // namespace

class TestRingBuffer : public QObject
{
    Q_OBJECT
private slots:
    void emptyBuffer();
    void simpleAppendAndRead();
    void wrapAroundReads();
    void readsFromEveryRetainedOffset();
    void outOfRangeReads();
    void appendLargerThanCapacity();
    void evictionHappensBeforeOverwrite();
    void setCapacityShrinkAndGrow();
    void randomizedAgainstModel_data();
    void randomizedAgainstModel();
    void memoryGrowsWithUse();
    void noAllocationOnceFull();
    void tinyCapacity();
    void noHeapAllocationOnceWarm();
    void restoreContinuesTheStream();
    void restoreRefusesBadInput();
};

void TestRingBuffer::emptyBuffer()
{
    RingBuffer ring(1024);
    QCOMPARE(ring.capacity(), qsizetype(1024));
    QCOMPARE(ring.startOffset(), quint64(0));
    QCOMPARE(ring.endOffset(), quint64(0));
    QCOMPARE(ring.size(), qsizetype(0));
    QCOMPARE(ring.allocated(), qsizetype(0)); // an idle buffer holds no storage
    const auto parts = ring.spans(0, 100);
    QCOMPARE(parts.first.size, qsizetype(0));
    QCOMPARE(parts.second.size, qsizetype(0));
    char buf[8];
    QCOMPARE(ring.read(0, buf, 8), qsizetype(0));
    ring.append("x", 0);
    ring.append(nullptr, 5);
    QCOMPARE(ring.endOffset(), quint64(0));
    QCOMPARE(ring.allocated(), qsizetype(0));
    QCOMPARE(RingBuffer(0).capacity(), qsizetype(1));
    QCOMPARE(RingBuffer(-7).capacity(), qsizetype(1));
}

void TestRingBuffer::simpleAppendAndRead()
{
    RingBuffer ring(16);
    Model m;
    attach(ring, m);
    ring.append("hello ", 6);
    ring.append("world", 5);
    QCOMPARE(ring.size(), qsizetype(11));
    QCOMPARE(ring.endOffset(), quint64(11));
    QCOMPARE(ring.startOffset(), quint64(0));
    char buf[32];
    QCOMPARE(ring.read(0, buf, 32), qsizetype(11));
    QCOMPARE(QByteArray(buf, 11), QByteArray("hello world"));
    QCOMPARE(ring.read(6, buf, 3), qsizetype(3));
    QCOMPARE(QByteArray(buf, 3), QByteArray("wor"));
    QCOMPARE(ring.at(4), 'o');
    QCOMPARE(m.evictCalls, 0);

    ring.append("0123456789", 10); // 21 > 16: "hello" evicted
    QCOMPARE(ring.startOffset(), quint64(5));
    QCOMPARE(ring.endOffset(), quint64(21));
    QCOMPARE(QByteArray::fromStdString(m.evicted), QByteArray("hello"));
    QCOMPARE(ring.read(5, buf, 32), qsizetype(16));
    QCOMPARE(QByteArray(buf, 16), QByteArray(" world0123456789"));
}

void TestRingBuffer::wrapAroundReads()
{
    RingBuffer ring(10);
    Model m;
    attach(ring, m);
    ring.append("abcdefg", 7);
    ring.append("hijklmn", 7); // storage holds 10, head moved: contents wrap
    QCOMPARE(ring.startOffset(), quint64(4));
    QCOMPARE(QByteArray::fromStdString(m.evicted), QByteArray("abcd"));
    const auto parts = ring.spans(ring.startOffset(), 100);
    QVERIFY(parts.first.size > 0);
    QVERIFY(parts.second.size > 0); // really wrapped
    QCOMPARE(parts.first.size + parts.second.size, qsizetype(10));
    QCOMPARE(QByteArray::fromStdString(retained(ring)), QByteArray("efghijklmn"));
    // A read straddling the wrap point.
    char buf[16];
    QCOMPARE(ring.read(5, buf, 8), qsizetype(8));
    QCOMPARE(QByteArray(buf, 8), QByteArray("fghijklm"));
    // maxBytes limits across the wrap too.
    const auto limited = ring.spans(5, 4);
    QCOMPARE(limited.first.size + limited.second.size, qsizetype(4));
    std::string s(limited.first.data, size_t(limited.first.size));
    s.append(limited.second.data ? limited.second.data : "", size_t(limited.second.size));
    QCOMPARE(QByteArray::fromStdString(s), QByteArray("fghi"));
}

void TestRingBuffer::readsFromEveryRetainedOffset()
{
    QRandomGenerator rng(1234);
    RingBuffer ring(257); // odd size: wrap points fall everywhere
    Model m;
    attach(ring, m);
    quint64 counter = 0;
    for (int round = 0; round < 40; ++round) {
        const std::string chunk = randomBytes(rng, rng.bounded(1, 120), counter);
        ring.append(chunk.data(), qsizetype(chunk.size()));
        m.all += chunk;
        checkAgainstModel(ring, m);
        std::string buf(300, '\0');
        for (quint64 off = ring.startOffset(); off < ring.endOffset(); ++off) {
            const qsizetype want = qsizetype(ring.endOffset() - off);
            QCOMPARE(ring.read(off, &buf[0], 300), want);
            QVERIFY(std::memcmp(buf.data(), m.all.data() + off, size_t(want)) == 0);
            QCOMPARE(ring.at(off), m.all[size_t(off)]);
            // Partial reads of every length starting here.
            const qsizetype len = qsizetype(rng.bounded(int(want) + 1));
            const auto parts = ring.spans(off, len);
            QCOMPARE(parts.first.size + parts.second.size, len);
            std::string s(parts.first.data ? parts.first.data : "", size_t(parts.first.size));
            s.append(parts.second.data ? parts.second.data : "", size_t(parts.second.size));
            QVERIFY(s == m.all.substr(size_t(off), size_t(len)));
        }
    }
}

void TestRingBuffer::outOfRangeReads()
{
    RingBuffer ring(8);
    ring.append("0123456789AB", 12); // retained [4, 12): "456789AB"
    QCOMPARE(ring.startOffset(), quint64(4));
    char buf[16] = {};
    // read() does not clamp: evicted or future offsets return 0.
    QCOMPARE(ring.read(0, buf, 16), qsizetype(0));
    QCOMPARE(ring.read(3, buf, 16), qsizetype(0));
    QCOMPARE(ring.read(12, buf, 16), qsizetype(0));
    QCOMPARE(ring.read(1000, buf, 16), qsizetype(0));
    QCOMPARE(ring.read(4, buf, 0), qsizetype(0));
    QCOMPARE(ring.read(4, buf, -1), qsizetype(0));
    QCOMPARE(ring.read(11, buf, 16), qsizetype(1));
    QCOMPARE(buf[0], 'B');
    // spans() clamps `from` up to startOffset().
    auto parts = ring.spans(0, 3);
    QCOMPARE(parts.first.size + parts.second.size, qsizetype(3));
    QCOMPARE(parts.first.data[0], '4');
    parts = ring.spans(12, 10);
    QCOMPARE(parts.first.size + parts.second.size, qsizetype(0));
    parts = ring.spans(99, 10);
    QCOMPARE(parts.first.size + parts.second.size, qsizetype(0));
    parts = ring.spans(5, -3);
    QCOMPARE(parts.first.size + parts.second.size, qsizetype(0));
}

void TestRingBuffer::appendLargerThanCapacity()
{
    RingBuffer ring(10);
    Model m;
    attach(ring, m);
    const std::string a = "abcdef";
    ring.append(a.data(), qsizetype(a.size()));
    m.all += a;
    const std::string big = "ABCDEFGHIJKLMNOPQRSTUVWXYZ";
    ring.append(big.data(), qsizetype(big.size()));
    m.all += big;
    checkAgainstModel(ring, m);
    QCOMPARE(QByteArray::fromStdString(retained(ring)), QByteArray("QRSTUVWXYZ"));
    QCOMPARE(QByteArray::fromStdString(m.evicted), QByteArray("abcdefABCDEFGHIJKLMNOP"));
    // Exactly capacity: everything old is evicted, nothing of the new.
    const std::string exact = "0123456789";
    ring.append(exact.data(), 10);
    m.all += exact;
    checkAgainstModel(ring, m);
    QCOMPARE(QByteArray::fromStdString(retained(ring)), QByteArray("0123456789"));
}

void TestRingBuffer::evictionHappensBeforeOverwrite()
{
    // The handler must see the old bytes, not the ones replacing them: check
    // the content it receives while the ring is at capacity and wrapping.
    RingBuffer ring(16);
    std::string seen;
    ring.setEvictionHandler([&](const char *d, qsizetype n) {
        for (qsizetype i = 0; i < n; ++i)
            QCOMPARE(d[i], 'a' + char((seen.size() + size_t(i)) % 26));
        seen.append(d, size_t(n));
    });
    std::string all;
    for (int i = 0; i < 200; ++i) {
        std::string chunk;
        for (int k = 0; k < (i % 7) + 1; ++k)
            chunk += char('a' + (all.size() + chunk.size()) % 26);
        ring.append(chunk.data(), qsizetype(chunk.size()));
        all += chunk;
    }
    QCOMPARE(seen.size() + size_t(ring.size()), all.size());
    QVERIFY(seen == all.substr(0, seen.size()));
}

void TestRingBuffer::setCapacityShrinkAndGrow()
{
    RingBuffer ring(32);
    Model m;
    attach(ring, m);
    std::string data;
    for (int i = 0; i < 50; ++i)
        data += char('A' + i % 26);
    ring.append(data.data(), 50); // keeps the last 32
    m.all = data;
    checkAgainstModel(ring, m);

    ring.setCapacity(10); // keeps the newest 10, evicting through the handler
    QCOMPARE(ring.capacity(), qsizetype(10));
    QCOMPARE(ring.size(), qsizetype(10));
    QVERIFY(ring.allocated() <= 10);
    checkAgainstModel(ring, m);
    QCOMPARE(QByteArray::fromStdString(retained(ring)), QByteArray::fromStdString(data.substr(40)));

    ring.setCapacity(100); // growing keeps everything and evicts nothing
    const int callsBefore = m.evictCalls;
    checkAgainstModel(ring, m);
    ring.append("0123456789012345678901234567890123456789", 40);
    m.all += "0123456789012345678901234567890123456789";
    QCOMPARE(m.evictCalls, callsBefore);
    QCOMPARE(ring.size(), qsizetype(50));
    checkAgainstModel(ring, m);

    ring.setCapacity(0); // clamps to 1
    QCOMPARE(ring.capacity(), qsizetype(1));
    checkAgainstModel(ring, m);
    QCOMPARE(ring.size(), qsizetype(1));
}

void TestRingBuffer::randomizedAgainstModel_data()
{
    QTest::addColumn<quint32>("seed");
    QTest::addColumn<int>("capacity");
    QTest::newRow("small") << quint32(1) << 37;
    QTest::newRow("page") << quint32(2) << 4096;
    QTest::newRow("odd-large") << quint32(3) << 100003;
    QTest::newRow("tiny") << quint32(4) << 3;
}

void TestRingBuffer::randomizedAgainstModel()
{
    QFETCH(quint32, seed);
    QFETCH(int, capacity);
    QRandomGenerator rng(seed);
    RingBuffer ring(capacity);
    Model m;
    attach(ring, m);
    quint64 counter = 0;
    for (int op = 0; op < 2000; ++op) {
        const int kind = rng.bounded(100);
        if (kind < 3) {
            // Capacity change at run time, shrinking or growing.
            const int newCap = rng.bounded(1, 2 * capacity + 2);
            const qsizetype before = ring.size();
            ring.setCapacity(newCap);
            QCOMPARE(ring.size(), std::min<qsizetype>(before, newCap));
        } else {
            const int limit = kind < 10 ? 3 * int(ring.capacity()) + 1 : int(ring.capacity()) / 3 + 2;
            const std::string chunk = randomBytes(rng, rng.bounded(limit), counter);
            ring.append(chunk.data(), qsizetype(chunk.size()));
            m.all += chunk;
        }
        checkAgainstModel(ring, m);
        if (ring.size() > 0) {
            const quint64 off = ring.startOffset() + quint64(rng.bounded(int(ring.size())));
            std::string buf(size_t(ring.size()), '\0');
            const qsizetype n = ring.read(off, &buf[0], qsizetype(buf.size()));
            QCOMPARE(n, qsizetype(ring.endOffset() - off));
            QVERIFY(buf.compare(0, size_t(n), m.all, size_t(off), size_t(n)) == 0);
        }
    }
    QVERIFY(m.evictCalls > 0);
}

void TestRingBuffer::memoryGrowsWithUse()
{
    const qsizetype cap = 1024 * 1024;
    RingBuffer ring(cap);
    QCOMPARE(ring.allocated(), qsizetype(0));
    ring.append("x", 1);
    QCOMPARE(ring.allocated(), qsizetype(4096)); // starts small
    std::string chunk(1000, 'y');
    qsizetype lastAlloc = ring.allocated();
    int growths = 0;
    while (ring.size() < cap) {
        ring.append(chunk.data(), qsizetype(chunk.size()));
        // Never more than twice what is held (doubling), never over capacity.
        QVERIFY2(ring.allocated() <= std::max<qsizetype>(4096, 2 * ring.size()),
                 qPrintable(QStringLiteral("allocated %1 for %2 bytes").arg(ring.allocated()).arg(ring.size())));
        QVERIFY(ring.allocated() <= cap);
        if (ring.allocated() != lastAlloc) {
            QCOMPARE(ring.allocated(), std::min(2 * lastAlloc, cap)); // doubling
            lastAlloc = ring.allocated();
            ++growths;
        }
    }
    QCOMPARE(ring.allocated(), cap);
    QCOMPARE(growths, 8); // 4 KiB -> 1 MiB

    // A capacity that is not a power of two is reached exactly.
    RingBuffer odd(10000);
    odd.append(chunk.data(), 1000);
    QCOMPARE(odd.allocated(), qsizetype(4096));
    for (int i = 0; i < 20; ++i)
        odd.append(chunk.data(), 1000);
    QCOMPARE(odd.allocated(), qsizetype(10000));

    // Shrinking the capacity gives memory back.
    ring.setCapacity(64 * 1024);
    QCOMPARE(ring.allocated(), qsizetype(64 * 1024));
}

void TestRingBuffer::noAllocationOnceFull()
{
    RingBuffer ring(200000);
    QRandomGenerator rng(99);
    quint64 counter = 0;
    Model m;
    attach(ring, m);
    while (ring.size() < ring.capacity()) {
        const std::string c = randomBytes(rng, 5000, counter);
        ring.append(c.data(), qsizetype(c.size()));
        m.all += c;
    }
    const qsizetype alloc = ring.allocated();
    const auto storageOf = [&ring] {
        // Lowest address among the spans of all retained data = storage base
        // when the ring wraps; used to check the block is never replaced.
        const auto p = ring.spans(ring.startOffset(), ring.size());
        return p.second.size ? p.second.data : p.first.data;
    };
    for (int i = 0; i < 5000; ++i) {
        const std::string c = randomBytes(rng, rng.bounded(1, 3 * 4096), counter);
        ring.append(c.data(), qsizetype(c.size()));
        m.all += c;
        QCOMPARE(ring.allocated(), alloc);
    }
    // Appends larger than capacity reuse the block too.
    const char *base = nullptr;
    {
        const std::string c = randomBytes(rng, 450000, counter);
        ring.append(c.data(), qsizetype(c.size()));
        m.all += c;
        base = storageOf(); // head is 0 now: the first span starts at the base
        QCOMPARE(ring.allocated(), alloc);
    }
    for (int i = 0; i < 100; ++i) {
        const std::string c = randomBytes(rng, rng.bounded(1, 50000), counter);
        ring.append(c.data(), qsizetype(c.size()));
        m.all += c;
        const auto p = ring.spans(ring.startOffset(), ring.size());
        QVERIFY(p.first.data >= base && p.first.data < base + alloc);
        if (p.second.size)
            QCOMPARE(p.second.data, base);
    }
    checkAgainstModel(ring, m);
}

void TestRingBuffer::tinyCapacity()
{
    RingBuffer ring(1);
    Model m;
    attach(ring, m);
    for (char c = 'a'; c <= 'z'; ++c) {
        ring.append(&c, 1);
        m.all += c;
        QCOMPARE(ring.size(), qsizetype(1));
        QCOMPARE(ring.at(ring.startOffset()), c);
    }
    ring.append("XYZ", 3);
    m.all += "XYZ";
    checkAgainstModel(ring, m);
    QCOMPARE(ring.allocated(), qsizetype(1));
}

void TestRingBuffer::noHeapAllocationOnceWarm()
{
#ifdef TETHER_COUNT_ALLOCS
    // Stronger than allocated(): no malloc at all on the hot path (append,
    // eviction through the handler, replay reads) once the ring is full.
    RingBuffer ring(256 * 1024);
    quint64 evicted = 0;
    ring.setEvictionHandler([&evicted](const char *, qsizetype n) { evicted += quint64(n); });
    std::string pool(1024 * 1024, '\0');
    for (size_t i = 0; i < pool.size(); ++i)
        pool[i] = char(i * 31);
    QVERIFY(allocationsDuring(oneAllocation) == 1); // the counter works
    const long warmUp = allocationsDuring([&] {
        for (int i = 0; i < 100; ++i)
            ring.append(pool.data() + i * 4096, 4096);
    });
    QVERIFY(warmUp > 0 && warmUp <= 8); // 4 KiB doubling to 256 KiB: 7 blocks
    char buf[8192];
    QRandomGenerator rng(5);
    const long hot = allocationsDuring([&] {
        for (int i = 0; i < 20000; ++i) {
            const qsizetype n = qsizetype(rng.bounded(1, 70000));
            ring.append(pool.data() + rng.bounded(int(pool.size() - size_t(n))), n);
            ring.read(ring.startOffset() + quint64(rng.bounded(int(ring.size()))), buf, sizeof buf);
            ring.spans(ring.startOffset(), ring.size());
        }
        ring.append(pool.data(), qsizetype(pool.size())); // larger than capacity
    });
    QCOMPARE(hot, 0L);
    QVERIFY(evicted > 0);
#else
    QSKIP("allocation counting needs glibc or AddressSanitizer");
#endif
}

void TestRingBuffer::restoreContinuesTheStream()
{
    // A wrapped ring handed to a new one (restart in place): the same
    // offsets and bytes, and appends continue the stream from there.
    QRandomGenerator rng(11);
    quint64 counter = 0;
    RingBuffer a(1000);
    Model ma;
    attach(a, ma);
    for (int i = 0; i < 30; ++i) {
        const std::string chunk = randomBytes(rng, rng.bounded(1, 300), counter);
        ma.all += chunk;
        a.append(chunk.data(), qsizetype(chunk.size()));
    }
    QVERIFY(a.startOffset() > 0);
    const std::string kept = retained(a);

    RingBuffer b(1000);
    b.append("stale", 5); // replaced, never evicted through the handler
    Model mb;
    mb.all = ma.all;
    mb.evicted = ma.all.substr(0, size_t(a.startOffset()));
    mb.evictedChecked = mb.evicted.size();
    attach(b, mb);
    QVERIFY(b.restore(a.startOffset(), kept.data(), qsizetype(kept.size())));
    QCOMPARE(b.startOffset(), a.startOffset());
    QCOMPARE(b.endOffset(), a.endOffset());
    QCOMPARE(retained(b), kept);
    QCOMPARE(mb.evictCalls, 0);
    QVERIFY(b.allocated() >= b.size() && b.allocated() <= b.capacity());
    checkAgainstModel(b, mb);
    for (int i = 0; i < 30; ++i) {
        const std::string chunk = randomBytes(rng, rng.bounded(1, 300), counter);
        mb.all += chunk;
        b.append(chunk.data(), qsizetype(chunk.size()));
        checkAgainstModel(b, mb);
    }

    RingBuffer empty(64);
    QVERIFY(empty.restore(12345, nullptr, 0));
    QCOMPARE(empty.startOffset(), quint64(12345));
    QCOMPARE(empty.endOffset(), quint64(12345));
    empty.append("ab", 2);
    QCOMPARE(empty.at(12346), 'b');
}

void TestRingBuffer::restoreRefusesBadInput()
{
    RingBuffer r(8);
    r.append("abc", 3);
    QVERIFY(!r.restore(0, "123456789", 9));  // over capacity
    QVERIFY(!r.restore(0, nullptr, 2));      // no data
    QVERIFY(!r.restore(0, "x", -1));
    QVERIFY(!r.restore(std::numeric_limits<quint64>::max() - 1, "xyz", 3)); // offsets overflow
    QCOMPARE(r.endOffset(), quint64(3));     // unchanged
    QCOMPARE(r.at(0), 'a');
}

QTEST_GUILESS_MAIN(TestRingBuffer)
#include "tst_ringbuffer.moc"
