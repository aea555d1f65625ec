// SPDX-License-Identifier: GPL-2.0-or-later
// SessionRecordStore (issue 24): records of running sessions on disk, written
// off the output path once output goes quiet and at most once per interval;
// removed when a session ends; kept at shutdown; read back as ended
// sessions ("reboot", "shutdown", "crash"); 0 lines is off.
#include "registry.h"
#include "screen.h"
#include "sessionrecordstore.h"
#include "testutil.h"
#include "vtrender.h"

#include <QElapsedTimer>
#include <QFileInfo>
#include <QRegularExpression>
#include <QSemaphore>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTimer>
#include <QTest>

#include <atomic>
#include <csignal>
#include <sys/stat.h>

using namespace Tether;

namespace {
mode_t modeOf(const QString &path)
{
    struct stat st {};
    if (::stat(QFile::encodeName(path).constData(), &st) != 0)
        return 0;
    return st.st_mode & 0777;
}

Limits smallLimits()
{
    Limits l;
    l.bufferCapacity = 64 * 1024;
    return l;
}

void shutdownAndWait(SessionRegistry &r)
{
    QSignalSpy done(&r, &SessionRegistry::shutdownComplete);
    r.shutdown();
    QVERIFY(done.wait(15000));
}

/// What `screen` (bytes from a reset terminal) shows, row by row.
QString render(const QByteArray &screen, int cols, int rows)
{
    TestUtil::VtRender vt(cols, rows);
    vt.feed(screen);
    return vt.text();
}
} // namespace

class TestSessionRecordStore : public QObject
{
    Q_OBJECT
private Q_SLOTS:
    void roundTripWithPrivateModes();
    void recordsARunningSessionOnceQuiet();
    void rateLimitsWrites();
    void writesOffTheEventLoop();
    void zeroLinesWritesNothing();
    void aSessionThatEndsIsForgotten();
    void shutdownKeepsRecordsAndTellsWhy();
    void revivePreambleEndsWithTheMarker();
    void screenWithLinesCutsAsAParseWould();
    void symlinksAndOtherNonRegularFilesAreNotRead();
};

void TestSessionRecordStore::roundTripWithPrivateModes()
{
    QTemporaryDir tmp;
    const QString dir = tmp.path() + QStringLiteral("/tether/sessions");
    SessionRecord r;
    r.id = QStringLiteral("-AbC_123");
    r.name = QStringLiteral("build ✓");
    r.command = QStringList{QStringLiteral("/bin/sh"), QStringLiteral("-c"), QStringLiteral("echo 'x y'")};
    r.loginShell = true;
    r.cwd = QStringLiteral("/tmp/a dir");
    r.title = QStringLiteral("vim notes");
    r.created = QDateTime::fromString(QStringLiteral("2024-05-01T12:00:00Z"), Qt::ISODate);
    r.saved = QDateTime::fromString(QStringLiteral("2024-05-01T12:30:00Z"), Qt::ISODate);
    r.bootId = QStringLiteral("boot-1");
    r.shutdown = true;
    r.cols = 120;
    r.rows = 40;
    r.screen = QByteArray("\x1b[1;1Hhello\x00\xff", 13);
    r.scrollbackLines = 7;
    QString error;
    QVERIFY2(SessionRecordStore::write(dir, r, &error), qPrintable(error));
    const QString file = SessionRecordStore::fileFor(dir, r.id);
    QCOMPARE(modeOf(file), mode_t(0600));
    QCOMPARE(modeOf(dir), mode_t(0700));
    QCOMPARE(modeOf(tmp.path() + QStringLiteral("/tether")), mode_t(0700));
    SessionRecord back;
    QVERIFY2(SessionRecordStore::read(file, &back, &error), qPrintable(error));
    QCOMPARE(back.id, r.id);
    QCOMPARE(back.name, r.name);
    QCOMPARE(back.command, r.command);
    QCOMPARE(back.loginShell, true);
    QCOMPARE(back.cwd, r.cwd);
    QCOMPARE(back.title, r.title);
    QCOMPARE(back.created, r.created);
    QCOMPARE(back.saved, r.saved);
    QCOMPARE(back.bootId, r.bootId);
    QCOMPARE(back.shutdown, true);
    QCOMPARE(back.cols, 120);
    QCOMPARE(back.rows, 40);
    QCOMPARE(back.screen, r.screen);
    QCOMPARE(back.scrollbackLines, 7);

    // A file whose id is not its name, or that is not JSON, is refused.
    QFile::copy(file, dir + QStringLiteral("/other.json"));
    QVERIFY(!SessionRecordStore::read(dir + QStringLiteral("/other.json"), &back, &error));
    QFile bad(dir + QStringLiteral("/bad.json"));
    QVERIFY(bad.open(QIODevice::WriteOnly));
    bad.write("{not json");
    bad.close();
    QVERIFY(!SessionRecordStore::read(bad.fileName(), &back, &error));
    QVERIFY(error.contains(QLatin1String("JSON")));
}

void TestSessionRecordStore::recordsARunningSessionOnceQuiet()
{
    QTemporaryDir tmp;
    SessionRegistry registry(smallLimits());
    SessionRecordStore store(&registry, tmp.path(), 1000);
    store.setTiming(50, 0);
    store.start();
    QSignalSpy saved(&store, &SessionRecordStore::saved);
    // 30 lines on a 10-row terminal: 20 go to the scrollback.
    SpawnOptions o = TestUtil::shell(QStringLiteral("cd /tmp && i=1; while [ $i -le 30 ]; do echo row-$i; i=$((i+1)); done; exec sleep 60"));
    o.cols = 40;
    o.rows = 10;
    Session *s = registry.create(o);
    QVERIFY(s);
    // Saved once the output is all there and quiet (a first save of an
    // empty screen may come before: wait for the one with the last line).
    SessionRecord r;
    QTRY_VERIFY_WITH_TIMEOUT(saved.size() > 0 && [&] {
        QString e;
        return SessionRecordStore::read(SessionRecordStore::fileFor(tmp.path(), s->id()), &r, &e)
            && r.screen.contains("row-30");
    }(), 15000);
    QCOMPARE(r.command, s->command());
    QCOMPARE(r.loginShell, false);
    QCOMPARE(r.cwd, QStringLiteral("/tmp")); // read from /proc/PID/cwd, not the start directory
    QCOMPARE(r.cols, 40);
    QCOMPARE(r.rows, 10);
    QCOMPARE(r.scrollbackLines, 21); // row-1..row-21 scrolled off (row-22..30 and the cursor's empty row shown)
    const QString shown = render(r.screen, 40, 10);
    QVERIFY2(shown.startsWith(QLatin1String("row-22\nrow-23")), qPrintable(shown));
    QVERIFY(shown.contains(QLatin1String("row-30")));
    QVERIFY(r.screen.contains("row-1\x1b[K"));
    shutdownAndWait(registry);
}

void TestSessionRecordStore::rateLimitsWrites()
{
    QTemporaryDir tmp;
    SessionRegistry registry(smallLimits());
    SessionRecordStore store(&registry, tmp.path(), 1000);
    const int intervalMs = 600;
    store.setTiming(10, intervalMs);
    store.start();
    QSignalSpy saved(&store, &SessionRecordStore::saved);
    // A line every 50 ms: quiet long enough between lines for the idle rule,
    // so only the rate limit holds writes back.
    Session *s = registry.create(TestUtil::shell(QStringLiteral("while :; do echo tick; sleep 0.05; done")));
    QVERIFY(s);
    QSignalSpy output(s, &Session::outputArrived);
    QElapsedTimer clock;
    clock.start();
    QList<qint64> at;
    connect(&store, &SessionRecordStore::saved, this, [&] { at.append(clock.elapsed()); });
    QTRY_VERIFY_WITH_TIMEOUT(at.size() >= 3, 20000);
    // Never per read: many reads, few writes, and records taken at least the
    // interval apart (a coarse timer may fire up to 5 % early). Each one is
    // written on the store's I/O thread, which may delay one saved() more
    // than another, so the bound is on the count: n records taken since the
    // clock started span n - 1 intervals before the last one is on disk.
    QVERIFY2(output.size() > at.size() * 2, qPrintable(QStringLiteral("%1 reads, %2 writes").arg(output.size()).arg(at.size())));
    QVERIFY2((at.size() - 1) * (intervalMs * 9 / 10) <= at.last(),
             qPrintable(QStringLiteral("%1 writes by %2 ms").arg(at.size()).arg(at.last())));
    shutdownAndWait(registry);
}

void TestSessionRecordStore::writesOffTheEventLoop()
{
    // A record's write (QSaveFile: write, fdatasync, rename) can take tens of
    // ms on a busy disk: the event loop must turn meanwhile. The hook runs
    // where the write does and holds it until the event loop has ticked
    // again; on the event loop's own thread no tick could come.
    QTemporaryDir tmp;
    SessionRegistry registry(smallLimits());
    SessionRecordStore store(&registry, tmp.path(), 1000);
    store.setTiming(10, 0);
    QSemaphore ticks;
    QTimer ticker;
    ticker.setInterval(20);
    connect(&ticker, &QTimer::timeout, this, [&] { ticks.release(); });
    ticker.start();
    std::atomic<int> loopTurned{-1};
    store.setBeforeWriteHook([&] {
        if (loopTurned.load() < 0)
            loopTurned = ticks.tryAcquire(ticks.available() + 1, 3000) ? 1 : 0;
    });
    store.start();
    QSignalSpy saved(&store, &SessionRecordStore::saved);
    Session *s = registry.create(TestUtil::shell(QStringLiteral("echo a; exec sleep 60")));
    QVERIFY(s);
    QTRY_VERIFY_WITH_TIMEOUT(loopTurned.load() >= 0, 15000);
    QCOMPARE(loopTurned.load(), 1);
    QTRY_VERIFY_WITH_TIMEOUT(!saved.isEmpty(), 10000);
    QVERIFY(QFileInfo::exists(SessionRecordStore::fileFor(tmp.path(), s->id())));
    ticker.stop();
    shutdownAndWait(registry);
}

void TestSessionRecordStore::zeroLinesWritesNothing()
{
    QTemporaryDir off;
    QTemporaryDir witness;
    SessionRegistry registry(smallLimits());
    SessionRecordStore store(&registry, off.path() + QStringLiteral("/sessions"), 0);
    QVERIFY(!store.isEnabled());
    store.start();
    // The same sessions recorded elsewhere: once that one has written, the
    // store that is off had every chance to.
    SessionRecordStore other(&registry, witness.path(), 1000);
    other.setTiming(10, 0);
    other.start();
    QSignalSpy saved(&other, &SessionRecordStore::saved);
    Session *s = registry.create(TestUtil::shell(QStringLiteral("echo hello; exec sleep 60")));
    QVERIFY(s);
    QTRY_VERIFY_WITH_TIMEOUT(saved.size() > 0, 15000);
    store.shutdown();
    QVERIFY(!QFileInfo::exists(off.path() + QStringLiteral("/sessions")));
    shutdownAndWait(registry);
}

void TestSessionRecordStore::aSessionThatEndsIsForgotten()
{
    QTemporaryDir tmp;
    SessionRegistry registry(smallLimits());
    SessionRecordStore store(&registry, tmp.path(), 1000);
    store.setTiming(10, 0);
    store.start();
    QSignalSpy saved(&store, &SessionRecordStore::saved);
    Session *exits = registry.create(TestUtil::shell(QStringLiteral("echo a; exec sleep 60")));
    Session *killed = registry.create(TestUtil::shell(QStringLiteral("echo b; exec sleep 60")));
    QVERIFY(exits && killed);
    const QString exitsFile = SessionRecordStore::fileFor(tmp.path(), exits->id());
    const QString killedFile = SessionRecordStore::fileFor(tmp.path(), killed->id());
    QTRY_VERIFY_WITH_TIMEOUT(QFileInfo::exists(exitsFile) && QFileInfo::exists(killedFile), 15000);
    QSignalSpy exited(exits, &Session::exited);
    ::kill(exits->pid(), SIGTERM); // its program ends: the session ended normally
    QVERIFY(exited.wait(10000));
    store.flush(); // removals go on the store's I/O thread, in order
    QVERIFY(!QFileInfo::exists(exitsFile));
    QVERIFY(registry.kill(killed->id())); // DELETE, `tether kill`
    store.flush();
    QVERIFY(!QFileInfo::exists(killedFile));
    shutdownAndWait(registry);
}

void TestSessionRecordStore::shutdownKeepsRecordsAndTellsWhy()
{
    QTemporaryDir tmp;
    const QString bootFile = tmp.path() + QStringLiteral("/boot_id");
    TestUtil::EnvGuard guard("TETHER_BOOT_ID_FILE");
    auto setBoot = [&](const QByteArray &id) {
        QFile f(bootFile);
        QVERIFY(f.open(QIODevice::WriteOnly | QIODevice::Truncate));
        f.write(id + '\n');
    };
    setBoot("boot-A");
    qputenv("TETHER_BOOT_ID_FILE", QFile::encodeName(bootFile));
    QCOMPARE(SessionRecordStore::currentBootId(), QStringLiteral("boot-A"));
    const QString dir = tmp.path() + QStringLiteral("/sessions");
    QString id;
    {
        SessionRegistry registry(smallLimits());
        SessionRecordStore store(&registry, dir, 1000);
        store.start();
        Session *s = registry.create(TestUtil::shell(QStringLiteral("echo kept; exec sleep 60")));
        QVERIFY(s);
        id = s->id();
        QTRY_VERIFY(s->offset() > 0);
        store.shutdown(); // an orderly stop: records first, then the sessions end
        shutdownAndWait(registry);
    }
    SessionRecord r;
    QString error;
    QVERIFY2(SessionRecordStore::read(SessionRecordStore::fileFor(dir, id), &r, &error), qPrintable(error));
    QVERIFY(r.shutdown);
    QVERIFY(r.screen.contains("kept"));

    // A record written while the host ran, left by a crash.
    SessionRecord crashed = r;
    crashed.id = QStringLiteral("crashedSession");
    crashed.shutdown = false;
    crashed.created = r.created.addSecs(1);
    QVERIFY(SessionRecordStore::write(dir, crashed, &error));

    SessionRegistry registry(smallLimits());
    {
        SessionRecordStore store(&registry, dir, 1000);
        QCOMPARE(store.loadEnded(), 2);
        QCOMPARE(store.ended().at(0).id, id);
        QCOMPARE(store.why(store.ended().at(0)), QStringLiteral("shutdown"));
        QCOMPARE(store.why(store.ended().at(1)), QStringLiteral("crash"));
        const QJsonObject j = store.toJson(store.ended().at(1));
        QCOMPARE(j.value(QStringLiteral("state")).toString(), QStringLiteral("ended"));
        QCOMPARE(j.value(QStringLiteral("ended")).toString(), QStringLiteral("crash"));
    }
    setBoot("boot-B"); // the machine rebooted
    SessionRecordStore store(&registry, dir, 1000);
    QCOMPARE(store.loadEnded(), 2);
    QCOMPARE(store.why(store.ended().at(0)), QStringLiteral("reboot"));
    QCOMPARE(store.why(store.ended().at(1)), QStringLiteral("reboot"));
    QSignalSpy changed(&store, &SessionRecordStore::endedChanged);
    QVERIFY(store.forget(QStringLiteral("crashedSession")));
    QCOMPARE(changed.size(), 1);
    store.flush(); // the file goes on the store's I/O thread
    QVERIFY(!QFileInfo::exists(SessionRecordStore::fileFor(dir, QStringLiteral("crashedSession"))));
    QVERIFY(!store.findEnded(QStringLiteral("crashedSession")));
    QVERIFY(!store.forget(QStringLiteral("crashedSession")));
    QCOMPARE(store.ended().size(), 1);
}

void TestSessionRecordStore::revivePreambleEndsWithTheMarker()
{
    // A real snapshot (its cursor save slot is home, its cursor after the
    // prompt): the marker goes on the line below the prompt, nothing of
    // the saved screen is overwritten.
    Screen shell(80, 6);
    shell.feed(QByteArray("$ make\r\nbuilt\r\n\x1b[1;2r\x1b[4;1H$ "));
    Screen::SnapshotOptions o;
    o.inPlace = false;
    o.synchronized = false;
    SessionRecord r;
    r.cols = 80;
    r.rows = 6;
    r.screen = shell.snapshot(o);
    r.saved = QDateTime::fromString(QStringLiteral("2024-05-01T12:30:00Z"), Qt::ISODate);
    QByteArray p = SessionRecordStore::revivePreamble(r, QStringLiteral("reboot"));
    QVERIFY(p.startsWith(r.screen));
    QVERIFY(p.contains("session ended by reboot at 2024-05-01 12:30:00 UTC"));
    QVERIFY(p.endsWith("\x1b[0m\r\n"));
    {
        TestUtil::VtRender vt(80, 6);
        vt.feed(p);
        QVERIFY2(vt.rowText(0) == QStringLiteral("$ make"), qPrintable(vt.text() + QStringLiteral("\n---\n") + QString::fromLatin1(p.toPercentEncoding(" $;[?"))));
        QCOMPARE(vt.rowText(1), QStringLiteral("built"));
        QCOMPARE(vt.rowText(3), QStringLiteral("$"));
        QVERIFY2(vt.rowText(4).startsWith(QLatin1String("--- tether: session ended by reboot")), qPrintable(vt.text()));
    }
    // A full-screen program in front: back on the normal screen, the
    // marker below everything.
    Screen vim(80, 6);
    vim.feed(QByteArray("$ vim\r\n\x1b[?1049h\x1b[2J\x1b[Hin vim"));
    r.screen = vim.snapshot(o);
    p = SessionRecordStore::revivePreamble(r, QStringLiteral("crash"));
    TestUtil::VtRender vt(80, 6);
    vt.keepScrollback(false);
    vt.feed(p);
    QVERIFY(!vt.altScreen());
    QVERIFY2(vt.rowText(4).startsWith(QLatin1String("--- tether: session ended by crash")) && vt.cursor().first == 5, qPrintable(vt.text()));
    QVERIFY2((vt.scrollback() + vt.text().split(QLatin1Char('\n'))).contains(QStringLiteral("$ vim")), qPrintable(vt.text()));
}

void TestSessionRecordStore::screenWithLinesCutsAsAParseWould()
{
    // Records as recordOf() writes them (coloured lines, blank runs, a wide
    // character, a full-screen program in front): cut to N lines, the bytes
    // are the very bytes the screen snapshots with N lines.
    const auto snap = [](const Screen &s, int lines) {
        Screen::SnapshotOptions o;
        o.scrollbackLines = lines;
        o.inPlace = false;
        o.synchronized = false;
        return s.snapshot(o);
    };
    for (const bool alt : {false, true}) {
        Screen s(80, 24);
        for (int i = 1; i <= 300; ++i)
            s.feed(QStringLiteral("\x1b[3%1mline-%2\x1b[m   gap\x1b[44m \x1b[m \u754c end\r\n").arg(i % 8).arg(i).toUtf8());
        s.feed(QByteArray("$ "));
        if (alt)
            s.feed(QByteArray("vim\r\n\x1b[?1049h\x1b[2J\x1b[Hin vim"));
        SessionRecord r;
        r.cols = 80;
        r.rows = 24;
        r.scrollbackLines = int(s.scrollbackLineCount());
        QCOMPARE(r.scrollbackLines, 300 - 23 + (alt ? 1 : 0)); // "$ vim" CR LF scrolls one more
        r.screen = snap(s, r.scrollbackLines);
        for (const int n : {0, 1, 7, r.scrollbackLines - 1}) {
            bool parsed = true;
            const QByteArray cut = SessionRecordStore::screenWithLines(r, n, &parsed);
            QVERIFY2(cut == snap(s, n), qPrintable(QStringLiteral("alt %1, %2 lines").arg(alt).arg(n)));
            QVERIFY2(!parsed, "cut, not parsed again");
            QVERIFY(cut.size() < r.screen.size());
        }
        QCOMPARE(SessionRecordStore::screenWithLines(r, r.scrollbackLines), r.screen);
        QCOMPARE(SessionRecordStore::screenWithLines(r, 1000), r.screen);
        TestUtil::VtRender vt(80, 24);
        vt.keepScrollback(false);
        vt.feed(SessionRecordStore::screenWithLines(r, 0));
        QVERIFY2(vt.scrollback().isEmpty(), qPrintable(vt.scrollback().join(QLatin1Char('\n'))));
        TestUtil::VtRender whole(80, 24);
        whole.keepScrollback(false);
        whole.feed(r.screen);
        QCOMPARE(whole.scrollback().size(), r.scrollbackLines);
        QVERIFY2(vt.diff(whole).isEmpty(), qPrintable(vt.diff(whole)));
    }
    // Another layout (plain output, as a hand-made record has it): parsed
    // again; the screen alone, or with the last N of the lines it scrolled.
    SessionRecord r;
    r.cols = 80;
    r.rows = 24;
    r.scrollbackLines = 50;
    for (int i = 1; i <= 50; ++i)
        r.screen += "odd-" + QByteArray::number(i) + "\r\n";
    r.screen += "$ ";
    TestUtil::VtRender none(80, 24);
    none.keepScrollback(false);
    bool parsed = false;
    none.feed(SessionRecordStore::screenWithLines(r, 0, &parsed));
    QVERIFY(parsed);
    QVERIFY(none.scrollback().isEmpty());
    QCOMPARE(none.rowText(0), QStringLiteral("odd-28"));
    QCOMPARE(none.rowText(23), QStringLiteral("$"));
    TestUtil::VtRender two(80, 24);
    two.keepScrollback(false);
    two.feed(SessionRecordStore::screenWithLines(r, 2));
    QCOMPARE(two.scrollback(), (QStringList{QStringLiteral("odd-26"), QStringLiteral("odd-27")}));
    QCOMPARE(two.text(), none.text());
}

QTEST_GUILESS_MAIN(TestSessionRecordStore)
#include "tst_sessionrecordstore.moc"

void TestSessionRecordStore::symlinksAndOtherNonRegularFilesAreNotRead()
{
    // The records directory holds what Tether wrote: regular files. A
    // symlink there (to a file that reads as a valid record, its name
    // matching the record's id) or a FIFO named like a record is skipped
    // with one warning each, never followed or opened for reading: it must
    // not become a revivable session.
    QTemporaryDir tmp;
    const QString dir = tmp.path() + QStringLiteral("/sessions");
    const QString elsewhere = tmp.path() + QStringLiteral("/elsewhere");
    SessionRecord r;
    r.id = QStringLiteral("realRecord");
    r.name = QStringLiteral("real");
    r.command = QStringList{QStringLiteral("/bin/sh")};
    r.created = QDateTime::currentDateTimeUtc();
    r.saved = r.created;
    QString error;
    QVERIFY2(SessionRecordStore::write(dir, r, &error), qPrintable(error));
    // A valid record of id "linkedRecord", outside the directory, and a
    // symlink to it in the directory under its own name.
    SessionRecord target = r;
    target.id = QStringLiteral("linkedRecord");
    target.name = QStringLiteral("linked");
    QVERIFY2(SessionRecordStore::write(elsewhere, target, &error), qPrintable(error));
    const QString link = SessionRecordStore::fileFor(dir, target.id);
    QVERIFY(QFile::link(SessionRecordStore::fileFor(elsewhere, target.id), link));
    QVERIFY(QFileInfo(link).isSymLink());
    // A FIFO named like a record: opening it for reading would block.
    const QString fifo = SessionRecordStore::fileFor(dir, QStringLiteral("fifoRecord"));
    QCOMPARE(::mkfifo(QFile::encodeName(fifo).constData(), 0600), 0);

    SessionRegistry registry(smallLimits());
    SessionRecordStore store(&registry, dir, 1000);
    // One warning each.
    QTest::ignoreMessage(QtWarningMsg, QRegularExpression(QStringLiteral("^session record .*/linkedRecord\\.json is not used: not a regular file")));
    QTest::ignoreMessage(QtWarningMsg, QRegularExpression(QStringLiteral("^session record .*/fifoRecord\\.json is not used: not a regular file")));
    QCOMPARE(store.loadEnded(), 1);
    QCOMPARE(store.ended().at(0).id, r.id);
    QVERIFY(!store.findEnded(target.id));
    QVERIFY(!store.findEnded(QStringLiteral("fifoRecord")));

    // read() refuses each of them, and says why; the FIFO without blocking.
    SessionRecord got;
    QVERIFY(!SessionRecordStore::read(link, &got, &error));
    QVERIFY2(error.contains(QLatin1String("not a regular file")), qPrintable(error));
    QVERIFY(!SessionRecordStore::read(fifo, &got, &error));
    QVERIFY2(error.contains(QLatin1String("not a regular file")), qPrintable(error));
    // The symlink and its target are left alone.
    QVERIFY(QFileInfo(link).isSymLink());
    QVERIFY(QFileInfo::exists(SessionRecordStore::fileFor(elsewhere, target.id)));
}
