// SPDX-License-Identifier: GPL-2.0-or-later
// parseControlMessage(): a viewer's JSON text messages against
// docs/protocol.md ("Client → server"). tst_server_ws checks the same rules
// through a real WebSocket; tests/fuzz/fuzz_controlmessage.cpp throws
// arbitrary bytes at the function.
#include "controlmessage.h"

#include <QTest>

using namespace Tether;

Q_DECLARE_METATYPE(Tether::ControlMessage::Type)

class TestControlMessage : public QObject
{
    Q_OBJECT
private Q_SLOTS:
    void parse_data();
    void parse();
    void flowControl_data();
    void flowControl();
};

void TestControlMessage::parse_data()
{
    QTest::addColumn<QByteArray>("message");
    QTest::addColumn<bool>("resize");      // else Invalid: closed 4400
    QTest::addColumn<bool>("inRange");
    QTest::addColumn<int>("cols");
    QTest::addColumn<int>("rows");

    QTest::newRow("resize") << QByteArray(R"({"type":"resize","cols":100,"rows":40})") << true << true << 100 << 40;
    QTest::newRow("resize: bounds") << QByteArray(R"({"type":"resize","cols":1,"rows":1000})") << true << true << 1 << 1000;
    QTest::newRow("resize: 80.0 is an integer") << QByteArray(R"({"type":"resize","cols":80.0,"rows":2.4e1})")
                                                << true << true << 80 << 24;
    QTest::newRow("resize: extra fields ignored") << QByteArray(R"({"rows":5,"x":[1],"cols":6,"type":"resize"})")
                                                  << true << true << 6 << 5;
    // Numbers, but not a size to apply: ignored, the viewer stays.
    QTest::newRow("hidden tab's 0x0") << QByteArray(R"({"type":"resize","cols":0,"rows":0})") << true << false << 0 << 0;
    QTest::newRow("WSL's 131072 columns") << QByteArray(R"({"type":"resize","cols":131072,"rows":24})")
                                          << true << false << 0 << 0;
    QTest::newRow("fraction") << QByteArray(R"({"type":"resize","cols":80.5,"rows":24})") << true << false << 0 << 0;
    QTest::newRow("negative") << QByteArray(R"({"type":"resize","cols":-5,"rows":10})") << true << false << 0 << 0;
    // Beyond int: converted before the range check, undefined behaviour
    // (UBSan float-cast-overflow in WebSocketViewer::onText).
    QTest::newRow("cols 1e10") << QByteArray(R"({"type":"resize","cols":1e10,"rows":24})") << true << false << 0 << 0;
    QTest::newRow("rows -1e300") << QByteArray(R"({"type":"resize","cols":80,"rows":-1e300})") << true << false << 0 << 0;
    // Closed 4400.
    QTest::newRow("empty") << QByteArray() << false << false << 0 << 0;
    QTest::newRow("not JSON") << QByteArray("resize 80 24") << false << false << 0 << 0;
    QTest::newRow("array") << QByteArray(R"([{"type":"resize","cols":80,"rows":24}])") << false << false << 0 << 0;
    QTest::newRow("no type") << QByteArray(R"({"cols":80,"rows":24})") << false << false << 0 << 0;
    QTest::newRow("type not a string") << QByteArray(R"({"type":1,"cols":80,"rows":24})") << false << false << 0 << 0;
    QTest::newRow("unknown type") << QByteArray(R"({"type":"input","data":"ls\n"})") << false << false << 0 << 0;
    QTest::newRow("cols a string") << QByteArray(R"({"type":"resize","cols":"80","rows":24})") << false << false << 0 << 0;
    QTest::newRow("rows missing") << QByteArray(R"({"type":"resize","cols":80})") << false << false << 0 << 0;
    QTest::newRow("rows null") << QByteArray(R"({"type":"resize","cols":80,"rows":null})") << false << false << 0 << 0;
    QTest::newRow("trailing garbage") << QByteArray(R"({"type":"resize","cols":80,"rows":24} x)") << false << false << 0 << 0;
    QTest::newRow("invalid UTF-8") << QByteArray("{\"type\":\"resize\xff\",\"cols\":80,\"rows\":24}") << false << false << 0 << 0;
}

void TestControlMessage::parse()
{
    QFETCH(QByteArray, message);
    QFETCH(bool, resize);
    QFETCH(bool, inRange);
    QFETCH(int, cols);
    QFETCH(int, rows);
    const ControlMessage m = parseControlMessage(message);
    QCOMPARE(m.type, resize ? ControlMessage::Type::Resize : ControlMessage::Type::Invalid);
    QCOMPARE(m.sizeInRange, inRange);
    if (inRange) {
        QCOMPARE(m.cols, cols);
        QCOMPARE(m.rows, rows);
    }
}

void TestControlMessage::flowControl_data()
{
    QTest::addColumn<QByteArray>("message");
    QTest::addColumn<ControlMessage::Type>("type");
    QTest::newRow("pause") << QByteArray(R"({"type":"pause"})") << ControlMessage::Type::Pause;
    QTest::newRow("resume") << QByteArray(R"({"type":"resume"})") << ControlMessage::Type::Resume;
    QTest::newRow("pause: extra fields ignored") << QByteArray(R"({"x":1,"type":"pause","cols":"no"})")
                                                 << ControlMessage::Type::Pause;
    QTest::newRow("Pause: case matters") << QByteArray(R"({"type":"Pause"})") << ControlMessage::Type::Invalid;
    QTest::newRow("paused") << QByteArray(R"({"type":"paused"})") << ControlMessage::Type::Invalid;
    QTest::newRow("pause as a string") << QByteArray(R"("pause")") << ControlMessage::Type::Invalid;
}

void TestControlMessage::flowControl()
{
    QFETCH(QByteArray, message);
    QFETCH(ControlMessage::Type, type);
    const ControlMessage m = parseControlMessage(message);
    QCOMPARE(m.type, type);
    QVERIFY(!m.sizeInRange);
}

QTEST_GUILESS_MAIN(TestControlMessage)
#include "tst_controlmessage.moc"
