// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include "shellmarks.h"

#include <QByteArray>
#include <QList>
#include <QMetaType>
#include <QString>

#include <optional>

namespace Tether {

/// One command a session's shell ran, as its marks told (docs/protocol.md
/// §4, COMMAND).
struct CommandRecord {
    quint64 id = 0;          ///< 1, 2, ... per session, never reused
    QString commandLine;     ///< from OSC 633;E; "" when the shell did not say
    QString cwd;             ///< the shell's directory when it started (OSC 7); "" unknown
    qint64 startMs = 0;      ///< ms since the epoch, UTC
    qint64 endMs = -1;       ///< -1 while running
    std::optional<int> exitStatus; ///< the D mark's status; none while running or when not given
    quint64 outputStart = 0; ///< stream offset just past the C mark
    quint64 outputEnd = 0;   ///< stream offset of the D mark's ESC (0 while running)
    bool running() const { return endMs < 0; }
};

/**
 * The commands of one session, from its shell-integration marks
 * (ShellMarkScanner): a bounded list (kMaxCommands, oldest dropped) and the
 * shell's state now. Pure logic, fed by Session::onOutput.
 *
 * Rules (docs/protocol.md §4, "Commands and notifications"): C starts a
 * command (output from just past the mark) with the command line of the
 * last E since the prompt and the cwd of the last OSC 7; D ends the running
 * one (output up to the mark) with its status (an integer 0..255 after
 * "D;"; anything else: no status). A (a prompt) while a command runs ends
 * it without a status (a shell killed by Ctrl-C between hooks, a nested
 * shell with integration). D with nothing running, a second C, any order of
 * marks at all: never more than kMaxCommands records nor more than
 * ShellMarkScanner::kMaxPayload bytes per text, whatever a program sends.
 */
class CommandLog
{
public:
    static constexpr int kMaxCommands = 200;

    enum class ShellState : quint8 {
        Unknown, ///< no mark seen yet: no shell integration (yet)
        Prompt,  ///< at the prompt (after A, B or D)
        Running, ///< a command runs (after C)
    };

    /// What a mark changed.
    enum class Change : quint8 { None, State, Started, Finished };
    /// Applies `mark` at `nowMs` (ms since the epoch). Started / Finished:
    /// last() is that command (Finished may also follow a C that ended the
    /// previous one: then finishedBefore() holds it, see there).
    Change apply(const ShellMark &mark, qint64 nowMs);
    /// Ends the running command, if any, with `status` (none when outside
    /// 0..255) at `nowMs` with output up to `at` (the session's process
    /// exited: its status). True when one ran.
    bool endRunning(qint64 nowMs, quint64 at, int status);
    /// When apply() started a command while another ran (C after C): the
    /// one it ended, else nullopt. Valid until the next apply().
    const std::optional<CommandRecord> &finishedBefore() const { return m_finishedBefore; }

    ShellState state() const { return m_state; }
    QString cwd() const { return m_cwd; }
    const QList<CommandRecord> &commands() const { return m_commands; }
    /// The newest command (running or not); nullptr when none.
    const CommandRecord *last() const { return m_commands.isEmpty() ? nullptr : &m_commands.last(); }
    /// The newest command, when running; nullptr otherwise.
    const CommandRecord *running() const
    {
        return m_state == ShellState::Running && last() && last()->running() ? last() : nullptr;
    }

    /// Everything, for the restart-in-place state (a version byte first).
    QByteArray save() const;
    /// Replaces this log with a saved one; false, changing nothing, when
    /// `saved` is not one (bad version, truncated, out of bounds).
    bool restore(const QByteArray &saved);

private:
    void finish(CommandRecord &c, qint64 nowMs, quint64 at, std::optional<int> status);
    static QString boundedText(const char *data, qsizetype size);
    ShellState m_state = ShellState::Unknown;
    QString m_cwd;
    QString m_pendingLine;
    quint64 m_nextId = 1;
    QList<CommandRecord> m_commands;
    std::optional<CommandRecord> m_finishedBefore;
};

} // namespace Tether

Q_DECLARE_METATYPE(Tether::CommandRecord)
