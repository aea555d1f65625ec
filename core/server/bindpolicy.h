// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <QString>

namespace Tether {

/**
 * Whether the server may listen on an address, and what it says about it
 * (issue 10, "Remote use, safely").
 *
 * Tether serves shells: anyone who reads the access key or the cookie on the
 * wire owns the user's account. Off loopback the key must therefore travel
 * encrypted, so a non-loopback bind needs TLS (`--tls-cert`, `--tls-key`),
 * as zellij's web server requires; `--insecure-bind` is the explicit way
 * out for a network the user trusts, and is warned about at every start.
 * An SSH tunnel (`ssh -L`) to a loopback bind is the other safe way.
 */
namespace BindPolicy {

enum class Decision {
    Loopback,  ///< 127.0.0.0/8, ::1, "localhost" (or empty: the default)
    Tls,       ///< off loopback, with TLS
    Insecure,  ///< off loopback, plain HTTP, allowed by --insecure-bind: warn
    Refused,   ///< off loopback, plain HTTP, not allowed
};

/// True for the empty bind (the default, 127.0.0.1) and what isLoopbackHost()
/// (loopback.h) calls loopback. A wildcard ("0.0.0.0", "::") and any other
/// address or name is not loopback.
bool isLoopback(const QString &bind);

/// The decision for listening on `bind`.
Decision decide(const QString &bind, bool tls, bool insecureBind);

/// Why a Refused bind is refused, and the two ways out: a certificate
/// (`openssl req -x509 ...` with the name, then `--tls-cert`/`--tls-key`)
/// or an SSH tunnel (`ssh -L PORT:127.0.0.1:PORT`), or `--insecure-bind`.
/// `port` 0 is shown as 7420.
QString refusal(const QString &bind, quint16 port);

/// The warning an Insecure bind prints at every start.
QString insecureWarning(const QString &bind);

} // namespace BindPolicy

} // namespace Tether
