// SPDX-License-Identifier: GPL-2.0-or-later
#include "session.h"
#include "logging.h"
#include "replayplan.h"
#include "procinfo.h"
#include "screen.h"
#include "shellintegration.h"

#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <QCoreApplication>
#include <algorithm>
#include <cstring>
#include <limits>
#include <utility>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>

namespace Tether {

namespace {
qint64 nowMs() { return QDateTime::currentMSecsSinceEpoch(); }
/// The flood detector's clock: CLOCK_MONOTONIC_COARSE (a vDSO read without
/// a system call, a few ms of resolution, plenty for 100 ms windows).
qint64 monotonicMs()
{
    timespec ts {};
    ::clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
    return qint64(ts.tv_sec) * 1000 + ts.tv_nsec / 1000000;
}
/// Feeds `st` (at stream offset `at`) the bytes that follow, resetting its
/// margins at the offsets in `resets` where a resize did (the viewers got a
/// fixup there). The parts in `inert` are taken without a scan.
void feedState(TerminalState &st, quint64 at, const char *data, qsizetype size, const QList<quint64> &resets,
               const InertRuns &inert)
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
/// CPU time of this thread or process (clock_gettime(2)), ns.
qint64 cpuNs(clockid_t clock)
{
    timespec ts {};
    ::clock_gettime(clock, &ts);
    return qint64(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}
QDateTime nowUtc() { return QDateTime::currentDateTimeUtc(); }
} // namespace

Session::Session(const QString &id, const SpawnOptions &options, qsizetype bufferCapacity,
                 QObject *parent)
    : QObject(parent)
    , m_id(id)
    , m_options(resolveSpawnOptions(options))
    , m_created(nowUtc())
    , m_ring(bufferCapacity)
{
    m_command = m_options.argv;
    m_cwd = m_options.cwd;
    // A session never attached counts as detached from creation (TTL rule).
    m_detachedSince = m_created;
    m_lastActivityMs = m_created.toMSecsSinceEpoch();
    // Bytes leaving the ring move the "tail" state forward, so we always know
    // the terminal modes in force at the first retained byte.
    m_ring.setEvictionHandler([this](const char *data, qsizetype size) { feedTail(data, size); });

    // The screen's parse timer: running only while the screen has output
    // to catch up on (an idle session has no wakeups); a zero-timer while
    // it catches up, kScreenSettleMs after output that found it caught up.
    m_screenTimer.setSingleShot(true);
    m_screenTimer.setTimerType(Qt::PreciseTimer);
    connect(&m_screenTimer, &QTimer::timeout, this, [this] { parseScreen(kScreenChunk, kScreenTurnUs); });
    m_silenceTimer.setSingleShot(true);
    connect(&m_silenceTimer, &QTimer::timeout, this, &Session::onSilenceTimer);
    // Compaction of a detached idle session's screen (setScreenCompactDelay()).
    m_compactTimer.setSingleShot(true);
    m_compactTimer.setInterval(kScreenCompactMs);
    connect(&m_compactTimer, &QTimer::timeout, this, &Session::compactScreen);
    // While flooding only: looks at the rate once per window, so that the
    // end of a flood is seen even when the output stops altogether.
    m_floodTimer.setInterval(int(FloodMeter::kWindowMs));
    connect(&m_floodTimer, &QTimer::timeout, this, [this] { measureRate(monotonicMs(), 0); });
    // The output hold's grace period (holdOutput()): armed only while held.
    m_holdTimer.setSingleShot(true);
    m_holdTimer.setInterval(kOutputHoldGraceMs);
    // Not early: a coarse timer may fire 5 % before its time (Qt::CoarseTimer),
    // and the grace is a promise to the client (protocol.md). One timer per
    // restart costs nothing.
    m_holdTimer.setTimerType(Qt::PreciseTimer);
    connect(&m_holdTimer, &QTimer::timeout, this, [this] {
        qCInfo(lcSession) << "session" << m_id << "output hold released: no control viewer came back within"
                          << kOutputHoldGraceMs << "ms";
        releaseOutputHold(nullptr);
    });
    m_markSink.session = this;
    connect(&m_pty, &PtyProcess::outputReady, this, &Session::onOutput);
    connect(&m_pty, &PtyProcess::finished, this, &Session::onFinished);
    connect(&m_pty, &PtyProcess::inputWritten, this, &Session::inputWritten);
    connect(&m_pty, &PtyProcess::tornDown, this, [this] {
        if (m_tornDown)
            return;
        m_tornDown = true;
        qCDebug(lcSession) << m_id << "torn down";
        Q_EMIT tornDown();
    });
}

Session::~Session()
{
    // Viewers must never hold a dangling session pointer.
    const QList<Viewer *> all = (m_control ? QList<Viewer *>{m_control} : QList<Viewer *>()) + m_watchers;
    m_control = nullptr;
    m_watchers.clear();
    for (Viewer *v : all)
        v->detached(DetachReason::Killed);
}

bool Session::start(QString *error)
{
    // The session's id in its environment, as tmux sets $TMUX: `tether
    // attach` run inside the session refuses to attach it (its output would
    // loop back into it).
    SpawnOptions options = m_options;
    options.extraEnv.prepend(QStringLiteral("TETHER_SESSION=") + m_id);
    if (ShellIntegration::apply(&options, m_shellIntegrationDir))
        qCDebug(lcSession) << "session" << m_id << "shell integration:" << options.argv;
    if (!m_pty.start(options, error))
        return false;
    m_sizes = {SizeChange{0, m_pty.cols(), m_pty.rows()}};
    m_state = State::Running;
    qCInfo(lcSession) << "session" << m_id << "started pid" << m_pty.pid();
    return true;
}

QDateTime Session::lastActivity() const
{
    return QDateTime::fromMSecsSinceEpoch(m_lastActivityMs, Qt::UTC);
}

void Session::setBufferCapacity(qsizetype bytes)
{
    m_ring.setCapacity(bytes);
    updateReadLimit();
}

void Session::feedTail(const char *data, qsizetype size)
{
    // Where a resize reset the margins, the tail state resets them too, at
    // that offset, so a reset replay's prelude has the margins really in
    // force at its first byte.
    feedState(m_tail, m_tailOffset, data, size, m_marginResets, m_inertRuns);
    m_tailOffset += quint64(size);
    m_inertRuns.dropBefore(m_tailOffset);
    // Bytes the screen never parsed are gone: it is outrun (it restarts
    // when the flood ends, or at the ring's start when it next parses).
    if (m_screen && m_screenOffset < m_tailOffset)
        m_screenSynced = false;
}

void Session::onOutput(const char *data, qsizetype size)
{
    m_compactWhenCaughtUp = false; // the compaction delay starts again below
    const quint64 from = m_ring.endOffset();
    if (m_screenEnabled)
        measureRate(monotonicMs(), size);
    // The screen must not lose bytes it has nearly reached: a program that
    // updates a few cells at a time (htop) would leave it unsynced for good.
    // Made here, before the append, when the ring first reaches half its
    // capacity (from offset 0: the stream is still whole), flood or not
    // (the ring moves on: later is too late to start from offset 0).
    const bool halfFull = m_screenRetryAt == 0 && m_ring.startOffset() == m_streamStart
        && m_ring.size() + size >= m_ring.capacity() / 2;
    // After a stretch with no safe boundary: again once it has left the ring.
    const bool retry = m_screenRetryAt > 0 && m_ring.startOffset() >= m_screenRetryAt;
    if (!m_screen && (halfFull || retry)) {
        m_answerRanges.clear(); // queries before now were never meant for it
        createScreenAtStart();
    }
    // Below the flood rate, what this read evicts unparsed is parsed first
    // (bounded: a screen further behind than kScreenChunk is outrun). While
    // flooding, nothing: the screen is off the output path.
    if (m_screen && !m_flood.flooding() && m_screenOffset >= m_ring.startOffset()) {
        const quint64 evictTo = m_ring.startOffset()
            + quint64(std::max<qsizetype>(0, m_ring.size() + std::min(size, m_ring.capacity()) - m_ring.capacity()));
        if (m_screenOffset < evictTo && evictTo - m_screenOffset <= quint64(kScreenChunk))
            parseScreen(qsizetype(evictTo - m_screenOffset), std::numeric_limits<qint64>::max(), true);
    }
    m_ring.append(data, size);
    const quint64 queries = m_head.queriesSeen();
    // What the head finds inert, the tail takes unscanned when it leaves
    // the ring (InertRuns).
    m_inertRuns.add(from, from + quint64(m_head.feedReportingInert(data, size)));
    m_lastActivityMs = nowMs();
    if (m_notifySettings.activity || m_notifySettings.silence > 0)
        onOutputAlerts();
    // Shell-integration marks and notifications (ShellMarkScanner: memchr
    // for ESC and BEL, then only OSC bytes are looked at).
    m_marks.scan(data, size, from, m_markSink);
    if ((m_head.takeEvents() & (TerminalState::AltScreenEntered | TerminalState::CursorSaved | TerminalState::FullReset))
        || !m_head.hasMode(TerminalState::AltScreen))
        m_normalChangedAt = m_ring.endOffset();

    // The screen (see hasScreen()): this path only records and schedules.
    const quint64 end = m_ring.endOffset();
    if (!m_control) {
        // Queries in output no control viewer saw are the server's to answer.
        if (!m_answerRanges.isEmpty() && m_answerRanges.last().second == from)
            m_answerRanges.last().second = end;
        else
            m_answerRanges.append({from, end});
        while (m_answerRanges.size() > kMaxAnswerRanges)
            m_answerRanges.removeFirst();
    }
    if (!m_control && !m_flood.flooding() && m_head.queriesSeen() != queries) {
        // A program waits for an answer now: parse up to it at once.
        if (!m_screen && m_ring.startOffset() >= m_screenRetryAt) {
            // Older queries were never meant for us: only this output's.
            m_answerRanges = {{from, end}};
            createScreenAtStart();
        }
        parseScreen(kScreenChunk, kScreenTurnUs);
    }

    if (m_hold)
        updateReadLimit(); // what is left of the room this read used
    forEachViewer([=](Viewer *v) { v->output(data, size); });
    // The screen's turn comes after the viewers have the bytes, and not in
    // this turn of the event loop (scheduleScreen(kScreenSettleMs)).
    scheduleScreen(kScreenSettleMs);
    if (m_screen && viewerCount() == 0)
        m_compactTimer.start();

    if (m_head.titleSerial() != m_titleSerial) {
        m_titleSerial = m_head.titleSerial();
        const QString t = m_head.title();
        forEachViewer([&t](Viewer *v) { v->titleChanged(t); });
        Q_EMIT titleChanged(t);
    }
    Q_EMIT outputArrived(size);
}

// --- commands and notifications ------------------------------------------------

void Session::setNotifySettings(const NotifySettings &settings)
{
    if (settings == m_notifySettings)
        return;
    const NotifySettings before = m_notifySettings;
    m_notifySettings = settings;
    m_notifySettings.silence = std::clamp(settings.silence, 0, kMaxSilenceSeconds);
    if (m_notifySettings.activity && !before.activity)
        m_activityArmed = true;
    if (m_notifySettings.silence != before.silence) {
        // Counted from now: the silence before it was asked for is not one.
        m_silenceArmed = true;
        m_lastOutputMono = monotonicMs();
        scheduleSilence();
    }
    Q_EMIT notifySettingsChanged();
}

void Session::onOutputAlerts()
{
    if (m_notifySettings.activity && m_activityArmed && viewerCount() == 0) {
        m_activityArmed = false;
        if (!m_notifySettings.muted)
            Q_EMIT notify(QStringLiteral("activity"), QStringLiteral("output while nobody watched"), false, false,
                          CommandRecord());
    }
    if (m_notifySettings.silence > 0) {
        m_lastOutputMono = monotonicMs();
        if (!m_silenceArmed) { // it told of the last silence: count the next one from here
            m_silenceArmed = true;
            scheduleSilence();
        }
    }
}

void Session::scheduleSilence()
{
    if (m_notifySettings.silence <= 0 || !m_silenceArmed || m_state != State::Running) {
        m_silenceTimer.stop();
        return;
    }
    const qint64 due = m_lastOutputMono + qint64(m_notifySettings.silence) * 1000;
    m_silenceTimer.start(int(std::clamp<qint64>(due - monotonicMs(), 0, qint64(kMaxSilenceSeconds) * 1000)));
}

void Session::onSilenceTimer()
{
    if (m_notifySettings.silence <= 0 || !m_silenceArmed || m_state != State::Running)
        return;
    if (monotonicMs() - m_lastOutputMono < qint64(m_notifySettings.silence) * 1000) {
        scheduleSilence(); // output came meanwhile: the rest of the time from it
        return;
    }
    m_silenceArmed = false;
    if (!m_notifySettings.muted)
        Q_EMIT notify(QStringLiteral("silence"), QStringLiteral("no output for %1 s").arg(m_notifySettings.silence),
                      viewerCount() > 0, false, CommandRecord());
}

bool Session::takeNextRequest()
{
    if (!m_notifySettings.next)
        return false;
    m_notifySettings.next = false;
    Q_EMIT notifySettingsChanged();
    return true;
}

void Session::commandEnded(const CommandRecord &c, bool watched)
{
    Q_EMIT commandFinished(c);
    const bool requested = takeNextRequest();
    if (!requested && (m_notifySettings.muted || c.endMs - c.startMs < m_notifyAfterMs))
        return;
    const QString text = c.commandLine.isEmpty() ? QStringLiteral("command finished") : c.commandLine;
    Q_EMIT notify(QStringLiteral("command"), text, watched, requested, c);
}

void Session::onShellMark(const ShellMark &mark)
{
    const qint64 now = nowMs();
    const bool watched = viewerCount() > 0;
    if (mark.kind == ShellMark::Bell || mark.kind == ShellMark::Notify) {
        if (m_notifySettings.muted)
            return;
        NotifyBucket &b = m_notifyBuckets[mark.kind == ShellMark::Bell ? 0 : 1];
        const qint64 mono = monotonicMs();
        if (b.atMs != 0)
            b.tokens = std::min<double>(kNotifyBurst, b.tokens + double(mono - b.atMs) / double(kNotifyIntervalMs));
        b.atMs = mono;
        if (b.tokens < 1)
            return;
        b.tokens -= 1;
        QString text;
        if (mark.kind == ShellMark::Notify) {
            text = QString::fromUtf8(mark.payload, int(mark.payloadSize));
            text.replace(QLatin1Char(';'), QStringLiteral(": ")); // 777's "title;body"
        }
        Q_EMIT notify(mark.kind == ShellMark::Bell ? QStringLiteral("bell") : QStringLiteral("message"), text,
                      watched, false, CommandRecord());
        return;
    }
    switch (m_commands.apply(mark, now)) {
    case CommandLog::Change::None:
        return;
    case CommandLog::Change::State:
        Q_EMIT shellStateChanged();
        return;
    case CommandLog::Change::Started:
        if (m_commands.finishedBefore())
            commandEnded(*m_commands.finishedBefore(), watched);
        Q_EMIT commandStarted(*m_commands.last());
        return;
    case CommandLog::Change::Finished:
        commandEnded(*m_commands.last(), watched);
        return;
    }
}

// --- the server-side screen ---------------------------------------------------

qsizetype Session::screenBytes() const
{
    return m_screen ? m_screen->memoryBytes() : 0;
}

Session::SizeChange Session::sizeAt(quint64 offset) const
{
    SizeChange in{offset, m_pty.cols(), m_pty.rows()};
    for (const SizeChange &c : m_sizes) {
        if (c.offset > offset)
            break;
        in = c;
    }
    return in;
}

void Session::recordSize(int cols, int rows)
{
    const quint64 at = m_ring.endOffset();
    if (!m_sizes.isEmpty() && m_sizes.last().offset == at)
        m_sizes.last() = SizeChange{at, cols, rows};
    else
        m_sizes.append(SizeChange{at, cols, rows});
    // Keep the size in force at the ring's start (or at S, if lower).
    const quint64 keepFrom = m_screen ? std::min(m_screenOffset, m_ring.startOffset()) : m_ring.startOffset();
    while (m_sizes.size() >= 2 && m_sizes.at(1).offset <= keepFrom)
        m_sizes.removeFirst();
}

QList<quint64> Session::wholeScreenMargins(int rows) const
{
    QList<quint64> out;
    const quint64 start = m_ring.startOffset();
    const quint64 end = m_ring.endOffset();
    // The sizes in force over [start, end): nothing to do when all are `rows`.
    bool other = sizeAt(start).rows != rows;
    for (const SizeChange &c : m_sizes)
        other = other || (c.offset > start && c.offset < end && c.rows != rows);
    if (!other)
        return out;
    // "ESC [ digits/; r", read through RingBuffer::at() (a sequence may
    // straddle the ring's wrap).
    const auto decstbmEnd = [&](quint64 esc) -> quint64 {
        constexpr int kMaxParamBytes = 16;
        quint64 at = esc + 1;
        if (at >= end || m_ring.at(at) != '[')
            return 0;
        int top = 0, bottom = 0, param = 0;
        for (++at; at < end && at - esc < quint64(kMaxParamBytes) + 2; ++at) {
            const char c = m_ring.at(at);
            if (c >= '0' && c <= '9') {
                int &v = param == 0 ? top : bottom;
                v = std::min(v * 10 + (c - '0'), 100000);
            } else if (c == ';') {
                ++param;
            } else if (c == 'r') {
                const int inForce = sizeAt(at).rows;
                const bool whole = top <= 1 && bottom > 0 && bottom >= inForce;
                return whole && inForce != rows ? at + 1 : 0;
            } else {
                return 0;
            }
        }
        return 0;
    };
    quint64 at = start;
    while (at < end) {
        const RingBuffer::Span sp = m_ring.spans(at, qsizetype(end - at)).first;
        if (sp.size <= 0)
            break;
        const char *p = sp.data;
        const char *stop = sp.data + sp.size;
        while ((p = static_cast<const char *>(std::memchr(p, '\x1b', size_t(stop - p))))) {
            const quint64 esc = at + quint64(p - sp.data);
            if (const quint64 after = decstbmEnd(esc))
                out.append(after);
            ++p;
        }
        at += quint64(sp.size);
    }
    return out;
}

void Session::createScreen(quint64 at, const TerminalState &modes, int cols, int rows)
{
    m_screen = std::make_unique<Screen>(cols, rows);
    m_screen->setAnswerHandler([this](const char *data, qsizetype size) {
        // Only answers to queries in output no control viewer saw (a
        // viewer's terminal answers the rest; replays are never answered).
        if (m_screenAnswering && m_state == State::Running && m_pty.acceptsInput())
            m_pty.write(data, size);
    });
    m_screenOffset = at;
    m_screenAnswering = false;
    // The modes in force there (Screen::reset; also mark()s).
    m_screen->reset(modes);
}

void Session::setScreenEnabled(bool enabled)
{
    m_screenEnabled = enabled;
    if (enabled)
        return;
    m_flood.reset();
    m_floodTimer.stop();
    if (!m_screen)
        return;
    m_screen.reset();
    m_screenTimer.stop();
    m_screenOffset = 0;
    m_screenSynced = false;
}

void Session::ensureScreen(qsizetype parseNow)
{
    if (!m_screen && m_screenEnabled && m_ring.startOffset() >= m_screenRetryAt) {
        m_answerRanges.clear(); // queries before now were never meant for it
        createScreenAtStart();
        scheduleScreen(0);
    }
    if (m_screen && parseNow > 0)
        parseScreen(parseNow, std::numeric_limits<qint64>::max());
}

QByteArray Session::screenPreview(quint64 *offset)
{
    // Not while flooding (its parse would stand on the output path's budget).
    ensureScreen(m_flood.flooding() ? 0 : kPreviewParseBytes);
    if (!m_screen)
        return {};
    Screen::SnapshotOptions options;
    options.synchronized = false;
    const QByteArray bytes = m_screen->snapshot(options);
    if (offset)
        *offset = m_screenOffset;
    // Read (and rebuilt if it was compact): compacted again if nobody attaches.
    if (viewerCount() == 0 && !m_compactTimer.isActive())
        m_compactTimer.start();
    return bytes;
}

void Session::createScreenAtStart()
{
    if (!m_screenEnabled)
        return;
    const quint64 start = m_ring.startOffset();
    if (start == m_streamStart) {
        // Nothing dropped: the screen starts with the stream, from a fresh terminal.
        const SizeChange size = sizeAt(start);
        if (!screenFits(size.cols, size.rows)) {
            dropOversizedScreen();
            return;
        }
        createScreen(start, TerminalState(), size.cols, size.rows);
        m_screenSynced = true;
        applyScreenEventsAt(start);
        return;
    }
    resyncScreen();
}

void Session::resyncScreen(quint64 from)
{
    // Skip to the first safe boundary at the ring's start (or at `from`),
    // with the modes in force there: the tail state is exact at the ring's
    // start, and moved on to `from` (a TerminalState parses `seq` 20 to 60
    // times faster than libvterm scrolls it).
    TerminalState st = m_tail;
    quint64 at = m_ring.startOffset();
    const quint64 end = m_ring.endOffset();
    from = std::min(from, end);
    while (at < from) {
        const RingBuffer::Span sp = m_ring.spans(at, qsizetype(from - at)).first;
        if (sp.size <= 0)
            break;
        feedState(st, at, sp.data, sp.size, m_marginResets, m_inertRuns);
        at += quint64(sp.size);
    }
    quint64 scanned = 0;
    while (!st.atSafeBoundary() && at < end && scanned < kMaxReplayBoundaryScan) {
        const char c = m_ring.at(at);
        st.feed(&c, 1);
        ++at;
        ++scanned;
    }
    if (!st.atSafeBoundary()) {
        // Stuck inside a string longer than the scan (an unterminated DCS):
        // no screen can start here. None until that has left the ring.
        m_screen.reset();
        m_screenOffset = 0;
        m_screenSynced = false;
        m_screenRetryAt = end;
        m_screenTimer.stop();
        qCDebug(lcSession) << "session" << m_id << "screen dropped: no safe boundary in" << scanned << "bytes";
        return;
    }
    const SizeChange size = sizeAt(at);
    if (!screenFits(size.cols, size.rows)) {
        dropOversizedScreen();
        return;
    }
    if (m_screen)
        ++m_screenOutruns;
    if (m_screen) {
        // A reset terminal in the modes in force there (Screen::reset).
        // A program that stayed in the alternate screen all along (less
        // paging, a monitor) left the normal screen under it as the screen
        // has it: kept, so once the alternate screen has been rewritten the
        // whole snapshot is exact again.
        const bool keepNormal = m_normalChangedAt <= m_screenOffset;
        m_screen->resize(size.cols, size.rows);
        m_screen->reset(st, keepNormal);
        m_screenOffset = at;
    } else {
        createScreen(at, st, size.cols, size.rows);
    }
    m_screenSynced = false;
    qCDebug(lcSession) << "session" << m_id << "screen outrun: resumes unsynced at" << at;
}

void Session::scheduleScreen(int delayMs)
{
    if (m_screen && !m_flood.flooding() && m_screenOffset < m_ring.endOffset() && !m_screenTimer.isActive())
        m_screenTimer.start(delayMs);
}

void Session::measureRate(qint64 now, qsizetype bytes)
{
    // The process's CPU clock only when a window ends (FloodMeter::windowDue).
    const qint64 cpu = m_flood.windowDue(now) ? cpuNs(CLOCK_PROCESS_CPUTIME_ID) : -1;
    const FloodMeter::Change change = m_flood.output(now, bytes, cpu);
    if (change == FloodMeter::Change::Started)
        startFlood();
    else if (change == FloodMeter::Change::Ended)
        floodEnded();
}

void Session::startFlood()
{
    // Off the output path until it ends: no slices, no rescue.
    m_screenTimer.stop();
    m_floodTimer.start();
    qCDebug(lcSession) << "session" << m_id << "output flood: the screen pauses at" << m_screenOffset;
}

void Session::floodEnded()
{
    m_floodTimer.stop();
    if (!m_screen)
        return;
    // Still retained: the screen resumes where it paused, synced. Else it
    // restarts, unsynced, at a safe boundary near the end.
    if (m_screenOffset < m_ring.startOffset()) {
        // Outrun: the last bytes of a flood (scrolling output) rewrite the
        // screen; parsing the whole ring again would cost far more.
        const quint64 end = m_ring.endOffset();
        resyncScreen(end > quint64(kFloodResyncBytes) ? end - quint64(kFloodResyncBytes) : 0);
    }
    qCDebug(lcSession) << "session" << m_id << "output flood ended: the screen resumes at" << m_screenOffset;
    scheduleScreen();
}

void Session::dropOversizedScreen()
{
    if (m_screen)
        qCInfo(lcSession) << "session" << m_id << "screen dropped: the terminal is larger than" << kMaxScreenCells
                          << "cells; reset replays are raw";
    m_screen.reset();
    m_screenOffset = 0;
    m_screenSynced = false;
    m_screenRetryAt = std::max<quint64>(m_ring.endOffset(), 1);
    m_screenTimer.stop();
    m_compactTimer.stop();
    m_compactWhenCaughtUp = false;
}

void Session::applyScreenEventsAt(quint64 at)
{
    for (const SizeChange &c : std::as_const(m_sizes)) {
        if (c.offset == at && !screenFits(c.cols, c.rows)) {
            dropOversizedScreen();
            return;
        }
        if (c.offset == at && (c.cols != m_screen->cols() || c.rows != m_screen->rows()))
            m_screen->resize(c.cols, c.rows);
        if (c.offset > at)
            break;
    }
    // Where a resize reset the margins, the screen does what the viewers'
    // terminals did (libvterm keeps them): the same fixup.
    if (m_marginResets.contains(at)) {
        const QByteArray fix = TerminalState::marginResetSequence();
        m_screenAnswering = false;
        m_screen->feed(fix.constData(), fix.size());
    }
}

void Session::feedScreen(quint64 to, bool answering)
{
    m_screenAnswering = answering;
    while (m_screenOffset < to) {
        const auto spans = m_ring.spans(m_screenOffset, qsizetype(to - m_screenOffset));
        const RingBuffer::Span &sp = spans.first;
        if (sp.size <= 0)
            break;
        m_screen->feed(sp.data, sp.size);
        m_screenOffset += quint64(sp.size);
    }
    m_screenAnswering = false;
}

void Session::parseScreen(qsizetype maxBytes, qint64 maxUs, bool onOutputPath)
{
    if (!m_screen)
        return;
    if (m_screenOffset < m_ring.startOffset())
        resyncScreen();
    if (!m_screen)
        return;
    QElapsedTimer clock;
    clock.start();
    const qint64 cpu0 = cpuNs(CLOCK_THREAD_CPUTIME_ID);
    const quint64 from = m_screenOffset;
    const quint64 end = m_ring.endOffset();
    const quint64 limit = std::min(end, m_screenOffset + quint64(std::max<qsizetype>(maxBytes, 0)));
    // Pieces of at most 4 KiB between clock checks.
    constexpr quint64 kPiece = 4096;
    while (m_screenOffset < limit) {
        quint64 stop = std::min(limit, m_screenOffset + kPiece);
        for (const SizeChange &c : std::as_const(m_sizes))
            if (c.offset > m_screenOffset) {
                stop = std::min(stop, c.offset);
                break;
            }
        for (const quint64 r : std::as_const(m_marginResets))
            if (r > m_screenOffset) {
                stop = std::min(stop, r);
                break;
            }
        while (!m_answerRanges.isEmpty() && m_answerRanges.first().second <= m_screenOffset)
            m_answerRanges.removeFirst();
        bool answering = false;
        if (!m_answerRanges.isEmpty()) {
            const auto &r = m_answerRanges.first();
            answering = r.first <= m_screenOffset;
            stop = std::min(stop, answering ? r.second : r.first);
        }
        feedScreen(stop, answering);
        applyScreenEventsAt(m_screenOffset);
        if (!m_screen)
            return; // larger than kMaxScreenCells now
        if (!m_screenSynced && m_screen->fullyRewrittenSinceMark()) {
            m_screenSynced = true;
            qCDebug(lcSession) << "session" << m_id << "screen synced again at" << m_screenOffset;
        }
        if (clock.nsecsElapsed() / 1000 >= maxUs)
            break;
    }
    // What the parse cost (the flood detector's measure, FloodMeter): on
    // the output path it is drawn from the screen's budget there.
    const qint64 spent = cpuNs(CLOCK_THREAD_CPUTIME_ID) - cpu0;
    const quint64 parsed = m_screenOffset > from ? m_screenOffset - from : 0;
    const FloodMeter::Change change = m_flood.parsed(spent, qsizetype(parsed), onOutputPath);
    if (change == FloodMeter::Change::Started) {
        startFlood();
        return;
    }
    if (m_screenOffset >= end) {
        m_screenTimer.stop();
        m_flood.caughtUp();
        if (m_compactWhenCaughtUp && !m_compactTimer.isActive())
            compactScreen();
    } else {
        scheduleScreen();
    }
}

bool Session::screenToSafeBoundary()
{
    const quint64 end = m_ring.endOffset();
    quint64 scanned = 0;
    while (!m_screen->modes().atSafeBoundary()) {
        if (m_screenOffset >= end || scanned >= quint64(kMaxSnapshotBoundaryScan))
            return false;
        bool answering = false;
        for (const auto &r : std::as_const(m_answerRanges))
            answering = answering || (r.first <= m_screenOffset && m_screenOffset < r.second);
        feedScreen(m_screenOffset + 1, answering);
        applyScreenEventsAt(m_screenOffset);
        if (!m_screen)
            return false;
        ++scanned;
    }
    return true;
}

void Session::onFinished(const ExitStatus &status)
{
    m_state = State::Exited;
    m_exitedAt = nowUtc();
    qCInfo(lcSession) << "session" << m_id << "exited"
                      << (status.signaled ? "by signal" : "with code")
                      << (status.signaled ? status.signal : status.code);
    // finished() comes after the last output byte of the leader, so every
    // viewer has seen all output before it hears of the exit.
    forEachViewer([&status](Viewer *v) { v->exited(status); });
    m_silenceTimer.stop();
    const bool watched = viewerCount() > 0;
    // A command still running ended with its shell (`exit 3`, `exec prog`):
    // its status is the session's (128 + N for signal N, as a shell says).
    if (m_commands.endRunning(nowMs(), m_ring.endOffset(), status.signaled ? 128 + status.signal : status.code))
        Q_EMIT commandFinished(*m_commands.last());
    Q_EMIT exited(status);
    // The exit says it: a `next` request still waiting is answered by it.
    const bool requested = takeNextRequest();
    if (requested || !m_notifySettings.muted)
        Q_EMIT notify(QStringLiteral("exit"),
                      status.signaled ? QStringLiteral("killed by signal %1").arg(status.signal)
                                      : QStringLiteral("exited with code %1").arg(status.code),
                      watched, requested, CommandRecord());
}

void Session::attach(Viewer *viewer, ViewerMode mode, const ReplayRequest &request)
{
    const std::optional<quint64> resume = request.resume;
    if (!viewer)
        return;
    if (viewer == m_control || m_watchers.contains(viewer))
        detach(viewer);
    m_compactTimer.stop(); // a compact screen is rebuilt by its first use below
    m_compactWhenCaughtUp = false;

    if (mode == ViewerMode::Control && m_control) {
        Viewer *old = m_control;
        m_control = nullptr;
        m_controlBlocked = false;
        qCDebug(lcSession) << "session" << m_id << "control viewer superseded";
        old->detached(DetachReason::Superseded);
    }

    // The control viewer's size, before anything is planned (see the
    // header): the superseded viewer is gone, this one is not attached yet,
    // so only the watchers hear of it (a `size` message); this one learns
    // it from AttachInfo.
    bool resized = false;
    const int rowsBefore = m_pty.rows();
    if (mode == ViewerMode::Control && request.cols > 0 && request.rows > 0 && m_state == State::Running
        && (request.cols != m_pty.cols() || request.rows != m_pty.rows()))
        resized = applySize(request.cols, request.rows);

    // The screen snapshot (see the header): only for a reset replay, of a
    // stream whose beginning was dropped, on request, or at a new size (of
    // a stream with output: a reset terminal is the screen of one without).
    const bool reset = !resume || *resume < m_ring.startOffset() || *resume > m_ring.endOffset();
    if (m_ring.endOffset() == 0)
        resized = false; // nothing to repaint
    std::optional<SnapshotOffer> offer;
    QByteArray snapshot;
    if (reset && (request.screen || m_ring.startOffset() > m_streamStart || resized)) {
        bool fallBack = false;
        if (!m_screen && (request.screen || resized) && m_ring.startOffset() >= m_screenRetryAt) {
            // Made now, so the next such attach finds it; parsed at once only
            // when that is cheap, else this attach gets the raw replay.
            createScreenAtStart();
            if (!m_screen)
                ; // no safe boundary to start at: raw replay
            else if (m_ring.endOffset() - m_screenOffset <= quint64(kMaxSyncScreenParse))
                parseScreen(kMaxSyncScreenParse, std::numeric_limits<qint64>::max());
            else
                fallBack = true; // parsed in the background, for the next attach
        } else if (m_screen && !m_flood.flooding() && resized && m_screenOffset < m_ring.endOffset()
                   && m_ring.endOffset() - std::max(m_screenOffset, m_ring.startOffset()) <= quint64(kMaxSyncScreenParse)) {
            // At a new size the snapshot must be taken at the end, where the
            // screen takes the new size: what it has not parsed yet (usually
            // nothing, it follows within kScreenSettleMs), all of it.
            parseScreen(kMaxSyncScreenParse, std::numeric_limits<qint64>::max());
        } else if (m_screen && !m_flood.flooding() && (request.screen || !screenSynced())) {
            // A slice of the timer's work (up to kScreenTurnUs), only where
            // it changes what this viewer gets: a replay=screen reply is the
            // shorter the nearer S is to the end, and an unsynced screen may
            // sync. A synced screen's snapshot at S followed by [S, end)
            // shows what one at the end would; the timer parses the rest.
            parseScreen(kScreenChunk, kScreenTurnUs);
        }
        // While flooding the screen parses nothing, here too: an outrun
        // screen would restart at the ring's start and parse a slice (4 ms
        // of libvterm) on every attach, only to be outrun again. It gets no
        // snapshot (raw replay, exact for the scrolling output a flood is)
        // and resyncs near the end once the flood is over (floodEnded()).
        // That parse was make bench's reattach regression: 5.76 ms for a
        // full 1 MiB ring at c6f41fd, 0.92 ms before the screen.
        if (m_screen && !m_flood.flooding() && m_screenOffset < m_ring.startOffset())
            resyncScreen();
        // At a new size only a snapshot at the end has it (one before would
        // be painted at the old size into the viewer's new one).
        const bool sizeOk = !resized || m_screenOffset == m_ring.endOffset();
        if (!fallBack && sizeOk && screenSynced() && screenToSafeBoundary()) {
            offer = SnapshotOffer{m_screenOffset, request.screen, resized};
            Screen::SnapshotOptions o;
            if (request.screen) {
                o.inPlace = false;
                o.scrollbackLines = std::clamp(request.lines, 0, kMaxReplayLines);
            } else if (resized && m_pty.rows() > rowsBefore) {
                // Taller: the raw replay left lines on the viewer's screen
                // above those the screen kept in its old rows (they went to
                // the screen's scrollback). The in-place repaint would paint
                // over them: they go to the viewer's scrollback first.
                o.pushLines = int(std::min<qsizetype>(m_screen->scrollbackLineCount(), m_pty.rows() - rowsBefore));
            }
            snapshot = m_screen->snapshot(o);
        }
        scheduleScreen();
    }
    // Bytes written at another number of rows than the viewer's (issue
    // 29): margins that were the whole screen there are none for it.
    const int viewerRows = m_pty.rows();
    const QList<quint64> whole = wholeScreenMargins(viewerRows);
    TerminalState tail = m_tail;
    if (tail.marginsWholeScreen(sizeAt(m_ring.startOffset()).rows) && sizeAt(m_ring.startOffset()).rows != viewerRows)
        tail.marginsResetByResize();
    const ReplayPlan plan = planReplay(m_ring, tail, m_marginResets, resume, offer, whole, m_streamStart);
    if (!plan.snapshotAt)
        snapshot.clear();
    AttachInfo info;
    info.mode = mode;
    info.reset = plan.reset;
    info.reason = plan.reason;
    info.replayFrom = plan.replayFrom;
    info.preludeBytes = plan.prelude.size();
    info.replayBytes = plan.replayBytes();
    info.offset = plan.offset;
    info.snapshotAt = plan.snapshotAt;
    info.snapshotBytes = plan.snapshotAt ? snapshot.size() : 0;
    info.screenReplay = plan.screenReplay;
    info.exited = m_state == State::Exited;
    info.cols = m_pty.cols();
    info.rows = m_pty.rows();

    if (mode == ViewerMode::Control)
        m_control = viewer;
    else
        m_watchers.append(viewer);
    // A control viewer holds the program back itself (backpressure): the
    // restart's hold is over, whether this is the viewer it was for or not.
    if (mode == ViewerMode::Control && m_hold)
        releaseOutputHold("a control viewer attached");
    updateDetached();
    updatePause();

    auto stillAttached = [this, viewer] { return viewer == m_control || m_watchers.contains(viewer); };
    viewer->attached(this, info);
    if (stillAttached() && !plan.prelude.isEmpty())
        viewer->output(plan.prelude.constData(), plan.prelude.size());
    // The replay, with a fixup where a resize reset the scroll margins.
    const QByteArray fix = TerminalState::marginResetSequence();
    quint64 at = plan.replayFrom;
    auto replayUpTo = [&](quint64 to) {
        if (to <= at)
            return;
        const auto spans = m_ring.spans(at, qsizetype(to - at));
        if (stillAttached() && spans.first.size)
            viewer->output(spans.first.data, spans.first.size);
        if (stillAttached() && spans.second.size)
            viewer->output(spans.second.data, spans.second.size);
        at = to;
    };
    // The snapshot goes at its offset, after a fixup there.
    bool snapshotSent = !plan.snapshotAt;
    auto sendSnapshotBefore = [&](quint64 next, bool inclusive) {
        if (snapshotSent || (inclusive ? *plan.snapshotAt > next : *plan.snapshotAt >= next))
            return;
        replayUpTo(*plan.snapshotAt);
        if (stillAttached() && !snapshot.isEmpty())
            viewer->output(snapshot.constData(), snapshot.size());
        snapshotSent = true;
    };
    const QByteArray wholeFix = TerminalState::wholeScreenMarginsSequence();
    for (qsizetype i = 0, j = 0; i < plan.fixups.size() || j < plan.wholeScreenFixups.size();) {
        // Both lists ascending; at one offset the resize's fixup first.
        const bool resizeFix = j >= plan.wholeScreenFixups.size()
            || (i < plan.fixups.size() && plan.fixups.at(i) <= plan.wholeScreenFixups.at(j));
        const quint64 fixup = resizeFix ? plan.fixups.at(i++) : plan.wholeScreenFixups.at(j++);
        sendSnapshotBefore(fixup, false);
        replayUpTo(fixup);
        if (stillAttached())
            viewer->fixup(resizeFix ? fix : wholeFix);
    }
    sendSnapshotBefore(plan.offset, true);
    replayUpTo(plan.offset);
    if (stillAttached() && info.exited)
        viewer->exited(m_pty.exitStatus());
    // Debug, not info: one line per attach filled the log (issue 10: 742,920
    // attach cycles wrote 93 MB).
    qCDebug(lcSession) << "session" << m_id << (mode == ViewerMode::Control ? "control" : "watch")
                       << "viewer attached, replay" << info.replayBytes << "bytes";
    m_activityArmed = true; // someone looked: the next activity tells again
    Q_EMIT viewersChanged();
}

void Session::detach(Viewer *viewer)
{
    bool changed = false;
    if (viewer && viewer == m_control) {
        m_control = nullptr;
        m_controlBlocked = false;
        changed = true;
    } else if (viewer && m_watchers.removeOne(viewer)) {
        changed = true;
    }
    if (!changed)
        return;
    updateDetached();
    updatePause();
    if (m_screen && viewerCount() == 0)
        m_compactTimer.start();
    Q_EMIT viewersChanged();
}

void Session::trimHeapSoon()
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

void Session::setScreenCompactDelay(int ms)
{
    m_compactTimer.setInterval(std::max(0, ms));
}

bool Session::screenCompact() const
{
    return m_screen && m_screen->isCompact();
}

void Session::compactScreen()
{
    if (!m_screen || viewerCount() > 0)
        return;
    if (m_screenOffset < m_ring.endOffset() || m_flood.flooding() || m_screenTimer.isActive()) {
        // Still parsing (many sessions' screens catching up at once, a
        // flood): when the parse reaches the end (parseScreen()), or, while
        // flooding, once more after the delay.
        m_compactWhenCaughtUp = true;
        if (m_flood.flooding())
            m_compactTimer.start();
        return;
    }
    m_compactWhenCaughtUp = false;
    const qsizetype before = m_screen->memoryBytes();
    if (m_screen->compact()) {
        qCDebug(lcSession) << "session" << m_id << "screen compacted:" << before << "->" << m_screen->memoryBytes()
                           << "bytes";
        trimHeapSoon();
    }
    else
        qCDebug(lcSession) << "session" << m_id << "screen not compacted (a rebuild would not be exact)";
}

bool Session::sendInput(Viewer *from, const char *data, qsizetype size)
{
    if (from != m_control || m_state != State::Running)
        return true;
    m_lastActivityMs = nowMs();
    // Input racing the program's exit (the master already hit EIO, the pidfd
    // has not fired yet) is dropped: the viewer gets the exit, not "input
    // stalled". Only a full queue makes write() fail from here on.
    if (!m_pty.acceptsInput())
        return true;
    return m_pty.write(data, size);
}

bool Session::sendApiInput(const QByteArray &data)
{
    if (m_state != State::Running || !m_pty.acceptsInput())
        return false;
    m_lastActivityMs = nowMs();
    return m_pty.write(data.constData(), data.size());
}

bool Session::resize(Viewer *from, int cols, int rows)
{
    if (from != m_control)
        return false;
    return applySize(cols, rows);
}

bool Session::applySize(int cols, int rows)
{
    const bool changed = cols != m_pty.cols() || rows != m_pty.rows();
    if (!m_pty.resize(cols, rows))
        return false;
    forEachViewer([cols, rows](Viewer *v) { v->sizeChanged(cols, rows); });
    // The same size again (a reattach sends its size) changes nothing: the
    // kernel sends no SIGWINCH and the program keeps relying on its margins.
    if (changed && m_head.marginsSet()) {
        // The resized terminal now scrolls the full screen; the bytes will
        // not say so. Remember where, for replays, and tell the viewers now
        // (a CLI watcher's terminal was not resized, so it did not reset).
        m_head.marginsResetByResize();
        while (!m_marginResets.isEmpty()
               && (m_marginResets.first() < m_ring.startOffset() || m_marginResets.size() >= kMaxMarginResets))
            m_marginResets.removeFirst();
        m_marginResets.append(m_ring.endOffset());
        const QByteArray fix = TerminalState::marginResetSequence();
        forEachViewer([&fix](Viewer *v) { v->fixup(fix); });
    }
    if (changed) {
        // The screen applies it when its parse reaches this offset (output
        // before it was made at the old size); now, if it has caught up.
        recordSize(cols, rows);
        if (m_screen && m_screenOffset == m_ring.endOffset())
            applyScreenEventsAt(m_screenOffset);
    }
    Q_EMIT sizeChanged(cols, rows);
    return true;
}

void Session::setViewerBlocked(Viewer *viewer, bool blocked)
{
    if (viewer != m_control || m_controlBlocked == blocked)
        return;
    m_controlBlocked = blocked;
    updatePause();
}

void Session::updatePause()
{
    // Only the control viewer holds the producer back; with nobody (or only
    // watchers) attached, output drains into the ring at full speed.
    m_pty.setReadEnabled(!(m_control && m_controlBlocked));
}

void Session::holdOutput(quint64 offset)
{
    m_hold = offset;
    m_holdTimer.start();
    updateReadLimit();
    qCDebug(lcSession) << "session" << m_id << "output held from" << offset << "(ring" << m_ring.startOffset()
                       << "to" << m_ring.endOffset() << ")";
}

void Session::advanceOutputHold(quint64 offset)
{
    if (!m_hold || offset <= *m_hold)
        return;
    m_hold = offset;
    updateReadLimit();
}

void Session::releaseOutputHold(const char *why)
{
    if (!m_hold)
        return;
    m_hold.reset();
    m_holdTimer.stop();
    updateReadLimit();
    if (why)
        qCDebug(lcSession) << "session" << m_id << "output hold released:" << why;
}

void Session::updateReadLimit()
{
    if (!m_hold) {
        m_pty.setReadLimit(-1);
        return;
    }
    // Reading n bytes evicts max(0, size + n - capacity) from the ring's
    // start; none of [keep, end) may go, so n <= capacity - (end - keep).
    // A hold before the ring's start keeps what is retained: it is a lower
    // bound (WebSocketViewer::closeForRestart) that the closing socket's
    // drain may still raise into the ring; if it stays below, the client's
    // resume is a reset replay whatever we do. One past the end (a damaged
    // state) keeps nothing yet.
    const quint64 end = m_ring.endOffset();
    const quint64 keep = std::clamp(*m_hold, m_ring.startOffset(), end);
    m_pty.setReadLimit(std::max<qsizetype>(0, m_ring.capacity() - qsizetype(end - keep)));
}

void Session::updateDetached()
{
    if (viewerCount() == 0) {
        if (m_detachedSince.isNull())
            m_detachedSince = nowUtc();
    } else {
        m_detachedSince = QDateTime();
    }
}

void Session::kill(DetachReason reason)
{
    releaseOutputHold("killed");
    QList<Viewer *> all = m_watchers;
    if (m_control)
        all.prepend(m_control);
    m_control = nullptr;
    m_controlBlocked = false;
    m_watchers.clear();
    for (Viewer *v : all)
        v->detached(reason);
    if (!all.isEmpty()) {
        updateDetached();
        Q_EMIT viewersChanged();
    }
    if (m_pty.pid() > 0 && !m_tornDown) {
        m_pty.terminate();
    } else if (!m_tornDown) {
        m_tornDown = true;
        Q_EMIT tornDown();
    }
}

// --- restart in place --------------------------------------------------------------

namespace {
qint64 msOrNull(const QDateTime &t) { return t.isNull() ? -1 : t.toMSecsSinceEpoch(); }
QDateTime utcOrNull(qint64 ms) { return ms < 0 ? QDateTime() : QDateTime::fromMSecsSinceEpoch(ms, Qt::UTC); }
} // namespace

void Session::setName(const QString &name)
{
    if (name == m_name)
        return;
    m_name = name;
    Q_EMIT nameChanged(m_name);
}

Handover::SessionRecord Session::handover() const
{
    Handover::SessionRecord r;
    r.id = m_id;
    r.name = m_name;
    r.command = m_command;
    r.cwd = m_cwd;
    r.createdMs = m_created.toMSecsSinceEpoch();
    r.exitedAtMs = msOrNull(m_exitedAt);
    r.detachedSinceMs = msOrNull(m_detachedSince);
    r.lastActivityMs = m_lastActivityMs;
    r.exited = m_state == State::Exited;
    r.pty = m_pty.handover();
    r.capacity = m_ring.capacity();
    r.ringStart = m_ring.startOffset();
    const auto spans = m_ring.spans(m_ring.startOffset(), m_ring.size());
    for (const RingBuffer::Span &sp : {spans.first, spans.second})
        if (sp.size > 0)
            r.ring.append(QByteArray::fromRawData(sp.data, int(sp.size)));
    r.headState = m_head.save();
    r.tailState = m_tail.save();
    r.marginResets = m_marginResets;
    r.outputHold = m_hold;
    r.commands = m_commands.save();
    r.notifyMuted = m_notifySettings.muted;
    r.notifyNext = m_notifySettings.next;
    r.notifyActivity = m_notifySettings.activity;
    r.notifySilence = m_notifySettings.silence;
    r.loginShell = m_options.loginShell;
    // An outrun screen paused by a flood (its offset already left the ring)
    // is not handed over: the successor could not parse on from it, and the
    // reader refuses the whole state for an offset outside the ring. The
    // successor makes a screen again as a new session does.
    if (m_screen && m_screenOffset >= m_ring.startOffset()) {
        // The successor feeds this into a fresh Screen: the state at S with
        // the scrollback it keeps, then parses on from S.
        Handover::ScreenRecord &sc = r.screen;
        sc.present = true;
        sc.offset = m_screenOffset;
        sc.synced = screenSynced();
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
        for (const SizeChange &c : m_sizes)
            if (c.offset > m_screenOffset)
                sc.resizes.append({c.offset, c.cols, c.rows});
    }
    return r;
}

Session *Session::restore(const Handover::SessionRecord &r, QObject *parent, QString *error)
{
    TerminalState head, tail;
    if (!head.restore(r.headState) || !tail.restore(r.tailState)) {
        if (error)
            *error = QStringLiteral("session %1: terminal state not readable").arg(r.id);
        return nullptr;
    }
    SpawnOptions options;
    options.argv = r.command;
    options.cwd = r.cwd;
    options.loginShell = r.loginShell;
    auto *s = new Session(r.id, options, r.capacity, parent);
    const QByteArray ring = r.ring.size() == 1 ? r.ring.first() : r.ring.join();
    if (!s->m_ring.restore(r.ringStart, ring.constData(), ring.size())) {
        if (error)
            *error = QStringLiteral("session %1: output buffer not restorable").arg(r.id);
        delete s;
        return nullptr;
    }
    if (!s->m_pty.adopt(r.pty, error)) {
        s->m_pty.release(); // nothing was taken: the caller still owns the fds
        delete s;
        return nullptr;
    }
    s->m_command = r.command;
    s->m_name = r.name;
    s->m_cwd = r.cwd;
    s->m_created = utcOrNull(r.createdMs);
    s->m_exitedAt = utcOrNull(r.exitedAtMs);
    s->m_detachedSince = utcOrNull(r.detachedSinceMs);
    s->m_lastActivityMs = r.lastActivityMs;
    s->m_state = r.exited ? State::Exited : State::Running;
    s->m_tornDown = r.pty.tornDown;
    s->m_head = head;
    s->m_tail = tail;
    s->m_tailOffset = r.ringStart;
    // A session the keeper held through a crash: its stream starts again
    // at ringStart, from a fresh terminal; the saved screen injected there
    // is replayed whole (it used to be skipped as the tail of a line).
    if (r.freshStream && r.ring.isEmpty())
        s->m_streamStart = r.ringStart;
    s->m_titleSerial = head.titleSerial();
    s->m_marginResets = r.marginResets;
    if (!r.commands.isEmpty() && !s->m_commands.restore(r.commands))
        qCWarning(lcSession) << "session" << r.id << "command list not readable: starts empty";
    s->m_notifySettings.muted = r.notifyMuted;
    s->m_notifySettings.next = r.notifyNext;
    s->m_notifySettings.activity = r.notifyActivity;
    s->m_notifySettings.silence = std::clamp(r.notifySilence, 0, kMaxSilenceSeconds);
    s->m_lastOutputMono = monotonicMs();
    s->scheduleSilence();
    s->m_normalChangedAt = s->m_ring.endOffset(); // unknown before: not kept on an outrun
    s->m_sizes = {SizeChange{r.ringStart, r.pty.cols, r.pty.rows}};
    const Handover::ScreenRecord &sc = r.screen;
    if (sc.present && screenFits(sc.cols, sc.rows) && sc.offset >= r.ringStart && sc.offset <= s->m_ring.endOffset()) {
        // The screen as it was at S: its snapshot fed into a fresh one.
        s->m_sizes = {SizeChange{std::min(r.ringStart, sc.offset), sc.cols, sc.rows}};
        for (const Handover::ResizeRecord &rz : sc.resizes)
            if (rz.offset > sc.offset && rz.offset <= s->m_ring.endOffset())
                s->m_sizes.append(SizeChange{rz.offset, rz.cols, rz.rows});
        s->createScreen(sc.offset, TerminalState(), sc.cols, sc.rows);
        s->m_screen->feed(sc.snapshot.constData(), sc.snapshot.size());
        s->m_screen->mark();
        s->m_screenSynced = sc.synced;
        s->scheduleScreen();
    } else if (r.ringStart > 0 && !r.exited) {
        // No screen handed over (none made, or one outrun by a flood) and the
        // ring has rolled over: a screen can no longer start at offset 0,
        // which is when a new session makes one. It starts now, unsynced, at
        // the ring's first safe boundary, as after an outrun.
        s->createScreenAtStart();
        s->scheduleScreen();
    }
    // The control viewer the restart closed comes back with resume=: its
    // bytes stay in the ring until then (holdOutput()). An older
    // predecessor hands over no hold: none.
    if (r.outputHold && !r.exited && !r.dying)
        s->holdOutput(*r.outputHold);
    qCInfo(lcSession) << "session" << r.id << "adopted pid" << r.pty.pid << "offset" << s->offset();
    return s;
}

Session *Session::adoptBare(const Handover::FdEntry &e, qsizetype bufferCapacity, QObject *parent, QString *error)
{
    PtyHandover h;
    h.pid = e.pid;
    h.masterFd = e.masterFd;
    h.pidfd = e.pidfd;
    struct winsize ws = {};
    if (e.masterFd >= 0 && ::ioctl(e.masterFd, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0 && ws.ws_row > 0) {
        h.cols = ws.ws_col;
        h.rows = ws.ws_row;
    }
    // Still our child (running, or a zombie nobody reaped yet)? ECHILD: it
    // was reaped before the handover, so the session had exited.
    siginfo_t info = {};
    const bool ours = ::waitid(P_PID, id_t(e.pid), &info, WEXITED | WNOHANG | WNOWAIT) == 0;
    if (!ours) {
        h.leaderExited = true;
        h.finished = true;
        h.exitStatus = ExitStatus{false, -1, 0};
    }
    SpawnOptions options;
    options.argv = processCommandLine(e.pid);
    options.cwd = processCwd(e.pid);
    if (options.cwd.isEmpty())
        options.cwd = QStringLiteral("/");
    auto *s = new Session(e.id, options, bufferCapacity, parent);
    if (!s->m_pty.adopt(h, error)) {
        s->m_pty.release();
        delete s;
        return nullptr;
    }
    s->m_command = options.argv;
    s->m_sizes = {SizeChange{0, h.cols, h.rows}};
    s->m_state = ours ? State::Running : State::Exited;
    if (!ours)
        s->m_exitedAt = s->m_created;
    qCInfo(lcSession) << "session" << e.id << "adopted bare: pid" << e.pid << "output before the restart lost";
    return s;
}

} // namespace Tether
