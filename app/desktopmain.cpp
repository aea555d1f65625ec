// SPDX-License-Identifier: GPL-2.0-or-later
#include "desktopmain.h"
#include "appicon.h"
#include "clientcommand.h"
#include "commandline.h"
#include "hostconfig.h"
#include "desktopapp.h"
#include "logging.h"
#include "runtimefile.h"
#include "serveoptions.h"
#include "signalpipe.h"
#include "singleinstance.h"
#include "terminalwindow.h"

#include <QApplication>
#include <QCommandLineParser>
#include <QGuiApplication>
#include <QJsonObject>
#include <QMessageBox>
#include <QTextStream>

#include <csignal>

namespace Tether {

namespace {

const QString kProgram = QStringLiteral("tether");

/// The parser of `tether`: the server's options (ServeOptions, as `tether
/// serve`), help, version and --no-tray, which it returns.
QCommandLineOption addDesktopOptions(QCommandLineParser &parser, const HostConfig &defaults)
{
    parser.setApplicationDescription(
        DesktopApp::tr("Tether keeps terminal sessions alive. Without a command it runs the desktop "
                       "application (tray icon, local terminal windows), a client of Tether's host: "
                       "it starts `tether serve` (the sessions and the web dashboard, in a process of "
                       "its own that outlives the desktop app) when none runs. The server options "
                       "below are for a host it starts.\n\nCommands (each has --help):\n"
                       "  serve    the server alone, headless\n")
        // The client's commands from the dispatcher's own list: none left out.
        + clientCommandsHelp().chopped(1));
    parser.addHelpOption();
    parser.addVersionOption();
    ServeOptions::addTo(parser, defaults);
    const QCommandLineOption noTray(QStringLiteral("no-tray"),
        DesktopApp::tr("Do not use the system tray: the Sessions window is the main window."));
    parser.addOption(noTray);
    return noTray;
}

/// True when the command line must be answered before QApplication exists:
/// --help, --version, a mistyped command and a missing display must get words
/// on a machine without a display, where QApplication aborts ("could not load
/// the Qt platform plugin").
bool answeredWithoutDisplay(int argc, char **argv)
{
    bool early = argc > 1 && argv[1][0] != '-'; // "help", or an unknown command
    bool platformGiven = false;
    for (int i = 1; i < argc; ++i) {
        const QByteArray a(argv[i]);
        early = early || a == "-h" || a == "--help" || a == "-?" || a == "--help-all" || a == "-v" || a == "--version";
        platformGiven = platformGiven || a == "-platform";
    }
    const bool noDisplay = qEnvironmentVariableIsEmpty("DISPLAY") && qEnvironmentVariableIsEmpty("WAYLAND_DISPLAY")
        && qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM") && !platformGiven;
    return early || noDisplay;
}

/// The error for `tether WORD` when WORD is no command: every command
/// (serve, then the client's, clientCommandNames()) and the aliases.
QString unknownCommand(const QString &word)
{
    QStringList commands = QStringList{QStringLiteral("serve")} + clientCommandNames();
    const QString last = commands.takeLast();
    return QStringLiteral("unknown command \"%1\": use %2 or %3 (aliases: %4)")
        .arg(word, commands.join(QStringLiteral(", ")), last, clientCommandAliases().join(QStringLiteral(", ")));
}

/// The help of `tether`: QCommandLineParser's, whose usage line names the
/// program by argv[0] ("./build/app/tether") and has no place for a
/// command, with the usage line the manual page has.
QString desktopHelpText(const QCommandLineParser &parser)
{
    const QString help = parser.helpText();
    return QStringLiteral("Usage: %1 [options] [COMMAND [ARGS...]]").arg(kProgram) + help.mid(help.indexOf(QLatin1Char('\n')));
}

/// Parses QCoreApplication::arguments() (without Qt's own options, such as
/// -platform, which QApplication has taken out) into `config`. Returns the
/// exit status when the run ends here (help and version: 0, usage errors:
/// ServeOptions::kUsageError), or -1 to go on.
int readArguments(QCommandLineParser &parser, HostConfig *config)
{
    const QStringList args = QCoreApplication::arguments();
    QTextStream out(stdout);
    if (args.size() > 1 && args.at(1) == QLatin1String("help")) {
        out << desktopHelpText(parser);
        return 0;
    }
    if (!parser.parse(args))
        return ServeOptions::usageError(kProgram, parser.errorText());
    if (helpRequested(parser)) {
        out << desktopHelpText(parser);
        return 0;
    }
    if (parser.isSet(QStringLiteral("version"))) {
        out << versionLine();
        return 0;
    }
    if (!parser.positionalArguments().isEmpty())
        return ServeOptions::usageError(kProgram, unknownCommand(parser.positionalArguments().constFirst()));
    QString error;
    if (!ServeOptions::read(parser, config, &error))
        return ServeOptions::usageError(kProgram, error);
    return -1;
}

/// The arguments for a host this desktop app starts: the server options
/// given on its command line (QCoreApplication::arguments() without the
/// program and without --no-tray), as `tether serve` takes them.
QStringList hostArguments(const QCommandLineParser &parser)
{
    Q_UNUSED(parser);
    QStringList args = QCoreApplication::arguments().mid(1);
    args.removeAll(QStringLiteral("--no-tray"));
    return args;
}

/// Runs the desktop app in `app`'s event loop, or hands off to the desktop
/// app already running. Returns the exit status.
int runDesktop(QApplication &app, const DesktopSettings &settings, DesktopApp::TrayMode trayMode, const QStringList &hostArgs)
{
    QTextStream err(stderr);
    // One desktop app per user: a second launch raises the first.
    SingleInstance instance;
    QString instanceError;
    if (!instance.claim(&instanceError)) {
        QObject::connect(&instance, &SingleInstance::handOffFinished, &app, [&](bool handedOff) {
            if (!handedOff) {
                err << "tether: another instance (pid " << instance.primaryPid()
                    << ") holds " << instance.lockPath() << " but does not answer\n";
            } else {
                // Said, so that a launch from a terminal does not look like
                // it did nothing; with the host's address (no key).
                const QJsonObject running = RuntimeFile::read();
                const QString url = running.value(QStringLiteral("url")).toString();
                QTextStream out(stdout);
                out << "Tether is already running (pid " << instance.primaryPid() << "): its Sessions window was raised";
                if (!url.isEmpty())
                    out << "; it serves " << url;
                out << '\n';
                out.flush();
            }
            err.flush();
            QCoreApplication::exit(handedOff ? 0 : 1);
        });
        instance.requestRaise();
        return app.exec();
    }
    if (!instanceError.isEmpty())
        qCWarning(lcUi) << instanceError;

    // QTermWidget 1.2 prints uncategorized debug lines at every search.
    installTerminalMessageFilter();
    DesktopApp desktop(settings, trayMode);
    desktop.setHostArguments(hostArgs);
    QObject::connect(&instance, &SingleInstance::raiseRequested, &desktop, &DesktopApp::showSessionsWindow);
    QObject::connect(&desktop, &DesktopApp::finished, &app, [](int status) { QCoreApplication::exit(status); });
    bool said = false;
    QObject::connect(&desktop, &DesktopApp::hostReady, &app, [&desktop, &said] {
        // The same line as `tether serve`, for scripts and for people; once.
        if (said)
            return;
        said = true;
        QTextStream out(stdout);
        out << "Tether is serving " << desktop.keyedUrl() << '\n';
        out.flush();
    });
    QObject::connect(&desktop, &DesktopApp::hostFailed, &app, [&desktop, &err](const QString &why) {
        if (desktop.isConnected() || !desktop.endpoint().url.isEmpty())
            return; // a later "start again" that failed: the tray says so
        const QString msg = DesktopApp::tr("Tether cannot start its host: %1").arg(why);
        err << "tether: " << msg << '\n';
        err.flush();
        QMessageBox::critical(nullptr, QStringLiteral("Tether"), msg);
        QCoreApplication::exit(1);
    });
    // SIGTERM / SIGINT / SIGHUP (logout, Ctrl+C, kill) close the desktop
    // app only: the sessions live in the host, which goes on. SIGUSR2 asks
    // the host to restart in place.
    SignalPipe signalPipe({SIGTERM, SIGINT, SIGHUP, SIGUSR2});
    if (!signalPipe.isValid())
        qCWarning(lcUi) << "cannot handle signals:" << signalPipe.errorString();
    QObject::connect(&signalPipe, &SignalPipe::receivedInfo, &desktop, [&desktop](const SignalInfo &info) {
        qCInfo(lcUi).noquote() << "signal received:" << info.describe()
                               << (info.number == SIGUSR2 ? "- asking the host to restart in place"
                                                          : "- closing the desktop app; the sessions keep running");
        if (info.number == SIGUSR2)
            desktop.restartInPlace();
        else
            desktop.closeUi();
    });
    desktop.start();
    return app.exec();
}

} // namespace

int desktopMain(int argc, char **argv)
{
    QCoreApplication::setOrganizationName(QStringLiteral("Tether"));
    QCoreApplication::setApplicationName(QStringLiteral("tether"));
    QCoreApplication::setApplicationVersion(version());

    // The host's settings, for the help texts and to check the server
    // options (for a host this app starts) before anything starts.
    HostConfig config = HostConfig::load();
    QCommandLineParser parser;
    const QCommandLineOption noTray = addDesktopOptions(parser, config);

    if (answeredWithoutDisplay(argc, argv)) {
        // A plain QCoreApplication for the parser (Qt 5's helpText() needs one).
        QCoreApplication pre(argc, argv);
        const int status = readArguments(parser, &config);
        if (status >= 0)
            return status;
        QTextStream(stderr) << "tether: no display for the desktop app; run `tether serve` for the headless "
                               "server (see tether --help)\n";
        return 1;
    }

    QApplication app(argc, argv);
    QGuiApplication::setApplicationDisplayName(QStringLiteral("Tether"));
    QGuiApplication::setDesktopFileName(QStringLiteral("tether"));
    QApplication::setWindowIcon(appIcon());
    // The tray keeps us alive with no window open.
    QApplication::setQuitOnLastWindowClosed(false);
    const int status = readArguments(parser, &config);
    if (status >= 0)
        return status;
    return runDesktop(app, DesktopSettings::load(), parser.isSet(noTray) ? DesktopApp::TrayMode::Off : DesktopApp::TrayMode::Auto,
                      hostArguments(parser));
}

} // namespace Tether
