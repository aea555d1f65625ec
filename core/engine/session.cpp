// SPDX-License-Identifier: GPL-2.0-or-later
#include "session.h"
#include "logging.h"
#include "replayplan.h"
#include "procinfo.h"
#include "protocol.h"
#include "settingsbounds.h"
#include "shellintegration.h"

#include <algorithm>
#include <cstring>
#include <utility>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <termios.h>

namespace Tether {

// The screen's parse before an eviction covers every byte only when a
// whole read fits in the ring (Session's constructor doc).
static_assert(SettingsBounds::kMinBufferSize >= kReadChunk, "a ring must hold a whole PTY read");

namespace {
qint64 nowMs() { return QDateTime::currentMSecsSinceEpoch(); }
qint64 monotonicMs() { return SessionScreen::monotonicMs(); }
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

    m_silenceTimer.setSingleShot(true);
    connect(&m_silenceTimer, &QTimer::timeout, this, &Session::onSilenceTimer);
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
    SessionScreen::feedState(m_tail, m_tailOffset, data, size, m_marginResets, m_inertRuns);
    m_tailOffset += quint64(size);
    m_inertRuns.dropBefore(m_tailOffset);
    m_screen.evicted(m_tailOffset);
}

void Session::onOutput(const char *data, qsizetype size)
{
    const quint64 from = m_ring.endOffset();
    // The screen first: what this read would evict unparsed (SessionScreen).
    m_screen.beforeAppend(size);
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
    const bool normalMayHaveChanged
        = (m_head.takeEvents() & (TerminalState::AltScreenEntered | TerminalState::CursorSaved | TerminalState::FullReset))
        || !m_head.hasMode(TerminalState::AltScreen);
    // The screen (see hasScreen()): this path only records and schedules.
    m_screen.afterAppend(from, normalMayHaveChanged, m_control != nullptr, m_head.queriesSeen() != queries);

    if (m_hold)
        updateReadLimit(); // what is left of the room this read used
    forEachViewer([=](Viewer *v) { v->output(data, size); });
    m_screen.afterViewers();

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
    return m_screen.memoryBytes();
}

void Session::setScreenEnabled(bool enabled)
{
    m_screen.setEnabled(enabled);
}

void Session::ensureScreen(qsizetype parseNow)
{
    m_screen.ensure(parseNow);
}

QByteArray Session::screenPreview(quint64 *offset)
{
    return m_screen.preview(offset);
}

void Session::setScreenCompactDelay(int ms)
{
    m_screen.setCompactDelay(ms);
}

bool Session::screenCompact() const
{
    return m_screen.isCompact();
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
    const quint64 keepFrom
        = m_screen.hasScreen() ? std::min(m_screen.offset(), m_ring.startOffset()) : m_ring.startOffset();
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
        Q_EMIT notify(QStringLiteral("exit"), Protocol::exitStatusText(status), watched, requested, CommandRecord());
}

void Session::attach(Viewer *viewer, ViewerMode mode, const ReplayRequest &request)
{
    const std::optional<quint64> resume = request.resume;
    if (!viewer)
        return;
    if (viewer == m_control || m_watchers.contains(viewer))
        detach(viewer);
    m_screen.viewerAttaching(); // a compact screen is rebuilt by its first use below

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
    if (reset && (request.screen || m_ring.startOffset() > m_streamStart || resized))
        snapshot = m_screen.attachSnapshot(request, resized, rowsBefore, offer);
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
    if (viewerCount() == 0)
        m_screen.lastViewerLeft();
    Q_EMIT viewersChanged();
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
        m_screen.sizeRecorded();
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
    m_screen.handover(r.screen);
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
    s->m_screen.setNormalChangedAt(s->m_ring.endOffset()); // unknown before: not kept on an outrun
    s->m_sizes = {SizeChange{r.ringStart, r.pty.cols, r.pty.rows}};
    const Handover::ScreenRecord &sc = r.screen;
    if (sc.present && screenFits(sc.cols, sc.rows) && sc.offset >= r.ringStart && sc.offset <= s->m_ring.endOffset()) {
        // The screen as it was at S: its snapshot fed into a fresh one.
        s->m_sizes = {SizeChange{std::min(r.ringStart, sc.offset), sc.cols, sc.rows}};
        for (const Handover::ResizeRecord &rz : sc.resizes)
            if (rz.offset > sc.offset && rz.offset <= s->m_ring.endOffset())
                s->m_sizes.append(SizeChange{rz.offset, rz.cols, rz.rows});
        s->m_screen.restore(sc);
    } else if (r.ringStart > 0 && !r.exited) {
        // No screen handed over (none made, or one outrun by a flood) and the
        // ring has rolled over: a screen can no longer start at offset 0,
        // which is when a new session makes one. It starts now, unsynced, at
        // the ring's first safe boundary, as after an outrun.
        s->m_screen.restartAtStart();
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
