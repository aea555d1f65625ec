// SPDX-License-Identifier: GPL-2.0-or-later
// The tray icon when the tray comes after Tether (started at login before the
// panel): the real `tether` desktop app on a private Xvfb display, with no
// tray at its start (the Sessions window is the main window), then tint2 (a
// panel with an XEmbed system tray) started: the icon must appear in it,
// and the Sessions window stay open. Checked from outside, as the X server
// sees it: `xwininfo -tree` must show a window of Tether's inside tint2's.
// Then closing the Sessions window (Alt+F4 under openbox) must leave Tether
// running in the tray, without the "Close Tether?" question.
// Needs Xvfb, openbox, tint2, xwininfo and xdotool (scripts/install-deps.sh:
// xvfb, openbox, tint2, x11-utils, xdotool); skipped without them.
#include "serveprocess.h"

#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QRegularExpression>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QTest>

#include <csignal>

using namespace ServerTest;

namespace {

/// A helper X program (Xvfb, tint2) that is stopped when the test ends.
struct Helper {
    QProcess proc;
    QByteArray out;
    /// `collect`: its output is gathered in `out` (else read it from proc).
    explicit Helper(bool collect = true)
    {
        if (!collect)
            return;
        proc.setProcessChannelMode(QProcess::MergedChannels);
        QObject::connect(&proc, &QProcess::readyRead, [this] { out += proc.readAll(); });
    }
    ~Helper()
    {
        if (proc.state() != QProcess::NotRunning) {
            proc.terminate();
            if (!proc.waitForFinished(5000)) {
                proc.kill();
                proc.waitForFinished(5000);
            }
        }
    }
};

} // namespace

class TestTrayLater : public QObject
{
    Q_OBJECT
private:
    /// Runs an X client (xwininfo, xdotool) on `display`; its stdout.
    static QString run(const QString &display, const QString &program, const QStringList &args)
    {
        QProcess p;
        QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
        env.insert(QStringLiteral("DISPLAY"), display);
        p.setProcessEnvironment(env);
        p.start(program, args);
        if (!p.waitForFinished(10000))
            return QString();
        return QString::fromUtf8(p.readAllStandardOutput());
    }
    /// `xwininfo -root -tree` on `display`.
    static QString windowTree(const QString &display)
    {
        return run(display, QStringLiteral("xwininfo"), {QStringLiteral("-root"), QStringLiteral("-tree")});
    }
    /// Whether the window named `name` is mapped and viewable.
    static bool isViewable(const QString &display, const QString &name)
    {
        return run(display, QStringLiteral("xwininfo"), {QStringLiteral("-name"), name}).contains(QStringLiteral("IsViewable"));
    }
    /// The lines of the windows inside the first window whose line contains
    /// `parent` (deeper indentation, up to the next one at its depth or less).
    static QStringList windowsInside(const QString &tree, const QString &parent)
    {
        const QStringList lines = tree.split(QLatin1Char('\n'));
        QStringList inside;
        int depth = -1;
        for (const QString &l : lines) {
            const int indent = int(l.size() - l.trimmed().size());
            if (depth < 0) {
                if (l.contains(parent))
                    depth = indent;
                continue;
            }
            if (!l.trimmed().isEmpty() && indent <= depth && l.trimmed().startsWith(QLatin1String("0x")))
                break;
            if (l.trimmed().startsWith(QLatin1String("0x")))
                inside << l.trimmed();
        }
        return inside;
    }

private Q_SLOTS:
    void iconAppearsWhenTrayStartsLater()
    {
        for (const char *tool : {"Xvfb", "tint2", "xwininfo", "openbox", "xdotool"}) {
            if (QStandardPaths::findExecutable(QString::fromLatin1(tool)).isEmpty())
                QSKIP(qPrintable(QStringLiteral("%1 is not installed (scripts/install-deps.sh installs it)")
                                     .arg(QString::fromLatin1(tool))));
        }
        if (tetherBinary().isEmpty())
            QSKIP("no tether executable in this build");

        // A private display: Xvfb picks a free number and writes it to fd 1.
        Helper xvfb(false);
        xvfb.proc.setStandardErrorFile(QProcess::nullDevice());
        xvfb.proc.start(QStringLiteral("Xvfb"), {QStringLiteral("-displayfd"), QStringLiteral("1"), QStringLiteral("-screen"),
                                                 QStringLiteral("0"), QStringLiteral("1024x768x24"), QStringLiteral("-nolisten"),
                                                 QStringLiteral("tcp")});
        QVERIFY(xvfb.proc.waitForStarted(10000));
        QByteArray number;
        QTRY_VERIFY_WITH_TIMEOUT((number += xvfb.proc.readAllStandardOutput()).contains('\n'), 20000);
        const QString display = QLatin1Char(':') + QString::fromLatin1(number.trimmed());

        ServeProcess tether;
        // A window manager, for the window's close button (Alt+F4).
        Helper wm;
        wm.proc.setProcessEnvironment(tether.environment({QStringLiteral("DISPLAY=") + display}));
        wm.proc.start(QStringLiteral("openbox"), QStringList());
        QVERIFY(wm.proc.waitForStarted(10000));

        QProcessEnvironment env = tether.environment({QStringLiteral("DISPLAY=") + display,
                                                      QStringLiteral("QT_QPA_PLATFORM=xcb")});
        // The tray this test starts is an XEmbed one: no D-Bus tray
        // (StatusNotifierItem) of the machine's session may stand in for it.
        env.remove(QStringLiteral("DBUS_SESSION_BUS_ADDRESS"));
        env.remove(QStringLiteral("WAYLAND_DISPLAY"));
        env.insert(QStringLiteral("QT_LOGGING_RULES"), QStringLiteral("tether.*.debug=false"));
        tether.proc.setProcessEnvironment(env);
        tether.proc.start(tetherBinary(), {QStringLiteral("--port"), QStringLiteral("0")});
        QVERIFY(tether.proc.waitForStarted(10000));
        QTRY_VERIFY2_WITH_TIMEOUT(tether.out.contains("Tether is serving"), tether.err.constData(), 30000);
        // No tray: the Sessions window is the main window, on the screen.
        QTRY_VERIFY_WITH_TIMEOUT(windowTree(display).contains(QStringLiteral("\"Sessions — Tether\"")), 20000);
        QTRY_VERIFY2_WITH_TIMEOUT(tether.err.contains("no system tray yet"), tether.err.constData(), 10000);

        // The panel comes: its tray must get Tether's icon.
        Helper tint2;
        tint2.proc.setProcessEnvironment(env); // its settings in the test's home too
        tint2.proc.start(QStringLiteral("tint2"), QStringList());
        QVERIFY(tint2.proc.waitForStarted(10000));
        QStringList icons;
        const auto tetherInTray = [&] {
            icons = windowsInside(windowTree(display), QStringLiteral("(\"tint2\" \"Tint2\")"));
            return std::any_of(icons.begin(), icons.end(), [](const QString &l) { return l.contains(QStringLiteral("(\"tether\" ")); });
        };
        QTRY_VERIFY2_WITH_TIMEOUT(tetherInTray(), qPrintable(icons.join(QLatin1Char('\n')) + QLatin1Char('\n') + QString::fromUtf8(tint2.out)), 30000);
        // Its log line, written before, may still be in the pipe.
        QTRY_VERIFY2_WITH_TIMEOUT(tether.err.contains("a system tray appeared"), tether.err.constData(), 10000);
        // The Sessions window stays open.
        const QString sessions = QStringLiteral("Sessions — Tether");
        QVERIFY(isViewable(display, sessions));
        QCOMPARE(tether.proc.state(), QProcess::Running);

        // Closing it now leaves Tether in the tray: no "Close Tether?"
        // (quit or keep serving) any more, the icon stays.
        run(display, QStringLiteral("xdotool"), {QStringLiteral("search"), QStringLiteral("--name"), QStringLiteral("^Sessions"),
                                                 QStringLiteral("windowactivate"), QStringLiteral("--sync")});
        run(display, QStringLiteral("xdotool"), {QStringLiteral("key"), QStringLiteral("alt+F4")});
        QTRY_VERIFY_WITH_TIMEOUT(!isViewable(display, sessions), 20000);
        QVERIFY(!windowTree(display).contains(QStringLiteral("Close Tether?")));
        QVERIFY(tetherInTray());
        QCOMPARE(tether.proc.state(), QProcess::Running);

        // Closed cleanly (SIGTERM, as a logout does): the desktop app goes,
        // its host (`tether serve`, started by it) stays; the test stops it.
        const qint64 host = qint64(QJsonDocument::fromJson([&] {
            QFile f(tether.runtimeFile());
            return f.open(QIODevice::ReadOnly) ? f.readAll() : QByteArray();
        }()).object().value(QStringLiteral("pid")).toDouble());
        tether.proc.terminate();
        QVERIFY(tether.waitFinished(20000));
        QCOMPARE(tether.proc.exitStatus(), QProcess::NormalExit);
        QCOMPARE(tether.proc.exitCode(), 0);
        QVERIFY(host > 0 && ::kill(pid_t(host), 0) == 0);
        QCOMPARE(::kill(pid_t(host), SIGTERM), 0);
        QTRY_VERIFY_WITH_TIMEOUT(::kill(pid_t(host), 0) != 0, 15000);
    }
};

QTEST_GUILESS_MAIN(TestTrayLater)
#include "tst_traylater.moc"
