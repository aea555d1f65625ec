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

/**
 * Installs a Qt message handler that drops the debug lines QTermWidget 1.2
 * prints at every search of its search bar ("search from 0 , 0 to 2 , 55",
 * "linesToRead: 48", "Found in string from ...", "m_foundStartColumn ...",
 * "Not found": plain qDebug() in lxqt/qtermwidget 1.2.0
 * lib/HistorySearch.cpp, commented out upstream only in 2.4.0). They have
 * no logging category, so no QT_LOGGING_RULES
 * rule can turn them off without turning off every uncategorized debug
 * message. Only debug messages of the "default" category with exactly those
 * beginnings are dropped; everything else goes on to the handler installed
 * before (Tether's own messages are all in tether.* categories). Calling it
 * again while installed does nothing. Does nothing in a build without
 * QTermWidget. Call from the GUI thread before windows open.
 */
void installTerminalMessageFilter();

} // namespace Tether

#ifdef TETHER_HAVE_QTERMWIDGET

#include "apiclient.h"
#include "attachstream.h"
#include "replayinputgate.h"
#include "attachinfo.h"
#include "promptnavigator.h"

#include <QByteArray>
#include <QFont>
#include <QJsonObject>
#include <QStringList>
#include <QTimer>
#include <QWidget>

class QAction;
class QLabel;
class QMenu;
class QPushButton;
class QScrollArea;
class QTermWidget;
class QFrame;

namespace Tether {

class AttachClient;
class SessionNameWatcher;
class WriteQueue;

/**
 * A local terminal window on a session: a client of the Tether server
 * (`tether serve`, or the desktop app's own) that attaches to the session
 * over WebSocket (docs/protocol.md section 5) with the AttachClient shared
 * with `tether attach`, and shows it in a QTermWidget running in teletype
 * mode. It includes no engine header: the window sees the session only
 * through the documented protocol, so it can live in another process than
 * the sessions (issue 23).
 *
 * Output path: AttachClient's bytes (prelude, replay, fixups and live
 * output, in stream order) are written to the widget's own PTY slave
 * (getPtySlaveFd()); the widget reads its master and renders. That slave is
 * made O_NONBLOCK and its OPOST flag is cleared (else the line discipline
 * turns a bare LF into CRLF and full-screen programs break). Bytes go
 * through a WriteQueue (kWriteChunk bytes per write, at most kWakeupBytes
 * per wakeup, because the widget drains the master on this same GUI thread:
 * a blocking write of a large burst would deadlock, and an unbounded one
 * would starve the widget). Backpressure as in `tether attach`: above
 * kHighWatermark queued bytes the window pauses the attachment
 * (AttachClient::setPaused(true): a control window sends `pause` and the
 * server stops reading the program's output; a watch window lets go of the
 * connection and resumes at its offset), below kLowWatermark it resumes.
 * What the server had queued and the sockets hold still arrives, so the
 * queue is bounded by kHighWatermark plus the server's 1 MiB queue plus
 * the kernel's socket buffers. AttachClient keeps the offset the window
 * resumes from (prelude excluded).
 *
 * Input path: the widget's sendData(const char*, int) bytes are used at once
 * (the pointer is not ours) and passed to AttachClient::sendInput through the
 * ReplayInputGate shared with `tether attach`: after the replay's last byte
 * the window writes a Device Status Report (CSI 5 n); QTermWidget's emulator
 * answers it through sendData after the answers to every query in the replay
 * (cursor position, device attributes), and input starting with ESC is
 * dropped until that answer (the answers would type stray text into the
 * program: microsoft/vscode#123803). The gate is closed from attachSession()
 * until the `attached` message says whether a replay follows.
 *
 * Size: the widget has no size signal, so a resize event starts a 100 ms
 * single-shot timer; when it fires, screenColumnsCount()×screenLinesCount()
 * is sent (AttachClient::setWindowSize: a `resize` message; control mode
 * only; never 0 or beyond kMaxCells). A shown control window also attaches
 * at its size (`cols=C&rows=R` in the attach URL, docs/protocol.md
 * "Attaching at the viewer's size"): the session is resized before the
 * replay is built, so a screen written at other columns is replayed as it
 * looks at this window's (a resize after the replay painted it wrapped at
 * the wrong width). The holder opens the window at the session's size
 * (resize(sizeForCells(cols, rows)), bounded by the screen) and shows it
 * before attaching it; a hidden window attaches without a size.
 * A watch window cannot size the session, so it follows it instead: on
 * `attached` and on every `size` message (the control viewer resized) it
 * resizes itself so its terminal shows the session's columns×rows. The
 * emulator wraps at its own width, not at its PTY's winsize, so only the
 * widget's size makes the program's output line up. The pixel size comes
 * from the font's cell and is corrected from what the widget then reports
 * (at most kMaxFitSteps steps, a window manager may refuse or round sizes);
 * a size the user drags to afterwards is left alone. The terminal keeps the
 * session's cells also where the window cannot show them (the window is
 * bounded by the screen, a session may be larger: scroll bars show the
 * rest). Were it cut to the window, the program's lines would wrap at the
 * terminal's width and leave stale characters (issue 29: htop at 200×50
 * watched on a 1600-pixel screen showed "ro 81" where the controlling
 * terminal showed "   81").
 *
 * Keys and menu (Konsole's and QTerminal's): Ctrl+Shift+C copies the
 * selection (copySelection()), Ctrl+Shift+V pastes the clipboard and
 * Shift+Insert the primary selection (QTermWidget's pasteClipboard(),
 * pasteSelection(); a paste is bracketed when the program enabled mode 2004;
 * a multi-line paste asks nothing and keeps its newlines);
 * Ctrl+Shift+F shows the search bar; Ctrl++ (or Ctrl+=), Ctrl+- and Ctrl+0
 * zoom (the session follows the new columns×rows as on a resize; a watch
 * window resizes itself to keep the session's size). These keys never reach
 * the program. A right-click menu offers the same plus Select all and Clear
 * scrollback (and a link's actions under the pointer). Issue 14.
 *
 * Commands (issue 25; the session's shell with Tether's shell integration, or
 * any program sending OSC 133/633 marks): Ctrl+Shift+Up / Ctrl+Shift+Down
 * (and the menu's Previous Prompt / Next Prompt) scroll the view so that the
 * previous / next prompt line is the top line, as the dashboard's keys do.
 * QTermWidget has no markers and no API that gives the cursor's line, so
 * the window finds a prompt's line itself: after each prompt mark (OSC
 * 133;A or 633;A) in the output it writes a cursor position query (CSI 6 n,
 * DSR-CPR) to the widget; the widget's emulator answers it through
 * sendData while it parses that point of the stream, and the window takes
 * that answer (it never reaches the program) as the prompt's line:
 * historyLinesCount() + row − 1, counted from the oldest scrollback line.
 * Answers to the program's own CSI 6 n (seen in the stream in order with
 * ours) pass on as before. A key whose bytes look like an answer (Shift+F3
 * is CSI 1 ; 2 R) pressed in the moment between the query's write and the
 * widget's answer would be taken for it (and its answer typed instead). The view scrolls through the display's
 * QScrollBar (a child widget of the QTermWidget: its value is the first line
 * shown, the same count), the only way to scroll to a line that QTermWidget
 * 1.2 offers (its public API scrolls only to the end). Limits: once the
 * scrollback holds kHistoryLines lines, every new line drops the oldest and
 * QTermWidget does not say how many were dropped, so from then on recorded
 * lines would be wrong: the window forgets them and says that jumping
 * needs Clear Scrollback (which starts it again); a reset replay or a clear
 * also starts it again. A screen the program cleared (`clear`) keeps no
 * history of it: prompts recorded at or below a new prompt's line are
 * dropped.
 * Ctrl+Shift+O (Copy Last Output) puts the output of the last command that
 * ended on the clipboard, as text (outputText(): escapes dropped, lines as
 * drawn, no final line feed), from the server (`GET
 * /api/sessions/{id}/commands`, then `.../commands/{n}/output`): the whole
 * output as long as the session retains it, whatever the window's
 * scrollback holds. A session without commands, or whose last output the
 * server no longer holds, is said in the banner for a few seconds.
 *
 * Colours: kColorScheme, a light scheme in which the default foreground on
 * colour 7 (what vim's Visual selection and `ESC[47m` draw) reads at 9.9:1;
 * the dark schemes QTermWidget ships have the default foreground equal to
 * colour 7 (1:1, text invisible).
 *
 * Title: the session's name, else the program's title (OSC 0/2: `attached`
 * and `title` messages), else its command, as the Sessions window names
 * it. Names are not in the attach stream: the window follows the server's
 * live list (`GET /api/events`, its `sessions` events) while attached, so
 * a rename shows at once.
 *
 * Lifecycle: closing the window detaches (close 1000; the session lives
 * on). A newer control viewer supersedes this one (4409): the window then
 * says "Opened in another window" and offers Take over, which reattaches
 * with the offset this window already has (AttachClient::reopen(): only
 * missing bytes are replayed). When the process exits (`exit`, then 4410)
 * the window prints "[process exited with code N]" and becomes read-only.
 * A connection that ends without a reason (the server restarts in place,
 * 1012; an input stall, 1013; a dropped connection) is made again by
 * AttachClient with backoff and `resume=`; meanwhile the banner says
 * "Reconnecting to Tether…". A server that stays away
 * (AttachClient::lostServerAfterMs) ends it: the banner says Tether is gone
 * and offers Reconnect. The other ends (session killed, server shutting
 * down, session not found, key refused, too many viewers) are said in the
 * banner.
 */
class TerminalWindow : public QWidget
{
    Q_OBJECT
public:
    static constexpr qsizetype kHighWatermark = 1024 * 1024; ///< bytes queued: pause the attachment
    static constexpr qsizetype kLowWatermark = 256 * 1024;   ///< bytes queued: resume
    static constexpr qsizetype kWriteChunk = 16 * 1024;      ///< bytes per write(2)
    static constexpr qsizetype kWakeupBytes = 256 * 1024;    ///< bytes per notifier wakeup
    static constexpr int kResizeDebounceMs = 100;
    /// Resize steps a watch window takes to match the session's size.
    static constexpr int kMaxFitSteps = 3;
    /// Lines of scrollback the widget keeps.
    static constexpr int kHistoryLines = 10000;
    /// QTermWidget colour scheme (one of those it ships; see the class doc).
    static constexpr const char *kColorScheme = "BlackOnWhite";
    /**
     * The window's colour scheme and font (Settings, terminal/colorScheme,
     * terminal/fontFamily, terminal/fontSize: DesktopApp applies them to
     * every terminal window). A scheme QTermWidget does not have falls back
     * to kColorScheme; an empty family, or one that is not fixed-pitch, to
     * the system's fixed font. Resets the zoom (Ctrl+0 returns to this
     * font); the session's size follows the new cell size as on a resize.
     */
    void setAppearance(const QString &colorScheme, const QString &fontFamily, int pointSize);
    /// The colour scheme in use.
    QString colorScheme() const { return m_colorScheme; }

    /// Creates the window for session `sessionId` of the server at
    /// `endpoint` (not attached yet: call attachSession()). `mode`: Control
    /// types and sizes; Watch only shows.
    TerminalWindow(const ServerEndpoint &endpoint, const QString &sessionId, ViewerMode mode,
                   QWidget *parent = nullptr);
    /// Detaches if still attached (the close completes after the window is gone).
    ~TerminalWindow() override;

    /// Attaches (or re-attaches after being superseded, or after the server
    /// was lost) in this window's mode; the attachment is made
    /// asynchronously (isAttached() once the server's `attached` came;
    /// attachmentChanged()). A re-attach resumes at the offset the window
    /// has, so only missing output is replayed. In control mode a shown
    /// window attaches at its columns×rows (the session takes them before
    /// the replay). True when attached or attaching (also while
    /// reconnecting); false after the process exited (the window stays
    /// read-only) or when no session id was given.
    bool attachSession();
    /// Switches to `mode` and re-attaches (e.g. Watch → Control). A new
    /// mode is a new attachment: its replay starts over (a reset replay).
    bool attachSession(ViewerMode mode);

    /**
     * The host moved (the desktop app's "Start Tether again", which may find
     * it on another address: `--port 0`): the window follows it as it
     * follows a restart in place. A connection being made again goes to
     * `endpoint` at once; a window that lost its host (Tether shut down, or
     * stayed away) attaches there again, resuming at its offset. What the
     * new host says then is said in the banner (a session it does not hold:
     * "This session no longer exists."). An exited window stays read-only.
     */
    void setEndpoint(const ServerEndpoint &endpoint);
    const ServerEndpoint &endpoint() const { return m_endpoint; }

    QString sessionId() const { return m_sessionId; }
    /// True between the server's `attached` and the end of that connection.
    bool isAttached() const { return m_attached; }
    ViewerMode mode() const { return m_mode; }
    bool hasExited() const { return m_exited; }
    /// True while AttachClient is making the connection again (banner
    /// "Reconnecting to Tether…").
    bool isReconnecting() const { return m_reconnecting; }
    /// True while the replay input gate is closed (from attachSession()
    /// until the replay is rendered).
    bool isReplaying() const { return !m_gate.isOpen(); }
    /// The banner text shown above the terminal (empty when hidden).
    QString bannerText() const;
    /// The embedded widget (tests type into it and read it back).
    QTermWidget *terminal() const { return m_term; }
    /// Output bytes queued, not yet written to the widget's PTY.
    qsizetype queuedBytes() const;
    /// The attachment is paused by backpressure (see the class doc).
    bool isPaused() const;
    /// A resize of the terminal is waiting out kResizeDebounceMs before
    /// the session is sized to it (tests wait for this to be false).
    bool isResizePending() const { return m_resizeTimer.isActive(); }
    /// How long the server may refuse connections before the window says
    /// it is gone (AttachClient::setLostServerAfter; ms, default 10000).
    void setLostServerAfter(int msec);
    /// Window size (pixels) that shows `cols`×`rows` cells, bounded by the screen.
    QSize sizeForCells(int cols, int rows) const;
    /// The terminal widget's size (pixels) for `cols`×`rows` cells, unbounded.
    QSize terminalSizeForCells(int cols, int rows) const;
    /// The terminal's whole text (scrollback + screen) as plain text.
    QString screenText() const;
    /// The right-click menu at `pos` (the terminal's coordinates): a link's
    /// actions, Copy, Paste, Select all, Find, Zoom in/out/reset, Clear
    /// scrollback. The caller owns it.
    QMenu *contextMenu(const QPoint &pos);
    /// Selects the scrollback and the screen.
    void selectAll();
    /// Puts the selection on the clipboard (Ctrl+Shift+C, Copy), one line
    /// per terminal line (a line the program wrapped stays one line), however
    /// it was selected; does nothing without a selection.
    void copySelection();
    /// Drops the scrollback; the screen and the terminal's modes stay.
    /// Prompt lines are forgotten (they were in it) and recorded again.
    void clearScrollback();

    /// Scrolls so that the last prompt line above the first line shown is
    /// the first line shown (Ctrl+Shift+Up); nothing when there is none. See
    /// the class doc for how prompt lines are found and their limits.
    void jumpToPreviousPrompt();
    /// Scrolls so that the first prompt line below the first line shown is
    /// the first line shown, or as far as the view goes (Ctrl+Shift+Down);
    /// nothing when there is none.
    void jumpToNextPrompt();
    /// The lines of the prompts recorded (oldest first; 0 is the oldest
    /// scrollback line, as scrollPosition()).
    QList<int> promptLines() const { return m_prompts->lines(); }
    /// False once the scrollback was full (kHistoryLines): prompt lines are
    /// then unknown until Clear Scrollback or a reset.
    bool promptLinesKnown() const { return m_prompts->linesKnown(); }
    /// The first line shown (0 = the oldest scrollback line; the view at
    /// the end shows historyLinesCount()).
    int scrollPosition() const;
    /**
     * Copies the output of the session's last finished command to the
     * clipboard as text (Ctrl+Shift+O; see the class doc). Asynchronous:
     * lastOutputCopied() says how it went.
     */
    void copyLastOutput();

Q_SIGNALS:
    /// Attached or detached (any reason, a lost connection too).
    void attachmentChanged(bool attached);
    /// copyLastOutput() ended: `ok` when the clipboard holds the output
    /// (`text`); else `text` says why not (also shown in the banner).
    void lastOutputCopied(bool ok, const QString &text);

protected:
    void closeEvent(QCloseEvent *event) override;
    bool eventFilter(QObject *watched, QEvent *event) override;

private:
    /// A new AttachClient for this window's endpoint, session and mode.
    void makeClient();
    /// Lets go of the current client: it detaches (close 1000) and deletes
    /// itself once closed.
    void releaseClient();
    void onAttached(const QJsonObject &message, bool reset);
    void onOutput(const QByteArray &data);
    void onReplayFinished();
    void onReconnecting();
    void onFinished(AttachStream::End end, const QString &message);
    void setAttached(bool attached);
    void enqueue(const char *data, qsizetype size);
    void onBlockedChanged(bool blocked);
    void onTerminalInput(const char *data, int size);
    void applySize();
    /// The font changed (Settings or zoom): the session is sized to the
    /// columns×rows now shown (control), or the window to the session (watch).
    void cellSizeChanged();
    void followSessionSize(int cols, int rows);
    void fitToSessionSize();
    /// The columns×rows this (visible) window's terminal has, to attach at
    /// (`cols`/`rows` of the attach); (0, 0) when out of range (not laid
    /// out). Hides the banner first: a successful attach hides it anyway.
    QSize attachCells();
    void showBanner(const QString &text, const QString &button);
    void hideBanner();
    void updateTitle();
    void onBannerButton();
    void detachNow();
    void createActions();
    void showNotice(const QString &text);

    ServerEndpoint m_endpoint;
    QString m_sessionId;
    ViewerMode m_mode;
    AttachClient *m_client = nullptr;
    /// Follows `GET /api/events` (the session's name) while attached.
    SessionNameWatcher *m_names = nullptr;
    QString m_name;                ///< the session's name ("" if none)
    QString m_programTitle;        ///< the program's title (OSC 0/2)
    QStringList m_command;
    int m_lostServerAfterMs = 10000;

    QFrame *m_banner = nullptr;
    QLabel *m_bannerLabel = nullptr;
    QPushButton *m_bannerButton = nullptr;
    QScrollArea *m_scroll = nullptr;  ///< holds m_term (see followSessionSize())
    QTermWidget *m_term = nullptr;
    QString m_colorScheme;
    QFont m_baseFont;              ///< the font before zooming (Ctrl+0 goes back to it)
    QAction *m_copyAction = nullptr;
    QAction *m_pasteAction = nullptr;
    QAction *m_pasteSelectionAction = nullptr;
    QAction *m_selectAllAction = nullptr;
    QAction *m_findAction = nullptr;
    QAction *m_zoomInAction = nullptr;
    QAction *m_zoomOutAction = nullptr;
    QAction *m_zoomResetAction = nullptr;
    QAction *m_clearScrollbackAction = nullptr;
    QAction *m_previousPromptAction = nullptr;
    QAction *m_nextPromptAction = nullptr;
    QAction *m_copyOutputAction = nullptr;
    int m_slaveFd = -1;
    WriteQueue *m_out = nullptr;   ///< to the widget's PTY slave

    bool m_attached = false;
    bool m_reconnecting = false;
    bool m_exited = false;
    /// The last attachment ended because the host went away (shut down,
    /// refused for too long, not running): setEndpoint() attaches again.
    bool m_lostHost = false;
    ReplayInputGate m_gate;

    /// Prompt lines and Copy Last Output (see the class doc).
    PromptNavigator *m_prompts = nullptr;
    QTimer m_noticeTimer;            ///< hides a notice (copyLastOutput()'s failure)

    QTimer m_resizeTimer;
    // Watch mode: the session size this window is fitting itself to.
    int m_fitCols = 0;
    int m_fitRows = 0;
    int m_fitStepsLeft = 0;  ///< > 0 while our own resize is being corrected
};

} // namespace Tether

#endif // TETHER_HAVE_QTERMWIDGET
