// SPDX-License-Identifier: GPL-2.0-or-later
// RawTerminal on a real PTY: raw mode entered and the termios given back
// exactly, O_NONBLOCK given back, re-entering after the user changed the
// termios (stty while stopped), the atexit path, the window size.
#include "rawterminal.h"

#include <QTest>

#include <cstring>
#include <fcntl.h>
#include <pty.h>
#include <sys/ioctl.h>
#include <unistd.h>

using namespace Tether;

namespace {
struct Pty {
    int master = -1;
    int slave = -1;
    Pty() { ::openpty(&master, &slave, nullptr, nullptr, nullptr); }
    ~Pty()
    {
        ::close(master);
        ::close(slave);
    }
    struct termios get() const
    {
        struct termios t {};
        ::tcgetattr(slave, &t);
        return t;
    }
};

bool same(const struct termios &a, const struct termios &b)
{
    return a.c_iflag == b.c_iflag && a.c_oflag == b.c_oflag && a.c_cflag == b.c_cflag && a.c_lflag == b.c_lflag
        && std::memcmp(a.c_cc, b.c_cc, sizeof a.c_cc) == 0;
}

bool isRaw(const struct termios &t)
{
    return !(t.c_lflag & (ICANON | ECHO | ISIG | IEXTEN)) && !(t.c_oflag & OPOST) && !(t.c_iflag & (ICRNL | IXON))
        && t.c_cc[VMIN] == 1;
}
} // namespace

class TestRawTerminal : public QObject
{
    Q_OBJECT
private Q_SLOTS:
    void enterAndRestore()
    {
        Pty p;
        QVERIFY(p.slave >= 0);
        const struct termios cooked = p.get();
        QVERIFY(cooked.c_lflag & ICANON);
        {
            RawTerminal raw;
            QVERIFY(!raw.isRaw());
            QVERIFY(raw.enter(p.slave));
            QVERIFY(raw.isRaw());
            QCOMPARE(raw.fd(), p.slave);
            QVERIFY(isRaw(p.get()));
            raw.restore();
            QVERIFY(!raw.isRaw());
            QVERIFY(same(p.get(), cooked));
            raw.restore(); // idempotent
            QVERIFY(same(p.get(), cooked));
            QVERIFY(raw.enter(p.slave));
        } // the destructor restores
        QVERIFY(same(p.get(), cooked));
    }

    void reenterKeepsWhatTheUserChanged()
    {
        // Continued after SIGTSTP: the user ran `stty -echoctl` meanwhile;
        // that is what the next restore gives back.
        Pty p;
        RawTerminal raw;
        QVERIFY(raw.enter(p.slave));
        raw.restore();
        struct termios changed = p.get();
        changed.c_lflag &= ~ECHOCTL;
        changed.c_cc[VINTR] = 0x07;
        QVERIFY(::tcsetattr(p.slave, TCSANOW, &changed) == 0);
        QVERIFY(raw.enter(p.slave));
        QVERIFY(isRaw(p.get()));
        raw.restore();
        QVERIFY(same(p.get(), changed));
    }

    void notATerminal()
    {
        int fds[2];
        QVERIFY(::pipe(fds) == 0);
        RawTerminal raw;
        QVERIFY(!raw.enter(fds[0]));
        QVERIFY(!raw.isRaw());
        QCOMPARE(raw.fd(), -1);
        int cols = 0, rows = 0;
        QVERIFY(!RawTerminal::windowSize(fds[0], &cols, &rows));
        ::close(fds[0]);
        ::close(fds[1]);
    }

    void nonBlockingGivenBack()
    {
        Pty p;
        const int before = ::fcntl(p.slave, F_GETFL);
        QVERIFY(!(before & O_NONBLOCK));
        RawTerminal raw;
        QVERIFY(raw.setNonBlocking(p.slave));
        QVERIFY(::fcntl(p.slave, F_GETFL) & O_NONBLOCK);
        raw.restore();
        QCOMPARE(::fcntl(p.slave, F_GETFL), before);
        // Already non-blocking: left as it is, also by restore().
        ::fcntl(p.slave, F_SETFL, before | O_NONBLOCK);
        QVERIFY(raw.setNonBlocking(p.slave));
        raw.restore();
        QVERIFY(::fcntl(p.slave, F_GETFL) & O_NONBLOCK);
    }

    void restoreAllRestoresEveryInstance()
    {
        // What atexit(3) runs: every terminal still raw comes back.
        Pty a, b;
        const struct termios ca = a.get(), cb = b.get();
        RawTerminal ra, rb;
        QVERIFY(ra.enter(a.slave));
        QVERIFY(rb.enter(b.slave));
        RawTerminal::restoreAll();
        QVERIFY(same(a.get(), ca));
        QVERIFY(same(b.get(), cb));
        QVERIFY(!ra.isRaw());
        QVERIFY(!rb.isRaw());
    }

    void windowSize_data()
    {
        QTest::addColumn<int>("setCols");
        QTest::addColumn<int>("setRows");
        QTest::addColumn<bool>("ok");
        QTest::addColumn<int>("cols");
        QTest::addColumn<int>("rows");
        QTest::newRow("80x24") << 80 << 24 << true << 80 << 24;
        QTest::newRow("capped at 1000") << 5000 << 1200 << true << 1000 << 1000;
        QTest::newRow("no size") << 0 << 0 << false << 0 << 0;
    }

    void windowSize()
    {
        QFETCH(int, setCols);
        QFETCH(int, setRows);
        QFETCH(bool, ok);
        QFETCH(int, cols);
        QFETCH(int, rows);
        Pty p;
        struct winsize ws {};
        ws.ws_col = (unsigned short)setCols;
        ws.ws_row = (unsigned short)setRows;
        QVERIFY(::ioctl(p.master, TIOCSWINSZ, &ws) == 0);
        int c = 0, r = 0;
        QCOMPARE(RawTerminal::windowSize(p.slave, &c, &r), ok);
        QCOMPARE(c, cols);
        QCOMPARE(r, rows);
    }
};

QTEST_GUILESS_MAIN(TestRawTerminal)
#include "tst_rawterminal.moc"
