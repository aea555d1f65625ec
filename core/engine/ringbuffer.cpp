// SPDX-License-Identifier: GPL-2.0-or-later
#include "ringbuffer.h"

#include <algorithm>
#include <cstring>
#include <limits>

namespace Tether {

namespace {
// First storage block. Small so that an idle session costs ~nothing; doubling
// reaches 1 MiB in 8 steps, so warm-up allocations are few and amortised.
constexpr qsizetype kInitialStorage = 4 * 1024;
}

RingBuffer::RingBuffer(qsizetype capacity)
    : m_capacity(std::max<qsizetype>(1, capacity))
{
}

void RingBuffer::evictFront(qsizetype n)
{
    // Hand the oldest n bytes to the handler (at most two spans: the ring may
    // wrap) and only then release them, so the handler reads valid memory.
    const qsizetype storageSize = qsizetype(m_storage.size());
    qsizetype left = n;
    while (left > 0) {
        const qsizetype chunk = std::min(left, storageSize - m_head);
        if (m_onEvict)
            m_onEvict(m_storage.data() + m_head, chunk);
        m_head += chunk;
        if (m_head == storageSize)
            m_head = 0;
        left -= chunk;
    }
    m_size -= n;
    if (m_size == 0)
        m_head = 0;
}

void RingBuffer::relocate(qsizetype newStorageSize)
{
    // Linearise the retained bytes into a fresh block (head = 0).
    std::vector<char> fresh(static_cast<size_t>(newStorageSize));
    const auto parts = spans(startOffset(), m_size);
    if (parts.first.size)
        std::memcpy(fresh.data(), parts.first.data, size_t(parts.first.size));
    if (parts.second.size)
        std::memcpy(fresh.data() + parts.first.size, parts.second.data, size_t(parts.second.size));
    m_storage.swap(fresh);
    m_head = 0;
}

void RingBuffer::grow(qsizetype needed)
{
    // Doubling from kInitialStorage, never beyond capacity.
    const qsizetype current = qsizetype(m_storage.size());
    if (current >= needed || current >= m_capacity)
        return;
    qsizetype target = current > 0 ? current : std::min(kInitialStorage, m_capacity);
    while (target < needed && target < m_capacity)
        target = target > m_capacity / 2 ? m_capacity : target * 2;
    target = std::min(target, m_capacity);
    relocate(target);
}

void RingBuffer::setCapacity(qsizetype capacity)
{
    capacity = std::max<qsizetype>(1, capacity);
    if (m_size > capacity)
        evictFront(m_size - capacity);
    m_capacity = capacity;
    // Shrinking releases memory: storage never exceeds the capacity. Keep the
    // doubling sequence's invariant loosely: any size <= capacity works.
    if (qsizetype(m_storage.size()) > capacity)
        relocate(capacity);
}

void RingBuffer::append(const char *data, qsizetype size)
{
    if (size <= 0 || !data)
        return;

    if (size >= m_capacity) {
        // Everything retained, and the head of `data`, fall out at once. The
        // handler still sees every byte exactly once, in stream order.
        if (m_size > 0)
            evictFront(m_size);
        const qsizetype drop = size - m_capacity;
        if (drop > 0 && m_onEvict)
            m_onEvict(data, drop);
        grow(m_capacity);
        std::memcpy(m_storage.data(), data + drop, size_t(m_capacity));
        m_head = 0;
        m_size = m_capacity;
        m_end += quint64(size);
        return;
    }

    const qsizetype needed = m_size + size;
    if (needed > qsizetype(m_storage.size()))
        grow(needed);
    const qsizetype storageSize = qsizetype(m_storage.size());
    if (needed > storageSize) // storage is at capacity here
        evictFront(needed - storageSize);

    // Copy into the free region after the tail, wrapping once at most.
    qsizetype tail = m_head + m_size;
    if (tail >= storageSize)
        tail -= storageSize;
    const qsizetype first = std::min(size, storageSize - tail);
    std::memcpy(m_storage.data() + tail, data, size_t(first));
    if (first < size)
        std::memcpy(m_storage.data(), data + first, size_t(size - first));
    m_size += size;
    m_end += quint64(size);
}

std::pair<RingBuffer::Span, RingBuffer::Span> RingBuffer::spans(quint64 from, qsizetype maxBytes) const
{
    std::pair<Span, Span> out;
    const quint64 start = startOffset();
    if (from < start)
        from = start;
    if (from >= m_end || maxBytes <= 0)
        return out;
    const qsizetype n = qsizetype(std::min<quint64>(m_end - from, quint64(maxBytes)));
    const qsizetype storageSize = qsizetype(m_storage.size());
    qsizetype pos = m_head + qsizetype(from - start);
    if (pos >= storageSize)
        pos -= storageSize;
    const qsizetype first = std::min(n, storageSize - pos);
    out.first = Span{m_storage.data() + pos, first};
    if (first < n)
        out.second = Span{m_storage.data(), n - first};
    return out;
}

qsizetype RingBuffer::read(quint64 from, char *dst, qsizetype maxBytes) const
{
    if (from < startOffset() || from >= m_end || maxBytes <= 0 || !dst)
        return 0;
    const auto parts = spans(from, maxBytes);
    std::memcpy(dst, parts.first.data, size_t(parts.first.size));
    if (parts.second.size)
        std::memcpy(dst + parts.first.size, parts.second.data, size_t(parts.second.size));
    return parts.first.size + parts.second.size;
}

char RingBuffer::at(quint64 offset) const
{
    Q_ASSERT(offset >= startOffset() && offset < m_end);
    const qsizetype storageSize = qsizetype(m_storage.size());
    qsizetype pos = m_head + qsizetype(offset - startOffset());
    if (pos >= storageSize)
        pos -= storageSize;
    return m_storage[size_t(pos)];
}

bool RingBuffer::restore(quint64 startOffset, const char *data, qsizetype size)
{
    if (size < 0 || size > m_capacity || (size > 0 && !data)
        || startOffset > std::numeric_limits<quint64>::max() - quint64(size))
        return false;
    // Storage as append() would have grown it for this many bytes.
    qsizetype storage = std::min(kInitialStorage, m_capacity);
    while (storage < size)
        storage = storage > m_capacity / 2 ? m_capacity : storage * 2;
    std::vector<char> fresh(static_cast<size_t>(std::min(storage, m_capacity)));
    if (size > 0)
        std::memcpy(fresh.data(), data, size_t(size));
    m_storage.swap(fresh);
    m_head = 0;
    m_size = size;
    m_end = startOffset + quint64(size);
    return true;
}

} // namespace Tether
