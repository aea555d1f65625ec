// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <QMetaType>
#include <QtGlobal>
#include <optional>

/// The types both ends of an attachment speak in: what the session tells a
/// viewer when it attaches (the `attached` message of docs/protocol.md §5),
/// why a viewer was let go, and how a process ended (the `exit` message).
/// Shared by the engine (which fills them in), the server (which puts them on
/// the wire), the client and the ui (which read them); no layer below.
namespace Tether {

/// How a process ended: exactly one of code / signal is meaningful.
struct ExitStatus {
    bool signaled = false; ///< true: killed by `signal`; false: exited with `code`
    int code = 0;          ///< exit(3) status, when !signaled
    int signal = 0;        ///< terminating signal number, when signaled
};

/// How a viewer takes part: the control viewer types and sizes the session
/// (one at a time); watchers only receive output (any number).
enum class ViewerMode { Control, Watch };

/// Why the session let go of a viewer (Viewer::detached). The WebSocket close
/// code each maps to is in docs/protocol.md.
enum class DetachReason {
    Superseded,   ///< a newer control viewer attached (4409)
    Killed,       ///< the session was killed / expired (1001)
    Shutdown,     ///< the server is shutting down (1001)
    InputStalled, ///< the program does not read its input; queue full (1013)
};

/// Why a replay starts where it does (protocol field "reason").
enum class ReplayReason {
    Initial,   ///< no resume offset given: all retained output
    Resume,    ///< resume offset inside the retained range: only the missing bytes
    RolledOut, ///< resume offset older than the retained start: reset + all retained
    Ahead,     ///< resume offset beyond the end, or unparsable: reset + all retained
};

/// What the session tells a viewer when it attaches; after attached() the
/// session calls output() with `preludeBytes` bytes of mode-restoring escape
/// sequences (not part of the offset space), then `replayBytes` bytes of output
/// (offsets replayFrom ..< offset; with fixup() calls at the offsets where a
/// resize reset the scroll margins), then live output from `offset` on.
/// When `snapshotAt` is set, `snapshotBytes` bytes of the server's screen
/// snapshot (no offsets either) come where the replay reaches that offset:
/// after the replayed bytes before it (and a fixup there), before the rest.
struct AttachInfo {
    ViewerMode mode = ViewerMode::Control;
    bool reset = true;          ///< the viewer must reset its terminal first
    ReplayReason reason = ReplayReason::Initial;
    quint64 replayFrom = 0;     ///< absolute offset of the first replayed byte
    qsizetype preludeBytes = 0; ///< mode-restoring bytes before the replay
    qsizetype replayBytes = 0;  ///< = offset - replayFrom
    quint64 offset = 0;         ///< absolute offset where live output continues
    /// Where the screen snapshot is inserted (an offset in [replayFrom,
    /// offset]); nullopt: none (protocol: `snapshot_at`, null).
    std::optional<quint64> snapshotAt;
    qsizetype snapshotBytes = 0; ///< its length (protocol: `snapshot_bytes`)
    /// The replay is the screen replay a `replay=screen` attach asked for
    /// (protocol: `replay_mode` "screen"); false: the raw replay ("raw").
    bool screenReplay = false;
    bool exited = false;        ///< the process has already exited
    int cols = 80;              ///< session window size, columns
    int rows = 24;              ///< session window size, rows
};

/// What kind of client a viewer is, for display (tray, sessions window, API).
enum class ViewerKind { Browser, LocalWindow, Cli, Other };

} // namespace Tether

Q_DECLARE_METATYPE(Tether::ExitStatus)
