// SPDX-License-Identifier: GPL-2.0-or-later
// PTY throughput: `cat` of a text file through PtyProcess, event loop only, no
// viewers. Usage: bench_pty [megabytes=64]. Reference, measured on the development machine:
// raw forkpty + cat with 64 KiB reads does about 40-60 MB/s;
// ttyd 1.7.7 about 12 MB/s.
#include "ptyprocess.h"

#include <QCoreApplication>
#include <QElapsedTimer>
#include <QFile>
#include <QTemporaryDir>
#include <QTimer>

#include <cstdio>
#include <cstdlib>

using namespace Tether;

namespace {

struct Result {
    qint64 bytes = 0;
    qint64 chunks = 0;
    double seconds = 0;
    bool ok = false;
};

Result run(const QStringList &argv)
{
    PtyProcess p;
    Result r;
    QElapsedTimer t;
    QEventLoop loop;
    QObject::connect(&p, &PtyProcess::outputReady, &p, [&r](const char *, qsizetype n) {
        r.bytes += n;
        ++r.chunks;
    });
    QObject::connect(&p, &PtyProcess::finished, &p, [&](const ExitStatus &s) {
        r.seconds = t.nsecsElapsed() / 1e9;
        r.ok = !s.signaled && s.code == 0;
        loop.quit();
    });
    SpawnOptions o;
    o.argv = argv;
    QString err;
    t.start();
    if (!p.start(o, &err)) {
        std::fprintf(stderr, "start failed: %s\n", qPrintable(err));
        return r;
    }
    QTimer::singleShot(120000, &loop, &QEventLoop::quit);
    loop.exec();
    return r;
}

void print(const char *label, qint64 fileBytes, const Result &r)
{
    if (!r.ok || r.seconds <= 0) {
        std::printf("%-28s failed\n", label);
        return;
    }
    std::printf("%-28s %7.1f MB/s of file data (%lld bytes received in %.3f s, %lld chunks, avg %lld B)\n",
                label, fileBytes / 1e6 / r.seconds, r.bytes, r.seconds, r.chunks,
                r.chunks ? r.bytes / r.chunks : 0);
}

} // namespace

int main(int argc, char **argv)
{
    QCoreApplication app(argc, argv);
    const int megabytes = argc > 1 ? std::atoi(argv[1]) : 64;
    QTemporaryDir dir;
    const QString path = dir.filePath(QStringLiteral("data.txt"));
    {
        QFile f(path);
        if (!f.open(QIODevice::WriteOnly))
            return 1;
        // 80-column text lines, like a build log.
        QByteArray line(79, 'x');
        for (int i = 0; i < 79; ++i)
            line[i] = char('!' + (i * 7) % 90);
        line += '\n';
        QByteArray block;
        while (block.size() < 1024 * 1024)
            block += line;
        block.truncate(1024 * 1024);
        for (int i = 0; i < megabytes; ++i)
            f.write(block);
    }
    const qint64 fileBytes = qint64(megabytes) * 1024 * 1024;
    std::printf("bench_pty: %d MiB text file through PtyProcess (kReadChunk %lld)\n", megabytes,
                qint64(kReadChunk));
    print("cat (cooked, ONLCR)", fileBytes, run({QStringLiteral("cat"), path}));
    print("cat (stty -opost)", fileBytes,
          run({QStringLiteral("/bin/sh"), QStringLiteral("-c"),
               QStringLiteral("stty -opost; exec cat '%1'").arg(path)}));
    return 0;
}
