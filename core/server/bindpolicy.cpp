// SPDX-License-Identifier: GPL-2.0-or-later
#include "bindpolicy.h"

#include "loopback.h"

namespace Tether::BindPolicy {

bool isLoopback(const QString &bind)
{
    // Empty is the default bind, 127.0.0.1 (ServeOptions).
    return bind.trimmed().isEmpty() || isLoopbackHost(bind);
}

Decision decide(const QString &bind, bool tls, bool insecureBind)
{
    if (isLoopback(bind))
        return Decision::Loopback;
    if (tls)
        return Decision::Tls;
    return insecureBind ? Decision::Insecure : Decision::Refused;
}

QString refusal(const QString &bind, quint16 port)
{
    const QString p = QString::number(port ? port : 7420);
    return QStringLiteral(
               "refusing to listen on %1 without TLS: the access key and every keystroke would cross the "
               "network in clear text.\n"
               "  Serve HTTPS: make a certificate (e.g. self-signed for the name clients use):\n"
               "    openssl req -x509 -newkey rsa:3072 -sha256 -days 365 -nodes -keyout tether-key.pem "
               "-out tether-cert.pem -subj /CN=$(hostname) -addext subjectAltName=DNS:$(hostname)\n"
               "  then add --tls-cert tether-cert.pem --tls-key tether-key.pem (clients: --cacert tether-cert.pem).\n"
               "  Or keep the loopback bind and tunnel over SSH from the other machine:\n"
               "    ssh -L %2:127.0.0.1:%2 THIS-HOST\n"
               "  Or, only on a network you trust, add --insecure-bind.")
        .arg(bind.trimmed(), p);
}

QString insecureWarning(const QString &bind)
{
    return QStringLiteral("warning: serving %1 without TLS (--insecure-bind): anyone on the network path can read "
                          "the access key and take over every session; use --tls-cert/--tls-key or an SSH tunnel "
                          "unless you trust this network")
        .arg(bind.trimmed());
}

} // namespace Tether::BindPolicy
