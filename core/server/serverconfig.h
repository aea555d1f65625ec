// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <QString>
#include <QStringList>

class QSettings;

namespace Tether {

/**
 * The server's part of the host's settings (the `server/` group of the
 * settings file), used by Server only: where it listens and how. The
 * sessions' part is SessionConfig (engine); HostConfig holds both.
 *
 * Keys: server/bind (address), server/port (0..65535; 0 = any free port),
 * server/pingInterval and server/pingTimeout (seconds, 1..3600),
 * server/tlsCert and server/tlsKey (PEM files: HTTPS and wss:// on the
 * port), server/allowHosts (names accepted by the Host and Origin checks).
 * Out-of-range values read from the file are clamped and logged.
 */
struct ServerConfig {
    static constexpr quint16 kDefaultPort = 7420;

    QString bind = QStringLiteral("127.0.0.1");
    quint16 port = kDefaultPort;
    int pingIntervalSec = 20;  ///< WebSocket ping interval, seconds
    int pingTimeoutSec = 60;   ///< drop a viewer silent this long, seconds
    /// Where the server keeps its access key (Server, loadOrCreateAccessKey):
    /// "access-key" beside the settings file when loaded from settings
    /// (~/.config/Tether/access-key); empty = a new key at every start.
    QString accessKeyFile;
    /// server/tlsCert, server/tlsKey: PEM certificate (chain, leaf first) and
    /// private key; both set = serve HTTPS and wss:// only (TlsContext).
    QString tlsCert;
    QString tlsKey;
    /// server/allowHosts: extra names (NAME, or NAME:PORT for a reverse
    /// proxy) the Host and Origin checks accept (docs/protocol.md section 2).
    QStringList allowHosts;
    /// --insecure-bind (command line only, never from the settings file): a
    /// non-loopback bind without TLS is allowed, with a warning at every
    /// start (BindPolicy).
    bool insecureBind = false;

    /// Both TLS files are set.
    bool tlsEnabled() const { return !tlsCert.isEmpty() && !tlsKey.isEmpty(); }

    /// Reads the server/ keys (missing keys keep the defaults) and sets
    /// accessKeyFile beside the settings' file (when it has one).
    static ServerConfig load(QSettings &settings);
    /// Writes server/bind, server/port, server/pingInterval and
    /// server/pingTimeout. server/tlsCert, server/tlsKey and server/allowHosts
    /// are read, never written: the Settings dialog does not edit them, and
    /// a command-line --tls-cert must not end up in the file.
    void save(QSettings &settings) const;
};

} // namespace Tether
