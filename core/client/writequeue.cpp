// SPDX-License-Identifier: GPL-2.0-or-later
#include "writequeue.h"

#include <QSocketNotifier>

#include <algorithm>
#include <cerrno>
#include <limits>
#include <unistd.h>

namespace Tether {

WriteQueue::WriteQueue(int fd, qsizetype highWatermark, qsizetype lowWatermark, QObject *parent)
    : QObject(parent)
    , m_fd(fd)
    , m_high(highWatermark)
    , m_low(lowWatermark)
{
    if (m_fd >= 0) {
        m_notifier = new QSocketNotifier(m_fd, QSocketNotifier::Write, this);
        m_notifier->setEnabled(false);
        connect(m_notifier, &QSocketNotifier::activated, this, [this]() { flush(); });
    }
}

WriteQueue::~WriteQueue() = default;

void WriteQueue::setChunkSize(qsizetype bytes)
{
    m_chunkSize = qMax<qsizetype>(1, bytes);
}

void WriteQueue::append(const QByteArray &data)
{
    if (data.isEmpty() || m_error || m_fd < 0)
        return;
    const qsizetype done = m_chunks.empty() ? writeNow(data.constData(), data.size()) : 0;
    if (m_error)
        return;
    if (done < data.size()) {
        if (m_chunks.empty())
            m_head = done; // the rest of it, shared
        m_chunks.push_back({data, false});
        m_pending += data.size() - done;
        m_notifier->setEnabled(true);
    }
    updateBlocked();
    appended(done);
}

void WriteQueue::append(const char *data, qsizetype size)
{
    if (size <= 0 || m_error || m_fd < 0)
        return;
    const qsizetype done = m_chunks.empty() ? writeNow(data, size) : 0;
    if (m_error)
        return;
    if (done < size) {
        pushOwned(data + done, size - done);
        m_pending += size - done;
        m_notifier->setEnabled(true);
    }
    updateBlocked();
    appended(done);
}

void WriteQueue::appended(qsizetype written)
{
    // Signals last: a slot that appends again finds the rest already queued
    // (order kept).
    if (written > 0) {
        Q_EMIT progressed(m_written);
        if (m_pending == 0)
            Q_EMIT drained();
    }
}

qsizetype WriteQueue::writeSome(const char *data, qsizetype size, qsizetype *budget, int *error)
{
    qsizetype done = 0;
    while (done < size && *budget > 0) {
        const qsizetype n = std::min({size - done, m_chunkSize, *budget});
        const ssize_t w = ::write(m_fd, data + done, size_t(n));
        if (w < 0) {
            if (errno == EINTR)
                continue;
            if (errno != EAGAIN && errno != EWOULDBLOCK)
                *error = errno;
            break;
        }
        done += w;
        *budget -= w;
        if (w < n)
            break; // the fd took less than offered: it is full for now
    }
    return done;
}

qsizetype WriteQueue::writeNow(const char *data, qsizetype size)
{
    qsizetype budget = m_wakeupBudget > 0 ? m_wakeupBudget : std::numeric_limits<qsizetype>::max();
    int error = 0;
    const qsizetype done = writeSome(data, size, &budget, &error);
    m_written += quint64(done);
    if (error)
        fail(error);
    return done;
}

void WriteQueue::pushOwned(const char *data, qsizetype size)
{
    // Fill the last block of ours first; a new block takes the spare (no
    // allocation) or reserves kBlockSize (one allocation per block).
    if (!m_chunks.empty() && m_chunks.back().owned) {
        QByteArray &last = m_chunks.back().data;
        const qsizetype room = last.capacity() - last.size();
        if (room > 0) {
            const qsizetype n = qMin(room, size);
            last.append(data, n);
            data += n;
            size -= n;
        }
    }
    while (size > 0) {
        QByteArray block;
        if (!m_spare.isNull()) {
            block = std::move(m_spare);
            m_spare = QByteArray();
        } else {
            block.reserve(qMax(kBlockSize, size));
        }
        const qsizetype n = qMin(size, qMax<qsizetype>(block.capacity(), 1));
        block.append(data, n);
        data += n;
        size -= n;
        m_chunks.push_back({std::move(block), true});
    }
}

void WriteQueue::clear()
{
    if (m_pending == 0)
        return;
    // The front block may be partly written: what was written stays counted.
    m_chunks.clear();
    m_head = 0;
    m_pending = 0;
    if (m_notifier)
        m_notifier->setEnabled(false);
    updateBlocked();
}

void WriteQueue::flush()
{
    if (m_error)
        return;
    qsizetype budget = m_wakeupBudget > 0 ? m_wakeupBudget : std::numeric_limits<qsizetype>::max();
    const quint64 before = m_written;
    int error = 0;
    while (!m_chunks.empty() && budget > 0 && !error) {
        Chunk &front = m_chunks.front();
        const qsizetype want = front.data.size() - m_head;
        const qsizetype w = writeSome(front.data.constData() + m_head, want, &budget, &error);
        m_head += w;
        m_pending -= w;
        m_written += quint64(w);
        if (w < want)
            break; // full, out of budget, or an error
        if (front.owned && m_spare.isNull()) {
            // Keep one block's capacity for the next burst.
            m_spare = std::move(front.data);
            m_spare.resize(0);
        }
        m_chunks.pop_front();
        m_head = 0;
    }
    if (error) {
        fail(error);
        return;
    }
    m_notifier->setEnabled(m_pending > 0);
    updateBlocked();
    if (m_written != before) {
        Q_EMIT progressed(m_written);
        if (m_pending == 0)
            Q_EMIT drained();
    }
}

void WriteQueue::fail(int error)
{
    m_error = error;
    m_chunks.clear();
    m_head = 0;
    m_pending = 0;
    m_notifier->setEnabled(false);
    updateBlocked();
    Q_EMIT failed(error);
}

void WriteQueue::updateBlocked()
{
    bool want = m_blocked;
    if (!m_blocked && m_pending > m_high)
        want = true;
    else if (m_blocked && m_pending < m_low)
        want = false;
    if (want == m_blocked)
        return;
    m_blocked = want;
    Q_EMIT blockedChanged(want);
}

} // namespace Tether
