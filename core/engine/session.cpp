// SPDX-License-Identifier: GPL-2.0-or-later
#include "session.h"
#include "logging.h"
#include "replayplan.h"

#include <utility>

namespace Tether {

namespace {
qint64 nowMs() { return QDateTime::currentMSecsSinceEpoch(); }
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

    connect(&m_pty, &PtyProcess::outputReady, this, &Session::onOutput);
    connect(&m_pty, &PtyProcess::finished, this, &Session::onFinished);
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
    if (!m_pty.start(m_options, error))
        return false;
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
}

void Session::feedTail(const char *data, qsizetype size)
{
    // Where a resize reset the margins, the tail state resets them too, at
    // that offset, so a reset replay's prelude has the margins really in
    // force at its first byte.
    for (const quint64 reset : std::as_const(m_marginResets)) {
        if (reset <= m_tailOffset)
            continue;
        if (reset > m_tailOffset + quint64(size))
            break;
        const qsizetype n = qsizetype(reset - m_tailOffset);
        m_tail.feed(data, n);
        data += n;
        size -= n;
        m_tailOffset = reset;
        m_tail.marginsResetByResize();
    }
    m_tail.feed(data, size);
    m_tailOffset += quint64(size);
}

void Session::onOutput(const char *data, qsizetype size)
{
    m_ring.append(data, size);
    m_head.feed(data, size);
    m_lastActivityMs = nowMs();

    forEachViewer([=](Viewer *v) { v->output(data, size); });

    if (m_head.titleSerial() != m_titleSerial) {
        m_titleSerial = m_head.titleSerial();
        const QString t = m_head.title();
        forEachViewer([&t](Viewer *v) { v->titleChanged(t); });
        Q_EMIT titleChanged(t);
    }
    Q_EMIT outputArrived(size);
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
    Q_EMIT exited(status);
}

void Session::attach(Viewer *viewer, ViewerMode mode, std::optional<quint64> resume)
{
    if (!viewer)
        return;
    if (viewer == m_control || m_watchers.contains(viewer))
        detach(viewer);

    if (mode == ViewerMode::Control && m_control) {
        Viewer *old = m_control;
        m_control = nullptr;
        m_controlBlocked = false;
        qCInfo(lcSession) << "session" << m_id << "control viewer superseded";
        old->detached(DetachReason::Superseded);
    }

    const ReplayPlan plan = planReplay(m_ring, m_tail, m_marginResets, resume);
    AttachInfo info;
    info.mode = mode;
    info.reset = plan.reset;
    info.reason = plan.reason;
    info.replayFrom = plan.replayFrom;
    info.preludeBytes = plan.prelude.size();
    info.replayBytes = plan.replayBytes();
    info.offset = plan.offset;
    info.exited = m_state == State::Exited;
    info.cols = m_pty.cols();
    info.rows = m_pty.rows();

    if (mode == ViewerMode::Control)
        m_control = viewer;
    else
        m_watchers.append(viewer);
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
    for (const quint64 fixup : plan.fixups) {
        replayUpTo(fixup);
        if (stillAttached())
            viewer->fixup(fix);
    }
    replayUpTo(plan.offset);
    if (stillAttached() && info.exited)
        viewer->exited(m_pty.exitStatus());
    qCInfo(lcSession) << "session" << m_id << (mode == ViewerMode::Control ? "control" : "watch")
                      << "viewer attached, replay" << info.replayBytes << "bytes";
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

bool Session::resize(Viewer *from, int cols, int rows)
{
    const bool changed = cols != m_pty.cols() || rows != m_pty.rows();
    if (from != m_control || !m_pty.resize(cols, rows))
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

} // namespace Tether
