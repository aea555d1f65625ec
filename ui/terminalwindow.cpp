// SPDX-License-Identifier: GPL-2.0-or-later
// TerminalWindow: a local terminal window on a session (the attachment, the
// output and input paths, the size, the banner, the keys and the menu), and
// whether this build has one. Its commands' prompt lines and Copy Last
// Output (promptnavigator.*) and the stream of the session's name
// (sessionnamewatcher.*) are units of their own: each has its own state and
// reason, and this file stays a readable size (issue 28).
#include "terminalwindow.h"
#include "protocol.h"
#include "appicon.h"

#include <QCoreApplication>

#include <atomic>

namespace Tether {

bool localTerminalAvailable()
{
#ifdef TETHER_HAVE_QTERMWIDGET
    return true;
#else
    return false;
#endif
}

QString localTerminalUnavailableReason()
{
#ifdef TETHER_HAVE_QTERMWIDGET
    return QString();
#else
    return QCoreApplication::translate("Tether",
        "The local terminal window needs QTermWidget for Qt %1 (qtermwidget%1), which is not "
        "installed or was not found when Tether was built. Use \"Open in browser\" instead.")
        .arg(QT_VERSION_MAJOR);
#endif
}

#ifdef TETHER_HAVE_QTERMWIDGET
namespace {
std::atomic<QtMessageHandler> g_nextHandler{nullptr};

/// One of QTermWidget 1.2's HistorySearch debug lines (see installTerminalMessageFilter()).
bool isSearchChatter(QtMsgType type, const QMessageLogContext &context, const QString &message)
{
    if (type != QtDebugMsg || (context.category && qstrcmp(context.category, "default") != 0))
        return false;
    return message.startsWith(QLatin1String("search from ")) || message.startsWith(QLatin1String("linesToRead: "))
        || message.startsWith(QLatin1String("Found in string from "))
        || message.startsWith(QLatin1String("m_foundStartColumn ")) || message == QLatin1String("Not found");
}

void filterTerminalMessages(QtMsgType type, const QMessageLogContext &context, const QString &message)
{
    if (isSearchChatter(type, context, message))
        return;
    if (const QtMessageHandler next = g_nextHandler.load())
        next(type, context, message);
}
} // namespace
#endif

void installTerminalMessageFilter()
{
#ifdef TETHER_HAVE_QTERMWIDGET
    const QtMessageHandler previous = qInstallMessageHandler(filterTerminalMessages);
    // Installed already: keep the handler it passes on to (never itself).
    if (previous != filterTerminalMessages)
        g_nextHandler.store(previous);
#endif
}

} // namespace Tether

#ifdef TETHER_HAVE_QTERMWIDGET

#include "attachclient.h"
#include "logging.h"
#include "promptnavigator.h"
#include "sessionnamewatcher.h"
#include "shellwords.h"
#include "writequeue.h"

#include <QAction>
#include <QBuffer>
#include <QClipboard>
#include <QCloseEvent>
#include <QMenu>
#include <QFontDatabase>
#include <QFontInfo>
#include <QFontMetrics>
#include <QGuiApplication>
#include <QScreen>
#include <QStyle>
#include <QFileInfo>
#include <QFrame>
#include <QHBoxLayout>
#include <QLabel>
#include <QPushButton>
#include <QScrollArea>
#include <QVBoxLayout>

#if TETHER_QTERMWIDGET_MAJOR == 6
#include <qtermwidget6/qtermwidget.h>
#else
#include <qtermwidget5/qtermwidget.h>
#endif

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <termios.h>
#include <unistd.h>

namespace Tether {

namespace {
// The size range of the protocol's `resize` and attach `cols`/`rows`
// (docs/protocol.md section 5).
constexpr int kMinCells = 1;
constexpr int kMaxCells = 1000;

/// How long a notice (Copy Last Output's failure) stays in the banner.
constexpr int kNoticeMs = 5000;
} // namespace

TerminalWindow::TerminalWindow(const ServerEndpoint &endpoint, const QString &sessionId, ViewerMode mode,
                               QWidget *parent)
    : QWidget(parent, Qt::Window)
    , m_endpoint(endpoint)
    , m_sessionId(sessionId)
    , m_mode(mode)
{
    setWindowIcon(appIcon());

    auto *layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->setSpacing(0);

    m_banner = new QFrame(this);
    m_banner->setObjectName(QStringLiteral("tetherBanner"));
    m_banner->setAutoFillBackground(true);
    m_banner->setStyleSheet(QStringLiteral(
        "#tetherBanner { background: #fff4ce; border-bottom: 1px solid #d8c36a; }"
        "#tetherBanner QLabel { color: #3b3000; }"));
    auto *bannerLayout = new QHBoxLayout(m_banner);
    bannerLayout->setContentsMargins(10, 6, 10, 6);
    m_bannerLabel = new QLabel(m_banner);
    m_bannerLabel->setWordWrap(true);
    m_bannerButton = new QPushButton(m_banner);
    bannerLayout->addWidget(m_bannerLabel, 1);
    bannerLayout->addWidget(m_bannerButton);
    connect(m_bannerButton, &QPushButton::clicked, this, &TerminalWindow::onBannerButton);
    m_banner->hide();
    layout->addWidget(m_banner);

    // The terminal sits in a scroll area: a watch window's terminal keeps
    // the session's cells even where the window cannot show them all
    // (followSessionSize()); otherwise it fills the window.
    m_scroll = new QScrollArea(this);
    m_scroll->setFrameShape(QFrame::NoFrame);
    m_scroll->setWidgetResizable(true);
    // startnow = 0: no shell of its own; teletype mode below.
    m_term = new QTermWidget(0, this);
    m_term->setObjectName(QStringLiteral("tetherTerminal"));
    setAppearance(QLatin1String(kColorScheme), QString(), 10);
    m_term->setScrollBarPosition(QTermWidget::ScrollBarRight);
    m_term->setHistorySize(kHistoryLines);
    // The widget's own XON/XOFF handling would stop reading its PTY on Ctrl+S;
    // flow control belongs to the session's own terminal (Ctrl+S/Q reach it).
    m_term->setFlowControlEnabled(false);
    m_term->setFlowControlWarningEnabled(false);
    m_term->setMotionAfterPasting(2); // scroll to the end on paste
    // QTermWidget 1.2's TerminalDisplay never initialises these two: the
    // "Paste multiline text" dialog came and went by chance (a new user took
    // it for lost keys). A paste is what the clipboard holds, newlines
    // included, with no question asked, as in xterm; a program that asked
    // for bracketed paste gets it bracketed.
    m_term->setConfirmMultilinePaste(false);
    m_term->setTrimPastedTrailingNewlines(false);
    m_term->startTerminalTeletype();
    m_scroll->setWidget(m_term);
    layout->addWidget(m_scroll, 1);
    // The holder opens it at the session's size (see the class doc); until
    // then 80x24 (the widget's own size hint is far smaller).
    resize(sizeForCells(80, 24));
    setFocusProxy(m_term);

    m_slaveFd = m_term->getPtySlaveFd();
    if (m_slaveFd >= 0) {
        // No output processing: the session's bytes are already what a
        // terminal expects; ONLCR would turn LF into CRLF (see class doc).
        struct termios t;
        if (tcgetattr(m_slaveFd, &t) == 0) {
            t.c_oflag &= ~OPOST;
            if (tcsetattr(m_slaveFd, TCSANOW, &t) != 0)
                qCWarning(lcUi) << "cannot clear OPOST on the terminal widget's PTY:" << strerror(errno);
        }
        // Never block the GUI thread: the widget reads the master on this thread.
        const int flags = fcntl(m_slaveFd, F_GETFL);
        if (flags < 0 || fcntl(m_slaveFd, F_SETFL, flags | O_NONBLOCK) != 0)
            qCWarning(lcUi) << "cannot make the terminal widget's PTY non-blocking:" << strerror(errno);
    } else {
        qCWarning(lcUi) << "the terminal widget has no PTY: output cannot be shown";
    }
    // With no PTY (-1) the queue takes nothing and writes nothing.
    m_out = new WriteQueue(m_slaveFd, kHighWatermark, kLowWatermark, this);
    m_out->setChunkSize(kWriteChunk);
    m_out->setWakeupBudget(kWakeupBytes);
    connect(m_out, &WriteQueue::blockedChanged, this, &TerminalWindow::onBlockedChanged);
    connect(m_out, &WriteQueue::failed, this, [](int error) {
        qCWarning(lcUi) << "writing to the terminal widget failed:" << strerror(error);
    });
    m_prompts = new PromptNavigator(m_term, m_out, kHistoryLines, this);
    connect(m_prompts, &PromptNavigator::lastOutputCopied, this, [this](bool ok, const QString &text) {
        if (!ok)
            showNotice(text);
        Q_EMIT lastOutputCopied(ok, text);
    });

    connect(m_term, &QTermWidget::sendData, this, &TerminalWindow::onTerminalInput);
    m_term->installEventFilter(this);

    m_resizeTimer.setSingleShot(true);
    m_resizeTimer.setInterval(kResizeDebounceMs);
    m_noticeTimer.setSingleShot(true);
    m_noticeTimer.setInterval(kNoticeMs);
    connect(&m_noticeTimer, &QTimer::timeout, this, &TerminalWindow::hideBanner);
    connect(&m_resizeTimer, &QTimer::timeout, this, &TerminalWindow::applySize);

    createActions();
    m_names = new SessionNameWatcher(m_endpoint, m_sessionId, this);
    connect(m_names, &SessionNameWatcher::sessionChanged, this, [this](const QString &name, const QStringList &command) {
        m_name = name;
        m_command = command;
        updateTitle();
    });
    makeClient();
    updateTitle();
}

void TerminalWindow::makeClient()
{
    releaseClient();
    m_client = new AttachClient(m_endpoint, m_sessionId, m_mode, this);
    m_client->setLostServerAfter(m_lostServerAfterMs);
    m_client->setDesktopClient(true); // listed as "local" (viewer_kind)
    connect(m_client, &AttachClient::attached, this, &TerminalWindow::onAttached);
    connect(m_client, &AttachClient::output, this, [this](const QByteArray &data, bool) { onOutput(data); });
    connect(m_client, &AttachClient::replayFinished, this, &TerminalWindow::onReplayFinished);
    connect(m_client, &AttachClient::titleChanged, this, [this](const QString &title) {
        m_programTitle = title;
        updateTitle();
    });
    connect(m_client, &AttachClient::sizeChanged, this, [this](int cols, int rows) {
        // Our own resize (control mode) comes back here too: nothing to do then.
        if (m_mode == ViewerMode::Watch)
            followSessionSize(cols, rows);
    });
    connect(m_client, &AttachClient::reconnecting, this, &TerminalWindow::onReconnecting);
    connect(m_client, &AttachClient::finished, this, &TerminalWindow::onFinished);
    // A queue still over its high watermark holds the new attachment back too.
    if (m_out->isBlocked())
        m_client->setPaused(true);
}

void TerminalWindow::setAppearance(const QString &colorScheme, const QString &fontFamily, int pointSize)
{
    QFont font;
    if (!fontFamily.isEmpty()) {
        font = QFont(fontFamily);
        font.setStyleHint(QFont::Monospace);
    }
    if (fontFamily.isEmpty() || !QFontInfo(font).fixedPitch()) {
        font = QFontDatabase::systemFont(QFontDatabase::FixedFont);
        if (!QFontInfo(font).fixedPitch()) {
            // Some platforms (offscreen, bare X servers) report a proportional
            // "fixed" font; the terminal then misaligns. Ask fontconfig for one.
            font = QFont(QStringLiteral("Monospace"));
            font.setStyleHint(QFont::Monospace);
            font.setFixedPitch(true);
        }
    }
    font.setPointSize(qBound(6, pointSize, 72));
    m_baseFont = font;
    m_term->setTerminalFont(font);
    m_colorScheme = QTermWidget::availableColorSchemes().contains(colorScheme) ? colorScheme
                                                                                : QLatin1String(kColorScheme);
    m_term->setColorScheme(m_colorScheme);
    cellSizeChanged();
}

void TerminalWindow::cellSizeChanged()
{
    // Other cells in the same pixels: the session (control) or the window
    // (watch) follows, as after a resize. The widget's size does not change,
    // so no resize event comes: without this a zoom left the program at its
    // old width (stty size 123x35 with 98 columns shown; vim garbled).
    if (m_mode == ViewerMode::Watch && m_fitCols > 0)
        followSessionSize(m_fitCols, m_fitRows);
    else if (m_attached)
        m_resizeTimer.start();
}

void TerminalWindow::createActions()
{
    // Shortcuts of Konsole and QTerminal. Without them QTermWidget passes
    // Ctrl+Shift+C as ^C (it interrupted a running command), Ctrl+Shift+V as
    // ^V and Shift+Insert as ESC[2;2~ (issue 14). The widget's display accepts
    // no ShortcutOverride for these keys, so the window's actions take them
    // before the emulator sees them, and the program receives nothing.
    auto add = [this](const QString &text, const QList<QKeySequence> &keys, auto slot) {
        auto *a = new QAction(text, this);
        a->setShortcuts(keys);
        a->setShortcutContext(Qt::WidgetWithChildrenShortcut);
        connect(a, &QAction::triggered, this, slot);
        addAction(a);
        return a;
    };
    m_copyAction = add(tr("&Copy"), {QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_C)},
                       [this] { copySelection(); });
    // QTermWidget's paste brackets the text when the program enabled mode
    // 2004, and goes through sendData like typing (so a watcher sends nothing).
    m_pasteAction = add(tr("&Paste"), {QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_V)},
                        [this] { m_term->pasteClipboard(); });
    m_pasteSelectionAction = add(tr("Paste &Selection"), {QKeySequence(Qt::SHIFT | Qt::Key_Insert)},
                                 [this] { m_term->pasteSelection(); });
    m_selectAllAction = add(tr("Select &All"), {}, [this] { selectAll(); });
    m_findAction = add(tr("&Find…"), {QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_F)},
                       [this] { m_term->toggleShowSearchBar(); });
    // Ctrl+= too: on most layouts "+" needs Shift, and Ctrl+= is where it is.
    m_zoomInAction = add(tr("Zoom &In"),
                         {QKeySequence(Qt::CTRL | Qt::Key_Plus), QKeySequence(Qt::CTRL | Qt::Key_Equal)},
                         [this] { m_term->zoomIn(); cellSizeChanged(); });
    m_zoomOutAction = add(tr("Zoom &Out"), {QKeySequence(Qt::CTRL | Qt::Key_Minus)},
                          [this] { m_term->zoomOut(); cellSizeChanged(); });
    m_zoomResetAction = add(tr("&Reset Zoom"), {QKeySequence(Qt::CTRL | Qt::Key_0)},
                            [this] { m_term->setTerminalFont(m_baseFont); cellSizeChanged(); });
    m_clearScrollbackAction = add(tr("Clear Scroll&back"), {}, [this] { clearScrollback(); });
    // The dashboard's keys (Ctrl+Shift+Up / Down). Without the actions the
    // program would get them as Ctrl+Up / Ctrl+Down.
    m_previousPromptAction = add(tr("Previous Prom&pt"), {QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_Up)},
                                 [this] { jumpToPreviousPrompt(); });
    m_nextPromptAction = add(tr("Next Promp&t"), {QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_Down)},
                             [this] { jumpToNextPrompt(); });
    m_copyOutputAction = add(tr("Copy Last &Output"), {QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_O)},
                             [this] { copyLastOutput(); });
    const bool control = m_mode == ViewerMode::Control;
    m_pasteAction->setEnabled(control);
    m_pasteSelectionAction->setEnabled(control);

    m_term->setContextMenuPolicy(Qt::CustomContextMenu);
    connect(m_term, &QWidget::customContextMenuRequested, this, [this](const QPoint &pos) {
        QMenu *menu = contextMenu(pos);
        menu->setAttribute(Qt::WA_DeleteOnClose);
        menu->popup(m_term->mapToGlobal(pos));
    });
}

QMenu *TerminalWindow::contextMenu(const QPoint &pos)
{
    auto *menu = new QMenu(this);
    // Links under the pointer first (QTermWidget's URL filter: Open, Copy address).
    const QList<QAction *> links = m_term->filterActions(pos);
    if (!links.isEmpty()) {
        menu->addActions(links);
        menu->addSeparator();
    }
    m_copyAction->setEnabled(!m_term->selectedText(false).isEmpty());
    menu->addAction(m_copyAction);
    menu->addAction(m_pasteAction);
    menu->addAction(m_selectAllAction);
    menu->addAction(m_copyOutputAction);
    menu->addSeparator();
    menu->addAction(m_previousPromptAction);
    menu->addAction(m_nextPromptAction);
    menu->addAction(m_findAction);
    menu->addSeparator();
    menu->addAction(m_zoomInAction);
    menu->addAction(m_zoomOutAction);
    menu->addAction(m_zoomResetAction);
    menu->addSeparator();
    menu->addAction(m_clearScrollbackAction);
    connect(menu, &QMenu::aboutToHide, this, [this] { m_copyAction->setEnabled(true); });
    return menu;
}

void TerminalWindow::selectAll()
{
    // QTermWidget's setSelectionStart() makes a block (column) selection;
    // across the full width it holds the same cells and line ends as a
    // stream selection (Screen::writeToStream), so the copy is the same.
    const int lines = m_term->historyLinesCount() + m_term->screenLinesCount();
    m_term->setSelectionStart(0, 0);
    m_term->setSelectionEnd(lines - 1, m_term->screenColumnsCount());
}

void TerminalWindow::copySelection()
{
    // Not QTermWidget::copyClipboard(): its TerminalDisplay keeps line breaks
    // only after a left mouse press (_preserveLineBreaks starts false and only
    // mousePressEvent sets it: lxqt/qtermwidget 1.2.0 lib/TerminalDisplay.cpp),
    // so Select All or a Find match then Copy joined every line into one.
    // Lines the program wrapped stay joined (the screen knows them).
    const QString text = m_term->selectedText(true);
    if (!text.isEmpty())
        QGuiApplication::clipboard()->setText(text);
}

void TerminalWindow::clearScrollback()
{
    // QTermWidget::clear() also resets the emulator (modes, alternate
    // screen, cursor) under a running program; dropping the history alone
    // leaves the screen and the modes as the program set them.
    m_term->setHistorySize(0);
    m_term->setHistorySize(kHistoryLines);
    m_prompts->forget();
}

// --- prompts and the last output (issue 25) ------------------------------------

void TerminalWindow::jumpToPreviousPrompt()
{
    if (!m_prompts->jumpToPrevious())
        showNotice(tr("The scrollback is full: prompts cannot be found in it. Clear Scrollback to start again."));
}

void TerminalWindow::jumpToNextPrompt()
{
    if (!m_prompts->jumpToNext())
        showNotice(tr("The scrollback is full: prompts cannot be found in it. Clear Scrollback to start again."));
}

int TerminalWindow::scrollPosition() const
{
    return m_prompts->scrollPosition();
}

void TerminalWindow::copyLastOutput()
{
    m_prompts->copyLastOutput(m_endpoint, m_sessionId);
}

void TerminalWindow::showNotice(const QString &text)
{
    // A banner about the connection or the process stays: it matters more.
    if (m_banner->isVisible() && !m_noticeTimer.isActive())
        return;
    showBanner(text, QString());
    m_noticeTimer.start(); // after showBanner(), which stops it
}

QSize TerminalWindow::terminalSizeForCells(int cols, int rows) const
{
    const QFontMetrics fm(m_term->getTerminalFont());
#if QT_VERSION >= QT_VERSION_CHECK(5, 11, 0)
    const int cell = fm.horizontalAdvance(QLatin1Char('M'));
#else
    const int cell = fm.width(QLatin1Char('M'));
#endif
    const int margin = 2 * m_term->getMargin() + 4;
    const int scrollbar = style()->pixelMetric(QStyle::PM_ScrollBarExtent);
    return QSize(cols * cell + margin + scrollbar, rows * fm.height() + margin);
}

QSize TerminalWindow::sizeForCells(int cols, int rows) const
{
    QSize size = terminalSizeForCells(cols, rows);
    if (const QScreen *screen = QGuiApplication::primaryScreen()) {
        const QSize avail = screen->availableGeometry().size() * 9 / 10;
        size = size.boundedTo(avail);
    }
    return size;
}

TerminalWindow::~TerminalWindow()
{
    releaseClient();
    // The queue's notifier watches the widget's fd: it must go before the widget.
    delete m_out;
    m_out = nullptr;
}

void TerminalWindow::releaseClient()
{
    m_names->stop();
    if (!m_client)
        return;
    AttachClient *client = m_client;
    m_client = nullptr;
    client->disconnect(this);
    // The close handshake (AttachClient::detach(), bounded by its own
    // timer) may outlive the window: the client deletes itself when done.
    client->setParent(nullptr);
    connect(client, &AttachClient::finished, client, &QObject::deleteLater);
    client->detach(); // finished() at once when not connected
}

void TerminalWindow::detachNow()
{
    // A new client for a later attachSession(): the old one closes (1000).
    releaseClient();
    makeClient();
    m_attached = false;
    m_reconnecting = false;
    m_gate.open();
    m_resizeTimer.stop();
    updateTitle();
}

bool TerminalWindow::attachSession(ViewerMode mode)
{
    if (mode != m_mode) {
        // The mode is the attachment's: a new one (its replay starts over).
        releaseClient();
        m_mode = mode;
        const bool control = m_mode == ViewerMode::Control;
        m_pasteAction->setEnabled(control);
        m_pasteSelectionAction->setEnabled(control);
        if (control) {
            // The terminal fills the window again, and sizes the session.
            m_fitStepsLeft = 0;
            m_fitCols = m_fitRows = 0;
            m_scroll->setWidgetResizable(true);
        }
        m_reconnecting = false;
        setAttached(false);
        makeClient();
    }
    return attachSession();
}

bool TerminalWindow::attachSession()
{
    if (m_sessionId.isEmpty()) {
        showBanner(tr("This session no longer exists."), QString());
        return false;
    }
    if (m_exited)
        return false; // read-only: the exit is final
    if (m_attached || m_reconnecting)
        return true;
    // A control window attaches at its own size (docs/protocol.md, "Attaching
    // at the viewer's size"), as the dashboard and `tether attach` do: the
    // session takes it before the replay is built, so the replay is drawn for
    // the columns this terminal wraps at. Resizing only after the replay (as
    // applySize() does on resizes) painted a screen written at 120 columns
    // into an 80-column terminal: a long wrapped command line lost its first
    // row. A hidden window is not laid out: it attaches without a size of
    // its own and applySize() follows once it is shown.
    if (m_mode == ViewerMode::Control && isVisible()) {
        const QSize cells = attachCells();
        if (!cells.isEmpty())
            m_client->setWindowSize(cells.width(), cells.height());
    }
    // Gated until `attached` says whether a replay follows.
    m_gate.close();
    m_client->reopen(); // after an end (taken over, lost server): resumes at the offset
    m_client->open();   // the first time
    return true;
}

void TerminalWindow::setEndpoint(const ServerEndpoint &endpoint)
{
    if (endpoint.url == m_endpoint.url && endpoint.key == m_endpoint.key)
        return;
    m_endpoint = endpoint;
    // The name stream of the old host: the next `attached` opens the new one.
    m_names->setEndpoint(endpoint);
    if (!m_client)
        return;
    m_client->setEndpoint(endpoint);
    if (m_lostHost && !m_exited)
        attachSession();
}

// --- the attachment ----------------------------------------------------------

void TerminalWindow::setAttached(bool attached)
{
    if (attached == m_attached)
        return;
    m_attached = attached;
    updateTitle();
    Q_EMIT attachmentChanged(attached);
}

void TerminalWindow::onAttached(const QJsonObject &message, bool reset)
{
    m_reconnecting = false;
    m_lostHost = false;
    m_exited = false;
    m_programTitle = message.value(QStringLiteral("title")).toString();
    hideBanner();
    if (reset) {
        // What is still queued belongs to the stream being replaced.
        m_out->clear();
        m_term->clear();
        m_prompts->reset();
        static const char ris[] = "\x1b" "c";
        enqueue(ris, qsizetype(sizeof(ris) - 1));
    }
    m_gate.begin(m_client->pendingReplay() > 0);
    m_names->start();
    setAttached(true);
    // The control window sizes the session; a shown window knows its size.
    // A watch window takes the session's size instead.
    if (m_mode == ViewerMode::Control && isVisible())
        QTimer::singleShot(0, this, &TerminalWindow::applySize);
    else if (m_mode == ViewerMode::Watch)
        followSessionSize(message.value(QStringLiteral("cols")).toInt(), message.value(QStringLiteral("rows")).toInt());
}

void TerminalWindow::onOutput(const QByteArray &data)
{
    // Prelude, replay, fixups and live output, in stream order.
    // With a cursor position query after each prompt mark (PromptNavigator);
    // without a PTY nothing is written, so no query would ever be answered.
    if (m_slaveFd < 0)
        enqueue(data.constData(), data.size());
    else
        m_prompts->write(data);
}

void TerminalWindow::onReplayFinished()
{
    if (m_gate.state() != ReplayInputGate::State::Rendering)
        return;
    // The DSR fence (ReplayInputGate): the widget answers it through
    // sendData after every answer to a query in the replay.
    enqueue(ReplayInputGate::kQuery, qsizetype(sizeof ReplayInputGate::kQuery - 1));
    m_gate.fenceWritten();
}

void TerminalWindow::onReconnecting()
{
    // A restart in place (1012), an input stall (1013), a dropped
    // connection: AttachClient connects again with resume= and backoff.
    m_reconnecting = true;
    m_gate.open();
    m_resizeTimer.stop();
    showBanner(tr("Reconnecting to Tether…"), QString());
    setAttached(false);
    updateTitle();
}

void TerminalWindow::onFinished(AttachStream::End end, const QString &message)
{
    m_reconnecting = false;
    m_lostHost = end == AttachStream::End::LostServer || end == AttachStream::End::NotRunning
        || end == AttachStream::End::ServerShutdown;
    m_gate.open();
    m_resizeTimer.stop();
    m_names->stop();
    switch (end) {
    case AttachStream::End::Detached:
        hideBanner();
        break;
    case AttachStream::End::Exited: {
        m_exited = true;
        const QByteArray line = "\x1b[0m\r\n" + message.toUtf8() + "\r\n";
        enqueue(line.constData(), line.size());
        const std::optional<ExitStatus> status = AttachStream::parseExit(m_client->exitMessage());
        if (status)
            showBanner(tr("The process %1. This window is read-only.").arg(Protocol::exitStatusText(*status)), QString());
        else
            showBanner(tr("The process exited. This window is read-only."), QString());
        break;
    }
    case AttachStream::End::TakenOver:
        showBanner(tr("Opened in another window."), tr("Take over"));
        break;
    case AttachStream::End::NotFound:
        showBanner(tr("This session no longer exists."), QString());
        break;
    case AttachStream::End::SessionKilled:
        showBanner(m_exited ? tr("The session was closed.") : tr("The session was killed."), QString());
        break;
    case AttachStream::End::ServerShutdown:
        showBanner(tr("Tether is shutting down."), QString());
        break;
    case AttachStream::End::LostServer:
        showBanner(tr("Lost the connection to Tether: it is no longer running."), tr("Reconnect"));
        break;
    case AttachStream::End::NotRunning:
        showBanner(tr("Tether is not running."), tr("Retry"));
        break;
    case AttachStream::End::AuthFailed:
        showBanner(tr("Tether refused this window's access key."), QString());
        break;
    case AttachStream::End::TooManyViewers:
        showBanner(tr("This session has too many viewers."), tr("Retry"));
        break;
    case AttachStream::End::ProtocolError:
        showBanner(message, tr("Reattach"));
        break;
    }
    setAttached(false);
    updateTitle();
}

// --- output queue -------------------------------------------------------------

qsizetype TerminalWindow::queuedBytes() const
{
    return m_out ? m_out->pending() : 0;
}

bool TerminalWindow::isPaused() const
{
    return m_client && m_client->isPaused();
}

void TerminalWindow::setLostServerAfter(int msec)
{
    m_lostServerAfterMs = msec;
    if (m_client)
        m_client->setLostServerAfter(msec);
}

void TerminalWindow::enqueue(const char *data, qsizetype size)
{
    m_out->append(data, size);
}

void TerminalWindow::onBlockedChanged(bool blocked)
{
    // Backpressure, as `tether attach`: the server stops reading the
    // program's output (control), or the connection is let go and resumed
    // at the offset (watch, or an older server).
    if (m_client && !m_exited)
        m_client->setPaused(blocked);
}

// --- input and size -----------------------------------------------------------

void TerminalWindow::onTerminalInput(const char *data, int size)
{
    // The pointer is the widget's: use it now, never keep it. The answers
    // to the window's own cursor queries (prompt lines) go no further.
    if (m_prompts->takeAnswer(data, size))
        return;
    // The gate sees everything (its fence's answer opens it, in any mode).
    const ReplayInputGate::Verdict v = m_gate.filter(data, qsizetype(size));
    if (!v.pass || v.size <= 0)
        return;
    // Sent at once when attached; kept briefly while reconnecting
    // (AttachClient::sendInput); nothing after an end (superseded, exited).
    if (!m_client || m_mode != ViewerMode::Control || m_exited)
        return;
    m_client->sendInput(data + v.from, v.size);
}

bool TerminalWindow::eventFilter(QObject *watched, QEvent *event)
{
    if (watched == m_term && event->type() == QEvent::Resize)
        m_resizeTimer.start();
    return QWidget::eventFilter(watched, event);
}

void TerminalWindow::applySize()
{
    if (m_mode == ViewerMode::Watch) {
        // Our resize took effect (or the window manager changed it): correct
        // what is left. A resize the user made is not ours to undo.
        if (m_fitStepsLeft > 0)
            fitToSessionSize();
        return;
    }
    if (!m_attached || !m_client || m_mode != ViewerMode::Control || m_exited)
        return;
    const int cols = m_term->screenColumnsCount();
    const int rows = m_term->screenLinesCount();
    // A widget not laid out yet reports nonsense; never send it (hidden browser
    // tabs sending 0x0 is the same bug).
    if (cols < kMinCells || rows < kMinCells || cols > kMaxCells || rows > kMaxCells)
        return;
    m_client->setWindowSize(cols, rows); // a `resize` when it is another size
}

QSize TerminalWindow::attachCells()
{
    // The banner ("Opened in another window", "Take over") goes when the
    // attach succeeds: lay the window out without it now, so the rows are
    // those the terminal will have (a visible widget gets its resize event
    // synchronously from the layout, and the emulator its new size).
    if (m_banner->isVisible()) {
        m_banner->hide();
        if (layout())
            layout()->activate();
    }
    const int cols = m_term->screenColumnsCount();
    const int rows = m_term->screenLinesCount();
    if (cols < kMinCells || rows < kMinCells || cols > kMaxCells || rows > kMaxCells)
        return QSize(0, 0); // not laid out: no size rather than nonsense
    return QSize(cols, rows);
}

void TerminalWindow::followSessionSize(int cols, int rows)
{
    if (cols < kMinCells || rows < kMinCells || cols > kMaxCells || rows > kMaxCells)
        return;
    m_fitCols = cols;
    m_fitRows = rows;
    m_fitStepsLeft = kMaxFitSteps;
    // The terminal has the session's cells whatever the window can show
    // (issue 29: bounded by the screen, it wrapped the program's lines at
    // its own width): the scroll area no longer sizes it.
    m_scroll->setWidgetResizable(false);
    if (!isVisible()) {
        // Not shown yet (attached before show()): open at the session's size;
        // the first resize event after show() checks it.
        m_term->resize(terminalSizeForCells(cols, rows));
        resize(sizeForCells(cols, rows));
        return;
    }
    fitToSessionSize();
}

void TerminalWindow::fitToSessionSize()
{
    if (m_fitStepsLeft <= 0)
        return;
    --m_fitStepsLeft;
    const int dcols = m_fitCols - m_term->screenColumnsCount();
    const int drows = m_fitRows - m_term->screenLinesCount();
    QSize term = m_term->size();
    if (dcols == 0 && drows == 0) {
        m_fitStepsLeft = 0;
    } else {
        // Cell size as the emulator measures it (the average advance of a
        // sample string, like Konsole's TerminalDisplay), so the correction
        // lands on whole cells.
        const QFontMetrics fm(m_term->getTerminalFont());
        static const QString sample = QStringLiteral(
            "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefgjijklmnopqrstuvwxyz0123456789./+@");
#if QT_VERSION >= QT_VERSION_CHECK(5, 11, 0)
        const double advance = fm.horizontalAdvance(sample);
#else
        const double advance = fm.width(sample);
#endif
        const int cellWidth = qMax(1, qRound(advance / sample.size()));
        const int cellHeight = qMax(1, fm.height());
        term += QSize(dcols * cellWidth, drows * cellHeight);
        m_term->resize(term); // its resize event brings the next step
    }
    // The window shows the whole terminal where the screen has room (else
    // scroll bars show the rest); maximized or full screen it stays so.
    if (isMaximized() || isFullScreen())
        return;
    QSize target = term + (size() - m_scroll->size());
    if (const QScreen *screen = this->screen())
        target = target.boundedTo(screen->availableGeometry().size());
    if (target != size())
        resize(target);
}

// --- window -------------------------------------------------------------------

void TerminalWindow::closeEvent(QCloseEvent *event)
{
    // Closing the window only detaches: the session keeps running.
    detachNow();
    event->accept();
}

void TerminalWindow::showBanner(const QString &text, const QString &button)
{
    m_noticeTimer.stop();
    m_bannerLabel->setText(text);
    m_bannerButton->setText(button);
    m_bannerButton->setVisible(!button.isEmpty());
    m_banner->show();
}

void TerminalWindow::hideBanner()
{
    m_noticeTimer.stop();
    m_bannerLabel->clear();
    m_banner->hide();
}

QString TerminalWindow::bannerText() const
{
    return m_banner->isVisibleTo(const_cast<TerminalWindow *>(this)) ? m_bannerLabel->text() : QString();
}

void TerminalWindow::onBannerButton()
{
    attachSession();
    if (m_attached)
        m_term->setFocus();
}

void TerminalWindow::updateTitle()
{
    // As the Sessions window names a session: its name, else the program's
    // title, else its command ("/bin/bash -l" reads as "bash -l").
    QString title = m_name;
    if (title.isEmpty())
        title = m_programTitle.trimmed();
    if (title.isEmpty() && !m_command.isEmpty()) {
        QStringList cmd = m_command;
        cmd[0] = QFileInfo(cmd.at(0)).fileName();
        title = ShellWords::quote(cmd);
    }
    QString t = title.isEmpty() ? tr("Terminal") : title;
    if (m_exited)
        t += tr(" (exited)");
    else if (m_reconnecting)
        t += tr(" (reconnecting)");
    else if (!m_attached)
        t += tr(" (detached)");
    else if (m_mode == ViewerMode::Watch)
        t += tr(" (watching)");
    setWindowTitle(t + QStringLiteral(" — Tether"));
}

QString TerminalWindow::screenText() const
{
    QBuffer buffer;
    buffer.open(QIODevice::WriteOnly);
    m_term->saveHistory(&buffer);
    return QString::fromUtf8(buffer.data());
}

} // namespace Tether

#endif // TETHER_HAVE_QTERMWIDGET
