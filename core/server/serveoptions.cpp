// SPDX-License-Identifier: GPL-2.0-or-later
#include "serveoptions.h"

#include "bytesize.h"
#include "hostconfig.h"
#include "ringbuffer.h"
#include "shellwords.h"

#include <QCommandLineParser>

#include <cstdio>

namespace Tether {

namespace {

const QString kBind = QStringLiteral("bind");
const QString kPort = QStringLiteral("port");
const QString kTtl = QStringLiteral("ttl");
const QString kExitedTtl = QStringLiteral("exited-ttl");
const QString kBufferSize = QStringLiteral("buffer-size");
const QString kMaxSessions = QStringLiteral("max-sessions");
const QString kCommand = QStringLiteral("command");
const QString kTlsCert = QStringLiteral("tls-cert");
const QString kTlsKey = QStringLiteral("tls-key");
const QString kAllowHost = QStringLiteral("allow-host");
const QString kInsecureBind = QStringLiteral("insecure-bind");

/// The value of option `name` as an int in lo..hi; false with *error otherwise.
bool readInt(const QCommandLineParser &parser, const QString &name, int lo, int hi, const QString &what, int *out,
             QString *error)
{
    const QString text = parser.value(name);
    bool ok = false;
    const int v = text.toInt(&ok);
    if (!ok || v < lo || v > hi) {
        *error = QStringLiteral("--%1 must be %2, not \"%3\"").arg(name, what, text);
        return false;
    }
    *out = v;
    return true;
}

} // namespace

void ServeOptions::addTo(QCommandLineParser &parser, const HostConfig &defaults)
{
    parser.addOptions({
        {kBind,
         QStringLiteral("Address to listen on (default %1). Anything but loopback exposes your shells to the network.")
             .arg(defaults.bind),
         QStringLiteral("ADDR")},
        {kPort, QStringLiteral("TCP port (default %1; 0 picks a free port).").arg(defaults.port), QStringLiteral("N")},
        {kTtl,
         QStringLiteral("Seconds a detached session whose program still runs is kept (default %1; 0 = until "
                        "killed).")
             .arg(defaults.limits.ttlSeconds),
         QStringLiteral("SECONDS")},
        {kExitedTtl,
         QStringLiteral("Seconds a session whose program exited is kept, so its output can be read "
                        "(default %1; 0 = until killed).")
             .arg(defaults.limits.exitedTtlSeconds),
         QStringLiteral("SECONDS")},
        {kBufferSize,
         QStringLiteral("Output kept per session for replay, bytes; K/M suffixes allowed, units of 1024 "
                        "(default %1, range 64K..64M).")
             .arg(defaults.limits.bufferCapacity),
         QStringLiteral("BYTES")},
        {kMaxSessions,
         QStringLiteral("Live sessions at most, 1..%1 (the kernel's limit on pseudo-terminals, "
                        "/proc/sys/kernel/pty/max) (default %2). When full, a new session ends the exited "
                        "session detached longest; a running session is never ended: with none exited, it is "
                        "refused.")
             .arg(SessionConfig::maxSessionsLimit())
             .arg(defaults.limits.maxSessions),
         QStringLiteral("N")},
        {kCommand,
         QStringLiteral("Command line for new sessions, split into words as a shell would (quotes, no "
                        "expansion) (default: %1).")
             .arg(defaults.command.isEmpty() ? QStringLiteral("your login shell") : defaults.command),
         QStringLiteral("CMD")},
        {kTlsCert,
         QStringLiteral("Serve HTTPS and wss:// with this PEM certificate (chain, leaf first); needs --tls-key. "
                        "Reloaded on SIGHUP and when the file changes%1.")
             .arg(defaults.tlsCert.isEmpty() ? QString() : QStringLiteral(" (default %1)").arg(defaults.tlsCert)),
         QStringLiteral("FILE")},
        {kTlsKey,
         QStringLiteral("The PEM private key of --tls-cert (RSA or EC, not encrypted)%1.")
             .arg(defaults.tlsKey.isEmpty() ? QString() : QStringLiteral(" (default %1)").arg(defaults.tlsKey)),
         QStringLiteral("FILE")},
        {kAllowHost,
         QStringLiteral("Also accept this name in the Host and Origin checks (repeatable; NAME, *.DOMAIN, or "
                        "NAME:PORT behind a reverse proxy). A certificate's DNS names are accepted anyway%1.")
             .arg(defaults.allowHosts.isEmpty() ? QString()
                                                : QStringLiteral(" (default %1)").arg(defaults.allowHosts.join(QLatin1Char(',')))),
         QStringLiteral("NAME")},
        {kInsecureBind,
         QStringLiteral("Allow a non-loopback --bind without TLS, for a network you trust (a warning is printed "
                        "at every start). Without it such a bind is refused.")},
    });
}

bool ServeOptions::read(const QCommandLineParser &parser, HostConfig *config, QString *error)
{
    if (parser.isSet(kBind))
        config->bind = parser.value(kBind);
    int n = 0;
    if (parser.isSet(kPort)) {
        if (!readInt(parser, kPort, 0, 65535, QStringLiteral("0..65535"), &n, error))
            return false;
        config->port = quint16(n);
    }
    if (parser.isSet(kTtl)) {
        if (!readInt(parser, kTtl, 0, SessionConfig::kMaxTtlSeconds,
                     QStringLiteral("0..%1 seconds").arg(SessionConfig::kMaxTtlSeconds), &n, error))
            return false;
        config->limits.ttlSeconds = n;
    }
    if (parser.isSet(kExitedTtl)) {
        if (!readInt(parser, kExitedTtl, 0, SessionConfig::kMaxTtlSeconds,
                     QStringLiteral("0..%1 seconds").arg(SessionConfig::kMaxTtlSeconds), &n, error))
            return false;
        config->limits.exitedTtlSeconds = n;
    }
    if (parser.isSet(kBufferSize)) {
        const QString text = parser.value(kBufferSize);
        QString why;
        const std::optional<qint64> bytes = parseByteSize(text, &why);
        if (!bytes) {
            *error = QStringLiteral("--buffer-size: %1").arg(why);
            return false;
        }
        if (*bytes < RingBuffer::kMinCapacity || *bytes > RingBuffer::kMaxCapacity) {
            *error = QStringLiteral("--buffer-size must be 64K..64M bytes, not \"%1\"").arg(text);
            return false;
        }
        config->limits.bufferCapacity = qsizetype(*bytes);
    }
    if (parser.isSet(kMaxSessions)) {
        const int most = SessionConfig::maxSessionsLimit();
        if (!readInt(parser, kMaxSessions, 1, most,
                     QStringLiteral("1..%1 (the kernel allows %1 pseudo-terminals, %2)").arg(most).arg(QLatin1String(SessionConfig::kPtyMaxFile)),
                     &n, error))
            return false;
        config->limits.maxSessions = n;
    }
    if (parser.isSet(kCommand)) {
        QString why;
        if (!ShellWords::split(parser.value(kCommand), &why)) {
            *error = QStringLiteral("--command: %1 in \"%2\"").arg(why, parser.value(kCommand));
            return false;
        }
        config->command = parser.value(kCommand);
    }
    if (parser.isSet(kTlsCert))
        config->tlsCert = parser.value(kTlsCert);
    if (parser.isSet(kTlsKey))
        config->tlsKey = parser.value(kTlsKey);
    if (parser.isSet(kAllowHost)) {
        config->allowHosts.clear(); // given on the command line: replaces the setting
        for (const QString &name : parser.values(kAllowHost)) {
            const QString n = name.trimmed();
            if (n.isEmpty() || n.contains(QLatin1Char('/')) || n.contains(QLatin1Char(' '))) {
                *error = QStringLiteral("--allow-host must be a host name (NAME, *.DOMAIN or NAME:PORT), not \"%1\"").arg(name);
                return false;
            }
            config->allowHosts.append(n);
        }
    }
    config->insecureBind = parser.isSet(kInsecureBind);
    return true;
}

int ServeOptions::usageError(const QString &program, const QString &message)
{
    std::fprintf(stderr, "%s: %s\n(see %s --help)\n", qPrintable(program), qPrintable(message), qPrintable(program));
    return kUsageError;
}

} // namespace Tether
