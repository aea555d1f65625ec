// SPDX-License-Identifier: GPL-2.0-or-later
#include "sessionswindow.h"
#include "appicon.h"

#include "sessionlistmodel.h"

#include <QAction>
#include <QCloseEvent>
#include <QGuiApplication>
#include <QFontMetrics>
#include <QFrame>
#include <QGridLayout>
#include <QSpacerItem>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QMenu>
#include <QMenuBar>
#include <QMessageBox>
#include <QPushButton>
#include <QSortFilterProxyModel>
#include <QStackedWidget>
#include <QStatusBar>
#include <QTableView>
#include <QToolBar>
#include <QVBoxLayout>

namespace Tether {

SessionsWindow::SessionsWindow(SessionListModel *model, QWidget *parent)
    : QMainWindow(parent)
    , m_model(model)
{
    // "Sessions — Tether": Qt appends the application display name itself.
    setWindowTitle(QGuiApplication::applicationDisplayName().isEmpty() ? tr("Tether — Sessions")
                                                                       : tr("Sessions"));
    setWindowIcon(appIcon());
    resize(900, 360);

    m_proxy = new QSortFilterProxyModel(this);
    m_proxy->setSourceModel(model);
    m_proxy->setSortRole(SessionListModel::SortRole);
    m_proxy->setDynamicSortFilter(true);

    m_view = new QTableView(this);
    m_view->setObjectName(QStringLiteral("sessionsView"));
    m_view->setModel(m_proxy);
    m_view->setSortingEnabled(true);
    m_view->sortByColumn(-1, Qt::AscendingOrder); // registry order until a header is clicked
    m_view->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_view->setSelectionMode(QAbstractItemView::SingleSelection);
    // Only Rename (F2, m_view->edit()) edits: double-click attaches.
    m_view->setEditTriggers(QAbstractItemView::NoEditTriggers);
    m_view->setAlternatingRowColors(true);
    m_view->setWordWrap(false);
    m_view->verticalHeader()->hide();
    m_view->horizontalHeader()->setHighlightSections(false);
    m_view->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
    m_view->horizontalHeader()->setSectionResizeMode(SessionListModel::TitleColumn, QHeaderView::Stretch);
    // The last command can be a line long: it shares the free width with the
    // name (both elided) rather than pushing the name to an ellipsis and the
    // other columns out of the window.
    m_view->horizontalHeader()->setSectionResizeMode(SessionListModel::ShellColumn, QHeaderView::Stretch);
    m_view->setContextMenuPolicy(Qt::ActionsContextMenu);

    auto *empty = new QWidget(this);
    auto *elay = new QVBoxLayout(empty);
    elay->addStretch();
    auto *emptyLabel = new QLabel(tr("No sessions yet.\nStart one here or from the dashboard; "
                                     "it keeps running when you close its window."), empty);
    emptyLabel->setAlignment(Qt::AlignCenter);
    elay->addWidget(emptyLabel);
    auto *emptyNew = new QPushButton(tr("New terminal"), empty);
    emptyNew->setSizePolicy(QSizePolicy::Fixed, QSizePolicy::Fixed);
    elay->addWidget(emptyNew, 0, Qt::AlignHCenter);
    elay->addStretch();
    connect(emptyNew, &QPushButton::clicked, this, &SessionsWindow::newSessionRequested);

    m_stack = new QStackedWidget(this);
    m_stack->addWidget(m_view);
    m_stack->addWidget(empty);

    // A newer Tether was installed (setUpdateNotice): said above the list,
    // with the restart that uses it. Hidden otherwise.
    m_updateBar = new QFrame(this);
    m_updateBar->setObjectName(QStringLiteral("updateBar"));
    m_updateBar->setFrameShape(QFrame::StyledPanel);
    auto *ulay = new QHBoxLayout(m_updateBar);
    m_updateText = new QLabel(m_updateBar);
    m_updateText->setObjectName(QStringLiteral("updateText"));
    ulay->addWidget(m_updateText, 1);
    auto *updateRestart = new QPushButton(tr("Restart"), m_updateBar);
    updateRestart->setObjectName(QStringLiteral("updateRestart"));
    ulay->addWidget(updateRestart);
    connect(updateRestart, &QPushButton::clicked, this, &SessionsWindow::restartRequested);
    m_updateBar->hide();

    auto *central = new QWidget(this);
    auto *clay = new QVBoxLayout(central);
    clay->setContentsMargins(0, 0, 0, 0);
    clay->addWidget(m_updateBar);
    clay->addWidget(m_stack, 1);
    setCentralWidget(central);

    // Actions
    m_new = new QAction(QIcon::fromTheme(QStringLiteral("utilities-terminal")), tr("&New terminal"), this);
    m_new->setShortcut(QKeySequence::New);
    m_new->setToolTip(tr("Start a new session with the default command"));
    m_attach = new QAction(QIcon::fromTheme(QStringLiteral("go-jump")), tr("&Attach here"), this);
    m_attach->setToolTip(tr("Open the session in a terminal window here (takes over from a browser)"));
    m_watch = new QAction(QIcon::fromTheme(QStringLiteral("view-preview")), tr("&Watch"), this);
    m_watch->setToolTip(tr("Open a read-only window on the session"));
    m_browser = new QAction(QIcon::fromTheme(QStringLiteral("internet-web-browser")), tr("Open in &browser"), this);
    m_browser->setToolTip(tr("Open the session in the web dashboard"));
    m_kill = new QAction(QIcon::fromTheme(QStringLiteral("process-stop")), tr("&Kill…"), this);
    m_kill->setShortcut(QKeySequence::Delete);
    m_kill->setToolTip(tr("End the session and its processes"));

    m_rename = new QAction(QIcon::fromTheme(QStringLiteral("edit-rename")), tr("&Rename…"), this);
    m_rename->setObjectName(QStringLiteral("renameSession"));
    m_rename->setShortcut(Qt::Key_F2);
    m_rename->setShortcutContext(Qt::WidgetWithChildrenShortcut);
    m_rename->setToolTip(tr("Name the session (tether attach NAME, the tray, the dashboard show it)"));
    connect(m_rename, &QAction::triggered, this, [this] {
        const QModelIndex current = m_view->currentIndex();
        if (current.isValid())
            m_view->edit(m_proxy->index(current.row(), SessionListModel::TitleColumn));
    });

    connect(m_new, &QAction::triggered, this, &SessionsWindow::newSessionRequested);
    connect(m_attach, &QAction::triggered, this, [this] {
        const QString id = currentSessionId();
        if (!id.isEmpty() && m_localTerminal)
            Q_EMIT attachRequested(id);
    });
    connect(m_watch, &QAction::triggered, this, [this] {
        const QString id = currentSessionId();
        if (!id.isEmpty() && m_localTerminal)
            Q_EMIT watchRequested(id);
    });
    connect(m_browser, &QAction::triggered, this, [this] {
        const QString id = currentSessionId();
        if (!id.isEmpty())
            Q_EMIT openInBrowserRequested(id);
    });
    connect(m_kill, &QAction::triggered, this, &SessionsWindow::confirmKill);
    connect(m_view, &QTableView::doubleClicked, this, [this](const QModelIndex &) {
        const QString id = currentSessionId();
        if (id.isEmpty())
            return;
        // Without a local terminal, double-click does the next best thing.
        if (m_localTerminal)
            Q_EMIT attachRequested(id);
        else
            Q_EMIT openInBrowserRequested(id);
    });

    m_view->addAction(m_attach);
    m_view->addAction(m_watch);
    m_view->addAction(m_browser);
    m_view->addAction(m_rename);
    m_view->addAction(m_kill);

    auto *toolbar = addToolBar(tr("Sessions"));
    toolbar->setObjectName(QStringLiteral("sessionsToolbar"));
    toolbar->setMovable(false);
    toolbar->setToolButtonStyle(Qt::ToolButtonTextBesideIcon);
    toolbar->addAction(m_new);
    toolbar->addSeparator();
    toolbar->addAction(m_attach);
    toolbar->addAction(m_watch);
    toolbar->addAction(m_browser);
    toolbar->addSeparator();
    toolbar->addAction(m_kill);

    QMenu *file = menuBar()->addMenu(tr("&Tether"));
    file->addAction(m_new);
    QAction *dash = file->addAction(tr("Open &dashboard"));
    connect(dash, &QAction::triggered, this, &SessionsWindow::dashboardRequested);
    QAction *settings = file->addAction(tr("&Settings…"));
    settings->setMenuRole(QAction::PreferencesRole);
    connect(settings, &QAction::triggered, this, &SessionsWindow::settingsRequested);
    file->addSeparator();
    // Keeps every session (and comes back with this window open).
    QAction *restart = file->addAction(tr("&Restart Tether"));
    restart->setObjectName(QStringLiteral("restartTether"));
    connect(restart, &QAction::triggered, this, &SessionsWindow::restartRequested);
    QAction *close = file->addAction(tr("&Close window"));
    close->setShortcut(QKeySequence::Close);
    connect(close, &QAction::triggered, this, &QWidget::close);
    QAction *closeUi = file->addAction(tr("Close &Tether's windows (sessions keep running)"));
    closeUi->setObjectName(QStringLiteral("closeUi"));
    connect(closeUi, &QAction::triggered, this, &SessionsWindow::closeRequested);
    QAction *quit = file->addAction(tr("&Quit Tether (end the sessions)"));
    quit->setShortcut(QKeySequence::Quit);
    quit->setMenuRole(QAction::QuitRole);
    connect(quit, &QAction::triggered, this, [this] { Q_EMIT quitRequested(false); });
    QMenu *session = menuBar()->addMenu(tr("&Session"));
    session->addAction(m_attach);
    session->addAction(m_watch);
    session->addAction(m_browser);
    session->addAction(m_rename);
    session->addSeparator();
    session->addAction(m_kill);

    m_urlLabel = new QLabel(this);
    m_urlLabel->setTextInteractionFlags(Qt::TextSelectableByMouse);
    statusBar()->addWidget(m_urlLabel, 1);

    connect(m_view->selectionModel(), &QItemSelectionModel::selectionChanged, this,
            &SessionsWindow::updateActions);
    connect(m_proxy, &QAbstractItemModel::dataChanged, this, &SessionsWindow::updateActions);
    connect(m_proxy, &QAbstractItemModel::rowsInserted, this, &SessionsWindow::updateEmptyState);
    connect(m_proxy, &QAbstractItemModel::rowsRemoved, this, &SessionsWindow::updateEmptyState);
    connect(m_proxy, &QAbstractItemModel::modelReset, this, &SessionsWindow::updateEmptyState);
    connect(m_proxy, &QAbstractItemModel::rowsInserted, this, [this](const QModelIndex &, int first) {
        // Select a new session when nothing is selected yet.
        if (!m_view->selectionModel()->hasSelection())
            m_view->selectRow(first);
    });

    m_clock.setInterval(1000);
    connect(&m_clock, &QTimer::timeout, m_model, &SessionListModel::refreshClocks);

    updateEmptyState();
    updateActions();
}

SessionsWindow::~SessionsWindow() = default;

void SessionsWindow::showRenameRefused(const QString &why)
{
    statusBar()->showMessage(tr("Not renamed: %1").arg(why), 8000);
}

void SessionsWindow::setConnectionNote(const QString &text)
{
    if (text.isEmpty())
        statusBar()->clearMessage();
    else
        statusBar()->showMessage(text);
}

void SessionsWindow::setServerUrl(const QString &url)
{
    m_urlLabel->setText(tr("Dashboard: %1").arg(url));
}

void SessionsWindow::setUpdateNotice(const QString &text)
{
    m_updateText->setText(text);
    m_updateBar->setVisible(!text.isEmpty());
}

void SessionsWindow::setLocalTerminalAvailable(bool available, const QString &reason)
{
    m_localTerminal = available;
    m_localTerminalReason = reason;
    if (!available) {
        // Said plainly where it is always visible, not only in a tooltip.
        auto *note = new QLabel(tr("No local terminal window in this build: sessions open in the browser."), this);
        note->setObjectName(QStringLiteral("noLocalTerminalNote"));
        note->setToolTip(reason);
        statusBar()->addPermanentWidget(note);
        m_attach->setToolTip(reason);
        m_watch->setToolTip(reason);
        m_attach->setStatusTip(reason);
        m_watch->setStatusTip(reason);
    }
    updateActions();
}

QString SessionsWindow::currentSessionId() const
{
    const QModelIndexList rows = m_view->selectionModel()->selectedRows();
    if (rows.isEmpty())
        return QString();
    return rows.first().data(SessionListModel::SessionIdRole).toString();
}

void SessionsWindow::selectSession(const QString &id)
{
    const int row = m_model->rowOf(id);
    if (row < 0)
        return;
    const QModelIndex p = m_proxy->mapFromSource(m_model->index(row, 0));
    m_view->selectRow(p.row());
}

void SessionsWindow::updateActions()
{
    const QString id = currentSessionId();
    const bool has = !id.isEmpty();
    m_attach->setEnabled(has && m_localTerminal);
    m_watch->setEnabled(has && m_localTerminal);
    m_browser->setEnabled(has);
    m_kill->setEnabled(has);
    m_rename->setEnabled(has);
    if (has) {
        const QJsonObject s = m_model->session(id);
        const bool running = !s.isEmpty() && !SessionListModel::isExited(s);
        m_kill->setText(running ? tr("&Kill…") : tr("&Remove"));
    }
}

void SessionsWindow::updateEmptyState()
{
    m_stack->setCurrentIndex(m_proxy->rowCount() > 0 ? 0 : 1);
    updateActions();
}

void SessionsWindow::keepTitleRoom(QMessageBox &box)
{
    // The window manager draws "TITLE — Tether" in a bold font of its own
    // beside the window's icon and its buttons: room for the title in the
    // application's bold font plus eight line heights (openbox, whose title
    // font is larger, still cut it with five).
    QFont font = box.font();
    font.setBold(true);
    const QFontMetrics fm(font);
    QString shown = box.windowTitle();
    if (!QGuiApplication::applicationDisplayName().isEmpty())
        shown += QStringLiteral(" \u2014 ") + QGuiApplication::applicationDisplayName();
    const int room = fm.horizontalAdvance(shown) + 8 * fm.height();
    if (auto *grid = qobject_cast<QGridLayout *>(box.layout()))
        grid->addItem(new QSpacerItem(room, 0, QSizePolicy::Minimum, QSizePolicy::Fixed), grid->rowCount(), 0, 1,
                      grid->columnCount());
}

void SessionsWindow::confirmKill()
{
    const QString id = currentSessionId();
    const QJsonObject s = m_model->session(id);
    if (s.isEmpty())
        return;
    if (!SessionListModel::isExited(s)) {
        const QString name = SessionListModel::displayName(s);
        QMessageBox box(QMessageBox::Warning, tr("Kill session"),
                        tr("Kill “%1” (pid %2)?").arg(name).arg(qint64(s.value(QStringLiteral("pid")).toDouble())),
                        QMessageBox::Cancel, this);
        box.setInformativeText(tr("Its processes are sent SIGHUP, then SIGTERM and SIGKILL. "
                                  "Unsaved work in them is lost."));
        keepTitleRoom(box);
        QPushButton *kill = box.addButton(tr("Kill"), QMessageBox::DestructiveRole);
        box.setDefaultButton(QMessageBox::Cancel);
        box.exec();
        if (box.clickedButton() != kill)
            return;
    }
    Q_EMIT killRequested(id);
}

void SessionsWindow::showEvent(QShowEvent *event)
{
    QMainWindow::showEvent(event);
    if (!m_view->selectionModel()->hasSelection() && m_proxy->rowCount() > 0)
        m_view->selectRow(0);
    m_model->refreshClocks();
    m_clock.start();
}

void SessionsWindow::hideEvent(QHideEvent *event)
{
    QMainWindow::hideEvent(event);
    m_clock.stop();
}

void SessionsWindow::closeEvent(QCloseEvent *event)
{
    if (!m_mainWindowMode) {
        event->accept();
        return;
    }
    const int n = m_model->runningCount();
    QMessageBox box(QMessageBox::Question, tr("Close Tether?"),
                    tr("There is no system tray to keep Tether in."), QMessageBox::Cancel, this);
    box.setInformativeText(
        n > 0 ? tr("Quit Tether ends %1 and their processes. Close the window leaves them running in "
                   "Tether's host: run tether again to get this window back.")
                  .arg(n == 1 ? tr("the running session") : tr("all %1 sessions").arg(n))
              : tr("Close the window leaves Tether's host running in the background: run tether again "
                   "to get this window back."));
    QPushButton *quit = box.addButton(tr("Quit Tether"), QMessageBox::DestructiveRole);
    QPushButton *keep = box.addButton(tr("Close the window"), QMessageBox::AcceptRole);
    box.setDefaultButton(keep);
    box.exec();
    if (box.clickedButton() == keep) {
        event->accept();
        Q_EMIT closeRequested();
    } else if (box.clickedButton() == quit) {
        event->accept();
        Q_EMIT quitRequested(true);
    } else {
        event->ignore();
    }
}

} // namespace Tether
