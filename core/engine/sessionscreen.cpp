// SPDX-License-Identifier: GPL-2.0-or-later
// The server-side screen work of a session (sessionscreen.h): the Screen
// fed from the ring in slices, floods, outruns, compaction. Apart from
// session.cpp, which calls it at fixed points of the output path, attach,
// detach, resize and a restart in place. docs/architecture.md ("The
// session's screen") describes the rules.
#include "sessionscreen.h"
#include "logging.h"
#include "replayplan.h"
#include "screen.h"
#include "session.h"

#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <QCoreApplication>
#include <QElapsedTimer>
#include <algorithm>
#include <limits>
#include <utility>
#include <time.h>

namespace Tether {

namespace {
/// CPU time of this thread or process (clock_gettime(2)), ns.
qint64 cpuNs(clockid_t clock)
{
    timespec ts {};
    ::clock_gettime(clock, &ts);
    return qint64(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}
} // namespace

qint64 SessionScreen::monotonicMs()
{
    timespec ts {};
    ::clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
    return qint64(ts.tv_sec) * 1000 + ts.tv_nsec / 1000000;
}

void SessionScreen::feedState(TerminalState &st, quint64 at, const char *data, qsizetype size,
                              const QList<quint64> &resets, const InertRuns &inert)
{
    for (const quint64 reset : resets) {
        if (reset <= at)
            continue;
        if (reset > at + quint64(size))
            break;
        const qsizetype n = qsizetype(reset - at);
        inert.feed(st, at, data, n);
        data += n;
        size -= n;
        at = reset;
        st.marginsResetByResize();
    }
    inert.feed(st, at, data, size);
}

SessionScreen::SessionScreen(Session &session)
    : m_session(session)
{
    // The screen's parse timer: running only while the screen has output
    // to catch up on (an idle session has no wakeups); a zero-timer while
    // it catches up, kScreenSettleMs after output that found it caught up.
    m_timer.setSingleShot(true);
    m_timer.setTimerType(Qt::PreciseTimer);
    QObject::connect(&m_timer, &QTimer::timeout, &m_session,
                     [this] { parse(Session::kScreenChunk, Session::kScreenTurnUs); });
    // Compaction of a detached idle session's screen (setCompactDelay()).
    m_compactTimer.setSingleShot(true);
    m_compactTimer.setInterval(Session::kScreenCompactMs);
    QObject::connect(&m_compactTimer, &QTimer::timeout, &m_session, [this] { compact(); });
    // While flooding only: looks at the rate once per window, so that the
    // end of a flood is seen even when the output stops altogether.
    m_floodTimer.setInterval(int(FloodMeter::kWindowMs));
    QObject::connect(&m_floodTimer, &QTimer::timeout, &m_session, [this] { measureRate(monotonicMs(), 0); });
}

SessionScreen::~SessionScreen() = default;

// --- the points of the session's work ------------------------------------------

void SessionScreen::beforeAppend(qsizetype size)
{
    m_compactWhenCaughtUp = false; // the compaction delay starts again (afterViewers())
    const RingBuffer &ring = m_session.m_ring;
    if (m_enabled)
        measureRate(monotonicMs(), size);
    // The screen must not lose bytes it has nearly reached: a program that
    // updates a few cells at a time (htop) would leave it unsynced for good.
    // Made here, before the append, when the ring first reaches half its
    // capacity (from offset 0: the stream is still whole), flood or not
    // (the ring moves on: later is too late to start from offset 0).
    const bool halfFull = m_retryAt == 0 && ring.startOffset() == m_session.m_streamStart
        && ring.size() + size >= ring.capacity() / 2;
    // After a stretch with no safe boundary: again once it has left the ring.
    const bool retry = m_retryAt > 0 && ring.startOffset() >= m_retryAt;
    if (!m_screen && (halfFull || retry)) {
        m_answerRanges.clear(); // queries before now were never meant for it
        createAtStart();
    }
    // Below the flood rate, what this read evicts unparsed is parsed first
    // (bounded: a screen further behind than kScreenChunk is outrun). While
    // flooding, nothing: the screen is off the output path.
    if (m_screen && !m_flood.flooding() && m_offset >= ring.startOffset()) {
        const quint64 evictTo = ring.startOffset()
            + quint64(std::max<qsizetype>(0, ring.size() + std::min(size, ring.capacity()) - ring.capacity()));
        if (m_offset < evictTo && evictTo - m_offset <= quint64(Session::kScreenChunk))
            parse(qsizetype(evictTo - m_offset), std::numeric_limits<qint64>::max(), true);
    }
}

void SessionScreen::afterAppend(quint64 from, bool normalMayHaveChanged, bool hasControl, bool queriesSeen)
{
    const quint64 end = m_session.m_ring.endOffset();
    if (normalMayHaveChanged)
        m_normalChangedAt = end;
    // This path only records and schedules.
    if (!hasControl) {
        // Queries in output no control viewer saw are the server's to answer.
        if (!m_answerRanges.isEmpty() && m_answerRanges.last().second == from)
            m_answerRanges.last().second = end;
        else
            m_answerRanges.append({from, end});
        while (m_answerRanges.size() > Session::kMaxAnswerRanges)
            m_answerRanges.removeFirst();
    }
    if (!hasControl && !m_flood.flooding() && queriesSeen) {
        // A program waits for an answer now: parse up to it at once.
        if (!m_screen && m_session.m_ring.startOffset() >= m_retryAt) {
            // Older queries were never meant for us: only this output's.
            m_answerRanges = {{from, end}};
            createAtStart();
        }
        parse(Session::kScreenChunk, Session::kScreenTurnUs);
    }
}

void SessionScreen::afterViewers()
{
    // The screen's turn comes after the viewers have the bytes, and not in
    // this turn of the event loop (schedule(kScreenSettleMs)).
    schedule(Session::kScreenSettleMs);
    if (m_screen && m_session.viewerCount() == 0)
        m_compactTimer.start();
}

void SessionScreen::evicted(quint64 tailOffset)
{
    // Bytes the screen never parsed are gone: it is outrun (it restarts
    // when the flood ends, or at the ring's start when it next parses).
    if (m_screen && m_offset < tailOffset)
        m_synced = false;
}

void SessionScreen::viewerAttaching()
{
    m_compactTimer.stop(); // a compact screen is rebuilt by its first use
    m_compactWhenCaughtUp = false;
}

void SessionScreen::lastViewerLeft()
{
    if (m_screen)
        m_compactTimer.start();
}

void SessionScreen::sizeRecorded()
{
    // The screen applies it when its parse reaches this offset (output
    // before it was made at the old size); now, if it has caught up.
    if (m_screen && m_offset == m_session.m_ring.endOffset())
        applyEventsAt(m_offset);
}

QByteArray SessionScreen::attachSnapshot(const ReplayRequest &request, bool resized, int rowsBefore,
                                         std::optional<SnapshotOffer> &offer)
{
    const RingBuffer &ring = m_session.m_ring;
    QByteArray snapshot;
    bool fallBack = false;
    if (!m_screen && (request.screen || resized) && ring.startOffset() >= m_retryAt) {
        // Made now, so the next such attach finds it; parsed at once only
        // when that is cheap, else this attach gets the raw replay.
        createAtStart();
        if (!m_screen)
            ; // no safe boundary to start at: raw replay
        else if (ring.endOffset() - m_offset <= quint64(Session::kMaxSyncScreenParse))
            parse(Session::kMaxSyncScreenParse, std::numeric_limits<qint64>::max());
        else
            fallBack = true; // parsed in the background, for the next attach
    } else if (m_screen && !m_flood.flooding() && resized && m_offset < ring.endOffset()
               && ring.endOffset() - std::max(m_offset, ring.startOffset()) <= quint64(Session::kMaxSyncScreenParse)) {
        // At a new size the snapshot must be taken at the end, where the
        // screen takes the new size: what it has not parsed yet (usually
        // nothing, it follows within kScreenSettleMs), all of it.
        parse(Session::kMaxSyncScreenParse, std::numeric_limits<qint64>::max());
    } else if (m_screen && !m_flood.flooding() && (request.screen || !synced())) {
        // A slice of the timer's work (up to kScreenTurnUs), only where
        // it changes what this viewer gets: a replay=screen reply is the
        // shorter the nearer S is to the end, and an unsynced screen may
        // sync. A synced screen's snapshot at S followed by [S, end)
        // shows what one at the end would; the timer parses the rest.
        parse(Session::kScreenChunk, Session::kScreenTurnUs);
    }
    // While flooding the screen parses nothing, here too: an outrun
    // screen would restart at the ring's start and parse a slice (4 ms
    // of libvterm) on every attach, only to be outrun again. It gets no
    // snapshot (raw replay, exact for the scrolling output a flood is)
    // and resyncs near the end once the flood is over (floodEnded()).
    // That parse was make bench's reattach regression: 5.76 ms for a
    // full 1 MiB ring at c6f41fd, 0.92 ms before the screen.
    if (m_screen && !m_flood.flooding() && m_offset < ring.startOffset())
        resync();
    // At a new size only a snapshot at the end has it (one before would
    // be painted at the old size into the viewer's new one).
    const bool sizeOk = !resized || m_offset == ring.endOffset();
    if (!fallBack && sizeOk && synced() && toSafeBoundary()) {
        offer = SnapshotOffer{m_offset, request.screen, resized};
        Screen::SnapshotOptions o;
        const int rows = m_session.m_pty.rows();
        if (request.screen) {
            o.inPlace = false;
            o.scrollbackLines = std::clamp(request.lines, 0, Session::kMaxReplayLines);
        } else if (resized && rows > rowsBefore) {
            // Taller: the raw replay left lines on the viewer's screen
            // above those the screen kept in its old rows (they went to
            // the screen's scrollback). The in-place repaint would paint
            // over them: they go to the viewer's scrollback first.
            o.pushLines = int(std::min<qsizetype>(m_screen->scrollbackLineCount(), rows - rowsBefore));
        }
        snapshot = m_screen->snapshot(o);
    }
    schedule();
    return snapshot;
}

void SessionScreen::handover(Handover::ScreenRecord &sc) const
{
    // An outrun screen paused by a flood (its offset already left the ring)
    // is not handed over: the successor could not parse on from it, and the
    // reader refuses the whole state for an offset outside the ring. The
    // successor makes a screen again as a new session does.
    if (!m_screen || m_offset < m_session.m_ring.startOffset())
        return;
    // The successor feeds this into a fresh Screen: the state at S with
    // the scrollback it keeps, then parses on from S.
    sc.present = true;
    sc.offset = m_offset;
    sc.synced = synced();
    sc.cols = m_screen->cols();
    sc.rows = m_screen->rows();
    Screen::SnapshotOptions o;
    o.inPlace = false;
    o.synchronized = false;
    // From a reset terminal (not in place: no tab stops unless the
    // program set some, which the successor's Screen would otherwise
    // count as set by the program).
    o.scrollbackLines = int(m_screen->scrollbackLineCount());
    sc.snapshot = m_screen->snapshot(o);
    for (const Session::SizeChange &c : m_session.m_sizes)
        if (c.offset > m_offset)
            sc.resizes.append({c.offset, c.cols, c.rows});
}

void SessionScreen::restore(const Handover::ScreenRecord &sc)
{
    // The screen as it was at S: its snapshot fed into a fresh one.
    create(sc.offset, TerminalState(), sc.cols, sc.rows);
    m_screen->feed(sc.snapshot.constData(), sc.snapshot.size());
    m_screen->mark();
    m_synced = sc.synced;
    schedule();
}

void SessionScreen::restartAtStart()
{
    createAtStart();
    schedule();
}

// --- the screen's own work -------------------------------------------------------

qsizetype SessionScreen::memoryBytes() const
{
    return m_screen ? m_screen->memoryBytes() : 0;
}

void SessionScreen::create(quint64 at, const TerminalState &modes, int cols, int rows)
{
    m_screen = std::make_unique<Screen>(cols, rows);
    m_screen->setAnswerHandler([this](const char *data, qsizetype size) {
        // Only answers to queries in output no control viewer saw (a
        // viewer's terminal answers the rest; replays are never answered).
        if (m_answering && m_session.m_state == Session::State::Running && m_session.m_pty.acceptsInput())
            m_session.m_pty.write(data, size);
    });
    m_offset = at;
    m_answering = false;
    // The modes in force there (Screen::reset; also mark()s).
    m_screen->reset(modes);
}

void SessionScreen::setEnabled(bool enabled)
{
    m_enabled = enabled;
    if (enabled)
        return;
    m_flood.reset();
    m_floodTimer.stop();
    if (!m_screen)
        return;
    m_screen.reset();
    m_timer.stop();
    m_offset = 0;
    m_synced = false;
}

void SessionScreen::ensure(qsizetype parseNow)
{
    if (!m_screen && m_enabled && m_session.m_ring.startOffset() >= m_retryAt) {
        m_answerRanges.clear(); // queries before now were never meant for it
        createAtStart();
        schedule(0);
    }
    if (m_screen && parseNow > 0)
        parse(parseNow, std::numeric_limits<qint64>::max());
}

QByteArray SessionScreen::preview(quint64 *offset)
{
    // Not while flooding (its parse would stand on the output path's budget).
    ensure(m_flood.flooding() ? 0 : Session::kPreviewParseBytes);
    if (!m_screen)
        return {};
    Screen::SnapshotOptions options;
    options.synchronized = false;
    const QByteArray bytes = m_screen->snapshot(options);
    if (offset)
        *offset = m_offset;
    // Read (and rebuilt if it was compact): compacted again if nobody attaches.
    if (m_session.viewerCount() == 0 && !m_compactTimer.isActive())
        m_compactTimer.start();
    return bytes;
}

void SessionScreen::createAtStart()
{
    if (!m_enabled)
        return;
    const quint64 start = m_session.m_ring.startOffset();
    if (start == m_session.m_streamStart) {
        // Nothing dropped: the screen starts with the stream, from a fresh terminal.
        const Session::SizeChange size = m_session.sizeAt(start);
        if (!Session::screenFits(size.cols, size.rows)) {
            dropOversized();
            return;
        }
        create(start, TerminalState(), size.cols, size.rows);
        m_synced = true;
        applyEventsAt(start);
        return;
    }
    resync();
}

void SessionScreen::resync(quint64 from)
{
    // Skip to the first safe boundary at the ring's start (or at `from`),
    // with the modes in force there: the tail state is exact at the ring's
    // start, and moved on to `from` (a TerminalState parses `seq` 20 to 60
    // times faster than libvterm scrolls it).
    TerminalState st = m_session.m_tail;
    quint64 at = m_session.m_ring.startOffset();
    const quint64 end = m_session.m_ring.endOffset();
    from = std::min(from, end);
    while (at < from) {
        const RingBuffer::Span sp = m_session.m_ring.spans(at, qsizetype(from - at)).first;
        if (sp.size <= 0)
            break;
        feedState(st, at, sp.data, sp.size, m_session.m_marginResets, m_session.m_inertRuns);
        at += quint64(sp.size);
    }
    quint64 scanned = 0;
    while (!st.atSafeBoundary() && at < end && scanned < kMaxReplayBoundaryScan) {
        const char c = m_session.m_ring.at(at);
        st.feed(&c, 1);
        ++at;
        ++scanned;
    }
    if (!st.atSafeBoundary()) {
        // Stuck inside a string longer than the scan (an unterminated DCS):
        // no screen can start here. None until that has left the ring.
        m_screen.reset();
        m_offset = 0;
        m_synced = false;
        m_retryAt = end;
        m_timer.stop();
        qCDebug(lcSession) << "session" << m_session.m_id << "screen dropped: no safe boundary in" << scanned
                           << "bytes";
        return;
    }
    const Session::SizeChange size = m_session.sizeAt(at);
    if (!Session::screenFits(size.cols, size.rows)) {
        dropOversized();
        return;
    }
    if (m_screen)
        ++m_outruns;
    if (m_screen) {
        // A reset terminal in the modes in force there (Screen::reset).
        // A program that stayed in the alternate screen all along (less
        // paging, a monitor) left the normal screen under it as the screen
        // has it: kept, so once the alternate screen has been rewritten the
        // whole snapshot is exact again.
        const bool keepNormal = m_normalChangedAt <= m_offset;
        m_screen->resize(size.cols, size.rows);
        m_screen->reset(st, keepNormal);
        m_offset = at;
    } else {
        create(at, st, size.cols, size.rows);
    }
    m_synced = false;
    qCDebug(lcSession) << "session" << m_session.m_id << "screen outrun: resumes unsynced at" << at;
}

void SessionScreen::schedule(int delayMs)
{
    if (m_screen && !m_flood.flooding() && m_offset < m_session.m_ring.endOffset() && !m_timer.isActive())
        m_timer.start(delayMs);
}

void SessionScreen::measureRate(qint64 now, qsizetype bytes)
{
    // The process's CPU clock only when a window ends (FloodMeter::windowDue).
    const qint64 cpu = m_flood.windowDue(now) ? cpuNs(CLOCK_PROCESS_CPUTIME_ID) : -1;
    const FloodMeter::Change change = m_flood.output(now, bytes, cpu);
    if (change == FloodMeter::Change::Started)
        startFlood();
    else if (change == FloodMeter::Change::Ended)
        floodEnded();
}

void SessionScreen::startFlood()
{
    // Off the output path until it ends: no slices, no rescue.
    m_timer.stop();
    m_floodTimer.start();
    qCDebug(lcSession) << "session" << m_session.m_id << "output flood: the screen pauses at" << m_offset;
}

void SessionScreen::floodEnded()
{
    m_floodTimer.stop();
    if (!m_screen)
        return;
    // Still retained: the screen resumes where it paused, synced. Else it
    // restarts, unsynced, at a safe boundary near the end.
    if (m_offset < m_session.m_ring.startOffset()) {
        // Outrun: the last bytes of a flood (scrolling output) rewrite the
        // screen; parsing the whole ring again would cost far more.
        const quint64 end = m_session.m_ring.endOffset();
        resync(end > quint64(Session::kFloodResyncBytes) ? end - quint64(Session::kFloodResyncBytes) : 0);
    }
    qCDebug(lcSession) << "session" << m_session.m_id << "output flood ended: the screen resumes at" << m_offset;
    schedule();
}

void SessionScreen::dropOversized()
{
    if (m_screen)
        qCInfo(lcSession) << "session" << m_session.m_id << "screen dropped: the terminal is larger than"
                          << Session::kMaxScreenCells << "cells; reset replays are raw";
    m_screen.reset();
    m_offset = 0;
    m_synced = false;
    m_retryAt = std::max<quint64>(m_session.m_ring.endOffset(), 1);
    m_timer.stop();
    m_compactTimer.stop();
    m_compactWhenCaughtUp = false;
}

void SessionScreen::applyEventsAt(quint64 at)
{
    for (const Session::SizeChange &c : std::as_const(m_session.m_sizes)) {
        if (c.offset == at && !Session::screenFits(c.cols, c.rows)) {
            dropOversized();
            return;
        }
        if (c.offset == at && (c.cols != m_screen->cols() || c.rows != m_screen->rows()))
            m_screen->resize(c.cols, c.rows);
        if (c.offset > at)
            break;
    }
    // Where a resize reset the margins, the screen does what the viewers'
    // terminals did (libvterm keeps them): the same fixup.
    if (m_session.m_marginResets.contains(at)) {
        const QByteArray fix = TerminalState::marginResetSequence();
        m_answering = false;
        m_screen->feed(fix.constData(), fix.size());
    }
}

void SessionScreen::feed(quint64 to, bool answering)
{
    m_answering = answering;
    while (m_offset < to) {
        const auto spans = m_session.m_ring.spans(m_offset, qsizetype(to - m_offset));
        const RingBuffer::Span &sp = spans.first;
        if (sp.size <= 0)
            break;
        m_screen->feed(sp.data, sp.size);
        m_offset += quint64(sp.size);
    }
    m_answering = false;
}

void SessionScreen::parse(qsizetype maxBytes, qint64 maxUs, bool onOutputPath)
{
    if (!m_screen)
        return;
    if (m_offset < m_session.m_ring.startOffset())
        resync();
    if (!m_screen)
        return;
    QElapsedTimer clock;
    clock.start();
    const qint64 cpu0 = cpuNs(CLOCK_THREAD_CPUTIME_ID);
    const quint64 from = m_offset;
    const quint64 end = m_session.m_ring.endOffset();
    const quint64 limit = std::min(end, m_offset + quint64(std::max<qsizetype>(maxBytes, 0)));
    // Pieces of at most 4 KiB between clock checks.
    constexpr quint64 kPiece = 4096;
    while (m_offset < limit) {
        quint64 stop = std::min(limit, m_offset + kPiece);
        for (const Session::SizeChange &c : std::as_const(m_session.m_sizes))
            if (c.offset > m_offset) {
                stop = std::min(stop, c.offset);
                break;
            }
        for (const quint64 r : std::as_const(m_session.m_marginResets))
            if (r > m_offset) {
                stop = std::min(stop, r);
                break;
            }
        while (!m_answerRanges.isEmpty() && m_answerRanges.first().second <= m_offset)
            m_answerRanges.removeFirst();
        bool answering = false;
        if (!m_answerRanges.isEmpty()) {
            const auto &r = m_answerRanges.first();
            answering = r.first <= m_offset;
            stop = std::min(stop, answering ? r.second : r.first);
        }
        feed(stop, answering);
        applyEventsAt(m_offset);
        if (!m_screen)
            return; // larger than Session::kMaxScreenCells now
        if (!m_synced && m_screen->fullyRewrittenSinceMark()) {
            m_synced = true;
            qCDebug(lcSession) << "session" << m_session.m_id << "screen synced again at" << m_offset;
        }
        if (clock.nsecsElapsed() / 1000 >= maxUs)
            break;
    }
    // What the parse cost (the flood detector's measure, FloodMeter): on
    // the output path it is drawn from the screen's budget there.
    const qint64 spent = cpuNs(CLOCK_THREAD_CPUTIME_ID) - cpu0;
    const quint64 parsed = m_offset > from ? m_offset - from : 0;
    const FloodMeter::Change change = m_flood.parsed(spent, qsizetype(parsed), onOutputPath);
    if (change == FloodMeter::Change::Started) {
        startFlood();
        return;
    }
    if (m_offset >= end) {
        m_timer.stop();
        m_flood.caughtUp();
        if (m_compactWhenCaughtUp && !m_compactTimer.isActive())
            compact();
    } else {
        schedule();
    }
}

bool SessionScreen::toSafeBoundary()
{
    const quint64 end = m_session.m_ring.endOffset();
    quint64 scanned = 0;
    while (!m_screen->modes().atSafeBoundary()) {
        if (m_offset >= end || scanned >= quint64(Session::kMaxSnapshotBoundaryScan))
            return false;
        bool answering = false;
        for (const auto &r : std::as_const(m_answerRanges))
            answering = answering || (r.first <= m_offset && m_offset < r.second);
        feed(m_offset + 1, answering);
        applyEventsAt(m_offset);
        if (!m_screen)
            return false;
        ++scanned;
    }
    return true;
}

void SessionScreen::trimHeapSoon()
{
#ifdef __GLIBC__
    // libvterm's buffers (under glibc's mmap threshold at usual sizes) were
    // freed in the middle of the heap: the RSS keeps them until the pages
    // are given back. One malloc_trim() a second at most, for every
    // session compacted meanwhile (a heap walk each: not one per session).
    static QTimer *trim = nullptr;
    if (!trim) {
        trim = new QTimer(QCoreApplication::instance());
        trim->setSingleShot(true);
        trim->setInterval(1000);
        QObject::connect(trim, &QTimer::timeout, [] { ::malloc_trim(0); });
    }
    if (!trim->isActive())
        trim->start();
#endif
}

void SessionScreen::setCompactDelay(int ms)
{
    m_compactTimer.setInterval(std::max(0, ms));
}

bool SessionScreen::isCompact() const
{
    return m_screen && m_screen->isCompact();
}

void SessionScreen::compact()
{
    if (!m_screen || m_session.viewerCount() > 0)
        return;
    if (m_offset < m_session.m_ring.endOffset() || m_flood.flooding() || m_timer.isActive()) {
        // Still parsing (many sessions' screens catching up at once, a
        // flood): when the parse reaches the end (parse()), or, while
        // flooding, once more after the delay.
        m_compactWhenCaughtUp = true;
        if (m_flood.flooding())
            m_compactTimer.start();
        return;
    }
    m_compactWhenCaughtUp = false;
    const qsizetype before = m_screen->memoryBytes();
    if (m_screen->compact()) {
        qCDebug(lcSession) << "session" << m_session.m_id << "screen compacted:" << before << "->"
                           << m_screen->memoryBytes() << "bytes";
        trimHeapSoon();
    }
    else
        qCDebug(lcSession) << "session" << m_session.m_id << "screen not compacted (a rebuild would not be exact)";
}

} // namespace Tether
