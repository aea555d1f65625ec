// SPDX-License-Identifier: GPL-2.0-or-later
// The local terminal window (QTermWidget, teletype mode) on real /bin/sh
// sessions, attached over WebSocket to a real server on port 0 in this
// process (ServerTest::Fixture): the window is a client of the protocol.
#include "registry.h"
#include "servertestutil.h"
#include "session.h"
#include "terminalwindow.h"
#include "logging.h"
#include "testutil.h"
#include "vtrender.h"

#include <QAction>
#include <QApplication>
#include <QClipboard>
#include <QFile>
#include <QJsonObject>
#include <QJsonDocument>
#include <QJsonArray>
#include <QFontInfo>
#include <QFontMetrics>
#include <QGuiApplication>
#include <QImage>
#include <QLineEdit>
#include <QMenu>
#include <QPushButton>
#include <QScopeGuard>
#include <QScreen>
#include <QSignalSpy>
#include <QTest>
#include <QTimer>

#ifdef TETHER_HAVE_QTERMWIDGET
#include "windowscreen.h"
#endif

#include <QTemporaryDir>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

using namespace Tether;

#ifdef TETHER_HAVE_QTERMWIDGET
namespace {

/// Stands in for a browser viewer.
class FakeViewer : public Viewer
{
public:
    void attached(Session *s, const AttachInfo &i) override { session = s; info = i; ++attaches; }
    void output(const char *d, qsizetype n) override { data.append(d, n); }
    void exited(const ExitStatus &) override {}
    void detached(DetachReason r) override { reasons << r; session = nullptr; }
    ViewerKind kind() const override { return ViewerKind::Browser; }
    Session *session = nullptr;
    AttachInfo info;
    int attaches = 0;
    QByteArray data;
    QList<DetachReason> reasons;
};

/// A watcher that never leaves, rendered in libvterm at the session's size:
/// it follows every resize (sizeChanged), as a terminal that stayed attached
/// and was resized (no reflow) at that moment.
class RenderingWatcher : public Viewer
{
public:
    explicit RenderingWatcher(Session *s) : vt(s->cols(), s->rows()) {}
    void attached(Session *, const AttachInfo &) override {}
    void output(const char *d, qsizetype n) override { vt.feed(d, n); }
    void fixup(const QByteArray &sequence) override { vt.feed(sequence); }
    void sizeChanged(int cols, int rows) override { vt.resize(cols, rows); }
    void exited(const ExitStatus &) override {}
    void detached(DetachReason) override {}
    TestUtil::VtRender vt;
};

/// The same for the reference watcher.
QString renderedScreen(const TestUtil::VtRender &vt)
{
    return QStringLiteral("%1x%2\n").arg(vt.cols()).arg(vt.rows()) + vt.text();
}

SpawnOptions shellOptions(const QString &script = QString())
{
    SpawnOptions o;
    if (script.isEmpty())
        o.argv = QStringList{QStringLiteral("/bin/sh")};
    else
        o.argv = QStringList{QStringLiteral("/bin/sh"), QStringLiteral("-c"), script};
    o.extraEnv << QStringLiteral("PS1=$ ") << QStringLiteral("ENV=");
    return o;
}

/// The fixture's server as a client finds it.
ServerEndpoint endpointOf(const ServerTest::Fixture &f)
{
    ServerEndpoint ep;
    ep.url = QUrl(QStringLiteral("http://127.0.0.1:%1/").arg(f.port));
    ep.key = QString::fromLatin1(f.key);
    return ep;
}

/// Everything the session's ring retains.
QByteArray ringText(const Session *s)
{
    const RingBuffer &r = s->buffer();
    QByteArray out(r.size(), '\0');
    out.resize(r.read(r.startOffset(), out.data(), out.size()));
    return out;
}

} // namespace
#endif

class TestTerminalWindow : public QObject
{
    Q_OBJECT
private Q_SLOTS:
    void initTestCase();
    void availability();
#ifdef TETHER_HAVE_QTERMWIDGET
    void replayAndTyping();
    void replayAnswersAreNotTyped();
    void widgetAnswersTheReplayFence();
    void bareLineFeedIsNotTranslated();
    void marginsResetByResizeInReplay();
    void closingDetachesWithoutKilling();
    void followsARestartInPlace();
    void saysWhenTheServerShutsDown();
    void saysWhenTheServerIsGone();
    void supersedesAndTakesOver();
    void exitMakesReadOnly();
    void titleFollowsNameElseTitle();
    void appearanceFromSettings();
    void sizeDrivesSession();
    void reattachesAtItsOwnSize();
    void reattachAtAnotherSizeKeepsEveryLine();
    void zoomResizesSession();
    void largeOutputFlowsThrough();
    void watchModeDoesNotType();
    void watchWindowFollowsSessionSize();
    void watchWindowShowsASessionWiderThanTheScreen();
    void copyPasteKeysSendNothing();
    void pasteIsBracketed();
    void multilinePasteAsksNothing();
    void searchBarAndZoomKeys();
    void contextMenuActions();
    void selectAllCopyKeepsLineBreaks();
    void searchDebugLinesAreFiltered();
    void colourSevenIsReadable();
    void jumpToPrompt();
    void jumpToPromptAfterAReplay();
    void jumpToPromptWhenTheScrollbackIsFull();
    void copyLastOutput();
    void copyLastOutputWithoutIntegration();
#endif

private:
#ifdef TETHER_HAVE_QTERMWIDGET
    /// A bash session with the shipped shell integration (found beside the
    /// build, as by `tether serve`), HOME at m_home, prompt "P> ".
    Session *startBash(SessionRegistry &registry);
    /// Types `line` + Enter into the window once the shell is at its prompt
    /// and waits for the command to end (its record in the session's list).
    static bool runInWindow(TerminalWindow &w, Session *s, const QString &line);
    QTemporaryDir m_home;
    static QWidget *display(TerminalWindow &w);
    static void type(TerminalWindow &w, const QString &text);
    static void openOn(TerminalWindow &w);
    static void programSeesSessionSize(TerminalWindow &w, Session *s);
#endif
};

void TestTerminalWindow::initTestCase()
{
    // A child that exits while the test writes to its PTY must not kill us.
    signal(SIGPIPE, SIG_IGN);
}

void TestTerminalWindow::availability()
{
#ifdef TETHER_HAVE_QTERMWIDGET
    QVERIFY(localTerminalAvailable());
    QVERIFY(localTerminalUnavailableReason().isEmpty());
#else
    QVERIFY(!localTerminalAvailable());
    QVERIFY(localTerminalUnavailableReason().contains(QStringLiteral("QTermWidget")));
    QVERIFY(localTerminalUnavailableReason().contains(QStringLiteral("browser")));
    QSKIP("built without QTermWidget (none for this Qt version here): the window tests need it");
#endif
}

#ifdef TETHER_HAVE_QTERMWIDGET

QWidget *TestTerminalWindow::display(TerminalWindow &w)
{
    // The widget that takes key events is QTermWidget's TerminalDisplay child.
    const auto kids = w.terminal()->findChildren<QWidget *>();
    for (QWidget *k : kids) {
        if (QByteArray(k->metaObject()->className()).endsWith("TerminalDisplay"))
            return k;
    }
    return w.terminal();
}

void TestTerminalWindow::type(TerminalWindow &w, const QString &text)
{
    QTest::keyClicks(display(w), text);
}

/// Shows `w`, attaches it and waits until its replay is written.
void TestTerminalWindow::openOn(TerminalWindow &w)
{
    w.resize(700, 400);
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    // Shortcuts match in the active window's focus widget.
    w.activateWindow();
    QVERIFY(QTest::qWaitForWindowActive(&w));
    display(w)->setFocus();
    QVERIFY(w.attachSession());
    QTRY_VERIFY(w.isAttached());
    QTRY_VERIFY(!w.isReplaying());
}

/// Runs `stty size` in the session's shell: it prints the session's rows and columns.
void TestTerminalWindow::programSeesSessionSize(TerminalWindow &w, Session *s)
{
    type(w, QStringLiteral("stty size"));
    QTest::keyClick(display(w), Qt::Key_Return);
    const QByteArray expect = QByteArray::number(s->rows()) + ' ' + QByteArray::number(s->cols());
    QTRY_VERIFY2(ringText(s).contains(expect), ringText(s).constData());
}

void TestTerminalWindow::replayAndTyping()
{
    ServerTest::Fixture f;
    QVERIFY(f.start());
    SessionRegistry &registry = *f.registry;
    Session *s = registry.create(shellOptions(QStringLiteral("echo before-attach-$((6*7)); exec /bin/sh")));
    QVERIFY(s);
    QTRY_VERIFY(ringText(s).contains("before-attach-42"));

    TerminalWindow w(endpointOf(f), s->id(), ViewerMode::Control);
    w.resize(w.sizeForCells(s->cols(), s->rows()));
    w.resize(700, 400);
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    QVERIFY(w.attachSession());
    QTRY_VERIFY(w.isAttached());
    QVERIFY(w.isAttached());
    // The window is the session's control viewer, a client over WebSocket
    // that says it is the desktop's window (client=desktop).
    QVERIFY(s->controlViewer());
    QCOMPARE(s->controlViewer()->kind(), ViewerKind::LocalWindow);

    // The replay (output from before the window existed) is on screen.
    QTRY_VERIFY2(w.screenText().contains(QStringLiteral("before-attach-42")), qPrintable(w.screenText()));
    QTRY_VERIFY(!w.isReplaying());

    // Keys typed into the widget reach the shell. Typed only once the shell
    // shows its prompt: the line discipline echoes input at once, so input
    // typed before a late prompt comes out as "echo hi\r\n$ hi\r\n" (it
    // failed once under load that way).
    QTRY_VERIFY2(ringText(s).endsWith("$ "), ringText(s).constData());
    type(w, QStringLiteral("echo hi"));
    QTest::keyClick(display(w), Qt::Key_Return);
    QTRY_VERIFY2(ringText(s).contains("\r\nhi\r\n"), ringText(s).constData());
    QTRY_VERIFY(w.screenText().contains(QStringLiteral("\nhi\n")));

    // And bytes the widget emits through sendData (paste, key sequences) too.
    QTRY_VERIFY2(ringText(s).endsWith("\r\nhi\r\n$ "), ringText(s).constData());
    Q_EMIT w.terminal()->sendData("echo $((40+2))x\r", 16);
    QTRY_VERIFY(ringText(s).contains("\r\n42x\r\n"));
}

void TestTerminalWindow::replayAnswersAreNotTyped()
{
    ServerTest::Fixture f;
    QVERIFY(f.start());
    SessionRegistry &registry = *f.registry;
    // Before any window exists, the program asks for the cursor position
    // (DSR 6). A terminal rendering that replay answers "ESC[row;colR"; the
    // answer must not be typed into the program (microsoft/vscode#123803).
    // The server answers the query (no viewer yet: docs/protocol.md, "Queries
    // while detached"); the program reads that answer, as programs do.
    Session *s = registry.create(shellOptions(QStringLiteral(
        "exec bash -c 'printf \"query:\\033[6n\\n\"; IFS= read -rsd R -t 5 x; exec env \"PS1=$ \" /bin/sh'")));
    QVERIFY(s);
    QTRY_VERIFY(ringText(s).contains("query:"));
    QTRY_VERIFY(ringText(s).contains("$ "));
    const quint64 before = s->offset();

    TerminalWindow w(endpointOf(f), s->id(), ViewerMode::Control);
    w.resize(w.sizeForCells(s->cols(), s->rows()));
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    QVERIFY(w.attachSession());
    // Gated from the attach on (the replay follows), until the fence's answer.
    QVERIFY(w.isReplaying());
    QTRY_VERIFY(w.isAttached());
    QTRY_VERIFY(!w.isReplaying());

    // Type a marker: if an answer had been sent, the tty would have echoed it
    // ("^[[1;7R") before the marker.
    type(w, QStringLiteral("echo marker"));
    QTest::keyClick(display(w), Qt::Key_Return);
    QTRY_VERIFY(ringText(s).contains("\r\nmarker\r\n"));
    const QByteArray after = ringText(s).mid(int(before - s->buffer().startOffset()));
    QVERIFY2(!after.contains("^[["), after.constData());

    // Positive control: the same query in live output IS answered (the widget
    // really answers; suppression is what kept the replay quiet).
    type(w, QStringLiteral("printf '\\033[6n'; read x; echo got:$x"));
    QTest::keyClick(display(w), Qt::Key_Return);
    QTRY_VERIFY2(ringText(s).contains("^[["), ringText(s).constData());
}

void TestTerminalWindow::widgetAnswersTheReplayFence()
{
    // The replay input gate (ReplayInputGate, shared with `tether attach`)
    // relies on the terminal answering a Device Status Report (CSI 5 n)
    // after the answers to the replay's own queries. QTermWidget's emulator
    // does, through sendData: the gate opens on that answer, long before its
    // fallback timeout.
    ServerTest::Fixture f;
    QVERIFY(f.start());
    SessionRegistry &registry = *f.registry;
    // The server answers both (no viewer yet); the program reads them.
    // Echo is off before the queries: the answers can arrive before
    // `read -s` turns it off, and the tty echoed them (seen under load).
    Session *s = registry.create(shellOptions(QStringLiteral(
        "exec bash -c 'stty -echo; printf \"q:\\033[6n\\033[c\\n\"; IFS= read -rsd R -t 5 x;"
        " IFS= read -rsd c -t 5 y; stty echo; exec env \"PS1=$ \" /bin/sh'")));
    QVERIFY(s);
    QTRY_VERIFY(ringText(s).contains("$ "));
    TerminalWindow w(endpointOf(f), s->id(), ViewerMode::Control);
    w.resize(w.sizeForCells(s->cols(), s->rows()));
    QList<QByteArray> sent;
    // The chunk whose filtering opened the gate: this slot is connected
    // after the window's own (Qt calls them in that order), so the gate has
    // seen the chunk when it runs. Opened by the fence's answer, that is the
    // answer's chunk; opened by the timeout (the answer not recognised), it
    // is none (or a later one).
    int openedAt = -1;
    connect(w.terminal(), &QTermWidget::sendData, this, [&](const char *d, int n) {
        sent << QByteArray(d, n);
        if (openedAt < 0 && !w.isReplaying())
            openedAt = int(sent.size()) - 1;
    });
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    QVERIFY(w.attachSession());
    // Gated from the attach on (the replay follows), until the fence's answer.
    QVERIFY(w.isReplaying());
    QTRY_VERIFY(w.isAttached());
    QTRY_VERIFY(!w.isReplaying());
    // In order: the answers to the replay's queries (cursor position,
    // device attributes), then the answer to the fence.
    auto first = [&](const char *prefix, char final) {
        for (int i = 0; i < sent.size(); ++i) {
            if (sent[i].startsWith(prefix) && sent[i].endsWith(final))
                return i;
        }
        return -1;
    };
    const int cpr = first("\x1b[", 'R');
    const int da = first("\x1b[?", 'c');
    const int dsr = sent.indexOf(QByteArrayLiteral("\x1b[0n"));
    const QByteArray all = sent.join('|').toPercentEncoding();
    QVERIFY2(dsr >= 0, all.constData());
    QVERIFY2(cpr >= 0 && cpr < dsr, all.constData());
    QVERIFY2(da >= 0 && da < dsr, all.constData());
    // The fence's answer opened the gate (not kAnswerTimeoutMs): the gate
    // was still closed for every chunk before it and open right after it.
    QVERIFY2(openedAt == dsr, qPrintable(QStringLiteral("opened at chunk %1, answer at %2: %3")
                                             .arg(openedAt).arg(dsr).arg(QString::fromLatin1(all))));
    // None of them reached the program: the shell did not echo them. A
    // round trip on the same connection: what the window sent before this
    // line (a leaked answer) reached the shell, and was echoed, first.
    type(w, QStringLiteral("echo fenced-$((2+3))"));
    QTest::keyClick(display(w), Qt::Key_Return);
    QTRY_VERIFY(ringText(s).contains("fenced-5\r\n"));
    QVERIFY2(!ringText(s).contains("^["), ringText(s).constData());
}

void TestTerminalWindow::bareLineFeedIsNotTranslated()
{
    ServerTest::Fixture f;
    QVERIFY(f.start());
    SessionRegistry &registry = *f.registry;
    // With OPOST off on the session's tty, the program's bare LF reaches the
    // window as LF. Were OPOST left on in the widget's own PTY, LF would become
    // CRLF and "cd" would start in column 0.
    Session *s = registry.create(shellOptions(QStringLiteral("stty -opost; printf 'ab\\ncd\\r\\n'; stty opost; exec /bin/sh")));
    QVERIFY(s);
    QTRY_VERIFY(ringText(s).contains("ab\ncd"));
    TerminalWindow w(endpointOf(f), s->id(), ViewerMode::Control);
    w.resize(w.sizeForCells(s->cols(), s->rows()));
    w.show();
    QVERIFY(w.attachSession());
    QTRY_VERIFY(w.isAttached());
    QTRY_VERIFY2(w.screenText().contains(QStringLiteral("ab\n  cd")), qPrintable(w.screenText()));
}

void TestTerminalWindow::marginsResetByResizeInReplay()
{
    ServerTest::Fixture f;
    QVERIFY(f.start());
    SessionRegistry &registry = *f.registry;
    // Margins 2..4 (as a program sets them for its size), then the window
    // grew: the terminal reset them. The window's replay must not scroll the
    // lines after that inside 3 rows (they would be lost: below a top margin
    // nothing scrolls into the history).
    Session *s = registry.create(shellOptions(QStringLiteral(
        "printf '\\033[2;4rset\\n'; read l; for i in 1 2 3 4 5 6; do echo line-$i; done; exec sleep 30")));
    QVERIFY(s);
    FakeViewer v;
    s->attach(&v, ViewerMode::Control, std::nullopt);
    QTRY_VERIFY(ringText(s).contains("set"));
    QVERIFY(s->resize(&v, 90, 30));
    QVERIFY(s->sendInput(&v, QByteArrayLiteral("\n")));
    QTRY_VERIFY(ringText(s).contains("line-6"));
    s->detach(&v);
    TerminalWindow w(endpointOf(f), s->id(), ViewerMode::Control);
    w.resize(w.sizeForCells(s->cols(), s->rows()));
    w.show();
    QVERIFY(w.attachSession());
    QTRY_VERIFY(w.isAttached());
    QTRY_VERIFY2(w.screenText().contains(QStringLiteral("line-6")), qPrintable(w.screenText()));
    for (int i = 1; i <= 6; ++i)
        QVERIFY2(w.screenText().contains(QStringLiteral("line-%1").arg(i)), qPrintable(w.screenText()));
}

void TestTerminalWindow::closingDetachesWithoutKilling()
{
    ServerTest::Fixture f;
    QVERIFY(f.start());
    SessionRegistry &registry = *f.registry;
    Session *s = registry.create(shellOptions());
    QVERIFY(s);
    const QString id = s->id();
    const pid_t pid = s->pid();
    auto *w = new TerminalWindow(endpointOf(f), s->id(), ViewerMode::Control);
    w->resize(w->sizeForCells(s->cols(), s->rows()));
    w->setAttribute(Qt::WA_DeleteOnClose);
    QSignalSpy destroyed(w, &QObject::destroyed);
    w->show();
    QVERIFY(w->attachSession());
    QTRY_VERIFY(w->isAttached());
    QVERIFY(s->controlViewer());
    QVERIFY(w->close());
    QVERIFY(destroyed.count() == 1 || destroyed.wait(2000));
    QTRY_COMPARE(s->controlViewer(), nullptr);
    QCOMPARE(registry.find(id), s);
    QCOMPARE(s->state(), Session::State::Running);
    QVERIFY(::kill(pid, 0) == 0);

    // The session still works: a new viewer can attach and type.
    FakeViewer v;
    s->attach(&v, ViewerMode::Control, std::nullopt);
    QVERIFY(s->sendInput(&v, QByteArrayLiteral("echo still-$((1+1))\n")));
    QTRY_VERIFY(v.data.contains("still-2"));
    s->detach(&v);
}

void TestTerminalWindow::followsARestartInPlace()
{
    // A restart in place closes the viewers 1012 and accepts nothing until
    // the next image serves: the window says it is reconnecting, and once
    // the server is back it resumes at its offset (the output it missed,
    // nothing twice), by itself.
    ServerTest::Fixture f;
    QVERIFY(f.start());
    Session *s = f.registry->create(shellOptions());
    QVERIFY(s);
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const QByteArray fifo = QFile::encodeName(dir.filePath(QStringLiteral("fifo")));
    QCOMPARE(::mkfifo(fifo.constData(), 0600), 0);
    TerminalWindow w(endpointOf(f), s->id(), ViewerMode::Control);
    w.resize(w.sizeForCells(s->cols(), s->rows()));
    openOn(w);
    QTRY_VERIFY(ringText(s).endsWith("$ "));
    // The program's next output waits for the test: cat of a FIFO.
    type(w, QStringLiteral("echo one; cat ") + QString::fromLocal8Bit(fifo));
    QTest::keyClick(display(w), Qt::Key_Return);
    QTRY_VERIFY(w.screenText().contains(QStringLiteral("\none\n")));

    QSignalSpy attachment(&w, &TerminalWindow::attachmentChanged);
    f.server->beginRestart();
    QTRY_VERIFY(w.isReconnecting());
    QVERIFY(!w.isAttached());
    QCOMPARE(attachment.count(), 1);
    QCOMPARE(w.bannerText(), QStringLiteral("Reconnecting to Tether…"));
    QVERIFY(w.windowTitle().contains(QStringLiteral("reconnecting")));

    // Output while the window is away. "one" on the screen does not mean
    // cat has opened the FIFO yet (under load it starts later): a writer's
    // non-blocking open fails with ENXIO until a reader has it (fifo(7)).
    int fd = -1;
    QVERIFY2(QTest::qWaitFor([&] { return (fd = ::open(fifo.constData(), O_WRONLY | O_NONBLOCK)) >= 0; }, 10000),
             qPrintable(QString::fromLocal8Bit(std::strerror(errno))));
    QCOMPARE(::write(fd, "two-2\n", 6), ssize_t(6));
    ::close(fd);
    QTRY_VERIFY(ringText(s).contains("two-2"));
    QVERIFY(!w.screenText().contains(QStringLiteral("two-2")));

    // The server is back (here: the restart did not happen).
    f.server->cancelRestart();
    QTRY_VERIFY_WITH_TIMEOUT(w.isAttached(), 15000);
    QVERIFY(!w.isReconnecting());
    QVERIFY(w.bannerText().isEmpty());
    QTRY_VERIFY(w.screenText().contains(QStringLiteral("\ntwo-2\n")));
    QCOMPARE(w.screenText().count(QStringLiteral("\none\n")), 1);
    QCOMPARE(w.screenText().count(QStringLiteral("\ntwo-2\n")), 1);
    // And it types again.
    QTRY_VERIFY(ringText(s).endsWith("$ "));
    type(w, QStringLiteral("echo three-$((1+2))"));
    QTest::keyClick(display(w), Qt::Key_Return);
    QTRY_VERIFY(w.screenText().contains(QStringLiteral("\nthree-3\n")));
}

void TestTerminalWindow::saysWhenTheServerShutsDown()
{
    ServerTest::Fixture f;
    QVERIFY(f.start());
    Session *s = f.registry->create(shellOptions());
    QVERIFY(s);
    TerminalWindow w(endpointOf(f), s->id(), ViewerMode::Control);
    w.resize(w.sizeForCells(s->cols(), s->rows()));
    openOn(w);
    f.server->close(); // 1001 "server shutting down"
    QTRY_VERIFY(!w.isAttached());
    QTRY_COMPARE(w.bannerText(), QStringLiteral("Tether is shutting down."));
    QVERIFY(!w.isReconnecting());
}

void TestTerminalWindow::saysWhenTheServerIsGone()
{
    // The server closes the viewers 1012 as for a restart in place, and
    // then never serves again (its listening socket is closed: connections
    // are refused): after setLostServerAfter() of refusals the window says
    // Tether is gone, and offers to reconnect.
    ServerTest::Fixture f;
    QVERIFY(f.start());
    Session *s = f.registry->create(shellOptions());
    QVERIFY(s);
    TerminalWindow w(endpointOf(f), s->id(), ViewerMode::Control);
    w.resize(w.sizeForCells(s->cols(), s->rows()));
    w.setLostServerAfter(300);
    openOn(w);
    f.server->beginRestart();
    QTRY_VERIFY(w.isReconnecting());
    f.server->close();
    QTRY_VERIFY_WITH_TIMEOUT(!w.isReconnecting(), 15000);
    QCOMPARE(w.bannerText(), QStringLiteral("Lost the connection to Tether: it is no longer running."));
    QVERIFY(!w.isAttached());
    bool offered = false;
    for (QPushButton *b : w.findChildren<QPushButton *>())
        offered = offered || (b->text() == QStringLiteral("Reconnect") && b->isVisible());
    QVERIFY(offered);
}

void TestTerminalWindow::supersedesAndTakesOver()
{
    ServerTest::Fixture f;
    QVERIFY(f.start());
    SessionRegistry &registry = *f.registry;
    Session *s = registry.create(shellOptions());
    QVERIFY(s);
    QTRY_VERIFY(ringText(s).contains("$ "));

    // A browser is attached; the window takes over from it.
    FakeViewer browser;
    s->attach(&browser, ViewerMode::Control, std::nullopt);
    TerminalWindow w(endpointOf(f), s->id(), ViewerMode::Control);
    w.resize(w.sizeForCells(s->cols(), s->rows()));
    w.show();
    QVERIFY(w.attachSession());
    QTRY_VERIFY(w.isAttached());
    QCOMPARE(browser.reasons, QList<DetachReason>{DetachReason::Superseded});
    QVERIFY(s->controlViewer() && s->controlViewer() != &browser);
    QTRY_VERIFY(!w.isReplaying());
    type(w, QStringLiteral("echo one"));
    QTest::keyClick(display(w), Qt::Key_Return);
    QTRY_VERIFY(w.screenText().contains(QStringLiteral("\none\n")));
    QTRY_VERIFY(!w.isReplaying());

    // The browser takes it back: the window says so and offers Take over.
    QSignalSpy attachment(&w, &TerminalWindow::attachmentChanged);
    s->attach(&browser, ViewerMode::Control, std::nullopt);
    QTRY_VERIFY(!w.isAttached());
    QTRY_COMPARE(attachment.count(), 1);
    QCOMPARE(w.bannerText(), QStringLiteral("Opened in another window."));
    QVERIFY(w.windowTitle().contains(QStringLiteral("detached")));
    QVERIFY(s->sendInput(&browser, QByteArrayLiteral("echo two\n")));
    // The output line and the next prompt, not the echoed command line (which
    // also ends in "two\r\n"): else the prompt can arrive after offsetBefore.
    QTRY_VERIFY(browser.data.contains("\ntwo\r\n$ "));

    // Typing in a superseded window goes nowhere.
    const quint64 offsetBefore = s->offset();
    type(w, QStringLiteral("echo nothere"));
    QTest::keyClick(display(w), Qt::Key_Return);
    QTest::qWait(100); // what it sent would have arrived (a negative check)
    QCOMPARE(s->offset(), offsetBefore);

    // Take over: resumes from the window's offset, so only "two" is replayed
    // (no reset: "one" stays on screen exactly once).
    QPushButton *takeOver = nullptr;
    for (QPushButton *b : w.findChildren<QPushButton *>()) {
        if (b->text() == QStringLiteral("Take over"))
            takeOver = b;
    }
    QVERIFY(takeOver);
    QVERIFY(takeOver->isVisible());
    QTest::mouseClick(takeOver, Qt::LeftButton);
    QTRY_VERIFY(w.isAttached());
    QTRY_COMPARE(browser.reasons.size(), 2);
    QCOMPARE(browser.reasons.last(), DetachReason::Superseded);
    QVERIFY(w.bannerText().isEmpty());
    QTRY_VERIFY(w.screenText().contains(QStringLiteral("\ntwo\n")));
    QCOMPARE(w.screenText().count(QStringLiteral("\none\n")), 1);
}

void TestTerminalWindow::exitMakesReadOnly()
{
    ServerTest::Fixture f;
    QVERIFY(f.start());
    SessionRegistry &registry = *f.registry;
    Session *s = registry.create(shellOptions());
    QVERIFY(s);
    TerminalWindow w(endpointOf(f), s->id(), ViewerMode::Control);
    w.resize(w.sizeForCells(s->cols(), s->rows()));
    w.show();
    QVERIFY(w.attachSession());
    QTRY_VERIFY(w.isAttached());
    QTRY_VERIFY(!w.isReplaying());
    type(w, QStringLiteral("exit 7"));
    QTest::keyClick(display(w), Qt::Key_Return);
    QTRY_VERIFY(w.hasExited());
    QTRY_VERIFY2(w.screenText().contains(QStringLiteral("[process exited with code 7]")), qPrintable(w.screenText()));
    QVERIFY(w.bannerText().contains(QStringLiteral("exited with code 7")));
    QVERIFY(w.bannerText().contains(QStringLiteral("read-only")));
    QVERIFY(w.isVisible()); // the window stays open
    QVERIFY(w.windowTitle().contains(QStringLiteral("exited")));
}

void TestTerminalWindow::titleFollowsNameElseTitle()
{
    ServerTest::Fixture f;
    QVERIFY(f.start());
    SessionRegistry &registry = *f.registry;
    Session *s = registry.create(shellOptions());
    QVERIFY(s);
    TerminalWindow w(endpointOf(f), s->id(), ViewerMode::Control);
    w.resize(w.sizeForCells(s->cols(), s->rows()));
    w.show();
    QVERIFY(w.attachSession());
    QTRY_VERIFY(w.isAttached());
    QTRY_VERIFY(!w.isReplaying());
    // The program's title while the session has no name.
    type(w, QStringLiteral("printf '\\033]2;prog title\\007'"));
    QTest::keyClick(display(w), Qt::Key_Return);
    QTRY_COMPARE(w.windowTitle(), QStringLiteral("prog title — Tether"));
    // A rename (from the API, the dashboard, the Sessions window) shows at once.
    QVERIFY(registry.rename(s, QStringLiteral("my build")));
    QTRY_COMPARE(w.windowTitle(), QStringLiteral("my build — Tether"));
    // The name wins over later titles; cleared, the title is back.
    type(w, QStringLiteral("printf '\\033]2;newer\\007'"));
    QTest::keyClick(display(w), Qt::Key_Return);
    QTRY_COMPARE(s->title(), QStringLiteral("newer"));
    QCOMPARE(w.windowTitle(), QStringLiteral("my build — Tether"));
    QVERIFY(registry.rename(s, QString()));
    QTRY_COMPARE(w.windowTitle(), QStringLiteral("newer — Tether"));
}

void TestTerminalWindow::appearanceFromSettings()
{
    ServerTest::Fixture f;
    QVERIFY(f.start());
    SessionRegistry &registry = *f.registry;
    Session *s = registry.create(shellOptions());
    QVERIFY(s);
    TerminalWindow w(endpointOf(f), s->id(), ViewerMode::Control);
    w.resize(w.sizeForCells(s->cols(), s->rows()));
    openOn(w);
    QCOMPARE(w.colorScheme(), QStringLiteral("BlackOnWhite"));
    QTRY_COMPARE(s->cols(), w.terminal()->screenColumnsCount());
    const int colsBefore = w.terminal()->screenColumnsCount();

    // Settings: another scheme, a larger font. Bigger cells in the same
    // window: fewer columns, and the session follows.
    w.setAppearance(QStringLiteral("WhiteOnBlack"), QString(), 20);
    QCOMPARE(w.colorScheme(), QStringLiteral("WhiteOnBlack"));
    QCOMPARE(w.terminal()->getTerminalFont().pointSize(), 20);
    QVERIFY(QFontInfo(w.terminal()->getTerminalFont()).fixedPitch());
    QTRY_VERIFY(w.terminal()->screenColumnsCount() < colsBefore);
    QTRY_COMPARE(s->cols(), w.terminal()->screenColumnsCount());
    // Ctrl+0 returns to the chosen font, not to the built-in one.
    QTest::keyClick(display(w), Qt::Key_Plus, Qt::ControlModifier);
    QTRY_VERIFY(w.terminal()->getTerminalFont().pointSize() > 20);
    QTest::keyClick(display(w), Qt::Key_0, Qt::ControlModifier);
    QTRY_COMPARE(w.terminal()->getTerminalFont().pointSize(), 20);

    // What QTermWidget does not have falls back.
    w.setAppearance(QStringLiteral("NoSuchScheme"), QStringLiteral("No Such Font Family"), 12);
    QCOMPARE(w.colorScheme(), QStringLiteral("BlackOnWhite"));
    QCOMPARE(w.terminal()->getTerminalFont().pointSize(), 12);
    QVERIFY(QFontInfo(w.terminal()->getTerminalFont()).fixedPitch());
}

void TestTerminalWindow::sizeDrivesSession()
{
    ServerTest::Fixture f;
    QVERIFY(f.start());
    SessionRegistry &registry = *f.registry;
    Session *s = registry.create(shellOptions());
    QVERIFY(s);
    TerminalWindow w(endpointOf(f), s->id(), ViewerMode::Control);
    w.resize(w.sizeForCells(s->cols(), s->rows()));
    w.resize(500, 300);
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    QVERIFY(w.attachSession());
    QTRY_VERIFY(w.isAttached());
    QTRY_COMPARE(s->cols(), w.terminal()->screenColumnsCount());
    QTRY_COMPARE(s->rows(), w.terminal()->screenLinesCount());
    const int cols1 = s->cols();
    w.resize(900, 600);
    QTRY_VERIFY(s->cols() > cols1);
    QTRY_COMPARE(s->cols(), w.terminal()->screenColumnsCount());
    QTRY_COMPARE(s->rows(), w.terminal()->screenLinesCount());
    // The program sees it (SIGWINCH + TIOCGWINSZ).
    programSeesSessionSize(w, s);
    QVERIFY(!QTest::currentTestFailed());
}

void TestTerminalWindow::reattachesAtItsOwnSize()
{
    // A long command line typed at 120 columns (a browser), then the window
    // attaches at about 80: it must show what a terminal that stayed
    // attached shows once resized to the window's size (the dashboard and
    // `tether attach` send their size with the attach; the window did not,
    // and its raw replay at the wrong width lost the line's first row).
    ServerTest::Fixture f;
    QVERIFY(f.start());
    SessionRegistry &registry = *f.registry;
    Session *s = registry.create(shellOptions());
    QVERIFY(s);
    QTRY_VERIFY(ringText(s).contains("$ "));
    // Attached from the start (the whole stream), never leaving.
    RenderingWatcher reference(s);
    s->attach(&reference, ViewerMode::Watch, std::nullopt);
    const auto leave = qScopeGuard([&] { s->detach(&reference); });
    FakeViewer browser;
    s->attach(&browser, ViewerMode::Control, std::nullopt);
    QVERIFY(s->resize(&browser, 120, 30));
    QCOMPARE(reference.vt.cols(), 120);
    QByteArray digits;
    for (int i = 0; i < 23; ++i)
        digits += QByteArray::number(i % 10).repeated(10);
    QVERIFY(s->sendInput(&browser, "echo " + digits + "\n"));
    QTRY_VERIFY(browser.data.contains(digits + "\r\n$ "));

    // As DesktopApp::attachHere opens one: shown, then attached at once.
    TerminalWindow w(endpointOf(f), s->id(), ViewerMode::Control);
    w.resize(w.sizeForCells(s->cols(), s->rows()));
    w.resize(w.sizeForCells(80, 24));
    w.show();
    QVERIFY(w.attachSession());
    QTRY_VERIFY(w.isAttached());
    const int cols = w.terminal()->screenColumnsCount();
    const int rows = w.terminal()->screenLinesCount();
    QVERIFY2(cols >= 20 && cols < 120 && rows >= 5, qPrintable(QStringLiteral("%1x%2").arg(cols).arg(rows)));
    // The session took the window's size with the attach, before the replay.
    QCOMPARE(s->cols(), cols);
    QCOMPARE(s->rows(), rows);
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    QCOMPARE(w.terminal()->screenColumnsCount(), cols);
    QCOMPARE(w.terminal()->screenLinesCount(), rows);
    QCOMPARE(browser.reasons, QList<DetachReason>{DetachReason::Superseded});
    QTRY_VERIFY(!w.isReplaying());
    QTRY_COMPARE(TestUtil::windowScreen(w), renderedScreen(reference.vt));
    // The line's start (its first row) is on the screen.
    QVERIFY2(TestUtil::windowScreen(w).contains(QStringLiteral("$ echo 000")), qPrintable(TestUtil::windowScreen(w)));
}

void TestTerminalWindow::reattachAtAnotherSizeKeepsEveryLine()
{
    // Issue 29, the fidelity corpus's size rows (tests/vectors/
    // fidelity-corpus.json "size_rows"): at 80x24 a program leaves the
    // scroll margins at 1;24 (the whole screen there, as vim does), then
    // 300 lines; the window, taller, attaches at its size and must have
    // every line in its history or its screen.
    QFile corpus(QStringLiteral(TETHER_SOURCE_DIR "/tests/vectors/fidelity-corpus.json"));
    QVERIFY(corpus.open(QIODevice::ReadOnly));
    const QJsonArray rows = QJsonDocument::fromJson(corpus.readAll()).object().value(QStringLiteral("size_rows")).toArray();
    QVERIFY(!rows.isEmpty());
    for (const QJsonValue &v : rows) {
        const QJsonObject row = v.toObject();
        ServerTest::Fixture f;
        QVERIFY(f.start());
        SessionRegistry &registry = *f.registry;
        registry.setTeardownGrace(200);
        SpawnOptions o = shellOptions();
        o.cols = row.value(QStringLiteral("cols")).toInt();
        o.rows = row.value(QStringLiteral("rows")).toInt();
        Session *s = registry.create(o);
        QVERIFY(s);
        QTRY_VERIFY(ringText(s).contains("$ "));
        FakeViewer typist;
        s->attach(&typist, ViewerMode::Control, std::nullopt);
        QVERIFY(s->sendInput(&typist, row.value(QStringLiteral("type")).toString().toUtf8()));
        const QByteArray until = row.value(QStringLiteral("until")).toString().toUtf8();
        QTRY_VERIFY_WITH_TIMEOUT(typist.data.contains(until) && typist.data.indexOf("$ ", typist.data.indexOf(until)) > 0, 15000);

        // The typist leaves: the window is the next control viewer.
        s->detach(&typist);
        TerminalWindow w(endpointOf(f), s->id(), ViewerMode::Control);
        w.resize(w.sizeForCells(120, 40));
        w.show();
        QVERIFY(w.attachSession());
        QTRY_VERIFY(w.isAttached());
        QTRY_VERIFY(!w.isReplaying());
        QVERIFY2(s->rows() > o.rows, qPrintable(QStringLiteral("%1 rows").arg(s->rows())));
        const QString prefix = row.value(QStringLiteral("lines")).toObject().value(QStringLiteral("prefix")).toString();
        const int from = row.value(QStringLiteral("lines")).toObject().value(QStringLiteral("from")).toInt();
        const int to = row.value(QStringLiteral("lines")).toObject().value(QStringLiteral("to")).toInt();
        QStringList missing;
        QTRY_VERIFY_WITH_TIMEOUT(w.screenText().contains(prefix + QString::number(to)), 10000);
        QStringList lines = w.screenText().split(QLatin1Char('\n'));
        for (QString &l : lines)
            l = l.trimmed();
        for (int i = from; i <= to; ++i)
            if (!lines.contains(prefix + QString::number(i)))
                missing << QString::number(i);
        QVERIFY2(missing.isEmpty(), qPrintable(QStringLiteral("lines missing from the window's history + screen at %1x%2: %3")
                                                   .arg(s->cols()).arg(s->rows()).arg(missing.join(QLatin1Char(' ')))));
        QCOMPARE(lines.count(prefix + QString::number(to)), 1);
    }
}

void TestTerminalWindow::zoomResizesSession()
{
    // Ctrl++ / Ctrl+- / Ctrl+0 change the cells in the same pixels: the
    // session (and the program, by SIGWINCH) must follow as on a resize.
    // Without it `stty size` said 123x35 while about 98 columns showed, and
    // vim drew at the old width (a new user's tryout).
    ServerTest::Fixture f;
    QVERIFY(f.start());
    SessionRegistry &registry = *f.registry;
    Session *s = registry.create(shellOptions());
    QVERIFY(s);
    TerminalWindow w(endpointOf(f), s->id(), ViewerMode::Control);
    w.resize(w.sizeForCells(s->cols(), s->rows()));
    openOn(w);
    QTRY_COMPARE(s->cols(), w.terminal()->screenColumnsCount());
    QTRY_COMPARE(s->rows(), w.terminal()->screenLinesCount());
    // The resize timer of show() has run out, so only the zoom can size the
    // session from here on.
    QTRY_VERIFY(!w.isResizePending());
    const int cols0 = s->cols();
    const int rows0 = s->rows();
    QCOMPARE(w.terminal()->screenColumnsCount(), cols0);

    QTest::keyClick(display(w), Qt::Key_Plus, Qt::ControlModifier);
    QTRY_VERIFY(w.terminal()->screenColumnsCount() < cols0);
    QVERIFY(w.terminal()->screenLinesCount() < rows0);
    QTRY_COMPARE(s->cols(), w.terminal()->screenColumnsCount());
    QTRY_COMPARE(s->rows(), w.terminal()->screenLinesCount());
    const int cols1 = s->cols();
    // The program sees it (SIGWINCH + TIOCGWINSZ).
    programSeesSessionSize(w, s);
    QVERIFY(!QTest::currentTestFailed());

    // Zoom out: the cells of the start again, and the session follows.
    QTest::keyClick(display(w), Qt::Key_Minus, Qt::ControlModifier);
    QTRY_COMPARE(w.terminal()->screenColumnsCount(), cols0);
    QTRY_COMPARE(s->cols(), cols0);
    QTRY_COMPARE(s->rows(), rows0);

    // Ctrl+0 (reset zoom) too.
    QTest::keyClick(display(w), Qt::Key_Plus, Qt::ControlModifier);
    QTRY_COMPARE(s->cols(), cols1);
    QTest::keyClick(display(w), Qt::Key_0, Qt::ControlModifier);
    QTRY_COMPARE(w.terminal()->screenColumnsCount(), cols0);
    QTRY_COMPARE(s->cols(), cols0);
    QTRY_COMPARE(s->rows(), rows0);
}

void TestTerminalWindow::largeOutputFlowsThrough()
{
    ServerTest::Fixture f;
    QVERIFY(f.start());
    SessionRegistry &registry = *f.registry;
    Session *s = registry.create(shellOptions());
    QVERIFY(s);
    TerminalWindow w(endpointOf(f), s->id(), ViewerMode::Control);
    w.resize(w.sizeForCells(s->cols(), s->rows()));
    w.show();
    QVERIFY(w.attachSession());
    QTRY_VERIFY(w.isAttached());
    QTRY_VERIFY(!w.isReplaying());
    // ~3.9 MB through the window's PTY: non-blocking writes behind a notifier;
    // the queue stays bounded: over kHighWatermark the window pauses the
    // attachment (`pause`: the server stops reading the program's output),
    // and what was in flight then (at most the server's 1 MiB queue, the
    // window reading its socket at once) still arrives. Without the pause
    // the whole output would pile up in the queue, the loopback being far
    // faster than the widget.
    type(w, QStringLiteral("seq 1 500000; echo done-$((2*3))"));
    QTest::keyClick(display(w), Qt::Key_Return);
    qsizetype maxQueued = 0;
    bool paused = false;
    QTRY_VERIFY_WITH_TIMEOUT((maxQueued = qMax(maxQueued, w.queuedBytes()), paused = paused || w.isPaused(),
                              w.screenText().contains(QStringLiteral("\ndone-6\n"))), 60000);
    QVERIFY(paused);
    QVERIFY2(maxQueued <= TerminalWindow::kHighWatermark + 1024 * 1024, QByteArray::number(qint64(maxQueued)).constData());
    QVERIFY(w.screenText().contains(QStringLiteral("\n499999\n500000\n")));
    QVERIFY(!w.isPaused());
    QCOMPARE(w.queuedBytes(), 0);
}

void TestTerminalWindow::watchModeDoesNotType()
{
    ServerTest::Fixture f;
    QVERIFY(f.start());
    SessionRegistry &registry = *f.registry;
    Session *s = registry.create(shellOptions());
    QVERIFY(s);
    FakeViewer controller;
    s->attach(&controller, ViewerMode::Control, std::nullopt);
    TerminalWindow w(endpointOf(f), s->id(), ViewerMode::Watch);
    w.resize(w.sizeForCells(s->cols(), s->rows()));
    w.show();
    QVERIFY(w.attachSession());
    QTRY_VERIFY(w.isAttached());
    QCOMPARE(s->controlViewer(), static_cast<Viewer *>(&controller)); // not superseded
    QCOMPARE(s->watchers().size(), 1);
    QVERIFY(controller.reasons.isEmpty());
    QVERIFY(w.windowTitle().contains(QStringLiteral("watching")));
    QVERIFY(s->sendInput(&controller, QByteArrayLiteral("echo watched-$((3*3))\n")));
    QTRY_VERIFY(w.screenText().contains(QStringLiteral("watched-9")));
    QTRY_VERIFY(!w.isReplaying());
    const quint64 before = s->offset();
    type(w, QStringLiteral("echo no"));
    QTest::keyClick(display(w), Qt::Key_Return);
    QTest::qWait(100); // what it sent would have arrived (a negative check)
    QCOMPARE(s->offset(), before);
    w.close();
    QTRY_COMPARE(s->watchers().size(), 0);
    s->detach(&controller);
}

void TestTerminalWindow::watchWindowFollowsSessionSize()
{
    ServerTest::Fixture f;
    QVERIFY(f.start());
    SessionRegistry &registry = *f.registry;
    Session *s = registry.create(shellOptions());
    QVERIFY(s);
    FakeViewer controller;
    s->attach(&controller, ViewerMode::Control, std::nullopt);
    QVERIFY(s->resize(&controller, 60, 15));
    TerminalWindow w(endpointOf(f), s->id(), ViewerMode::Watch);
    w.resize(w.sizeForCells(s->cols(), s->rows()));
    QVERIFY(w.attachSession()); // before show(), as the desktop app does
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    // It opens at the session's size, not at its own idea of a good size.
    QTRY_COMPARE(w.terminal()->screenColumnsCount(), 60);
    QTRY_COMPARE(w.terminal()->screenLinesCount(), 15);

    // The control viewer resizes: the watch window follows, both ways.
    QVERIFY(s->resize(&controller, 72, 20));
    QTRY_COMPARE(w.terminal()->screenColumnsCount(), 72);
    QTRY_COMPARE(w.terminal()->screenLinesCount(), 20);
    QVERIFY(s->resize(&controller, 41, 10));
    QTRY_COMPARE(w.terminal()->screenColumnsCount(), 41);
    QTRY_COMPARE(w.terminal()->screenLinesCount(), 10);
    // Following is not sizing: the session keeps the controller's size.
    QCOMPARE(s->cols(), 41);
    QCOMPARE(s->rows(), 10);

    w.close();
    s->detach(&controller);
}

void TestTerminalWindow::watchWindowShowsASessionWiderThanTheScreen()
{
    // Issue 29: `htop` at 200x50 from the CLI, then Watch on a screen that
    // cannot show 200 columns: the window, bounded by the screen, gave its
    // terminal fewer columns, and the emulator wraps at its own width, so
    // what the program drew near the right edge landed elsewhere ("ro 81"
    // where the controlling terminal showed "   81"). The watch window's
    // terminal keeps the session's columns×rows (scroll bars show the rest)
    // and shows what a terminal of that size shows.
    ServerTest::Fixture f;
    QVERIFY(f.start());
    SessionRegistry &registry = *f.registry;
    Session *s = registry.create(shellOptions(QStringLiteral(
        "stty -echo; read x; printf '\\033[H\\033[2J\\033[3;190Hro 81 wide\\033[3;190H   81\\033[50;1Hend'; exec sleep 300")));
    QVERIFY(s);
    RenderingWatcher reference(s);
    s->attach(&reference, ViewerMode::Watch, std::nullopt);
    const auto leave = qScopeGuard([&] { s->detach(&reference); });
    FakeViewer controller;
    s->attach(&controller, ViewerMode::Control, std::nullopt);
    QVERIFY(s->resize(&controller, 200, 50));
    QVERIFY(s->sendInput(&controller, QByteArrayLiteral("\n")));
    QTRY_VERIFY(controller.data.contains("end"));
    const QSize screen = QGuiApplication::primaryScreen()->availableGeometry().size();
    TerminalWindow w(endpointOf(f), s->id(), ViewerMode::Watch);
    // The session does not fit on this screen.
    QVERIFY2(w.sizeForCells(200, 50) == w.sizeForCells(400, 100), "the screen is large enough for 200x50");
    QVERIFY(w.attachSession());
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    QTRY_COMPARE(w.terminal()->screenColumnsCount(), 200);
    QTRY_COMPARE(w.terminal()->screenLinesCount(), 50);
    QTRY_VERIFY(!w.isReplaying());
    QTRY_COMPARE(TestUtil::windowScreen(w), renderedScreen(reference.vt));
    QVERIFY(TestUtil::windowScreen(w).contains(QStringLiteral("   81 wide")));
    // The window itself stays on the screen.
    QVERIFY(w.width() <= screen.width() && w.height() <= screen.height());
    s->detach(&controller);
}

#endif // TETHER_HAVE_QTERMWIDGET


#ifdef TETHER_HAVE_QTERMWIDGET
namespace {
/// WCAG 2 relative luminance of an sRGB colour.
double luminance(QColor c)
{
    auto ch = [](double v) { return v <= 0.03928 ? v / 12.92 : std::pow((v + 0.055) / 1.055, 2.4); };
    return 0.2126 * ch(c.redF()) + 0.7152 * ch(c.greenF()) + 0.0722 * ch(c.blueF());
}
/// WCAG 2 contrast ratio (1..21).
double contrast(QColor a, QColor b)
{
    const double la = luminance(a), lb = luminance(b);
    return (qMax(la, lb) + 0.05) / (qMin(la, lb) + 0.05);
}
} // namespace

void TestTerminalWindow::copyPasteKeysSendNothing()
{
    // The program reads one byte at a time, unbuffered and without signals,
    // and prints each in hex: whatever the keys send, it shows.
    ServerTest::Fixture f;
    QVERIFY(f.start());
    SessionRegistry &registry = *f.registry;
    Session *s = registry.create(shellOptions(QStringLiteral(
        "echo copy-$((6*7))-me; stty -isig -icanon -echo; echo ready-$((2*3));"
        " while :; do dd bs=1 count=1 2>/dev/null | od -An -tx1 | sed 's/^/byte:/'; done")));
    QVERIFY(s);
    TerminalWindow w(endpointOf(f), s->id(), ViewerMode::Control);
    w.resize(w.sizeForCells(s->cols(), s->rows()));
    openOn(w);
    QTRY_VERIFY2(w.screenText().contains(QStringLiteral("ready-6")), qPrintable(w.screenText()));

    QClipboard *cb = QGuiApplication::clipboard();
    cb->setText(QStringLiteral("before"));
    if (cb->supportsSelection())
        cb->setText(QString(), QClipboard::Selection);
    // Rows count from the top of the scrollback, as screenText() does.
    const int row = w.screenText().split(QLatin1Char('\n')).indexOf(QStringLiteral("copy-42-me"));
    QVERIFY2(row >= 0, qPrintable(w.screenText()));
    w.terminal()->setSelectionStart(row, 0);
    w.terminal()->setSelectionEnd(row, 9);
    QCOMPARE(w.terminal()->selectedText(true).trimmed(), QStringLiteral("copy-42-me"));
    QTest::keyClick(display(w), Qt::Key_C, Qt::ControlModifier | Qt::ShiftModifier);
    QTRY_COMPARE(cb->text().trimmed(), QStringLiteral("copy-42-me"));
    // Shift+Insert with an empty selection pastes nothing (never ESC[2;2~),
    // Ctrl+Shift+F only opens the search bar, Ctrl+0 only zooms.
    QTest::keyClick(display(w), Qt::Key_Insert, Qt::ShiftModifier);
    QTest::keyClick(display(w), Qt::Key_F, Qt::ControlModifier | Qt::ShiftModifier);
    QTest::keyClick(display(w), Qt::Key_F, Qt::ControlModifier | Qt::ShiftModifier);
    QTest::keyClick(display(w), Qt::Key_0, Qt::ControlModifier);
    display(w)->setFocus();
    // The next byte the program reads is the z typed after them.
    type(w, QStringLiteral("z"));
    QTRY_VERIFY2(ringText(s).contains("byte: 7a"), ringText(s).constData());
    QVERIFY2(!ringText(s).contains("byte: 03"), ringText(s).constData());
    QVERIFY2(ringText(s).indexOf("byte:") == ringText(s).indexOf("byte: 7a"), ringText(s).constData());
}

void TestTerminalWindow::pasteIsBracketed()
{
    ServerTest::Fixture f;
    QVERIFY(f.start());
    SessionRegistry &registry = *f.registry;
    Session *s = registry.create(shellOptions(QStringLiteral(
        "printf '\\033[?2004h'; stty raw -echo; echo ready-$((2*3));"
        " head -c 18 | od -An -tx1 -v | tr -d ' \\n' | sed 's/^/got:/'; echo; exec sleep 300")));
    QVERIFY(s);
    TerminalWindow w(endpointOf(f), s->id(), ViewerMode::Control);
    w.resize(w.sizeForCells(s->cols(), s->rows()));
    openOn(w);
    QTRY_VERIFY2(w.screenText().contains(QStringLiteral("ready-6")), qPrintable(w.screenText()));
    QGuiApplication::clipboard()->setText(QStringLiteral("pasted"));
    QTest::keyClick(display(w), Qt::Key_V, Qt::ControlModifier | Qt::ShiftModifier);
    // ESC [ 2 0 0 ~  p a s t e d  ESC [ 2 0 1 ~
    QTRY_VERIFY2(ringText(s).contains("got:1b5b3230307e7061737465641b5b3230317e"), ringText(s).constData());
}

void TestTerminalWindow::multilinePasteAsksNothing()
{
    // QTermWidget 1.2 leaves its "confirm multiline paste" and "trim trailing
    // newlines" flags uninitialised (TerminalDisplay's constructor sets
    // neither): a new user got a "Paste multiline text" dialog and took it
    // for lost keys. The window turns both off: a paste is what the
    // clipboard holds, newlines included, as in xterm.
    ServerTest::Fixture f;
    QVERIFY(f.start());
    SessionRegistry &registry = *f.registry;
    Session *s = registry.create(shellOptions(QStringLiteral(
        "stty raw -echo; echo ready-$((2*3));"
        " head -c 6 | od -An -tx1 -v | tr -d ' \\n' | sed 's/^/got:/'; echo; exec sleep 300")));
    QVERIFY(s);
    TerminalWindow w(endpointOf(f), s->id(), ViewerMode::Control);
    w.resize(w.sizeForCells(s->cols(), s->rows()));
    openOn(w);
    QTRY_VERIFY2(w.screenText().contains(QStringLiteral("ready-6")), qPrintable(w.screenText()));
    // A dialog would run its own event loop inside the key press: close it
    // from a timer, and count it.
    int dialogs = 0;
    QTimer closer;
    closer.setInterval(50);
    connect(&closer, &QTimer::timeout, this, [&dialogs] {
        if (QWidget *modal = QApplication::activeModalWidget()) {
            ++dialogs;
            modal->close();
        }
    });
    closer.start();
    QGuiApplication::clipboard()->setText(QStringLiteral("a\nb\nc\n"));
    QTest::keyClick(display(w), Qt::Key_V, Qt::ControlModifier | Qt::ShiftModifier);
    // Every line, the last newline too (as CR, as typed).
    QTRY_VERIFY2(ringText(s).contains("got:610d620d630d"), ringText(s).constData());
    QCOMPARE(dialogs, 0);
}

void TestTerminalWindow::searchBarAndZoomKeys()
{
    ServerTest::Fixture f;
    QVERIFY(f.start());
    SessionRegistry &registry = *f.registry;
    Session *s = registry.create(shellOptions());
    QVERIFY(s);
    TerminalWindow w(endpointOf(f), s->id(), ViewerMode::Control);
    w.resize(w.sizeForCells(s->cols(), s->rows()));
    openOn(w);
    QWidget *bar = nullptr;
    for (QWidget *k : w.terminal()->findChildren<QWidget *>()) {
        if (QByteArray(k->metaObject()->className()).endsWith("SearchBar"))
            bar = k;
    }
    QVERIFY(bar);
    QVERIFY(!bar->isVisible());
    QTest::keyClick(display(w), Qt::Key_F, Qt::ControlModifier | Qt::ShiftModifier);
    QTRY_VERIFY(bar->isVisible());
    QTest::keyClick(display(w), Qt::Key_F, Qt::ControlModifier | Qt::ShiftModifier);
    QTRY_VERIFY(!bar->isVisible());

    display(w)->setFocus();
    const qreal base = w.terminal()->getTerminalFont().pointSizeF();
    QTest::keyClick(display(w), Qt::Key_Plus, Qt::ControlModifier);
    QTRY_VERIFY(w.terminal()->getTerminalFont().pointSizeF() > base);
    const qreal once = w.terminal()->getTerminalFont().pointSizeF();
    QTest::keyClick(display(w), Qt::Key_Equal, Qt::ControlModifier);
    QTRY_VERIFY(w.terminal()->getTerminalFont().pointSizeF() > once);
    QTest::keyClick(display(w), Qt::Key_0, Qt::ControlModifier);
    QTRY_COMPARE(w.terminal()->getTerminalFont().pointSizeF(), base);
    QTest::keyClick(display(w), Qt::Key_Minus, Qt::ControlModifier);
    QTRY_VERIFY(w.terminal()->getTerminalFont().pointSizeF() < base);
}

void TestTerminalWindow::contextMenuActions()
{
    ServerTest::Fixture f;
    QVERIFY(f.start());
    SessionRegistry &registry = *f.registry;
    Session *s = registry.create(shellOptions(QStringLiteral(
        "i=0; while [ $i -lt 200 ]; do echo line-$i; i=$((i+1)); done; echo menu-$((6*7)); exec sleep 300")));
    QVERIFY(s);
    TerminalWindow w(endpointOf(f), s->id(), ViewerMode::Control);
    w.resize(w.sizeForCells(s->cols(), s->rows()));
    openOn(w);
    QTRY_VERIFY(w.screenText().contains(QStringLiteral("menu-42")));
    QMenu *menu = w.contextMenu(QPoint(5, 5));
    QStringList texts;
    for (QAction *a : menu->actions()) {
        if (!a->isSeparator())
            texts << a->text().remove(QLatin1Char('&'));
    }
    QCOMPARE(texts, (QStringList{QStringLiteral("Copy"), QStringLiteral("Paste"),
                                 QStringLiteral("Select All"), QStringLiteral("Copy Last Output"),
                                 QStringLiteral("Previous Prompt"), QStringLiteral("Next Prompt"),
                                 QStringLiteral("Find…"),
                                 QStringLiteral("Zoom In"), QStringLiteral("Zoom Out"),
                                 QStringLiteral("Reset Zoom"), QStringLiteral("Clear Scrollback")}));
    delete menu;

    // Select all takes the scrollback too.
    w.selectAll();
    const QString all = w.terminal()->selectedText(true);
    QVERIFY2(all.contains(QStringLiteral("line-0\n")) && all.contains(QStringLiteral("menu-42")), qPrintable(all));

    // Clear scrollback drops the history and keeps the screen.
    QVERIFY(w.terminal()->historyLinesCount() > 100);
    w.clearScrollback();
    QCOMPARE(w.terminal()->historyLinesCount(), 0);
    QVERIFY(w.screenText().contains(QStringLiteral("menu-42")));
    QVERIFY(!w.screenText().contains(QStringLiteral("line-0\n")));
}

void TestTerminalWindow::selectAllCopyKeepsLineBreaks()
{
    // Right-click -> Select All, then Ctrl+Shift+C: the clipboard held
    // "l1l2l3..." (a 20,000-line scrollback became one line) while a mouse
    // drag copied line breaks (a new user's tryout). No mouse press here: the
    // widget keeps line breaks in its copy only after one.
    ServerTest::Fixture f;
    QVERIFY(f.start());
    SessionRegistry &registry = *f.registry;
    Session *s = registry.create(shellOptions(QStringLiteral(
        "i=0; while [ $i -lt 100 ]; do echo line-$i; i=$((i+1)); done; printf 'l1\\nl2\\nl3\\n'; exec sleep 300")));
    QVERIFY(s);
    TerminalWindow w(endpointOf(f), s->id(), ViewerMode::Control);
    w.resize(w.sizeForCells(s->cols(), s->rows()));
    openOn(w);
    QTRY_VERIFY2(w.screenText().contains(QStringLiteral("l1\nl2\nl3\n")), qPrintable(w.screenText()));
    QVERIFY(w.terminal()->historyLinesCount() > 0);

    QClipboard *cb = QGuiApplication::clipboard();
    cb->setText(QStringLiteral("before"));
    QMenu *menu = w.contextMenu(QPoint(5, 5));
    QAction *selectAll = nullptr;
    for (QAction *a : menu->actions()) {
        if (a->text().remove(QLatin1Char('&')) == QStringLiteral("Select All"))
            selectAll = a;
    }
    QVERIFY(selectAll);
    menu->popup(w.terminal()->mapToGlobal(QPoint(5, 5)));
    QTRY_VERIFY(menu->isVisible());
    selectAll->trigger();
    menu->close();
    delete menu;
    display(w)->setFocus();
    QTest::keyClick(display(w), Qt::Key_C, Qt::ControlModifier | Qt::ShiftModifier);
    QTRY_VERIFY(cb->text() != QStringLiteral("before"));
    const QString text = cb->text();
    // One line per line, the scrollback's first to the screen's last, as the
    // widget's own text has them.
    QVERIFY2(text.contains(QStringLiteral("line-0\nline-1\n")), qPrintable(text.left(200)));
    QVERIFY2(text.contains(QStringLiteral("line-99\nl1\nl2\nl3\n")), qPrintable(text.left(200)));
    QVERIFY2(text.count(QLatin1Char('\n')) >= 103, qPrintable(text.left(200)));
}

namespace {
QStringList g_logged;
void captureMessage(QtMsgType type, const QMessageLogContext &context, const QString &message)
{
    g_logged << QStringLiteral("%1 %2 %3").arg(int(type)).arg(QLatin1String(context.category ? context.category : "-"), message);
}
} // namespace

void TestTerminalWindow::searchDebugLinesAreFiltered()
{
    // QTermWidget 1.2 printed "search from 0 , 0 to 2 , 55", "linesToRead:
    // 48", "m_foundStartColumn ...", "Not found" on stderr at every search.
    ServerTest::Fixture f;
    QVERIFY(f.start());
    SessionRegistry &registry = *f.registry;
    Session *s = registry.create(shellOptions(QStringLiteral(
        "i=0; while [ $i -lt 60 ]; do echo line-$i; i=$((i+1)); done; echo find-$((6*7))-me; exec sleep 300")));
    QVERIFY(s);
    TerminalWindow w(endpointOf(f), s->id(), ViewerMode::Control);
    w.resize(w.sizeForCells(s->cols(), s->rows()));
    openOn(w);
    QTRY_VERIFY(w.screenText().contains(QStringLiteral("find-42-me")));
    QLineEdit *searchText = nullptr;
    for (QWidget *k : w.terminal()->findChildren<QWidget *>()) {
        if (QByteArray(k->metaObject()->className()).endsWith("SearchBar"))
            searchText = k->findChild<QLineEdit *>();
    }
    QVERIFY(searchText);
    w.terminal()->toggleShowSearchBar();

    g_logged.clear();
    const QtMessageHandler qtest = qInstallMessageHandler(captureMessage);
    installTerminalMessageFilter();
    installTerminalMessageFilter(); // twice is once
    searchText->setText(QStringLiteral("find-42"));          // found
    const QString found = w.terminal()->selectedText(true);
    searchText->setText(QStringLiteral("nowhere-to-be-found")); // not found
    // What is not QTermWidget's search goes through: Tether's categories,
    // other debug lines, warnings.
    qCWarning(lcUi) << "a warning of ours";
    qDebug() << "Not found here either";
    qWarning() << "Not found";
    qInstallMessageHandler(qtest);

    QCOMPARE(found.trimmed(), QStringLiteral("find-42"));
    const QString log = g_logged.join(QLatin1Char('\n'));
    QVERIFY2(!log.contains(QStringLiteral("linesToRead")), qPrintable(log));
    QVERIFY2(!log.contains(QStringLiteral("search from")), qPrintable(log));
    QVERIFY2(!log.contains(QStringLiteral("m_foundStartColumn")), qPrintable(log));
    QVERIFY2(!log.contains(QStringLiteral("Found in string")), qPrintable(log));
    QVERIFY2(!log.contains(QStringLiteral("0 default Not found\n")), qPrintable(log));
    QVERIFY2(log.contains(QStringLiteral("tether.ui a warning of ours")), qPrintable(log));
    QVERIFY2(log.contains(QStringLiteral("default Not found here either")), qPrintable(log));
    QVERIFY2(log.contains(QStringLiteral("default Not found")), qPrintable(log));
    QVERIFY2(g_logged.size() == 3, qPrintable(log));
}

void TestTerminalWindow::colourSevenIsReadable()
{
    // vim's Visual selection and `ESC[47m` draw the default foreground on
    // colour 7: under QTermWidget's "Linux" scheme both are (178,178,178)
    // and the text vanished (issue 14). A space shows colour 7; full blocks
    // (U+2588) show the foreground; both are read back from the pixels.
    ServerTest::Fixture f;
    QVERIFY(f.start());
    SessionRegistry &registry = *f.registry;
    Session *s = registry.create(shellOptions(QStringLiteral(
        "printf '\\033[H\\033[2J\\033[47m \\342\\226\\210\\342\\226\\210\\342\\226\\210 \\033[0m'; exec sleep 300")));
    QVERIFY(s);
    TerminalWindow w(endpointOf(f), s->id(), ViewerMode::Control);
    w.resize(w.sizeForCells(s->cols(), s->rows()));
    openOn(w);
    QTRY_VERIFY2(w.screenText().contains(QString::fromUtf8("\u2588\u2588\u2588")), qPrintable(w.screenText()));
    QWidget *d = display(w);
    const QFontMetrics fm(w.terminal()->getTerminalFont());
#if QT_VERSION >= QT_VERSION_CHECK(5, 11, 0)
    const int cw = fm.horizontalAdvance(QLatin1Char('M'));
#else
    const int cw = fm.width(QLatin1Char('M'));
#endif
    const int ch = fm.height();
    const int margin = w.terminal()->getMargin();
    const int y = margin + ch / 2;
    QColor bg7, fg, plain;
    // The display takes the emulation's screen on a timer of its own: read
    // its pixels until both cells are drawn (neither is the default
    // background any more), whatever colours they got.
    QTRY_VERIFY([&] {
        const QImage img = d->grab().toImage();
        bg7 = img.pixelColor(margin + cw / 2, y);
        fg = img.pixelColor(margin + 2 * cw + cw / 2, y);
        plain = img.pixelColor(margin + 20 * cw, y); // default background
        return bg7 != plain && fg != plain;
    }());
    QVERIFY2(bg7 != plain, "colour 7 is drawn as a background of its own");
    const double ratio = contrast(fg, bg7);
    QVERIFY2(ratio >= 3.0, qPrintable(QStringLiteral("default foreground %1 on colour 7 %2: %3:1")
                                          .arg(fg.name(), bg7.name()).arg(ratio, 0, 'f', 2)));
}
// --- commands (issue 25): jump to prompt, copy last output ---------------------

Session *TestTerminalWindow::startBash(SessionRegistry &registry)
{
    // The prompt from ~/.bashrc: Debian's /etc/bash.bashrc, which the
    // integration reads as bash would, sets its own over one from the environment.
    QFile rc(m_home.filePath(QStringLiteral(".bashrc")));
    if (!rc.open(QIODevice::WriteOnly) || rc.write("PS1='P> '\n") < 0)
        return nullptr;
    rc.close();
    SpawnOptions o;
    o.argv = QStringList{QStringLiteral("/bin/bash")};
    o.cwd = m_home.path();
    o.extraEnv << QStringLiteral("HOME=") + m_home.path() << QStringLiteral("HISTFILE=/dev/null");
    return registry.create(o);
}

bool TestTerminalWindow::runInWindow(TerminalWindow &w, Session *s, const QString &line)
{
    // At the prompt: the shell drew it to its end (the B mark).
    if (!QTest::qWaitFor([s] {
            return s->commands().state() == CommandLog::ShellState::Prompt && ringText(s).endsWith("P> \x1b]133;B\x07");
        }, 20000))
        return false;
    const quint64 lastId = s->commands().last() ? s->commands().last()->id : 0;
    type(w, line);
    QTest::keyClick(display(w), Qt::Key_Return);
    return QTest::qWaitFor([s, lastId] {
        const CommandRecord *c = s->commands().last();
        return c && c->id > lastId && !c->running() && s->commands().state() == CommandLog::ShellState::Prompt;
    }, 20000);
}

namespace {
/// The lines of `text` (the window's screenText()) that start with the prompt.
QList<int> promptLinesShown(const QString &text)
{
    const QStringList lines = text.split(QLatin1Char('\n'));
    QList<int> out;
    for (int i = 0; i < lines.size(); ++i) {
        if (lines.at(i).startsWith(QStringLiteral("P> ")))
            out << i;
    }
    return out;
}
} // namespace

void TestTerminalWindow::jumpToPrompt()
{
    ServerTest::Fixture f;
    QVERIFY(f.start());
    Session *s = startBash(*f.registry);
    QVERIFY(s);
    TerminalWindow w(endpointOf(f), s->id(), ViewerMode::Control);
    openOn(w);
    QVERIFY(runInWindow(w, s, QStringLiteral("echo one")));
    QVERIFY(runInWindow(w, s, QStringLiteral("seq 1 60")));
    QVERIFY(runInWindow(w, s, QStringLiteral("seq 61 120")));
    // Every prompt recorded (the fourth is the one drawn now), at the lines
    // where the terminal shows them.
    QTRY_COMPARE(w.promptLines().size(), 4);
    QTRY_VERIFY(w.screenText().contains(QStringLiteral("120\nP> ")));
    const QString text = w.screenText();
    const QStringList lines = text.split(QLatin1Char('\n'));
    const QList<int> shown = promptLinesShown(text);
    QCOMPARE(w.promptLines(), shown);
    QCOMPARE(lines.at(shown.at(1)), QStringLiteral("P> seq 1 60"));
    QCOMPARE(lines.at(shown.at(2)), QStringLiteral("P> seq 61 120"));
    // The prompts of the seq commands are in the scrollback (60 lines are
    // more than the window's rows); the current one is on the screen.
    const int end = w.terminal()->historyLinesCount();
    QVERIFY2(shown.at(2) < end && shown.at(3) > end,
             qPrintable(QStringLiteral("%1 %2 %3 %4").arg(shown.at(2)).arg(shown.at(3)).arg(end)
                            .arg(w.terminal()->screenLinesCount())));

    // Ctrl+Shift+Up: the previous prompt above the first line shown becomes
    // the first line shown. (Where the view starts is QTermWidget's: it
    // follows the output, but it can stop following it under load.)
    const auto up = [&w] { QTest::keyClick(display(w), Qt::Key_Up, Qt::ControlModifier | Qt::ShiftModifier); };
    const auto down = [&w] { QTest::keyClick(display(w), Qt::Key_Down, Qt::ControlModifier | Qt::ShiftModifier); };
    int k = int(shown.size()) - 1;
    while (k >= 0 && shown.at(k) >= w.scrollPosition())
        --k;
    QVERIFY2(k >= 0, qPrintable(QString::number(w.scrollPosition())));
    for (; k >= 0; --k) {
        up();
        QCOMPARE(w.scrollPosition(), shown.at(k));
        QVERIFY(lines.at(w.scrollPosition()).startsWith(QStringLiteral("P> ")));
    }
    QCOMPARE(w.scrollPosition(), shown.at(0));
    up(); // none above: stays
    QCOMPARE(w.scrollPosition(), shown.at(0));
    down();
    QCOMPARE(w.scrollPosition(), shown.at(1));
    QCOMPARE(lines.at(w.scrollPosition()), QStringLiteral("P> seq 1 60"));
    down();
    QCOMPARE(w.scrollPosition(), shown.at(2));
    QCOMPARE(lines.at(w.scrollPosition()), QStringLiteral("P> seq 61 120"));
    down(); // the prompt now is on the last screen: the view goes to the end
    QCOMPARE(w.scrollPosition(), end);
    down(); // none below: stays
    QCOMPARE(w.scrollPosition(), end);

    // The keys and the window's cursor queries reached nothing: the shell
    // ran exactly the three commands, as typed, and nothing more came.
    QCOMPARE(s->commands().commands().size(), 3);
    QCOMPARE(s->commands().commands().at(1).commandLine, QStringLiteral("seq 1 60"));
    QCOMPARE(s->commands().commands().at(2).commandLine, QStringLiteral("seq 61 120"));
    QVERIFY2(ringText(s).endsWith("\x1b]133;A\x07P> \x1b]133;B\x07"), ringText(s).constData());

    // Clear Scrollback: the prompts that were in it are gone; the next ones count again.
    w.clearScrollback();
    QVERIFY(w.promptLines().isEmpty());
    QVERIFY(runInWindow(w, s, QStringLiteral("echo two")));
    QTRY_COMPARE(w.promptLines().size(), 1);
    QCOMPARE(w.promptLines(), promptLinesShown(w.screenText()).mid(1)); // the screen's first prompt came before
}

void TestTerminalWindow::jumpToPromptAfterAReplay()
{
    // Commands run before the window exists: the replay's prompts count too.
    ServerTest::Fixture f;
    QVERIFY(f.start());
    Session *s = startBash(*f.registry);
    QVERIFY(s);
    for (const char *line : {"seq 1 40", "seq 41 80"}) {
        QVERIFY(QTest::qWaitFor([s] { return ringText(s).endsWith("P> \x1b]133;B\x07"); }, 20000));
        const qsizetype before = s->commands().commands().size();
        s->sendApiInput(QByteArray(line) + '\r');
        QVERIFY(QTest::qWaitFor([s, before] {
            return s->commands().commands().size() > before && !s->commands().last()->running();
        }, 20000));
    }
    QVERIFY(QTest::qWaitFor([s] { return ringText(s).endsWith("P> \x1b]133;B\x07"); }, 20000));
    TerminalWindow w(endpointOf(f), s->id(), ViewerMode::Control);
    openOn(w);
    QTRY_VERIFY(w.screenText().contains(QStringLiteral("80\nP> ")));
    QTRY_COMPARE(w.promptLines().size(), 3);
    const QList<int> shown = promptLinesShown(w.screenText());
    QCOMPARE(w.promptLines(), shown);
    QTest::keyClick(display(w), Qt::Key_Up, Qt::ControlModifier | Qt::ShiftModifier);
    QCOMPARE(w.scrollPosition(), shown.at(1));
    QCOMPARE(w.screenText().split(QLatin1Char('\n')).at(shown.at(1)), QStringLiteral("P> seq 41 80"));
    QCOMPARE(s->commands().commands().size(), 2);
}

void TestTerminalWindow::jumpToPromptWhenTheScrollbackIsFull()
{
    // Past kHistoryLines of scrollback, lines leave it uncounted: the window
    // forgets the prompt lines and says so rather than jump to wrong lines,
    // until Clear Scrollback.
    ServerTest::Fixture f;
    QVERIFY(f.start());
    Session *s = startBash(*f.registry);
    QVERIFY(s);
    TerminalWindow w(endpointOf(f), s->id(), ViewerMode::Control);
    openOn(w);
    QVERIFY(runInWindow(w, s, QStringLiteral("seq 1 %1").arg(TerminalWindow::kHistoryLines + 100)));
    QTRY_VERIFY(w.screenText().contains(QStringLiteral("%1\nP> ").arg(TerminalWindow::kHistoryLines + 100)));
    QTRY_VERIFY(!w.promptLinesKnown());
    QVERIFY(w.promptLines().isEmpty());
    const int end = w.terminal()->historyLinesCount();
    QCOMPARE(end, TerminalWindow::kHistoryLines);
    const int before = w.scrollPosition();
    QTest::keyClick(display(w), Qt::Key_Up, Qt::ControlModifier | Qt::ShiftModifier);
    QCOMPARE(w.scrollPosition(), before);
    QVERIFY2(w.bannerText().contains(QStringLiteral("scrollback is full")), qPrintable(w.bannerText()));

    // The prompt on the screen now was drawn while the scrollback was full:
    // not counted. Those after the clear are.
    w.clearScrollback();
    QVERIFY(w.promptLinesKnown());
    QVERIFY(runInWindow(w, s, QStringLiteral("seq 1 60")));
    QVERIFY(runInWindow(w, s, QStringLiteral("seq 61 120")));
    QTRY_COMPARE(w.promptLines().size(), 2);
    const QList<int> shown = promptLinesShown(w.screenText());
    QCOMPARE(w.promptLines(), shown.mid(shown.size() - 2)); // "P> seq 61 120" and the prompt now
    // Down to the end (past the prompt now, on the screen), then up to
    // "P> seq 61 120", in the scrollback.
    for (int i = 0; i < 3 && w.scrollPosition() != w.terminal()->historyLinesCount(); ++i)
        QTest::keyClick(display(w), Qt::Key_Down, Qt::ControlModifier | Qt::ShiftModifier);
    QCOMPARE(w.scrollPosition(), w.terminal()->historyLinesCount());
    QVERIFY(w.promptLines().first() < w.terminal()->historyLinesCount());
    QTest::keyClick(display(w), Qt::Key_Up, Qt::ControlModifier | Qt::ShiftModifier);
    QCOMPARE(w.scrollPosition(), w.promptLines().first());
    QCOMPARE(w.screenText().split(QLatin1Char('\n')).at(w.scrollPosition()), QStringLiteral("P> seq 61 120"));
    QCOMPARE(s->commands().commands().size(), 3);
}

void TestTerminalWindow::copyLastOutput()
{
    ServerTest::Fixture f;
    QVERIFY(f.start());
    Session *s = startBash(*f.registry);
    QVERIFY(s);
    TerminalWindow w(endpointOf(f), s->id(), ViewerMode::Control);
    openOn(w);
    QVERIFY(runInWindow(w, s, QStringLiteral("printf '\\e[31mred\\e[0m \\e[1mbold\\e[0m\\nplain\\n'")));
    // The session's bytes hold the colours; the clipboard gets the text.
    const CommandRecord first = s->commands().commands().last();
    QByteArray raw(int(first.outputEnd - first.outputStart), '\0');
    QCOMPARE(s->buffer().read(first.outputStart, raw.data(), raw.size()), raw.size());
    QCOMPARE(raw, QByteArray("\x1b[31mred\x1b[0m \x1b[1mbold\x1b[0m\r\nplain\r\n"));

    QClipboard *cb = QGuiApplication::clipboard();
    cb->setText(QStringLiteral("before"));
    QSignalSpy copied(&w, &TerminalWindow::lastOutputCopied);
    QTest::keyClick(display(w), Qt::Key_O, Qt::ControlModifier | Qt::ShiftModifier);
    QTRY_COMPARE(copied.size(), 1);
    QVERIFY2(copied.at(0).at(0).toBool(), qPrintable(copied.at(0).at(1).toString()));
    QCOMPARE(cb->text(), QStringLiteral("red bold\nplain"));

    // A newer command: its output. One still running is not the last finished.
    QVERIFY(runInWindow(w, s, QStringLiteral("echo second; (exit 3)")));
    type(w, QStringLiteral("read x"));
    QTest::keyClick(display(w), Qt::Key_Return);
    QTRY_COMPARE(s->commands().state(), CommandLog::ShellState::Running);
    w.copyLastOutput();
    QTRY_COMPARE(copied.size(), 2);
    QVERIFY(copied.at(1).at(0).toBool());
    QCOMPARE(cb->text(), QStringLiteral("second"));
    // The key reached nothing: the shell ran what was typed, nothing else.
    QCOMPARE(s->commands().commands().size(), 3);
    QCOMPARE(s->commands().commands().at(1).commandLine, QStringLiteral("echo second; (exit 3)"));
}

void TestTerminalWindow::copyLastOutputWithoutIntegration()
{
    // /bin/sh sends no marks: nothing to copy, said in the banner for a while.
    ServerTest::Fixture f;
    QVERIFY(f.start());
    Session *s = f.registry->create(shellOptions());
    QVERIFY(s);
    TerminalWindow w(endpointOf(f), s->id(), ViewerMode::Control);
    openOn(w);
    QClipboard *cb = QGuiApplication::clipboard();
    cb->setText(QStringLiteral("before"));
    QSignalSpy copied(&w, &TerminalWindow::lastOutputCopied);
    w.copyLastOutput();
    QTRY_COMPARE(copied.size(), 1);
    QVERIFY(!copied.at(0).at(0).toBool());
    QVERIFY2(w.bannerText().contains(QStringLiteral("No command has run")), qPrintable(w.bannerText()));
    QCOMPARE(cb->text(), QStringLiteral("before"));
    QTRY_VERIFY_WITH_TIMEOUT(w.bannerText().isEmpty(), 20000);
}
#endif

QTEST_MAIN(TestTerminalWindow)
#include "tst_terminalwindow.moc"
