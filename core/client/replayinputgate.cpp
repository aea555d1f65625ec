// SPDX-License-Identifier: GPL-2.0-or-later
#include "replayinputgate.h"

namespace Tether {

ReplayInputGate::ReplayInputGate(QObject *parent)
    : QObject(parent)
{
    m_timer.setSingleShot(true);
    connect(&m_timer, &QTimer::timeout, this, [this]() {
        if (m_state != State::Open)
            setOpen(); // a terminal that never answers: stop waiting
    });
}

void ReplayInputGate::begin(bool replay)
{
    m_timer.stop();
    m_tail.clear();
    m_state = replay ? State::Rendering : State::Open;
}

void ReplayInputGate::close()
{
    begin(true);
}

void ReplayInputGate::open()
{
    m_timer.stop();
    m_tail.clear();
    m_state = State::Open;
}

void ReplayInputGate::fenceWritten()
{
    if (m_state != State::Rendering)
        return;
    m_state = State::Fenced;
    m_tail.clear();
    m_timer.start(kAnswerTimeoutMs);
}

void ReplayInputGate::settleAfter(quint64 end, quint64 rendered)
{
    if (m_state != State::Rendering)
        return;
    m_state = State::Settling;
    m_end = end;
    this->rendered(rendered);
}

void ReplayInputGate::rendered(quint64 position)
{
    if (m_state == State::Settling && position >= m_end && !m_timer.isActive())
        m_timer.start(kSettleMs);
}

void ReplayInputGate::drain(int timeoutMs)
{
    if (m_state != State::Fenced)
        m_tail.clear();
    m_state = State::Draining;
    m_timer.start(timeoutMs);
}

void ReplayInputGate::setOpen()
{
    open();
    Q_EMIT opened();
}

qsizetype ReplayInputGate::scanForAnswer(const char *data, qsizetype size)
{
    const QByteArray seen = m_tail + QByteArray::fromRawData(data, int(size));
    qsizetype hit = seen.indexOf("\x1b[0n");
    const qsizetype bad = seen.indexOf("\x1b[3n");
    if (bad >= 0 && (hit < 0 || bad < hit))
        hit = bad;
    if (hit < 0) {
        m_tail = seen.right(3); // an answer split between reads
        return -1;
    }
    return qMax<qsizetype>(0, hit + 4 - m_tail.size());
}

ReplayInputGate::Verdict ReplayInputGate::filter(const char *data, qsizetype size)
{
    if (size <= 0 || m_state == State::Open)
        return {0, qMax<qsizetype>(0, size), true};
    if (m_state == State::Draining) {
        // Everything is the terminal's late answers, or too late to type.
        if (scanForAnswer(data, size) >= 0)
            setOpen();
        return {size, 0, false};
    }
    if (m_state == State::Fenced) {
        // Everything up to the answer to our DSR answers the replay's
        // queries: dropped. What follows it is typed.
        const qsizetype after = scanForAnswer(data, size);
        if (after >= 0) {
            setOpen();
            return {after, size - after, true};
        }
    }
    // Still gated: an answer starts with ESC; plain typing passes.
    return {0, size, data[0] != '\x1b'};
}

} // namespace Tether
