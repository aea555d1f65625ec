// SPDX-License-Identifier: GPL-2.0-or-later
// DisplayText::escape, the one rule for showing text a session controls: the
// vectors of tests/vectors/displaytext.json (shared with the dashboard's
// displayText(), tests/js/displaytext.test.mjs), and every code unit of the
// Basic Multilingual Plane checked against the documented list.
#include "displaytext.h"

#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QtTest>

using namespace Tether;

namespace {

QJsonArray vectors()
{
    QFile f(QStringLiteral(TETHER_DISPLAYTEXT_VECTORS));
    if (!f.open(QIODevice::ReadOnly))
        return {};
    return QJsonDocument::fromJson(f.readAll()).object().value(QStringLiteral("escape")).toArray();
}

/// The list of docs (displaytext.h), written out once more as ranges.
bool listed(char16_t c)
{
    struct Range {
        char16_t first, last;
    };
    static const Range ranges[] = {{0x00, 0x1f},     {0x7f, 0x9f},     {0xad, 0xad},     {0x061c, 0x061c},
                                   {0x180e, 0x180e}, {0x200b, 0x200f}, {0x2028, 0x202e}, {0x2060, 0x2064},
                                   {0x2066, 0x206f}, {0xfeff, 0xfeff}, {0xfff9, 0xfffb}};
    for (const Range &r : ranges) {
        if (c >= r.first && c <= r.last)
            return true;
    }
    return false;
}

} // namespace

class TestDisplayText : public QObject
{
    Q_OBJECT
private Q_SLOTS:
    void vectorFileIsThere()
    {
        QVERIFY(vectors().size() >= 15);
    }

    void escape_data()
    {
        QTest::addColumn<QString>("input");
        QTest::addColumn<QString>("shown");
        const QJsonArray v = vectors();
        for (int i = 0; i < v.size(); ++i) {
            const QJsonObject o = v.at(i).toObject();
            QTest::addRow("%d: %s", i, qPrintable(o.value(QStringLiteral("note")).toString()))
                << o.value(QStringLiteral("input")).toString() << o.value(QStringLiteral("shown")).toString();
        }
    }
    void escape()
    {
        QFETCH(QString, input);
        QFETCH(QString, shown);
        QCOMPARE(DisplayText::escape(input), shown);
    }

    /// Every BMP code unit: escaped exactly when listed, and the result never
    /// holds a listed character (what a terminal would act on).
    void everyCodeUnit()
    {
        for (char32_t u = 0; u <= 0xffff; ++u) {
            const char16_t c = char16_t(u);
            if (QChar::isSurrogate(c))
                continue;
            QCOMPARE(DisplayText::needsEscape(c), listed(c));
            const QString out = DisplayText::escape(QString(QChar(c)));
            QCOMPARE(out == QString(QChar(c)), !listed(c));
            for (const QChar ch : out)
                QVERIFY(!listed(ch.unicode()));
        }
    }
};

QTEST_APPLESS_MAIN(TestDisplayText)
#include "tst_displaytext.moc"
