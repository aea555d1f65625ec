// SPDX-License-Identifier: GPL-2.0-or-later
// Reattach fidelity in the local terminal window (issue 9), a client of the
// fixture's server over WebSocket like any other: the corpus of
// tests/vectors/fidelity-corpus.json (the rows of server/tst_fidelity) seen
// in QTermWidget. For each row a watch window follows the session from the
// start (the reference); the steps drive the program through a control
// WebSocket; once the ring has rolled over the program is frozen (SIGSTOP to
// the terminal's foreground process group: the stream stops at one offset)
// and a second watch window attaches (the late viewer). Once both show the
// title of a barrier written to the session's terminal after that
// (tests/support/fidelity.h, RowRun::writeBarrier), their screens' text
// (what QTermWidget gives: characters, no attributes) and sizes must be the
// same. Qt 5 only: QTermWidget 1.x exists for Qt 5 here.
#include "fidelity.h"
#include "servertestutil.h"

#ifdef TETHER_HAVE_QTERMWIDGET
#include "windowscreen.h"
#endif

#include <QTemporaryDir>

#include <memory>
#include <vector>

using namespace Tether;
using namespace ServerTest;

#ifdef TETHER_HAVE_QTERMWIDGET
namespace {
/// A row whose viewers are watch windows: one from the start, one late.
class WindowRow : public Fidelity::RowRun
{
public:
    WindowRow(Fixture &f, const QJsonObject &def, const QString &home, quint64 capacity)
        : RowRun(f, def, home, capacity, true)
    {
        if (session)
            m_ref = open();
    }

protected:
    bool referenceReady() override { return m_ref && m_ref->isAttached() && session->viewerCount() >= 2; }
    bool startLate() override
    {
        // Attached over WebSocket: pollLate() waits until it is.
        m_late = open();
        return m_late != nullptr;
    }
    /// Once the late window is attached, the barrier is written
    /// (RowRun::writeBarrier); when both windows' terminals show its title,
    /// each has parsed everything the program wrote (and the late one its
    /// whole replay): the screens are compared once.
    void pollLate() override
    {
        if (!m_late->isAttached() || !writeBarrier())
            return;
        if (m_ref->terminal()->title() != barrierTitle() || m_late->terminal()->title() != barrierTitle())
            return;
        const QString ref = TestUtil::windowScreen(*m_ref);
        const QString late = TestUtil::windowScreen(*m_late);
        if (ref == late)
            return finish();
        finish(QStringLiteral("%1: the late window differs from the reference window (session offset %2, ring start %3, "
                              "program started at %4):\n--- reference window:\n%5\n--- late window:\n%6")
                   .arg(name).arg(session->offset()).arg(session->buffer().startOffset()).arg(driver->mark())
                   .arg(ref, late));
    }

private:
    std::unique_ptr<TerminalWindow> open()
    {
        ServerEndpoint endpoint;
        endpoint.url = QUrl(QStringLiteral("http://127.0.0.1:%1/").arg(m_fixture.port));
        endpoint.key = QString::fromLatin1(m_fixture.key);
        auto w = std::make_unique<TerminalWindow>(endpoint, session->id(), ViewerMode::Watch);
        // A watch window sizes itself to the session's cells within the
        // screen (the offscreen platform's is 800x600): a small font lets
        // 100x30 cells fit.
        QFont font = w->terminal()->getTerminalFont();
        font.setPixelSize(6);
        w->terminal()->setTerminalFont(font);
        w->show();
        if (!w->attachSession())
            finish(QStringLiteral("a watch window cannot attach"));
        return w;
    }

    std::unique_ptr<TerminalWindow> m_ref, m_late;
};
} // namespace
#endif

class TestFidelityWindow : public QObject
{
    Q_OBJECT
private:
    Fixture f;
    QJsonObject m_corpus;
    QTemporaryDir m_home;
    std::vector<std::unique_ptr<Fidelity::RowRun>> m_rows;

private Q_SLOTS:
    void initTestCase()
    {
#ifndef TETHER_HAVE_QTERMWIDGET
        QSKIP("built without QTermWidget (none for this Qt version here): the window has no screen to compare");
#else
        QVERIFY(m_home.isValid());
        Fidelity::RowRun::startAll<WindowRow>(f, &m_corpus, m_home.path(), &m_rows);
#endif
    }
    void cleanupTestCase()
    {
        m_rows.clear();
        f.stop();
    }

    void lateWindowSeesTheSameScreen_data() { Fidelity::RowRun::addDataRows(m_corpus); }
    void lateWindowSeesTheSameScreen()
    {
        QFETCH(QString, name);
        Fidelity::RowRun::verify(m_rows, name);
    }
};

QTEST_MAIN(TestFidelityWindow)
#include "tst_fidelitywindow.moc"
