// SPDX-License-Identifier: GPL-2.0-or-later
// AttachStream, the viewer side of an attachment's byte stream shared by
// `tether attach` (AttachClient) and the terminal window: message sequences →
// bytes written and their parts, offsets, fixups, replay end, exit, and the
// meaning of close codes. Driven by the vectors the dashboard's JavaScript
// test runs too (tests/vectors/attach-stream.json), plus C++-only cases.
#include "attachstream.h"
#include "protocol.h"

#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QTest>

using namespace Tether;

namespace {

QJsonObject vectors()
{
    QFile f(QStringLiteral(TETHER_SOURCE_DIR "/tests/vectors/attach-stream.json"));
    if (!f.open(QIODevice::ReadOnly))
        return {};
    return QJsonDocument::fromJson(f.readAll()).object();
}

/// A vector's byte string: each character one byte (U+0000..U+00FF).
QByteArray bytes(const QJsonValue &v)
{
    return v.toString().toLatin1();
}

/// What the holder writes, as [part, bytes] pairs (the vectors' form).
using Writes = QList<QPair<QString, QByteArray>>;

Writes expectedWrites(const QJsonArray &a)
{
    Writes w;
    for (const QJsonValue &v : a)
        w << qMakePair(v.toArray().at(0).toString(), bytes(v.toArray().at(1)));
    return w;
}

} // namespace

Q_DECLARE_METATYPE(QJsonArray)

class TestAttachStream : public QObject
{
    Q_OBJECT
private Q_SLOTS:
    void vectorsLoad()
    {
        const QJsonObject v = vectors();
        QVERIFY(v.value(QStringLiteral("streams")).toArray().size() >= 5);
        QVERIFY(v.value(QStringLiteral("close")).toArray().size() >= 10);
    }

    void streams_data()
    {
        QTest::addColumn<QJsonArray>("steps");
        for (const QJsonValue &s : vectors().value(QStringLiteral("streams")).toArray()) {
            const QJsonObject o = s.toObject();
            QTest::newRow(qPrintable(o.value(QStringLiteral("name")).toString())) << o.value(QStringLiteral("steps")).toArray();
        }
    }

    void streams()
    {
        QFETCH(QJsonArray, steps);
        AttachStream stream;
        QVERIFY(!stream.hasOffset());
        int n = 0;
        for (const QJsonValue &sv : steps) {
            const QJsonObject step = sv.toObject();
            const QJsonObject expect = step.value(QStringLiteral("expect")).toObject();
            const QByteArray where = "step " + QByteArray::number(n++);
            Writes writes;
            bool replayFinished = false;
            if (step.contains(QStringLiteral("attached"))) {
                replayFinished = stream.begin(AttachStream::parseAttached(step.value(QStringLiteral("attached")).toObject()));
                QVERIFY(stream.isActive());
                QVERIFY(stream.hasOffset());
            } else if (step.contains(QStringLiteral("binary"))) {
                const QByteArray data = bytes(step.value(QStringLiteral("binary")));
                const AttachStream::Split split = stream.output(data.size());
                qsizetype covered = 0;
                for (int i = 0; i < split.count; ++i) {
                    const AttachStream::Piece &p = split.pieces[size_t(i)];
                    QCOMPARE(p.from, covered); // contiguous, in order
                    covered += p.size;
                    writes << qMakePair(QString::fromLatin1(AttachStream::partName(p.part)), data.mid(p.from, p.size));
                }
                QCOMPARE(covered, data.size());
                replayFinished = split.replayFinished;
                if (split.replayFinished) {
                    // The replay ends after its last non-live piece.
                    QVERIFY(split.replayEndsAfter >= 0);
                    QVERIFY(split.pieces[size_t(split.replayEndsAfter)].part != AttachStream::Part::Live);
                    QVERIFY(split.replayEndsAfter + 1 == split.count
                            || split.pieces[size_t(split.replayEndsAfter + 1)].part == AttachStream::Part::Live);
                }
            } else if (step.contains(QStringLiteral("fixup"))) {
                writes << qMakePair(QString::fromLatin1(AttachStream::partName(stream.fixupPart())),
                                    bytes(step.value(QStringLiteral("fixup"))));
            } else if (step.contains(QStringLiteral("exit"))) {
                const std::optional<ExitStatus> status = AttachStream::parseExit(step.value(QStringLiteral("exit")).toObject());
                QVERIFY(status.has_value());
                stream.setExit(*status);
                const QJsonObject e = expect.value(QStringLiteral("exit")).toObject();
                QCOMPARE(stream.exitStatus()->signaled, e.value(QStringLiteral("signal")).isDouble());
                if (status->signaled)
                    QCOMPARE(status->signal, e.value(QStringLiteral("signal")).toInt());
                else
                    QCOMPARE(status->code, e.value(QStringLiteral("code")).toInt());
                QCOMPARE(AttachStream::exitLine(stream.exitStatus()), expect.value(QStringLiteral("exit_line")).toString());
            } else {
                QFAIL("unknown step");
            }
            QVERIFY2(writes == expectedWrites(expect.value(QStringLiteral("writes")).toArray()), where.constData());
            QVERIFY2(stream.offset() == quint64(expect.value(QStringLiteral("offset")).toDouble()), where.constData());
            QVERIFY2(stream.pendingReplay() == qint64(expect.value(QStringLiteral("pending")).toDouble()), where.constData());
            QVERIFY2(replayFinished == expect.value(QStringLiteral("replay_finished")).toBool(), where.constData());
            QCOMPARE(stream.isReplaying(), stream.pendingReplay() > 0);
        }
    }

    void closeCodes_data()
    {
        QTest::addColumn<int>("code");
        QTest::addColumn<QString>("reason");
        QTest::addColumn<QString>("meaning");
        QTest::addColumn<QString>("end"); // empty: retry
        for (const QJsonValue &c : vectors().value(QStringLiteral("close")).toArray()) {
            const QJsonObject o = c.toObject();
            const int code = o.value(QStringLiteral("code")).toInt();
            const QString reason = o.value(QStringLiteral("reason")).toString();
            QTest::addRow("%d %s", code, qPrintable(reason))
                << code << reason << o.value(QStringLiteral("meaning")).toString() << o.value(QStringLiteral("end")).toString();
        }
    }

    void closeCodes()
    {
        QFETCH(int, code);
        QFETCH(QString, reason);
        QFETCH(QString, meaning);
        QFETCH(QString, end);
        const AttachStream::Close c = AttachStream::closeMeaning(code, reason);
        QCOMPARE(QString::fromLatin1(AttachStream::closeName(c)), meaning);
        const std::optional<AttachStream::End> e = AttachStream::closeEnd(c);
        QCOMPARE(e ? QString::fromLatin1(AttachStream::endName(*e)) : QString(), end);
    }

    void closeText_data()
    {
        QTest::addColumn<int>("code");
        QTest::addColumn<QString>("reason");
        QTest::addColumn<bool>("refused");
        QTest::addColumn<QString>("text");
        const QString restartOrBusy = QStringLiteral("1012 or 1013 (the server restarts in place or is busy; Qt reports them as 1002)");
        // What QWebSocket (Qt 5.15, 6.4) reports for a 1012 or 1013 close.
        QTest::newRow("Qt's 1002 for 1012") << 1002 << QStringLiteral("Invalid close code 1002 detected.") << true
                                             << restartOrBusy;
        QTest::newRow("a real 1002") << 1002 << QStringLiteral("invalid close code 999") << false
                                     << QStringLiteral("1002 \"invalid close code 999\"");
        QTest::newRow("1012 as sent") << 1012 << QStringLiteral("server restarting") << false
                                      << QStringLiteral("1012 \"server restarting\"");
        QTest::newRow("no close frame") << 1006 << QString() << false << QStringLiteral("no close frame");
        QTest::newRow("4409") << 4409 << QStringLiteral("superseded") << false << QStringLiteral("4409 \"superseded\"");
        QTest::newRow("code only") << 4000 << QString() << false << QStringLiteral("4000");
    }

    void closeText()
    {
        // tether attach's log says what a close means: a restart in place is
        // not Qt's "Invalid close code 1002 detected.".
        QFETCH(int, code);
        QFETCH(QString, reason);
        QFETCH(bool, refused);
        QFETCH(QString, text);
        QCOMPARE(AttachStream::isQtRefusedCode(code, reason), refused);
        QCOMPARE(AttachStream::closeText(code, reason), text);
    }

    void closeReasonsAreTheProtocols()
    {
        // Every reason text the vectors name for a Tether close is one of
        // protocol.h's (the others are Qt's or empty).
        const QStringList known{QLatin1String(Protocol::CloseReason::SessionKilled),
                                QLatin1String(Protocol::CloseReason::ServerShutdown),
                                QLatin1String(Protocol::CloseReason::ServiceRestart),
                                QLatin1String(Protocol::CloseReason::InputStalled),
                                QLatin1String(Protocol::CloseReason::TooFarBehind),
                                QLatin1String(Protocol::CloseReason::BadControlMessage),
                                QLatin1String(Protocol::CloseReason::BadQuery),
                                QLatin1String(Protocol::CloseReason::NoSuchSession),
                                QLatin1String(Protocol::CloseReason::Superseded),
                                QLatin1String(Protocol::CloseReason::ProcessExited),
                                QLatin1String(Protocol::CloseReason::TooManyViewers),
                                QLatin1String(Protocol::CloseReason::ShareRevoked),
                                QLatin1String(Protocol::CloseReason::SessionEndedByReboot),
                                QLatin1String(Protocol::CloseReason::SessionEndedByCrash),
                                QLatin1String(Protocol::CloseReason::SessionEndedByShutdown)};
        QSet<QString> seen;
        for (const QJsonValue &c : vectors().value(QStringLiteral("close")).toArray()) {
            const QJsonObject o = c.toObject();
            const QString reason = o.value(QStringLiteral("reason")).toString();
            if (o.value(QStringLiteral("code")).toInt() == 1002 || reason.isEmpty())
                continue;
            QVERIFY2(known.contains(reason), qPrintable(reason));
            seen.insert(reason);
        }
        QCOMPARE(seen.size(), known.size()); // and every one of them is covered
    }

    void splitSizes_data()
    {
        // A message of `size` bytes with `prelude`/`replay` bytes pending:
        // how many go to each part.
        QTest::addColumn<qint64>("prelude");
        QTest::addColumn<qint64>("replay");
        QTest::addColumn<qint64>("size");
        QTest::addColumn<qint64>("toPrelude");
        QTest::addColumn<qint64>("toReplay");
        QTest::addColumn<qint64>("toLive");
        QTest::addColumn<bool>("finished");
        QTest::newRow("all live") << 0LL << 0LL << 10LL << 0LL << 0LL << 10LL << false;
        QTest::newRow("inside the prelude") << 10LL << 5LL << 4LL << 4LL << 0LL << 0LL << false;
        QTest::newRow("prelude ends, replay begins") << 3LL << 5LL << 4LL << 3LL << 1LL << 0LL << false;
        QTest::newRow("everything at once") << 3LL << 5LL << 20LL << 3LL << 5LL << 12LL << true;
        QTest::newRow("replay ends exactly") << 0LL << 5LL << 5LL << 0LL << 5LL << 0LL << true;
        QTest::newRow("one byte of replay left") << 0LL << 1LL << 1000LL << 0LL << 1LL << 999LL << true;
        QTest::newRow("large replay, small message") << 0LL << (1LL << 40) << 16LL << 0LL << 16LL << 0LL << false;
    }

    void splitSizes()
    {
        QFETCH(qint64, prelude);
        QFETCH(qint64, replay);
        QFETCH(qint64, size);
        QFETCH(qint64, toPrelude);
        QFETCH(qint64, toReplay);
        QFETCH(qint64, toLive);
        QFETCH(bool, finished);
        AttachStream stream;
        AttachInfo info;
        info.replayFrom = 1000;
        info.preludeBytes = qsizetype(prelude);
        info.replayBytes = qsizetype(replay);
        QCOMPARE(stream.begin(info), prelude + replay == 0);
        const AttachStream::Split s = stream.output(qsizetype(size));
        qint64 got[3] = {0, 0, 0};
        for (int i = 0; i < s.count; ++i)
            got[int(s.pieces[size_t(i)].part)] += s.pieces[size_t(i)].size;
        QCOMPARE(got[int(AttachStream::Part::Prelude)], toPrelude);
        QCOMPARE(got[int(AttachStream::Part::Replay)], toReplay);
        QCOMPARE(got[int(AttachStream::Part::Live)], toLive);
        QCOMPARE(s.replayFinished, finished);
        QCOMPARE(stream.offset(), quint64(1000 + toReplay + toLive)); // prelude excluded
    }

    void stopKeepsTheOffsetForgetDropsIt()
    {
        AttachStream stream;
        AttachInfo info;
        info.replayFrom = 50;
        info.replayBytes = 10;
        QVERIFY(!stream.begin(info));
        stream.output(4);
        stream.stop(); // the connection ended mid-replay
        QVERIFY(!stream.isActive());
        QVERIFY(!stream.isReplaying());
        QVERIFY(stream.hasOffset());
        QCOMPARE(stream.offset(), quint64(54)); // resume from here
        // Output of a connection that is over changes nothing.
        const AttachStream::Split late = stream.output(7);
        QCOMPARE(late.count, 1);
        QCOMPARE(stream.offset(), quint64(54));
        stream.forget();
        QVERIFY(!stream.hasOffset());
    }

    void parseAttachedReadsEveryField()
    {
        const QJsonObject m = QJsonDocument::fromJson(
            R"({"type":"attached","mode":"watch","reset":false,"reason":"rolled_out","replay_from":9007199254740000,
                "prelude_bytes":12,"replay_bytes":34,"offset":9007199254740034,"state":"exited","cols":132,"rows":43})").object();
        const AttachInfo i = AttachStream::parseAttached(m);
        QCOMPARE(i.mode, ViewerMode::Watch);
        QVERIFY(!i.reset);
        QCOMPARE(i.reason, ReplayReason::RolledOut);
        QCOMPARE(i.replayFrom, quint64(9007199254740000ULL)); // below 2^53: exact
        QCOMPARE(i.preludeBytes, qsizetype(12));
        QCOMPARE(i.replayBytes, qsizetype(34));
        QCOMPARE(i.offset, quint64(9007199254740034ULL));
        QVERIFY(i.exited);
        QCOMPARE(i.cols, 132);
        QCOMPARE(i.rows, 43);
        // Garbage reads as nothing to replay, not as a huge count.
        const AttachInfo bad = AttachStream::parseAttached(QJsonObject{{QStringLiteral("replay_bytes"), -5}});
        QCOMPARE(bad.replayBytes, qsizetype(0));
    }

    void exitWithoutStatus()
    {
        QVERIFY(!AttachStream::parseExit(QJsonObject{{QStringLiteral("type"), QStringLiteral("exit")}}).has_value());
        QCOMPARE(AttachStream::exitLine(std::nullopt), QStringLiteral("[process exited]"));
    }
};

QTEST_GUILESS_MAIN(TestAttachStream)
#include "tst_attachstream.moc"
