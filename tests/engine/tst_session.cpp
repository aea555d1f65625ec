// SPDX-License-Identifier: GPL-2.0-or-later
// Session: output into the ring, attach/replay rules, supersede, watchers,
// backpressure, exit ordering, kill. Real /bin/sh in a real PTY.
#include "procinfo.h"
#include "recordingviewer.h"
#include "screen.h"
#include "session.h"
#include "terminalstate.h"
#include "testutil.h"
#include "vtrender.h"

#include <QCoreApplication>
#include <QDeadlineTimer>
#include <QElapsedTimer>
#include <QLoggingCategory>
#include <QThread>
#include <QSignalSpy>
#include <QTest>

#include <functional>

using namespace Tether;
using TestUtil::RecordingViewer;

class TestSession : public QObject
{
    Q_OBJECT

    static SpawnOptions sh(const QString &script) { return TestUtil::shell(script); }

    static QByteArray ringContent(const Session &s)
    {
        QByteArray out(int(s.buffer().size()), '\0');
        s.buffer().read(s.buffer().startOffset(), out.data(), out.size());
        return out;
    }

    /// What the screen looked like around one attach made from inside the
    /// session's outputArrived, at the first output for which `when` holds.
    struct AttachInside {
        bool done = false;
        quint64 screenBefore = 0, screenAfter = 0;
        quint64 outrunsBefore = 0, outrunsAfter = 0;
        RecordingViewer viewer;
        QByteArray ring; ///< the ring's bytes right after the attach
    };
    static void attachInside(Session &s, AttachInside &a, const std::function<bool()> &when)
    {
        QObject::connect(&s, &Session::outputArrived, &s, [&s, &a, when] {
            if (a.done || !when())
                return;
            a.done = true;
            a.screenBefore = s.screenOffset();
            a.outrunsBefore = s.screenOutruns();
            s.attach(&a.viewer, ViewerMode::Watch, std::nullopt);
            a.screenAfter = s.screenOffset();
            a.outrunsAfter = s.screenOutruns();
            a.ring = ringContent(s);
            s.detach(&a.viewer);
        });
    }

private Q_SLOTS:
    void initTestCase() { qRegisterMetaType<Tether::ExitStatus>(); }

    void outputDrainsWithoutViewer()
    {
        Session s(QStringLiteral("a"), sh(QStringLiteral("echo hello; exit 0")), 65536);
        QString err;
        QVERIFY2(s.start(&err), qPrintable(err));
        QSignalSpy exited(&s, &Session::exited);
        QVERIFY(exited.wait(10000));
        QVERIFY(ringContent(s).contains("hello"));
        QCOMPARE(s.state(), Session::State::Exited);
        QCOMPARE(s.exitStatus().code, 0);
        QVERIFY(!s.detachedSince().isNull());
    }

    void attachReplayRules()
    {
        // printf without a trailing newline then wait: the output is fixed.
        Session s(QStringLiteral("b"), sh(QStringLiteral("printf 'one\\ntwo\\n'; exec sleep 30")), 65536);
        QString err;
        QVERIFY(s.start(&err));
        QTRY_VERIFY(ringContent(s).contains("two\r\n"));
        const quint64 end = s.offset();

        RecordingViewer initial;
        s.attach(&initial, ViewerMode::Watch, std::nullopt);
        QCOMPARE(initial.attachInfos.size(), 1);
        AttachInfo i = initial.attachInfos.first();
        QVERIFY(i.reset);
        QCOMPARE(i.reason, ReplayReason::Initial);
        QCOMPARE(i.replayFrom, quint64(0));
        QCOMPARE(i.offset, end);
        QCOMPARE(quint64(i.replayBytes), end);
        QCOMPARE(i.preludeBytes, qsizetype(0));
        QCOMPARE(initial.received, ringContent(s));

        RecordingViewer atEnd;
        s.attach(&atEnd, ViewerMode::Watch, end);
        i = atEnd.attachInfos.first();
        QVERIFY(!i.reset);
        QCOMPARE(i.reason, ReplayReason::Resume);
        QCOMPARE(i.replayBytes, qsizetype(0));
        QCOMPARE(atEnd.received, QByteArray());

        RecordingViewer inside;
        s.attach(&inside, ViewerMode::Watch, 5);
        i = inside.attachInfos.first();
        QVERIFY(!i.reset);
        QCOMPARE(i.reason, ReplayReason::Resume);
        QCOMPARE(i.replayFrom, quint64(5));
        QCOMPARE(quint64(i.replayBytes), end - 5);
        QCOMPARE(inside.received, ringContent(s).mid(5));

        RecordingViewer ahead;
        s.attach(&ahead, ViewerMode::Watch, end + 100);
        i = ahead.attachInfos.first();
        QVERIFY(i.reset);
        QCOMPARE(i.reason, ReplayReason::Ahead);
        QCOMPARE(i.replayFrom, quint64(0));
        QCOMPARE(ahead.received, ringContent(s));

        for (auto *v : {&initial, &atEnd, &inside, &ahead})
            s.detach(v);
        s.kill();
        QTRY_VERIFY_WITH_TIMEOUT(s.isTornDown(), 10000);
    }

    void rolledOutReplayStartsAtSafeBoundaryWithModes()
    {
        // Enter the alternate screen and bracketed paste, then print far more
        // than the 4 KiB ring holds, made of escape sequences and multibyte
        // characters, so the retained start falls inside one of them.
        const QString script = QStringLiteral(
            "printf '\\033[?1049h\\033[?2004h'; i=0; while [ $i -lt 400 ]; do "
            "printf '\\033[1;31m\\342\\202\\254x\\033]0;t%d\\007\\n' $i; i=$((i+1)); done; exec sleep 30");
        Session s(QStringLiteral("c"), sh(script), 4096);
        RecordingViewer full; // watches from the start: sees the whole stream
        s.attach(&full, ViewerMode::Watch, std::nullopt);
        QString err;
        QVERIFY(s.start(&err));
        QTRY_VERIFY(full.received.contains("t399\a"));
        QVERIFY(s.buffer().startOffset() > 0);

        RecordingViewer late;
        s.attach(&late, ViewerMode::Control, 0); // offset 0 has rolled out
        const AttachInfo i = late.attachInfos.first();
        QVERIFY(i.reset);
        QCOMPARE(i.reason, ReplayReason::RolledOut);
        QVERIFY(i.replayFrom >= s.buffer().startOffset());
        // The first replayed byte is at a safe boundary of the real stream...
        TerminalState st;
        st.feed(full.received.constData(), qsizetype(i.replayFrom));
        QVERIFY(st.atSafeBoundary());
        // ...and the prelude restores exactly the modes in force there.
        const QByteArray prelude = late.received.left(int(i.preludeBytes));
        QCOMPARE(prelude, st.restoreSequence());
        QVERIFY(prelude.contains("\x1b[?1049h"));
        QVERIFY(prelude.contains("\x1b[?2004h"));
        // Then the stream as it was (with the snapshot, if the screen is
        // synced, cut out: since a scroll of the whole alternate screen
        // counts as rewriting it, the screen may be synced here).
        QCOMPARE(withoutSnapshot(late).mid(int(i.preludeBytes)), full.received.mid(int(i.replayFrom)));
        QCOMPARE(s.title(), QStringLiteral("t399"));
        s.detach(&full);
        s.detach(&late);
        s.kill();
        QTRY_VERIFY_WITH_TIMEOUT(s.isTornDown(), 10000);
    }

    void boundaryScanIsBounded()
    {
        // A stream stuck inside an unterminated DCS string: no safe byte in the
        // retained 1.5 MiB (more than the bounded boundary scan looks at). The
        // replay must not start inside the string: it is empty.
        Session s(QStringLiteral("dcs"),
                  sh(QStringLiteral("printf '\\033P'; head -c 3000000 /dev/zero | tr '\\0' x; exec sleep 30")),
                  1536 * 1024);
        QString err;
        QVERIFY(s.start(&err));
        QTRY_VERIFY2_WITH_TIMEOUT(s.offset() >= 3000002, qPrintable(QString::number(s.offset())), 20000);
        RecordingViewer v;
        s.attach(&v, ViewerMode::Watch, std::nullopt);
        const AttachInfo i = v.attachInfos.first();
        QVERIFY(i.reset);
        QCOMPARE(i.replayFrom, s.offset());
        QCOMPARE(i.replayBytes, qsizetype(0));
        QVERIFY(v.received.isEmpty());
        s.detach(&v);
        s.kill();
        QTRY_VERIFY_WITH_TIMEOUT(s.isTornDown(), 10000);
    }

    void supersedeAndWatchers()
    {
        Session s(QStringLiteral("d"), sh(QStringLiteral("exec cat")), 65536);
        QString err;
        QVERIFY(s.start(&err));
        RecordingViewer a, b, w1, w2;
        QSignalSpy viewers(&s, &Session::viewersChanged);
        s.attach(&a, ViewerMode::Control, std::nullopt);
        s.attach(&w1, ViewerMode::Watch, std::nullopt);
        s.attach(&w2, ViewerMode::Watch, std::nullopt);
        QCOMPARE(s.controlViewer(), &a);
        QCOMPARE(s.viewerCount(), 3);
        QVERIFY(s.detachedSince().isNull());

        // Watchers' input is ignored.
        QVERIFY(s.sendInput(&w1, QByteArrayLiteral("watcher\n")));
        QVERIFY(s.sendInput(&a, QByteArrayLiteral("control\n")));
        QTRY_VERIFY(w2.received.contains("control"));
        QVERIFY(!a.received.contains("watcher"));
        // Only the control viewer resizes.
        QVERIFY(!s.resize(&w1, 100, 30));
        QVERIFY(!s.resize(&a, 0, 30));
        QVERIFY(!s.resize(&a, 80, 1001));
        QVERIFY(s.resize(&a, 100, 30));
        QCOMPARE(s.cols(), 100);
        QCOMPARE(w1.sizes.last(), qMakePair(100, 30));

        s.attach(&b, ViewerMode::Control, s.offset());
        QCOMPARE(a.detachReasons, QList<DetachReason>{DetachReason::Superseded});
        QCOMPARE(s.controlViewer(), &b);
        QVERIFY(w1.detachReasons.isEmpty());
        QVERIFY(w2.detachReasons.isEmpty());
        QCOMPARE(s.viewerCount(), 3);

        s.detach(&b);
        s.detach(&w1);
        s.detach(&w2);
        QVERIFY(!s.detachedSince().isNull());
        QVERIFY(viewers.count() >= 5);
        s.kill();
        QTRY_VERIFY_WITH_TIMEOUT(s.isTornDown(), 10000);
    }

    void controlBackpressurePausesReads()
    {
        Session s(QStringLiteral("e"), sh(QStringLiteral("exec sleep 30")), 65536);
        QString err;
        QVERIFY(s.start(&err));
        RecordingViewer c, w;
        s.attach(&c, ViewerMode::Control, std::nullopt);
        s.attach(&w, ViewerMode::Watch, std::nullopt);
        s.setViewerBlocked(&w, true);
        QVERIFY(s.process()->isReadEnabled());
        s.setViewerBlocked(&c, true);
        QVERIFY(!s.process()->isReadEnabled());
        s.setViewerBlocked(&c, false);
        QVERIFY(s.process()->isReadEnabled());
        s.setViewerBlocked(&c, true);
        s.detach(&c); // the blocked control viewer leaves: drain at full speed
        QVERIFY(s.process()->isReadEnabled());
        s.detach(&w);
        s.kill();
        QTRY_VERIFY_WITH_TIMEOUT(s.isTornDown(), 10000);
    }

    /// Numbers "N\r\n" in `stream` after its first line break run on by
    /// one each (seq's output from anywhere); returns how many, 0 when not.
    static int consecutiveFrom(const QByteArray &stream)
    {
        const QList<QByteArray> lines = stream.mid(stream.indexOf('\n') + 1).split('\n');
        qint64 expected = -1;
        int n = 0;
        for (int i = 0; i + 1 < lines.size(); ++i) { // the last piece may be partial
            const qint64 v = lines.at(i).trimmed().toLongLong();
            if (expected >= 0 && v != expected) {
                qWarning("line %d is \"%s\", expected %lld", i, lines.at(i).constData(), expected);
                return 0;
            }
            expected = v + 1;
            ++n;
        }
        return n;
    }

    void outputHoldKeepsTheResumingViewersBytes()
    {
        // A restart in place closed the control viewer of a flood; it comes
        // back with resume=H. Meanwhile the session reads only what fits in
        // the ring without evicting H (the program blocks), so the resume
        // finds H retained; the viewer's return ends the hold. Without it
        // the flood rolled H out of the 64 KiB ring at once.
        Session s(QStringLiteral("hold"), sh(QStringLiteral("exec seq 1 100000000")), 65536);
        QString err;
        QVERIFY2(s.start(&err), qPrintable(err));
        QTRY_VERIFY(s.buffer().startOffset() > 0); // flooding, rolled over
        QVERIFY(!s.outputHold());
        const quint64 held = s.offset() - 1000; // the viewer is 1000 bytes behind
        s.holdOutput(held);
        QCOMPARE(s.outputHold(), std::optional<quint64>(held));
        s.advanceOutputHold(held - 10); // never back
        QCOMPARE(s.outputHold(), std::optional<quint64>(held));
        // Reads stop where the next byte would evict `held`: there, the
        // PTY is not read at all (no read, no notifier), so the offset
        // stays; a state, not a wait.
        QTRY_COMPARE(s.offset(), held + 65536);
        QVERIFY(!s.process()->isReadEnabled() || s.process()->readLimit() == 0);
        QCOMPARE(s.buffer().startOffset(), held);
        // A watcher does not end the hold.
        RecordingViewer w;
        s.attach(&w, ViewerMode::Watch, s.offset());
        QVERIFY(s.outputHold());
        s.detach(&w);

        RecordingViewer v;
        s.attach(&v, ViewerMode::Control, held);
        QCOMPARE(v.attachInfos.first().reason, ReplayReason::Resume);
        QCOMPARE(v.attachInfos.first().replayFrom, held);
        QVERIFY(!s.outputHold());
        // Flowing again, at the control viewer's pace: every line once.
        QTRY_VERIFY(s.offset() > held + 300000);
        s.detach(&v);
        QVERIFY(consecutiveFrom(v.received) > 30000);
        s.kill();
        QTRY_VERIFY_WITH_TIMEOUT(s.isTornDown(), 10000);
    }

    void outputHoldEndsAfterItsGrace()
    {
        // The viewer never comes back: the program is blocked for
        // kOutputHoldGraceMs at most, then output drains again.
        Session s(QStringLiteral("grace"), sh(QStringLiteral("exec seq 1 100000000")), 65536);
        QString err;
        QVERIFY2(s.start(&err), qPrintable(err));
        QTRY_VERIFY(s.offset() > 0);
        const quint64 held = s.offset();
        QElapsedTimer clock;
        clock.start();
        s.holdOutput(held);
        QTRY_COMPARE(s.offset(), held + 65536);
        QVERIFY(s.outputHold());
        // For as long as the hold lasts, nothing more is read: the program
        // is blocked on its full PTY. Checked at every turn of the event
        // loop until the hold ends by itself.
        QDeadlineTimer deadline(Session::kOutputHoldGraceMs + 10000);
        while (s.outputHold() && !deadline.hasExpired()) {
            QCOMPARE(s.offset(), held + 65536);
            QTest::qWait(20);
        }
        QVERIFY(!s.outputHold());
        // Not before its grace (load can only make the end later).
        QVERIFY(clock.elapsed() >= Session::kOutputHoldGraceMs);
        QTRY_VERIFY_WITH_TIMEOUT(s.offset() > held + 1024 * 1024, 10000);
        QCOMPARE(s.process()->readLimit(), qsizetype(-1));
        s.kill();
        QTRY_VERIFY_WITH_TIMEOUT(s.isTornDown(), 10000);
    }

    void outputHoldLetsAQuietSessionRun()
    {
        // Output that fits in the ring is read as usual while held: an
        // interactive program is not slowed by a restart's hold.
        Session s(QStringLiteral("quiet"), sh(QStringLiteral("while read l; do echo \"got:$l\"; done")), 65536);
        QString err;
        QVERIFY2(s.start(&err), qPrintable(err));
        s.holdOutput(s.offset());
        RecordingViewer w;
        s.attach(&w, ViewerMode::Watch, s.offset());
        QVERIFY(s.process()->write(QByteArray("one\n")));
        QTRY_VERIFY(w.received.contains("got:one"));
        QVERIFY(s.outputHold());
        s.detach(&w);
        s.kill(); // ends the hold too
        QVERIFY(!s.outputHold());
        QTRY_VERIFY_WITH_TIMEOUT(s.isTornDown(), 10000);
    }

    void exitAfterAllOutputAndAttachAfterExit()
    {
        Session s(QStringLiteral("f"),
                  sh(QStringLiteral("head -c 300000 /dev/zero | tr '\\0' y; exit 7")), 1 << 20);
        RecordingViewer v;
        s.attach(&v, ViewerMode::Control, std::nullopt);
        QString err;
        QVERIFY(s.start(&err));
        QTRY_COMPARE_WITH_TIMEOUT(v.exitedCount, 1, 20000);
        QCOMPARE(v.received.count('y'), 300000);
        QCOMPARE(v.bytesAtExit, v.received.size());
        QCOMPARE(v.exitStatus.code, 7);
        QVERIFY(!v.exitStatus.signaled);

        RecordingViewer late;
        s.attach(&late, ViewerMode::Watch, std::nullopt);
        QVERIFY(late.attachInfos.first().exited);
        QCOMPARE(late.exitedCount, 1);
        QCOMPARE(late.bytesAtExit, late.received.size());
        QCOMPARE(late.received.count('y'), 300000);
        s.detach(&v);
        s.detach(&late);
    }

    void killDetachesEveryViewer()
    {
        Session s(QStringLiteral("g"), sh(QStringLiteral("exec sleep 30")), 65536);
        QString err;
        QVERIFY(s.start(&err));
        const pid_t pid = s.pid();
        RecordingViewer c, w;
        s.attach(&c, ViewerMode::Control, std::nullopt);
        s.attach(&w, ViewerMode::Watch, std::nullopt);
        QSignalSpy torn(&s, &Session::tornDown);
        s.kill(DetachReason::Shutdown);
        QCOMPARE(c.detachReasons, QList<DetachReason>{DetachReason::Shutdown});
        QCOMPARE(w.detachReasons, QList<DetachReason>{DetachReason::Shutdown});
        QCOMPARE(s.viewerCount(), 0);
        QTRY_COMPARE_WITH_TIMEOUT(torn.count(), 1, 10000);
        QVERIFY(TestUtil::processState(pid) == 0 || TestUtil::processState(pid) == 'Z');
        QCOMPARE(TestUtil::zombieChildren(), 0);
    }

    void titleFromOsc()
    {
        Session s(QStringLiteral("h"), sh(QStringLiteral("printf '\\033]2;build \\342\\234\\223\\007'; exec sleep 30")), 65536);
        RecordingViewer v;
        s.attach(&v, ViewerMode::Watch, std::nullopt);
        QSignalSpy titles(&s, &Session::titleChanged);
        QString err;
        QVERIFY(s.start(&err));
        QTRY_COMPARE(titles.count(), 1);
        QCOMPARE(s.title(), QString::fromUtf8("build \xe2\x9c\x93"));
        QCOMPARE(v.titles, QStringList{s.title()});
        s.detach(&v);
        s.kill();
        QTRY_VERIFY_WITH_TIMEOUT(s.isTornDown(), 10000);
    }

    void resizeResetsMarginsInReplay()
    {
        // vim sets scroll margins for its size; the window grows; terminals
        // reset margins on resize, the bytes do not say so. Every viewer gets
        // a fixup at that point of the stream, live and in any replay.
        Session s(QStringLiteral("m"), sh(QStringLiteral("printf 'top\\033[1;20rmid'; read x; printf 'end'; exec sleep 30")),
                  65536);
        RecordingViewer v;
        s.attach(&v, ViewerMode::Control, std::nullopt);
        QString err;
        QVERIFY2(s.start(&err), qPrintable(err));
        QTRY_VERIFY(v.received.endsWith("mid"));
        const quint64 resetAt = s.offset();
        QVERIFY(s.resize(&v, s.cols(), s.rows())); // the same size: no SIGWINCH, nothing reset
        QVERIFY(v.fixups.isEmpty());
        QVERIFY(s.resize(&v, 100, 30));
        QCOMPARE(v.fixups, QList<QByteArray>{TerminalState::marginResetSequence()});
        QCOMPARE(v.fixupAt, QList<qsizetype>{v.received.size()});
        QVERIFY(s.resize(&v, 90, 30)); // margins already reset: nothing more to fix
        QCOMPARE(v.fixups.size(), 1);
        QVERIFY(s.sendInput(&v, QByteArrayLiteral("\n")));
        QTRY_VERIFY(v.received.endsWith("end"));

        // A fresh viewer: the fixup sits right after "mid", before "end".
        RecordingViewer w;
        s.attach(&w, ViewerMode::Watch, std::nullopt);
        QCOMPARE(w.received, ringContent(s));
        QCOMPARE(w.fixupAt.size(), 1);
        QVERIFY(w.received.left(int(w.fixupAt.first())).endsWith("top\x1b[1;20rmid"));
        QVERIFY(w.received.mid(int(w.fixupAt.first())).endsWith("end"));
        // A viewer resuming exactly there gets it first (it may have been away).
        RecordingViewer r;
        s.attach(&r, ViewerMode::Watch, resetAt);
        QCOMPARE(r.fixupAt, QList<qsizetype>{0});
        // One resuming after it gets none.
        RecordingViewer late;
        s.attach(&late, ViewerMode::Watch, s.offset());
        QVERIFY(late.fixups.isEmpty());
        for (RecordingViewer *x : {&v, &w, &r, &late})
            s.detach(x);
        s.kill();
        QTRY_VERIFY_WITH_TIMEOUT(s.isTornDown(), 10000);
    }

    void rolledOutReplayRestoresMarginsAndModes()
    {
        // A program scrolling in rows 3..20, inserting, without autowrap,
        // keypad on; the ring rolls over. The reset replay's prelude puts the
        // terminal back into all of that before the first replayed byte.
        const QString loop = QStringLiteral("i=0; while [ $i -lt 1500 ]; do echo \"line $i\"; i=$((i+1)); done; ");
        Session s(QStringLiteral("r1"), sh(QStringLiteral("printf '\\033[3;20r\\033[4h\\033[?7l\\033='; ") + loop
                                           + QStringLiteral("printf DONE; exec sleep 30")), 4096);
        QString err;
        QVERIFY2(s.start(&err), qPrintable(err));
        QTRY_VERIFY_WITH_TIMEOUT(ringContent(s).endsWith("DONE"), 10000);
        QVERIFY(s.buffer().startOffset() > 0);
        RecordingViewer w;
        s.attach(&w, ViewerMode::Watch, std::nullopt);
        QCOMPARE(w.attachInfos.size(), 1);
        const QByteArray prelude = w.received.left(int(w.attachInfos.first().preludeBytes));
        QCOMPARE(prelude, QByteArray("\x1b[?7l\x1b[4h\x1b=\x1b[3;20r\x1b[20;1H"));
        // On the normal screen the replay starts at a line, not in the
        // middle of one whose beginning is gone.
        QVERIFY2(w.received.mid(prelude.size()).startsWith("line "), w.received.mid(prelude.size(), 20).constData());
        s.detach(&w);

        // Margins set, then a resize reset them, then the ring rolled past
        // that point: the prelude must not bring the old margins back.
        Session t(QStringLiteral("r2"), sh(QStringLiteral("printf '\\033[3;20rset'; read x; ") + loop
                                           + QStringLiteral("printf DONE; exec sleep 30")), 4096);
        RecordingViewer v;
        t.attach(&v, ViewerMode::Control, std::nullopt);
        QVERIFY2(t.start(&err), qPrintable(err));
        QTRY_VERIFY(v.received.endsWith("set"));
        QVERIFY(t.resize(&v, 100, 30));
        QVERIFY(t.sendInput(&v, QByteArrayLiteral("\n")));
        QTRY_VERIFY_WITH_TIMEOUT(ringContent(t).endsWith("DONE"), 10000);
        QVERIFY(t.buffer().startOffset() > 10);
        RecordingViewer x;
        t.attach(&x, ViewerMode::Watch, std::nullopt);
        const QByteArray prelude2 = x.received.left(int(x.attachInfos.first().preludeBytes));
        QVERIFY2(!prelude2.contains("r"), prelude2.constData());
        QVERIFY(x.fixups.isEmpty()); // the reset was before the replay: nothing to fix
        t.detach(&v);
        t.detach(&x);
        s.kill();
        t.kill();
        QTRY_VERIFY_WITH_TIMEOUT(s.isTornDown() && t.isTornDown(), 10000);
    }

    void foregroundFollowsTheJobInFront()
    {
        // An interactive shell with job control runs each command in its own
        // process group and hands it the terminal (tcsetpgrp): the session's
        // foreground is the shell, then the command, then the shell again.
        SpawnOptions o;
        o.argv = QStringList{QStringLiteral("/bin/bash"), QStringLiteral("--norc"), QStringLiteral("--noprofile"),
                             QStringLiteral("-i")};
        o.extraEnv = QStringList{QStringLiteral("PS1=ready> ")};
        Session s(QStringLiteral("fg"), o, 65536);
        RecordingViewer v;
        s.attach(&v, ViewerMode::Control, std::nullopt);
        QString err;
        QVERIFY2(s.start(&err), qPrintable(err));
        QTRY_VERIFY_WITH_TIMEOUT(ringContent(s).contains("ready> "), 10000);
        QCOMPARE(s.foregroundProcessGroup(), s.pid());
        QCOMPARE(processName(s.foregroundProcessGroup()), QStringLiteral("bash"));

        QVERIFY(s.sendInput(&v, QByteArrayLiteral("sleep 300\n")));
        QTRY_COMPARE_WITH_TIMEOUT(processName(s.foregroundProcessGroup()), QStringLiteral("sleep"), 10000);
        QVERIFY(s.foregroundProcessGroup() != s.pid());

        QVERIFY(s.sendInput(&v, QByteArrayLiteral("\x03"))); // Ctrl-C: SIGINT to the foreground job
        QTRY_COMPARE_WITH_TIMEOUT(s.foregroundProcessGroup(), s.pid(), 10000);

        QVERIFY(s.sendInput(&v, QByteArrayLiteral("exit\n")));
        QTRY_COMPARE_WITH_TIMEOUT(s.state(), Session::State::Exited, 10000);
        QCOMPARE(s.foregroundProcessGroup(), pid_t(-1));
        s.detach(&v);
        QTRY_VERIFY_WITH_TIMEOUT(s.isTornDown(), 10000);
        QCOMPARE(processName(-1), QString());
    }

    // --- the server-side screen -------------------------------------------

    /// Empty when `reference` and `other`, rendered in 80×24 terminals,
    /// show the same screen; else what differs.
    static QString screenDiff(const QByteArray &reference, const QByteArray &other)
    {
        TestUtil::VtRender ref(80, 24), got(80, 24);
        ref.feed(reference);
        got.feed(other);
        return got.diff(ref);
    }

    /// Attaches a late watch viewer (a reset replay) and compares its screen
    /// with `always`'s, then again after both got `then`; empty when equal
    /// and the replay had a snapshot. Detaches it.
    static QString lateViewerDiff(Session &s, const RecordingViewer &always, const QByteArray &then = QByteArray())
    {
        RecordingViewer late;
        s.attach(&late, ViewerMode::Watch, std::nullopt);
        QString d = late.attachInfos.first().snapshotAt ? QString() : QStringLiteral("no snapshot");
        if (d.isEmpty())
            d = screenDiff(always.received, late.received);
        if (d.isEmpty() && !then.isEmpty())
            d = screenDiff(always.received + then, late.received + then);
        s.detach(&late);
        return d;
    }

    /// Runs `script` in a session with a 64 KiB ring, watched from the
    /// start, until it printed "fin" and the screen parsed it all; a flood
    /// must have outrun the screen, `gone` (if any) left the ring, and the
    /// screen be synced again; then lateViewerDiff(`then`). Empty when all
    /// that held, else what did not. Tears the session down.
    static QString floodThenLateViewer(const QString &script, const QByteArray &gone = QByteArray(),
                                       const QByteArray &then = QByteArray())
    {
        Session s(QStringLiteral("flood"), sh(script), 65536);
        QString err;
        if (!s.start(&err))
            return err;
        RecordingViewer always;
        s.attach(&always, ViewerMode::Watch, std::nullopt);
        QString d;
        if (!settle(s, "fin", 60000))
            d = QStringLiteral("no fin, or the screen did not catch up");
        else if (s.screenOutruns() == 0)
            d = QStringLiteral("the flood never outran the screen");
        else if (!gone.isEmpty() && ringContent(s).contains(gone))
            d = QStringLiteral("still in the ring: ") + QString::fromUtf8(gone);
        else if (!s.screenSynced())
            d = QStringLiteral("the screen is not synced");
        else
            d = lateViewerDiff(s, always, then);
        if (!finish(s, {&always}))
            d += QStringLiteral(" (and no teardown)");
        return d;
    }

    /// Detaches `viewers`, kills the session and waits for its teardown.
    static bool finish(Session &s, std::initializer_list<Viewer *> viewers)
    {
        for (Viewer *v : viewers)
            s.detach(v);
        s.kill();
        return QTest::qWaitFor([&s] { return s.isTornDown(); }, 10000);
    }

    /// Waits until the session's output stops at a marker and its screen
    /// has parsed all of it.
    static bool settle(Session &s, const QByteArray &marker, int timeoutMs = 20000)
    {
        QElapsedTimer t;
        t.start();
        while (t.elapsed() < timeoutMs) {
            QTest::qWait(20);
            if (ringContent(s).contains(marker) && s.hasScreen() && s.screenOffset() == s.offset())
                return true;
        }
        return false;
    }

    /// The late viewer's stream with the snapshot cut out (what a raw replay
    /// would have sent), to show the snapshot is what makes it exact.
    static QByteArray withoutSnapshot(const RecordingViewer &v)
    {
        const AttachInfo &i = v.attachInfos.first();
        if (!i.snapshotAt)
            return v.received;
        const qsizetype at = i.preludeBytes + qsizetype(*i.snapshotAt - i.replayFrom);
        return v.received.left(at) + v.received.mid(at + i.snapshotBytes);
    }

    void screenIsLazy()
    {
        // A session whose output never reaches half the ring has no screen.
        Session s(QStringLiteral("lazy"), sh(QStringLiteral("printf 'small\\n'; exec sleep 30")), 65536);
        QString err;
        QVERIFY(s.start(&err));
        QTRY_VERIFY(ringContent(s).contains("small")); // all it writes (then it sleeps)
        QVERIFY(!s.hasScreen());
        QCOMPARE(s.screenBytes(), qsizetype(0));
        RecordingViewer v;
        s.attach(&v, ViewerMode::Watch, std::nullopt);
        QVERIFY(!v.attachInfos.first().snapshotAt); // nothing dropped: the raw replay is exact
        QVERIFY(!s.hasScreen());
        QVERIFY(finish(s, {&v}));
    }

    void detachedIdleScreenIsCompactedAndRebuiltExactly()
    {
        // Issue 27: the screen of a session no one watches is compacted
        // after the delay (Screen::compact()) and rebuilt on attach: the
        // late viewer gets the same bytes (snapshot with scrollback lines)
        // as from a twin session whose screen was never compacted.
        const QString script = QStringLiteral("seq 1 40000; printf '\\033[1;32mEND\\033[0m\\n$ '; exec sleep 30");
        Session compacted(QStringLiteral("compacted"), sh(script), 65536);
        Session twin(QStringLiteral("twin"), sh(script), 65536);
        compacted.setScreenCompactDelay(20);
        QCOMPARE(compacted.screenCompactDelay(), 20);
        QCOMPARE(twin.screenCompactDelay(), Session::kScreenCompactMs);
        QString err;
        QVERIFY(compacted.start(&err));
        QVERIFY(twin.start(&err));
        QVERIFY(settle(compacted, "END"));
        QVERIFY(settle(twin, "END"));
        QTRY_VERIFY_WITH_TIMEOUT(compacted.screenCompact(), 10000);
        QVERIFY(!twin.screenCompact());
        QVERIFY2(compacted.screenBytes() <= 16 * 1024 && compacted.screenBytes() * 10 < twin.screenBytes(),
                 qPrintable(QStringLiteral("%1 vs %2").arg(compacted.screenBytes()).arg(twin.screenBytes())));
        QCOMPARE(compacted.offset(), twin.offset());

        RecordingViewer late, lateTwin;
        compacted.attach(&late, ViewerMode::Watch, ReplayRequest{std::nullopt, true, 500});
        twin.attach(&lateTwin, ViewerMode::Watch, ReplayRequest{std::nullopt, true, 500});
        QVERIFY(!compacted.screenCompact()); // rebuilt for the snapshot
        QVERIFY(late.attachInfos.first().screenReplay);
        QCOMPARE(late.received, lateTwin.received);
        // Attached: not compacted however long it stays idle; detached
        // again: compacted again, and the default attach is the same too.
        compacted.detach(&late);
        QTRY_VERIFY_WITH_TIMEOUT(compacted.screenCompact(), 10000);
        RecordingViewer inPlace, inPlaceTwin;
        compacted.attach(&inPlace, ViewerMode::Watch, std::nullopt);
        twin.attach(&inPlaceTwin, ViewerMode::Watch, std::nullopt);
        QCOMPARE(inPlace.received, inPlaceTwin.received);
        QVERIFY(finish(compacted, {&inPlace}));
        QVERIFY(finish(twin, {&lateTwin, &inPlaceTwin}));
    }

    void oversizedTerminalKeepsNoScreen()
    {
        // Issue 27: a 1000x1000 terminal would make a 36 MB screen. Above
        // Session::kMaxScreenCells the session keeps none (reset replays are
        // raw); within the cap it keeps one.
        const QString script = QStringLiteral("seq 1 40000; printf 'END\\n'; read x; printf 'at the new size\\n'; exec sleep 30");
        Session s(QStringLiteral("big"), sh(script), 65536);
        QString err;
        QVERIFY(s.start(&err));
        QVERIFY(settle(s, "END"));
        QVERIFY(s.hasScreen());
        RecordingViewer v;
        s.attach(&v, ViewerMode::Control, std::nullopt);
        QVERIFY(!Session::screenFits(1000, 1000));
        QVERIFY(s.resize(&v, 1000, 1000));
        QVERIFY(s.sendInput(&v, "x\n", 2));
        QTRY_VERIFY_WITH_TIMEOUT(ringContent(s).contains("at the new size"), 10000);
        QTRY_VERIFY(!s.hasScreen());
        QCOMPARE(s.screenBytes(), qsizetype(0));
        s.detach(&v);
        RecordingViewer late;
        s.attach(&late, ViewerMode::Watch, ReplayRequest{std::nullopt, true, 100});
        QVERIFY(!late.attachInfos.first().snapshotAt);
        QVERIFY(!late.attachInfos.first().screenReplay);
        QVERIFY(!s.hasScreen()); // not made for the attach either
        QVERIFY(finish(s, {&late}));

        // 362x362 = 131,044 cells: within the cap, a screen (about 9 MB).
        QVERIFY(Session::screenFits(362, 362));
        Session fits(QStringLiteral("fits"), sh(script), 65536);
        QVERIFY(fits.start(&err));
        QVERIFY(settle(fits, "END"));
        RecordingViewer w;
        fits.attach(&w, ViewerMode::Control, std::nullopt);
        QVERIFY(fits.resize(&w, 362, 362));
        QVERIFY(fits.sendInput(&w, "x\n", 2));
        QVERIFY(settle(fits, "at the new size"));
        QVERIFY(fits.hasScreen());
        QVERIFY(fits.screen()->cols() == 362 && fits.screen()->rows() == 362);
        QVERIFY(finish(fits, {&w}));
    }

    void outputRebuildsACompactScreen()
    {
        // Output after compaction goes to the rebuilt screen: the snapshot
        // after it is the twin's.
        const QString script = QStringLiteral("seq 1 40000; printf 'END\\n'; read x; printf '\\033[31mafter %s\\033[0m\\n' \"$x\"; exec sleep 30");
        Session compacted(QStringLiteral("compacted2"), sh(script), 65536);
        Session twin(QStringLiteral("twin2"), sh(script), 65536);
        compacted.setScreenCompactDelay(0);
        QString err;
        QVERIFY(compacted.start(&err));
        QVERIFY(twin.start(&err));
        QVERIFY(settle(compacted, "END"));
        QVERIFY(settle(twin, "END"));
        QTRY_VERIFY_WITH_TIMEOUT(compacted.screenCompact(), 10000);
        RecordingViewer typist, typistTwin;
        compacted.attach(&typist, ViewerMode::Control, std::nullopt);
        twin.attach(&typistTwin, ViewerMode::Control, std::nullopt);
        compacted.detach(&typist);
        twin.detach(&typistTwin);
        QTRY_VERIFY_WITH_TIMEOUT(compacted.screenCompact(), 10000);
        // Input without a viewer: through a control viewer attached briefly.
        RecordingViewer k, kTwin;
        compacted.attach(&k, ViewerMode::Control, std::nullopt);
        twin.attach(&kTwin, ViewerMode::Control, std::nullopt);
        QVERIFY(compacted.sendInput(&k, "typed\n", 6));
        QVERIFY(twin.sendInput(&kTwin, "typed\n", 6));
        compacted.detach(&k);
        twin.detach(&kTwin);
        QVERIFY(settle(compacted, "after typed"));
        QVERIFY(settle(twin, "after typed"));
        QTRY_VERIFY_WITH_TIMEOUT(compacted.screenCompact(), 10000);
        QCOMPARE(compacted.screen()->snapshot(), twin.screen()->snapshot());
        QVERIFY(!compacted.screenCompact());
        compacted.kill();
        twin.kill();
        QTRY_VERIFY_WITH_TIMEOUT(compacted.isTornDown() && twin.isTornDown(), 10000);
    }

    void screenSwitchedOff()
    {
        // sessions/screen=false (Limits::screen): no screen even after the
        // ring rolled over; a late attach, `replay=screen` included, gets the
        // raw replay. Switching it on again makes one on the next request.
        Session s(QStringLiteral("noscreen"), sh(QStringLiteral("seq 1 40000; printf 'END\\n'; exec sleep 30")), 65536);
        s.setScreenEnabled(false);
        QVERIFY(!s.screenEnabled());
        QString err;
        QVERIFY(s.start(&err));
        QTRY_VERIFY_WITH_TIMEOUT(ringContent(s).contains("END"), 20000);
        QVERIFY(s.buffer().startOffset() > 0);
        QVERIFY(!s.hasScreen());
        RecordingViewer late;
        s.attach(&late, ViewerMode::Watch, ReplayRequest{std::nullopt, true, 100});
        QVERIFY(!late.attachInfos.first().snapshotAt);
        QVERIFY(!late.attachInfos.first().screenReplay);
        QVERIFY(!s.hasScreen());
        s.detach(&late);
        s.setScreenEnabled(true);
        RecordingViewer again;
        s.attach(&again, ViewerMode::Watch, ReplayRequest{std::nullopt, true, 100});
        QVERIFY(s.hasScreen());
        s.detach(&again);
        s.setScreenEnabled(false); // drops it
        QVERIFY(!s.hasScreen());
        QCOMPARE(s.screenBytes(), qsizetype(0));
        s.kill();
        QTRY_VERIFY_WITH_TIMEOUT(s.isTornDown(), 10000);
    }

    void rolloverSnapshotMatchesNeverDetachedViewer()
    {
        // A program that draws a screen once and then updates only a few
        // cells (in bursts, as a monitor does: a shell loop writing flat out
        // is a flood, which may outrun the screen on a loaded machine),
        // long enough for the 64 KiB ring to roll over: a raw replay
        // loses the header; with the snapshot at S the late viewer's screen
        // equals that of a viewer attached from the start.
        const QString script = QStringLiteral(
            "printf '\\033[?1049h\\033[2J\\033[H\\033[1;44m HEADER: counters \\033[0m\\n';"
            "printf '\\033[3;1Hlabel one:\\n\\033[4;1H\\033[38;5;202mlabel two:\\033[0m\\n';"
            "printf '\\033[24;1H\\033[7mF1 Help  F10 Quit\\033[0m';"
            "i=0; while [ $i -lt 4000 ]; do i=$((i+1)); [ $((i%50)) -ne 0 ] || sleep 0.01; printf '\\033[3;12H%05d\\033[4;12H\\033[32m%05d\\033[0m' $i $((i*3)); done;"
            "printf '\\033[10;5Hdone\\033[2;1H'; exec sleep 30");
        Session s(QStringLiteral("roll"), sh(script), 65536);
        QString err;
        QVERIFY(s.start(&err));
        RecordingViewer always;
        s.attach(&always, ViewerMode::Watch, std::nullopt); // before any output is read
        QVERIFY2(settle(s, "done"), qPrintable(QString::number(s.screenOffset())));
        QVERIFY(s.buffer().startOffset() > 0);
        QVERIFY(s.screenSynced());
        QVERIFY(s.screenBytes() > 0);
        QCOMPARE(always.received.size(), qsizetype(s.offset()));

        RecordingViewer late;
        s.attach(&late, ViewerMode::Watch, std::nullopt);
        const AttachInfo i = late.attachInfos.first();
        QVERIFY(i.reset);
        QVERIFY(i.snapshotAt);
        QCOMPARE(*i.snapshotAt, s.offset());
        QVERIFY(i.snapshotBytes > 0);
        QVERIFY(!i.screenReplay);
        QCOMPARE(late.received.size(), i.preludeBytes + i.replayBytes + i.snapshotBytes);

        TestUtil::VtRender ref(80, 24), got(80, 24), raw(80, 24);
        ref.feed(always.received);
        got.feed(late.received);
        raw.feed(withoutSnapshot(late));
        QVERIFY(ref.text().contains(QStringLiteral("HEADER")));
        QVERIFY2(got.diff(ref).isEmpty(), qPrintable(got.diff(ref)));
        QVERIFY(raw.differingCells(ref) > 0); // the raw replay alone lost the header
        // Leaving the alternate screen shows the same normal screen too.
        ref.feed("\x1b[?1049l");
        got.feed("\x1b[?1049l");
        QVERIFY2(got.diff(ref).isEmpty(), qPrintable(got.diff(ref)));

        QVERIFY(finish(s, {&always, &late}));
    }

    void screenReplayOnRequest()
    {
        // replay=screen: the snapshot from a reset terminal (with scrollback
        // lines), then what the screen has not parsed; replay_from = S.
        const QString script = QStringLiteral(
            "i=0; while [ $i -lt 3000 ]; do i=$((i+1)); printf 'line %d \\033[1;3%dmcolour\\033[0m\\n' $i $((i%8)); done;"
            "printf 'prompt$ '; exec sleep 30");
        Session s(QStringLiteral("scr"), sh(script), 65536);
        QString err;
        QVERIFY(s.start(&err));
        RecordingViewer always;
        s.attach(&always, ViewerMode::Watch, std::nullopt);
        QVERIFY(settle(s, "prompt$ "));
        RecordingViewer late;
        s.attach(&late, ViewerMode::Watch, ReplayRequest{std::nullopt, true, 100});
        const AttachInfo i = late.attachInfos.first();
        QVERIFY(i.screenReplay);
        QVERIFY(i.reset);
        QCOMPARE(i.preludeBytes, qsizetype(0));
        QVERIFY(i.snapshotAt);
        QCOMPARE(*i.snapshotAt, i.replayFrom);
        QCOMPARE(i.replayFrom, s.screenOffset());
        QVERIFY(late.received.size() < always.received.size() / 4); // short: 100 lines, not the ring
        {
            const QString d = screenDiff(always.received, late.received);
            QVERIFY2(d.isEmpty(), qPrintable(d));
        }

        // A resume inside the retained range is not affected.
        RecordingViewer resumed;
        s.attach(&resumed, ViewerMode::Watch, ReplayRequest{s.offset() - 5, true, 100});
        QVERIFY(!resumed.attachInfos.first().reset);
        QVERIFY(!resumed.attachInfos.first().snapshotAt);
        QCOMPARE(resumed.received.size(), qsizetype(5));

        QVERIFY(finish(s, {&always, &late, &resumed}));
    }

    void screenReplayFallsBackWhenTooMuchToParse()
    {
        // No screen yet (the 1 MiB ring is not half full) and more than
        // kMaxSyncScreenParse retained: this attach gets the raw replay
        // (replay_mode "raw"); the screen made for it serves the next one.
        Session s(QStringLiteral("fb"),
                  sh(QStringLiteral("seq 1 30000; printf 'end$ '; exec sleep 30")), 1024 * 1024);
        QString err;
        QVERIFY(s.start(&err));
        QTRY_VERIFY_WITH_TIMEOUT(ringContent(s).contains("end$ "), 10000);
        QVERIFY(s.offset() > quint64(Session::kMaxSyncScreenParse));
        QVERIFY(!s.hasScreen());
        RecordingViewer first;
        s.attach(&first, ViewerMode::Watch, ReplayRequest{std::nullopt, true, 10});
        QVERIFY(!first.attachInfos.first().screenReplay);
        QVERIFY(!first.attachInfos.first().snapshotAt);
        QCOMPARE(first.received, ringContent(s));
        QVERIFY(s.hasScreen());
        QTRY_COMPARE_WITH_TIMEOUT(s.screenOffset(), s.offset(), 10000);
        RecordingViewer second;
        s.attach(&second, ViewerMode::Watch, ReplayRequest{std::nullopt, true, 10});
        QVERIFY(second.attachInfos.first().screenReplay);
        {
            const QString d = screenDiff(first.received, second.received);
            QVERIFY2(d.isEmpty(), qPrintable(d));
        }
        QVERIFY(finish(s, {&first, &second}));
    }

    void fixupAtTheSnapshotOffsetComesFirst()
    {
        // A resize that reset the program's margins at S: the fixup there
        // comes before the snapshot (which is the state after it). Mostly
        // rewrites of one row inside the margins, a scroll of them every
        // 50: libvterm's cost is per scrolled line, and scrolling fast
        // enough to take 5 ms of CPU per window (on a slow or sanitized
        // build, 2 runs in 8 with a scroll per row) started a flood under
        // the rule before FloodMeter's budget, after which the screen
        // resumed unsynced and, with nothing rewriting the whole screen,
        // stayed so. The test is about the fixup. libvterm itself is not
        // sanitized; its memmove was (tests/sanitizers/memmove.c).
        const QString script = QStringLiteral("pad=$(printf '%070d' 0);"
            "printf '\\033[2;20r'; i=0; while [ $i -lt 2400 ]; do i=$((i+1)); [ $((i%50)) -ne 0 ] || { sleep 0.01; printf '\\033[20;1H\\n'; }; printf '\\033[10;1Hrow %d %s' $i $pad; done;"
            "printf 'ready'; exec sleep 30");
        // 64 KiB, the smallest ring Tether makes: the 204 KB above roll it
        // over three times. (A 16 KiB ring, smaller than one PTY read, left
        // a loaded machine's large read partly unparsed: the screen was
        // outrun, 2 runs in 6 beside a CPU hog; Session's constructor doc.)
        Session s(QStringLiteral("fix"), sh(script), 65536);
        QString err;
        QVERIFY(s.start(&err));
        RecordingViewer control;
        s.attach(&control, ViewerMode::Control, std::nullopt);
        QVERIFY(settle(s, "ready"));
        QVERIFY(s.resize(&control, 100, 30));
        QCOMPARE(control.fixups.size(), 1);
        RecordingViewer late;
        s.attach(&late, ViewerMode::Watch, std::nullopt);
        const AttachInfo i = late.attachInfos.first();
        QVERIFY2(i.snapshotAt, qPrintable(QStringLiteral("synced %1 S %2 end %3").arg(s.screenSynced())
                                             .arg(s.screenOffset()).arg(s.offset())));
        QCOMPARE(*i.snapshotAt, s.offset());
        QCOMPARE(late.fixups.size(), 1);
        const qsizetype snapshotStart = i.preludeBytes + qsizetype(*i.snapshotAt - i.replayFrom);
        QCOMPARE(late.fixupAt.first(), snapshotStart);
        QCOMPARE(late.received.size(), snapshotStart + i.snapshotBytes);
        // Rendered with the fixup where it came: the same screen as the viewer
        // that was there (its terminal was resized at the resize's offset).
        TestUtil::VtRender ref(80, 24), got(100, 30);
        ref.feed(control.received);
        ref.resize(100, 30);
        ref.feed(control.fixups.first());
        got.feed(late.received.left(snapshotStart));
        got.feed(late.fixups.first());
        got.feed(late.received.mid(snapshotStart));
        QVERIFY2(got.diff(ref).isEmpty(), qPrintable(got.diff(ref)));
        QVERIFY(finish(s, {&control, &late}));
    }

    void floodOutrunsTheScreenThenItSyncsAgain()
    {
        // seq floods faster than libvterm parses: the screen is outrun,
        // resumes unsynced near the end after the flood (64 KiB before it,
        // here the ring's start), and is synced again once the
        // screen has been rewritten; then a full-screen program is exact.
        const QString script = QStringLiteral(
            "seq 1 400000; sleep 0.5;"
            "printf '\\033[?1049h\\033[2J\\033[H\\033[1mTOP\\033[0m\\033[12;30Hmiddle\\033[24;1Hbottom';"
            "i=0; while [ $i -lt 3000 ]; do i=$((i+1)); [ $((i%50)) -ne 0 ] || sleep 0.01; printf '\\033[5;5H%05d' $i; done; printf '\\033[6;1Hfin'; exec sleep 30");
        const QString d = floodThenLateViewer(script);
        QVERIFY2(d.isEmpty(), qPrintable(d));
    }

    void floodInTheAlternateScreenKeepsTheNormalScreen()
    {
        // A program in the alternate screen that only ever scrolls it (less
        // paging, here seq) and is outrun by a flood: it never erases the
        // screen whole, so the resync point is the alternate screen scrolled
        // a screenful, and the normal screen under it (painted before the
        // ring's start) is the one the screen had: kept across the resync.
        // Without either the late viewer got no snapshot, or a blank normal
        // screen when the program left the alternate one.
        const QString script = QStringLiteral(
            "printf 'normal one\\r\\n\\033[1;32mnormal two\\033[0m\\r\\n$ less long.txt';"
            "printf '\\033[?1049h\\033[2J\\033[H'; seq -f 'page line %g' 1 4000; sleep 0.5;"
            "seq 1 400000; sleep 0.5; printf 'fin'; exec sleep 30");
        // Also the normal screen, once the program leaves the alternate one.
        const QString d = floodThenLateViewer(script, "normal two", "\x1b[?1049l");
        QVERIFY2(d.isEmpty(), qPrintable(d));
    }

    void screenKeepsUpWithAStalledEventLoop()
    {
        // A loaded machine: the server gets a turn only every 150 ms, and
        // each turn reads what piled up in the PTY meanwhile (tens of KiB
        // at once). The program updates a few cells in bursts, far below a
        // flood's rate: its output must be parsed before it leaves the 64
        // KiB ring, never outrun (else only a full erase, which it never
        // writes, would bring the screen back: rows that need it flipped).
        const QString script = QStringLiteral(
            "printf '\\033[?1049h\\033[2J\\033[H\\033[1;44m HEADER \\033[0m\\n\\033[24;1H\\033[7mF1 Help\\033[0m';"
            "i=0; while [ $i -lt 6000 ]; do i=$((i+1)); [ $((i%100)) -ne 0 ] || sleep 0.01; printf '\\033[3;12H%05d\\033[4;12H\\033[32m%05d\\033[0m' $i $((i*3)); done;"
            "printf '\\033[10;5Hdone\\033[2;1H'; exec sleep 30");
        Session s(QStringLiteral("stall"), sh(script), 65536);
        QString err;
        QVERIFY(s.start(&err));
        RecordingViewer always;
        s.attach(&always, ViewerMode::Watch, std::nullopt);
        QElapsedTimer t;
        t.start();
        int stalls = 0;
        while (!ringContent(s).contains("done") && t.elapsed() < 60000) {
            QThread::msleep(150);
            QCoreApplication::processEvents();
            ++stalls;
        }
        QVERIFY2(settle(s, "done"), qPrintable(QString::number(s.screenOffset())));
        QVERIFY(stalls > 3);
        QVERIFY(s.buffer().startOffset() > 0);
        QCOMPARE(s.screenOutruns(), quint64(0));
        QVERIFY(s.screenSynced());
        const QString d = lateViewerDiff(s, always);
        QVERIFY2(d.isEmpty(), qPrintable(d));
        QVERIFY(finish(s, {&always}));
    }

    void environmentNamesTheSession()
    {
        // TETHER_SESSION is the session's id (as tmux sets $TMUX), also when
        // Tether itself runs inside another session: `tether attach`
        // refuses to attach a session from inside itself (tst_cli).
        qputenv("TETHER_SESSION", "outer");
        Session s(QStringLiteral("envid"), sh(QStringLiteral("printf 'in:%s:\\n' \"$TETHER_SESSION\"; exec sleep 30")), 65536);
        qunsetenv("TETHER_SESSION");
        QString err;
        QVERIFY2(s.start(&err), qPrintable(err));
        QTRY_VERIFY(ringContent(s).contains(":\r\n"));
        QCOMPARE(ringContent(s).trimmed(), QByteArray("in:envid:"));
        QVERIFY(finish(s, {}));
    }

    void costlyBurstKeepsTheScreenSynced()
    {
        // A burst that is not a flood: 25,000 rows scrolled inside margins
        // (about 150 KB, under kFloodBytes) in one go, through a 64 KiB
        // ring. libvterm's cost is per scrolled row, so parsing it takes
        // tens of ms of CPU (more on a slow CPU or under the sanitizers) and
        // the ring overflows: the screen must parse what leaves it. The old
        // CPU rule (5 ms of parse in a 100 ms window: a flood) paused the
        // screen there and the ring outran it; the header and footer outside
        // the margins are never written again, so it stayed unsynced and a
        // late viewer got a raw replay without them (issue 9, the
        // wide-redraw and progress-cr fidelity rows under ASan). The
        // screen's budget for holding up the output (FloodMeter::kBurstNs of
        // CPU, and kRescueBytes: about 86 KB are parsed on the output path
        // here) takes such a burst.
        const QString script = QStringLiteral(
            "printf '\\033[2J\\033[H\\033[1;44m HEADER \\033[0m\\033[24;1H\\033[7m F1 Help \\033[0m\\033[2;23r\\033[23;1H';"
            "seq -f '%05g' 1 25000; printf '\\033[10;40Hfin'; exec sleep 30");
        Session s(QStringLiteral("burst"), sh(script), 65536);
        QString err;
        QVERIFY(s.start(&err));
        RecordingViewer always;
        s.attach(&always, ViewerMode::Watch, std::nullopt);
        QVERIFY(settle(s, "fin", 60000));
        QVERIFY(s.buffer().startOffset() > 0); // the ring rolled over
        QVERIFY(!s.flooding());
        QCOMPARE(s.screenOutruns(), quint64(0));
        QVERIFY(s.screenSynced());
        const QString d = lateViewerDiff(s, always);
        QVERIFY2(d.isEmpty(), qPrintable(d));
        QVERIFY(finish(s, {&always}));
    }

    void floodPausesTheScreen()
    {
        // A flood (by rate: FloodMeter::kFloodBytes in a window) stops
        // the screen's parsing altogether; it resumes after the flood.
        Session s(QStringLiteral("fl"), sh(QStringLiteral("seq 1 3000000; printf 'end$ '; exec sleep 30")),
                  1024 * 1024);
        QString err;
        QVERIFY(s.start(&err));
        // Sampled synchronously at each output (a timer in the test would
        // miss, under load, a flood that ended, let the screen parse, and
        // started again in between); the stretches are told apart by the
        // session's "output flood:" debug line, counted here.
        // (A category filter, not filter rules: ctest sets QT_LOGGING_RULES,
        // which overrides rules set here.)
        static int floodStarts = 0;
        static QLoggingCategory::CategoryFilter previousFilter = nullptr;
        floodStarts = 0;
        previousFilter = QLoggingCategory::installFilter([](QLoggingCategory *c) {
            if (previousFilter)
                previousFilter(c);
            if (qstrcmp(c->categoryName(), "tether.session") == 0)
                c->setEnabled(QtDebugMsg, true);
        });
        const QtMessageHandler previous = qInstallMessageHandler(
            [](QtMsgType, const QMessageLogContext &, const QString &msg) {
                if (msg.contains(QLatin1String("output flood: the screen pauses")))
                    ++floodStarts;
            });
        bool sawFlood = false;
        bool parsedWhileFlooding = false;
        int stretch = -1;
        quint64 pausedAt = 0;
        connect(&s, &Session::outputArrived, this, [&] {
            if (!s.flooding() || !s.hasScreen()) {
                stretch = -1;
                return;
            }
            // Within one stretch of flood, S does not move.
            if (stretch != floodStarts) {
                stretch = floodStarts;
                pausedAt = s.screenOffset();
            } else if (s.screenOffset() != pausedAt) {
                parsedWhileFlooding = true;
            }
            sawFlood = true;
        });
        QTRY_VERIFY_WITH_TIMEOUT(ringContent(s).contains("end$ "), 60000);
        qInstallMessageHandler(previous);
        QLoggingCategory::installFilter(previousFilter);
        QVERIFY(floodStarts > 0); // the stretches were counted
        QVERIFY(sawFlood);
        QVERIFY(!parsedWhileFlooding);
        QTRY_VERIFY_WITH_TIMEOUT(!s.flooding(), 5000);
        QVERIFY(s.screenOutruns() > 0);
        QTRY_COMPARE_WITH_TIMEOUT(s.screenOffset(), s.offset(), 20000);
        QVERIFY(s.screenSynced()); // seq scrolled a screenful after the resync
        s.kill();
        QTRY_VERIFY_WITH_TIMEOUT(s.isTornDown(), 10000);
    }

    void attachWhileFloodingParsesNothing()
    {
        // make bench's reattach regression (5.76 ms for a full 1 MiB ring,
        // 0.92 ms before the screen): a viewer attaching during a flood
        // that had outrun the screen made it restart at the ring's start
        // and parse a 4 ms slice, on every attach. While flooding the
        // screen parses nothing, attach or not: the raw replay, as
        // without a screen.
        Session s(QStringLiteral("fa"), sh(QStringLiteral("seq 1 3000000; printf 'end$ '; exec sleep 30")),
                  1024 * 1024);
        AttachInside a;
        attachInside(s, a, [&s] {
            return s.flooding() && s.hasScreen() && s.screenOffset() < s.buffer().startOffset();
        });
        QString err;
        QVERIFY(s.start(&err));
        QTRY_VERIFY_WITH_TIMEOUT(a.done || ringContent(s).contains("end$ "), 60000);
        QVERIFY2(a.done, "the flood never outran the screen");
        QCOMPARE(a.screenAfter, a.screenBefore);
        QCOMPARE(a.outrunsAfter, a.outrunsBefore);
        const AttachInfo &i = a.viewer.attachInfos.first();
        QVERIFY(!i.snapshotAt);
        QVERIFY(i.reset && i.replayFrom >= i.offset - quint64(a.ring.size()));
        QCOMPARE(a.viewer.received.mid(int(i.preludeBytes)),
                 a.ring.mid(int(i.replayFrom - (i.offset - quint64(a.ring.size())))));
        QVERIFY(finish(s, {}));
    }

    void attachToASyncedScreenParsesNothing()
    {
        // A synced screen behind the end (its timer has not run yet): the
        // snapshot at S, then [S, end), shows what a viewer that never
        // left shows, with no parsing on the attach path.
        const QString script = QStringLiteral(
            "seq 1 12000; i=0; while [ $i -lt 300 ]; do i=$((i+1)); printf '\\033[%d;1Hrow %d' $((i%24+1)) $i;"
            " [ $((i%10)) -ne 0 ] || sleep 0.02; done; printf 'fin'; exec sleep 30");
        Session s(QStringLiteral("sy"), sh(script), 65536);
        RecordingViewer always;
        s.attach(&always, ViewerMode::Watch, std::nullopt);
        AttachInside a;
        attachInside(s, a, [&s] {
            return !s.flooding() && s.screenSynced() && s.buffer().startOffset() > 0
                && s.screenOffset() < s.offset();
        });
        QString err;
        QVERIFY(s.start(&err));
        QTRY_VERIFY_WITH_TIMEOUT(a.done || ringContent(s).contains("fin"), 30000);
        QVERIFY2(a.done, "the screen was never synced and behind");
        QCOMPARE(a.screenAfter, a.screenBefore);
        const AttachInfo &i = a.viewer.attachInfos.first();
        QVERIFY(i.snapshotAt);
        QCOMPARE(*i.snapshotAt, a.screenBefore);
        const QString d = screenDiff(always.received.left(int(i.offset)), a.viewer.received);
        QVERIFY2(d.isEmpty(), qPrintable(d));
        QVERIFY(finish(s, {&always}));
    }

    void controlAttachAtItsSize_data()
    {
        // A control viewer that attaches with its terminal's size
        // (ReplayRequest cols×rows, the `cols=C&rows=R` query) gets the
        // replay drawn at that size: the session is resized first and the
        // screen's snapshot, at the new size, goes in even though nothing
        // was dropped. Its screen must equal that of a viewer attached all
        // along whose terminal was resized at that moment.
        QTest::addColumn<QString>("script");
        QTest::addColumn<int>("cols");
        QTest::addColumn<int>("rows");
        // Output wider than the smaller screen, scrolled, then a prompt
        // (a shell redraws nothing above its prompt on SIGWINCH).
        const QString prompt = QStringLiteral(
            "i=0; while [ $i -lt 40 ]; do i=$((i+1)); printf 'line %d of the output, long enough to wrap at forty columns\\n' $i; done;"
            "printf '\\033[1;31mred\\033[0m plain\\n'; exec sh");
        // A full-screen program in the alternate screen with a reverse-video
        // coloured status line (written out: an erase keeps the whole pen in
        // libvterm, the background only in xterm.js and the snapshot), whose
        // pen stays in force (libvterm fills the cells a resize adds with
        // the pen's background; terminals with the default).
        const QString fullScreen = QStringLiteral(
            "printf 'under the alternate screen\\n'; printf '\\033[?1049h\\033[2J\\033[H\\033[44mtitle bar\\033[K\\033[0m';"
            "i=2; while [ $i -lt 23 ]; do printf '\\033[%d;1Hrow %d of the program, long enough to be cut at forty' $i $i; i=$((i+1)); done;"
            "printf '\\033[23;1H\\033[7;45mstatus line%68s\\033[5;7HREADY' ''; exec sleep 30");
        QTest::newRow("prompt, smaller") << prompt << 40 << 10;
        QTest::newRow("prompt, larger") << prompt << 120 << 40;
        QTest::newRow("full screen, smaller") << fullScreen << 40 << 10;
        QTest::newRow("full screen, larger") << fullScreen << 120 << 40;
    }

    void controlAttachAtItsSize()
    {
        QFETCH(QString, script);
        QFETCH(int, cols);
        QFETCH(int, rows);
        SpawnOptions o = sh(script);
        o.extraEnv = QStringList{QStringLiteral("PS1=$ ")};
        Session s(QStringLiteral("size"), o, 1024 * 1024);
        QString err;
        QVERIFY(s.start(&err));
        RecordingViewer always, typist;
        s.attach(&always, ViewerMode::Watch, std::nullopt); // before any output is read
        s.attach(&typist, ViewerMode::Control, std::nullopt);
        // All it writes: then the shell waits at its prompt, or the program sleeps.
        QTRY_VERIFY_WITH_TIMEOUT(always.received.endsWith("$ ") || always.received.endsWith("READY"), 10000);
        QVERIFY(!s.hasScreen()); // a small session has none yet: the attach makes it

        RecordingViewer late;
        s.attach(&late, ViewerMode::Control, ReplayRequest{std::nullopt, false, 0, cols, rows});
        QCOMPARE(typist.detachReasons, QList<DetachReason>{DetachReason::Superseded});
        QCOMPARE(late.attachInfos.size(), 1);
        const AttachInfo i = late.attachInfos.first();
        QCOMPARE(i.cols, cols);
        QCOMPARE(i.rows, rows);
        QCOMPARE(s.cols(), cols);
        QCOMPARE(s.rows(), rows);
        QCOMPARE(always.sizes, (QList<QPair<int, int>>{{cols, rows}})); // the watcher heard of it
        QVERIFY(late.sizes.isEmpty());                                  // the viewer has it in AttachInfo
        QVERIFY(typist.sizes.isEmpty());                                // gone before the resize
        QVERIFY(i.reset);
        QCOMPARE(i.replayFrom, quint64(0));
        QVERIFY(i.snapshotAt);
        QCOMPARE(*i.snapshotAt, i.offset);
        QVERIFY(i.snapshotBytes > 0);
        QVERIFY(!i.screenReplay);
        QCOMPARE(late.received.size(), i.preludeBytes + i.replayBytes + i.snapshotBytes);

        // The reference: attached all along, its terminal resized here.
        TestUtil::VtRender ref(80, 24), got(cols, rows), raw(cols, rows);
        ref.feed(always.received.left(int(i.offset)));
        ref.resize(cols, rows);
        got.feed(late.received);
        raw.feed(withoutSnapshot(late));
        QVERIFY2(got.diff(ref).isEmpty(), qPrintable(got.diff(ref) + QStringLiteral("\n--- reference:\n") + ref.text()));
        QVERIFY(raw.differingCells(ref) > 0); // the raw replay alone is drawn for the old size
        if (ref.altScreen()) {
            ref.feed("\x1b[?1049l");
            got.feed("\x1b[?1049l");
            QVERIFY2(got.diff(ref).isEmpty(), qPrintable(got.diff(ref)));
        }
        // The pen (the status line's reverse video) and the pending wrap.
        ref.feed("@");
        got.feed("@");
        QVERIFY2(got.diff(ref).isEmpty(), qPrintable(got.diff(ref)));

        if (script.endsWith(QLatin1String("exec sh"))) {
            // The program has the size too (TIOCSWINSZ, SIGWINCH).
            QVERIFY(s.sendInput(&late, QByteArrayLiteral("stty size\n")));
            const QByteArray answer = QByteArray::number(rows) + ' ' + QByteArray::number(cols);
            QTRY_VERIFY_WITH_TIMEOUT(late.received.contains(answer), 10000);
        }
        QVERIFY(finish(s, {&always, &late}));
    }

    void attachSizeChangesNothingElse()
    {
        // A watcher's size, a size equal to the session's, or a resume
        // (no reset) gets no repaint; only a control viewer's size resizes.
        Session s(QStringLiteral("nosize"), sh(QStringLiteral("printf 'hello\\n'; exec sleep 30")), 65536);
        QString err;
        QVERIFY(s.start(&err));
        RecordingViewer always;
        s.attach(&always, ViewerMode::Watch, std::nullopt);
        QTRY_VERIFY_WITH_TIMEOUT(always.received.endsWith("hello\r\n"), 10000);

        RecordingViewer watcher;
        s.attach(&watcher, ViewerMode::Watch, ReplayRequest{std::nullopt, false, 0, 50, 10});
        QCOMPARE(s.cols(), 80);
        QCOMPARE(watcher.attachInfos.first().cols, 80);
        QVERIFY(!watcher.attachInfos.first().snapshotAt);
        QVERIFY(always.sizes.isEmpty());

        RecordingViewer same;
        s.attach(&same, ViewerMode::Control, ReplayRequest{std::nullopt, false, 0, 80, 24});
        QVERIFY(!same.attachInfos.first().snapshotAt);
        QCOMPARE(same.received, always.received);
        QVERIFY(always.sizes.isEmpty());

        RecordingViewer resumed;
        s.attach(&resumed, ViewerMode::Control, ReplayRequest{s.offset() - 3, false, 0, 60, 20});
        QCOMPARE(s.cols(), 60); // resized all the same, before the missing bytes
        QCOMPARE(resumed.attachInfos.first().cols, 60);
        QVERIFY(!resumed.attachInfos.first().reset);
        QVERIFY(!resumed.attachInfos.first().snapshotAt);
        QCOMPARE(resumed.received, QByteArray("o\r\n"));
        QCOMPARE(always.sizes, (QList<QPair<int, int>>{{60, 20}}));
        QVERIFY(finish(s, {&always, &watcher, &resumed}));
    }

    void queriesAnsweredWhileDetached()
    {
        // A program started with no viewer asks for the cursor position and
        // device attributes: the server's screen answers at once.
        const QString script = QStringLiteral(
            "exec bash -c 'printf \"\\033[3;7H\\033[6n\"; IFS= read -rsd R -t 5 cpr < /dev/tty;"
            " printf \"\\033[c\"; IFS= read -rsd c -t 5 da < /dev/tty;"
            " printf \"\\r\\ncpr=%s da=%s.\\r\\n\" \"${cpr#*[}\" \"${da#*[}\"; exec sleep 30'");
        Session s(QStringLiteral("q"), sh(script), 65536);
        QString err;
        QVERIFY(s.start(&err));
        // Each read gives up after 5 s: an answer that came only after a
        // timeout (or never) leaves its field empty.
        QTRY_VERIFY_WITH_TIMEOUT(ringContent(s).contains(" da="), 15000);
        QVERIFY2(ringContent(s).contains("cpr=3;7 da=?1;2."), ringContent(s).constData());
        QVERIFY(s.hasScreen()); // made for the query, though the ring is nearly empty
        s.kill();
        QTRY_VERIFY_WITH_TIMEOUT(s.isTornDown(), 10000);
    }

    void queriesNotAnsweredWithAControlViewer()
    {
        // With a control viewer attached its terminal answers, not the server
        // (this viewer does not: the program times out with nothing).
        const QString script = QStringLiteral(
            "exec bash -c 'read -r go; printf \"\\033[6n\"; IFS= read -rsd R -t 2 cpr < /dev/tty;"
            " printf \"\\r\\ncpr=[%s].\\r\\n\" \"$cpr\"; exec sleep 30'");
        Session s(QStringLiteral("q2"), sh(script), 65536);
        QString err;
        QVERIFY(s.start(&err));
        RecordingViewer control;
        s.attach(&control, ViewerMode::Control, std::nullopt);
        QVERIFY(s.sendInput(&control, QByteArrayLiteral("go\n")));
        QTRY_VERIFY_WITH_TIMEOUT(control.received.contains("cpr=["), 10000);
        QVERIFY2(control.received.contains("cpr=[]."), control.received.constData());
        // Replayed to a late viewer, the query is not answered either.
        s.detach(&control);
        RecordingViewer late;
        s.attach(&late, ViewerMode::Control, std::nullopt);
        // A round trip through the PTY: an answer written for the replay
        // went in before this input, and the terminal (echo on: `sleep`
        // reads nothing) echoed it first, as ^[[...R.
        QVERIFY(s.sendInput(&late, QByteArrayLiteral("barrier-$((2*3))\n")));
        QTRY_VERIFY(ringContent(s).contains("barrier-$((2*3))"));
        QVERIFY2(!ringContent(s).contains("^["), ringContent(s).constData());
        QVERIFY(!ringContent(s).contains("cpr=[\x1b"));
        QVERIFY(finish(s, {&late}));
    }
};

QTEST_GUILESS_MAIN(TestSession)
#include "tst_session.moc"
