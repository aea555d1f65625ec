// SPDX-License-Identifier: GPL-2.0-or-later
#include "floodmeter.h"

#include <algorithm>

namespace Tether {

void FloodMeter::refill(qint64 ns)
{
    m_budgetNs = std::min(kBurstNs, m_budgetNs + std::max<qint64>(ns, 0));
}

FloodMeter::Change FloodMeter::output(qint64 nowMs, qsizetype bytes, qint64 processCpuNs)
{
    Change change = Change::None;
    if (windowDue(nowMs)) {
        // Output in the previous window too (or the flood timer's check):
        // the output flows. Else it paused for a window or more.
        const bool adjacent = nowMs - m_windowStart < 2 * kWindowMs;
        if (!adjacent)
            refill(kBurstNs);
        else if (m_windowCpuNs >= 0 && processCpuNs >= m_windowCpuNs)
            refill((processCpuNs - m_windowCpuNs) * kSharePercent / 100);
        if (m_flooding) {
            // Parsable in kSharePercent of a window, at the last speed.
            const double parsable = m_parseBytesPerMs * double(kWindowMs * kSharePercent) / 100;
            if (m_paced && adjacent) {
                // This window's bytes came at the screen's pace: the next
                // window decides.
                m_paced = false;
            } else if (!adjacent || (m_windowBytes < kFloodBytes && double(m_windowBytes) <= parsable)) {
                m_flooding = false;
                m_paced = false;
                change = Change::Ended;
            }
        }
        m_windowStart = nowMs;
        m_windowBytes = 0;
        m_windowCpuNs = processCpuNs;
    }
    m_windowBytes += bytes;
    if (change == Change::None && !m_flooding && m_windowBytes >= kFloodBytes) {
        m_flooding = true;
        change = Change::Started;
    }
    return change;
}

FloodMeter::Change FloodMeter::parsed(qint64 cpuNs, qsizetype bytes, bool onOutputPath)
{
    if (bytes >= kMinTimedParse && cpuNs > 0)
        m_parseBytesPerMs = (3 * m_parseBytesPerMs + double(bytes) * 1e6 / double(cpuNs)) / 4;
    if (!onOutputPath)
        return Change::None;
    m_budgetNs = std::max<qint64>(0, m_budgetNs - std::max<qint64>(cpuNs, 0));
    m_rescueBytes += std::max<qsizetype>(bytes, 0);
    if (m_flooding || (m_budgetNs > 0 && m_rescueBytes < kRescueBytes))
        return Change::None;
    m_flooding = true;
    m_paced = true;
    m_rescueBytes = 0;
    return Change::Started;
}

} // namespace Tether
