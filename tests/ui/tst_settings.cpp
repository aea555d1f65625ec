// SPDX-License-Identifier: GPL-2.0-or-later
// The settings dialog round-trips through QSettings and changes the running registry.
#include "config.h"
#include "registry.h"
#include "session.h"
#include "settingsdialog.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDialogButtonBox>
#include <QFile>
#include <QFontComboBox>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QRegularExpression>
#include <QScreen>
#include <QScrollArea>
#include <QScrollBar>
#include <QTabWidget>
#include <QSettings>
#include <QSignalSpy>
#include <QSpinBox>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QTest>

using namespace Tether;

class TestSettingsDialog : public QObject
{
    Q_OBJECT
private Q_SLOTS:
    void initTestCase();
    void loadsStoredValues();
    void terminalAppearance();
    void roundTripAndLiveLimits();
    void commandLineLimitsSurviveApply();
    void unitsConvert();
    void exitedTtlBesideTtl();
    void typedBufferSizeIsKeptAndBounded();
    void errorLineGivesItsHeightBack();
    void fitsASmallScreen();
    void invalidBindDisablesOk();
    void nonLoopbackTextsAgreeWithTheServer();
    void commandIsSplitAsShellWords();
    void nonLoopbackNeedsConfirmation();
    void autostartEntry();
    void autostartExecPrefersPath();
    void autostartExecQuoting();
    void restartNeededWhenAddressChanges();
    void noRestartForTheAddressChosenAtStart();

private:
    template<typename T> T *child(SettingsDialog &d, const char *name)
    {
        T *w = d.findChild<T *>(QLatin1String(name));
        if (!w)
            qFatal("no child %s", name);
        return w;
    }
    QString settingsPath() const { return m_dir.filePath(QStringLiteral("tether.conf")); }
    QTemporaryDir m_dir;
};

void TestSettingsDialog::initTestCase()
{
    QVERIFY(m_dir.isValid());
    // Autostart goes to $XDG_CONFIG_HOME/autostart: keep it inside the test dir.
    qputenv("XDG_CONFIG_HOME", m_dir.filePath(QStringLiteral("config")).toLocal8Bit());
    QVERIFY(SettingsDialog::autostartPath().startsWith(m_dir.path()));
}

void TestSettingsDialog::loadsStoredValues()
{
    QFile::remove(settingsPath());
    QSettings s(settingsPath(), QSettings::IniFormat);
    s.setValue(QStringLiteral("sessions/ttl"), 5400);                 // 90 minutes
    s.setValue(QStringLiteral("sessions/bufferSize"), 96 * 1024);     // not whole MiB -> KiB
    s.setValue(QStringLiteral("sessions/maxSessions"), 7);
    s.setValue(QStringLiteral("sessions/command"), QStringLiteral("/bin/bash -l"));
    s.setValue(QStringLiteral("server/bind"), QStringLiteral("::1"));
    s.setValue(QStringLiteral("server/port"), 7555);
    s.sync();

    SettingsDialog d(nullptr, &s);
    QCOMPARE(child<QSpinBox>(d, "ttl")->value(), 90);
    QCOMPARE(child<QComboBox>(d, "ttlUnit")->currentIndex(), 1); // minutes
    QCOMPARE(child<QSpinBox>(d, "bufferSize")->value(), 96);
    QCOMPARE(child<QComboBox>(d, "bufferUnit")->currentIndex(), 0); // KiB
    QCOMPARE(child<QSpinBox>(d, "maxSessions")->value(), 7);
    QCOMPARE(child<QLineEdit>(d, "command")->text(), QStringLiteral("/bin/bash -l"));
    QCOMPARE(child<QLineEdit>(d, "bind")->text(), QStringLiteral("::1"));
    QCOMPARE(child<QSpinBox>(d, "port")->value(), 7555);

    // TTL 0 shows "never".
    s.setValue(QStringLiteral("sessions/ttl"), 0);
    s.setValue(QStringLiteral("sessions/bufferSize"), 4 * 1024 * 1024);
    SettingsDialog d2(nullptr, &s);
    QCOMPARE(child<QSpinBox>(d2, "ttl")->text(), QStringLiteral("never"));
    QCOMPARE(child<QSpinBox>(d2, "bufferSize")->value(), 4);
    QCOMPARE(child<QComboBox>(d2, "bufferUnit")->currentIndex(), 1); // MiB
}

void TestSettingsDialog::terminalAppearance()
{
#ifndef TETHER_HAVE_QTERMWIDGET
    QSKIP("this build has no terminal window (QTermWidget): nothing to choose");
#else
    QFile::remove(settingsPath());
    QSettings s(settingsPath(), QSettings::IniFormat);
    SettingsDialog fresh(nullptr, &s);
    auto *freshScheme = child<QComboBox>(fresh, "colorScheme");
    // The default reads well (vim's Visual selection: issue 14).
    QCOMPARE(freshScheme->currentText(), QStringLiteral("BlackOnWhite"));
    QCOMPARE(child<QSpinBox>(fresh, "fontSize")->value(), 10);
    QVERIFY(freshScheme->findText(QStringLiteral("WhiteOnBlack")) >= 0);
    QVERIFY(freshScheme->findText(QStringLiteral("DarkPastels")) >= 0);

    s.setValue(QStringLiteral("terminal/colorScheme"), QStringLiteral("DarkPastels"));
    s.setValue(QStringLiteral("terminal/fontSize"), 13);
    s.sync();
    SettingsDialog d(nullptr, &s);
    auto *scheme = child<QComboBox>(d, "colorScheme");
    QCOMPARE(scheme->currentText(), QStringLiteral("DarkPastels"));
    QCOMPARE(child<QSpinBox>(d, "fontSize")->value(), 13);
    QVERIFY(!child<QFontComboBox>(d, "fontFamily")->currentFont().family().isEmpty());

    scheme->setCurrentIndex(scheme->findText(QStringLiteral("WhiteOnBlack")));
    child<QSpinBox>(d, "fontSize")->setValue(16);
    QSignalSpy applied(&d, &SettingsDialog::applied);
    d.findChild<QDialogButtonBox *>()->button(QDialogButtonBox::Apply)->click();
    QCOMPARE(applied.count(), 1);
    const Config c = Config::load(s);
    QCOMPARE(c.terminalColorScheme, QStringLiteral("WhiteOnBlack"));
    QCOMPARE(c.terminalFontSize, 16);
    QCOMPARE(c.terminalFontFamily, child<QFontComboBox>(d, "fontFamily")->currentFont().family());
    // Out of range in the file: clamped.
    s.setValue(QStringLiteral("terminal/fontSize"), 500);
    QCOMPARE(Config::load(s).terminalFontSize, Config::kMaxTerminalFontSize);
#endif
}

void TestSettingsDialog::commandLineLimitsSurviveApply()
{
    // `tether --ttl 120`: the running TTL is 120 s while the file says 1800.
    // Applying a change to another field must not undo the option.
    QFile::remove(settingsPath());
    QSettings s(settingsPath(), QSettings::IniFormat);
    SessionRegistry registry;
    Limits run = registry.limits();
    run.ttlSeconds = 120;
    registry.setLimits(run);
    SettingsDialog d(&registry, &s);
    auto *note = child<QLabel>(d, "overrideNote");
    QVERIFY(!note->isHidden());
    QVERIFY2(note->text().contains(QStringLiteral("120")), qPrintable(note->text()));
    child<QSpinBox>(d, "maxSessions")->setValue(9);
    QVERIFY(d.apply());
    QCOMPARE(registry.limits().ttlSeconds, 120);
    QCOMPARE(registry.limits().maxSessions, 9);
    // Changing the TTL field itself does apply it, and then nothing differs.
    child<QComboBox>(d, "ttlUnit")->setCurrentIndex(1); // minutes
    child<QSpinBox>(d, "ttl")->setValue(45);
    QVERIFY(d.apply());
    QCOMPARE(registry.limits().ttlSeconds, 45 * 60);
    QVERIFY(note->isHidden());
}

void TestSettingsDialog::exitedTtlBesideTtl()
{
    // The exited-session TTL has its own field beside the TTL: it loads
    // sessions/exitedTtl (default 30 minutes), saves it, applies it to the
    // running registry (an exited session's expiry follows at once), keeps a
    // command-line `--exited-ttl` until the field is changed, and never
    // touches the running-session TTL.
    QFile::remove(settingsPath());
    QSettings s(settingsPath(), QSettings::IniFormat);
    SessionRegistry registry;
    registry.setTeardownGrace(200);
    {
        SettingsDialog fresh(&registry, &s);
        QCOMPARE(child<QSpinBox>(fresh, "exitedTtl")->value(), 30); // the default, 1800 s
        QCOMPARE(child<QComboBox>(fresh, "exitedTtlUnit")->currentIndex(), 1); // minutes
        QCOMPARE(child<QSpinBox>(fresh, "ttl")->text(), QStringLiteral("never"));
    }
    s.setValue(QStringLiteral("sessions/exitedTtl"), 90); // not whole minutes -> seconds
    s.sync();
    Limits run = registry.limits();
    run.exitedTtlSeconds = 45; // `tether --exited-ttl 45`
    registry.setLimits(run);

    SettingsDialog d(&registry, &s);
    auto *exited = child<QSpinBox>(d, "exitedTtl");
    auto *unit = child<QComboBox>(d, "exitedTtlUnit");
    QCOMPARE(exited->value(), 90);
    QCOMPARE(unit->currentIndex(), 0); // seconds
    auto *note = child<QLabel>(d, "overrideNote");
    QVERIFY2(!note->isHidden() && note->text().contains(QStringLiteral("keep exited sessions 45 s")),
             qPrintable(note->text()));
    child<QSpinBox>(d, "maxSessions")->setValue(9); // another field: the option stays
    QVERIFY(d.apply());
    QCOMPARE(registry.limits().exitedTtlSeconds, 45);

    // An exited session, detached: its expiry follows the field once applied.
    SpawnOptions o;
    o.argv = QStringList{QStringLiteral("/bin/sh"), QStringLiteral("-c"), QStringLiteral("exit 0")};
    Session *done = registry.create(o);
    QVERIFY(done);
    QTRY_COMPARE(done->state(), Session::State::Exited);
    QVERIFY(registry.expiresIn(done) >= 0 && registry.expiresIn(done) <= 45); // seconds
    unit->setCurrentIndex(2); // hours: the number stays
    QCOMPARE(exited->value(), 90);
    exited->setValue(2);
    QCOMPARE(d.formConfig().limits.exitedTtlSeconds, 7200);
    QCOMPARE(d.formConfig().limits.ttlSeconds, 0);
    QVERIFY(d.apply());
    QCOMPARE(registry.limits().exitedTtlSeconds, 7200);
    QCOMPARE(registry.limits().ttlSeconds, 0);
    QVERIFY(registry.expiresIn(done) > 45);
    QVERIFY(note->isHidden());
    QSettings check(settingsPath(), QSettings::IniFormat);
    QCOMPARE(check.value(QStringLiteral("sessions/exitedTtl")).toInt(), 7200);
    QCOMPARE(check.value(QStringLiteral("sessions/ttl")).toInt(), 0);

    // 0 = kept until closed, shown as "never".
    exited->setValue(0);
    QCOMPARE(exited->text(), QStringLiteral("never"));
    QVERIFY(d.apply());
    QCOMPARE(registry.limits().exitedTtlSeconds, 0);
    QCOMPARE(registry.expiresIn(done), qint64(-1));
    SettingsDialog again(nullptr, &s);
    QCOMPARE(child<QSpinBox>(again, "exitedTtl")->text(), QStringLiteral("never"));
}

void TestSettingsDialog::roundTripAndLiveLimits()
{
    QFile::remove(settingsPath());
    QSettings s(settingsPath(), QSettings::IniFormat);
    SessionRegistry registry;
    registry.setTeardownGrace(200);
    SpawnOptions o;
    o.argv = QStringList{QStringLiteral("/bin/sh")};
    Session *live = registry.create(o);
    QVERIFY(live);
    QCOMPARE(live->buffer().capacity(), RingBuffer::kDefaultCapacity);

    SettingsDialog d(&registry, &s);
    QSignalSpy applied(&d, &SettingsDialog::applied);
    child<QComboBox>(d, "ttlUnit")->setCurrentIndex(2); // hours
    child<QSpinBox>(d, "ttl")->setValue(2);
    child<QComboBox>(d, "bufferUnit")->setCurrentIndex(1); // MiB
    child<QSpinBox>(d, "bufferSize")->setValue(8);
    child<QSpinBox>(d, "maxSessions")->setValue(10);
    child<QLineEdit>(d, "command")->setText(QStringLiteral("  /bin/sh -i  "));
    child<QLineEdit>(d, "bind")->setText(QStringLiteral("127.0.0.1"));
    child<QSpinBox>(d, "port")->setValue(9000);

    // OK = apply + close.
    QPushButton *ok = d.findChild<QDialogButtonBox *>()->button(QDialogButtonBox::Ok);
    QVERIFY(ok->isEnabled());
    d.show();
    QTest::mouseClick(ok, Qt::LeftButton);
    QCOMPARE(applied.count(), 1);
    QCOMPARE(d.result(), int(QDialog::Accepted));

    // Stored under the keys config.h documents ...
    s.sync();
    QSettings check(settingsPath(), QSettings::IniFormat);
    QCOMPARE(check.value(QStringLiteral("sessions/ttl")).toInt(), 7200);
    QCOMPARE(check.value(QStringLiteral("sessions/bufferSize")).toLongLong(), 8LL * 1024 * 1024);
    QCOMPARE(check.value(QStringLiteral("sessions/maxSessions")).toInt(), 10);
    QCOMPARE(check.value(QStringLiteral("sessions/command")).toString(), QStringLiteral("/bin/sh -i"));
    QCOMPARE(check.value(QStringLiteral("server/port")).toInt(), 9000);
    const Config c = Config::load(check);
    QCOMPARE(c.limits.ttlSeconds, 7200);
    QCOMPARE(c.commandArgv(), (QStringList{QStringLiteral("/bin/sh"), QStringLiteral("-i")}));

    // ... and applied to the running registry, existing sessions included.
    QCOMPARE(registry.limits().ttlSeconds, 7200);
    QCOMPARE(registry.limits().bufferCapacity, qsizetype(8) * 1024 * 1024);
    QCOMPARE(registry.limits().maxSessions, 10);
    QCOMPARE(live->buffer().capacity(), qsizetype(8) * 1024 * 1024);

    // A fresh dialog shows what was saved.
    SettingsDialog again(&registry, &check);
    QCOMPARE(child<QSpinBox>(again, "ttl")->value(), 2);
    QCOMPARE(child<QComboBox>(again, "ttlUnit")->currentIndex(), 2);
    QCOMPARE(child<QSpinBox>(again, "bufferSize")->value(), 8);
    QCOMPARE(again.formConfig().limits.bufferCapacity, qsizetype(8) * 1024 * 1024);

    // Cancel changes nothing.
    child<QSpinBox>(again, "maxSessions")->setValue(99);
    again.reject();
    QCOMPARE(registry.limits().maxSessions, 10);
    QSettings check2(settingsPath(), QSettings::IniFormat);
    QCOMPARE(check2.value(QStringLiteral("sessions/maxSessions")).toInt(), 10);
}

void TestSettingsDialog::unitsConvert()
{
    QFile::remove(settingsPath());
    QSettings s(settingsPath(), QSettings::IniFormat);
    SettingsDialog d(nullptr, &s);
    auto *ttl = child<QSpinBox>(d, "ttl");
    auto *unit = child<QComboBox>(d, "ttlUnit");
    unit->setCurrentIndex(0);
    ttl->setValue(45);
    QCOMPARE(d.formConfig().limits.ttlSeconds, 45);
    unit->setCurrentIndex(1);
    QCOMPARE(d.formConfig().limits.ttlSeconds, 45 * 60);
    ttl->setValue(0);
    QCOMPARE(d.formConfig().limits.ttlSeconds, 0);

    // Buffer: 64 KiB .. 64 MiB whatever the unit; the number stays when the
    // unit changes, and a size out of range makes the form invalid (the
    // config itself is still clamped).
    auto *buf = child<QSpinBox>(d, "bufferSize");
    auto *bunit = child<QComboBox>(d, "bufferUnit");
    bunit->setCurrentIndex(0); // KiB
    buf->setValue(1);
    QCOMPARE(buf->value(), 1);
    QVERIFY(!d.isFormValid());
    QCOMPARE(d.formConfig().limits.bufferCapacity, RingBuffer::kMinCapacity);
    buf->setValue(64);
    QVERIFY(d.isFormValid());
    QCOMPARE(d.formConfig().limits.bufferCapacity, RingBuffer::kMinCapacity);
    bunit->setCurrentIndex(1); // MiB
    QCOMPARE(buf->value(), 64);
    QVERIFY(d.isFormValid());
    QCOMPARE(d.formConfig().limits.bufferCapacity, RingBuffer::kMaxCapacity);
    buf->setValue(1000);
    QVERIFY(!d.isFormValid());
    QCOMPARE(d.formConfig().limits.bufferCapacity, RingBuffer::kMaxCapacity);
}

void TestSettingsDialog::typedBufferSizeIsKeptAndBounded()
{
    // Typing 100 into the MiB box used to give 10: the spin box's maximum
    // (64 in MiB) made it drop the last keystroke without a word. Every
    // keystroke is kept; a size out of 64 KiB .. 64 MiB says so and
    // disables OK and Apply.
    QFile::remove(settingsPath());
    QSettings s(settingsPath(), QSettings::IniFormat);
    SettingsDialog d(nullptr, &s);
    d.show();
    QVERIFY(QTest::qWaitForWindowExposed(&d));
    auto *buf = child<QSpinBox>(d, "bufferSize");
    auto *bunit = child<QComboBox>(d, "bufferUnit");
    auto *error = child<QLabel>(d, "bufferError");
    QPushButton *ok = d.findChild<QDialogButtonBox *>()->button(QDialogButtonBox::Ok);
    QPushButton *applyButton = d.findChild<QDialogButtonBox *>()->button(QDialogButtonBox::Apply);
    auto type = [&](const QString &text) {
        buf->setFocus();
        buf->selectAll();
        QTest::keyClick(buf, Qt::Key_Delete);
        QTest::keyClicks(buf, text);
    };
    bunit->setCurrentIndex(1); // MiB
    type(QStringLiteral("100"));
    QCOMPARE(buf->text(), QStringLiteral("100"));
    QCOMPARE(buf->value(), 100);
    QVERIFY(error->isVisible());
    QVERIFY2(error->text().contains(QStringLiteral("at most 64 MiB")), qPrintable(error->text()));
    QVERIFY(!ok->isEnabled());
    QVERIFY(!applyButton->isEnabled());
    QVERIFY(!d.apply());
    QVERIFY(!s.contains(QStringLiteral("sessions/bufferSize")));

    type(QStringLiteral("64"));
    QCOMPARE(buf->value(), 64);
    QVERIFY(error->isHidden());
    QVERIFY(ok->isEnabled());
    QVERIFY(d.apply());
    QCOMPARE(s.value(QStringLiteral("sessions/bufferSize")).toLongLong(), qint64(RingBuffer::kMaxCapacity));

    bunit->setCurrentIndex(0); // KiB: the whole range can be typed too
    type(QStringLiteral("65536"));
    QCOMPARE(buf->value(), 65536);
    QVERIFY(error->isHidden());
    type(QStringLiteral("65537"));
    QCOMPARE(buf->value(), 65537);
    QVERIFY(error->isVisible());
    type(QStringLiteral("63"));
    QVERIFY2(error->text().contains(QStringLiteral("at least 64 KiB")), qPrintable(error->text()));
    QVERIFY(!ok->isEnabled());
    type(QStringLiteral("128"));
    QVERIFY(error->isHidden());
    QVERIFY(ok->isEnabled());
    QCOMPARE(d.formConfig().limits.bufferCapacity, qsizetype(128 * 1024));
}

void TestSettingsDialog::errorLineGivesItsHeightBack()
{
    // A bind-address error made the dialog taller for good. The dialog now
    // has tabs as tall as the tallest page (Sessions): an error line there
    // makes it taller, and the height comes back.
    QFile::remove(settingsPath());
    QSettings s(settingsPath(), QSettings::IniFormat);
    SettingsDialog d(nullptr, &s);
    d.show();
    QVERIFY(QTest::qWaitForWindowExposed(&d));
    const int h0 = d.height();
    auto *buffer = child<QSpinBox>(d, "bufferSize");
    child<QComboBox>(d, "bufferUnit")->setCurrentIndex(0); // KiB
    buffer->setValue(1); // too small
    QVERIFY(!child<QLabel>(d, "bufferError")->isHidden());
    QTRY_VERIFY(d.height() > h0);
    auto *sessionsPage = qobject_cast<QScrollArea *>(d.findChild<QTabWidget *>()->currentWidget());
    QVERIFY(sessionsPage);
    QTRY_COMPARE(sessionsPage->verticalScrollBar()->maximum(), 0); // shown whole
    buffer->setValue(1024);
    QVERIFY(child<QLabel>(d, "bufferError")->isHidden());
    QTRY_COMPARE(d.height(), h0);

    // The bind error's page (Server) has room: shown whole, no taller.
    auto *bind = child<QLineEdit>(d, "bind");
    d.findChild<QTabWidget *>()->setCurrentIndex(1);
    auto *serverPage = qobject_cast<QScrollArea *>(d.findChild<QTabWidget *>()->currentWidget());
    QVERIFY(serverPage && serverPage->isAncestorOf(bind));
    bind->setText(QStringLiteral("not an address"));
    QVERIFY(!child<QLabel>(d, "bindError")->isHidden());
    QTRY_COMPARE(serverPage->verticalScrollBar()->maximum(), 0);
    QCOMPARE(d.height(), h0);
    bind->setText(QStringLiteral("127.0.0.1"));
    QTRY_COMPARE(d.height(), h0);
}

void TestSettingsDialog::fitsASmallScreen()
{
    // Stacked group boxes made it 584x843 on a new user's desktop: OK,
    // Cancel and Apply were below the bottom of a 1280x800 screen.
    QFile::remove(settingsPath());
    QSettings s(settingsPath(), QSettings::IniFormat);
    SettingsDialog d(nullptr, &s);
    QVERIFY2(d.sizeHint().height() <= 720 - 40, qPrintable(QString::number(d.sizeHint().height())));
    QVERIFY(d.sizeHint().width() <= 1280);
    d.show();
    QVERIFY(QTest::qWaitForWindowExposed(&d));
    const QRect avail = d.screen()->availableGeometry();
    QVERIFY(d.height() <= 720 - 40);
    QVERIFY(d.frameGeometry().height() <= avail.height());
    QPushButton *ok = d.findChild<QDialogButtonBox *>()->button(QDialogButtonBox::Ok);
    QVERIFY(d.rect().contains(QRect(ok->mapTo(&d, QPoint(0, 0)), ok->size())));
    // Where the screen has room, every page shows whole: nothing scrolls.
    const auto areas = d.findChildren<QScrollArea *>();
    QCOMPARE(areas.size(), d.findChild<QTabWidget *>()->count());
    for (QScrollArea *a : areas) {
        d.findChild<QTabWidget *>()->setCurrentWidget(a);
        QTRY_COMPARE(a->verticalScrollBar()->maximum(), 0);
        QCOMPARE(a->horizontalScrollBar()->maximum(), 0);
    }

    // A form taller than the screen (a font a few times as big) still
    // opens within it, buttons shown; the page scrolls instead.
    SettingsDialog big(nullptr, &s);
    QFont f = big.font();
    const qreal base = f.pointSizeF();
    for (int factor = 3; factor <= 10 && big.sizeHint().height() <= avail.height(); ++factor) {
        f.setPointSizeF(base * factor);
        big.setFont(f);
    }
    QVERIFY(big.sizeHint().height() > avail.height());
    big.show();
    QVERIFY(QTest::qWaitForWindowExposed(&big));
    QVERIFY2(big.frameGeometry().height() <= avail.height(), qPrintable(QString::number(big.frameGeometry().height())));
    ok = big.findChild<QDialogButtonBox *>()->button(QDialogButtonBox::Ok);
    QVERIFY(big.rect().contains(QRect(ok->mapTo(&big, QPoint(0, 0)), ok->size())));
    auto *first = qobject_cast<QScrollArea *>(big.findChild<QTabWidget *>()->currentWidget());
    QVERIFY(first);
    QTRY_VERIFY(first->verticalScrollBar()->maximum() > 0);
}

void TestSettingsDialog::invalidBindDisablesOk()
{
    QFile::remove(settingsPath());
    QSettings s(settingsPath(), QSettings::IniFormat);
    SettingsDialog d(nullptr, &s);
    QPushButton *ok = d.findChild<QDialogButtonBox *>()->button(QDialogButtonBox::Ok);
    child<QLineEdit>(d, "bind")->setText(QStringLiteral("not an address"));
    QVERIFY(!d.isFormValid());
    QVERIFY(!ok->isEnabled());
    QVERIFY(!d.apply());
    QVERIFY(!s.contains(QStringLiteral("server/bind")));
    child<QLineEdit>(d, "bind")->setText(QStringLiteral("localhost"));
    QVERIFY(ok->isEnabled());
    QVERIFY(SettingsDialog::isLoopbackAddress(QStringLiteral("127.0.0.2")));
    QVERIFY(SettingsDialog::isLoopbackAddress(QStringLiteral("::1")));
    QVERIFY(!SettingsDialog::isLoopbackAddress(QStringLiteral("0.0.0.0")));
    QVERIFY(!SettingsDialog::isLoopbackAddress(QStringLiteral("192.168.1.5")));
}

void TestSettingsDialog::nonLoopbackTextsAgreeWithTheServer()
{
    // The hint said any non-loopback address "makes Tether reachable from
    // the network" and the question "the traffic is not encrypted"; the
    // README (and the server: BindPolicy) say off loopback Tether serves
    // only over HTTPS and refuses to start without a certificate.
    QFile::remove(settingsPath());
    QSettings s(settingsPath(), QSettings::IniFormat);
    SettingsDialog d(nullptr, &s);
    QLabel *note = nullptr;
    for (QLabel *l : d.findChildren<QLabel *>()) {
        if (l->text().contains(QStringLiteral("take effect when Tether restarts")))
            note = l;
    }
    QVERIFY(note);
    const QString hint = note->text().simplified();
    QVERIFY2(hint.contains(QStringLiteral("only over HTTPS")), qPrintable(hint));
    QVERIFY2(hint.contains(QStringLiteral("server/tlsCert and server/tlsKey")), qPrintable(hint));
    QVERIFY2(hint.contains(QStringLiteral("refuses to start")), qPrintable(hint));
    QVERIFY2(!hint.contains(QStringLiteral("makes Tether reachable")), qPrintable(hint));
    d.setRunningAddress(QStringLiteral("127.0.0.1"), 7420);
    const QString running = note->text();
    QVERIFY2(running.contains(QStringLiteral("only over")) && running.contains(QStringLiteral("HTTPS")), qPrintable(running));

    const QString plain = SettingsDialog::nonLoopbackQuestion(QStringLiteral("0.0.0.0"), false);
    QVERIFY2(plain.contains(QStringLiteral("refuse to start")), qPrintable(plain));
    QVERIFY2(plain.contains(QStringLiteral("SSH")), qPrintable(plain));
    QVERIFY2(!plain.contains(QStringLiteral("not encrypted")), qPrintable(plain));
    const QString tls = SettingsDialog::nonLoopbackQuestion(QStringLiteral("0.0.0.0"), true);
    QVERIFY2(tls.contains(QStringLiteral("over HTTPS")), qPrintable(tls));
    QVERIFY2(!tls.contains(QStringLiteral("refuse")), qPrintable(tls));
}

void TestSettingsDialog::commandIsSplitAsShellWords()
{
    // The default command is read with the dashboard's grammar: single quotes
    // group words (QProcess::splitCommand made `sh -c 'echo hi'` four words),
    // and an open quote is an error shown here, not a broken session later.
    QFile::remove(settingsPath());
    QSettings s(settingsPath(), QSettings::IniFormat);
    SettingsDialog d(nullptr, &s);
    QPushButton *ok = d.findChild<QDialogButtonBox *>()->button(QDialogButtonBox::Ok);
    auto *error = child<QLabel>(d, "commandError");
    auto *command = child<QLineEdit>(d, "command");
    command->setText(QStringLiteral("sh -c 'echo hi"));
    QVERIFY(!d.isFormValid());
    QVERIFY(!ok->isEnabled());
    QVERIFY(!error->isHidden());
    QVERIFY2(error->text().contains(QStringLiteral("unterminated single quote")), qPrintable(error->text()));
    QVERIFY(!d.apply());
    s.sync();
    QVERIFY(!s.contains(QStringLiteral("sessions/command")));

    command->setText(QStringLiteral("sh -c 'echo hi'"));
    QVERIFY(ok->isEnabled());
    QVERIFY(error->isHidden());
    QVERIFY(d.apply());
    s.sync();
    const Config c = Config::load(s);
    QCOMPARE(c.commandArgv(), (QStringList{QStringLiteral("sh"), QStringLiteral("-c"), QStringLiteral("echo hi")}));

    // A hand-edited file with an open quote runs the login shell (empty argv).
    s.setValue(QStringLiteral("sessions/command"), QStringLiteral("vim \"notes"));
    s.sync();
    QTest::ignoreMessage(QtWarningMsg, QRegularExpression(QStringLiteral("sessions/command cannot be split")));
    QVERIFY(Config::load(s).commandArgv().isEmpty());
    SettingsDialog shows(nullptr, &s);
    QVERIFY(!child<QLabel>(shows, "commandError")->isHidden());
}

void TestSettingsDialog::nonLoopbackNeedsConfirmation()
{
    QFile::remove(settingsPath());
    QSettings s(settingsPath(), QSettings::IniFormat);
    SettingsDialog d(nullptr, &s);
    QStringList asked;
    bool answer = false;
    d.setNonLoopbackConfirmation([&](const QString &a) { asked << a; return answer; });
    child<QLineEdit>(d, "bind")->setText(QStringLiteral("0.0.0.0"));
    QVERIFY(!d.apply()); // declined: nothing saved
    QCOMPARE(asked, QStringList{QStringLiteral("0.0.0.0")});
    s.sync();
    QVERIFY(!s.contains(QStringLiteral("server/bind")));
    answer = true;
    QVERIFY(d.apply());
    QCOMPARE(s.value(QStringLiteral("server/bind")).toString(), QStringLiteral("0.0.0.0"));
    // Loopback (or unchanged) addresses do not ask.
    asked.clear();
    QVERIFY(d.apply());
    QVERIFY(asked.isEmpty());
    child<QLineEdit>(d, "bind")->setText(QStringLiteral("127.0.0.1"));
    QVERIFY(d.apply());
    QVERIFY(asked.isEmpty());
}

void TestSettingsDialog::autostartEntry()
{
    QFile::remove(settingsPath());
    QFile::remove(SettingsDialog::autostartPath());
    QSettings s(settingsPath(), QSettings::IniFormat);
    {
        SettingsDialog d(nullptr, &s);
        auto *box = child<QCheckBox>(d, "autostart");
        QVERIFY(!box->isChecked());
        box->setChecked(true);
        QVERIFY(d.apply());
    }
    QFile f(SettingsDialog::autostartPath());
    QVERIFY(f.open(QIODevice::ReadOnly));
    const QByteArray text = f.readAll();
    QVERIFY(text.startsWith("[Desktop Entry]\n"));
    QVERIFY(text.contains("\nName=Tether\n"));
    QVERIFY(text.contains("\nExec=" + QCoreApplication::applicationFilePath().toUtf8() + "\n"));
    QVERIFY(text.contains("\nType=Application\n"));
    QVERIFY(s.value(QStringLiteral("ui/autostart")).toBool());
    {
        SettingsDialog d(nullptr, &s);
        auto *box = child<QCheckBox>(d, "autostart");
        QVERIFY(box->isChecked()); // read back from the file
        box->setChecked(false);
        QVERIFY(d.apply());
    }
    QVERIFY(!QFile::exists(SettingsDialog::autostartPath()));
    QVERIFY(!s.value(QStringLiteral("ui/autostart")).toBool());
}

void TestSettingsDialog::autostartExecPrefersPath()
{
    const QString self = QCoreApplication::applicationFilePath();
    QTemporaryDir bin;
    QVERIFY(bin.isValid());
    QTemporaryDir other;
    QVERIFY(other.isValid());
    // A `tether` in PATH that is this very binary (a symlink, as
    // update-alternatives or `make install` into ~/.local/bin would leave it).
    QVERIFY(QFile::link(self, bin.filePath(QStringLiteral("tether"))));
    QCOMPARE(SettingsDialog::autostartExec(self, {bin.path()}), QStringLiteral("tether"));
    QCOMPARE(SettingsDialog::autostartExec(bin.filePath(QStringLiteral("tether")), {bin.path()}),
             QStringLiteral("tether"));
    // No `tether` in PATH, or a different one: the absolute path of ours.
    QCOMPARE(SettingsDialog::autostartExec(self, {other.path()}), self);
    QFile foreign(other.filePath(QStringLiteral("tether")));
    QVERIFY(foreign.open(QIODevice::WriteOnly));
    foreign.write("#!/bin/sh\n");
    foreign.close();
    QVERIFY(foreign.setPermissions(QFile::ReadOwner | QFile::WriteOwner | QFile::ExeOwner));
    QCOMPARE(SettingsDialog::autostartExec(self, {other.path(), bin.path()}), self);
    QCOMPARE(SettingsDialog::autostartExec(self, {bin.path(), other.path()}), QStringLiteral("tether"));

    // The entry the dialog writes follows $PATH.
    const QByteArray oldPath = qgetenv("PATH");
    qputenv("PATH", bin.path().toLocal8Bit() + ':' + oldPath);
    QString error;
    const bool ok = SettingsDialog::setAutostartEnabled(true, &error);
    qputenv("PATH", oldPath);
    QVERIFY2(ok, qPrintable(error));
    QFile f(SettingsDialog::autostartPath());
    QVERIFY(f.open(QIODevice::ReadOnly));
    QVERIFY(f.readAll().contains("\nExec=tether\n"));
    QVERIFY(SettingsDialog::setAutostartEnabled(false, &error));
}

void TestSettingsDialog::autostartExecQuoting()
{
    // Nothing reserved: as is.
    QTemporaryDir none;
    QVERIFY(none.isValid());
    const QStringList path{none.path()};
    QCOMPARE(SettingsDialog::autostartExec(QStringLiteral("/opt/tether-1.0/bin/tether"), path),
             QStringLiteral("/opt/tether-1.0/bin/tether"));
    // A space: quoted.
    QCOMPARE(SettingsDialog::autostartExec(QStringLiteral("/home/me/My Builds/tether"), path),
             QStringLiteral("\"/home/me/My Builds/tether\""));
    // " ` $ \ take a backslash inside the quotes; the string-value escape then
    // doubles every backslash (a literal backslash is four in the file); a
    // literal % is %% (not a field code).
    QCOMPARE(SettingsDialog::autostartExec(QStringLiteral("/b/a$b`c\"d\\e/100%/tether"), path),
             QStringLiteral("\"/b/a\\\\$b\\\\`c\\\\\"d\\\\\\\\e/100%%/tether\""));
    // % alone needs no quotes, only doubling.
    QCOMPARE(SettingsDialog::autostartExec(QStringLiteral("/b/100%/tether"), path),
             QStringLiteral("/b/100%%/tether"));
    // A newline would end the key: quoted and written as \n.
    QCOMPARE(SettingsDialog::autostartExec(QStringLiteral("/b/x\ny/tether"), path),
             QStringLiteral("\"/b/x\\ny/tether\""));
}

void TestSettingsDialog::restartNeededWhenAddressChanges()
{
    QFile::remove(settingsPath());
    QSettings s(settingsPath(), QSettings::IniFormat);
    SettingsDialog d(nullptr, &s);
    d.setRunningAddress(QStringLiteral("127.0.0.1"), 7420);
    QSignalSpy applied(&d, &SettingsDialog::applied);
    child<QSpinBox>(d, "port")->setValue(7420);
    QVERIFY(d.apply());
    QCOMPARE(applied.last().at(1).toBool(), false);
    child<QSpinBox>(d, "port")->setValue(7421);
    QVERIFY(d.apply());
    QCOMPARE(applied.last().at(1).toBool(), true);
}

void TestSettingsDialog::noRestartForTheAddressChosenAtStart()
{
    // `tether --port 0` with server/port 7555 saved: the server listens on
    // a port picked at start, the form opens with the saved 7555. That is no
    // edit: no "Restart Tether" (it was said at once, without any edit).
    QFile::remove(settingsPath());
    QSettings s(settingsPath(), QSettings::IniFormat);
    s.setValue(QStringLiteral("server/port"), 7555);
    s.sync();
    SettingsDialog d(nullptr, &s);
    d.setRunningAddress(QStringLiteral("127.0.0.1"), 41234, QStringLiteral("127.0.0.1"), 7555);
    auto *note = child<QLabel>(d, "serverNote");
    auto *port = child<QSpinBox>(d, "port");
    QCOMPARE(port->value(), 7555);
    QVERIFY2(note->text().contains(QStringLiteral("port 41234")), qPrintable(note->text()));
    QVERIFY2(!note->text().contains(QStringLiteral("Restart Tether")), qPrintable(note->text()));
    QSignalSpy applied(&d, &SettingsDialog::applied);
    QVERIFY(d.apply());
    QCOMPARE(applied.last().at(1).toBool(), false);

    // An edit is one: another port needs a restart, said at once.
    port->setValue(7556);
    QVERIFY2(note->text().contains(QStringLiteral("Restart Tether to use the new address")), qPrintable(note->text()));
    QVERIFY(d.apply());
    QCOMPARE(applied.last().at(1).toBool(), true);
    // The port it runs on, or any port: nothing to restart for.
    port->setValue(41234);
    QVERIFY2(!note->text().contains(QStringLiteral("Restart Tether")), qPrintable(note->text()));
    port->setValue(0);
    QVERIFY2(!note->text().contains(QStringLiteral("Restart Tether")), qPrintable(note->text()));
    // Another address, with the saved port: a restart too.
    port->setValue(7555);
    child<QLineEdit>(d, "bind")->setText(QStringLiteral("::1"));
    QVERIFY2(note->text().contains(QStringLiteral("Restart Tether")), qPrintable(note->text()));
}

QTEST_MAIN(TestSettingsDialog)
#include "tst_settings.moc"
