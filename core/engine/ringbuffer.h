// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <QtGlobal>
#include <functional>
#include <vector>

namespace Tether {

/**
 * Bounded byte history of a session's output (its scrollback as bytes),
 * addressed by absolute 64-bit output offsets.
 *
 * Every byte ever appended has an offset: the first is 0, and endOffset() is
 * the total appended. Only the newest capacity() bytes are retained:
 * [startOffset(), endOffset()). Appending past capacity evicts the oldest
 * bytes, which are first passed to the eviction handler (the session feeds
 * them to a TerminalState so it knows the modes in force at startOffset()).
 *
 * Memory: storage grows with use (doubling, from 4 KiB) up to capacity, so an
 * idle session does not hold a preallocated MiB; once grown, append() does not
 * allocate. setCapacity() may shrink (dropping the oldest bytes, through the
 * eviction handler) or grow at run time.
 */
class RingBuffer
{
public:
    /// Capacity bounds (bytes) accepted by the settings; the class itself
    /// accepts any capacity >= 1.
    static constexpr qsizetype kMinCapacity = 64 * 1024;
    static constexpr qsizetype kMaxCapacity = 64 * 1024 * 1024;
    static constexpr qsizetype kDefaultCapacity = 1024 * 1024;

    explicit RingBuffer(qsizetype capacity = kDefaultCapacity);

    qsizetype capacity() const { return m_capacity; }
    /// Changes the capacity (bytes, values < 1 count as 1) at run time; keeps
    /// the newest min(size(), capacity) bytes. Dropped bytes go through the
    /// eviction handler first. Shrinking also shrinks the storage (one
    /// allocation); growing allocates nothing until appends need it.
    void setCapacity(qsizetype capacity);

    quint64 startOffset() const { return m_end - quint64(m_size); } ///< first retained byte
    quint64 endOffset() const { return m_end; }   ///< total bytes ever appended
    qsizetype size() const { return m_size; }     ///< retained bytes
    qsizetype allocated() const { return qsizetype(m_storage.size()); } ///< bytes of storage held

    /// Appends `size` bytes, evicting the oldest beyond capacity (through the
    /// eviction handler). An append larger than capacity() keeps only its last
    /// capacity() bytes; its head goes to the handler right after the old
    /// contents, so the handler always sees every byte exactly once, in order.
    /// Allocates only while the storage is still growing towards capacity().
    void append(const char *data, qsizetype size);

    /// A contiguous piece of retained data; valid until the next append/setCapacity.
    struct Span { const char *data = nullptr; qsizetype size = 0; };
    /// The retained bytes from `from` (clamped to [startOffset, endOffset]) up to
    /// `maxBytes`, as at most two spans (the ring may wrap; `second` is empty
    /// unless `first` ends at the end of storage). Zero-copy. Both spans are
    /// empty when nothing is retained at or after `from` or maxBytes <= 0.
    std::pair<Span, Span> spans(quint64 from, qsizetype maxBytes) const;
    /// Copies up to `maxBytes` retained bytes starting at `from` into `dst`.
    /// Returns the number copied; 0 when `from` is not retained (evicted, i.e.
    /// < startOffset(), or >= endOffset()): unlike spans() it does not clamp,
    /// so a reader that fell behind notices instead of silently skipping.
    qsizetype read(quint64 from, char *dst, qsizetype maxBytes) const;
    /// The retained byte at absolute offset `offset` (must be retained:
    /// startOffset() <= offset < endOffset(); asserted in debug builds).
    char at(quint64 offset) const;

    /// Replaces the contents with `size` bytes that begin at absolute offset
    /// `startOffset`: afterwards startOffset() == startOffset and endOffset()
    /// == startOffset + size. For a ring handed over by the process Tether
    /// restarted from (docs/architecture.md, "Restart in place"). The old
    /// contents are discarded without the eviction handler (they are not
    /// older output of this stream). Returns false, changing nothing, when
    /// size is negative or over capacity(), data is null with size > 0, or
    /// startOffset + size overflows.
    bool restore(quint64 startOffset, const char *data, qsizetype size);

    /// Called with each evicted span, oldest first, before it is overwritten.
    /// The handler must not call append()/setCapacity() on this ring.
    void setEvictionHandler(std::function<void(const char *, qsizetype)> handler)
    { m_onEvict = std::move(handler); }

private:
    void grow(qsizetype needed);          ///< storage >= min(needed, capacity)
    void relocate(qsizetype storageSize); ///< linearise into a new block
    void evictFront(qsizetype n);         ///< drop the oldest n via the handler
    std::vector<char> m_storage;
    qsizetype m_capacity;
    qsizetype m_head = 0;   ///< storage index of startOffset()
    qsizetype m_size = 0;
    quint64 m_end = 0;
    std::function<void(const char *, qsizetype)> m_onEvict;
};

} // namespace Tether
