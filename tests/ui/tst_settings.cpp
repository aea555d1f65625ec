// SPDX-License-Identifier: GPL-2.0-or-later
// The settings dialog: a client of the host, which owns its settings (issue
// 23). The host's part goes through a real host in this process (registry
// and server on port 0, with a settings file: GET and PATCH /api/settings
// over HTTP); the desktop's own part through QSettings.
#include "apiclient.h"
#include "hostconfig.h"
#include "desktopsettings.h"
#include "registry.h"
#include "server.h"
#include "session.h"
#include "settingsapi.h"
#include "settingsdialog.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDialogButtonBox>
#include <QFile>
#include <QFontComboBox>
#include <QJsonArray>
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

#include <functional>
#include <memory>

using namespace Tether;

namespace {

/// A host in this process, as `tether serve` makes it: settings from
/// `settingsFile`, then the command line (`options`), a registry with those
/// limits, a server on a free port that owns the file.
struct Host {
    std::unique_ptr<SessionRegistry> registry;
    std::unique_ptr<Server> server;
    ServerEndpoint endpoint;
    bool start(const QString &settingsFile, const std::function<void(HostConfig &)> &options = {})
    {
        QSettings file(settingsFile, QSettings::IniFormat);
        HostConfig config = HostConfig::load(file);
        config.port = 0; // as `--port 0`
        if (options)
            options(config);
        registry = std::make_unique<SessionRegistry>(config.limits);
        registry->setTeardownGrace(200);
        server = std::make_unique<Server>(registry.get(), config);
        server->setSettingsFile(settingsFile);
        QString error;
        if (!server->listen(&error))
            return false;
        return ServerEndpoint::resolve(server->url(), server->accessKey(), &endpoint, &error);
    }
};

/// What a host's `GET /api/settings` holds for `c`, listening on
/// `runningBind`:`runningPort` (for the form-only tests).
QJsonObject hostJson(const HostConfig &c = HostConfig(), const QString &runningBind = QStringLiteral("127.0.0.1"),
                     int runningPort = 7420)
{
    QJsonObject o = SettingsApi::toJson(c);
    o.insert(QStringLiteral("serving"), QJsonObject{{QStringLiteral("bind"), runningBind},
                                                    {QStringLiteral("port"), runningPort}});
    o.insert(QStringLiteral("overridden"), QJsonArray());
    return o;
}

} // namespace

class TestSettingsDialog : public QObject
{
    Q_OBJECT
private Q_SLOTS:
    void initTestCase();
    void init();
    void loadsTheHostsValues();
    void hostPagesWaitForTheHost();
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
    /// The desktop's file (the dialog's QSettings).
    QString settingsPath() const { return m_dir.filePath(QStringLiteral("tether.conf")); }
    /// The host's file (its own: the dialog never reads nor writes it).
    QString hostPath() const { return m_dir.filePath(QStringLiteral("host.conf")); }
    /// Points `d` at `host` and waits for its settings.
    bool connectTo(SettingsDialog &d, Host &host)
    {
        d.setHost(host.endpoint);
        return QTest::qWaitFor([&d] { return d.hasHostSettings(); }, 10000);
    }
    /// apply(), then waits for the host's answer (hostApplied or hostRefused).
    bool applyAndWait(SettingsDialog &d)
    {
        if (!d.apply())
            return false;
        return QTest::qWaitFor([&d] { return !d.isHostChangePending(); }, 10000);
    }
    QTemporaryDir m_dir;
};

void TestSettingsDialog::initTestCase()
{
    QVERIFY(m_dir.isValid());
    // Autostart goes to $XDG_CONFIG_HOME/autostart: keep it inside the test dir.
    qputenv("XDG_CONFIG_HOME", m_dir.filePath(QStringLiteral("config")).toLocal8Bit());
    qputenv("XDG_RUNTIME_DIR", m_dir.filePath(QStringLiteral("runtime")).toLocal8Bit());
    QVERIFY(SettingsDialog::autostartPath().startsWith(m_dir.path()));
}

void TestSettingsDialog::init()
{
    QFile::remove(settingsPath());
    QFile::remove(hostPath());
}

void TestSettingsDialog::loadsTheHostsValues()
{
    QSettings h(hostPath(), QSettings::IniFormat);
    h.setValue(QStringLiteral("sessions/ttl"), 5400);                 // 90 minutes
    h.setValue(QStringLiteral("sessions/bufferSize"), 96 * 1024);     // not whole MiB -> KiB
    h.setValue(QStringLiteral("sessions/maxSessions"), 7);
    h.setValue(QStringLiteral("sessions/command"), QStringLiteral("/bin/bash -l"));
    h.setValue(QStringLiteral("server/bind"), QStringLiteral("::1"));
    h.setValue(QStringLiteral("server/port"), 7555);
    h.sync();
    Host host;
    QVERIFY(host.start(hostPath()));

    QSettings s(settingsPath(), QSettings::IniFormat);
    SettingsDialog d(&s);
    QVERIFY(connectTo(d, host));
    QCOMPARE(child<QSpinBox>(d, "ttl")->value(), 90);
    QCOMPARE(child<QComboBox>(d, "ttlUnit")->currentIndex(), 1); // minutes
    QCOMPARE(child<QSpinBox>(d, "bufferSize")->value(), 96);
    QCOMPARE(child<QComboBox>(d, "bufferUnit")->currentIndex(), 0); // KiB
    QCOMPARE(child<QSpinBox>(d, "maxSessions")->value(), 7);
    QCOMPARE(child<QSpinBox>(d, "maxSessions")->maximum(), SessionConfig::maxSessionsLimit());
    QCOMPARE(child<QLineEdit>(d, "command")->text(), QStringLiteral("/bin/bash -l"));
    QCOMPARE(child<QLineEdit>(d, "bind")->text(), QStringLiteral("::1"));
    QCOMPARE(child<QSpinBox>(d, "port")->value(), 7555);
    QVERIFY(d.hostChanges().isEmpty());
    // The host's values never came from the desktop's file.
    QVERIFY(!s.contains(QStringLiteral("sessions/ttl")));

    // TTL 0 shows "never".
    SettingsDialog d2(&s);
    d2.setHostSettings(hostJson([] {
        HostConfig c;
        c.limits.ttlSeconds = 0;
        c.limits.bufferCapacity = 4 * 1024 * 1024;
        return c;
    }()));
    QCOMPARE(child<QSpinBox>(d2, "ttl")->text(), QStringLiteral("never"));
    QCOMPARE(child<QSpinBox>(d2, "bufferSize")->value(), 4);
    QCOMPARE(child<QComboBox>(d2, "bufferUnit")->currentIndex(), 1); // MiB
}

void TestSettingsDialog::hostPagesWaitForTheHost()
{
    // Before the host answered, its pages are disabled and say so; a host
    // that cannot be reached is said too, and Apply still saves the
    // desktop's own settings.
    QSettings s(settingsPath(), QSettings::IniFormat);
    SettingsDialog d(&s);
    auto *note = child<QLabel>(d, "hostNote");
    QVERIFY(!note->isHidden());
    QVERIFY(!child<QSpinBox>(d, "ttl")->isEnabled());
    QVERIFY(!child<QLineEdit>(d, "bind")->isEnabled());
    QVERIFY(d.hostForm().isEmpty());
    QVERIFY(d.apply()); // the desktop's part only
    QVERIFY(s.contains(QStringLiteral("terminal/fontSize")));
    QVERIFY(!s.contains(QStringLiteral("sessions/ttl")));

    Host gone;
    QVERIFY(gone.start(hostPath()));
    const ServerEndpoint endpoint = gone.endpoint;
    gone.server.reset(); // nothing listens there now
    d.setHost(endpoint);
    QTRY_VERIFY_WITH_TIMEOUT(note->text().contains(QStringLiteral("Cannot read Tether's settings")), 10000);
    QVERIFY(!d.hasHostSettings());
    QVERIFY(!child<QSpinBox>(d, "ttl")->isEnabled());

    Host host;
    QVERIFY(host.start(hostPath()));
    QVERIFY(connectTo(d, host));
    QVERIFY(note->isHidden());
    QVERIFY(child<QSpinBox>(d, "ttl")->isEnabled());

    // The host moves while a field is being edited (started again on
    // another port): the edit stays, the other fields are the new host's.
    child<QSpinBox>(d, "maxSessions")->setValue(12);
    Host moved;
    QVERIFY(moved.start(hostPath(), [](HostConfig &c) { c.command = QStringLiteral("/bin/sh -i"); }));
    QVERIFY(moved.endpoint.url != host.endpoint.url);
    d.setHost(moved.endpoint);
    QTRY_COMPARE(child<QLineEdit>(d, "command")->text(), QStringLiteral("/bin/sh -i"));
    QCOMPARE(child<QSpinBox>(d, "maxSessions")->value(), 12);
    QCOMPARE(d.hostChanges(), (QJsonObject{{QStringLiteral("max_sessions"), 12}}));
    QVERIFY(applyAndWait(d));
    QCOMPARE(moved.registry->limits().maxSessions, 12);
    QCOMPARE(host.registry->limits().maxSessions, 256);
}

void TestSettingsDialog::terminalAppearance()
{
#ifndef TETHER_HAVE_QTERMWIDGET
    QSKIP("this build has no terminal window (QTermWidget): nothing to choose");
#else
    QSettings s(settingsPath(), QSettings::IniFormat);
    SettingsDialog fresh(&s);
    auto *freshScheme = child<QComboBox>(fresh, "colorScheme");
    // The default reads well (vim's Visual selection: issue 14).
    QCOMPARE(freshScheme->currentText(), QStringLiteral("BlackOnWhite"));
    QCOMPARE(child<QSpinBox>(fresh, "fontSize")->value(), 10);
    QVERIFY(freshScheme->findText(QStringLiteral("WhiteOnBlack")) >= 0);
    QVERIFY(freshScheme->findText(QStringLiteral("DarkPastels")) >= 0);

    s.setValue(QStringLiteral("terminal/colorScheme"), QStringLiteral("DarkPastels"));
    s.setValue(QStringLiteral("terminal/fontSize"), 13);
    s.sync();
    SettingsDialog d(&s);
    auto *scheme = child<QComboBox>(d, "colorScheme");
    QCOMPARE(scheme->currentText(), QStringLiteral("DarkPastels"));
    QCOMPARE(child<QSpinBox>(d, "fontSize")->value(), 13);
    QVERIFY(!child<QFontComboBox>(d, "fontFamily")->currentFont().family().isEmpty());

    scheme->setCurrentIndex(scheme->findText(QStringLiteral("WhiteOnBlack")));
    child<QSpinBox>(d, "fontSize")->setValue(16);
    QSignalSpy applied(&d, &SettingsDialog::applied);
    d.findChild<QDialogButtonBox *>()->button(QDialogButtonBox::Apply)->click();
    QCOMPARE(applied.count(), 1);
    const DesktopSettings c = DesktopSettings::load(s);
    QCOMPARE(c.terminalColorScheme, QStringLiteral("WhiteOnBlack"));
    QCOMPARE(c.terminalFontSize, 16);
    QCOMPARE(c.terminalFontFamily, child<QFontComboBox>(d, "fontFamily")->currentFont().family());
    QCOMPARE(applied.at(0).at(0).value<DesktopSettings>(), c);
    // Out of range in the file: clamped.
    s.setValue(QStringLiteral("terminal/fontSize"), 500);
    QTest::ignoreMessage(QtWarningMsg, QRegularExpression(QStringLiteral("terminal/fontSize out of range")));
    QCOMPARE(DesktopSettings::load(s).terminalFontSize, DesktopSettings::kMaxTerminalFontSize);
#endif
}

void TestSettingsDialog::commandLineLimitsSurviveApply()
{
    // `tether serve --ttl 120`: the running TTL is 120 s while the file says
    // nothing (0). Applying a change to another field must not undo the
    // option, nor save it.
    Host host;
    QVERIFY(host.start(hostPath(), [](HostConfig &c) { c.limits.ttlSeconds = 120; }));
    QSettings s(settingsPath(), QSettings::IniFormat);
    SettingsDialog d(&s);
    QVERIFY(connectTo(d, host));
    auto *note = child<QLabel>(d, "overrideNote");
    QVERIFY(!note->isHidden());
    QVERIFY2(note->text().contains(QStringLiteral("close after 120 s")), qPrintable(note->text()));
    child<QSpinBox>(d, "maxSessions")->setValue(9);
    QCOMPARE(d.hostChanges(), (QJsonObject{{QStringLiteral("max_sessions"), 9}}));
    QVERIFY(applyAndWait(d));
    QCOMPARE(host.registry->limits().ttlSeconds, 120);
    QCOMPARE(host.registry->limits().maxSessions, 9);
    QSettings file(hostPath(), QSettings::IniFormat);
    QCOMPARE(file.value(QStringLiteral("sessions/ttl"), 0).toInt(), 0);
    QVERIFY(!note->isHidden());
    // Changing the TTL field itself does apply it, and then nothing differs.
    child<QComboBox>(d, "ttlUnit")->setCurrentIndex(1); // minutes
    child<QSpinBox>(d, "ttl")->setValue(45);
    QVERIFY(applyAndWait(d));
    QCOMPARE(host.registry->limits().ttlSeconds, 45 * 60);
    QVERIFY(note->isHidden());
}

void TestSettingsDialog::exitedTtlBesideTtl()
{
    // The exited-session TTL has its own field beside the TTL: it shows the
    // host's (default 30 minutes), the host applies it (an exited session's
    // expiry follows at once) and saves it, a command-line `--exited-ttl`
    // stays until the field is changed, and the running-session TTL is
    // never touched.
    {
        SettingsDialog fresh(nullptr);
        fresh.setHostSettings(hostJson());
        QCOMPARE(child<QSpinBox>(fresh, "exitedTtl")->value(), 30); // the default, 1800 s
        QCOMPARE(child<QComboBox>(fresh, "exitedTtlUnit")->currentIndex(), 1); // minutes
        QCOMPARE(child<QSpinBox>(fresh, "ttl")->text(), QStringLiteral("never"));
    }
    QSettings h(hostPath(), QSettings::IniFormat);
    h.setValue(QStringLiteral("sessions/exitedTtl"), 90); // not whole minutes -> seconds
    h.sync();
    Host host;
    QVERIFY(host.start(hostPath(), [](HostConfig &c) { c.limits.exitedTtlSeconds = 45; })); // `--exited-ttl 45`
    QSettings s(settingsPath(), QSettings::IniFormat);
    SettingsDialog d(&s);
    QVERIFY(connectTo(d, host));
    auto *exited = child<QSpinBox>(d, "exitedTtl");
    auto *unit = child<QComboBox>(d, "exitedTtlUnit");
    QCOMPARE(exited->value(), 45); // what the host runs with
    QCOMPARE(unit->currentIndex(), 0); // seconds
    auto *note = child<QLabel>(d, "overrideNote");
    QVERIFY2(!note->isHidden() && note->text().contains(QStringLiteral("keep exited sessions 45 s")),
             qPrintable(note->text()));
    child<QSpinBox>(d, "maxSessions")->setValue(9); // another field: the option stays
    QVERIFY(applyAndWait(d));
    QCOMPARE(host.registry->limits().exitedTtlSeconds, 45);

    // An exited session, detached: its expiry follows the field once applied.
    SpawnOptions o;
    o.argv = QStringList{QStringLiteral("/bin/sh"), QStringLiteral("-c"), QStringLiteral("exit 0")};
    Session *done = host.registry->create(o);
    QVERIFY(done);
    QTRY_COMPARE(done->state(), Session::State::Exited);
    QVERIFY(host.registry->expiresIn(done) >= 0 && host.registry->expiresIn(done) <= 45); // seconds
    unit->setCurrentIndex(2); // hours: the number stays
    QCOMPARE(exited->value(), 45);
    exited->setValue(2);
    QCOMPARE(d.hostForm().value(QStringLiteral("exited_ttl")).toInt(), 7200);
    QCOMPARE(d.hostChanges(), (QJsonObject{{QStringLiteral("exited_ttl"), 7200}}));
    QVERIFY(applyAndWait(d));
    QCOMPARE(host.registry->limits().exitedTtlSeconds, 7200);
    QCOMPARE(host.registry->limits().ttlSeconds, 0);
    QVERIFY(host.registry->expiresIn(done) > 45);
    QVERIFY(note->isHidden());
    QSettings check(hostPath(), QSettings::IniFormat);
    QCOMPARE(check.value(QStringLiteral("sessions/exitedTtl")).toInt(), 7200);
    QCOMPARE(check.value(QStringLiteral("sessions/ttl")).toInt(), 0);

    // 0 = kept until closed, shown as "never".
    exited->setValue(0);
    QCOMPARE(exited->text(), QStringLiteral("never"));
    QVERIFY(applyAndWait(d));
    QCOMPARE(host.registry->limits().exitedTtlSeconds, 0);
    QCOMPARE(host.registry->expiresIn(done), qint64(-1));
    SettingsDialog again(&s);
    QVERIFY(connectTo(again, host));
    QCOMPARE(child<QSpinBox>(again, "exitedTtl")->text(), QStringLiteral("never"));
}

void TestSettingsDialog::roundTripAndLiveLimits()
{
    Host host;
    QVERIFY(host.start(hostPath()));
    SpawnOptions o;
    o.argv = QStringList{QStringLiteral("/bin/sh")};
    Session *live = host.registry->create(o);
    QVERIFY(live);
    QCOMPARE(live->buffer().capacity(), RingBuffer::kDefaultCapacity);

    QSettings s(settingsPath(), QSettings::IniFormat);
    SettingsDialog d(&s);
    QVERIFY(connectTo(d, host));
    QSignalSpy applied(&d, &SettingsDialog::hostApplied);
    child<QComboBox>(d, "ttlUnit")->setCurrentIndex(2); // hours
    child<QSpinBox>(d, "ttl")->setValue(2);
    child<QComboBox>(d, "bufferUnit")->setCurrentIndex(1); // MiB
    child<QSpinBox>(d, "bufferSize")->setValue(8);
    child<QSpinBox>(d, "maxSessions")->setValue(10);
    child<QLineEdit>(d, "command")->setText(QStringLiteral("  /bin/sh -i  "));
    child<QLineEdit>(d, "bind")->setText(QStringLiteral("127.0.0.1"));
    child<QSpinBox>(d, "port")->setValue(9000);

    // OK = apply, then close once the host took them.
    QPushButton *ok = d.findChild<QDialogButtonBox *>()->button(QDialogButtonBox::Ok);
    QVERIFY(ok->isEnabled());
    d.show();
    QTest::mouseClick(ok, Qt::LeftButton);
    QTRY_COMPARE_WITH_TIMEOUT(applied.count(), 1, 10000);
    QTRY_VERIFY(!d.isVisible());
    QCOMPARE(d.result(), int(QDialog::Accepted));
    QCOMPARE(applied.at(0).at(1).toBool(), true); // port 9000: after a restart

    // The host saved them under the keys config.h documents ...
    QSettings check(hostPath(), QSettings::IniFormat);
    QCOMPARE(check.value(QStringLiteral("sessions/ttl")).toInt(), 7200);
    QCOMPARE(check.value(QStringLiteral("sessions/bufferSize")).toLongLong(), 8LL * 1024 * 1024);
    QCOMPARE(check.value(QStringLiteral("sessions/maxSessions")).toInt(), 10);
    QCOMPARE(check.value(QStringLiteral("sessions/command")).toString(), QStringLiteral("/bin/sh -i"));
    QCOMPARE(check.value(QStringLiteral("server/port")).toInt(), 9000);
    const HostConfig c = HostConfig::load(check);
    QCOMPARE(c.limits.ttlSeconds, 7200);
    QCOMPARE(c.commandArgv(), (QStringList{QStringLiteral("/bin/sh"), QStringLiteral("-i")}));
    // ... none of which is in the desktop's file ...
    QSettings own(settingsPath(), QSettings::IniFormat);
    QVERIFY2(!own.contains(QStringLiteral("sessions/ttl")) && !own.contains(QStringLiteral("server/port")),
             qPrintable(own.allKeys().join(QLatin1Char(' '))));

    // ... and applied them at once, existing sessions included.
    QCOMPARE(host.registry->limits().ttlSeconds, 7200);
    QCOMPARE(host.registry->limits().bufferCapacity, qsizetype(8) * 1024 * 1024);
    QCOMPARE(host.registry->limits().maxSessions, 10);
    QCOMPARE(live->buffer().capacity(), qsizetype(8) * 1024 * 1024);

    // A fresh dialog shows what the host has.
    SettingsDialog again(&s);
    QVERIFY(connectTo(again, host));
    QCOMPARE(child<QSpinBox>(again, "ttl")->value(), 2);
    QCOMPARE(child<QComboBox>(again, "ttlUnit")->currentIndex(), 2);
    QCOMPARE(child<QSpinBox>(again, "bufferSize")->value(), 8);
    QCOMPARE(again.hostForm().value(QStringLiteral("buffer_size")).toDouble(), 8.0 * 1024 * 1024);

    // Cancel changes nothing.
    child<QSpinBox>(again, "maxSessions")->setValue(99);
    again.reject();
    QTest::qWait(0);
    QCOMPARE(host.registry->limits().maxSessions, 10);
    QSettings check2(hostPath(), QSettings::IniFormat);
    QCOMPARE(check2.value(QStringLiteral("sessions/maxSessions")).toInt(), 10);
}

void TestSettingsDialog::unitsConvert()
{
    SettingsDialog d(nullptr);
    d.setHostSettings(hostJson());
    const auto form = [&d](const char *name) { return d.hostForm().value(QLatin1String(name)).toDouble(); };
    auto *ttl = child<QSpinBox>(d, "ttl");
    auto *unit = child<QComboBox>(d, "ttlUnit");
    unit->setCurrentIndex(0);
    ttl->setValue(45);
    QCOMPARE(form("ttl"), 45.0);
    unit->setCurrentIndex(1);
    QCOMPARE(form("ttl"), 45.0 * 60);
    ttl->setValue(0);
    QCOMPARE(form("ttl"), 0.0);

    // Buffer: 64 KiB .. 64 MiB whatever the unit; the number stays when the
    // unit changes, and a size out of range makes the form invalid (the
    // value itself is still clamped).
    auto *buf = child<QSpinBox>(d, "bufferSize");
    auto *bunit = child<QComboBox>(d, "bufferUnit");
    bunit->setCurrentIndex(0); // KiB
    buf->setValue(1);
    QCOMPARE(buf->value(), 1);
    QVERIFY(!d.isFormValid());
    QCOMPARE(form("buffer_size"), double(RingBuffer::kMinCapacity));
    buf->setValue(64);
    QVERIFY(d.isFormValid());
    QCOMPARE(form("buffer_size"), double(RingBuffer::kMinCapacity));
    bunit->setCurrentIndex(1); // MiB
    QCOMPARE(buf->value(), 64);
    QVERIFY(d.isFormValid());
    QCOMPARE(form("buffer_size"), double(RingBuffer::kMaxCapacity));
    buf->setValue(1000);
    QVERIFY(!d.isFormValid());
    QCOMPARE(form("buffer_size"), double(RingBuffer::kMaxCapacity));
}

void TestSettingsDialog::typedBufferSizeIsKeptAndBounded()
{
    // Typing 100 into the MiB box used to give 10: the spin box's maximum
    // (64 in MiB) made it drop the last keystroke without a word. Every
    // keystroke is kept; a size out of 64 KiB .. 64 MiB says so and
    // disables OK and Apply.
    Host host;
    QVERIFY(host.start(hostPath()));
    QSettings s(settingsPath(), QSettings::IniFormat);
    SettingsDialog d(&s);
    QVERIFY(connectTo(d, host));
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
    QVERIFY(!d.isHostChangePending());

    type(QStringLiteral("64"));
    QCOMPARE(buf->value(), 64);
    QVERIFY(error->isHidden());
    QVERIFY(ok->isEnabled());
    QVERIFY(applyAndWait(d));
    QCOMPARE(host.registry->limits().bufferCapacity, RingBuffer::kMaxCapacity);

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
    QCOMPARE(d.hostForm().value(QStringLiteral("buffer_size")).toDouble(), 128.0 * 1024);
}

void TestSettingsDialog::errorLineGivesItsHeightBack()
{
    // A bind-address error made the dialog taller for good. The dialog now
    // has tabs as tall as the tallest page (Sessions): an error line there
    // makes it taller, and the height comes back.
    QSettings s(settingsPath(), QSettings::IniFormat);
    SettingsDialog d(&s);
    d.setHostSettings(hostJson());
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
    QSettings s(settingsPath(), QSettings::IniFormat);
    SettingsDialog d(&s);
    d.setHostSettings(hostJson());
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
    SettingsDialog big(&s);
    big.setHostSettings(hostJson());
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
    QSettings s(settingsPath(), QSettings::IniFormat);
    SettingsDialog d(&s);
    d.setHostSettings(hostJson());
    QSignalSpy applied(&d, &SettingsDialog::applied);
    QPushButton *ok = d.findChild<QDialogButtonBox *>()->button(QDialogButtonBox::Ok);
    child<QLineEdit>(d, "bind")->setText(QStringLiteral("not an address"));
    QVERIFY(!d.isFormValid());
    QVERIFY(!ok->isEnabled());
    QVERIFY(!d.apply());
    QCOMPARE(applied.count(), 0);
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
    QSettings s(settingsPath(), QSettings::IniFormat);
    SettingsDialog d(&s);
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
    d.setHostSettings(hostJson(HostConfig(), QStringLiteral("127.0.0.1"), 7420));
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
    Host host;
    QVERIFY(host.start(hostPath()));
    QSettings s(settingsPath(), QSettings::IniFormat);
    SettingsDialog d(&s);
    QVERIFY(connectTo(d, host));
    QPushButton *ok = d.findChild<QDialogButtonBox *>()->button(QDialogButtonBox::Ok);
    auto *error = child<QLabel>(d, "commandError");
    auto *command = child<QLineEdit>(d, "command");
    command->setText(QStringLiteral("sh -c 'echo hi"));
    QVERIFY(!d.isFormValid());
    QVERIFY(!ok->isEnabled());
    QVERIFY(!error->isHidden());
    QVERIFY2(error->text().contains(QStringLiteral("unterminated single quote")), qPrintable(error->text()));
    QVERIFY(!d.apply());
    QVERIFY(!QSettings(hostPath(), QSettings::IniFormat).contains(QStringLiteral("sessions/command")));

    command->setText(QStringLiteral("sh -c 'echo hi'"));
    QVERIFY(ok->isEnabled());
    QVERIFY(error->isHidden());
    QVERIFY(applyAndWait(d));
    QSettings h(hostPath(), QSettings::IniFormat);
    const HostConfig c = HostConfig::load(h);
    QCOMPARE(c.commandArgv(), (QStringList{QStringLiteral("sh"), QStringLiteral("-c"), QStringLiteral("echo hi")}));

    // A hand-edited file with an open quote runs the login shell (empty argv),
    // and the dialog shows the error.
    h.setValue(QStringLiteral("sessions/command"), QStringLiteral("vim \"notes"));
    h.sync();
    QTest::ignoreMessage(QtWarningMsg, QRegularExpression(QStringLiteral("sessions/command cannot be split")));
    QVERIFY(HostConfig::load(h).commandArgv().isEmpty());
    SettingsDialog shows(&s);
    HostConfig edited;
    edited.command = QStringLiteral("vim \"notes");
    shows.setHostSettings(hostJson(edited));
    QVERIFY(!child<QLabel>(shows, "commandError")->isHidden());
}

void TestSettingsDialog::nonLoopbackNeedsConfirmation()
{
    Host host;
    QVERIFY(host.start(hostPath()));
    QSettings s(settingsPath(), QSettings::IniFormat);
    SettingsDialog d(&s);
    QVERIFY(connectTo(d, host));
    QStringList asked;
    bool answer = false;
    d.setNonLoopbackConfirmation([&](const QString &a) { asked << a; return answer; });
    child<QLineEdit>(d, "bind")->setText(QStringLiteral("0.0.0.0"));
    QVERIFY(!d.apply()); // declined: nothing saved
    QCOMPARE(asked, QStringList{QStringLiteral("0.0.0.0")});
    QVERIFY(!d.isHostChangePending());
    QVERIFY(!QSettings(hostPath(), QSettings::IniFormat).contains(QStringLiteral("server/bind")));
    answer = true;
    QVERIFY(applyAndWait(d));
    QCOMPARE(QSettings(hostPath(), QSettings::IniFormat).value(QStringLiteral("server/bind")).toString(),
             QStringLiteral("0.0.0.0"));
    // Loopback (or unchanged) addresses do not ask.
    asked.clear();
    QVERIFY(applyAndWait(d));
    QVERIFY(asked.isEmpty());
    child<QLineEdit>(d, "bind")->setText(QStringLiteral("127.0.0.1"));
    QVERIFY(applyAndWait(d));
    QVERIFY(asked.isEmpty());
}

void TestSettingsDialog::autostartEntry()
{
    QFile::remove(SettingsDialog::autostartPath());
    QSettings s(settingsPath(), QSettings::IniFormat);
    {
        SettingsDialog d(&s);
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
        SettingsDialog d(&s);
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
    Host host;
    QVERIFY(host.start(hostPath()));
    QSettings s(settingsPath(), QSettings::IniFormat);
    SettingsDialog d(&s);
    QVERIFY(connectTo(d, host));
    const int running = int(host.server->port());
    QSignalSpy applied(&d, &SettingsDialog::hostApplied);
    // The port it listens on (which the form did not show: it shows the
    // saved 7420): no restart.
    child<QSpinBox>(d, "port")->setValue(running);
    QVERIFY(!d.isRestartNeeded());
    QVERIFY(applyAndWait(d));
    QCOMPARE(applied.size(), 1);
    QCOMPARE(applied.last().at(1).toBool(), false);
    child<QSpinBox>(d, "port")->setValue(running == 7421 ? 7422 : 7421);
    QVERIFY(d.isRestartNeeded());
    QVERIFY(applyAndWait(d));
    QCOMPARE(applied.size(), 2);
    QCOMPARE(applied.last().at(1).toBool(), true);
}

void TestSettingsDialog::noRestartForTheAddressChosenAtStart()
{
    // `tether --port 0` with server/port 7555 saved: the host listens on a
    // port picked at start, the form opens with the saved 7555. That is no
    // edit: no "Restart Tether" (it was said at once, without any edit).
    HostConfig saved;
    saved.port = 7555;
    SettingsDialog d(nullptr);
    d.setHostSettings(hostJson(saved, QStringLiteral("127.0.0.1"), 41234));
    auto *note = child<QLabel>(d, "serverNote");
    auto *port = child<QSpinBox>(d, "port");
    QCOMPARE(port->value(), 7555);
    QVERIFY2(note->text().contains(QStringLiteral("port 41234")), qPrintable(note->text()));
    QVERIFY2(!note->text().contains(QStringLiteral("Restart Tether")), qPrintable(note->text()));
    QVERIFY(!d.isRestartNeeded());
    QVERIFY(d.hostChanges().isEmpty());

    // An edit is one: another port needs a restart, said at once.
    port->setValue(7556);
    QVERIFY2(note->text().contains(QStringLiteral("Restart Tether to use the new address")), qPrintable(note->text()));
    QVERIFY(d.isRestartNeeded());
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
