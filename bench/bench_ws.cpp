// SPDX-License-Identifier: GPL-2.0-or-later
// End-to-end throughput: a real shell in a real PTY runs `cat` of a text file,
// a QWebSocket client attached as control viewer receives every byte through
// the server (ring buffer, backpressure, WebSocket frames). Prints MB/s and
// the process's peak RSS. For comparison, ttyd 1.7.7 measured on the same
// workload on the development machine: about 12 MB/s.
//
// Usage: bench_ws [MiB]   (default 64)
#include "benchdata.h"
#include "hostconfig.h"
#include "registry.h"
#include "server.h"

#include <QCoreApplication>
#include <QElapsedTimer>
#include <QFile>
#include <QJsonDocument>
#include <QJsonObject>
#include <QNetworkRequest>
#include <QTemporaryFile>
#include <QTimer>
#include <QWebSocket>
#include <cstdio>

using namespace Tether;

static qint64 peakRssKiB()
{
    QFile f(QStringLiteral("/proc/self/status"));
    if (!f.open(QIODevice::ReadOnly))
        return -1;
    for (const QByteArray &line : f.readAll().split('\n'))
        if (line.startsWith("VmHWM:"))
            return line.mid(6).trimmed().split(' ').value(0).toLongLong();
    return -1;
}

int main(int argc, char **argv)
{
    QCoreApplication app(argc, argv);
    const qint64 mib = argc > 1 ? QByteArray(argv[1]).toLongLong() : 64;

    // A text file of `mib` MiB: numbered lines, as a build log would be.
    QTemporaryFile data;
    if (!data.open())
        return 1;
    if (!BenchData::writeTextLines(data, mib))
        return 1;

    HostConfig config;
    config.port = 0;
    SessionRegistry registry(config.limits);
    Server server(&registry, config);
    QString error;
    if (!server.listen(&error)) {
        std::fprintf(stderr, "listen: %s\n", qPrintable(error));
        return 1;
    }
    SpawnOptions options;
    // Wait for the viewer's first input byte so no output is produced before
    // the clock starts; stty raw so the PTY does not echo it.
    options.argv = QStringList{QStringLiteral("/bin/sh"), QStringLiteral("-c"),
                               QStringLiteral("stty raw -echo; head -c 1 >/dev/null; exec cat '%1'").arg(data.fileName())};
    Session *session = registry.create(options);
    if (!session)
        return 1;

    QWebSocket ws;
    QNetworkRequest req(QUrl(QStringLiteral("ws://127.0.0.1:%1/ws/%2").arg(server.port()).arg(session->id())));
    req.setRawHeader("Authorization", "Bearer " + server.accessKey().toLatin1());
    qint64 received = 0;
    QElapsedTimer clock;
    QObject::connect(&ws, &QWebSocket::binaryMessageReceived, [&](const QByteArray &b) { received += b.size(); });
    QObject::connect(&ws, &QWebSocket::textMessageReceived, [&](const QString &text) {
        const QJsonObject m = QJsonDocument::fromJson(text.toUtf8()).object();
        const QString type = m.value(QStringLiteral("type")).toString();
        if (type == QLatin1String("attached")) {
            received = 0;
            clock.start();
            ws.sendBinaryMessage(QByteArray("g"));
        } else if (type == QLatin1String("exit")) {
            const double secs = clock.nsecsElapsed() / 1e9;
            std::printf("bench_ws: %lld bytes (%lld MiB file) through PTY -> ring -> WebSocket in %.2f s: "
                        "%.1f MB/s (%.1f MiB/s); peak RSS %lld KiB\n",
                        static_cast<long long>(received), static_cast<long long>(mib), secs, received / secs / 1e6, received / secs / (1 << 20),
                        static_cast<long long>(peakRssKiB()));
            std::fflush(stdout);
            registry.shutdown();
        }
    });
    QObject::connect(&registry, &SessionRegistry::shutdownComplete, &app, &QCoreApplication::quit);
    QTimer::singleShot(120000, &app, [&] {
        std::fprintf(stderr, "bench_ws: timed out after 120 s (%lld bytes)\n", static_cast<long long>(received));
        app.exit(1);
    });
    ws.open(req);
    return app.exec();
}
