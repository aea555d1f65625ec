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
// its `attached` message, where its replay ends.
#include "fidelity.h"
#include "servertestutil.h"

#include <QTemporaryDir>

using namespace Tether;
using namespace ServerTest;

class TestFidelity : public QObject
{
    Q_OBJECT
private:
    Fixture f;
    QJsonObject m_corpus;
    QTemporaryDir m_home;

private Q_SLOTS:
    void initTestCase()
    {
        m_corpus = Fidelity::loadCorpus();
        QVERIFY2(!m_corpus.value(QStringLiteral("rows")).toArray().isEmpty(), "tests/vectors/fidelity-corpus.json");
        QVERIFY(m_home.isValid());
    }
    void init()
    {
        Limits limits;
        limits.bufferCapacity = qsizetype(m_corpus.value(QStringLiteral("buffer_capacity")).toDouble());
        QCOMPARE(limits.bufferCapacity, RingBuffer::kMinCapacity); // 64 KiB, the smallest ring
        QVERIFY(f.start(limits));
    }
    void cleanup() { f.stop(); }

    void lateViewerSeesTheSameScreen_data()
    {
        QTest::addColumn<QJsonObject>("row");
        for (const QJsonValue &v : m_corpus.value(QStringLiteral("rows")).toArray()) {
            const QJsonObject row = v.toObject();
            QTest::newRow(qPrintable(row.value(QStringLiteral("name")).toString())) << row;
        }
    }
    void lateViewerSeesTheSameScreen()
    {
        QFETCH(QJsonObject, row);
        const quint64 capacity = quint64(m_corpus.value(QStringLiteral("buffer_capacity")).toDouble());

        SpawnOptions o;
        o.argv = QStringList{QStringLiteral("/bin/bash"), QStringLiteral("--norc"), QStringLiteral("--noprofile")};
        o.cols = row.value(QStringLiteral("cols")).toInt();
        o.rows = row.value(QStringLiteral("rows")).toInt();
        o.cwd = m_home.path();
        // A known prompt and locale; HOME for the programs' own settings
        // (htop, vim, less write there), never the user's.
        o.extraEnv = QStringList{QStringLiteral("PS1=$ "), QStringLiteral("LANG=C.UTF-8"), QStringLiteral("LC_ALL=C.UTF-8"),
                                 QStringLiteral("HOME=") + m_home.path(), QStringLiteral("LESSHISTFILE=-")};
        QString error;
        Session *s = f.registry->create(o, nullptr, &error);
        QVERIFY2(s, qPrintable(error));

        // The reference: attached from the start, it has every byte.
        WsClient ref;
        ref.open(f.port, QStringLiteral("/ws/") + s->id(), f.key);
        QTRY_VERIFY(ref.gotAttached());
        QCOMPARE(ref.num("replay_from"), 0);
        QCOMPARE(ref.num("prelude_bytes"), 0);
        Fidelity::ViewerTerminal refTerm(ref, false);

        Fidelity::Driver driver(s, &ref, &refTerm, capacity);
        QVERIFY2(driver.run(row.value(QStringLiteral("steps")).toArray(), &error), qPrintable(error));
        QVERIFY2(s->buffer().startOffset() > driver.mark(), "the program's first paint is still retained");

        // The late viewer: a watcher, no resume (a reset replay after rollover).
        WsClient late;
        late.open(f.port, QStringLiteral("/ws/") + s->id() + QStringLiteral("?mode=watch"), f.key);
        QTRY_VERIFY(late.gotAttached());
        QCOMPARE(late.attachedMsg.value(QStringLiteral("reset")).toBool(), true);
        const quint64 at = quint64(late.num("offset"));
        const qint64 snapshotBytes = qMax<qint64>(0, late.num("snapshot_bytes"));
        const quint64 replayEnd = quint64(late.num("prelude_bytes") + snapshotBytes + late.num("replay_bytes"));
        const QString how = QStringLiteral("late viewer at offset %1: replay_from %2, prelude %3 bytes, snapshot_at %4 (%5 bytes), "
                                           "ring start %6, program started at %7")
                                .arg(at).arg(late.num("replay_from")).arg(late.num("prelude_bytes"))
                                .arg(late.attachedMsg.value(QStringLiteral("snapshot_at")).toVariant().toString())
                                .arg(snapshotBytes).arg(s->buffer().startOffset()).arg(driver.mark());
        QTRY_VERIFY2_WITH_TIMEOUT(quint64(late.bytes.size()) >= replayEnd, qPrintable(how), 10000);
        QTRY_VERIFY2_WITH_TIMEOUT(quint64(ref.bytes.size()) >= at, qPrintable(how), 10000);
        Fidelity::ViewerTerminal lateTerm(late, true);
        lateTerm.pump(replayEnd);
        refTerm.pump(at);
        QCOMPARE(refTerm.fed(), at);

        // 1. The screen shown: cells, cursor, properties; 2. the modes.
        const int rows = refTerm.vt->rows();
        QString diff = refTerm.vt->diff(*lateTerm.vt);
        const int cells = refTerm.vt->differingCells(*lateTerm.vt);
        const QString modes = Fidelity::modesDiff(refTerm.modes, lateTerm.modes, rows);
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
            qInfo().noquote() << row.value(QStringLiteral("name")).toString() << ":" << cells << "cells differ;" << how;
        QVERIFY2(diff.isEmpty(), qPrintable(QStringLiteral("%1\n--- reference (this) vs late viewer (other):\n%2").arg(how, diff)));
    }
};

QTEST_MAIN(TestFidelity)
#include "tst_fidelity.moc"
