// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include "attachinfo.h"
#include <QByteArray>
#include <QString>

namespace Tether {

class Session;

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
     * marginResetSequence()), and in a replay at another number of rows,
     * margins that were the whole screen at their own size (TerminalState::
     * wholeScreenMarginsSequence(), issue 29). Not output: no offsets. Protocol: the "fixup"
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
