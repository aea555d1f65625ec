// SPDX-License-Identifier: GPL-2.0-or-later
#include "commandlog.h"
#include "bytecodec.h"

namespace Tether {

namespace {
constexpr quint8 kSaveVersion = 1;

std::optional<int> parseStatus(const char *p, qsizetype n)
{
    // "D;status" possibly followed by ";key=value" options (FinalTerm).
    int v = 0;
    qsizetype i = 0;
    for (; i < n && p[i] >= '0' && p[i] <= '9'; ++i) {
        v = v * 10 + (p[i] - '0');
        if (v > 255)
            return std::nullopt;
    }
    if (i == 0 || (i < n && p[i] != ';'))
        return std::nullopt;
    return v;
}
} // namespace

QString CommandLog::boundedText(const char *data, qsizetype size)
{
    return QString::fromUtf8(data, int(std::min(size, ShellMarkScanner::kMaxPayload)));
}

void CommandLog::finish(CommandRecord &c, qint64 nowMs, quint64 at, std::optional<int> status)
{
    c.endMs = std::max(nowMs, c.startMs);
    c.outputEnd = std::max(at, c.outputStart);
    c.exitStatus = status;
}

CommandLog::Change CommandLog::apply(const ShellMark &m, qint64 nowMs)
{
    m_finishedBefore.reset();
    CommandRecord *run = m_state == ShellState::Running && !m_commands.isEmpty() && m_commands.last().running()
        ? &m_commands.last() : nullptr;
    switch (m.kind) {
    case ShellMark::PromptStart:
        m_pendingLine.clear();
        if (run) {
            finish(*run, nowMs, m.at, std::nullopt);
            m_state = ShellState::Prompt;
            return Change::Finished;
        }
        if (m_state == ShellState::Prompt)
            return Change::None;
        m_state = ShellState::Prompt;
        return Change::State;
    case ShellMark::CommandStart:
        if (run || m_state == ShellState::Prompt)
            return Change::None;
        m_state = ShellState::Prompt;
        return Change::State;
    case ShellMark::CommandLine:
        m_pendingLine = boundedText(m.payload, m.payloadSize);
        {
            const QByteArray decoded = decodeVsCodeEscapes(m_pendingLine.toUtf8());
            m_pendingLine = QString::fromUtf8(decoded);
        }
        return Change::None;
    case ShellMark::Cwd:
        m_cwd = boundedText(m.payload, m.payloadSize);
        return Change::None;
    case ShellMark::OutputStart: {
        if (run) {
            finish(*run, nowMs, m.at, std::nullopt);
            m_finishedBefore = *run;
        }
        CommandRecord c;
        c.id = m_nextId++;
        c.commandLine = m_pendingLine;
        c.cwd = m_cwd;
        c.startMs = nowMs;
        c.outputStart = m.end;
        m_pendingLine.clear();
        m_commands.append(c);
        while (m_commands.size() > kMaxCommands)
            m_commands.removeFirst();
        m_state = ShellState::Running;
        return Change::Started;
    }
    case ShellMark::CommandEnd:
        if (!run)
            return Change::None; // a D with nothing running (an empty line, or a program's fake)
        finish(*run, nowMs, m.at, parseStatus(m.payload, m.payloadSize));
        m_state = ShellState::Prompt;
        return Change::Finished;
    case ShellMark::Notify:
    case ShellMark::Bell:
        return Change::None;
    }
    return Change::None;
}

bool CommandLog::endRunning(qint64 nowMs, quint64 at, int status)
{
    if (m_state != ShellState::Running || m_commands.isEmpty() || !m_commands.last().running())
        return false;
    finish(m_commands.last(), nowMs, at, status >= 0 && status <= 255 ? std::optional<int>(status) : std::nullopt);
    m_state = ShellState::Prompt;
    return true;
}

// Layout version 1 (bytecodec.h): u8 version, u8 state, text cwd, text
// pendingLine, u64 nextId, u32 count, then per command: u64 id, text line,
// text cwd, i64 startMs, i64 endMs, u8 hasStatus, i32 status, u64
// outputStart, u64 outputEnd.
QByteArray CommandLog::save() const
{
    ByteWriter w;
    w.u8(kSaveVersion);
    w.u8(quint8(m_state));
    w.text(m_cwd);
    w.text(m_pendingLine);
    w.u64(m_nextId);
    w.u32(quint32(m_commands.size()));
    for (const CommandRecord &c : m_commands) {
        w.u64(c.id);
        w.text(c.commandLine);
        w.text(c.cwd);
        w.i64(c.startMs);
        w.i64(c.endMs);
        w.boolean(c.exitStatus.has_value());
        w.i32(c.exitStatus.value_or(0));
        w.u64(c.outputStart);
        w.u64(c.outputEnd);
    }
    return w.take();
}

bool CommandLog::restore(const QByteArray &saved)
{
    ByteReader r(saved);
    if (r.u8() != kSaveVersion)
        return false;
    CommandLog l;
    const quint8 state = r.u8();
    l.m_cwd = r.text();
    l.m_pendingLine = r.text();
    l.m_nextId = r.u64();
    const quint32 n = r.u32();
    if (state > quint8(ShellState::Running) || n > quint32(kMaxCommands))
        return false;
    l.m_state = ShellState(state);
    for (quint32 i = 0; i < n && r.ok(); ++i) {
        CommandRecord c;
        c.id = r.u64();
        c.commandLine = r.text();
        c.cwd = r.text();
        c.startMs = r.i64();
        c.endMs = r.i64();
        const bool hasStatus = r.boolean();
        const int status = r.i32();
        if (hasStatus)
            c.exitStatus = status;
        c.outputStart = r.u64();
        c.outputEnd = r.u64();
        l.m_commands.append(c);
    }
    if (!r.ok() || !r.atEnd())
        return false;
    *this = l;
    return true;
}

} // namespace Tether
