// SPDX-License-Identifier: GPL-2.0-or-later
// ShellWords: the vectors of tests/vectors/shellwords.json (shared with the
// dashboard's shellwords.js, tests/js/shellwords.test.mjs), and every vector
// that a real /bin/sh can read checked against it, so the grammar is the
// shell's and not only our own idea of it.
#include "shellwords.h"

#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QtTest>

using namespace Tether;

namespace {

QJsonObject vectors()
{
    QFile f(QStringLiteral(TETHER_SHELLWORDS_VECTORS));
    if (!f.open(QIODevice::ReadOnly))
        return {};
    return QJsonDocument::fromJson(f.readAll()).object();
}

QStringList strings(const QJsonValue &v)
{
    QStringList out;
    for (const QJsonValue &s : v.toArray())
        out << s.toString();
    return out;
}

struct ShResult {
    int code = -1;
    QStringList words;
    QByteArray err;
};

/// What /bin/sh makes of `line` as the arguments of a function that prints
/// each one NUL-terminated.
ShResult shWords(const QString &line)
{
    QProcess sh;
    sh.start(QStringLiteral("/bin/sh"),
             {QStringLiteral("-c"), QStringLiteral("f() { for a; do printf '%s\\0' \"$a\"; done; }; f ") + line});
    ShResult r;
    if (!sh.waitForFinished(10000) || sh.exitStatus() != QProcess::NormalExit)
        return r;
    r.code = sh.exitCode();
    r.err = sh.readAllStandardError();
    const QByteArray out = sh.readAllStandardOutput();
    // The argument went out as local 8-bit; read it back the same way.
    QList<QByteArray> parts = out.split('\0');
    parts.removeLast(); // after the last terminator
    for (const QByteArray &p : std::as_const(parts))
        r.words << QString::fromLocal8Bit(p);
    return r;
}

QByteArray rowName(int i, const QString &text)
{
    QString shown = text;
    shown.replace(QLatin1Char('\n'), QStringLiteral("\\n")).replace(QLatin1Char('\t'), QStringLiteral("\\t"));
    return QByteArray::number(i) + ": " + shown.toUtf8();
}

} // namespace

class TestShellWords : public QObject
{
    Q_OBJECT
    /// The split vectors as rows; `shOnly`: only those a real sh reads the same way.
    static void addSplitRows(bool shOnly)
    {
        QTest::addColumn<QString>("input");
        QTest::addColumn<bool>("ok");
        QTest::addColumn<QStringList>("words");
        QTest::addColumn<QString>("error");
        const QJsonArray rows = vectors().value(QStringLiteral("split")).toArray();
        for (int i = 0; i < rows.size(); ++i) {
            const QJsonObject r = rows.at(i).toObject();
            if (shOnly && !r.value(QStringLiteral("sh")).toBool(true))
                continue;
            const QString input = r.value(QStringLiteral("input")).toString();
            QTest::newRow(rowName(i, input).constData())
                << input << !r.contains(QStringLiteral("error")) << strings(r.value(QStringLiteral("words")))
                << r.value(QStringLiteral("error")).toString();
        }
    }

private Q_SLOTS:
    void vectorFileLoads()
    {
        const QJsonObject v = vectors();
        QVERIFY2(v.value(QStringLiteral("split")).toArray().size() >= 30, TETHER_SHELLWORDS_VECTORS);
        QVERIFY(v.value(QStringLiteral("quote")).toArray().size() >= 5);
    }

    void split_data() { addSplitRows(false); }
    void split()
    {
        QFETCH(QString, input);
        QFETCH(bool, ok);
        QFETCH(QStringList, words);
        QFETCH(QString, error);
        QString why = QStringLiteral("stale");
        const std::optional<QStringList> got = ShellWords::split(input, &why);
        QCOMPARE(got.has_value(), ok);
        if (ok) {
            QCOMPARE(*got, words);
            QVERIFY(why.isEmpty());
        } else {
            QCOMPARE(why, error);
        }
        // Without an error pointer it answers the same.
        QCOMPARE(ShellWords::split(input).has_value(), ok);
    }

    void splitAsShDoes_data() { addSplitRows(true); }
    void splitAsShDoes()
    {
        QFETCH(QString, input);
        QFETCH(bool, ok);
        QFETCH(QStringList, words);
        const ShResult r = shWords(input);
        if (ok) {
            QVERIFY2(r.code == 0, r.err.constData());
            QCOMPARE(r.words, words);
        } else {
            QVERIFY2(r.code != 0 && r.code != -1, "sh accepted what split() rejects");
        }
    }

    void quote_data()
    {
        QTest::addColumn<QStringList>("argv");
        QTest::addColumn<QString>("quoted");
        const QJsonArray rows = vectors().value(QStringLiteral("quote")).toArray();
        for (int i = 0; i < rows.size(); ++i) {
            const QJsonObject r = rows.at(i).toObject();
            const QStringList argv = strings(r.value(QStringLiteral("argv")));
            QTest::newRow(rowName(i, argv.join(QLatin1Char(','))).constData())
                << argv << r.value(QStringLiteral("quoted")).toString();
        }
    }

    void quote()
    {
        QFETCH(QStringList, argv);
        QFETCH(QString, quoted);
        QCOMPARE(ShellWords::quote(argv), quoted);
        // split() and sh both turn it back into the same words.
        QCOMPARE(ShellWords::split(quoted).value_or(QStringList{QStringLiteral("<error>")}), argv);
        const ShResult r = shWords(quoted);
        QVERIFY2(r.code == 0, r.err.constData());
        QCOMPARE(r.words, argv);
    }
};

QTEST_GUILESS_MAIN(TestShellWords)
#include "tst_shellwords.moc"
