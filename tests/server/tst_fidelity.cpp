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
/// One row of the corpus on its way: driven, then attached to late, then
/// compared.
struct Row {
    QString name;
    QJsonObject def;
    Session *session = nullptr;
    std::unique_ptr<WsClient> ref;
    std::unique_ptr<Fidelity::ViewerTerminal> refTerm;
    std::unique_ptr<Fidelity::Driver> driver;
    std::unique_ptr<WsClient> late;
    QElapsedTimer lateClock;
    enum Phase { Attaching, Driving, Late, Finished } phase = Attaching;
    QString failure; ///< empty: the late viewer saw exactly what the reference saw
    QString how;     ///< the late viewer's replay, for messages
};
} // namespace

class TestFidelity : public QObject
{
    Q_OBJECT
private:
    Fixture f;
    QJsonObject m_corpus;
    QTemporaryDir m_home;
    quint64 m_capacity = 0;
    std::vector<std::unique_ptr<Row>> m_rows;

    void begin(Row &r)
    {
        // Each row in a directory of its own (vim and less write long.txt).
        const QString dir = m_home.path() + QLatin1Char('/') + r.name;
        QDir().mkpath(dir);
        QString error;
        r.session = f.registry->create(Fidelity::spawnOptions(r.def, dir, m_home.path()), nullptr, &error);
        if (!r.session) {
            r.failure = QStringLiteral("cannot start the shell: ") + error;
            r.phase = Row::Finished;
            return;
        }
        // The reference: attached from the start, it has every byte.
        r.ref.reset(new WsClient);
        r.ref->open(f.port, QStringLiteral("/ws/") + r.session->id(), f.key);
    }

    /// Advances one row as far as it can go now.
    void advance(Row &r)
    {
        switch (r.phase) {
        case Row::Attaching:
            if (!r.ref->gotAttached())
                return;
            if (r.ref->num("replay_from") != 0 || r.ref->num("prelude_bytes") != 0) {
                r.failure = QStringLiteral("the reference did not get the stream from offset 0");
                r.phase = Row::Finished;
                return;
            }
            r.refTerm.reset(new Fidelity::ViewerTerminal(*r.ref, false));
            r.driver.reset(new Fidelity::Driver(r.ref.get(), r.refTerm.get(), m_capacity,
                                                r.def.value(QStringLiteral("steps")).toArray()));
            r.phase = Row::Driving;
            Q_FALLTHROUGH();
        case Row::Driving: {
            const Fidelity::Driver::Status st = r.driver->poll();
            if (st == Fidelity::Driver::Running)
                return;
            if (st == Fidelity::Driver::Failed) {
                r.failure = r.driver->error();
                r.phase = Row::Finished;
                return;
            }
            if (r.session->buffer().startOffset() <= r.driver->mark()) {
                r.failure = QStringLiteral("the program's first paint is still retained");
                r.phase = Row::Finished;
                return;
            }
            // The late viewer: a watcher, no resume (a reset replay after rollover).
            r.late.reset(new WsClient);
            r.late->open(f.port, QStringLiteral("/ws/") + r.session->id() + QStringLiteral("?mode=watch"), f.key);
            r.lateClock.start();
            r.phase = Row::Late;
            return;
        }
        case Row::Late:
            // The reference terminal has at most what the session had when
            // the late viewer asked (the late viewer's offset is at least
            // that): from now on it is fed up to that offset only.
            if (r.late->gotAttached())
                r.refTerm->pump(qMin(r.refTerm->fed() + Fidelity::Driver::kPumpChunk, quint64(r.late->num("offset"))));
            if (!r.late->gotAttached() || !lateReady(r)) {
                if (r.lateClock.elapsed() > 20000) {
                    r.failure = QStringLiteral("the late viewer did not get its replay within 20 s: ") + r.how;
                    r.phase = Row::Finished;
                }
                return;
            }
            compare(r);
            r.phase = Row::Finished;
            return;
        case Row::Finished:
            return;
        }
    }

    /// Bytes the late viewer's replay takes (prelude, snapshot, replay).
    static quint64 replayEnd(const WsClient &late)
    {
        return quint64(late.num("prelude_bytes") + qMax<qint64>(0, late.num("snapshot_bytes")) + late.num("replay_bytes"));
    }
    bool lateReady(Row &r)
    {
        const WsClient &late = *r.late;
        const quint64 at = quint64(late.num("offset"));
        r.how = QStringLiteral("late viewer at offset %1: replay_from %2, prelude %3 bytes, snapshot_at %4 (%5 bytes), "
                               "ring start %6, program started at %7")
                    .arg(at).arg(late.num("replay_from")).arg(late.num("prelude_bytes"))
                    .arg(late.attachedMsg.value(QStringLiteral("snapshot_at")).toVariant().toString())
                    .arg(qMax<qint64>(0, late.num("snapshot_bytes"))).arg(r.session->buffer().startOffset())
                    .arg(r.driver->mark());
        return quint64(late.bytes.size()) >= replayEnd(late) && r.refTerm->fed() >= at;
    }

    void compare(Row &r)
    {
        const WsClient &late = *r.late;
        const quint64 at = quint64(late.num("offset"));
        Fidelity::ViewerTerminal lateTerm(late, true);
        lateTerm.pump(replayEnd(late));
        Fidelity::ViewerTerminal &refTerm = *r.refTerm;
        if (refTerm.fed() != at) {
            r.failure = QStringLiteral("the reference is at offset %1, not %2").arg(refTerm.fed()).arg(at);
            return;
        }

        // 1. The screen shown: cells, cursor, properties; 2. the modes.
        QString diff = refTerm.vt->diff(*lateTerm.vt);
        const int cells = refTerm.vt->differingCells(*lateTerm.vt);
        const QString modes = Fidelity::modesDiff(refTerm.modes, lateTerm.modes, refTerm.vt->rows());
        if (!modes.isEmpty())
            diff += QStringLiteral("\nmodes: ") + modes;
        // 3. The normal screen under the alternate one: leave it on both.
        if (diff.isEmpty() && refTerm.vt->altScreen()) {
            refTerm.write("\x1b[?1049l");
            lateTerm.write("\x1b[?1049l");
            const QString under = refTerm.vt->diff(*lateTerm.vt);
            if (!under.isEmpty())
                diff += QStringLiteral("\nnormal screen under the alternate one:\n") + under;
        }
        // 4. The pen and the pending wrap: the same character written to both.
        if (diff.isEmpty()) {
            refTerm.write("@");
            lateTerm.write("@");
            const QString pen = refTerm.vt->diff(*lateTerm.vt);
            if (!pen.isEmpty())
                diff += QStringLiteral("\nafter writing one character (pen, pending wrap):\n") + pen;
        }
        if (!diff.isEmpty())
            r.failure = QStringLiteral("%1 cells of the screen shown differ; %2\n--- reference (this) vs late viewer (other):\n%3")
                            .arg(cells).arg(r.how, diff);
    }

private Q_SLOTS:
    void initTestCase()
    {
        m_corpus = Fidelity::loadCorpus();
        QVERIFY2(!m_corpus.value(QStringLiteral("rows")).toArray().isEmpty(), "tests/vectors/fidelity-corpus.json");
        QVERIFY(m_home.isValid());
        Limits limits;
        limits.bufferCapacity = qsizetype(m_corpus.value(QStringLiteral("buffer_capacity")).toDouble());
        QCOMPARE(limits.bufferCapacity, RingBuffer::kMinCapacity); // 64 KiB, the smallest ring
        m_capacity = quint64(limits.bufferCapacity);
        QVERIFY(f.start(limits));

        // Every row at once (the slowest, htop, takes ~25 s to roll a
        // ring over); the comparisons are at exact offsets, so the load of
        // the others cannot change a result.
        for (const QJsonValue &v : m_corpus.value(QStringLiteral("rows")).toArray()) {
            auto r = std::make_unique<Row>();
            r->def = v.toObject();
            r->name = r->def.value(QStringLiteral("name")).toString();
            begin(*r);
            m_rows.push_back(std::move(r));
        }
        QElapsedTimer clock;
        clock.start();
        const auto finished = [this]() {
            return std::all_of(m_rows.begin(), m_rows.end(), [](const auto &r) { return r->phase == Row::Finished; });
        };
        while (!finished() && clock.elapsed() < 150000) {
            QTest::qWait(10);
            for (auto &r : m_rows)
                advance(*r);
        }
        for (auto &r : m_rows)
            if (r->phase != Row::Finished)
                r->failure = QStringLiteral("not finished within 150 s (phase %1)").arg(int(r->phase));
    }
    void cleanupTestCase()
    {
        m_rows.clear();
        f.stop();
    }

    void lateViewerSeesTheSameScreen_data()
    {
        QTest::addColumn<QString>("name");
        for (const QJsonValue &v : m_corpus.value(QStringLiteral("rows")).toArray()) {
            const QString name = v.toObject().value(QStringLiteral("name")).toString();
            QTest::newRow(qPrintable(name)) << name;
        }
    }
    void lateViewerSeesTheSameScreen()
    {
        QFETCH(QString, name);
        const auto it = std::find_if(m_rows.begin(), m_rows.end(), [&](const auto &r) { return r->name == name; });
        QVERIFY(it != m_rows.end());
        // Qt Test cuts long messages: the whole story goes to the log first.
        if (!(*it)->failure.isEmpty())
            qInfo().noquote() << (*it)->failure;
        QVERIFY2((*it)->failure.isEmpty(), qPrintable((*it)->failure.section(QLatin1Char('\n'), 0, 0)));
    }
};

QTEST_MAIN(TestFidelity)
#include "tst_fidelity.moc"
