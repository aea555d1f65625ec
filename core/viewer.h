// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include "ptyprocess.h"
#include <QByteArray>
#include <QString>

namespace Tether {

class Session;

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
struct AttachInfo {
    ViewerMode mode = ViewerMode::Control;
    bool reset = true;          ///< the viewer must reset its terminal first
    ReplayReason reason = ReplayReason::Initial;
    quint64 replayFrom = 0;     ///< absolute offset of the first replayed byte
    qsizetype preludeBytes = 0; ///< mode-restoring bytes before the replay
    qsizetype replayBytes = 0;  ///< = offset - replayFrom
    quint64 offset = 0;         ///< absolute offset where live output continues
    bool exited = false;        ///< the process has already exited
    int cols = 80;              ///< session window size, columns
    int rows = 24;              ///< session window size, rows
};

/// What kind of client a viewer is, for display (tray, sessions window, API).
enum class ViewerKind { Browser, LocalWindow, Cli, Other };

/**
 * Anyone who looks at a session: the WebSocket client, the local QTermWidget
 * window, a CLI client. core knows viewers only through this interface.
 *
 * The session calls these methods synchronously from the event loop, in stream
 * order. A viewer supplies input and size by calling Session::sendInput() and
 * Session::resize() (control viewers only), reports its own backpressure with
 * Session::setViewerBlocked(), and leaves with Session::detach(). After
 * detached() the session has already forgotten the viewer: it must not call
 * the session again for that attachment. A viewer must detach before it is
 * destroyed.
 */
class Viewer
{
public:
    virtual ~Viewer() = default;

    /// Attachment accepted; replay bytes follow through output().
    virtual void attached(Session *session, const AttachInfo &info) = 0;
    /// Output bytes (prelude, replay, then live), valid only during the call.
    virtual void output(const char *data, qsizetype size) = 0;
    /// The window title changed (OSC 0/2 in the output).
    virtual void titleChanged(const QString &title) { Q_UNUSED(title); }
    /// The session's window size changed (columns×rows), e.g. by the control viewer.
    virtual void sizeChanged(int cols, int rows) { Q_UNUSED(cols); Q_UNUSED(rows); }
    /**
     * Escape sequences to write to the terminal at this point of the stream
     * (between the output() calls around it, replay or live): they stand for
     * what the terminal itself did there and the bytes cannot show, namely
     * the scroll margins a resize reset (TerminalState::
     * marginResetSequence()). Not output: no offsets. Protocol: the "fixup"
     * message. A viewer that ignores it replays margins the terminal no
     * longer had (garbled full-screen programs after a resize).
     */
    virtual void fixup(const QByteArray &sequence) { Q_UNUSED(sequence); }
    /// The process exited; called once, after its last output byte. The viewer
    /// stays attached until it detaches itself or the session goes away.
    virtual void exited(const ExitStatus &status) = 0;
    /// The session dropped this viewer (it is no longer attached).
    virtual void detached(DetachReason reason) = 0;

    virtual ViewerKind kind() const { return ViewerKind::Other; }
    /// Short human text, e.g. "browser 127.0.0.1:51234" or "local window".
    virtual QString describe() const { return QString(); }
};

} // namespace Tether
