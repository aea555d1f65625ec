// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <QByteArray>
#include <QList>
#include <QPair>
#include <QString>
#include <QUrlQuery>
#include <memory>

namespace Tether {

/**
 * One HTTP/1.x request, parsed incrementally with libhttp-parser (Node.js's
 * former parser; Tether does not hand-roll HTTP parsing).
 *
 * libhttp-parser is no longer maintained: the nodejs/http-parser repository
 * is archived and Node.js replaced it with llhttp. It is still the choice
 * because it is the HTTP/1.x parser library Debian 12 packages for C
 * (libhttp-parser-dev 2.9.4, with Debian's security fixes). llhttp has no
 * library package in Debian 12 (node-llhttp only carries its generated C
 * sources, /usr/share/llhttp, for building Node.js: no shared library, no
 * pkg-config file), and Qt HttpServer exists there only for Qt 6 (a technical
 * preview), so it cannot serve the Qt 5 build. llhttp keeps the same callback
 * model (on_url, on_header_field/value, on_headers_complete, on_body,
 * on_message_complete, pause and resume), so it is the replacement once
 * Debian packages it as a library, without changing this class's interface.
 *
 * Two phases, because a WebSocket upgrade must reach QWebSocketServer with its
 * request head still unread in the socket (QWebSocketServer::handleConnection
 * parses the head itself): the connection first *peeks* at the socket and
 * feeds the head with feedHead(), which stops exactly at the end of the head
 * and reports headLength(). A non-upgrade request then has its head consumed
 * from the socket and its body fed with feedBody().
 *
 * Limits (each is a denial-of-service bound): the head is at most
 * kMaxHeadBytes (16 KiB) → 431; the body at most kMaxBodyBytes (64 KiB) →
 * 413, refused from Content-Length before any body byte is read when the
 * length is declared. A malformed head (bad request line, bad header, both
 * Content-Length and chunked, whitespace between a field name and its colon
 * (RFC 9112 §5.1), a Transfer-Encoding whose final coding is not chunked
 * (RFC 9112 §6.3)) → 400. A version other than HTTP/1.x → 505 (RFC 9110
 * §15.6.6; HTTP/1.2 and up are read as HTTP/1.1, RFC 9110 §2.5). A transfer
 * coding other than chunked before the final chunked ("gzip, chunked") →
 * 501 (RFC 9112 §6.1). libhttp-parser 2.9 lets all of these through (it
 * takes SP as part of a field name and reads "GET /" as HTTP/0.9): this
 * class checks them when the head is complete. Errors surface as
 * phase() == Error with errorStatus() and errorText().
 */
class HttpRequest
{
public:
    static constexpr qsizetype kMaxHeadBytes = 16 * 1024;
    static constexpr qsizetype kMaxBodyBytes = 64 * 1024;

    enum class Phase {
        Head,     ///< reading the head
        Body,     ///< head complete, body not yet complete
        Complete, ///< whole request read
        Error,    ///< see errorStatus()
    };

    HttpRequest();
    ~HttpRequest();
    HttpRequest(const HttpRequest &) = delete;
    HttpRequest &operator=(const HttpRequest &) = delete;

    /**
     * Feeds the next bytes of the head (only bytes not fed before). Parsing
     * stops at the blank line that ends the head; bytes after it are not
     * consumed (headLength() says where the head ended). Returns phase():
     * Head (need more), Body / Complete (head done), or Error.
     */
    Phase feedHead(const char *data, qsizetype size);
    /// Total head bytes fed so far (while in Head).
    qsizetype headBytesFed() const { return m_fed; }
    /// Bytes of the head including its final blank line; valid after the head.
    qsizetype headLength() const { return m_headLength; }

    /**
     * Feeds body bytes (the bytes right after the head). Content-Length and
     * chunked bodies are supported. Returns phase(): Body (need more),
     * Complete, or Error (413 over kMaxBodyBytes, 400 malformed chunking).
     * Bytes after the end of the request are ignored.
     */
    Phase feedBody(const char *data, qsizetype size);

    Phase phase() const { return m_phase; }
    /// 400, 413, 431, 501 or 505 when phase() == Error.
    int errorStatus() const { return m_errorStatus; }
    QString errorText() const { return m_errorText; }

    QByteArray method() const { return m_method; }  ///< e.g. "GET"
    QByteArray target() const { return m_target; }  ///< raw request target
    /// The target is in absolute-form ("http://authority/path", RFC 7230
    /// §5.3.2); only the http scheme is accepted (no TLS), without user info.
    bool isAbsoluteForm() const { return m_absoluteForm; }
    /// The authority of an absolute-form target ("127.0.0.1:7420"); empty in
    /// origin-form.
    QByteArray authority() const { return m_authority; }
    /// The host the request is addressed to: the target's authority in
    /// absolute-form (a Host field is then ignored: RFC 7230 §5.4, RFC 9112
    /// §3.2.2), else the Host header (null when absent; several Host fields
    /// are joined with ", " and so never name a valid host).
    QByteArray host() const;
    /// Percent-decoded path of the target ("/api/sessions"), UTF-8 decoded.
    QString path() const { return m_path; }
    /// Raw (still percent-encoded) path.
    QByteArray rawPath() const { return m_rawPath; }
    /// Query of the target (items decoded with QUrl::FullyDecoded on access).
    QUrlQuery query() const { return m_query; }
    bool hasQuery() const { return m_hasQuery; }
    int httpMajor() const { return m_major; }
    int httpMinor() const { return m_minor; }

    /// All header fields in order, names lower-cased, values trimmed.
    QList<QPair<QByteArray, QByteArray>> headers() const { return m_headers; }
    /// The value of header `lowerName`; several fields of the same name are
    /// joined with ", " ("; " for cookie). Null QByteArray when absent.
    QByteArray header(const QByteArray &lowerName) const;
    bool hasHeader(const QByteArray &lowerName) const;
    /// How many header fields are named `lowerName`.
    int headerCount(const QByteArray &lowerName) const;
    /// Value of cookie `name` from the Cookie header(s); null when absent.
    QByteArray cookie(const QByteArray &name) const { return cookies(name).value(0); }
    /// Every value of cookie `name`, in order (a browser may send several
    /// cookies of one name, e.g. set for different paths).
    QList<QByteArray> cookies(const QByteArray &name) const;
    /// The head asks for a protocol upgrade (Upgrade + Connection: upgrade).
    bool isUpgrade() const { return m_upgrade; }
    /// `Upgrade: websocket` (case-insensitive) and an upgrade request.
    bool isWebSocketUpgrade() const;

    QByteArray body() const { return m_body; }

private:
    struct Parser;
    friend struct Parser;
    void fail(int status, const QString &text);
    /// The checks libhttp-parser does not make (see the class doc); false
    /// after fail().
    bool checkVersionAndFraming();
    bool finishHead();

    std::unique_ptr<Parser> m_p;
    Phase m_phase = Phase::Head;
    int m_errorStatus = 0;
    QString m_errorText;
    qsizetype m_fed = 0;
    qsizetype m_headLength = 0;
    QByteArray m_method;
    QByteArray m_target;
    QByteArray m_authority;
    bool m_absoluteForm = false;
    QByteArray m_rawPath;
    QString m_path;
    QUrlQuery m_query;
    bool m_hasQuery = false;
    int m_major = 1;
    int m_minor = 1;
    QList<QPair<QByteArray, QByteArray>> m_headers;
    bool m_lastWasValue = false;
    bool m_upgrade = false;
    QByteArray m_body;
};

} // namespace Tether
