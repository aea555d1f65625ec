// SPDX-License-Identifier: GPL-2.0-or-later
#include "session.h"
#include "logging.h"
#include "replayplan.h"
#include "procinfo.h"

#include <utility>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <termios.h>

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
        qCDebug(lcSession) << "session" << m_id << "control viewer superseded";
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
    // Debug, not info: one line per attach filled the log (issue 10: 742,920
    // attach cycles wrote 93 MB).
    qCDebug(lcSession) << "session" << m_id << (mode == ViewerMode::Control ? "control" : "watch")
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
    s->m_titleSerial = head.titleSerial();
    s->m_marginResets = r.marginResets;
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
    s->m_state = ours ? State::Running : State::Exited;
    if (!ours)
        s->m_exitedAt = s->m_created;
    qCInfo(lcSession) << "session" << e.id << "adopted bare: pid" << e.pid << "output before the restart lost";
    return s;
}

} // namespace Tether
