// SPDX-License-Identifier: GPL-2.0-or-later
// The real `tether` executable for the tests that drive it (tst_cli,
// tst_serve_cli, tst_ui_cliterminal): a private `tether serve` with its own
// runtime directory, settings and home, and one-shot client commands run
// against it. Waits spin the event loop (QSignalSpy::wait), never sleep.
#pragma once

#include "servertestutil.h"
#include "tlstestutil.h"

#include <QDir>
#include <QJsonArray>
#include <QProcess>
#include <QRegularExpression>
#include <QTemporaryDir>

#include <cstdio>
#include <sys/stat.h>

namespace ServerTest {

/// Path of the tether executable under test; empty when the build has none
/// (app/ skipped), and the tests skip. CMake defines TETHER_BINARY.
inline QString tetherBinary()
{
#ifdef TETHER_BINARY
    return QStringLiteral(TETHER_BINARY);
#else
    return QString();
#endif
}

/// QSignalSpy on QProcess::finished needs the enum registered (Qt 5 warns
/// "Unable to handle parameter 'exitStatus'" otherwise).
inline void registerProcessTypes()
{
    qRegisterMetaType<QProcess::ExitStatus>("QProcess::ExitStatus");
}

/**
 * A private `tether serve`: XDG_RUNTIME_DIR, XDG_CONFIG_HOME and HOME point
 * into a temporary directory (so it never meets the user's server), PS1 is
 * "$ " and the debug/info log is off. stdout and stderr are collected in
 * `out` and `err`; a failing test prints `err`. The destructor ends a server
 * still running (SIGTERM, then SIGKILL after 10 s) as a safety net only.
 */
struct ServeProcess {
    QTemporaryDir dir;
    QProcess proc;
    QByteArray out;
    QByteArray err;
    quint16 port = 0; ///< from the printed line, after waitLine()
    QByteArray key;   ///< from the printed line, after waitLine()
    QString runDir;   ///< its XDG_RUNTIME_DIR: dir/run unless shareRuntimeDir()
    QString program = tetherBinary(); ///< what launch() runs (a copy, to replace it as an upgrade would)
    /// Set for a server started with --tls-cert: http() then goes over TLS,
    /// trusting this PEM file.
    QString tlsCa;

    /// `configIni`: contents of tether.conf (QSettings INI), none when empty.
    explicit ServeProcess(const QByteArray &configIni = QByteArray())
    {
        registerProcessTypes();
        for (const char *d : {"run", "config/Tether", "home"})
            QDir(dir.path()).mkpath(QString::fromLatin1(d));
        runDir = dir.path() + QStringLiteral("/run");
        ::chmod(QFile::encodeName(runDir).constData(), 0700);
        if (!configIni.isEmpty()) {
            QFile f(dir.path() + QStringLiteral("/config/Tether/tether.conf"));
            if (f.open(QIODevice::WriteOnly))
                f.write(configIni);
        }
        proc.setProcessEnvironment(environment());
        QObject::connect(&proc, &QProcess::readyReadStandardOutput, [this]() { out += proc.readAllStandardOutput(); });
        QObject::connect(&proc, &QProcess::readyReadStandardError, [this]() { err += proc.readAllStandardError(); });
    }
    ~ServeProcess()
    {
        if (proc.state() != QProcess::NotRunning) {
            proc.terminate();
            if (!proc.waitForFinished(10000)) {
                proc.kill();
                proc.waitForFinished(5000);
            }
        }
        if (QTest::currentTestFailed() && !err.isEmpty())
            std::fprintf(stderr, "tether serve said:\n%s\n", err.constData());
    }

    /// Makes this server (before launch()) and its clients use the runtime
    /// directory of `other`: two servers of one user, as when a second
    /// `tether serve` starts while the first runs.
    void shareRuntimeDir(const ServeProcess &other)
    {
        runDir = other.runDir;
        proc.setProcessEnvironment(environment());
    }

    /// XDG_RUNTIME_DIR, XDG_CONFIG_HOME, XDG_STATE_HOME and HOME of this server, as NAME=value,
    /// for every tether process that must find it; TETHER_URL/KEY cleared.
    QStringList envList() const
    {
        return {QStringLiteral("XDG_RUNTIME_DIR=") + runDir,
                QStringLiteral("XDG_CONFIG_HOME=") + dir.path() + QStringLiteral("/config"),
                QStringLiteral("HOME=") + dir.path() + QStringLiteral("/home"),
                // Session records (SessionRecordStore): never the user's.
                QStringLiteral("XDG_STATE_HOME=") + dir.path() + QStringLiteral("/state"),
                QStringLiteral("TETHER_URL="), QStringLiteral("TETHER_KEY="),
                // A desktop app started from a test never notifies on the
                // user's desktop (DesktopApp::notifier()).
                QStringLiteral("DBUS_SESSION_BUS_ADDRESS=")};
    }
    /// This process's environment with envList() and `extra` (NAME=value) applied.
    QProcessEnvironment environment(const QStringList &extra = {}) const
    {
        QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
        for (const QString &v : envList() + extra)
            env.insert(v.section(QLatin1Char('='), 0, 0), v.section(QLatin1Char('='), 1));
        env.insert(QStringLiteral("PS1"), QStringLiteral("$ "));
        env.insert(QStringLiteral("QT_LOGGING_RULES"), QStringLiteral("tether.*.debug=false;tether.*.info=false"));
        return env;
    }
    QString runtimeFile() const { return runDir + QStringLiteral("/tether/server.json"); }

    /// A command that sets something up and then execs tether, so that the
    /// server keeps its pid (e.g. {"prlimit", "--nofile=512:"}); launch()
    /// runs `WRAPPER... TETHER serve ARGS`. Empty: tether is started directly.
    QStringList wrapper;

    /// Starts `tether serve ARGS` without waiting for anything else.
    bool launch(const QStringList &args)
    {
        QStringList command = wrapper + QStringList{program, QStringLiteral("serve")} + args;
        const QString program = command.takeFirst();
        proc.start(program, command);
        return proc.waitForStarted(5000);
    }
    /// Waits (15 s at most) for the one stdout line
    /// "Tether is serving http://127.0.0.1:PORT/?key=KEY" (or https://) and
    /// reads port and key.
    bool waitLine()
    {
        QElapsedTimer t;
        t.start();
        while (!out.contains('\n') && t.elapsed() < 15000 && proc.state() == QProcess::Running)
            QSignalSpy(&proc, &QProcess::readyReadStandardOutput).wait(200);
        const QRegularExpressionMatch m = QRegularExpression(
            QStringLiteral("^Tether is serving https?://127\\.0\\.0\\.1:(\\d+)/\\?key=([A-Za-z0-9_-]{43})\\n$"))
                                              .match(QString::fromUtf8(out));
        if (!m.hasMatch())
            return false;
        port = quint16(m.captured(1).toUInt());
        key = m.captured(2).toLatin1();
        return true;
    }
    /// `tether serve --port 0 EXTRA`, ready: launch() and waitLine().
    bool start(const QStringList &extra = {})
    {
        return launch(QStringList{QStringLiteral("--port"), QStringLiteral("0")} + extra) && waitLine();
    }
    /// Waits for the server to exit (true at once when it is not running).
    bool waitFinished(int ms = 15000)
    {
        return proc.state() == QProcess::NotRunning
            || QSignalSpy(&proc, QOverload<int, QProcess::ExitStatus>::of(&QProcess::finished)).wait(ms)
            || proc.state() == QProcess::NotRunning;
    }

    /// An HTTP/1.1 request with this server's Host and bearer key.
    HttpReply http(const QByteArray &method, const QByteArray &target, const QByteArray &body = QByteArray()) const
    {
        QByteArray r = method + ' ' + target + " HTTP/1.1\r\nHost: 127.0.0.1:" + QByteArray::number(port)
            + "\r\nAuthorization: Bearer " + key + "\r\n";
        if (!body.isNull())
            r += "Content-Length: " + QByteArray::number(body.size()) + "\r\n";
        if (!tlsCa.isEmpty())
            return httpsExchange(port, r + "\r\n" + body, tlsCa, QStringLiteral("127.0.0.1")).http;
        return rawHttp(port, r + "\r\n" + body);
    }
    /// GET /api/sessions/{id} (an empty object when there is none).
    QJsonObject session(const QString &id) const { return http("GET", "/api/sessions/" + id.toLatin1()).json(); }
    /// POST a session running `argv`; its id (empty on failure).
    QString create(const QStringList &argv) const
    {
        const QByteArray body = QJsonDocument(QJsonObject{{QStringLiteral("command"), QJsonArray::fromStringList(argv)}})
                                    .toJson(QJsonDocument::Compact);
        return http("POST", "/api/sessions", body).json().value(QStringLiteral("id")).toString();
    }
};

/// Outcome of one `tether ARGS` run: exit status (-1 when it crashed or did
/// not end within 20 s) and its whole stdout and stderr.
struct TetherRun {
    int code = -1;
    QByteArray out, err;
};

/// Runs `tether ARGS` as a plain child (no terminal) against server `s`,
/// with `extraEnv` (NAME=value) and in `workDir` when given; waits 20 s at most.
inline TetherRun runTether(const ServeProcess &s, const QStringList &args, const QStringList &extraEnv = {},
                           const QString &workDir = {})
{
    registerProcessTypes();
    QProcess p;
    if (!workDir.isEmpty())
        p.setWorkingDirectory(workDir);
    p.setProcessEnvironment(s.environment(extraEnv));
    p.start(tetherBinary(), args);
    TetherRun r;
    if (!p.waitForStarted(5000))
        return r;
    QSignalSpy finished(&p, QOverload<int, QProcess::ExitStatus>::of(&QProcess::finished));
    if (!finished.wait(20000) && p.state() != QProcess::NotRunning) {
        p.kill();
        p.waitForFinished(5000);
        return r;
    }
    r.code = p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1;
    r.out = p.readAllStandardOutput();
    r.err = p.readAllStandardError();
    return r;
}

} // namespace ServerTest
