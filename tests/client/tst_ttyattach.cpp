// SPDX-License-Identifier: GPL-2.0-or-later
// TtyAttach, the attach loop of `tether attach`, in process: a real server
// on 127.0.0.1 (port 0), a real /bin/sh session, and a real PTY standing in
// for the user's terminal (the test reads what a terminal would show and
// types, and answers queries as a terminal does). tst_cli runs the built
// binary; this drives the loop directly: the replay input gate on a real
// terminal, typing, the detach key, the terminal given back, the exit codes.
#include "ttyattach.h"
#include "servertestutil.h"

#include <QElapsedTimer>
#include <QSignalSpy>
#include <QTest>

#include <csignal>
#include <fcntl.h>
#include <pty.h>
#include <termios.h>
#include <unistd.h>

using namespace Tether;
using namespace ServerTest;

namespace {

/// The user's terminal: a PTY whose slave the client uses and whose master
/// the test reads (the screen) and writes (the keyboard).
struct Terminal {
    int master = -1;
    int slave = -1;
    QByteArray screen; ///< everything the client wrote
    Terminal()
    {
        struct winsize ws {};
        ws.ws_col = 100;
        ws.ws_row = 30;
        ::openpty(&master, &slave, nullptr, nullptr, &ws);
        ::fcntl(master, F_SETFL, ::fcntl(master, F_GETFL) | O_NONBLOCK);
    }
    ~Terminal()
    {
        ::close(master);
        ::close(slave);
    }
    void read()
    {
        char buf[65536];
        ssize_t n;
        while ((n = ::read(master, buf, sizeof buf)) > 0)
            screen.append(buf, int(n));
    }
    void type(const QByteArray &keys) { [[maybe_unused]] const ssize_t n = ::write(master, keys.constData(), size_t(keys.size())); }

    bool isRaw() const
    {
        struct termios t {};
        return ::tcgetattr(slave, &t) == 0 && !(t.c_lflag & (ICANON | ECHO | ISIG));
    }
    /// Runs the event loop, reading the screen, until `done()` (false after `ms`).
    template<typename F> bool until(F &&done, int ms = 10000)
    {
        QElapsedTimer t;
        t.start();
        for (;;) {
            read();
            if (done())
                return true;
            if (t.elapsed() > ms)
                return false;
            QTest::qWait(5);
        }
    }
};

QByteArray ringText(const Session *s)
{
    const RingBuffer &r = s->buffer();
    QByteArray out(r.size(), '\0');
    out.resize(r.read(r.startOffset(), out.data(), out.size()));
    return out;
}

ServerEndpoint endpointOf(const Fixture &f)
{
    ServerEndpoint ep;
    ep.url = QUrl(QStringLiteral("http://127.0.0.1:%1/").arg(f.port));
    ep.key = QString::fromLatin1(f.key);
    return ep;
}

} // namespace

class TestTtyAttach : public QObject
{
    Q_OBJECT
private Q_SLOTS:
    void exitStatus_data()
    {
        QTest::addColumn<AttachStream::End>("end");
        QTest::addColumn<int>("signal");
        QTest::addColumn<int>("status");
        QTest::newRow("detached") << AttachStream::End::Detached << 0 << 0;
        QTest::newRow("exited") << AttachStream::End::Exited << 0 << 0;
        QTest::newRow("taken over") << AttachStream::End::TakenOver << 0 << 3;
        QTest::newRow("not found") << AttachStream::End::NotFound << 0 << 4;
        QTest::newRow("killed") << AttachStream::End::SessionKilled << 0 << 5;
        QTest::newRow("server shutdown") << AttachStream::End::ServerShutdown << 0 << 5;
        QTest::newRow("lost server") << AttachStream::End::LostServer << 0 << 1;
        QTest::newRow("protocol error") << AttachStream::End::ProtocolError << 0 << 1;
        QTest::newRow("SIGHUP") << AttachStream::End::Detached << SIGHUP << 129;
        QTest::newRow("SIGTERM wins over exited") << AttachStream::End::Exited << SIGTERM << 143;
    }

    void exitStatus()
    {
        QFETCH(AttachStream::End, end);
        QFETCH(int, signal);
        QFETCH(int, status);
        QCOMPARE(TtyAttach::exitStatusFor(end, signal), status);
    }

    void replayGateTypingAndDetach()
    {
        Fixture f;
        QVERIFY(f.start());
        // Before anyone attaches, the program asks for the cursor position
        // (the server answers it: no viewer yet, docs/protocol.md "Queries
        // while detached"; the program reads that answer, as programs do).
        // Echo is off before the query: the server answers at once, and read
        // -s turns echo off only when it starts, so the tty could echo the
        // answer ("^[[1;7R") first, which this test must not see.
        Session *s = f.spawn({QStringLiteral("/bin/sh"), QStringLiteral("-c"),
                              QStringLiteral("exec bash -c 'stty -echo; printf \"asking\\033[6n\\n\"; "
                                             "IFS= read -rsd R -t 5 x; stty echo; exec env \"PS1=$ \" /bin/sh'")});
        QVERIFY(s);
        QTRY_VERIFY2(ringText(s).contains("$ "), ringText(s).toPercentEncoding().constData());

        Terminal term;
        TtyAttach a(endpointOf(f), s->id(), ViewerMode::Control, 0x1c, term.slave, term.slave);
        QSignalSpy finished(&a, &TtyAttach::finished);
        QVERIFY(a.start());
        QVERIFY(term.isRaw());
        // The window size of the terminal reaches the session.
        QTRY_COMPARE(s->cols(), 100);
        QCOMPARE(s->rows(), 30);

        // Title pushed, screen cleared, the replay, then the fence.
        QVERIFY(term.until([&]() { return term.screen.contains("\x1b[5n"); }));
        QVERIFY(term.screen.startsWith("\x1b[22;0t"));
        const int ris = term.screen.indexOf("\x1b" "c");
        const int replay = term.screen.indexOf("asking\x1b[6n");
        QVERIFY(ris >= 0 && replay > ris);
        QVERIFY(term.screen.indexOf("\x1b[5n") > replay);
        QVERIFY(!a.inputGate()->isOpen());

        // The user types while the gate is closed: plain typing passes.
        term.type("echo typed-$((6*7))\r");
        QTRY_VERIFY2(ringText(s).contains("typed-42\r\n"), ringText(s).toPercentEncoding().constData());
        QVERIFY(!a.inputGate()->isOpen());
        // The terminal answers the replay's query, then the fence: the answer
        // never reaches the program, and the gate opens.
        term.type("\x1b[3;7R\x1b[0n");
        QVERIFY(term.until([&]() { return a.inputGate()->isOpen(); }));
        QVERIFY(term.until([&]() { return term.screen.contains("typed-42\r\n"); }));

        // Open now: keys that start with ESC (arrows) pass; the session's
        // tty echoes ESC as ^[. Typed after the answers, on the same path:
        // an answer that got through was echoed before it, so the arrow's
        // ^[[D is the first ^[ in the session.
        term.type("\x1b[D\r");
        QTRY_VERIFY2(ringText(s).contains("^[[D"), ringText(s).constData());
        QVERIFY2(ringText(s).indexOf("^[") == ringText(s).indexOf("^[[D") && !ringText(s).contains("3;7R"),
                 ringText(s).constData());

        // The detach key: finished(0), the terminal cooked again, the
        // session lives on.
        term.type("\x1c");
        QTRY_COMPARE(finished.count(), 1);
        QCOMPARE(finished.at(0).at(0).toInt(), 0);
        QVERIFY(!term.isRaw());
        QTRY_VERIFY(s->controlViewer() == nullptr);
        QCOMPARE(s->state(), Session::State::Running);
        term.read();
        QVERIFY(term.screen.contains("\x1b[23;0t")); // the leave sequence
    }

    void leavingSwallowsLateAnswers()
    {
        // Attaching to an exited session ends right after its replay; the
        // terminal's answers to the replay's queries come later. They must be
        // read and dropped, not left for the shell the user returns to.
        Fixture f;
        QVERIFY(f.start());
        Session *s = f.spawn({QStringLiteral("/bin/sh"), QStringLiteral("-c"),
                              QStringLiteral("printf 'asking\\033[6n\\033[c\\n'; exit 3")});
        QVERIFY(s);
        QTRY_COMPARE(s->state(), Session::State::Exited);

        Terminal term;
        TtyAttach a(endpointOf(f), s->id(), ViewerMode::Control, 0x1c, term.slave, term.slave);
        QSignalSpy finished(&a, &TtyAttach::finished);
        QVERIFY(a.start());
        QVERIFY(term.until([&]() { return term.screen.contains("\x1b[5n"); }));
        // Still waiting for the fence's answer (at most kLeaveFenceMs): a
        // negative check, after the fence was seen.
        QTest::qWait(50);
        QCOMPARE(finished.count(), 0);
        term.type("\x1b[3;7R\x1b[?62;22c\x1b[0n");
        QTRY_COMPARE(finished.count(), 1);
        QCOMPARE(finished.at(0).at(0).toInt(), 0); // the process exited: 0
        QVERIFY(!term.isRaw());
        // Nothing is left for the shell to read.
        ::fcntl(term.slave, F_SETFL, ::fcntl(term.slave, F_GETFL) | O_NONBLOCK);
        char buf[64];
        QCOMPARE(::read(term.slave, buf, sizeof buf), ssize_t(-1));
        QCOMPARE(errno, EAGAIN);
    }

    void slowTerminalLosesNothing()
    {
        // A new user's `tether attach` to `seq 1 6000000` under `script` (a
        // terminal slower than the program) lost about 2 million lines:
        // over its high mark the client closed its socket, the session
        // drained into its ring at full speed, and on resume the client's
        // offset had rolled out (a reset replay). With flow control it
        // pauses the session instead. Small marks and a 64 KiB ring: a
        // let-go would lose lines at every pause.
        Limits limits;
        limits.bufferCapacity = 64 * 1024;
        Fixture f;
        QVERIFY(f.start(limits));
        constexpr int kLines = 250000; // 1.7 MB: the high mark 13 times over
        Session *s = f.spawn({QStringLiteral("/bin/sh"), QStringLiteral("-c"),
                              QStringLiteral("stty -echo; read x; seq 1 %1; echo SEQ-DONE; exec cat").arg(kLines)});
        QVERIFY(s);

        Terminal term;
        TtyAttach a(endpointOf(f), s->id(), ViewerMode::Control, -1, term.slave, term.slave);
        a.setOutputWatermarks(128 * 1024, 32 * 1024);
        QSignalSpy attached(a.client(), &AttachClient::attached);
        QVERIFY(a.start());
        // Nothing to replay (the program has written nothing): input is open.
        QVERIFY(term.until([&]() { return attached.size() == 1 && a.inputGate()->isOpen(); }));
        // The program has switched echo off (tcgetattr of a Linux PTY master
        // reads the slave's modes): "go" is not echoed into the stream.
        QTRY_VERIFY([&]() {
            termios m {};
            return ::tcgetattr(s->process()->masterFd(), &m) == 0 && !(m.c_lflag & ECHO);
        }());
        term.type("go\r");

        // The terminal falls behind: it takes bytes (32 KiB a turn) only
        // while the client is paused, and at the end, once the program has
        // written everything; it counts the pauses it caused.
        int pauses = 0;
        bool wasPaused = false;
        QElapsedTimer t;
        t.start();
        char buf[32 * 1024];
        while (!term.screen.contains("SEQ-DONE") && t.elapsed() < 60000) {
            const bool paused = a.client()->isPaused();
            if (paused && !wasPaused)
                ++pauses;
            wasPaused = paused;
            if (paused || ringText(s).contains("SEQ-DONE")) {
                const ssize_t n = ::read(term.master, buf, sizeof buf);
                if (n > 0)
                    term.screen.append(buf, int(n));
            }
            QTest::qWait(1);
        }
        qInfo("%d pauses in %lld ms", pauses, t.elapsed());
        QVERIFY(term.screen.contains("SEQ-DONE"));
        // How many depends on what was in flight at each pause (the server's
        // queue and the kernel's socket buffers, up to a few MiB): 2 to 17
        // here. One let-go was enough to lose lines.
        QVERIFY(pauses >= 1);
        QCOMPARE(attached.size(), 1); // never let go: no reset replay
        QVERIFY(a.client()->isAttached());

        // Every line exactly once, in order, right after the screen was
        // cleared for the (empty) initial replay.
        QByteArray expected;
        expected.reserve(kLines * 8);
        for (int i = 1; i <= kLines; ++i)
            expected += QByteArray::number(i) + "\r\n";
        expected += "SEQ-DONE\r\n";
        const int from = term.screen.indexOf("\x1b" "c") + 2;
        QVERIFY(from >= 2);
        const QByteArray got = term.screen.mid(from, expected.size());
        if (got != expected) {
            int i = 0;
            while (i < got.size() && got.at(i) == expected.at(i))
                ++i;
            QFAIL(qPrintable(QStringLiteral("the stream differs at byte %1: got \"%2\", expected \"%3\"")
                                 .arg(i)
                                 .arg(QString::fromLatin1(got.mid(i, 40).toPercentEncoding()),
                                      QString::fromLatin1(expected.mid(i, 40).toPercentEncoding()))));
        }
    }

    void takenOverExitsThree()
    {
        Fixture f;
        QVERIFY(f.start());
        Session *s = f.spawn();
        QVERIFY(s);
        Terminal term;
        TtyAttach a(endpointOf(f), s->id(), ViewerMode::Control, 0x1c, term.slave, term.slave);
        QSignalSpy finished(&a, &TtyAttach::finished);
        QVERIFY(a.start());
        QTRY_VERIFY(s->controlViewer() != nullptr);
        // Another control viewer attaches: 4409.
        WsClient other;
        other.open(f.port, QStringLiteral("/ws/%1").arg(s->id()), f.key);
        QVERIFY(term.until([&]() { return finished.count() == 1; }));
        QCOMPARE(finished.at(0).at(0).toInt(), 3);
        QVERIFY(!term.isRaw());
    }
};

QTEST_MAIN(TestTtyAttach)
#include "tst_ttyattach.moc"
