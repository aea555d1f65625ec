// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <QString>

namespace Tether {

/// True when this build has the local terminal window (QTermWidget found at
/// configure time: qtermwidget5 for Qt 5, qtermwidget6 >= 2.0 for Qt 6).
bool localTerminalAvailable();
/// Why the local terminal window is unavailable, in words for the user (empty
/// when it is available), e.g. "QTermWidget for Qt 6 is not installed ...".
QString localTerminalUnavailableReason();

} // namespace Tether

#ifdef TETHER_HAVE_QTERMWIDGET

#include "viewer.h"

#include <QByteArray>
#include <QPointer>
#include <QTimer>
#include <QWidget>

class QLabel;
class QPushButton;
class QSocketNotifier;
class QTermWidget;
class QFrame;

namespace Tether {

class Session;
class SessionRegistry;

/**
 * A local terminal window on a session: a Viewer (kind LocalWindow) that shows
 * the session in a QTermWidget running in teletype mode.
 *
 * Output path: the session's bytes are written to the widget's own PTY slave
 * (getPtySlaveFd()); the widget reads its master and renders. That slave is
 * made O_NONBLOCK and its OPOST flag is cleared (else the line discipline turns
 * a bare LF into CRLF and full-screen programs break). Bytes go through a queue
 * drained by a write notifier, at most kWakeupBytes per wakeup, because the
 * widget drains the master on this same GUI thread: a blocking write of a large
 * burst would deadlock. Above kHighWatermark queued bytes the window reports
 * itself blocked (Session::setViewerBlocked), which pauses the session's PTY
 * reads; below kLowWatermark it unblocks. The queue is therefore bounded by
 * one replay (at most the ring capacity) plus one read chunk.
 *
 * Input path: the widget's sendData(const char*, int) bytes are copied at once
 * and passed to Session::sendInput. Input generated while a replay is being
 * rendered is dropped: the emulator answers queries found in old output
 * (cursor position, device attributes), and sending those answers would type
 * stray text into the program (microsoft/vscode#123803). The replay counts as rendered
 * when the widget has received (receivedData) as many bytes as were written up
 * to the replay's end, or 1 s after the last replay byte was written, whichever
 * comes first.
 *
 * Size: the widget has no size signal, so a resize event starts a 100 ms
 * single-shot timer; when it fires, screenColumnsCount()×screenLinesCount() is
 * sent with Session::resize (control mode only; never 0 or beyond kMaxCells).
 * A watch window cannot size the session, so it follows it instead: on attach
 * and on every Viewer::sizeChanged (the control viewer resized) it resizes
 * itself so its terminal shows the session's columns×rows. The emulator wraps
 * at its own width, not at its PTY's winsize, so only the widget's size makes
 * the program's output line up. The pixel size comes from the font's cell and
 * is corrected from what the widget then reports (at most kMaxFitSteps steps,
 * a window manager may refuse or round sizes); a size the user drags to
 * afterwards is left alone. Bounded by the screen: a session wider than the
 * screen wraps in a watch window.
 *
 * Lifecycle: closing the window detaches (the session lives on). A newer
 * control viewer supersedes this one: the window then says "Opened in another
 * window" and offers Take over, which reattaches with the offset this window
 * already has (only missing bytes are replayed). When the process exits the
 * window prints "[process exited with code N]" and becomes read-only.
 */
class TerminalWindow : public QWidget, public Viewer
{
    Q_OBJECT
public:
    static constexpr qsizetype kHighWatermark = 1024 * 1024; ///< bytes queued: block the session
    static constexpr qsizetype kLowWatermark = 256 * 1024;   ///< bytes queued: unblock
    static constexpr qsizetype kWriteChunk = 16 * 1024;      ///< bytes per write(2)
    static constexpr qsizetype kWakeupBytes = 256 * 1024;    ///< bytes per notifier wakeup
    /// Bytes queued behind live output after which a watcher detaches itself
    /// (watchers never pause the session).
    static constexpr qsizetype kWatchBacklogLimit = 16 * 1024 * 1024;
    static constexpr int kResizeDebounceMs = 100;
    static constexpr int kReplayGuardMs = 1000;
    /// Resize steps a watch window takes to match the session's size.
    static constexpr int kMaxFitSteps = 3;

    /// Creates the window for `session` (not attached yet: call attachSession()).
    /// `registry` is used to check that the session still exists before a take
    /// over. `mode`: Control types and sizes; Watch only shows.
    TerminalWindow(SessionRegistry *registry, Session *session, ViewerMode mode,
                   QWidget *parent = nullptr);
    /// Detaches if still attached.
    ~TerminalWindow() override;

    /// Attaches (or re-attaches after being superseded / stalled) in this
    /// window's mode. A re-attach resumes at the offset the window has, so only
    /// missing output is replayed. Returns false, showing why in the window,
    /// when the session no longer exists.
    bool attachSession();
    /// Switches to `mode` and re-attaches (e.g. Watch → Control).
    bool attachSession(ViewerMode mode);

    Session *session() const { return m_session; }
    QString sessionId() const { return m_sessionId; }
    bool isAttached() const { return m_attached; }
    ViewerMode mode() const { return m_mode; }
    bool hasExited() const { return m_exited; }
    /// True while input is dropped because a replay is being rendered.
    bool isReplaying() const { return m_suppressInput; }
    /// The banner text shown above the terminal (empty when hidden).
    QString bannerText() const;
    /// The embedded widget (tests type into it and read it back).
    QTermWidget *terminal() const { return m_term; }
    /// Output bytes queued, not yet written to the widget's PTY.
    qsizetype queuedBytes() const { return m_queue.size() - m_queueHead; }
    /// Window size (pixels) that shows `cols`×`rows` cells, bounded by the screen.
    QSize sizeForCells(int cols, int rows) const;
    /// The terminal's whole text (scrollback + screen) as plain text.
    QString screenText() const;

    // Viewer
    void attached(Session *session, const AttachInfo &info) override;
    void output(const char *data, qsizetype size) override;
    void titleChanged(const QString &title) override;
    void sizeChanged(int cols, int rows) override;
    void fixup(const QByteArray &sequence) override;
    void exited(const ExitStatus &status) override;
    void detached(DetachReason reason) override;
    ViewerKind kind() const override { return ViewerKind::LocalWindow; }
    QString describe() const override;

Q_SIGNALS:
    /// Attached or detached (any reason).
    void attachmentChanged(bool attached);

protected:
    void closeEvent(QCloseEvent *event) override;
    bool eventFilter(QObject *watched, QEvent *event) override;

private:
    void enqueue(const char *data, qsizetype size);
    void flush();
    void updateBlocked();
    void onTerminalInput(const char *data, int size);
    void onTerminalReceived(qsizetype bytes);
    void replayWritten();
    void endReplay();
    void applySize();
    void followSessionSize(int cols, int rows);
    void fitToSessionSize();
    void showBanner(const QString &text, const QString &button);
    void hideBanner();
    void updateTitle();
    void onBannerButton();
    void detachNow();

    QPointer<SessionRegistry> m_registry;
    QPointer<Session> m_session;
    QString m_sessionId;
    QString m_title;
    ViewerMode m_mode;

    QFrame *m_banner = nullptr;
    QLabel *m_bannerLabel = nullptr;
    QPushButton *m_bannerButton = nullptr;
    QTermWidget *m_term = nullptr;
    int m_slaveFd = -1;
    QSocketNotifier *m_writeNotifier = nullptr;

    // Output queue: m_queue[m_queueHead..] is pending; compacted as it drains.
    QByteArray m_queue;
    qsizetype m_queueHead = 0;
    quint64 m_writtenTotal = 0;   ///< bytes written to the widget's PTY, ever
    quint64 m_receivedTotal = 0;  ///< bytes the widget reported reading, ever
    bool m_blocked = false;       ///< we told the session we are blocked

    // Stream position in the session's offset space.
    bool m_attached = false;
    bool m_hasOffset = false;
    quint64 m_offset = 0;          ///< session offset of the next live byte we expect
    qsizetype m_preludeLeft = 0;   ///< prelude bytes still to come (not in offset space)
    qsizetype m_replayLeft = 0;    ///< prelude + replay bytes still to come
    bool m_exited = false;

    // Replay input suppression.
    bool m_suppressInput = false;
    quint64 m_replayMark = 0;      ///< written-stream position of the replay's end
    QTimer m_replayGuard;

    QTimer m_resizeTimer;
    // Watch mode: the session size this window is fitting itself to.
    int m_fitCols = 0;
    int m_fitRows = 0;
    int m_fitStepsLeft = 0;  ///< > 0 while our own resize is being corrected
};

} // namespace Tether

#endif // TETHER_HAVE_QTERMWIDGET
