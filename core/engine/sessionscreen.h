// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include "floodmeter.h"
#include "handover.h"

#include <QByteArray>
#include <QList>
#include <QPair>
#include <QTimer>
#include <memory>
#include <optional>

namespace Tether {

class InertRuns;
class Screen;
class Session;
class TerminalState;
struct ReplayRequest;
struct SnapshotOffer;

/**
 * The server-side screen work of one Session (docs/architecture.md, "The
 * session's screen"): the Screen it owns, the offset S it has parsed the
 * ring up to, the parse timer and its slices, the flood detector
 * (FloodMeter), the outrun and resync, the queries it answers, the size
 * cap, compaction of a detached session's screen and the screen's part of
 * a restart in place. Session's public screen API (hasScreen(),
 * screenPreview(), screenSynced(), ... and the constants that bound the
 * work, Session::kScreenChunk and the rest) documents the behaviour and
 * forwards here.
 *
 * Used by Session alone: a member of it, made and destroyed with it
 * (session.h includes this header for that member; nothing else uses the
 * class, the rest of the program goes through Session's API). It reads
 * the session's stream through its back reference (Session names it a
 * friend): the ring, the tail TerminalState and the inert runs it took,
 * the margin resets, the sizes in force (Session::sizeAt()), the stream's
 * start, the state and the PTY (to write the answers to queries), the id
 * (for the log) and the number of viewers; it changes none of them. The
 * session calls it at fixed points of its own work: before and after an
 * append to the ring (onOutput), when bytes leave the ring (feedTail), on
 * an attach, a detach, a resize and a restart in place.
 *
 * Apart from session.cpp because it is a machine of its own (lazy
 * creation, bounded slices, floods, outruns, compaction) that the rest of
 * the session (viewers, replay, input, the output hold, commands) only
 * calls at those points. Not thread-safe; its timers run in the session's
 * thread.
 */
class SessionScreen
{
public:
    explicit SessionScreen(Session &session);
    ~SessionScreen();
    SessionScreen(const SessionScreen &) = delete;
    SessionScreen &operator=(const SessionScreen &) = delete;

    /// The flood detector's clock: CLOCK_MONOTONIC_COARSE (a vDSO read
    /// without a system call, a few ms of resolution, plenty for 100 ms
    /// windows), ms. The session's silence alerts use it too.
    static qint64 monotonicMs();
    /// Feeds `st` (at stream offset `at`) the bytes that follow, resetting
    /// its margins at the offsets in `resets` where a resize did (the
    /// viewers got a fixup there). The parts in `inert` are taken without a
    /// scan. For the session's tail state and a resync's.
    static void feedState(TerminalState &st, quint64 at, const char *data, qsizetype size,
                          const QList<quint64> &resets, const InertRuns &inert);

    // --- what Session's public screen API forwards to (session.h) ------------
    bool hasScreen() const { return m_screen != nullptr; }
    const Screen *screen() const { return m_screen.get(); }
    /// Session::setScreenEnabled(), screenEnabled().
    void setEnabled(bool enabled);
    bool enabled() const { return m_enabled; }
    /// Session::ensureScreen().
    void ensure(qsizetype parseNow);
    /// Session::screenPreview().
    QByteArray preview(quint64 *offset);
    /// S (Session::screenOffset()).
    quint64 offset() const { return m_offset; }
    /// Session::screenSynced().
    bool synced() const { return m_screen && m_synced; }
    /// Session::screenOutruns().
    quint64 outruns() const { return m_outruns; }
    /// Session::screenBytes().
    qsizetype memoryBytes() const;
    /// Session::flooding().
    bool flooding() const { return m_flood.flooding(); }
    /// Session::setScreenCompactDelay(), screenCompactDelay(), screenCompact().
    void setCompactDelay(int ms);
    int compactDelay() const { return m_compactTimer.interval(); }
    bool isCompact() const;

    // --- the points of the session's work where the screen has a part -------
    /// Session::onOutput, before `size` bytes are appended to the ring: the
    /// flood detector counts them; the screen is made when the ring first
    /// reaches half its capacity (or again after a stretch without a safe
    /// boundary left the ring); what the append would evict unparsed is
    /// parsed first (not while flooding).
    void beforeAppend(qsizetype size);
    /// Session::onOutput, after the append of [from, end of the ring) and
    /// the head state's scan of it: `normalMayHaveChanged` (the read left
    /// or was not in the alternate screen, entered it, saved the cursor or
    /// reset), `hasControl` (a control viewer saw this output: else its
    /// queries are the server's to answer), `queriesSeen` (the head found a
    /// query in it: parse up to it now).
    void afterAppend(quint64 from, bool normalMayHaveChanged, bool hasControl, bool queriesSeen);
    /// Session::onOutput, after the viewers have the bytes: the parse is
    /// scheduled Session::kScreenSettleMs later, compaction armed while no
    /// viewer is attached.
    void afterViewers();
    /// Session::feedTail: bytes up to `tailOffset` left the ring; those the
    /// screen never parsed make it outrun.
    void evicted(quint64 tailOffset);
    /// A viewer attaches: no compaction now (a compact screen is rebuilt by
    /// its first use).
    void viewerAttaching();
    /// A viewer detached and none is left: compaction is armed.
    void lastViewerLeft();
    /// Session::applySize recorded a new size at the end of the ring: applied
    /// now if the screen has caught up.
    void sizeRecorded();
    /**
     * For Session::attach, a reset replay that may carry the screen's
     * snapshot (session.h, attach()): makes, parses or resyncs the screen
     * as the request needs, and returns the snapshot with `offer` set, or
     * an empty array and `offer` untouched (raw replay). `resized`: the
     * attach resized the session, from `rowsBefore` rows.
     */
    QByteArray attachSnapshot(const ReplayRequest &request, bool resized, int rowsBefore,
                              std::optional<SnapshotOffer> &offer);
    /// Session::handover(): the screen's record (none for an outrun screen).
    void handover(Handover::ScreenRecord &record) const;
    /// Session::restore(): the screen as it was at record.offset, its
    /// snapshot fed into a fresh Screen. The caller checked the record
    /// (present, fits, offset within the ring) and set the sizes.
    void restore(const Handover::ScreenRecord &record);
    /// Session::restore() of a ring that rolled over with no screen handed
    /// over: a screen now, unsynced, at the ring's first safe boundary.
    void restartAtStart();
    /// Session::restore(): the normal screen's changes before are unknown.
    void setNormalChangedAt(quint64 offset) { m_normalChangedAt = offset; }

private:
    void create(quint64 at, const TerminalState &modes, int cols, int rows);
    /// Makes a screen at the ring's start (offset 0 when still retained:
    /// synced; else unsynced at the first safe boundary).
    void createAtStart();
    /// Parses [S, end) for at most `maxBytes` bytes and `maxUs` µs; starts or
    /// stops the timer as work remains. `onOutputPath`: the output waits
    /// for this parse (bytes about to leave the ring unparsed): its CPU is
    /// drawn from the flood detector's budget (FloodMeter::parsed).
    void parse(qsizetype maxBytes, qint64 maxUs, bool onOutputPath = false);
    /// Feeds [S, to) to the screen, answering queries when `answering`.
    void feed(quint64 to, bool answering);
    /// Applies the resize and margin reset recorded at S.
    void applyEventsAt(quint64 at);
    /// The flood outran the screen: restart it (unsynced) at the first safe
    /// boundary at or after max(ring start, `from`).
    void resync(quint64 from = 0);
    /// Feeds the screen byte by byte to the next safe boundary. False when
    /// none comes within Session::kMaxSnapshotBoundaryScan bytes.
    bool toSafeBoundary();
    /// Arms the parse timer (unless it is armed already) when there is
    /// output to parse: `delayMs` 0 while catching up,
    /// Session::kScreenSettleMs from the output path.
    void schedule(int delayMs = 0);
    /// Counts `bytes` of output at `nowMs` (monotonic) into the flood
    /// detector (FloodMeter::output; the process's CPU clock is read only
    /// when a window ends); starts or ends a flood.
    void measureRate(qint64 nowMs, qsizetype bytes);
    void startFlood();
    void floodEnded();
    void compact();
    /// No screen while the size is over Session::kMaxScreenCells: dropped,
    /// made again once the ring has moved past its end now.
    void dropOversized();
    /// Gives the heap's free pages back to the system a second after a
    /// compaction (coalesced across sessions; glibc's malloc_trim()).
    static void trimHeapSoon();

    Session &m_session;
    bool m_enabled = true;
    std::unique_ptr<Screen> m_screen;
    quint64 m_offset = 0;      ///< S
    bool m_synced = false;
    bool m_answering = false;  ///< the bytes being fed arrived with no control viewer
    // The flood detector (Session::hasScreen()).
    FloodMeter m_flood;
    QTimer m_floodTimer; ///< runs only while flooding
    /// No screen is made before the ring starts here (resync() found no
    /// safe boundary to start at below it).
    quint64 m_retryAt = 0;
    quint64 m_outruns = 0;
    /// The end of the last read in which the normal screen may have changed
    /// under the alternate one (not in it at the read's end, or it entered
    /// it, saved the cursor or reset): a screen outrun at S >= this, in the
    /// alternate screen, keeps its normal screen (resync()).
    quint64 m_normalChangedAt = 0;
    QTimer m_timer;
    QTimer m_compactTimer; ///< setCompactDelay(); runs only while detached after output
    /// The delay passed while the screen was still parsing: compact when
    /// it catches up (parse()).
    bool m_compactWhenCaughtUp = false;
    /// [from, to) ranges of output that arrived with no control viewer,
    /// ascending, not yet parsed by the screen: queries in them are answered.
    QList<QPair<quint64, quint64>> m_answerRanges;
};

} // namespace Tether
