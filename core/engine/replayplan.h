// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include "attachinfo.h"

#include <QByteArray>
#include <QList>
#include <optional>

namespace Tether {

class RingBuffer;
class TerminalState;

/// How far a reset replay looks for its first safe byte (bytes). The scan
/// runs in the event loop, so it is bounded: a stream stuck inside a huge
/// string (an unterminated DCS in a 64 MiB buffer) once stalled every attach
/// for most of a second.
constexpr quint64 kMaxReplayBoundaryScan = 1024 * 1024;
/// How far a reset replay on the normal screen looks past its safe boundary
/// for the start of a line (bytes).
constexpr quint64 kMaxReplayLineScan = 4096;

/**
 * What an attach replays, decided from the session's retained output alone:
 * no viewer is involved (Session::attach() applies it).
 *
 * All offsets are absolute output offsets (RingBuffer): the replay is the
 * retained bytes [replayFrom, offset), preceded by `prelude`, with
 * TerminalState::marginResetSequence() sent as a fixup at each offset of
 * `fixups` (ascending, each within [replayFrom, offset]).
 */
struct ReplayPlan {
    ReplayReason reason = ReplayReason::Initial;
    /// The viewer must reset its terminal before the replay (every reason
    /// but Resume).
    bool reset = true;
    quint64 replayFrom = 0; ///< first replayed byte
    quint64 offset = 0;     ///< end of the replay: the ring's endOffset()
    /// Escape sequences restoring the modes in force at replayFrom
    /// (TerminalState::restoreSequence()); empty unless a reset replay starts
    /// after the beginning of the stream.
    QByteArray prelude;
    /// Where a resize reset the scroll margins, within the replay: the viewer
    /// gets a fixup there. One at replayFrom itself is included: a resuming
    /// viewer may have been away when it happened (a second one is harmless).
    QList<quint64> fixups;
    /// Where the replayed bytes set scroll margins that were the whole
    /// screen at the size they were written for but are not at the
    /// viewer's (`wholeScreenMargins` of planReplay(), issue 29): the viewer
    /// gets TerminalState::wholeScreenMarginsSequence() there, right after
    /// that DECSTBM. Ascending, within [replayFrom, offset]; at an offset
    /// that also has a fixup, after it.
    QList<quint64> wholeScreenFixups;
    /// Where the screen snapshot goes (within [replayFrom, offset]), if one
    /// is sent: after the replayed bytes before it and after a fixup at the
    /// same offset (the snapshot is the state at that offset, fixup
    /// included), before the bytes from it on.
    std::optional<quint64> snapshotAt;
    /// The snapshot is the whole replay's start (`replay=screen`): painted
    /// from a reset terminal with scrollback, not in place.
    bool screenReplay = false;

    qsizetype replayBytes() const { return qsizetype(offset - replayFrom); }
};

/// A snapshot the session can insert into a reset replay: its screen has
/// parsed the output up to `at` (at a safe boundary) and is synced.
struct SnapshotOffer {
    quint64 at = 0;
    /// `replay=screen`: replace the retained output before `at` by the
    /// snapshot (from a reset terminal), even when nothing was dropped.
    bool screenReplay = false;
    /// The session was resized for this attach (a control viewer's size,
    /// Session::attach): the retained bytes were written for another size,
    /// so the snapshot, at the new one, goes in (in place) even when
    /// nothing was dropped.
    bool repaint = false;
};

/**
 * Plans the replay for a viewer that already has the output up to `resume`
 * (nullopt: nothing). Pure: reads `ring`, changes nothing.
 *
 * `tail`: the TerminalState at ring.startOffset() (the modes in force at the
 * first retained byte). `marginResets`: ascending offsets where a resize reset
 * the scroll margins the stream had set (Session keeps them); offsets outside
 * the replay are ignored for fixups, and those between ring.startOffset() and
 * the chosen start also apply to the prelude's state.
 *
 * Rules (docs/protocol.md, "Replay rules" and "Safe-boundary replay"):
 *  - no resume → reset, Initial, everything retained;
 *  - resume in [startOffset, endOffset] → Resume, no reset, from `resume`
 *    (resume == end: nothing);
 *  - resume < startOffset → reset, RolledOut; resume > endOffset → reset,
 *    Ahead (the server also maps an unparsable offset to Ahead).
 * A reset replay of a stream whose beginning was dropped (startOffset > 0)
 * does not start inside an escape sequence or a UTF-8 character
 * (martanne/abduco#32, jupyterlab/jupyterlab#12073): it starts at the first
 * safe boundary within kMaxReplayBoundaryScan bytes (none: nothing is
 * replayed, which is also what a terminal would have shown of an unterminated
 * string). On the normal screen
 * it then skips to just after the next newline, if one comes within
 * kMaxReplayLineScan bytes and is not the last byte, so the first line is not
 * the tail of a line whose beginning (and colour) is gone. Its prelude
 * restores the modes in force at that start. A reset replay from offset 0
 * needs neither (the viewer's reset gives the stream's initial state).
 *
 * `snapshot` (the session's screen, synced, at a safe boundary; docs/
 * protocol.md "Screen snapshot"), for reset replays only:
 *  - default: used only when the beginning was dropped (startOffset > 0: a
 *    replay from 0 is exact by itself) or with `repaint` (a replay from 0
 *    is exact only at the size it was written for). snapshotAt = at. When `at` is before
 *    the safe start found above (the screen lags), the replay starts at `at`
 *    instead and has no prelude: the snapshot restores everything.
 *  - screenReplay: replayFrom = snapshotAt = at, no prelude, always.
 * A resume (no reset) ignores it. Fixups keep their rule (within
 * [replayFrom, offset]); one at `at` comes before the snapshot.
 *
 * `wholeScreenMargins` (issue 29): ascending offsets just after a DECSTBM
 * that set margins which were the whole screen at the size in force there
 * (TerminalState::marginsWholeScreen()) and are not at the viewer's size
 * (Session finds them). To the viewer they mean "no margins": each within
 * [replayFrom, offset] becomes a wholeScreenFixups entry, and those
 * between ring.startOffset() and the chosen start reset the prelude's
 * margins, as marginResets do. (`tail` is given as the viewer must take
 * it: Session resets its margins when they were the whole screen.)
 *
 * `streamStart`: the offset where the session's output stream began, from
 * a fresh terminal (0, or where a session adopted after a crash started
 * again: Session::streamStart()). A ring that starts there has dropped
 * nothing, so the replay starts at its first byte, not at a boundary.
 *
 * Cost: at most kMaxReplayBoundaryScan + kMaxReplayLineScan bytes parsed one
 * at a time; allocates the prelude and the fixup list only.
 */
ReplayPlan planReplay(const RingBuffer &ring, const TerminalState &tail,
                      const QList<quint64> &marginResets, std::optional<quint64> resume,
                      std::optional<SnapshotOffer> snapshot = std::nullopt,
                      const QList<quint64> &wholeScreenMargins = {}, quint64 streamStart = 0);

} // namespace Tether
