// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <QtGlobal>

#include <array>

namespace Tether {

class TerminalState;

/**
 * Stream ranges a session's head TerminalState found inert
 * (TerminalState::feedReportingInert()), so that its tail state, fed the
 * same bytes as they leave the ring, takes them with
 * TerminalState::feedInert() instead of scanning them a second time
 * (issue 11: the scan was half of the server's user-space instructions
 * under `cat`, and the tail's half of it was a repeat).
 *
 * Offsets are stream offsets (RingBuffer's). At most kMaxRuns ranges,
 * ascending and disjoint, in a fixed array: add() and feed() never
 * allocate. A range that does not fit pushes the oldest out; a range
 * shorter than kMinRun that does not extend the last one is not kept (a
 * keystroke's echo saves nothing worth a slot). A byte outside every range
 * is parsed as usual, so forgetting ranges costs time, never correctness.
 */
class InertRuns
{
public:
    static constexpr int kMaxRuns = 64;
    static constexpr qsizetype kMinRun = 256;

    /// Records that [begin, end) was inert. Must not start before the end
    /// of the last range recorded (stream order); an empty range does nothing.
    void add(quint64 begin, quint64 end);
    /// Forgets every range (or part of one) before `offset`: bytes that
    /// will not be fed again.
    void dropBefore(quint64 offset);
    void clear() { m_count = 0; }
    /// The number of ranges kept (for tests).
    int count() const { return m_count; }

    /// Feeds `st`, whose stream is at offset `at`, the `size` bytes at
    /// `data` that follow: the parts inside a recorded range with
    /// TerminalState::feedInert(), the rest with TerminalState::feed().
    /// Gives the state that feed() of all of them would.
    void feed(TerminalState &st, quint64 at, const char *data, qsizetype size) const;

private:
    struct Run
    {
        quint64 begin;
        quint64 end;
    };
    const Run &run(int i) const { return m_runs[size_t((m_first + i) % kMaxRuns)]; }
    Run &run(int i) { return m_runs[size_t((m_first + i) % kMaxRuns)]; }
    std::array<Run, kMaxRuns> m_runs {};
    int m_first = 0;
    int m_count = 0;
};

} // namespace Tether
