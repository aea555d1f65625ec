// SPDX-License-Identifier: GPL-2.0-or-later
#include "inertruns.h"

#include "terminalstate.h"

#include <algorithm>

namespace Tether {

void InertRuns::add(quint64 begin, quint64 end)
{
    if (end <= begin)
        return;
    if (m_count > 0 && run(m_count - 1).end == begin) {
        run(m_count - 1).end = end; // `cat`: one range that grows
        return;
    }
    if (end - begin < quint64(kMinRun))
        return;
    if (m_count == kMaxRuns) {
        m_first = (m_first + 1) % kMaxRuns;
        --m_count;
    }
    run(m_count++) = Run{begin, end};
}

void InertRuns::dropBefore(quint64 offset)
{
    while (m_count > 0 && run(0).end <= offset) {
        m_first = (m_first + 1) % kMaxRuns;
        --m_count;
    }
    if (m_count > 0 && run(0).begin < offset)
        run(0).begin = offset;
}

void InertRuns::feed(TerminalState &st, quint64 at, const char *data, qsizetype size) const
{
    const quint64 end = at + quint64(std::max<qsizetype>(0, size));
    for (int i = 0; i < m_count && at < end; ++i) {
        const Run &r = run(i);
        if (r.end <= at)
            continue;
        if (r.begin >= end)
            break;
        if (r.begin > at) { // a gap: parse it
            const qsizetype n = qsizetype(r.begin - at);
            st.feed(data, n);
            data += n;
            at = r.begin;
        }
        const qsizetype n = qsizetype(std::min(r.end, end) - at);
        st.feedInert(data, n);
        data += n;
        at += quint64(n);
    }
    if (at < end)
        st.feed(data, qsizetype(end - at));
}

} // namespace Tether
