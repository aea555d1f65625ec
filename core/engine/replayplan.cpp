// SPDX-License-Identifier: GPL-2.0-or-later
#include "replayplan.h"
#include "ringbuffer.h"
#include "terminalstate.h"

#include <algorithm>
#include <limits>

namespace Tether {

namespace {

/// Walks a state forward one byte at a time from a given offset, applying the
/// margin resets recorded at the offsets it passes (one comparison per byte).
class ReplayScanner
{
public:
    ReplayScanner(const RingBuffer &ring, const QList<quint64> &marginResets, quint64 from)
        : m_ring(ring), m_resets(marginResets), m_next(nextResetAfter(from))
    {
    }

    /// Feeds `state` the retained bytes from `*at` on, at most `maxBytes`,
    /// one at a time, until `done(state, byte)` is true after a byte.
    /// Advances *at past each byte fed. Returns whether `done` became true.
    template<typename Done>
    bool scan(TerminalState &state, quint64 *at, quint64 maxBytes, Done done)
    {
        const quint64 end = m_ring.endOffset();
        const auto spans = m_ring.spans(*at, qsizetype(std::min<quint64>(end - *at, maxBytes)));
        for (const RingBuffer::Span &sp : {spans.first, spans.second}) {
            for (qsizetype i = 0; i < sp.size; ++i) {
                step(state, sp.data + i, ++*at);
                if (done(state, sp.data[i]))
                    return true;
            }
        }
        return false;
    }

private:
    quint64 nextResetAfter(quint64 after) const
    {
        for (const quint64 r : m_resets)
            if (r > after)
                return r;
        return std::numeric_limits<quint64>::max();
    }

    /// Feeds the byte at offset `pos` - 1 into `state`, which is then at `pos`.
    void step(TerminalState &state, const char *byte, quint64 pos)
    {
        state.feed(byte, 1);
        if (pos == m_next) {
            state.marginsResetByResize();
            m_next = nextResetAfter(pos);
        }
    }

    const RingBuffer &m_ring;
    const QList<quint64> &m_resets;
    quint64 m_next;
};

/// Reason, reset and first offset by the replay rules, before any boundary
/// adjustment.
void classify(ReplayPlan &plan, quint64 start, quint64 end, std::optional<quint64> resume)
{
    plan.replayFrom = start;
    if (!resume) {
        plan.reset = true;
        plan.reason = ReplayReason::Initial;
    } else if (*resume > end) {
        plan.reset = true;
        plan.reason = ReplayReason::Ahead;
    } else if (*resume >= start) {
        plan.reset = false;
        plan.reason = ReplayReason::Resume;
        plan.replayFrom = *resume;
    } else {
        plan.reset = true;
        plan.reason = ReplayReason::RolledOut;
    }
}

/// Moves plan.replayFrom (the ring's start) to the first safe byte and, on
/// the normal screen, to the start of the next line; sets the prelude.
void findSafeStart(ReplayPlan &plan, const RingBuffer &ring, const TerminalState &tail,
                   const QList<quint64> &marginResets)
{
    const quint64 end = ring.endOffset();
    quint64 from = plan.replayFrom;
    TerminalState st = tail;
    // Margin resets inside the skipped bytes apply too.
    ReplayScanner scanner(ring, marginResets, from);
    const bool safe = st.atSafeBoundary()
        || scanner.scan(st, &from, kMaxReplayBoundaryScan,
                        [](const TerminalState &s, char) { return s.atSafeBoundary(); });
    if (!safe) {
        // Past the bound nothing of the unterminated sequence is replayed.
        from = end;
    } else if (!st.hasMode(TerminalState::AltScreen)) {
        // On the normal screen the first replayed line would be the tail of a
        // line whose beginning (and colour) is gone: start after the next
        // newline instead, if one comes soon. (Not on the alternate screen:
        // what a full-screen program draws there is all visible.)
        TerminalState line = st;
        quint64 at = from;
        const bool found = scanner.scan(line, &at, kMaxReplayLineScan, [](const TerminalState &s, char c) {
            return c == '\n' && s.atSafeBoundary() && !s.hasMode(TerminalState::AltScreen);
        });
        if (found && at < end) {
            st = line;
            from = at;
        }
    }
    plan.replayFrom = from;
    plan.prelude = st.restoreSequence();
}

} // namespace

ReplayPlan planReplay(const RingBuffer &ring, const TerminalState &tail,
                      const QList<quint64> &marginResets, std::optional<quint64> resume,
                      std::optional<SnapshotOffer> snapshot, const QList<quint64> &wholeScreenMargins,
                      quint64 streamStart)
{
    ReplayPlan plan;
    const quint64 start = ring.startOffset();
    plan.offset = ring.endOffset();
    classify(plan, start, plan.offset, resume);
    // The retained output begins mid-stream: skip to the first byte that is
    // not inside an escape sequence or a UTF-8 character, and restore the
    // modes in force there (martanne/abduco#32, jupyterlab/jupyterlab#12073).
    const bool useSnapshot = plan.reset && snapshot && snapshot->at >= start && snapshot->at <= plan.offset
        && (snapshot->screenReplay || start > streamStart || snapshot->repaint);
    if (useSnapshot && snapshot->screenReplay) {
        plan.replayFrom = snapshot->at;
        plan.screenReplay = true;
    } else if (plan.reset && start > streamStart) {
        // Margins that were the whole screen where they were set are none
        // for the viewer: the prelude's state takes them as reset.
        QList<quint64> resets = marginResets;
        if (!wholeScreenMargins.isEmpty()) {
            resets += wholeScreenMargins;
            std::sort(resets.begin(), resets.end());
        }
        findSafeStart(plan, ring, tail, resets);
    }
    if (useSnapshot) {
        plan.snapshotAt = snapshot->at;
        if (snapshot->at < plan.replayFrom) {
            // The screen is behind the safe start: it restores the modes and
            // the screen itself, so the replay starts where it is.
            plan.replayFrom = snapshot->at;
            plan.prelude.clear();
        }
    }
    for (const quint64 reset : marginResets)
        if (reset >= plan.replayFrom && reset <= plan.offset)
            plan.fixups.append(reset);
    for (const quint64 at : wholeScreenMargins)
        if (at >= plan.replayFrom && at <= plan.offset)
            plan.wholeScreenFixups.append(at);
    return plan;
}

} // namespace Tether
