// SPDX-License-Identifier: GPL-2.0-or-later
// SessionText against tests/vectors/sessiontext.json, the vectors the
// dashboard's sessiontext.js is held to as well (issue 28: one wording of a
// session's state, exit, durations and sizes in every client).
#include "sessiontext.h"

#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QTest>

using namespace Tether;

class TestSessionText : public QObject
{
    Q_OBJECT

    static QJsonArray vectors(const char *kind)
    {
        QFile f(QStringLiteral(TETHER_SOURCE_DIR "/tests/vectors/sessiontext.json"));
        if (!f.open(QIODevice::ReadOnly))
            return {};
        return QJsonDocument::fromJson(f.readAll()).object().value(QLatin1String(kind)).toArray();
    }

    static void rows(const char *kind, const char *input)
    {
        QTest::addColumn<QJsonValue>("input");
        QTest::addColumn<QString>("shown");
        const QJsonArray all = vectors(kind);
        QVERIFY2(all.size() >= 5, kind);
        for (const QJsonValue &v : all) {
            const QJsonObject o = v.toObject();
            const QByteArray name = QJsonDocument(QJsonArray{o.value(QLatin1String(input))}).toJson(QJsonDocument::Compact);
            QTest::newRow(name.constData()) << o.value(QLatin1String(input)) << o.value(QStringLiteral("shown")).toString();
        }
    }

private Q_SLOTS:
    void duration_data() { rows("duration", "seconds"); }
    void duration()
    {
        QFETCH(QJsonValue, input);
        QFETCH(QString, shown);
        QCOMPARE(SessionText::duration(qint64(input.toDouble())), shown);
    }

    void bytes_data() { rows("bytes", "bytes"); }
    void bytes()
    {
        QFETCH(QJsonValue, input);
        QFETCH(QString, shown);
        QCOMPARE(SessionText::bytes(qint64(input.toDouble())), shown);
    }

    void exitStatus_data() { rows("exit", "exit"); }
    void exitStatus()
    {
        QFETCH(QJsonValue, input);
        QFETCH(QString, shown);
        const QJsonObject e = input.toObject();
        // null or missing: not known, as the attach stream's exit message
        // leaves it (docs/protocol.md).
        const int code = e.value(QStringLiteral("code")).isDouble() ? e.value(QStringLiteral("code")).toInt() : -1;
        const int signal = e.value(QStringLiteral("signal")).isDouble() ? e.value(QStringLiteral("signal")).toInt() : -1;
        QCOMPARE(SessionText::exitStatus(code, signal), shown);
    }

    void state_data() { rows("state", "session"); }
    void state()
    {
        QFETCH(QJsonValue, input);
        QFETCH(QString, shown);
        QCOMPARE(SessionText::state(input.toObject()), shown);
    }
};

QTEST_GUILESS_MAIN(TestSessionText)
#include "tst_sessiontext.moc"
