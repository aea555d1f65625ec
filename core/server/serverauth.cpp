// SPDX-License-Identifier: GPL-2.0-or-later
// Server's gate: the Host, Origin and key checks every request and every
// WebSocket upgrade passes before anything else (docs/protocol.md sections
// 2 and 3; DNS rebinding, cross-site WebSocket hijacking). Separate so that
// what decides who gets in can be read, and reviewed, as one piece; what a
// read-only link grants is in servershares.cpp.
#include "server.h"
#include "accesskey.h"
#include "httpconnection.h"
#include "logging.h"
#include "repeatlimiter.h"
#include "serverutil.h"
#include "tlscontext.h"

namespace Tether {

bool Server::hostAllowed(const QByteArray &hostHeader, const QHostAddress &local, bool *viaAllowHost) const
{
    if (viaAllowHost)
        *viaAllowHost = false;
    const QByteArray host = hostHeader.trimmed().toLower();
    if (host.isEmpty())
        return false;
    // Only the characters of a name or IP literal with a port: no IPv6 zone
    // ids ("[::1%eth0]") or anything else; the validated Host is echoed into
    // the Content-Security-Policy header.
    for (const char ch : host)
        if (!((ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '.' || ch == '-' || ch == ':'
              || ch == '[' || ch == ']'))
            return false;
    QByteArray name;
    QByteArray portPart;
    bool hasPort = false;
    if (host.startsWith('[')) {
        const int close = host.indexOf(']');
        if (close < 0)
            return false;
        name = host.mid(1, close - 1);
        const QByteArray rest = host.mid(close + 1);
        if (!rest.isEmpty()) {
            if (!rest.startsWith(':'))
                return false;
            hasPort = true;
            portPart = rest.mid(1);
        }
    } else {
        const int colon = host.lastIndexOf(':');
        if (colon >= 0) {
            if (host.indexOf(':') != colon)
                return false; // unbracketed IPv6 is not a valid Host
            name = host.left(colon);
            hasPort = true;
            portPart = host.mid(colon + 1);
        } else {
            name = host;
        }
    }
    // Without a port the scheme's default is meant (RFC 9110 §7.2): 80, or
    // 443 under TLS.
    const quint16 defaultPort = m_tls ? 443 : 80;
    const bool ourPort = hasPort ? portPart == QByteArray::number(port()) : port() == defaultPort;
    if (ourPort && (name == "localhost" || hostIsAddressOfOurs(name, host.startsWith('['), local)))
        return true;
    // Names given with --allow-host (NAME, or NAME:PORT for a reverse proxy
    // that forwards another port here), and the certificate's DNS names:
    // the user vouches for them, so DNS rebinding to them is not an attack.
    for (const QString &entry : m_config.allowHosts) {
        const QByteArray e = entry.trimmed().toLower().toLatin1();
        const int colon = e.lastIndexOf(':');
        if (colon > 0 && !e.endsWith(']')) {
            const QByteArray entryPort = e.mid(colon + 1);
            const bool portMatches = hasPort ? portPart == entryPort : (entryPort == "80" || entryPort == "443");
            if (portMatches && nameMatches(e.left(colon), name)) {
                if (viaAllowHost)
                    *viaAllowHost = true;
                return true;
            }
        } else if (ourPort && nameMatches(e, name)) {
            if (viaAllowHost)
                *viaAllowHost = true;
            return true;
        }
    }
    if (ourPort && m_tls) {
        for (const QString &dns : m_tls->dnsNames())
            if (nameMatches(dns.toLatin1(), name))
                return true;
    }
    return false;
}

bool Server::hostIsAddressOfOurs(const QByteArray &name, bool bracketed, const QHostAddress &local) const
{
    const QHostAddress addr(QString::fromLatin1(name));
    if (addr.isNull())
        return false; // any other name: DNS rebinding
    // Only the forms of RFC 3986's IP-literal and IPv4address: an IPv6
    // address in brackets, or an IPv4 address as four decimal octets.
    // QHostAddress also reads inet_aton(3)'s shorthands ("127.1",
    // "2130706433", "0x7f000001"), which protocol.md never listed (issue 29).
    if (bracketed != (addr.protocol() == QAbstractSocket::IPv6Protocol))
        return false;
    if (!bracketed && addr.toString().toLatin1() != name)
        return false; // not the canonical dotted quad (no leading zeros either)
    // Compared as an address from here (protocol.md §2, "Host check"): an
    // IPv6 literal in any RFC 4291 §2.2 form, an IPv4-mapped one as the IPv4
    // address it maps ("[::ffff:7f00:1]" is 127.0.0.1). QHostAddress reads
    // the IPv4 part of a mapped address as a dotted quad only.
    const QHostAddress a = normalized(addr);
    if (a == QHostAddress(QHostAddress::LocalHost) || a == QHostAddress(QHostAddress::LocalHostIPv6))
        return true;
    const QHostAddress bind = normalized(listenAddress());
    if (!bind.isNull() && a == bind && bind != QHostAddress(QHostAddress::AnyIPv4)
        && bind != QHostAddress(QHostAddress::AnyIPv6) && bind != QHostAddress(QHostAddress::Any))
        return true;
    // The literal address the client connected to (relevant for a wildcard
    // bind): an IP literal cannot be rebound by DNS.
    return !local.isNull() && a == normalized(local);
}

bool Server::nameMatches(const QByteArray &pattern, const QByteArray &name)
{
    if (pattern.isEmpty() || name.isEmpty())
        return false;
    // "*.example.org": exactly one more label, as certificates mean it
    // (RFC 6125 §6.4.3), never the bare domain.
    if (pattern.startsWith("*.")) {
        const int dot = name.indexOf('.');
        return dot > 0 && name.mid(dot) == pattern.mid(1);
    }
    return pattern == name;
}

bool Server::authorized(const HttpConnection *c) const
{
    const QByteArray key = m_key.toLatin1();
    // Every tether_key cookie counts: cookies do not separate ports, so a
    // browser may hold one per path or a stale one from another server.
    const QList<QByteArray> cookies = c->request().cookies(kCookieName);
    for (const QByteArray &cookie : cookies)
        if (constantTimeEquals(cookie, key))
            return true;
    const QByteArray auth = c->request().header("authorization");
    if (auth.size() > 7 && auth.left(7).toLower() == "bearer ")
        return constantTimeEquals(auth.mid(7).trimmed(), key);
    return false;
}

bool Server::checkHostOriginAuth(HttpConnection *c, bool apiOrWs, QByteArray *hostOut)
{
    const HttpRequest &r = c->request();
    // In absolute-form the target's authority is the host (RFC 9112 §3.2.2):
    // it is what QWebSocketServer uses too, so that is what must pass. A Host
    // field is still required (RFC 9112 §3.2), as in origin-form.
    const QByteArray host = r.host().trimmed();
    bool viaAllowHost = false;
    if (!r.hasHeader("host") || !hostAllowed(host, c->socket()->localAddress(), &viaAllowHost)) {
        logLimited(lcServer(), QtInfoMsg, QStringLiteral("refused: Host not allowed"));
        c->respondError(403, QStringLiteral("Host not allowed"));
        return false;
    }
    if (hostOut)
        *hostOut = host.toLower();
    if (!apiOrWs)
        return true;
    if (r.hasHeader("origin")) {
        // The scheme this server speaks; for a name given with --allow-host
        // either one (a reverse proxy in front may terminate TLS, making
        // the page https:// while Tether speaks http://, or the reverse).
        const QByteArray origin = r.header("origin").trimmed().toLower();
        const QByteArray ownScheme = m_tls ? "https://" : "http://";
        const bool sameOrigin = origin == ownScheme + host.toLower()
            || (viaAllowHost && (origin == "http://" + host.toLower() || origin == "https://" + host.toLower()));
        if (!sameOrigin) {
            logLimited(lcServer(), QtInfoMsg, QStringLiteral("refused: cross-origin request"));
            c->respondError(403, QStringLiteral("Origin not allowed"));
            return false;
        }
    }
    if (authorized(c)) {
        c->setTrusted(true);
        return true;
    }
    QString token, why;
    switch (shareAccess(c, &token, &why)) {
    case ShareAccess::Granted:
        c->setShareToken(token);
        return true;
    case ShareAccess::Forbidden:
        logLimited(lcServer(), QtInfoMsg, QStringLiteral("refused: beyond what a read-only link grants"));
        c->respondError(403, why);
        return false;
    case ShareAccess::Ended:
        c->respondError(401, why, header("WWW-Authenticate", "Bearer realm=\"tether\""));
        return false;
    case ShareAccess::None:
        break;
    }
    c->respondError(401, QStringLiteral("missing or wrong access key"),
                    header("WWW-Authenticate", "Bearer realm=\"tether\""));
    return false;
}

} // namespace Tether
