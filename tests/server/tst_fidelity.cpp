// SPDX-License-Identifier: GPL-2.0-or-later
// Reattach fidelity (issue 9): for every program of the corpus
// (tests/vectors/fidelity-corpus.json: htop, top, watch, vim with scroll
// margins and a resize, less, a progress bar, a coloured shell, a scroll
// region, wide characters, a flood then a full-screen program), a viewer that
// attaches late, once the 64 KiB ring has rolled over, must see exactly what
// a viewer attached from the start sees at the same output offset: every
// cell (characters, colours, attributes), the cursor, the alternate screen
// and the normal screen under it, the modes, the pen.
//
// Real shell (bash) in a real PTY, real WebSocket clients on 127.0.0.1 port
// 0, both streams rendered by libvterm (vtrender.h). The program keeps
// running while the late viewer attaches; the comparison is at the offset of
// its `attached` message, where its replay ends. The rows run side by side
// (initTestCase); each row of lateViewerSeesTheSameScreen reports one.
#include "fidelity.h"
#include "servertestutil.h"

#include <QDir>
#include <QTemporaryDir>

#include <algorithm>
#include <memory>
#include <vector>

using namespace Tether;
using namespace ServerTest;

namespace {
/// A row whose late viewer is a WebSocket watcher, compared in libvterm at
/// the offset of its `attached` message while the program runs on.
class WsRow : public Fidelity::RowRun
{
public:
    WsRow(Fixture &f, const QJsonObject &def, const QString &home, quint64 capacity)
        : RowRun(f, def, home, capacity, false)
    {
    }

protected:
    bool startLate() override
    {
        // A watcher, no resume: a reset replay after rollover.
        m_late.reset(new WsClient);
        m_late->open(m_fixture.port, QStringLiteral("/ws/") + session->id() + QStringLiteral("?mode=watch"), m_fixture.key);
        return true;
    }
    void pollLate() override
    {
        if (!m_late->gotAttached())
            return;
        // The reference terminal has at most what the session had when the
        // late viewer asked (whose offset is at least that): from now on it
        // is fed up to that offset only.
        const quint64 at = quint64(m_late->num("offset"));
        refTerm->pump(qMin(refTerm->fed() + Fidelity::Driver::kPumpChunk, at));
        if (quint64(m_late->bytes.size()) < replayEnd() || refTerm->fed() < at)
            return;
        finish(compare(at));
    }

private:
    /// Bytes the late viewer's replay takes (prelude, snapshot, replay).
    quint64 replayEnd() const
    {
        return quint64(m_late->num("prelude_bytes") + qMax<qint64>(0, m_late->num("snapshot_bytes"))
                       + m_late->num("replay_bytes"));
    }
    QString compare(quint64 at)
    {
        const WsClient &late = *m_late;
        const QString how = QStringLiteral("late viewer at offset %1: replay_from %2, prelude %3 bytes, snapshot_at %4 "
                                           "(%5 bytes), ring start %6, program started at %7")
                                .arg(at).arg(late.num("replay_from")).arg(late.num("prelude_bytes"))
                                .arg(late.attachedMsg.value(QStringLiteral("snapshot_at")).toVariant().toString())
                                .arg(qMax<qint64>(0, late.num("snapshot_bytes"))).arg(session->buffer().startOffset())
                                .arg(driver->mark());
        Fidelity::ViewerTerminal lateTerm(late, true);
        lateTerm.pump(replayEnd());
        Fidelity::ViewerTerminal &reference = *refTerm;

        // The screen shown, the modes, the normal screen under the
        // alternate one, the pen and the pending wrap.
        int cells = 0;
        const QString diff = Fidelity::screensDiff(reference, lateTerm, &cells);
        if (diff.isEmpty())
            return QString();
        return QStringLiteral("%1 cells of the screen shown differ; %2\n--- reference (this) vs late viewer (other):\n%3")
            .arg(cells).arg(how, diff);
    }

    std::unique_ptr<WsClient> m_late;
};
} // namespace

class TestFidelity : public QObject
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
        // Every row at once (the slowest, htop -d 1, takes ~7 s to roll a ring
        // over); the comparisons are at exact offsets, so the load of the
        // others cannot change a result.
        QVERIFY(m_home.isValid());
        Fidelity::RowRun::startAll<WsRow>(f, &m_corpus, m_home.path(), &m_rows);
    }
    void cleanupTestCase()
    {
        m_rows.clear();
        f.stop();
    }

    void lateViewerSeesTheSameScreen_data()
    {
        Fidelity::RowRun::addDataRows(m_corpus);
    }
    void lateViewerSeesTheSameScreen()
    {
        QFETCH(QString, name);
        Fidelity::RowRun::verify(m_rows, name);
    }
};

QTEST_MAIN(TestFidelity)
#include "tst_fidelity.moc"
