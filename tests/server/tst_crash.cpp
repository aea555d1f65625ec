// SPDX-License-Identifier: GPL-2.0-or-later
// What a crash of Tether does to its sessions (issue 10; docs/reliability.md,
// "When Tether crashes"; scripts/crash-demo.sh shows the same by hand): the
// server is SIGKILLed while a job-control shell runs a foreground job, a
// background job and a disowned job. The kernel hangs up the terminal when
// its last master closes: the shell and its foreground job get SIGHUP and
// end; the jobs in process groups of their own get nothing and live on,
// orphaned (re-parented away from the dead server).
#include "serveprocess.h"
#include "servertestutil.h"

#include <QTest>

#include <csignal>

using namespace ServerTest;

namespace {
/// The parent of `pid` (/proc/PID/stat field 4); -1 when it is gone or a
/// zombie (a zombie has ended: only its exit status waits to be reaped).
qint64 liveParent(qint64 pid)
{
    const QByteArray st = readFile(QStringLiteral("/proc/%1/stat").arg(pid));
    const QList<QByteArray> fields = st.mid(st.lastIndexOf(')') + 2).split(' ');
    if (fields.size() < 2 || fields.at(0) == "Z" || fields.at(0) == "X")
        return -1;
    return fields.at(1).toLongLong();
}

qint64 pidIn(const QString &file)
{
    return readFile(file).trimmed().toLongLong();
}
} // namespace

class TestCrash : public QObject
{
    Q_OBJECT
private Q_SLOTS:
    void initTestCase() { registerProcessTypes(); }
    void sigkillOfTheServer();
};

void TestCrash::sigkillOfTheServer()
{
    if (tetherBinary().isEmpty())
        QSKIP("no tether executable in this build");
    ServeProcess s;
    QVERIFY(s.start());
    const qint64 server = s.proc.processId();
    const QString d = s.dir.path();
    // bash -m: job control, so `sleep 1001 &` runs in a process group of its
    // own and `sleep 1003` is the terminal's foreground job; ": " last keeps
    // bash itself running (it would exec its last command otherwise).
    const QString script = QStringLiteral("sleep 1001 & echo $! > %1/bg; sleep 1002 & disown; echo $! > %1/disowned; "
                                          "echo $$ > %1/shell; exec 3>%1/fg-started; sleep 1003; :").arg(d);
    QVERIFY(!s.create({QStringLiteral("bash"), QStringLiteral("-m"), QStringLiteral("-c"), script}).isEmpty());
    QTRY_VERIFY(QFile::exists(d + QStringLiteral("/fg-started")));
    const qint64 shell = pidIn(d + QStringLiteral("/shell"));
    const qint64 bg = pidIn(d + QStringLiteral("/bg"));
    const qint64 disowned = pidIn(d + QStringLiteral("/disowned"));
    QVERIFY(shell > 0 && bg > 0 && disowned > 0);
    QTRY_COMPARE(childrenOf(shell, 0, "1003"), 1); // the foreground job
    QCOMPARE(liveParent(shell), server);
    QCOMPARE(liveParent(bg), shell);
    QCOMPARE(liveParent(disowned), shell);
    qint64 fg = -1;
    for (const QString &e : QDir(QStringLiteral("/proc")).entryList(QDir::Dirs | QDir::NoDotAndDotDot))
        if (liveParent(e.toLongLong()) == shell && readFile(QStringLiteral("/proc/%1/cmdline").arg(e)).contains("1003"))
            fg = e.toLongLong();
    QVERIFY(fg > 0);

    QVERIFY(::kill(pid_t(server), SIGKILL) == 0);
    QVERIFY(s.waitFinished());
    // Hung up by the kernel: the shell and its foreground job end.
    QTRY_COMPARE(liveParent(shell), -1);
    QTRY_COMPARE(liveParent(fg), -1);
    // In process groups of their own: alive, orphaned.
    QTest::qWait(300); // a SIGHUP would have arrived with the others
    const qint64 bgParent = liveParent(bg);
    const qint64 disownedParent = liveParent(disowned);
    ::kill(pid_t(bg), SIGKILL);
    ::kill(pid_t(disowned), SIGKILL);
    QVERIFY2(bgParent > 0 && bgParent != shell && bgParent != server, qPrintable(QString::number(bgParent)));
    QVERIFY2(disownedParent > 0 && disownedParent != shell && disownedParent != server,
             qPrintable(QString::number(disownedParent)));
}

QTEST_GUILESS_MAIN(TestCrash)
#include "tst_crash.moc"
