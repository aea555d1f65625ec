// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <QObject>
#include <QTimer>

class QSocketNotifier;

namespace Tether {

/**
 * Finishes a TCP connection gracefully after its owner let go of it.
 *
 * Closing a socket that still has unread incoming data makes the kernel send
 * a reset (RFC 1122 §4.2.2.13), and a reset destroys whatever we had queued
 * but not yet delivered: the last output, the "exit" message, the close frame
 * with its code. QWebSocket closes its socket right after queuing the close
 * frame, even while the client is still sending (a paste, a resize), so the
 * server keeps a duplicate of the descriptor (see WebSocketViewer) and hands
 * it here once Qt is done: the write side is shut down (FIN after everything
 * queued) and incoming bytes are read and dropped until the peer closes, at
 * most `timeoutMs` or `maxBytes`, then the descriptor is closed.
 *
 * Deletes itself when done. Never blocks: the descriptor is non-blocking and
 * read on a QSocketNotifier. A close still pending when its owner goes (the
 * server at exit) is deleted with it and closes the descriptor then, as the
 * process's exit would: nothing is left to nobody (LeakSanitizer reported
 * every lingering close a shutdown interrupted, tst_restart).
 */
class LingeringClose : public QObject
{
    Q_OBJECT
public:
    /// Takes ownership of `fd`; `owner` (the server) deletes the close if it
    /// is still pending when the owner is destroyed. `timeoutMs`: how long to
    /// wait for the peer's FIN; `maxBytes`: how much to read and drop meanwhile.
    static void start(int fd, QObject *owner, int timeoutMs = 5000, qint64 maxBytes = 4 * 1024 * 1024);
    /// Connections still being finished (a restart in place waits for them,
    /// bounded: closing one with unread data would send a reset).
    static int pending() { return s_pending; }

private:
    LingeringClose(int fd, QObject *owner, int timeoutMs, qint64 maxBytes);
    ~LingeringClose() override;
    void onReadable();
    void finish();

    int m_fd;
    qint64 m_left;
    QSocketNotifier *m_notifier = nullptr;
    QTimer m_timer;
    static inline int s_pending = 0;
};

} // namespace Tether
