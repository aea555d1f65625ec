// SPDX-License-Identifier: GPL-2.0-or-later
#include "httprequest.h"

#include <http_parser.h>

#include <climits>
#include <cstring>

namespace Tether {

struct HttpRequest::Parser {
    http_parser parser;
    http_parser_settings settings;
    HttpRequest *self = nullptr;

    static HttpRequest *req(http_parser *p) { return static_cast<Parser *>(p->data)->self; }

    static int onUrl(http_parser *p, const char *at, size_t len)
    {
        req(p)->m_target.append(at, int(len));
        return 0;
    }
    static int onHeaderField(http_parser *p, const char *at, size_t len)
    {
        HttpRequest *r = req(p);
        // After the head these are a chunked body's trailer fields: the
        // Host/Origin/key checks are done, so they must not become headers
        // (RFC 9112 §7.1.2 lets a recipient discard them).
        if (r->m_phase != Phase::Head)
            return 0;
        if (r->m_lastWasValue || r->m_headers.isEmpty()) {
            r->m_headers.append(qMakePair(QByteArray(), QByteArray()));
            r->m_lastWasValue = false;
        }
        r->m_headers.last().first.append(at, int(len));
        return 0;
    }
    static int onHeaderValue(http_parser *p, const char *at, size_t len)
    {
        HttpRequest *r = req(p);
        if (r->m_phase != Phase::Head)
            return 0; // a trailer field's value (see onHeaderField)
        if (r->m_headers.isEmpty())
            return 1;
        r->m_lastWasValue = true;
        r->m_headers.last().second.append(at, int(len));
        return 0;
    }
    static int onHeadersComplete(http_parser *p)
    {
        HttpRequest *r = req(p);
        r->m_major = p->http_major;
        r->m_minor = p->http_minor;
        r->m_method = http_method_str(static_cast<http_method>(p->method));
        r->m_upgrade = p->upgrade != 0;
        if (!r->finishHead())
            return -1;
        // A declared body over the limit is refused before reading it.
        if ((p->flags & F_CONTENTLENGTH) && p->content_length != ULLONG_MAX
            && p->content_length > quint64(kMaxBodyBytes)) {
            r->fail(413, QStringLiteral("request body over %1 bytes").arg(kMaxBodyBytes));
            return -1;
        }
        // Stop right here so the caller learns where the head ends (the
        // parser returns the position of the head's final LF).
        http_parser_pause(p, 1);
        return 0;
    }
    static int onBody(http_parser *p, const char *at, size_t len)
    {
        HttpRequest *r = req(p);
        if (r->m_body.size() + qsizetype(len) > kMaxBodyBytes) {
            r->fail(413, QStringLiteral("request body over %1 bytes").arg(kMaxBodyBytes));
            return -1;
        }
        r->m_body.append(at, int(len));
        return 0;
    }
    static int onMessageComplete(http_parser *p)
    {
        HttpRequest *r = req(p);
        if (r->m_phase != Phase::Error)
            r->m_phase = Phase::Complete;
        // Ignore anything after this request (each response closes the
        // connection; pipelined requests are not served).
        http_parser_pause(p, 1);
        return 0;
    }
};

HttpRequest::HttpRequest()
    : m_p(new Parser)
{
    m_p->self = this;
    http_parser_init(&m_p->parser, HTTP_REQUEST);
    m_p->parser.data = m_p.get();
    http_parser_settings_init(&m_p->settings);
    m_p->settings.on_url = &Parser::onUrl;
    m_p->settings.on_header_field = &Parser::onHeaderField;
    m_p->settings.on_header_value = &Parser::onHeaderValue;
    m_p->settings.on_headers_complete = &Parser::onHeadersComplete;
    m_p->settings.on_body = &Parser::onBody;
    m_p->settings.on_message_complete = &Parser::onMessageComplete;
}

HttpRequest::~HttpRequest() = default;

void HttpRequest::fail(int status, const QString &text)
{
    if (m_phase == Phase::Error)
        return;
    m_phase = Phase::Error;
    m_errorStatus = status;
    m_errorText = text;
}

namespace {
/// The reason for http-parser's error `err` while it reads a body. A chunk
/// size that overflows 64 bits is, to http-parser 2.9, the error of a bad
/// Content-Length (HPE_INVALID_CONTENT_LENGTH, "invalid character in
/// content-length header"), which named a header the request may not even
/// have: said as what it is, the chunk size.
QString bodyErrorText(http_errno err)
{
    if (err == HPE_INVALID_CONTENT_LENGTH) // in the body: only a chunk size sets it
        return QStringLiteral("invalid chunk size: too large (it overflows 64 bits)");
    if (err == HPE_INVALID_CHUNK_SIZE)
        return QStringLiteral("invalid chunk size: not a hexadecimal number");
    return QString::fromLatin1(http_errno_description(err));
}

/// tchar of RFC 9110 §5.6.2: the characters of a token (a field name).
bool isTokenChar(char c)
{
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'))
        return true;
    return c != 0 && std::strchr("!#$%&'*+-.^_`|~", c) != nullptr;
}
} // namespace

bool HttpRequest::checkVersionAndFraming()
{
    // Runs on the lower-cased names (a space in a name is kept).
    // HTTP/1.0 and HTTP/1.1 only. RFC 9110 §15.6.6: 505 for a major version
    // the server does not support (HTTP/2.0 and up, which are not even
    // spoken in this syntax, and HTTP/0.9, which has no head at all:
    // libhttp-parser reads "GET /" without a version as 0.9). A higher minor
    // version of HTTP/1 is processed as HTTP/1.1 (RFC 9110 §2.5).
    if (m_major != 1) {
        fail(505, QStringLiteral("HTTP version %1.%2 not supported: only HTTP/1.0 and HTTP/1.1")
                      .arg(m_major).arg(m_minor));
        return false;
    }
    if (m_minor > 1)
        m_minor = 1;
    // Field names are tokens; libhttp-parser takes a space as part of the
    // name, so "Host : x" arrived as a field "host ". RFC 9112 §5.1: "A
    // server MUST reject, with a response status code of 400 (Bad Request),
    // any received request message that contains whitespace between a header
    // field name and colon."
    for (const auto &h : std::as_const(m_headers)) {
        for (const char c : h.first) {
            if (c == ' ' || c == '\t') {
                fail(400, QStringLiteral("whitespace in or after a header field name (RFC 9112 §5.1)"));
                return false;
            }
            if (!isTokenChar(c)) {
                fail(400, QStringLiteral("invalid character in a header field name"));
                return false;
            }
        }
        if (h.first.isEmpty()) {
            fail(400, QStringLiteral("empty header field name"));
            return false;
        }
    }
    // Transfer-Encoding: chunked is the only coding undone here, and it must
    // be the final one, once. Not final: the body length cannot be
    // determined, 400 (RFC 9112 §6.3); chunked twice: 400 (RFC 9112 §7:
    // "MUST NOT apply chunked more than once"); another coding before it
    // ("gzip, chunked"): not understood, 501 (RFC 9112 §6.1). libhttp-parser
    // 2.9 accepts a list that ends in chunked whatever comes before it.
    if (hasHeader("transfer-encoding")) {
        QList<QByteArray> codings;
        for (const QByteArray &c : header("transfer-encoding").split(',')) {
            const QByteArray coding = c.trimmed().toLower();
            if (!coding.isEmpty()) // empty list elements are ignored (RFC 9110 §5.6.1.2)
                codings.append(coding);
        }
        if (codings.isEmpty() || codings.last() != "chunked") {
            fail(400, QStringLiteral("Transfer-Encoding must end with chunked (RFC 9112 §6.3)"));
            return false;
        }
        if (codings.count("chunked") > 1) {
            fail(400, QStringLiteral("Transfer-Encoding lists chunked more than once"));
            return false;
        }
        if (codings.size() > 1) {
            fail(501, QStringLiteral("transfer coding \"%1\" not supported: only chunked")
                          .arg(QString::fromLatin1(codings.first())));
            return false;
        }
    }
    return true;
}

bool HttpRequest::finishHead()
{
    for (auto &h : m_headers) {
        h.first = h.first.toLower();
        h.second = h.second.trimmed();
    }
    if (!checkVersionAndFraming())
        return false;
    // Request target: origin-form "/path?query" or absolute-form
    // "http://authority/path?query" (RFC 7230 §5.3.1, §5.3.2); anything else
    // is refused. In absolute-form the target's authority is the request's
    // host and a Host field is ignored (RFC 7230 §5.4, RFC 9112 §3.2.2); the
    // server checks it like a Host value. There is no TLS here, so only the
    // http scheme; no user info (RFC 7230 §2.7.1 forbids it in http URIs).
    QByteArray t = m_target;
    if (t.size() >= 7 && t.left(7).toLower() == "http://") {
        int end = 7;
        while (end < t.size() && t.at(end) != '/' && t.at(end) != '?' && t.at(end) != '#')
            ++end;
        m_authority = t.mid(7, end - 7);
        if (m_authority.isEmpty() || m_authority.contains('@')) {
            fail(400, QStringLiteral("bad request target"));
            return false;
        }
        m_absoluteForm = true;
        t = t.mid(end);
        if (!t.startsWith('/'))
            t.prepend('/');
    }
    if (!t.startsWith('/')) {
        fail(400, QStringLiteral("bad request target"));
        return false;
    }
    const int hash = t.indexOf('#');
    if (hash >= 0)
        t.truncate(hash);
    const int q = t.indexOf('?');
    m_rawPath = q < 0 ? t : t.left(q);
    m_hasQuery = q >= 0;
    if (m_hasQuery)
        m_query = QUrlQuery(QString::fromUtf8(t.mid(q + 1)));
    const QByteArray decoded = QByteArray::fromPercentEncoding(m_rawPath);
    if (decoded.contains('\0')) {
        fail(400, QStringLiteral("bad request target"));
        return false;
    }
    m_path = QString::fromUtf8(decoded);
    return true;
}

HttpRequest::Phase HttpRequest::feedHead(const char *data, qsizetype size)
{
    if (m_phase != Phase::Head || size <= 0)
        return m_phase;
    http_parser *p = &m_p->parser;
    const size_t n = http_parser_execute(p, &m_p->settings, data, size_t(size));
    if (m_phase == Phase::Error)
        return m_phase;
    const http_errno err = HTTP_PARSER_ERRNO(p);
    if (err == HPE_PAUSED) {
        // Paused in on_headers_complete: data[n] is the head's final LF.
        if (qsizetype(n) >= size || data[n] != '\n') {
            fail(400, QStringLiteral("malformed request head"));
            return m_phase;
        }
        m_fed += qsizetype(n) + 1;
        m_headLength = m_fed;
        if (m_headLength > kMaxHeadBytes) {
            fail(431, QStringLiteral("request head over %1 bytes").arg(kMaxHeadBytes));
            return m_phase;
        }
        m_phase = Phase::Body;
        // Resume with the LF the parser stopped on; this moves it into the
        // body (or completes a request without one).
        http_parser_pause(p, 0);
        http_parser_execute(p, &m_p->settings, "\n", 1);
        if (m_phase == Phase::Body && HTTP_PARSER_ERRNO(p) != HPE_OK && HTTP_PARSER_ERRNO(p) != HPE_PAUSED)
            fail(400, bodyErrorText(HTTP_PARSER_ERRNO(p)));
        return m_phase;
    }
    if (err != HPE_OK) {
        fail(400, QString::fromLatin1(http_errno_description(err)));
        return m_phase;
    }
    m_fed += qsizetype(n);
    if (m_fed > kMaxHeadBytes)
        fail(431, QStringLiteral("request head over %1 bytes").arg(kMaxHeadBytes));
    return m_phase;
}

HttpRequest::Phase HttpRequest::feedBody(const char *data, qsizetype size)
{
    if (m_phase != Phase::Body || size <= 0)
        return m_phase;
    http_parser *p = &m_p->parser;
    http_parser_execute(p, &m_p->settings, data, size_t(size));
    const http_errno err = HTTP_PARSER_ERRNO(p);
    if (m_phase == Phase::Body && err != HPE_OK && err != HPE_PAUSED)
        fail(400, bodyErrorText(err));
    return m_phase;
}

QByteArray HttpRequest::header(const QByteArray &lowerName) const
{
    QByteArray out;
    bool found = false;
    const QByteArray sep = lowerName == "cookie" ? QByteArrayLiteral("; ") : QByteArrayLiteral(", ");
    for (const auto &h : m_headers) {
        if (h.first != lowerName)
            continue;
        if (found)
            out += sep;
        out += h.second;
        found = true;
    }
    if (found && out.isNull())
        out = QByteArray("");
    return found ? out : QByteArray();
}

QByteArray HttpRequest::host() const
{
    return m_absoluteForm ? m_authority : header("host");
}

int HttpRequest::headerCount(const QByteArray &lowerName) const
{
    int n = 0;
    for (const auto &h : m_headers)
        n += h.first == lowerName ? 1 : 0;
    return n;
}

bool HttpRequest::hasHeader(const QByteArray &lowerName) const
{
    for (const auto &h : m_headers)
        if (h.first == lowerName)
            return true;
    return false;
}

QList<QByteArray> HttpRequest::cookies(const QByteArray &name) const
{
    QList<QByteArray> out;
    for (const auto &h : m_headers) {
        if (h.first != "cookie")
            continue;
        const QList<QByteArray> parts = h.second.split(';');
        for (const QByteArray &part : parts) {
            const int eq = part.indexOf('=');
            if (eq < 0 || part.left(eq).trimmed() != name)
                continue;
            QByteArray v = part.mid(eq + 1).trimmed();
            if (v.size() >= 2 && v.startsWith('"') && v.endsWith('"'))
                v = v.mid(1, v.size() - 2);
            out.append(v.isNull() ? QByteArray("") : v);
        }
    }
    return out;
}

bool HttpRequest::isWebSocketUpgrade() const
{
    if (!m_upgrade)
        return false;
    const QList<QByteArray> protos = header("upgrade").split(',');
    for (const QByteArray &p : protos)
        if (p.trimmed().toLower() == "websocket")
            return true;
    return false;
}

} // namespace Tether
