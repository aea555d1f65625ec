// SPDX-License-Identifier: GPL-2.0-or-later
// Prints RingBuffer append and replay-read throughput and TerminalState::feed
// throughput, in MB/s (1 MB = 10^6 bytes). Not a test: figures only.
// For scale: the raw PTY's throughput on the development machine is 40-60
// MB/s (docs/performance.md, the raw PTY row of each run) and xterm.js
// parses 5-35 MB/s by its own benchmarks; the ring and the state tracker
// must be far from being the bottleneck.
#include "ringbuffer.h"
#include "terminalstate.h"

#include <QByteArray>
#include <QElapsedTimer>
#include <QRandomGenerator>

#include <cstdio>
#include <cstring>
#include <vector>

using namespace Tether;

namespace {

constexpr qint64 kTarget = 512ll * 1000 * 1000; // bytes per measurement

double mbps(qint64 bytes, qint64 nsecs)
{
    return nsecs > 0 ? double(bytes) * 1000.0 / double(nsecs) : 0.0;
}

void benchAppend(qsizetype capacity, qsizetype chunk)
{
    RingBuffer ring(capacity);
    quint64 evicted = 0;
    ring.setEvictionHandler([&evicted](const char *, qsizetype n) { evicted += quint64(n); });
    std::vector<char> data(static_cast<size_t>(chunk));
    for (size_t i = 0; i < data.size(); ++i)
        data[i] = char('a' + i % 26);
    // Warm up to full size so the timing measures the steady state.
    while (ring.size() < ring.capacity())
        ring.append(data.data(), chunk);
    QElapsedTimer t;
    t.start();
    qint64 total = 0;
    while (total < kTarget) {
        ring.append(data.data(), chunk);
        total += chunk;
    }
    const qint64 ns = t.nsecsElapsed();
    std::printf("ring append   cap %6lld KiB chunk %6lld B: %8.0f MB/s (evicted %llu B)\n",
                (long long)capacity / 1024, (long long)chunk, mbps(total, ns), (unsigned long long)evicted);
}

void benchReplay(qsizetype capacity, qsizetype chunk)
{
    RingBuffer ring(capacity);
    std::vector<char> data(size_t(capacity) + 12345);
    for (size_t i = 0; i < data.size(); ++i)
        data[i] = char(i * 7);
    ring.append(data.data(), qsizetype(data.size())); // wraps: start is not at index 0
    ring.append(data.data(), 777);
    std::vector<char> dst(static_cast<size_t>(chunk));
    QElapsedTimer t;
    t.start();
    qint64 total = 0;
    quint64 sum = 0;
    while (total < kTarget) {
        for (quint64 off = ring.startOffset(); off < ring.endOffset();) {
            const qsizetype n = ring.read(off, dst.data(), chunk);
            sum += quint8(dst[0]);
            off += quint64(n);
            total += n;
        }
    }
    const qint64 nsRead = t.nsecsElapsed();
    t.restart();
    qint64 totalSpans = 0;
    while (totalSpans < kTarget) {
        for (quint64 off = ring.startOffset(); off < ring.endOffset();) {
            const auto p = ring.spans(off, chunk);
            sum += quint8(p.first.data[0]);
            off += quint64(p.first.size + p.second.size);
            totalSpans += p.first.size + p.second.size;
        }
    }
    const qint64 nsSpans = t.nsecsElapsed();
    std::printf("ring replay   cap %6lld KiB chunk %6lld B: read() %8.0f MB/s, spans() (zero-copy) %8.0f MB/s (%llu)\n",
                (long long)capacity / 1024, (long long)chunk, mbps(total, nsRead), mbps(totalSpans, nsSpans),
                (unsigned long long)(sum & 1));
}

QByteArray typicalOutput()
{
    // ls --color / compiler output / editor redraw mix: text, SGR, cursor
    // moves, some UTF-8, an occasional title and mode change.
    QByteArray b;
    QRandomGenerator rng(42);
    while (b.size() < 1 << 20) {
        switch (rng.bounded(8)) {
        case 0: b += "\x1b[01;34mdirectory\x1b[0m  "; break;
        case 1: b += "\x1b[38;5;208mwarning:\x1b[0m unused variable \xe2\x80\x98x\xe2\x80\x99\r\n"; break;
        case 2: b += "\x1b[12;1H\x1b[K"; break;
        case 3: b += "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80 "; break;
        case 4: b += "\x1b]0;user@host: ~/src\x07"; break;
        case 5: b += "\x1b[?25l\x1b[?2004h\x1b[?25h"; break;
        default: b += "the quick brown fox jumps over the lazy dog 0123456789\r\n"; break;
        }
    }
    return b;
}

void benchFeed(const char *name, const QByteArray &sample)
{
    TerminalState s;
    QElapsedTimer t;
    t.start();
    qint64 total = 0;
    while (total < kTarget / 2) {
        // 4 KiB pieces, as the PTY reader delivers them.
        for (qsizetype off = 0; off < sample.size(); off += 4096) {
            const qsizetype n = std::min<qsizetype>(4096, sample.size() - off);
            s.feed(sample.constData() + off, n);
        }
        total += sample.size();
    }
    const qint64 ns = t.nsecsElapsed();
    std::printf("state feed    %-28s: %8.0f MB/s (serial %llu, safe %d)\n", name, mbps(total, ns),
                (unsigned long long)s.titleSerial(), int(s.atSafeBoundary()));
}

} // namespace

int main()
{
    benchAppend(1024 * 1024, 4096);
    benchAppend(1024 * 1024, 65536);
    benchAppend(64 * 1024 * 1024, 65536);
    benchAppend(64 * 1024, 100);
    benchReplay(1024 * 1024, 65536);
    benchReplay(64 * 1024 * 1024, 65536);
    benchReplay(1024 * 1024, 4096);

    QByteArray ascii;
    while (ascii.size() < 1 << 20)
        ascii += "the quick brown fox jumps over the lazy dog 0123456789\r\n";
    benchFeed("ASCII text lines", ascii);
    benchFeed("typical mixed output", typicalOutput());
    QByteArray utf8;
    while (utf8.size() < 1 << 20)
        utf8 += "\xe4\xb8\xad\xe6\x96\x87 \xd0\xa0\xd1\x83\xd1\x81 \xf0\x9f\x98\x80 ";
    benchFeed("UTF-8 heavy (CJK, emoji)", utf8);
    QByteArray sgr;
    while (sgr.size() < 1 << 20)
        sgr += "\x1b[38;2;12;34;56m#\x1b[48;5;17m \x1b[0m";
    benchFeed("escape heavy (truecolor SGR)", sgr);
    return 0;
}
