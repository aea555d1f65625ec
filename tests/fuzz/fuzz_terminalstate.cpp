// SPDX-License-Identifier: GPL-2.0-or-later
// Fuzz target: the terminal-state parser (core/common/terminalstate.h), fed
// what any program in a session can write. Beyond "no crash, no undefined
// behaviour", it checks the promises the replay relies on:
//  - splitting the stream anywhere gives the same state as one feed() (the
//    saved bytes compare equal);
//  - feedUntilEvent() in a loop ends in the same state as feed();
//  - restore(save()) continues exactly like the original, also mid-sequence;
//  - a head reporting inert prefixes (feedReportingInert(), in two chunks at
//    the split) and a tail taking those ranges unscanned (InertRuns, in two
//    other pieces) end in the same state as feed();
//  - restore() of damaged saved bytes either refuses them or gives a state
//    that can be fed anything.
// Input: byte 0 picks the split point (as a fraction of the rest), byte 1 the
// damage mode; the rest is the stream. tests/fuzz/README.md.
#include "inertruns.h"
#include "terminalstate.h"

#include <cstdint>
#include <cstdlib>
#include <cstdio>

using Tether::InertRuns;
using Tether::TerminalState;

namespace {
void check(bool ok, const char *what)
{
    if (!ok) {
        std::fprintf(stderr, "fuzz_terminalstate: %s\n", what);
        std::abort();
    }
}
} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2)
        return 0;
    const size_t n = size - 2;
    const char *stream = reinterpret_cast<const char *>(data + 2);
    const size_t split = n * data[0] / 255;

    TerminalState whole;
    whole.feed(stream, qsizetype(n));
    // Everything a session and a replay read from it.
    (void)whole.restoreSequence();
    (void)whole.charsetSequence();
    (void)whole.atSafeBoundary();
    (void)whole.title();
    const QByteArray saved = whole.save();

    TerminalState parts;
    parts.feed(stream, qsizetype(split));
    const QByteArray middle = parts.save();
    parts.feed(stream + split, qsizetype(n - split));
    check(parts.save() == saved, "split feed differs from one feed");

    TerminalState events;
    qsizetype at = 0;
    while (at < qsizetype(n)) {
        quint16 ev = 0;
        const qsizetype used = events.feedUntilEvent(stream + at, qsizetype(n) - at, &ev);
        check(used > 0 && used <= qsizetype(n) - at, "feedUntilEvent consumed nothing or too much");
        for (int i = 0; i < events.eventParamCount(); ++i)
            (void)events.eventParam(i);
        at += used;
    }
    check(events.save() == saved, "feedUntilEvent differs from feed");

    TerminalState head;
    InertRuns runs;
    runs.add(0, quint64(head.feedReportingInert(stream, qsizetype(split))));
    runs.add(split, split + quint64(head.feedReportingInert(stream + split, qsizetype(n - split))));
    check(head.save() == saved, "feedReportingInert differs from feed");
    TerminalState tail;
    const size_t other = n - split; // the tail's pieces differ from the head's
    runs.feed(tail, 0, stream, qsizetype(other));
    runs.feed(tail, other, stream + other, qsizetype(n - other));
    check(tail.save() == saved, "a tail skipping inert runs differs from feed");

    TerminalState resumed;
    check(resumed.restore(middle), "restore refused its own save");
    resumed.feed(stream + split, qsizetype(n - split));
    check(resumed.save() == saved, "restore(save()) does not continue like the original");

    // Damaged saved bytes: flip byte positions of the middle state with the
    // stream's bytes (data[1] picks the stride). Refused, or usable.
    if (data[1] & 1) {
        QByteArray damaged = middle;
        const int stride = 1 + data[1] / 2;
        for (size_t i = 0; i < n && i * stride < size_t(damaged.size()); ++i)
            damaged[int(i * stride)] = char(damaged[int(i * stride)] ^ stream[i]);
        TerminalState t;
        if (t.restore(damaged)) {
            t.feed(stream, qsizetype(n));
            (void)t.restoreSequence();
            (void)t.charsetSequence();
            TerminalState again;
            check(again.restore(t.save()), "a restored state saves bytes restore() refuses");
        }
    }
    return 0;
}
