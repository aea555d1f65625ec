// SPDX-License-Identifier: GPL-2.0-or-later
#include "servecommand.h"
#include "commandline.h"
#include "hostconfig.h"
#include "fdlimit.h"
#include "hostlock.h"
#include "keeperlink.h"
#include "logging.h"
#include "registry.h"
#include "restartinplace.h"
#include "runtimefile.h"
#include "server.h"
#include "serveoptions.h"
#include "sessionrecordstore.h"
#include "signalpipe.h"
#include "systemdnotify.h"

#include <QCommandLineParser>
#include <QCoreApplication>
#include <QJsonObject>
#include <QSettings>

#include <csignal>
#include <cstdio>

namespace Tether {

namespace {
const QString kProgram = QStringLiteral("tether serve");

/// What to do about a port in use: the usual cause is a Tether already
/// running (a second `tether serve`, or the desktop app), which this user's
/// clients reach through its runtime file; otherwise some other program.
void printPortInUseHint(quint16 port)
{
    const QJsonObject other = RuntimeFile::read();
    if (RuntimeFile::isLiveOtherServer(other)) {
        std::fprintf(stderr,
                     "tether serve: Tether is already running (pid %lld, %s): `tether attach` and `tether list` "
                     "use it; to run a second server, give it another port (--port N, or --port 0 for any free one)\n",
                     qint64(other.value(QStringLiteral("pid")).toDouble()),
                     qPrintable(other.value(QStringLiteral("url")).toString()));
    } else {
        std::fprintf(stderr,
                     "tether serve: another program uses port %u; choose another with --port N "
                     "(--port 0 for any free one)\n",
                     unsigned(port));
    }
}

/// Another host holds the single-host lock (HostLock): one Tether per
/// user holds the sessions. Names it (pid, and its address when its runtime
/// file is its own) and what to do instead.
void printHostRunning(qint64 holder)
{
    const QJsonObject running = RuntimeFile::read();
    const bool fileIsItsOwn = holder > 0 && qint64(running.value(QStringLiteral("pid")).toDouble()) == holder;
    const QString who = holder > 0 ? QStringLiteral("pid %1").arg(holder) : QStringLiteral("pid unknown");
    const QString url = fileIsItsOwn ? QStringLiteral(", ") + running.value(QStringLiteral("url")).toString() : QString();
    std::fprintf(stderr,
                 "tether serve: Tether is already running (%s%s): one Tether per user holds the sessions "
                 "(it holds %s); `tether attach`, `tether list` and the desktop app use it. To start "
                 "another, stop that one first.\n",
                 qPrintable(who), qPrintable(url), qPrintable(HostLock::path()));
}

/// Why server.json could not be written (`error`), and what that means for
/// the clients: nothing when the file there still leads to this server (a
/// restart in place: the previous image's), else that they need the
/// address and key given to them.
void printRuntimeFileWarning(const QString &error, bool fileLeadsHere)
{
    if (fileLeadsHere) {
        std::fprintf(stderr,
                     "tether serve: warning: cannot rewrite the runtime file (%s); the one there still names "
                     "this server\n",
                     qPrintable(error));
        return;
    }
    std::fprintf(stderr,
                 "tether serve: warning: cannot write the runtime file (%s); Tether serves all the same, but "
                 "`tether attach`, `tether list` and the other commands cannot find it by themselves: give them "
                 "the address and key of the \"Tether is serving\" line in TETHER_URL and TETHER_KEY "
                 "(or --url and --key)\n",
                 qPrintable(error));
}
} // namespace

int serveMain(int argc, char **argv)
{
    RestartInPlace::guardIfAsked(argv); // never returns in a restart's guardian
    RestartInPlace::recordStartup(argc, argv);
    // Under systemd (Type=notify): kept for READY=1 and the restarts, and
    // out of the environment the shells inherit.
    SystemdNotify::takeFromEnvironment();
    // Before anything opens descriptors or starts a thread (it edits the
    // environment); the sessions get the limit we started with back.
    FdLimit::raiseSoftLimit();
    QCoreApplication app(argc, argv);
    QCoreApplication::setApplicationName(QStringLiteral("tether"));
    QCoreApplication::setApplicationVersion(version());

    HostConfig config = HostConfig::load();

    QCommandLineParser parser;
    parser.setApplicationDescription(QStringLiteral(
        "Runs the Tether server without a display: terminal sessions that survive their viewers,\n"
        "a browser dashboard, a REST API and WebSocket attach on one port (docs/protocol.md).\n"
        "Defaults come from the settings file (~/.config/Tether/tether.conf), then built-ins.\n"
        "Prints one line, \"Tether is serving http://ADDR:PORT/?key=KEY\"; open it in a browser.\n"
        "Writes $XDG_RUNTIME_DIR/tether/server.json (url, port, pid, key; mode 0600) while running\n"
        "(/tmp/runtime-$USER/tether/ when that variable is unset or names a directory not yours);\n"
        "when that file names another running tether server it is kept (with a warning): local\n"
        "clients (tether attach, tether list) then talk to that server. When it cannot be written\n"
        "(a full disk), Tether serves all the same and says so: clients then need TETHER_URL and\n"
        "TETHER_KEY (or --url and --key).\n"
        "One Tether per user holds the sessions: it locks $XDG_RUNTIME_DIR/tether/host.lock while\n"
        "running, and a second `tether serve` (or the desktop app) exits 1 naming the first.\n"
        "SIGTERM, SIGINT or SIGHUP ends every session and exits 0; with TLS, a SIGHUP sent by a\n"
        "process (kill -HUP) reloads the certificate instead. SIGUSR2 (or `tether restart`)\n"
        "restarts Tether in place: the same process runs the binary again and keeps every session.\n"
        "Off loopback (--bind) Tether serves only with TLS (--tls-cert, --tls-key) or --insecure-bind."));
    parser.addHelpOption();
    parser.addVersionOption();
    ServeOptions::addTo(parser, config);

    QStringList args = QCoreApplication::arguments();
    if (args.size() > 1 && args.at(1) == QLatin1String("serve"))
        args.removeAt(1);
    if (!parser.parse(args))
        return ServeOptions::usageError(kProgram, parser.errorText());
    if (helpRequested(parser)) { // -h, --help, --help-all: never start a server
        std::fputs(qPrintable(commandHelp(parser, QStringLiteral("serve"))), stdout);
        return 0;
    }
    if (parser.isSet(QStringLiteral("version"))) {
        std::fputs(qPrintable(versionLine()), stdout);
        return 0;
    }
    if (!parser.positionalArguments().isEmpty())
        return ServeOptions::usageError(
            kProgram, QStringLiteral("unexpected argument \"%1\"").arg(parser.positionalArguments().first()));
    QString optionError;
    if (!ServeOptions::read(parser, &config, &optionError))
        return ServeOptions::usageError(kProgram, optionError);

    // SIGHUP too: closing the terminal that runs `tether serve` must tear the
    // sessions down like SIGTERM, not kill us and orphan them.
    // SIGUSR2: restart in place (systemd's ExecReload, scripts).
    SignalPipe signalPipe({SIGTERM, SIGINT, SIGHUP, SIGUSR2});
    if (!signalPipe.isValid()) {
        std::fprintf(stderr, "tether serve: cannot handle signals: %s\n", qPrintable(signalPipe.errorString()));
        return 1;
    }

    // Exactly one host per user, whatever starts first (a second `tether
    // serve`, the desktop app, the systemd unit): a lock, not a race on the
    // port. Inherited across a restart in place.
    HostLock hostLock;
    QString lockError;
    qint64 holder = 0;
    switch (hostLock.acquire(&lockError, &holder)) {
    case HostLock::Result::Acquired:
        break;
    case HostLock::Result::Held:
        printHostRunning(holder);
        return 1;
    case HostLock::Result::Unusable:
        // As without server.json: serve all the same, and say so.
        std::fprintf(stderr, "tether serve: warning: no single-host lock (%s); a second Tether may start beside this one\n",
                     qPrintable(lockError));
        break;
    }

    SessionRegistry registry(config.limits);
    Server server(&registry, config);
    RestartInPlace restart(&registry, &server);
    restart.setHostLock(&hostLock);
    // The host owns the settings (GET/PATCH /api/settings): the file
    // HostConfig::load() read.
    server.setSettingsFile(QSettings(QStringLiteral("Tether"), QStringLiteral("tether")).fileName());
    int status = 0;
    QString error;
    QJsonObject otherServer;
    // Exec'd by a restart in place: the listening socket and the sessions
    // are already ours.
    QString report;
    const RestartInPlace::Adoption adoption = restart.adoptHandover(&report);
    if (adoption != RestartInPlace::Adoption::None)
        std::fprintf(stderr, "tether serve: %s\n", qPrintable(report));
    bool badValue = false;
    const bool listening = adoption == RestartInPlace::Adoption::Adopted || server.listen(&error, &badValue);
    // The session keeper (docs/architecture.md "When Tether crashes"): it
    // holds a copy of every session's terminal, so that a crash of this
    // process hangs up no shell; after a crash of the previous host it
    // still holds that host's sessions, adopted here. Only once listening:
    // a host that cannot serve leaves them to the keeper.
    KeeperLink keeper(&registry);
    if (listening) {
        QString keeperError;
        keeper.setShareStore(server.shares()); // read-only links survive a crash too
        if (keeper.connectToKeeper(&keeperError)) {
            QStringList problems;
            const int recovered = keeper.adoptAndFollow(&problems);
            if (recovered > 0) {
                std::fprintf(stderr,
                             "tether serve: recovered %d session%s after a crash (held by the session keeper, pid "
                             "%lld); output the previous server had read and not saved is lost\n",
                             recovered, recovered == 1 ? "" : "s", keeper.keeperPid());
                restart.setRecoveredAfterCrash(recovered, keeper.previousHostLostMs());
            }
            for (const QString &p : std::as_const(problems))
                std::fprintf(stderr, "tether serve: after a crash: %s\n", qPrintable(p));
        } else if (qgetenv(KeeperLink::kDisableEnv) != "0") {
            std::fprintf(stderr,
                         "tether serve: warning: no session keeper (%s); the sessions will not survive a crash of "
                         "Tether\n",
                         qPrintable(keeperError));
        }
        restart.setKeeper(&keeper);
    }
    // Records of sessions on disk (docs/protocol.md, "Ended sessions"): the
    // ones a previous run left are ended sessions; this run's are kept from
    // now on. After the adoptions: a restart in place and a crash the
    // keeper covered keep their sessions.
    SessionRecordStore records(&registry, SessionRecordStore::defaultDir(), config.savedScrollbackLines);
    records.loadEnded();
    // A session recovered after a crash starts with an empty buffer: its
    // saved screen (at most a few seconds old) goes first, above a marker
    // line, before the event loop reads its terminal.
    for (const QString &id : keeper.recoveredIds()) {
        SessionRecord saved;
        QString why;
        Session *s = registry.find(id);
        if (s && SessionRecordStore::read(SessionRecordStore::fileFor(records.dir(), id), &saved, &why)
            && !saved.screen.isEmpty()) {
            s->injectOutput(SessionRecordStore::screenPreamble(
                saved, "--- tether: Tether crashed; the screen as saved at "
                           + saved.saved.toUTC().toString(QStringLiteral("yyyy-MM-dd HH:mm:ss")).toUtf8()
                           + " UTC, later output lost ---"));
        }
    }
    records.start();
    server.setRecordStore(&records);
    if (!listening) {
        // A TLS file that is missing or no usable pair is a bad option value
        // like any other (exit 2, as the README says); it exited 1.
        if (badValue) {
            status = ServeOptions::usageError(kProgram, error);
        } else {
            std::fprintf(stderr, "tether serve: %s\n", qPrintable(error));
            if (server.portInUse())
                printPortInUseHint(config.port);
            status = 1;
        }
    } else {
        if (!server.writeRuntimeFile(&error, &otherServer)) {
            // Not a reason to stop serving (a full disk used to end `tether
            // serve` with status 1, and a restart in place that met one
            // lost every session): nothing but local clients' discovery
            // depends on the file. Only one server runs per port, and the
            // restart state travels in a memfd.
            printRuntimeFileWarning(error, server.runtimeFileLeadsHere());
        } else if (!otherServer.isEmpty()) {
            // We still serve (the printed URL works), but local clients find
            // the first server through its runtime file, which we keep.
            std::fprintf(stderr,
                         "tether serve: warning: another tether server (pid %lld, %s) is already running; "
                         "its runtime file %s is kept, so `tether attach` and `tether list` will talk to "
                         "that one, not to this server\n",
                         qint64(otherServer.value(QStringLiteral("pid")).toDouble()),
                         qPrintable(otherServer.value(QStringLiteral("url")).toString()),
                         qPrintable(RuntimeFile::path()));
        }
        // Every start, restarts in place included: the risk stays as long as it runs.
        if (!server.startWarning().isEmpty())
            std::fprintf(stderr, "tether serve: %s\n", qPrintable(server.startWarning()));
        bool shuttingDown = false;
        QObject::connect(&registry, &SessionRegistry::shutdownComplete, &app, [&]() {
            qCInfo(lcServer) << "all sessions torn down";
            server.removeRuntimeFile();
            QCoreApplication::exit(0);
        });
        QObject::connect(&signalPipe, &SignalPipe::receivedInfo, &app, [&](const SignalInfo &info) {
            if (shuttingDown)
                return; // teardown is already bounded; a second signal changes nothing
            // SIGHUP sent on purpose (kill -HUP, a certificate renewal hook)
            // to a TLS server reloads the certificate, as daemons do; the
            // kernel's SIGHUP (the terminal hung up) still ends it.
            if (info.number == SIGHUP && server.isTls() && info.fromProcess()) {
                qCInfo(lcServer).noquote() << "signal received:" << info.describe() << "- reloading the TLS certificate";
                server.reloadTls(); // logs the outcome; a bad pair keeps the old one
                return;
            }
            if (info.number == SIGUSR2) {
                qCInfo(lcServer).noquote() << "signal received:" << info.describe() << "- restarting in place";
                restart.request(); // logs why when it cannot
                return;
            }
            shuttingDown = true;
            // Who sent it: a shutdown caused from outside (a launcher killing
            // its process group, `timeout`, a logout) is otherwise a mystery.
            qCInfo(lcServer).noquote() << "signal received:" << info.describe() << "- shutting down";
            SystemdNotify::notify("STOPPING=1");
            server.close();
            records.shutdown(); // before the sessions end: their records stay
            keeper.stop();      // an orderly stop ends the sessions, and the keeper with them
            registry.shutdown();
        });
        // Printed once per start: a restart in place is the same server going on.
        if (adoption != RestartInPlace::Adoption::Adopted) {
            std::fprintf(stdout, "Tether is serving %s\n", qPrintable(server.keyedUrl()));
            std::fflush(stdout);
        }
        // Type=notify: started (systemctl start returns), or the restart in
        // place that sent RELOADING=1 is over. The key stays out of STATUS=.
        QString notifyError;
        if (!SystemdNotify::notify("READY=1\nSTATUS=Serving " + server.url().toUtf8(), &notifyError))
            qCWarning(lcServer).noquote() << "cannot tell the service manager READY=1:" << notifyError;
        status = app.exec();
    }
    server.close();
    server.removeRuntimeFile();
    return status;
}

} // namespace Tether
