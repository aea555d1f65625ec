// SPDX-License-Identifier: GPL-2.0-or-later
// The server-side screen's cost (issue 9), each figure a ratio measured in
// the same run so that other load on the machine cancels out:
//  - throughput: `cat` of a text file and a `seq` flood through PTY -> ring
//    -> WebSocket to a control viewer, the screen on and off alternately
//    (sessions/screen, Session::setScreenEnabled), several pairs; the
//    process's CPU (getrusage) per MB with and without it;
//  - reattach: time and bytes from opening the WebSocket to the last replay
//    byte for a full 1 MiB ring, `replay=raw` vs `replay=screen&lines=200`;
//  - memory: N sessions at 200x50 that printed > 1 MiB each, screen on vs
//    off: RSS delta per session and Session::screenBytes().
// Prints one `figure:` line per result (bench/run.sh collects them).
//
// Usage: bench_screen [MiB=64] [pairs=3] [sessions=20]; BENCH_SEQ=N: seq 1 N (2000000);
// BENCH_ECHO_ROUNDS=N: only the keystroke echo, N rounds (e.g. bench_screen 1)
#include "benchdata.h"
#include "hostconfig.h"
#include "registry.h"
#include "server.h"
#include "session.h"

#include <QCoreApplication>
#include <QElapsedTimer>
#include <QEventLoop>
#include <QFile>
#include <QJsonDocument>
#include <QJsonObject>
#include <QNetworkRequest>
#include <QTemporaryFile>
#include <QTimer>
#include <QWebSocket>
#include <algorithm>
#include <cstdio>
#include <malloc.h>
#include <sys/resource.h>
#include <vector>

using namespace Tether;

namespace {

double cpuSeconds()
{
    rusage u {};
    getrusage(RUSAGE_SELF, &u);
    return u.ru_utime.tv_sec + u.ru_stime.tv_sec + (u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

qint64 rssKiB()
{
    QFile f(QStringLiteral("/proc/self/status"));
    if (!f.open(QIODevice::ReadOnly))
        return -1;
    for (const QByteArray &line : f.readAll().split('\n'))
        if (line.startsWith("VmRSS:"))
            return line.mid(6).trimmed().split(' ').value(0).toLongLong();
    return -1;
}

double median(std::vector<double> v)
{
    std::sort(v.begin(), v.end());
    const size_t n = v.size();
    return n == 0 ? 0 : (n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2);
}

struct Bench {
    SessionRegistry *registry;
    Server *server;

    QUrl url(Session *s, const QString &query = QString()) const
    {
        QUrl u(QStringLiteral("ws://127.0.0.1:%1/ws/%2").arg(server->port()).arg(s->id()));
        if (!query.isEmpty())
            u.setQuery(query);
        return u;
    }
    QNetworkRequest request(const QUrl &u) const
    {
        QNetworkRequest req(u);
        req.setRawHeader("Authorization", "Bearer " + server->accessKey().toLatin1());
        return req;
    }

    struct Run {
        qint64 bytes = 0;
        double secs = 0;
        double cpu = 0;
        bool screen = false;
        quint64 outruns = 0;
    };

    /// Runs `command` (after the viewer's first byte) in a new session with
    /// the screen on or off; a control viewer receives everything.
    Run stream(const QString &command, bool screen)
    {
        // The viewer's byte starts the command once the PTY is raw and
        // silent (the marker R says so): a byte sent earlier would be echoed.
        SpawnOptions options;
        options.argv = QStringList{QStringLiteral("/bin/sh"), QStringLiteral("-c"),
                                   QStringLiteral("stty raw -echo; printf R; head -c 1 >/dev/null; exec ") + command};
        Session *s = registry->create(options);
        Run r;
        if (!s)
            return r;
        s->setScreenEnabled(screen);
        QWebSocket ws;
        QEventLoop loop;
        QElapsedTimer clock;
        double cpu0 = 0;
        bool started = false;
        QObject::connect(&ws, &QWebSocket::binaryMessageReceived, [&](const QByteArray &b) {
            if (started) {
                r.bytes += b.size();
            } else if (b.endsWith('R')) {
                started = true;
                cpu0 = cpuSeconds();
                clock.start();
                ws.sendBinaryMessage(QByteArray("g"));
            }
        });
        QObject::connect(&ws, &QWebSocket::textMessageReceived, [&](const QString &text) {
            const QString type = QJsonDocument::fromJson(text.toUtf8()).object().value(QStringLiteral("type")).toString();
            if (type == QLatin1String("exit")) {
                r.secs = clock.nsecsElapsed() / 1e9;
                r.cpu = cpuSeconds() - cpu0;
                loop.quit();
            }
        });
        QTimer::singleShot(180000, &loop, &QEventLoop::quit);
        ws.open(request(url(s)));
        loop.exec();
        r.screen = s->hasScreen();
        r.outruns = s->screenOutruns();
        ws.close();
        registry->kill(s->id());
        QEventLoop settle;
        QTimer::singleShot(200, &settle, &QEventLoop::quit);
        settle.exec();
        return r;
    }

    /// Keystroke echo: a control viewer sends one byte at a time to `cat`
    /// on a raw PTY (it echoes each byte back) and times each echo, from
    /// the send to the byte's arrival; returns the latencies in µs.
    /// `prefill`: a file printed first, so that the session has a screen
    /// (made once the ring is half full) which parses every echo; without
    /// it the screen is never made and "on" measures only the rate meter.
    std::vector<double> echo(bool screen, int keys, const QString &prefill = QString(), double *cpuPerKeyUs = nullptr)
    {
        SpawnOptions options;
        const QString first = prefill.isEmpty() ? QString() : QStringLiteral("cat '%1'; ").arg(prefill);
        options.argv = QStringList{QStringLiteral("/bin/sh"), QStringLiteral("-c"),
                                   QStringLiteral("stty raw -echo; %1printf R; exec cat").arg(first)};
        Session *s = registry->create(options);
        std::vector<double> us;
        if (!s)
            return us;
        s->setScreenEnabled(screen);
        QWebSocket ws;
        QEventLoop loop;
        QElapsedTimer clock;
        int sent = 0;
        bool ready = false;
        double cpu0 = 0;
        auto next = [&] {
            if (sent == 0)
                cpu0 = cpuSeconds();
            if (sent == keys) {
                if (cpuPerKeyUs)
                    *cpuPerKeyUs = (cpuSeconds() - cpu0) / keys * 1e6;
                loop.quit();
                return;
            }
            ++sent;
            clock.start();
            ws.sendBinaryMessage(QByteArray(1, char('a' + sent % 26)));
        };
        QObject::connect(&ws, &QWebSocket::binaryMessageReceived, [&](const QByteArray &b) {
            if (!ready) {
                if (b.endsWith('R')) { // cat runs with the PTY raw
                    ready = true;
                    // The screen (if any) parsed up to here first.
                    QTimer::singleShot(prefill.isEmpty() ? 0 : 300, next);
                }
                return;
            }
            us.push_back(clock.nsecsElapsed() / 1e3);
            next();
        });
        QTimer::singleShot(60000, &loop, &QEventLoop::quit);
        ws.open(request(url(s)));
        loop.exec();
        ws.close();
        if (!prefill.isEmpty() && screen && !s->hasScreen())
            us.clear(); // not what was asked for
        registry->kill(s->id());
        QEventLoop settle;
        QTimer::singleShot(200, &settle, &QEventLoop::quit);
        settle.exec();
        return us;
    }

    struct Attach {
        double ms = 0;
        qint64 bytes = 0;
        bool screenReplay = false;
    };

    /// Opens a watch viewer on `s` and times it to the last replay byte.
    Attach attach(Session *s, const QString &query)
    {
        QWebSocket ws;
        QEventLoop loop;
        QElapsedTimer clock;
        Attach a;
        qint64 pending = -1;
        auto done = [&] {
            if (pending >= 0 && a.bytes >= pending) {
                a.ms = clock.nsecsElapsed() / 1e6;
                loop.quit();
            }
        };
        QObject::connect(&ws, &QWebSocket::binaryMessageReceived, [&](const QByteArray &b) {
            a.bytes += b.size();
            done();
        });
        QObject::connect(&ws, &QWebSocket::textMessageReceived, [&](const QString &text) {
            const QJsonObject m = QJsonDocument::fromJson(text.toUtf8()).object();
            if (m.value(QStringLiteral("type")).toString() != QLatin1String("attached"))
                return;
            pending = qint64(m.value(QStringLiteral("prelude_bytes")).toDouble() + m.value(QStringLiteral("replay_bytes")).toDouble()
                             + m.value(QStringLiteral("snapshot_bytes")).toDouble());
            a.screenReplay = m.value(QStringLiteral("replay_mode")).toString() == QLatin1String("screen");
            done();
        });
        QTimer::singleShot(30000, &loop, &QEventLoop::quit);
        clock.start();
        ws.open(request(url(s, query)));
        loop.exec();
        ws.close();
        return a;
    }
};

/// Coloured text of about `bytes`: what a build log or `ls --color` prints.
QByteArray colouredText(qint64 bytes)
{
    QByteArray out;
    for (int i = 0; out.size() < bytes; ++i)
        out += "\033[1;3" + QByteArray::number(i % 7 + 1) + "mline " + QByteArray::number(i)
            + "\033[0m the \033[4mquick\033[0m brown fox \033[38;5;" + QByteArray::number(i % 256) + "mjumps\033[0m over the lazy dog\r\n";
    return out;
}

void wait(int ms)
{
    QEventLoop l;
    QTimer::singleShot(ms, &l, &QEventLoop::quit);
    l.exec();
}

} // namespace

int main(int argc, char **argv)
{
    QCoreApplication app(argc, argv);
    const qint64 mib = argc > 1 ? QByteArray(argv[1]).toLongLong() : 64;
    const int pairs = argc > 2 ? QByteArray(argv[2]).toInt() : 3;
    const int nSessions = argc > 3 ? QByteArray(argv[3]).toInt() : 20;

    QTemporaryFile data;
    if (!data.open())
        return 1;
    if (!BenchData::writeTextLines(data, mib))
        return 1;
    QTemporaryFile colours;
    if (!colours.open())
        return 1;
    colours.write(colouredText(1536 * 1024));
    colours.flush();

    HostConfig config;
    config.port = 0;
    SessionRegistry registry(config.limits);
    Server server(&registry, config);
    QString error;
    if (!server.listen(&error)) {
        std::fprintf(stderr, "listen: %s\n", qPrintable(error));
        return 1;
    }
    Bench b{&registry, &server};

    // Keystroke echo, screen off and on, alternating (the order flips every
    // round), without and with a screen made first (prefill): p50 and p99
    // per round, then their medians. BENCH_ECHO_ROUNDS=N runs only this.
    const auto echoRounds = [&](int rounds) {
        for (const bool prefilled : {false, true}) {
            std::vector<double> p50[2], p99[2], cpu[2];
            for (int r = 0; r < rounds; ++r) {
                for (int i = 0; i < 2; ++i) {
                    const bool screen = (r % 2) ? i == 0 : i == 1;
                    double cpuUs = 0;
                    std::vector<double> us = b.echo(screen, 500, prefilled ? colours.fileName() : QString(), &cpuUs);
                    if (us.empty())
                        return false;
                    std::sort(us.begin(), us.end());
                    p50[screen].push_back(us[us.size() / 2]);
                    p99[screen].push_back(us[us.size() * 99 / 100]);
                    cpu[screen].push_back(cpuUs);
                    std::printf("bench_screen: echo round %d, %s, screen %s: p50 %.0f us, p99 %.0f us, max %.0f us, "
                                "process CPU %.1f us a key\n", r,
                                prefilled ? "screen made first" : "no screen made", screen ? "on" : "off", us[us.size() / 2],
                                us[us.size() * 99 / 100], us.back(), cpuUs);
                    std::fflush(stdout);
                }
            }
            std::printf("figure: keystroke echo (cat on a raw PTY) through the WebSocket, %s, medians over %d rounds of 500 keys: "
                        "screen on p50 %.0f us, p99 %.0f us, CPU %.1f us a key; off p50 %.0f us, p99 %.0f us, CPU %.1f us a key\n",
                        prefilled ? "1.5 MiB printed first (the session has a screen)" : "no output before (no screen is made)",
                        rounds, median(p50[1]), median(p99[1]), median(cpu[1]), median(p50[0]), median(p99[0]), median(cpu[0]));
            std::fflush(stdout);
        }
        return true;
    };
    if (qEnvironmentVariableIntValue("BENCH_ECHO_ROUNDS") > 0)
        return echoRounds(qEnvironmentVariableIntValue("BENCH_ECHO_ROUNDS")) ? 0 : 1;

    // --- throughput, on/off alternating (the order flips every pair) -------
    struct Workload {
        const char *name;
        QString command;
    };
    const Workload workloads[] = {
        {"cat", QStringLiteral("cat '%1'").arg(data.fileName())},
        {"seq", QStringLiteral("seq 1 %1").arg(qEnvironmentVariableIntValue("BENCH_SEQ") > 0 ? qEnvironmentVariableIntValue("BENCH_SEQ") : 2000000)},
    };
    for (const Workload &w : workloads) {
        std::vector<double> ratios, onMBs, offMBs, onCpu, offCpu;
        bool sawScreen = false;
        quint64 outruns = 0;
        for (int p = 0; p < pairs; ++p) {
            Bench::Run on, off;
            if (p % 2) {
                on = b.stream(w.command, true);
                off = b.stream(w.command, false);
            } else {
                off = b.stream(w.command, false);
                on = b.stream(w.command, true);
            }
            // Completeness: every byte produced arrives (cat: the file's size).
            const bool complete = on.bytes == off.bytes && (qstrcmp(w.name, "cat") != 0 || on.bytes == (mib << 20));
            if (on.secs <= 0 || off.secs <= 0 || !complete) {
                std::fprintf(stderr, "bench_screen: %s run %d incomplete (on %lld B, off %lld B)\n", w.name, p,
                             static_cast<long long>(on.bytes), static_cast<long long>(off.bytes));
                return 1;
            }
            sawScreen |= on.screen;
            outruns += on.outruns;
            const double mbOn = on.bytes / on.secs / 1e6, mbOff = off.bytes / off.secs / 1e6;
            onMBs.push_back(mbOn);
            offMBs.push_back(mbOff);
            ratios.push_back(mbOn / mbOff);
            onCpu.push_back(on.cpu / (on.bytes / 1e6) * 1e3);
            offCpu.push_back(off.cpu / (off.bytes / 1e6) * 1e3);
            std::printf("bench_screen: %s pair %d: %lld bytes, screen on %.1f MB/s, off %.1f MB/s, ratio %.3f\n", w.name, p,
                        static_cast<long long>(on.bytes), mbOn, mbOff, mbOn / mbOff);
            std::fflush(stdout);
        }
        std::printf("figure: throughput %s on/off ratio median %.3f (min %.3f, max %.3f) over %d pairs; "
                    "MB/s on %.1f, off %.1f (medians); screen made: %s, outruns %llu\n",
                    w.name, median(ratios), *std::min_element(ratios.begin(), ratios.end()),
                    *std::max_element(ratios.begin(), ratios.end()), pairs, median(onMBs), median(offMBs),
                    sawScreen ? "yes" : "no", static_cast<unsigned long long>(outruns));
        std::printf("figure: process CPU %s (server + client) ms/MB median: screen on %.2f, off %.2f\n", w.name,
                    median(onCpu), median(offCpu));
        std::fflush(stdout);
    }

    // --- keystroke echo latency through the WebSocket, screen off and on ---
    if (!echoRounds(3))
        return 1;

    // --- reattach to a full 1 MiB ring: raw vs replay=screen&lines=200 -----
    {
        SpawnOptions options;
        options.cols = 200;
        options.rows = 50;
        options.argv = QStringList{QStringLiteral("/bin/sh"), QStringLiteral("-c"),
                                   QStringLiteral("cat '%1'; exec sleep 600").arg(colours.fileName())};
        Session *s = registry.create(options);
        if (!s)
            return 1;
        QElapsedTimer t;
        t.start();
        while (t.elapsed() < 60000 && !(s->offset() >= quint64(colours.size()) && s->screenSynced() && s->screenOffset() == s->offset()))
            wait(20);
        std::vector<double> rawMs, scrMs;
        qint64 rawBytes = 0, scrBytes = 0;
        bool scr = true;
        for (int i = 0; i < 7; ++i) {
            const Bench::Attach raw = b.attach(s, QStringLiteral("mode=watch&replay=raw"));
            const Bench::Attach sc = b.attach(s, QStringLiteral("mode=watch&replay=screen&lines=200"));
            rawMs.push_back(raw.ms);
            scrMs.push_back(sc.ms);
            rawBytes = raw.bytes;
            scrBytes = sc.bytes;
            scr &= sc.screenReplay;
        }
        std::printf("figure: reattach full %lld KiB ring (ring start %llu): replay=raw %.2f ms (min %.2f, max %.2f), %lld bytes; "
                    "replay=screen&lines=200 %.2f ms (min %.2f, max %.2f), %lld bytes (screen replay: %s); time ratio %.3f, bytes ratio %.4f\n",
                    static_cast<long long>(s->buffer().capacity() / 1024), static_cast<unsigned long long>(s->buffer().startOffset()),
                    median(rawMs), *std::min_element(rawMs.begin(), rawMs.end()), *std::max_element(rawMs.begin(), rawMs.end()),
                    static_cast<long long>(rawBytes), median(scrMs), *std::min_element(scrMs.begin(), scrMs.end()),
                    *std::max_element(scrMs.begin(), scrMs.end()), static_cast<long long>(scrBytes), scr ? "yes" : "no",
                    median(scrMs) / median(rawMs), double(scrBytes) / double(rawBytes));
        std::fflush(stdout);
        registry.kill(s->id());
        wait(300);
    }

    // --- memory per session: N sessions at 200x50 with > 1 MiB of output ----
    for (bool screen : {false, true}) {
        wait(300);
        malloc_trim(0); // what earlier phases freed is not counted as reused
        const qint64 before = rssKiB();
        std::vector<Session *> sessions;
        for (int i = 0; i < nSessions; ++i) {
            SpawnOptions options;
            options.cols = 200;
            options.rows = 50;
            options.argv = QStringList{QStringLiteral("/bin/sh"), QStringLiteral("-c"),
                                       QStringLiteral("cat '%1'; exec sleep 600").arg(colours.fileName())};
            Session *s = registry.create(options);
            if (!s)
                return 1;
            s->setScreenEnabled(screen);
            sessions.push_back(s);
        }
        QElapsedTimer t;
        t.start();
        auto settled = [&] {
            for (Session *s : sessions)
                if (s->offset() < quint64(colours.size()) || (screen && s->screenOffset() != s->offset()))
                    return false;
            return true;
        };
        while (t.elapsed() < 120000 && !settled())
            wait(50);
        wait(200);
        const qint64 after = rssKiB();
        double screenBytes = 0;
        for (Session *s : sessions)
            screenBytes += s->screenBytes();
        std::printf("figure: memory %d sessions 200x50, %lld KiB output each, screen %s: RSS delta %.1f KiB/session, "
                    "screen_bytes %.1f KiB/session\n",
                    nSessions, static_cast<long long>(colours.size() / 1024), screen ? "on" : "off",
                    double(after - before) / nSessions, screenBytes / nSessions / 1024);
        std::fflush(stdout);
        for (Session *s : sessions)
            registry.kill(s->id());
        wait(500);
    }

    QObject::connect(&registry, &SessionRegistry::shutdownComplete, &app, &QCoreApplication::quit);
    registry.shutdown();
    return app.exec();
}
