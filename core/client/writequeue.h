// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <QByteArray>
#include <QObject>

#include <deque>

class QSocketNotifier;

namespace Tether {

/**
 * A bounded, non-blocking writer of bytes to one file descriptor: what a
 * viewer needs between the session's output and a terminal that may be slow
 * or stuck (`tether attach`'s stdout, the terminal window's PTY slave).
 *
 * append() writes at once what the fd takes and queues the rest; a
 * QSocketNotifier (write) drains the queue as the fd becomes writable. Never
 * blocks: the fd must be O_NONBLOCK (a regular file, which never blocks,
 * works too). Each write(2) is at most chunkSize() bytes, and one wakeup
 * (an append() or a notifier activation) writes at most wakeupBudget() bytes
 * (0: until the fd takes no more): when the reader of the fd runs on the same
 * thread (QTermWidget drains its PTY master on the GUI thread), a budget lets
 * it read between bursts instead of the writer filling the PTY and starving it.
 *
 * Backpressure: the queue itself is not bounded (the session's own PTY read
 * is what must stop), but blockedChanged(true) is emitted when more than
 * highWatermark() bytes are pending and blockedChanged(false) once fewer than
 * lowWatermark() are: the holder pauses its source in between (AttachClient::
 * setPaused, Session::setViewerBlocked), so memory stays bounded by the high
 * watermark plus what the source had in flight.
 *
 * Errors: EAGAIN/EWOULDBLOCK wait for the notifier, EINTR retries; any other
 * error (EPIPE: nobody reads the pipe, EIO: the terminal hung up) drops the
 * queue, makes every later append() a no-op and emits failed() once.
 * SIGPIPE must be ignored or handled by the process (the default kills it).
 *
 * Memory: with nothing queued, append() writes straight from the caller's
 * bytes and queues only what the fd did not take. Queued QByteArrays are
 * shared, not copied (implicit sharing); append(const char *, qsizetype)
 * copies into blocks of kBlockSize bytes, one allocation per block (never
 * per byte), and keeps one drained block for reuse.
 */
class WriteQueue : public QObject
{
    Q_OBJECT
public:
    static constexpr qsizetype kDefaultChunkSize = 64 * 1024; ///< bytes per write(2)
    static constexpr qsizetype kBlockSize = 64 * 1024;        ///< copy block, see class doc

    /// Writes to `fd` (not owned, not closed; must outlive this object).
    /// Watermarks in bytes, lowWatermark < highWatermark.
    WriteQueue(int fd, qsizetype highWatermark, qsizetype lowWatermark, QObject *parent = nullptr);
    ~WriteQueue() override;

    /// Bytes per write(2) (>= 1; default kDefaultChunkSize).
    void setChunkSize(qsizetype bytes);
    qsizetype chunkSize() const { return m_chunkSize; }
    /// Bytes written per wakeup at most (0, the default: no limit).
    void setWakeupBudget(qsizetype bytes) { m_wakeupBudget = bytes; }
    qsizetype wakeupBudget() const { return m_wakeupBudget; }
    qsizetype highWatermark() const { return m_high; }
    qsizetype lowWatermark() const { return m_low; }

    /// Queues `data` (shared, not copied) and writes what the fd takes now.
    void append(const QByteArray &data);
    /// Queues a copy of `size` bytes at `data` and writes what the fd takes now.
    void append(const char *data, qsizetype size);
    /// Drops everything pending (it will never be written). May emit
    /// blockedChanged(false).
    void clear();

    /// Bytes queued, not yet written.
    qsizetype pending() const { return m_pending; }
    /// Bytes written to the fd since construction.
    quint64 written() const { return m_written; }
    /// Stream position after the last byte queued: written() + pending().
    /// Bytes dropped by clear() or a failure do not count.
    quint64 end() const { return m_written + quint64(m_pending); }
    /// More than the high watermark was pending, and not yet under the low one.
    bool isBlocked() const { return m_blocked; }
    /// A write failed (see class doc); errno of that failure in error().
    bool hasFailed() const { return m_error != 0; }
    int error() const { return m_error; }
    int fd() const { return m_fd; }

Q_SIGNALS:
    /// See the class doc (backpressure).
    void blockedChanged(bool blocked);
    /// Bytes were written; written() is the new total.
    void progressed(quint64 written);
    /// Nothing is pending any more (after bytes were written).
    void drained();
    /// A write failed with `error` (errno); emitted once.
    void failed(int error);

private:
    void flush();
    /// Writes from `data` in chunks while the fd takes it and `*budget`
    /// lasts; returns the bytes written. A hard error is left in *error.
    qsizetype writeSome(const char *data, qsizetype size, qsizetype *budget, int *error);
    /// With nothing queued: writes what the fd takes now; the bytes written.
    qsizetype writeNow(const char *data, qsizetype size);
    /// Signals after an append() that wrote `written` bytes at once.
    void appended(qsizetype written);
    void fail(int error);
    void updateBlocked();
    void pushOwned(const char *data, qsizetype size);

    int m_fd;
    qsizetype m_high;
    qsizetype m_low;
    qsizetype m_chunkSize = kDefaultChunkSize;
    qsizetype m_wakeupBudget = 0;
    QSocketNotifier *m_notifier = nullptr;
    struct Chunk {
        QByteArray data;
        bool owned; ///< a block of ours (append() copies into it), else shared
    };
    std::deque<Chunk> m_chunks;
    QByteArray m_spare;       ///< a drained block kept for reuse
    qsizetype m_head = 0;     ///< bytes of m_chunks.front() already written
    qsizetype m_pending = 0;
    quint64 m_written = 0;
    int m_error = 0;
    bool m_blocked = false;
};

} // namespace Tether
