// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <QtGlobal>

namespace Tether {

/**
 * The flood detector of a session's server-side screen (Session::hasScreen(),
 * issue 9): decides when the screen stops parsing (a flood) and when it
 * resumes. A pure state machine, fed by the session with monotonic time,
 * byte counts and CPU times it measures; it reads no clock itself.
 *
 * A flood is output the screen cannot keep up with, sustained. Two arms:
 *  - **Bytes**: a window of kWindowMs that brings kFloodBytes or more (256
 *    KiB per 100 ms, 2.6 MB/s: about twice what libvterm parses of `seq` at
 *    200x50, far above any TUI). `cat` and `seq` of a big file trip it
 *    within their first window on a fast CPU.
 *  - **Budget**: the CPU the screen spends *on the output path* (parsing
 *    bytes the ring is about to evict unparsed, before the read that evicts
 *    them can be appended: the screen is a whole ring behind and sets the
 *    pace of the output) is drawn from a token bucket of kBurstNs; the
 *    bucket refills at kSharePercent of the process's CPU time while output
 *    flows, and fills completely after a window with no output. When it is
 *    empty, a flood starts. This catches output that the screen slows to
 *    its own speed (so that its rate alone stays below kFloodBytes: `seq`
 *    through a small ring, or on a slow CPU), after at most kBurstNs of CPU.
 *
 * Why a budget for the output path, and not the previous rule (a window in
 * which parsing took 5 ms of CPU and half the process's): that is 5 % of a
 * core, and any burst of ordinary TUI output reaches it on a slow CPU. In the
 * AddressSanitizer build (parsing 3-5x slower) a bash loop redrawing 1,500
 * rows of katakana (about 150 KB) or 2,500 `\r` progress-bar updates started
 * a flood, the 64 KiB ring outran the screen, and it stayed unsynced (issue
 * 9: fidelity rows wide-redraw and progress-cr, docs/reliability.md). Parse
 * CPU alone does not say the screen is falling behind: a screen that keeps
 * up with its timer slices costs the output nothing but loop time in 4 ms
 * turns, whatever its share of a core. Only the parse on the output path
 * holds the output up, and a burst ends before the bucket is empty: 150 ms
 * of CPU is about 180 KB of `seq` at 200x50 at libvterm's slowest
 * (1.2 MB/s), several hundred KB of TUI output even at sanitizer speed.
 * Sustained output faster than the screen can parse keeps the screen on the
 * output path nearly all the time (the producer fills the PTY with more
 * between two turns of the loop than a 4 ms slice parses, and the ring is
 * full of unparsed bytes: the rest is parsed before each append), so the
 * bucket empties at about (100 - kSharePercent) % of the process's CPU, in
 * about 200 ms of CPU.
 * The refill is counted in process CPU, not wall time, so that a loaded
 * machine (the loop gets a small share of a core) neither hides a flood
 * nor makes one: the screen's share of the process is what it is. The cost
 * of the budget: such a flood is paced by the screen for up to kBurstNs
 * before it pauses (the bytes arm has no such delay).
 *
 *  - **Rescue bytes**: kRescueBytes parsed on the output path since the
 *    screen last caught up with the end of the ring (caughtUp()), whatever
 *    they cost. The budget alone is not enough under load: its refill
 *    counts a gap of two windows between reads as a pause of the output,
 *    and on a loaded machine one rescue parse of 64 KiB of `yes` can take
 *    that long in wall time, so the budget refilled at every read and the
 *    screen paced `yes` for good (tst_handover
 *    screenOutrunByAFloodStartsAgainAfterTheRestart under three CPU hogs:
 *    no flood in 20 s). A screen that keeps up catches up between bursts; a
 *    TUI burst through the smallest ring (150 KB of the fidelity corpus
 *    through 64 KiB) rescues well under this.
 *
 * A flood ends at the end of the first window that brought less than
 * kFloodBytes and no more than the screen parses in kSharePercent of a
 * window (at the speed it last parsed: parseBytesPerMs()), or after a
 * window with no output at all. A flood started by the budget or by rescue
 * bytes, mid-window, is not ended by that window: its bytes came at the
 * pace the screen set, so they say nothing about the output's own rate;
 * the first window wholly in the flood decides (without this the flood
 * ended at once and started again, many times a second, under load).
 *
 * Costs: no allocation; the caller reads its coarse monotonic clock once per
 * PTY read and the process's CPU clock only when windowDue() says a window
 * ends (once per window while output flows, never while idle).
 */
class FloodMeter
{
public:
    /// What a call changed.
    enum class Change {
        None,
        Started, ///< a flood started: the screen pauses
        Ended,   ///< the flood ended: the screen resumes
    };

    /// The window (ms of monotonic time).
    static constexpr qint64 kWindowMs = 100;
    /// Output per window that is a flood (bytes).
    static constexpr qsizetype kFloodBytes = 256 * 1024;
    /// The screen's burst allowance on the output path (ns of CPU).
    static constexpr qint64 kBurstNs = 150 * 1000 * 1000;
    /// The sustained share of the process's CPU the output path's parsing
    /// may take (percent), and the share of a window the screen may need to
    /// parse a window's output for a flood to end.
    static constexpr int kSharePercent = 25;
    /// Bytes parsed on the output path since the screen last caught up
    /// that are a flood.
    static constexpr qsizetype kRescueBytes = 256 * 1024;
    /// Parses shorter than this (bytes) do not update the speed estimate
    /// (too short to time).
    static constexpr qsizetype kMinTimedParse = 4096;

    bool flooding() const { return m_flooding; }

    /// True when output at `nowMs` ends the current window: output() then
    /// needs the process's CPU time.
    bool windowDue(qint64 nowMs) const { return nowMs - m_windowStart >= kWindowMs; }

    /**
     * `bytes` of output read at `nowMs` (monotonic ms; bytes 0: a check of
     * the flood timer, which runs once per window only while flooding).
     * `processCpuNs`: the process's CPU time (CLOCK_PROCESS_CPUTIME_ID, ns)
     * when windowDue(nowMs), else ignored (pass -1). Ends the window when it
     * is due (refills the budget; may end a flood), then counts the bytes
     * (may start a flood by rate). A flood that ends here does not start
     * again in the same call.
     */
    Change output(qint64 nowMs, qsizetype bytes, qint64 processCpuNs);

    /**
     * The screen parsed `bytes` for `cpuNs` of thread CPU. `onOutputPath`:
     * the parse held the output up (the bytes were about to leave the ring
     * unparsed); that CPU is drawn from the budget, and a flood starts when
     * it is spent. Other parses (timer slices, attaches) only update the
     * speed estimate.
     */
    Change parsed(qint64 cpuNs, qsizetype bytes, bool onOutputPath);

    /// The screen has parsed everything the ring holds: the rescue bytes
    /// start again from zero.
    void caughtUp() { m_rescueBytes = 0; }

    /// Back to the initial state (no flood, a full budget): the screen was
    /// switched off.
    void reset() { *this = FloodMeter(); }

    /// What is left of the budget (ns of CPU, 0..kBurstNs).
    qint64 budgetNs() const { return m_budgetNs; }
    /// The screen's parse speed on this stream (bytes per ms of CPU; an
    /// estimate: a moving average of the timed parses, 1000 until one).
    double parseBytesPerMs() const { return m_parseBytesPerMs; }

private:
    void refill(qint64 ns);

    qint64 m_windowStart = 0;    ///< ms, monotonic
    qsizetype m_windowBytes = 0;
    qint64 m_windowCpuNs = -1;   ///< process CPU at the window's start; -1 unknown
    qint64 m_budgetNs = kBurstNs;
    double m_parseBytesPerMs = 1000;
    qsizetype m_rescueBytes = 0;
    bool m_flooding = false;
    bool m_paced = false; ///< flooding since mid-window by budget or rescue

};

} // namespace Tether
