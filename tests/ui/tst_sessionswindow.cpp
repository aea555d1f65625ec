// SPDX-License-Identifier: GPL-2.0-or-later
// The Sessions window over a real registry's list, as the host's event
// stream carries it (sessionListJson into a SessionListModel, the model the
// desktop app feeds from /api/events): rows, sorting, actions, confirmations.
#include "registry.h"
#include "session.h"
#include "sessionjson.h"
#include "sessionlistmodel.h"
#include "sessionswindow.h"

#include <QAction>
#include <QApplication>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QMessageBox>
#include <QPushButton>
#include <QSignalSpy>
#include <QStackedWidget>
#include <QStatusBar>
#include <QTableView>
#include <QTest>
#include <QTimer>
#include <QScopeGuard>
#include <QFontMetrics>
#include <QJsonArray>
#include <QJsonObject>
#include <QScrollBar>
#include <functional>

using namespace Tether;

namespace {

SpawnOptions shell(const QStringList &argv = {QStringLiteral("/bin/sh")})
{
    SpawnOptions o;
    o.argv = argv;
    o.extraEnv << QStringLiteral("PS1=$ ");
    return o;
}

/// A SessionListModel fed from a registry in this process, as the desktop
/// app's is fed from the host's `sessions` events (the same JSON,
/// sessionListJson()); a rename the view asks for is done on the registry,
/// as the host does for `PATCH /api/sessions/{id}`, and a refusal is given
/// to `window` (showRenameRefused()), as DesktopApp::renameSession does.
class LiveList : public SessionListModel
{
public:
    explicit LiveList(SessionRegistry *registry)
        : m_registry(registry)
    {
        setRenamable(true);
        const auto update = [this] { setSessions(sessionListJson(m_registry).value(QStringLiteral("sessions")).toArray()); };
        QObject::connect(registry, &SessionRegistry::sessionAdded, this, update);
        QObject::connect(registry, &SessionRegistry::sessionRemoved, this, update);
        QObject::connect(registry, &SessionRegistry::sessionChanged, this, update);
        QObject::connect(this, &SessionListModel::renameRequested, this, [this, update](const QString &id, const QString &name) {
            Session *s = m_registry->find(id);
            QString why;
            if (s && !m_registry->rename(s, name, nullptr, &why) && window)
                window->showRenameRefused(why);
            update();
        });
        update();
    }
    SessionsWindow *window = nullptr;

private:
    SessionRegistry *m_registry;
};

/// One try of answerNextMessageBox(): clicks or, with no box open yet, tries
/// again in 10 ms. A plain function, not a lambda that holds a shared pointer
/// to itself: that cycle leaked each try (LeakSanitizer in build-asan).
void answerMessageBoxAttempt(const QString &text, QString *seen)
{
    auto *box = qobject_cast<QMessageBox *>(QApplication::activeModalWidget());
    if (!box) {
        QTimer::singleShot(10, [text, seen] { answerMessageBoxAttempt(text, seen); });
        return;
    }
    if (seen)
        *seen = box->text() + QLatin1Char('\n') + box->informativeText();
    for (QAbstractButton *b : box->buttons()) {
        if (b->text() == text) {
            b->click();
            return;
        }
    }
    qWarning("no button %s", qPrintable(text));
    box->reject();
}

/// Clicks the button with `text` in the next modal message box, from the
/// event loop (exec() blocks the caller). Records the box's text.
void answerNextMessageBox(const QString &text, QString *seen = nullptr)
{
    QTimer::singleShot(0, [text, seen] { answerMessageBoxAttempt(text, seen); });
}

/// A registry (short teardown), its model, and a Sessions window shown with
/// one shell session, selected: the start of the tests of the Kill action.
struct WindowWithASession {
    SessionRegistry registry;
    LiveList model{&registry};
    SessionsWindow window{&model};
    Session *session = nullptr;

    /// False when the shell could not be spawned.
    bool start()
    {
        registry.setTeardownGrace(200);
        window.show();
        session = registry.create(shell());
        if (!session)
            return false;
        window.selectSession(session->id());
        return window.currentSessionId() == session->id();
    }
};

} // namespace

class TestSessionsWindow : public QObject
{
    Q_OBJECT
private Q_SLOTS:
    void showsSessionsAndEmptyState();
    void actionsFollowSelection();
    void doubleClickAttaches();
    void killAsksFirst();
    void killDialogKeepsItsTitle();
    void renameInPlace();
    void sortsByNumbers();
    void longCommandLeavesTheNameReadable();
    void clockRunsOnlyWhileShown();
    void withoutLocalTerminal();
    void mainWindowModeAsksOnClose();
    void restartFromTheMenu();
};

void TestSessionsWindow::showsSessionsAndEmptyState()
{
    SessionRegistry registry;
    registry.setTeardownGrace(200);
    LiveList model(&registry);
    SessionsWindow w(&model);
    w.setServerUrl(QStringLiteral("http://127.0.0.1:7420/"));
    w.show();
    auto *stack = w.findChild<QStackedWidget *>();
    QVERIFY(stack);
    QCOMPARE(stack->currentIndex(), 1); // "No sessions yet" page
    Session *s = registry.create(shell());
    QVERIFY(s);
    QCOMPARE(stack->currentIndex(), 0);
    QCOMPARE(w.view()->model()->rowCount(), 1);
    QCOMPARE(w.currentSessionId(), s->id()); // the first session gets selected
    QVERIFY(registry.kill(s->id()));
    QCOMPARE(stack->currentIndex(), 1);
}

void TestSessionsWindow::actionsFollowSelection()
{
    SessionRegistry registry;
    registry.setTeardownGrace(200);
    LiveList model(&registry);
    SessionsWindow w(&model);
    w.show();
    QVERIFY(!w.attachAction()->isEnabled());
    QVERIFY(!w.killAction()->isEnabled());
    QVERIFY(w.newAction()->isEnabled());
    Session *a = registry.create(shell());
    Session *b = registry.create(shell({QStringLiteral("/bin/sh"), QStringLiteral("-c"), QStringLiteral("exit 4")}));
    QVERIFY(a && b);
    w.selectSession(a->id());
    QCOMPARE(w.currentSessionId(), a->id());
    QVERIFY(w.attachAction()->isEnabled());
    QVERIFY(w.watchAction()->isEnabled());
    QVERIFY(w.browserAction()->isEnabled());
    QVERIFY(w.killAction()->isEnabled());
    QCOMPARE(w.killAction()->text(), QStringLiteral("&Kill…"));

    QSignalSpy attach(&w, &SessionsWindow::attachRequested);
    QSignalSpy watch(&w, &SessionsWindow::watchRequested);
    QSignalSpy browser(&w, &SessionsWindow::openInBrowserRequested);
    QSignalSpy create(&w, &SessionsWindow::newSessionRequested);
    w.attachAction()->trigger();
    w.watchAction()->trigger();
    w.browserAction()->trigger();
    w.newAction()->trigger();
    QCOMPARE(attach.count(), 1);
    QCOMPARE(attach.at(0).at(0).toString(), a->id());
    QCOMPARE(watch.at(0).at(0).toString(), a->id());
    QCOMPARE(browser.at(0).at(0).toString(), a->id());
    QCOMPARE(create.count(), 1);

    // An exited session: Kill becomes Remove (no confirmation needed).
    w.selectSession(b->id());
    QTRY_COMPARE(b->state(), Session::State::Exited);
    QTRY_COMPARE(w.killAction()->text(), QStringLiteral("&Remove"));
    QSignalSpy kill(&w, &SessionsWindow::killRequested);
    w.killAction()->trigger();
    QCOMPARE(kill.count(), 1);
    QCOMPARE(kill.at(0).at(0).toString(), b->id());
}

void TestSessionsWindow::doubleClickAttaches()
{
    SessionRegistry registry;
    registry.setTeardownGrace(200);
    LiveList model(&registry);
    SessionsWindow w(&model);
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    Session *s = registry.create(shell());
    QVERIFY(s);
    QSignalSpy attach(&w, &SessionsWindow::attachRequested);
    QTableView *view = w.view();
    const QRect r = view->visualRect(view->model()->index(0, SessionListModel::TitleColumn));
    QVERIFY(r.isValid());
    // A double click is a press/release/double-click sequence.
    QTest::mouseClick(view->viewport(), Qt::LeftButton, {}, r.center());
    QTest::mouseDClick(view->viewport(), Qt::LeftButton, {}, r.center());
    QTRY_COMPARE(attach.count(), 1);
    QCOMPARE(attach.at(0).at(0).toString(), s->id());
}

void TestSessionsWindow::killAsksFirst()
{
    WindowWithASession f;
    QVERIFY(f.start());
    SessionsWindow &w = f.window;
    Session *s = f.session;
    QSignalSpy kill(&w, &SessionsWindow::killRequested);

    QString seen;
    answerNextMessageBox(QStringLiteral("Cancel"), &seen);
    w.killAction()->trigger();
    QCOMPARE(kill.count(), 0);
    QVERIFY2(seen.contains(QString::number(s->pid())), qPrintable(seen));

    answerNextMessageBox(QStringLiteral("Kill"));
    w.killAction()->trigger();
    QCOMPARE(kill.count(), 1);
    QCOMPARE(kill.at(0).at(0).toString(), s->id());
}

void TestSessionsWindow::killDialogKeepsItsTitle()
{
    // A short session name ("sh") made a narrow box, and openbox cut its
    // title to "Kill ses… Tether" (seen under xvfb-run with openbox).
    const QString displayName = QGuiApplication::applicationDisplayName();
    QGuiApplication::setApplicationDisplayName(QStringLiteral("Tether"));
    const auto restore = qScopeGuard([&] { QGuiApplication::setApplicationDisplayName(displayName); });
    WindowWithASession f;
    QVERIFY(f.start());
    int width = -1;
    int needed = 0;
    QString title;
    QTimer::singleShot(0, [&] {
        std::function<void()> look = [&] {
            auto *box = qobject_cast<QMessageBox *>(QApplication::activeModalWidget());
            if (!box) {
                QTimer::singleShot(10, look);
                return;
            }
            title = box->windowTitle();
            QFont bold = box->font();
            bold.setBold(true);
            const QFontMetrics fm(bold);
            // The title as the window manager shows it, and room for the
            // window's icon and its three buttons: under openbox a box 232 px
            // wide (the title plus five line heights) still cut it; eight
            // showed it whole. Without the room the box is 211 px here.
            needed = fm.horizontalAdvance(title + QStringLiteral(" \u2014 ") + QGuiApplication::applicationDisplayName())
                + 8 * fm.height();
            width = box->width();
            box->reject();
        };
        look();
    });
    f.window.killAction()->trigger();
    qInfo("the box is %d px wide, its title needs %d", width, needed);
    QCOMPARE(title, QStringLiteral("Kill session"));
    QVERIFY2(width >= needed, qPrintable(QStringLiteral("box %1 px wide, its title needs %2").arg(width).arg(needed)));
}

void TestSessionsWindow::renameInPlace()
{
    SessionRegistry registry;
    registry.setTeardownGrace(200);
    LiveList model(&registry);
    SessionsWindow w(&model);
    model.window = &w;
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    Session *taken = registry.create(shell(), QStringLiteral("taken"));
    Session *s = registry.create(shell());
    QVERIFY(taken && s);
    w.selectSession(s->id());
    QVERIFY(w.renameAction()->isEnabled());
    QCOMPARE(w.renameAction()->shortcut(), QKeySequence(Qt::Key_F2));

    auto editor = [&w]() { return w.view()->findChild<QLineEdit *>(); };
    auto renameTo = [&](const QString &name) {
        w.renameAction()->trigger();
        QTRY_VERIFY(editor() && editor()->isVisible());
        editor()->selectAll();
        QTest::keyClicks(editor(), name);
        QTest::keyClick(editor(), Qt::Key_Return);
        QTRY_VERIFY(!editor() || !editor()->isVisible());
    };
    renameTo(QStringLiteral("my build"));
    QCOMPARE(s->name(), QStringLiteral("my build"));
    const int row = w.view()->currentIndex().row();
    QCOMPARE(w.view()->model()->index(row, SessionListModel::TitleColumn).data().toString(), QStringLiteral("my build"));

    // A taken name: unchanged, and the status bar says why.
    renameTo(QStringLiteral("taken"));
    QCOMPARE(s->name(), QStringLiteral("my build"));
    QVERIFY2(w.statusBar()->currentMessage().contains(QStringLiteral("is taken")), qPrintable(w.statusBar()->currentMessage()));
}

void TestSessionsWindow::sortsByNumbers()
{
    SessionRegistry registry;
    registry.setTeardownGrace(200);
    LiveList model(&registry);
    SessionsWindow w(&model);
    w.show();
    QList<Session *> list;
    for (int i = 0; i < 3; ++i)
        list << registry.create(shell());
    QTableView *view = w.view();
    view->sortByColumn(SessionListModel::PidColumn, Qt::DescendingOrder);
    QAbstractItemModel *m = view->model();
    qint64 prev = std::numeric_limits<qint64>::max();
    for (int row = 0; row < m->rowCount(); ++row) {
        const qint64 pid = m->index(row, SessionListModel::PidColumn).data(SessionListModel::SortRole).toLongLong();
        QVERIFY(pid <= prev);
        prev = pid;
    }
    // A new session lands in its sorted place.
    Session *n = registry.create(shell());
    QVERIFY(n);
    QCOMPARE(m->index(0, SessionListModel::PidColumn).data(SessionListModel::SortRole).toLongLong(),
             qint64(n->pid())); // newest pid is the largest (no wrap in a test run)
}

void TestSessionsWindow::longCommandLeavesTheNameReadable()
{
    // A shell's last command can be as long as a line (the Command column,
    // shellText()): it must not squeeze the session's name, the column a
    // person reads first, down to an ellipsis. The list as the host's
    // `sessions` event gives it (docs/protocol.md, "shell").
    const QString longLine = QStringLiteral("git --no-pager log --graph --format=\"%h %s\" -14 -- ") + QString(160, QLatin1Char('x'));
    SessionListModel model;
    model.setSessions(QJsonArray{QJsonObject{
        {QStringLiteral("id"), QStringLiteral("AAAAAAAAAAAAAAAAAAAAAA")},
        {QStringLiteral("name"), QStringLiteral("build-server")},
        {QStringLiteral("state"), QStringLiteral("running")},
        {QStringLiteral("pid"), 4242},
        {QStringLiteral("shell"),
         QJsonObject{{QStringLiteral("state"), QStringLiteral("prompt")},
                     {QStringLiteral("command"),
                      QJsonObject{{QStringLiteral("command_line"), longLine},
                                  {QStringLiteral("running"), false},
                                  {QStringLiteral("exit_status"), 0}}}}},
    }});
    SessionsWindow w(&model);
    w.resize(900, 330);
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    QTableView *view = w.view();
    QCOMPARE(view->model()->index(0, SessionListModel::TitleColumn).data().toString(), QStringLiteral("build-server"));
    const int need = view->fontMetrics().horizontalAdvance(QStringLiteral("build-server"));
    QTRY_VERIFY2(view->columnWidth(SessionListModel::TitleColumn) > need,
                 qPrintable(QStringLiteral("name column %1 px, the name needs %2 px; command column %3 px")
                                .arg(view->columnWidth(SessionListModel::TitleColumn))
                                .arg(need)
                                .arg(view->columnWidth(SessionListModel::ShellColumn))));
    // And every column is in the window: no horizontal scrolling to the rest.
    QVERIFY(!view->horizontalScrollBar()->isVisible());
}

void TestSessionsWindow::clockRunsOnlyWhileShown()
{
    SessionRegistry registry;
    LiveList model(&registry);
    SessionsWindow w(&model);
    QVERIFY(!w.isClockRunning());
    w.show();
    QVERIFY(w.isClockRunning());
    QSignalSpy changed(&model, &QAbstractItemModel::dataChanged);
    QVERIFY(registry.create(shell()));
    QVERIFY(changed.wait(3000)); // the once-a-second refresh
    w.hide();
    QVERIFY(!w.isClockRunning());
}

void TestSessionsWindow::withoutLocalTerminal()
{
    SessionRegistry registry;
    registry.setTeardownGrace(200);
    LiveList model(&registry);
    SessionsWindow w(&model);
    const QString why = QStringLiteral("QTermWidget for Qt 6 is not installed; use Open in browser.");
    w.setLocalTerminalAvailable(false, why);
    w.show();
    Session *s = registry.create(shell());
    QVERIFY(s);
    w.selectSession(s->id());
    QVERIFY(!w.attachAction()->isEnabled());
    QVERIFY(!w.watchAction()->isEnabled());
    QCOMPARE(w.attachAction()->toolTip(), why);
    auto *note = w.findChild<QLabel *>(QStringLiteral("noLocalTerminalNote"));
    QVERIFY(note);
    QVERIFY(note->isVisible());
    QCOMPARE(note->toolTip(), why);
    QVERIFY(w.browserAction()->isEnabled());
    // Double-click opens the browser instead.
    QSignalSpy browser(&w, &SessionsWindow::openInBrowserRequested);
    QSignalSpy attach(&w, &SessionsWindow::attachRequested);
    Q_EMIT w.view()->doubleClicked(w.view()->model()->index(0, 0));
    QCOMPARE(browser.count(), 1);
    QCOMPARE(attach.count(), 0);
}

void TestSessionsWindow::restartFromTheMenu()
{
    // Tether menu: Restart Tether (issue 13: the tray and the Sessions window).
    SessionRegistry registry;
    LiveList model(&registry);
    SessionsWindow w(&model);
    auto *restart = w.findChild<QAction *>(QStringLiteral("restartTether"));
    QVERIFY(restart);
    QCOMPARE(restart->text(), QStringLiteral("&Restart Tether"));
    QSignalSpy requested(&w, &SessionsWindow::restartRequested);
    restart->trigger();
    QCOMPARE(requested.size(), 1);

    // The update notice: hidden until there is one; its button restarts.
    auto *bar = w.findChild<QWidget *>(QStringLiteral("updateBar"));
    QVERIFY(bar && bar->isHidden());
    w.setUpdateNotice(QStringLiteral("Tether was updated — restart to use version 9.9.9 (sessions are kept)"));
    QVERIFY(!bar->isHidden());
    w.findChild<QPushButton *>(QStringLiteral("updateRestart"))->click();
    QCOMPARE(requested.size(), 2);
    w.setUpdateNotice(QString());
    QVERIFY(bar->isHidden());
}

void TestSessionsWindow::mainWindowModeAsksOnClose()
{
    SessionRegistry registry;
    registry.setTeardownGrace(200);
    LiveList model(&registry);
    SessionsWindow w(&model);
    QSignalSpy quit(&w, &SessionsWindow::quitRequested);
    QSignalSpy closeUi(&w, &SessionsWindow::closeRequested);

    // Not the main window: closing just hides.
    w.show();
    QVERIFY(w.close());
    QCOMPARE(quit.count(), 0);

    w.setMainWindowMode(true);
    w.show();
    answerNextMessageBox(QStringLiteral("Cancel"));
    QVERIFY(!w.close());
    QVERIFY(w.isVisible());
    QCOMPARE(quit.count(), 0);

    QCOMPARE(closeUi.count(), 0);

    // Close the window: the desktop app goes, the sessions stay in the host.
    answerNextMessageBox(QStringLiteral("Close the window"));
    QVERIFY(w.close());
    QCOMPARE(quit.count(), 0);
    QCOMPARE(closeUi.count(), 1);

    w.show();
    answerNextMessageBox(QStringLiteral("Quit Tether"));
    QVERIFY(w.close());
    QCOMPARE(quit.count(), 1);
    QCOMPARE(quit.at(0).at(0).toBool(), true);
    QCOMPARE(closeUi.count(), 1);
}

QTEST_MAIN(TestSessionsWindow)
#include "tst_sessionswindow.moc"
