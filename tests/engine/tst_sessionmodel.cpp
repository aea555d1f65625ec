// SPDX-License-Identifier: GPL-2.0-or-later
// SessionModel follows a real registry with real /bin/sh sessions.
#include "procinfo.h"
#include "registry.h"
#include "session.h"
#include "sessionmodel.h"
#include "testutil.h"

#include <QAbstractItemModelTester>
#include <QSignalSpy>
#include <QTest>

#include <signal.h>

using namespace Tether;

namespace {

/// A control viewer that records what it gets (stands in for a browser).
class FakeViewer : public Viewer
{
public:
    void attached(Session *s, const AttachInfo &) override { session = s; }
    void output(const char *, qsizetype) override {}
    void exited(const ExitStatus &) override {}
    void detached(DetachReason r) override { reasons << r; session = nullptr; }
    ViewerKind kind() const override { return ViewerKind::Browser; }
    QString describe() const override { return QStringLiteral("browser 127.0.0.1:1234"); }
    Session *session = nullptr;
    QList<DetachReason> reasons;
};

SpawnOptions shell(const QStringList &argv = {QStringLiteral("/bin/sh")})
{
    SpawnOptions o;
    o.argv = argv;
    o.extraEnv << QStringLiteral("PS1=$ ");
    return o;
}

QString cell(const SessionModel &m, int row, int column, int role = Qt::DisplayRole)
{
    return m.data(m.index(row, column), role).toString();
}

} // namespace

class TestSessionModel : public QObject
{
    Q_OBJECT
private Q_SLOTS:
    void formatting();
    void followsRegistry();
    void namesAndQuotedCommands();
    void displayNamesAreEscaped();
    void rowsStayInOrderWhenMiddleRemoved();
    void refreshClocksOnlyTouchesClockColumns();
    void expiryRemovesRowAndShowsTimeLeft();
    void sortRoleIsNumeric();
    void showsBackgroundProcessesAfterExit();
    void backgroundCountFollowsRefresh();
};

void TestSessionModel::formatting()
{
    QCOMPARE(SessionModel::formatDuration(0), QStringLiteral("0 s"));
    QCOMPARE(SessionModel::formatDuration(59), QStringLiteral("59 s"));
    QCOMPARE(SessionModel::formatDuration(60), QStringLiteral("1 min"));
    QCOMPARE(SessionModel::formatDuration(185), QStringLiteral("3 min 5 s"));
    QCOMPARE(SessionModel::formatDuration(7800), QStringLiteral("2 h 10 min"));
    QCOMPARE(SessionModel::formatDuration(3 * 86400 + 4 * 3600 + 59), QStringLiteral("3 d 4 h"));
    QCOMPARE(SessionModel::formatDuration(-5), QStringLiteral("0 s"));
    QCOMPARE(SessionModel::formatBytes(512), QStringLiteral("512 B"));
    QCOMPARE(SessionModel::formatBytes(64 * 1024), QStringLiteral("64 KiB"));
    QCOMPARE(SessionModel::formatBytes(1536), QStringLiteral("1.5 KiB"));
    QCOMPARE(SessionModel::formatBytes(3 * 1024 * 1024 / 2), QStringLiteral("1.5 MiB"));
    QCOMPARE(SessionModel::formatBytes(64 * 1024 * 1024), QStringLiteral("64 MiB"));
}

void TestSessionModel::followsRegistry()
{
    Limits limits; // with a TTL for running sessions: "—" while attached
    limits.ttlSeconds = 1800;
    SessionRegistry registry(limits);
    registry.setTeardownGrace(200);
    SessionModel model(&registry);
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    QCOMPARE(model.rowCount(), 0);
    QCOMPARE(model.columnCount(), int(SessionModel::ColumnCount));

    QSignalSpy inserted(&model, &QAbstractItemModel::rowsInserted);
    QSignalSpy changed(&model, &QAbstractItemModel::dataChanged);
    QSignalSpy removed(&model, &QAbstractItemModel::rowsRemoved);

    // add
    Session *s = registry.create(shell());
    QVERIFY(s);
    QCOMPARE(inserted.count(), 1);
    QCOMPARE(model.rowCount(), 1);
    QCOMPARE(model.sessionAt(0), s);
    QCOMPARE(model.rowOf(s->id()), 0);
    QCOMPARE(cell(model, 0, SessionModel::PidColumn), QString::number(s->pid()));
    QCOMPARE(model.data(model.index(0, SessionModel::StateColumn), SessionModel::SessionIdRole).toString(), s->id());
    QTRY_COMPARE(cell(model, 0, SessionModel::StateColumn), QStringLiteral("running"));
    QCOMPARE(cell(model, 0, SessionModel::TitleColumn), QStringLiteral("sh"));
    QCOMPARE(cell(model, 0, SessionModel::AttachedColumn), QStringLiteral("nobody"));
    QCOMPARE(cell(model, 0, SessionModel::WatchersColumn), QStringLiteral("0"));
    QVERIFY(cell(model, 0, SessionModel::BufferColumn).endsWith(QStringLiteral("of 1 MiB")));

    // a viewer attaches: the row says who
    FakeViewer browser;
    changed.clear();
    s->attach(&browser, ViewerMode::Control, std::nullopt);
    QTRY_COMPARE(cell(model, 0, SessionModel::AttachedColumn), QStringLiteral("browser"));
    QVERIFY(changed.count() >= 1);
    QCOMPARE(cell(model, 0, SessionModel::AttachedColumn, Qt::ToolTipRole), QStringLiteral("browser 127.0.0.1:1234"));
    QCOMPARE(cell(model, 0, SessionModel::TimeLeftColumn), QStringLiteral("—"));

    // title change via OSC 0, typed into the shell
    changed.clear();
    QVERIFY(s->sendInput(&browser, QByteArrayLiteral("printf '\\033]0;hello\\007'\n")));
    QTRY_COMPARE(cell(model, 0, SessionModel::TitleColumn), QStringLiteral("hello"));
    QVERIFY(changed.count() >= 1);
    QCOMPARE(SessionModel::displayName(s), QStringLiteral("hello"));

    // exit
    QVERIFY(s->sendInput(&browser, QByteArrayLiteral("exit 3\n")));
    QTRY_COMPARE(cell(model, 0, SessionModel::StateColumn), QStringLiteral("exited 3"));
    QCOMPARE(model.rowCount(), 1); // an exited session stays listed until removed

    // remove
    s->detach(&browser);
    QVERIFY(registry.kill(s->id()));
    QCOMPARE(removed.count(), 1);
    QCOMPARE(model.rowCount(), 0);
    QCOMPARE(model.sessionAt(0), nullptr);
}

/// Window titles, menus and notifications show a session by displayName():
/// its name, title or command through DisplayText::escape (issue 29: a
/// title with ESC, DEL or U+202E reached the window title raw).
void TestSessionModel::displayNamesAreEscaped()
{
    SessionRegistry registry;
    registry.setTeardownGrace(200);
    SessionModel model(&registry);
    Session *named = registry.create(shell(), QStringLiteral("ab") + QChar(0x202e) + QStringLiteral("cd"));
    Session *titled = registry.create(shell({QStringLiteral("/bin/sh"), QStringLiteral("-c"),
                                             QStringLiteral("printf '\\033]2;GH\\177I \\342\\200\\213\\007'; exec sleep 60")}));
    Session *command = registry.create(shell({QStringLiteral("/bin/sleep"), QStringLiteral("60"), QStringLiteral("x\033[2J")}));
    QVERIFY(named && titled && command);
    QCOMPARE(SessionModel::displayName(named), QStringLiteral("ab\\u202ecd"));
    QTRY_COMPARE(SessionModel::displayName(titled), QStringLiteral("GH\\x7fI \\u200b"));
    QCOMPARE(SessionModel::displayName(command), QStringLiteral("sleep 60 'x\\e[2J'"));
    const int row = model.rowOf(named);
    QVERIFY(row >= 0);
    QCOMPARE(cell(model, row, SessionModel::TitleColumn), QStringLiteral("ab\\u202ecd"));
    QVERIFY(cell(model, row, SessionModel::TitleColumn, Qt::ToolTipRole).endsWith(QStringLiteral("named ab\\u202ecd")));
    // Editing starts from the name itself.
    QCOMPARE(model.data(model.index(row, SessionModel::TitleColumn), Qt::EditRole).toString(), named->name());
}

void TestSessionModel::namesAndQuotedCommands()
{
    SessionRegistry registry;
    registry.setTeardownGrace(200);
    SessionModel model(&registry);
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    // Commands keep their quoting (issue 14: the tray showed `vim -c set number`).
    Session *s = registry.create(shell({QStringLiteral("/bin/sh"), QStringLiteral("-c"), QStringLiteral("exec sleep 60"),
                                        QStringLiteral("a b")}));
    Session *t = registry.create(shell(), QStringLiteral("taken"));
    QVERIFY(s && t);
    const QModelIndex title = model.index(0, SessionModel::TitleColumn);
    QCOMPARE(SessionModel::displayName(s), QStringLiteral("sh -c 'exec sleep 60' 'a b'"));
    QCOMPARE(cell(model, 0, SessionModel::TitleColumn), QStringLiteral("sh -c 'exec sleep 60' 'a b'"));
    QVERIFY(cell(model, 0, SessionModel::TitleColumn, Qt::ToolTipRole).startsWith(QStringLiteral("/bin/sh -c 'exec sleep 60' 'a b'\n")));
    QCOMPARE(SessionModel::displayName(t), QStringLiteral("taken"));

    // The title column edits the name.
    QVERIFY(model.flags(title) & Qt::ItemIsEditable);
    QVERIFY(!(model.flags(model.index(0, SessionModel::PidColumn)) & Qt::ItemIsEditable));
    QCOMPARE(model.data(title, Qt::EditRole).toString(), QString());
    QSignalSpy changed(&model, &QAbstractItemModel::dataChanged);
    QSignalSpy refused(&model, &SessionModel::renameRefused);
    QVERIFY(model.setData(title, QStringLiteral("build")));
    QCOMPARE(s->name(), QStringLiteral("build"));
    QCOMPARE(cell(model, 0, SessionModel::TitleColumn), QStringLiteral("build"));
    QCOMPARE(model.data(title, Qt::EditRole).toString(), QStringLiteral("build"));
    QVERIFY(changed.count() >= 1);
    QVERIFY(cell(model, 0, SessionModel::TitleColumn, Qt::ToolTipRole).endsWith(QStringLiteral("\nnamed build")));
    QVERIFY(!model.setData(title, QStringLiteral("taken")));
    QCOMPARE(refused.count(), 1);
    QVERIFY2(refused.first().first().toString().contains(QStringLiteral("taken")), qPrintable(refused.first().first().toString()));
    QCOMPARE(s->name(), QStringLiteral("build"));
    // Cleared: back to the command line.
    QVERIFY(model.setData(title, QString()));
    QCOMPARE(cell(model, 0, SessionModel::TitleColumn), QStringLiteral("sh -c 'exec sleep 60' 'a b'"));
}

void TestSessionModel::rowsStayInOrderWhenMiddleRemoved()
{
    SessionRegistry registry;
    registry.setTeardownGrace(200);
    SessionModel model(&registry);
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    Session *a = registry.create(shell());
    Session *b = registry.create(shell({QStringLiteral("/bin/sh"), QStringLiteral("-c"), QStringLiteral("sleep 30")}));
    Session *c = registry.create(shell());
    QVERIFY(a && b && c);
    QCOMPARE(model.rowCount(), 3);
    QCOMPARE(cell(model, 1, SessionModel::TitleColumn), QStringLiteral("sh -c 'sleep 30'"));
    QVERIFY(registry.kill(b->id()));
    QCOMPARE(model.rowCount(), 2);
    QCOMPARE(model.sessionAt(0), a);
    QCOMPARE(model.sessionAt(1), c);
    QCOMPARE(model.rowOf(c), 1);
    // A model created later sees the existing sessions.
    SessionModel late(&registry);
    QCOMPARE(late.rowCount(), 2);
    QCOMPARE(late.sessionAt(1), c);
    registry.shutdown();
    QSignalSpy done(&registry, &SessionRegistry::shutdownComplete);
    QVERIFY(done.count() == 1 || done.wait(10000));
    QCOMPARE(model.rowCount(), 0);
}

void TestSessionModel::refreshClocksOnlyTouchesClockColumns()
{
    SessionRegistry registry;
    registry.setTeardownGrace(200);
    SessionModel model(&registry);
    QSignalSpy changed(&model, &QAbstractItemModel::dataChanged);
    model.refreshClocks();
    QCOMPARE(changed.count(), 0); // nothing to refresh, nothing emitted

    QVERIFY(registry.create(shell()));
    QVERIFY(registry.create(shell()));
    changed.clear();
    model.refreshClocks();
    QCOMPARE(changed.count(), 1);
    const QModelIndex tl = changed.at(0).at(0).value<QModelIndex>();
    const QModelIndex br = changed.at(0).at(1).value<QModelIndex>();
    QCOMPARE(tl.row(), 0);
    QCOMPARE(br.row(), 1);
    QCOMPARE(tl.column(), int(SessionModel::IdleColumn));
    QCOMPARE(br.column(), int(SessionModel::BufferColumn));
}

void TestSessionModel::expiryRemovesRowAndShowsTimeLeft()
{
    Limits limits;
    limits.ttlSeconds = 2;
    SessionRegistry registry(limits);
    registry.setTeardownGrace(200);
    SessionModel model(&registry);
    Session *s = registry.create(shell());
    QVERIFY(s);
    const QString left = cell(model, 0, SessionModel::TimeLeftColumn);
    QVERIFY2(left == QStringLiteral("2 s") || left == QStringLiteral("1 s") || left == QStringLiteral("0 s"),
             qPrintable(left));
    QSignalSpy removed(&model, &QAbstractItemModel::rowsRemoved);
    QVERIFY(removed.wait(6000));
    QCOMPARE(model.rowCount(), 0);

    // TTL 0: never expires, and the cell says so.
    limits.ttlSeconds = 0;
    registry.setLimits(limits);
    QVERIFY(registry.create(shell()));
    QCOMPARE(cell(model, 0, SessionModel::TimeLeftColumn), QStringLiteral("never"));
}

void TestSessionModel::sortRoleIsNumeric()
{
    SessionRegistry registry;
    registry.setTeardownGrace(200);
    SessionModel model(&registry);
    Session *s = registry.create(shell());
    QVERIFY(s);
    const QVariant pid = model.data(model.index(0, SessionModel::PidColumn), SessionModel::SortRole);
    QCOMPARE(pid.toLongLong(), qint64(s->pid()));
    QVERIFY(pid.canConvert<qint64>());
    QCOMPARE(model.data(model.index(0, SessionModel::WatchersColumn), SessionModel::SortRole).toLongLong(), 0);
    QCOMPARE(model.headerData(SessionModel::PidColumn, Qt::Horizontal).toString(), QStringLiteral("PID"));
}

void TestSessionModel::showsBackgroundProcessesAfterExit()
{
    SessionRegistry registry;
    registry.setTeardownGrace(200);
    SessionModel model(&registry);
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    // The leader exits 0 and leaves a background job holding the terminal: by
    // design the session stays (until TTL or kill), and the row says why.
    // (Without job control the job shares the leader's foreground process
    // group and would get the kernel's SIGHUP when the leader exits; an
    // interactive shell puts jobs in their own group. Ignoring HUP stands in.)
    Session *s = registry.create(shell({QStringLiteral("/bin/sh"), QStringLiteral("-c"),
                                        QStringLiteral("trap '' HUP; sleep 60 & echo started; exit 0")}));
    QVERIFY(s);
    QCOMPARE(model.backgroundProcesses(s), 0);
    QSignalSpy exited(s, &Session::exited);
    QVERIFY(exited.wait(10000));
    QCOMPARE(model.backgroundProcesses(s), 1);
    QCOMPARE(cell(model, 0, SessionModel::StateColumn), QStringLiteral("exited 0 · 1 background process"));
    QVERIFY(cell(model, 0, SessionModel::StateColumn, Qt::ToolTipRole).contains(QStringLiteral("kept until")));
    QVERIFY(!s->isTornDown());

    // The job ends: the session tears itself down (tornDown clears the count
    // without a /proc scan) and the row says only "exited 0".
    const QList<pid_t> left = processesInSession(s->pid());
    QCOMPARE(left.size(), 1);
    QSignalSpy changed(&model, &QAbstractItemModel::dataChanged);
    QVERIFY(::kill(left.first(), SIGKILL) == 0);
    QTRY_VERIFY_WITH_TIMEOUT(s->isTornDown(), 10000);
    QCOMPARE(model.backgroundProcesses(s), 0);
    QVERIFY(!changed.isEmpty());
    QCOMPARE(cell(model, 0, SessionModel::StateColumn), QStringLiteral("exited 0"));
    QCOMPARE(SessionModel::backgroundText(3), QStringLiteral("3 background processes"));
}

void TestSessionModel::backgroundCountFollowsRefresh()
{
    SessionRegistry registry;
    registry.setTeardownGrace(200);
    SessionModel model(&registry);
    // Two jobs; one ends: only refreshClocks() (the visible view's timer)
    // notices, as one dataChanged on the state cell.
    Session *s = registry.create(shell({QStringLiteral("/bin/sh"), QStringLiteral("-c"),
                                        QStringLiteral("trap '' HUP; sleep 60 & sleep 60 & exit 3")}));
    QVERIFY(s);
    QSignalSpy exited(s, &Session::exited);
    QVERIFY(exited.wait(10000));
    QCOMPARE(cell(model, 0, SessionModel::StateColumn), QStringLiteral("exited 3 · 2 background processes"));
    const QList<pid_t> left = processesInSession(s->pid());
    QCOMPARE(left.size(), 2);
    QVERIFY(::kill(left.first(), SIGKILL) == 0);
    QTRY_COMPARE(int(processesInSession(s->pid()).size()), 1);
    QCOMPARE(model.backgroundProcesses(s), 2); // not counted again until the row refreshes
    QSignalSpy changed(&model, &QAbstractItemModel::dataChanged);
    model.refreshClocks();
    QCOMPARE(changed.count(), 2); // the clock columns, then the state cell
    QCOMPARE(changed.at(1).at(0).value<QModelIndex>(), model.index(0, SessionModel::StateColumn));
    QCOMPARE(cell(model, 0, SessionModel::StateColumn), QStringLiteral("exited 3 · 1 background process"));
    QVERIFY(registry.kill(s->id()));
    QCOMPARE(model.rowCount(), 0);
}

QTEST_GUILESS_MAIN(TestSessionModel)
#include "tst_sessionmodel.moc"
