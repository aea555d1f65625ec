// SPDX-License-Identifier: GPL-2.0-or-later
// Reattach from a terminal of another size (docs/protocol.md §5, "Attaching
// at the viewer's size"): a control viewer that attaches with `cols=C&rows=R`
// must see exactly what a viewer that never left sees after resizing its
// (non-reflowing) terminal to C×R at that moment: every cell, the cursor,
// the modes, the normal screen under the alternate one, the pen. Then, after
// the program's own redraw (SIGWINCH), the two must still agree.
//
// Real bash in a real PTY at 80×24, real WebSocket clients on 127.0.0.1
// port 0, both streams rendered in libvterm (vtrender.h): the never-detached
// viewer is a watcher attached from the start (it gets the `size` message
// where the session was resized), the late one a control viewer that
// supersedes the one that typed. Each row: a program, then the late viewer
// at a smaller or a larger size.
#include "fidelity.h"
#include "servertestutil.h"

#include <QDir>
#include <QJsonArray>
#include <QFile>
#include <QStandardPaths>
#include <QTemporaryDir>

#include <memory>

using namespace Tether;
using namespace ServerTest;

class TestFidelitySize : public QObject
{
    Q_OBJECT
private:
    Fixture f;
    QTemporaryDir m_home;

    /// Waits until `c` has `text` after `from` (returns where it ends), or -1.
    static qsizetype waitFor(const WsClient &c, const QByteArray &text, qsizetype from = 0, int ms = 15000)
    {
        qsizetype at = -1;
        if (!QTest::qWaitFor([&] { return (at = c.bytes.indexOf(text, from)) >= 0; }, ms))
            return -1;
        return at + text.size();
    }
    /// Waits until `c` has received nothing for `quietMs` (at most `ms`).
    static bool waitQuiet(const WsClient &c, int quietMs = 400, int ms = 15000)
    {
        QElapsedTimer t, still;
        t.start();
        still.start();
        qsizetype seen = c.bytes.size();
        while (t.elapsed() < ms) {
            QTest::qWait(20);
            if (c.bytes.size() != seen) {
                seen = c.bytes.size();
                still.restart();
            } else if (still.elapsed() >= quietMs) {
                return true;
            }
        }
        return false;
    }
    /// Binary bytes of the late viewer's replay (prelude, replay, snapshot).
    static quint64 replayEnd(const WsClient &late)
    {
        return quint64(late.num("prelude_bytes") + qMax<qint64>(0, late.num("snapshot_bytes")) + late.num("replay_bytes"));
    }
    /// The late viewer's output offset after what it has received.
    static quint64 lateOffset(const WsClient &late)
    {
        return quint64(late.num("offset")) + (quint64(late.bytes.size()) - replayEnd(late));
    }

private Q_SLOTS:
    void initTestCase()
    {
        QVERIFY(m_home.isValid());
        QVERIFY(f.start());
    }
    void cleanupTestCase() { f.stop(); }

    void reattachAtAnotherSize_data()
    {
        QTest::addColumn<QString>("program");
        QTest::addColumn<int>("cols");
        QTest::addColumn<int>("rows");
        // A shell prompt after output that wraps at the smaller width, and
        // scrolled: the prompt never redraws what is above it.
        QTest::newRow("prompt, smaller") << QStringLiteral("prompt") << 50 << 12;
        QTest::newRow("prompt, larger") << QStringLiteral("prompt") << 120 << 40;
        QTest::newRow("prompt, narrower and taller") << QStringLiteral("prompt") << 40 << 30;
        // vim in the alternate screen with a reverse-video status line.
        QTest::newRow("vim, smaller") << QStringLiteral("vim") << 50 << 12;
        QTest::newRow("vim, larger") << QStringLiteral("vim") << 120 << 40;
    }

    void reattachAtAnotherSize()
    {
        QFETCH(QString, program);
        QFETCH(int, cols);
        QFETCH(int, rows);
        if (program == QLatin1String("vim") && QStandardPaths::findExecutable(QStringLiteral("vim")).isEmpty())
            QSKIP("vim is not installed");

        // A directory of its own for each row (vim reads long.txt there).
        static int n = 0;
        const QString dir = m_home.path() + QStringLiteral("/row%1").arg(++n);
        QVERIFY(QDir().mkpath(dir));
        {
            QFile text(dir + QStringLiteral("/long.txt"));
            QVERIFY(text.open(QIODevice::WriteOnly));
            for (int i = 1; i <= 300; ++i)
                text.write(QByteArray("line ") + QByteArray::number(i) + " of a text long enough to be cut at fifty columns\n");
        }
        const QJsonObject row{{QStringLiteral("cols"), 80}, {QStringLiteral("rows"), 24}};
        QString error;
        Session *s = f.registry->create(Fidelity::spawnOptions(row, dir, m_home.path()), nullptr, &error);
        QVERIFY2(s, qPrintable(error));
        const QString path = QStringLiteral("/ws/") + s->id();

        // The viewer that never leaves (a watcher: it follows the session's
        // size through `size` messages), and the one that types.
        WsClient always, typist;
        always.open(f.port, path + QStringLiteral("?mode=watch"), f.key);
        QTRY_VERIFY_WITH_TIMEOUT(always.gotAttached(), 10000);
        QCOMPARE(always.num("replay_from"), qint64(0));
        QCOMPARE(always.num("prelude_bytes"), qint64(0));
        typist.open(f.port, path, f.key);
        QTRY_VERIFY_WITH_TIMEOUT(typist.gotAttached(), 10000);
        QVERIFY(waitFor(always, "$ ") >= 0);

        if (program == QLatin1String("prompt")) {
            typist.sendInput("seq -f 'output line %g, long enough to wrap at fifty columns or fewer' 1 60\r");
            QVERIFY(waitFor(always, "line 60, long enough") >= 0);
            typist.sendInput("printf '\\033[1;32mgreen\\033[0m plain\\n'\r");
            QVERIFY(waitFor(always, "plain\r\n") >= 0);
        } else {
            typist.sendInput("exec vim -u NONE -i NONE -N -c 'set laststatus=2 ruler' long.txt\r");
            QVERIFY(waitFor(always, "\x1b[?1049h") >= 0);
            QVERIFY(waitFor(always, "line 20 of a text") >= 0);
        }
        QVERIFY(waitQuiet(always));
        QCOMPARE(s->cols(), 80);

        // The late viewer: a control attach at its own size, no resume.
        WsClient late;
        late.open(f.port, path + QStringLiteral("?cols=%1&rows=%2").arg(cols).arg(rows), f.key);
        QTRY_VERIFY_WITH_TIMEOUT(late.gotAttached(), 10000);
        QCOMPARE(late.attachedMsg.value(QStringLiteral("cols")).toInt(), cols);
        QCOMPARE(late.attachedMsg.value(QStringLiteral("rows")).toInt(), rows);
        QCOMPARE(late.attachedMsg.value(QStringLiteral("reset")).toBool(), true);
        QCOMPARE(s->cols(), cols);
        QCOMPARE(s->rows(), rows);
        const quint64 at = quint64(late.num("offset"));
        // The snapshot at the new size, at the end of the stream, although
        // nothing was dropped from the buffer.
        QCOMPARE(s->buffer().startOffset(), quint64(0));
        QCOMPARE(late.num("snapshot_at"), qint64(at));
        QVERIFY(late.num("snapshot_bytes") > 0);
        QTRY_COMPARE_WITH_TIMEOUT(typist.closeCode, 4409, 10000);
        QTRY_VERIFY_WITH_TIMEOUT(quint64(late.bytes.size()) >= replayEnd(late), 10000);
        QTRY_VERIFY_WITH_TIMEOUT(quint64(always.bytes.size()) >= at, 10000);
        // The never-detached viewer's `size` (sent before the late viewer's
        // `attached`, but on its own socket: it may be read later).
        QTRY_COMPARE_WITH_TIMEOUT(always.textsOfType(QStringLiteral("size")).size(), 1, 10000);

        // 1. At the offset of the attach: the never-detached viewer's
        // terminal, resized there, against the late viewer's replay.
        {
            Fidelity::ViewerTerminal ref(always, false), got(late, true);
            ref.pump(at);
            ref.pumpTexts(); // the `size` message at that offset
            QCOMPARE(ref.fed(), at);
            QCOMPARE(ref.vt->cols(), cols);
            QCOMPARE(ref.vt->rows(), rows);
            got.pump(replayEnd(late));
            int cells = 0;
            const QString diff = Fidelity::screensDiff(ref, got, &cells);
            QVERIFY2(diff.isEmpty(), qPrintable(QStringLiteral("%1 cells differ at offset %2:\n%3\n--- reference:\n%4")
                                                    .arg(cells).arg(at).arg(diff, ref.vt->text())));
        }
        if (cols < 80) {
            // What the raw replay alone shows (the snapshot cut out) is not
            // that screen: the snapshot is what makes it right. (Larger, a
            // program that repaints the whole screen comes out the same.)
            Fidelity::ViewerTerminal ref(always, false);
            ref.pump(at);
            ref.pumpTexts();
            TestUtil::VtRender raw(cols, rows);
            raw.feed(late.bytes.left(int(late.num("prelude_bytes"))) + late.stream().left(int(at - quint64(late.num("replay_from")))));
            QVERIFY(ref.vt->differingCells(raw) > 0);
        }

        // 2. The program learnt the size (SIGWINCH) and redrew: both
        // viewers agree once it is quiet again, at the same offset.
        if (program == QLatin1String("prompt")) {
            late.sendInput("stty size\r");
            QVERIFY2(waitFor(late, QStringLiteral("\r%1 %2\r\n").arg(rows).arg(cols).toLatin1()) >= 0,
                     late.bytes.right(300).toPercentEncoding(" $").constData());
        } else {
            // vim redraws for the new size: its ruler and the status line.
            QVERIFY(waitQuiet(late));
        }
        QVERIFY(waitQuiet(always));
        QTRY_COMPARE_WITH_TIMEOUT(quint64(always.bytes.size()), lateOffset(late), 10000);
        {
            Fidelity::ViewerTerminal ref(always, false), got(late, true);
            ref.pump(std::numeric_limits<quint64>::max());
            got.pump(std::numeric_limits<quint64>::max());
            // The program drew itself at the new size: vim's status line
            // (the file's name) on the row above its command line.
            const QString shown = ref.vt->text();
            if (program == QLatin1String("vim"))
                QVERIFY2(shown.section(QLatin1Char('\n'), rows - 2, rows - 2).contains(QStringLiteral("long.txt")), qPrintable(shown));
            int cells = 0;
            const QString diff = Fidelity::screensDiff(ref, got, &cells);
            QVERIFY2(diff.isEmpty(), qPrintable(QStringLiteral("after the redraw, %1 cells differ:\n%2\n--- reference:\n%3")
                                                    .arg(cells).arg(diff, shown)));
        }
        QVERIFY(f.registry->kill(s->id()));
    }

    /**
     * Issue 29, the corpus's size rows (fidelity-corpus.json "size_rows"):
     * a program left the scroll margins at `1;24` (the whole screen at 24
     * rows: vim does) and the shell printed 300 lines after it; a viewer
     * that reattaches at another size must have every one of them in its
     * screen or its scrollback, in the raw replay and in `replay=screen`.
     * The late viewer keeps its scrollback as tmux does (only lines scrolled
     * off the whole screen: the strictest viewer, tst_fidelitycli's).
     */
    void reattachAtAnotherSizeKeepsEveryLine_data()
    {
        QTest::addColumn<QJsonObject>("row");
        QTest::addColumn<QString>("replay");
        QTest::addColumn<int>("cols");
        QTest::addColumn<int>("rows");
        const QJsonArray rows = Fidelity::sizeRows();
        QVERIFY2(!rows.isEmpty(), "tests/vectors/fidelity-corpus.json: size_rows");
        for (const QJsonValue &v : rows) {
            const QJsonObject row = v.toObject();
            QCOMPARE(row.value(QStringLiteral("check")).toString(), QStringLiteral("lines"));
            for (const QJsonValue &l : row.value(QStringLiteral("late")).toArray()) {
                const int cols = l.toObject().value(QStringLiteral("cols")).toInt();
                const int rows = l.toObject().value(QStringLiteral("rows")).toInt();
                for (const QString &replay : {QStringLiteral("raw"), QStringLiteral("screen")})
                    QTest::addRow("%s, %dx%d, %s", qPrintable(row.value(QStringLiteral("name")).toString()), cols, rows,
                                  qPrintable(replay))
                        << row << replay << cols << rows;
            }
        }
    }
    void reattachAtAnotherSizeKeepsEveryLine()
    {
        QFETCH(QJsonObject, row);
        QFETCH(QString, replay);
        QFETCH(int, cols);
        QFETCH(int, rows);
        QString error;
        Session *s = f.registry->create(Fidelity::spawnOptions(row, m_home.path(), m_home.path()), nullptr, &error);
        QVERIFY2(s, qPrintable(error));
        const QString path = QStringLiteral("/ws/") + s->id();
        WsClient typist;
        typist.open(f.port, path, f.key);
        QTRY_VERIFY_WITH_TIMEOUT(typist.gotAttached(), 10000);
        QVERIFY(waitFor(typist, "$ ") >= 0);
        typist.sendInput(row.value(QStringLiteral("type")).toString().toUtf8());
        const qsizetype last = waitFor(typist, row.value(QStringLiteral("until")).toString().toUtf8());
        QVERIFY(last >= 0);
        QVERIFY(waitFor(typist, "$ ", last) >= 0);
        QVERIFY(waitQuiet(typist));

        WsClient late;
        QString query = QStringLiteral("?cols=%1&rows=%2").arg(cols).arg(rows);
        if (replay == QLatin1String("screen"))
            query += QStringLiteral("&replay=screen&lines=1000");
        late.open(f.port, path + query, f.key);
        QTRY_VERIFY_WITH_TIMEOUT(late.gotAttached(), 10000);
        QCOMPARE(late.attachedMsg.value(QStringLiteral("replay_mode")).toString(), replay);
        QCOMPARE(late.attachedMsg.value(QStringLiteral("rows")).toInt(), rows);
        QTRY_VERIFY_WITH_TIMEOUT(quint64(late.bytes.size()) >= replayEnd(late), 10000);
        Fidelity::ViewerTerminal got(late, true);
        got.vt->keepScrollback(true);
        got.pump(replayEnd(late));
        got.pumpTexts();
        QStringList lines = got.vt->scrollback();
        for (int r = 0; r < got.vt->rows(); ++r)
            lines << got.vt->rowText(r);
        const QStringList missing = Fidelity::missingLines(row, lines);
        QVERIFY2(missing.isEmpty(), qPrintable(QStringLiteral("lines missing from screen + scrollback: %1\n--- screen:\n%2")
                                                   .arg(missing.join(QLatin1Char(' ')), got.vt->text())));
        QVERIFY(f.registry->kill(s->id()));
    }
};

QTEST_MAIN(TestFidelitySize)
#include "tst_fidelitysize.moc"
