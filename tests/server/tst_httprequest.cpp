// SPDX-License-Identifier: GPL-2.0-or-later
// HttpRequest: incremental parsing of request heads and bodies with
// libhttp-parser, fed the way HttpConnection feeds it (the head from peeked
// bytes, each byte once; the body after headLength()). Pure logic: no sockets.
#include "httprequest.h"

#include <QTest>

using namespace Tether;

namespace {

using Phase = HttpRequest::Phase;

/// Feeds `bytes` as HttpConnection does when they arrive `chunk` bytes at a
/// time: while the head is incomplete, the bytes not fed before go to
/// feedHead(); once it is complete, the bytes after headLength() go to
/// feedBody(). Returns the final phase.
Phase feedLikeConnection(HttpRequest &r, const QByteArray &bytes, int chunk)
{
    qsizetype arrived = 0;
    qsizetype bodyFed = 0;
    while (arrived < bytes.size() && r.phase() != Phase::Error && r.phase() != Phase::Complete) {
        arrived = qMin<qsizetype>(bytes.size(), arrived + chunk);
        if (r.phase() == Phase::Head) {
            const qsizetype fed = r.headBytesFed();
            r.feedHead(bytes.constData() + fed, arrived - fed);
            if (r.phase() == Phase::Head || r.phase() == Phase::Error)
                continue;
            bodyFed = r.headLength();
        }
        if (r.phase() == Phase::Body && arrived > bodyFed) {
            r.feedBody(bytes.constData() + bodyFed, arrived - bodyFed);
            bodyFed = arrived;
        }
    }
    return r.phase();
}

Phase feedAll(HttpRequest &r, const QByteArray &bytes)
{
    return feedLikeConnection(r, bytes, int(bytes.size()));
}

/// A head of exactly `total` bytes: request line, one padding header, blank line.
QByteArray headOfSize(qsizetype total, bool complete = true)
{
    const QByteArray start = "GET / HTTP/1.1\r\nHost: h\r\nX-Pad: ";
    const QByteArray end = complete ? QByteArray("\r\n\r\n") : QByteArray();
    return start + QByteArray(total - start.size() - end.size(), 'a') + end;
}

} // namespace

class TestHttpRequest : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void trailersAreNotHeaders()
    {
        // Trailer fields of a chunked body come after the Host check: kept
        // as headers, "host: evil" changed host() after the fact (RFC 9112
        // §7.1.2: store them apart or discard them; we discard them).
        HttpRequest r;
        QCOMPARE(feedAll(r, "POST / HTTP/1.1\r\nhost: h\r\nTransfer-Encoding: chunked\r\n\r\n"
                            "5\r\nhello\r\n0\r\nhost: evil\r\nX-Trailer:  t \r\n\r\n"),
                 Phase::Complete);
        QCOMPARE(r.body(), QByteArray("hello"));
        QCOMPARE(r.host(), QByteArray("h"));
        QCOMPARE(r.headers().size(), 2);
    }
    void completeHeadInOneFeed()
    {
        const QByteArray head = "GET /api/sessions HTTP/1.1\r\nHost: 127.0.0.1:7420\r\nAccept: */*\r\n\r\n";
        HttpRequest r;
        QCOMPARE(r.phase(), Phase::Head);
        QCOMPARE(r.feedHead(head.constData(), head.size()), Phase::Complete);
        QCOMPARE(r.headLength(), head.size());
        QCOMPARE(r.method(), QByteArray("GET"));
        QCOMPARE(r.target(), QByteArray("/api/sessions"));
        QCOMPARE(r.path(), QStringLiteral("/api/sessions"));
        QCOMPARE(r.httpMajor(), 1);
        QCOMPARE(r.httpMinor(), 1);
        QCOMPARE(r.host(), QByteArray("127.0.0.1:7420"));
        QVERIFY(!r.isAbsoluteForm());
        QVERIFY(r.authority().isEmpty());
        QVERIFY(!r.hasQuery());
        QVERIFY(!r.isUpgrade());
        QVERIFY(r.body().isEmpty());
        QCOMPARE(r.errorStatus(), 0);
    }

    void http10()
    {
        HttpRequest r;
        QCOMPARE(feedAll(r, "GET / HTTP/1.0\r\n\r\n"), Phase::Complete);
        QCOMPARE(r.httpMajor(), 1);
        QCOMPARE(r.httpMinor(), 0);
        QVERIFY(r.host().isNull()); // no Host field: null, not empty
    }

    // A head may arrive split anywhere: inside the method, a header name, a
    // value, or between the CR and LF of the final blank line. Every split
    // gives the same request, the head ends at the same byte, and no body
    // byte is taken for the head.
    void splitAnywhere_data()
    {
        QTest::addColumn<int>("chunk");
        for (int chunk : {1, 2, 3, 5, 7, 16, 61, 62, 63, 64, 1000})
            QTest::addRow("chunk %d", chunk) << chunk;
    }
    void splitAnywhere()
    {
        QFETCH(int, chunk);
        const QByteArray head = "POST /api/sessions?x=1 HTTP/1.1\r\nHost: localhost:7420\r\n"
                                "Content-Type: application/json\r\nContent-Length: 16\r\n"
                                "Cookie: a=1\r\nCookie: tether_key=K\r\n\r\n";
        const QByteArray body = "{\"cols\":100}    ";
        HttpRequest r;
        QCOMPARE(feedLikeConnection(r, head + body + "GET / HTTP/1.1\r\n\r\n", chunk), Phase::Complete);
        QCOMPARE(r.headLength(), head.size());
        QCOMPARE(r.method(), QByteArray("POST"));
        QCOMPARE(r.path(), QStringLiteral("/api/sessions"));
        QCOMPARE(r.query().queryItemValue(QStringLiteral("x")), QStringLiteral("1"));
        QCOMPARE(r.headers().size(), 5);
        QCOMPARE(r.header("host"), QByteArray("localhost:7420"));
        QCOMPARE(r.header("content-length"), QByteArray("16"));
        QCOMPARE(r.cookie("tether_key"), QByteArray("K"));
        QCOMPARE(r.body(), body);
    }

    void incompleteHeadWaits()
    {
        const QByteArray head = "GET / HTTP/1.1\r\nHost: h\r\n\r\n";
        HttpRequest r;
        // Every prefix short of the final LF leaves the request in Head and
        // counts exactly the bytes fed.
        for (int i = 0; i < head.size() - 1; ++i) {
            QCOMPARE(r.feedHead(head.constData() + i, 1), Phase::Head);
            QCOMPARE(r.headBytesFed(), qsizetype(i + 1));
        }
        QCOMPARE(r.feedHead(head.constData() + head.size() - 1, 1), Phase::Complete);
        QCOMPARE(r.headLength(), head.size());
    }

    void bytesAfterHeadNotConsumed()
    {
        // An upgrade: the WebSocket server reads the head again from the
        // socket, and the first frame may already follow it.
        const QByteArray head = "GET /ws/abc HTTP/1.1\r\nHost: h\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n";
        const QByteArray all = head + "\x81\x85" "abcdHELLO";
        HttpRequest r;
        const Phase p = r.feedHead(all.constData(), all.size());
        QVERIFY(p == Phase::Body || p == Phase::Complete);
        QCOMPARE(r.headLength(), head.size());
        QVERIFY(r.isWebSocketUpgrade());
        QVERIFY(r.body().isEmpty());
        // Further head bytes are ignored once the head is complete.
        QCOMPARE(r.feedHead("X", 1), p);
        QCOMPARE(r.headLength(), head.size());
    }

    void bareLfLineEnds()
    {
        // Accepted by the parser (RFC 7230 §3.5 allows a recipient to accept
        // a bare LF); headLength() must still point right after the final LF.
        const QByteArray head = "GET /x HTTP/1.1\nHost: h\n\n";
        HttpRequest r;
        QCOMPARE(r.feedHead((head + "tail").constData(), head.size() + 4), Phase::Complete);
        QCOMPARE(r.headLength(), head.size());
        QCOMPARE(r.header("host"), QByteArray("h"));
    }

    void headerNamesAndValues()
    {
        HttpRequest r;
        QCOMPARE(feedAll(r, "GET / HTTP/1.1\r\nHOST: h\r\nX-Mixed-Case:   padded value \t\r\nx-empty:\r\n"
                            "X-Empty-Spaces:    \r\n\r\n"),
                 Phase::Complete);
        const QList<QPair<QByteArray, QByteArray>> expected = {
            {"host", "h"}, {"x-mixed-case", "padded value"}, {"x-empty", ""}, {"x-empty-spaces", ""}};
        QCOMPARE(r.headers(), expected);
        QVERIFY(r.hasHeader("host"));
        QVERIFY(!r.hasHeader("HOST")); // lookups take lower-case names
        QCOMPARE(r.header("x-mixed-case"), QByteArray("padded value"));
        // Present but empty is not absent.
        QVERIFY(r.hasHeader("x-empty"));
        QVERIFY(!r.header("x-empty").isNull());
        QVERIFY(r.header("x-empty").isEmpty());
        QVERIFY(!r.header("x-empty-spaces").isNull());
        QVERIFY(!r.hasHeader("x-absent"));
        QVERIFY(r.header("x-absent").isNull());
        QCOMPARE(r.headerCount("x-absent"), 0);
    }

    void duplicateHeaders()
    {
        HttpRequest r;
        QCOMPARE(feedAll(r, "GET / HTTP/1.1\r\nHost: a\r\nAccept: text/html\r\nX-Other: 1\r\naccept: application/json\r\n"
                            "Host: b\r\nCookie: a=1\r\nCookie: b=2; c=3\r\n\r\n"),
                 Phase::Complete);
        QCOMPARE(r.headerCount("accept"), 2);
        QCOMPARE(r.header("accept"), QByteArray("text/html, application/json"));
        // Cookie fields are joined the way a single Cookie field separates
        // its pairs (RFC 6265 §5.4).
        QCOMPARE(r.header("cookie"), QByteArray("a=1; b=2; c=3"));
        // Two Host fields never name one valid host.
        QCOMPARE(r.headerCount("host"), 2);
        QCOMPARE(r.host(), QByteArray("a, b"));
        QCOMPARE(r.headers().size(), 7);
        QCOMPARE(r.headers().at(3).first, QByteArray("accept"));
    }

    void obsFold()
    {
        // RFC 7230 §3.2.4: a server MUST either reject obs-fold with 400 or
        // replace it with SP before interpreting the value. Folding must never
        // glue two words into one.
        HttpRequest r;
        const Phase p = feedAll(r, "GET / HTTP/1.1\r\nHost: h\r\nX-Folded: one\r\n two\r\nX-After: 1\r\n\r\n");
        if (p == Phase::Error) {
            QCOMPARE(r.errorStatus(), 400);
            return;
        }
        QCOMPARE(p, Phase::Complete);
        const QByteArray v = r.header("x-folded");
        QVERIFY2(v.startsWith("one") && v.endsWith("two") && v.mid(3, v.size() - 6).trimmed().isEmpty()
                     && v.size() > 6,
                 v.constData());
        QCOMPARE(r.header("x-after"), QByteArray("1"));
        QCOMPARE(r.headerCount("x-folded"), 1);
    }

    void cookies()
    {
        HttpRequest r;
        QCOMPARE(feedAll(r, "GET / HTTP/1.1\r\nHost: h\r\nCookie: a=1; tether_key=\"quoted\"; empty=; b = 2 \r\n"
                            "Cookie: tether_key=second; noequals\r\n\r\n"),
                 Phase::Complete);
        QCOMPARE(r.cookie("a"), QByteArray("1"));
        QCOMPARE(r.cookie("b"), QByteArray("2"));
        QCOMPARE(r.cookies("tether_key"), (QList<QByteArray>{"quoted", "second"}));
        QCOMPARE(r.cookie("tether_key"), QByteArray("quoted"));
        QVERIFY(!r.cookie("empty").isNull());
        QVERIFY(r.cookie("empty").isEmpty());
        QVERIFY(r.cookie("missing").isNull());
        QVERIFY(r.cookie("noequals").isNull());
        QVERIFY(r.cookies("missing").isEmpty());
    }

    void headLimit_data()
    {
        QTest::addColumn<int>("size");
        QTest::addColumn<bool>("complete");
        QTest::addColumn<int>("chunk");
        QTest::addColumn<int>("status"); // 0: accepted (Complete, or still Head when incomplete)
        const int max = int(HttpRequest::kMaxHeadBytes);
        for (int chunk : {max + 1, 1000}) {
            QTest::addRow("complete, at the limit, chunk %d", chunk) << max << true << chunk << 0;
            QTest::addRow("complete, one over, chunk %d", chunk) << max + 1 << true << chunk << 431;
            QTest::addRow("incomplete, at the limit, chunk %d", chunk) << max << false << chunk << 0;
            QTest::addRow("incomplete, one over, chunk %d", chunk) << max + 1 << false << chunk << 431;
        }
    }
    void headLimit()
    {
        QFETCH(int, size);
        QFETCH(bool, complete);
        QFETCH(int, chunk);
        QFETCH(int, status);
        const QByteArray head = headOfSize(size, complete);
        QCOMPARE(head.size(), size);
        HttpRequest r;
        const Phase p = feedLikeConnection(r, head, chunk);
        if (status) {
            QCOMPARE(p, Phase::Error);
            QCOMPARE(r.errorStatus(), status);
            QVERIFY(!r.errorText().isEmpty());
        } else {
            QCOMPARE(p, complete ? Phase::Complete : Phase::Head);
            QCOMPARE(r.headBytesFed(), qsizetype(size));
            if (complete)
                QCOMPARE(r.headLength(), qsizetype(size));
        }
    }

    void contentLengthBody()
    {
        const QByteArray head = "POST /api/sessions HTTP/1.1\r\nHost: h\r\nContent-Length: 11\r\n\r\n";
        HttpRequest r;
        QCOMPARE(r.feedHead((head + "hello").constData(), head.size() + 5), Phase::Body);
        QCOMPARE(r.headLength(), head.size());
        QVERIFY(r.body().isEmpty()); // body bytes are not taken from the head feed
        QCOMPARE(r.feedBody("hello", 5), Phase::Body);
        QCOMPARE(r.feedBody(" wor", 4), Phase::Body);
        // Bytes after the declared length are ignored (no pipelining).
        QCOMPARE(r.feedBody("ldGET / HTTP/1.1\r\n\r\n", 20), Phase::Complete);
        QCOMPARE(r.body(), QByteArray("hello world"));
        QCOMPARE(r.feedBody("more", 4), Phase::Complete);
        QCOMPARE(r.body(), QByteArray("hello world"));
    }

    void zeroContentLength()
    {
        HttpRequest r;
        QCOMPARE(feedAll(r, "POST /api/sessions HTTP/1.1\r\nHost: h\r\nContent-Length: 0\r\n\r\n"), Phase::Complete);
        QVERIFY(r.body().isEmpty());
    }

    void declaredBodyLimit_data()
    {
        QTest::addColumn<qint64>("length");
        QTest::addColumn<bool>("refused");
        QTest::newRow("at the limit") << qint64(HttpRequest::kMaxBodyBytes) << false;
        QTest::newRow("one over") << qint64(HttpRequest::kMaxBodyBytes) + 1 << true;
        QTest::newRow("huge") << (Q_INT64_C(1) << 40) << true;
    }
    void declaredBodyLimit()
    {
        QFETCH(qint64, length);
        QFETCH(bool, refused);
        HttpRequest r;
        const QByteArray head = "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: " + QByteArray::number(length) + "\r\n\r\n";
        // Refused from the head alone, before any body byte arrives.
        const Phase p = r.feedHead(head.constData(), head.size());
        if (refused) {
            QCOMPARE(p, Phase::Error);
            QCOMPARE(r.errorStatus(), 413);
            return;
        }
        QCOMPARE(p, Phase::Body);
        const QByteArray body(int(length), 'x');
        QCOMPARE(r.feedBody(body.constData(), body.size()), Phase::Complete);
        QCOMPARE(r.body().size(), body.size());
    }

    void chunkedBody()
    {
        HttpRequest r;
        QCOMPARE(feedLikeConnection(r, "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n"
                                       "5\r\nhello\r\n6;ext=1\r\n world\r\n0\r\n\r\nGET / HTTP/1.1\r\n\r\n", 3),
                 Phase::Complete);
        QCOMPARE(r.body(), QByteArray("hello world"));
    }

    void chunkedBodyLimit_data()
    {
        QTest::addColumn<int>("size");
        QTest::addColumn<bool>("refused");
        QTest::newRow("at the limit") << int(HttpRequest::kMaxBodyBytes) << false;
        QTest::newRow("one over") << int(HttpRequest::kMaxBodyBytes) + 1 << true;
    }
    void chunkedBodyLimit()
    {
        // A chunked body has no declared length: it is refused as it grows.
        QFETCH(int, size);
        QFETCH(bool, refused);
        HttpRequest r;
        const QByteArray head = "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n";
        QCOMPARE(r.feedHead(head.constData(), head.size()), Phase::Body);
        const QByteArray piece(1024, 'x');
        const QByteArray chunk = QByteArray::number(piece.size(), 16) + "\r\n" + piece + "\r\n";
        for (int i = 0; i < size / piece.size(); ++i)
            QCOMPARE(r.feedBody(chunk.constData(), chunk.size()), Phase::Body);
        const QByteArray rest = QByteArray::number(size % piece.size(), 16) + "\r\n"
            + QByteArray(size % piece.size(), 'y') + "\r\n0\r\n\r\n";
        const Phase p = r.feedBody(rest.constData(), rest.size());
        if (refused) {
            QCOMPARE(p, Phase::Error);
            QCOMPARE(r.errorStatus(), 413);
        } else {
            QCOMPARE(p, Phase::Complete);
            QCOMPARE(r.body().size(), size);
        }
    }

    void badChunking_data()
    {
        QTest::addColumn<QByteArray>("body");
        QTest::newRow("size not hex") << QByteArray("zz\r\nhello\r\n0\r\n\r\n");
        QTest::newRow("data longer than size") << QByteArray("2\r\nhello\r\n0\r\n\r\n");
        QTest::newRow("size overflows") << QByteArray("ffffffffffffffffff\r\n");
    }
    void badChunking()
    {
        QFETCH(QByteArray, body);
        HttpRequest r;
        QCOMPARE(feedAll(r, "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n" + body), Phase::Error);
        QCOMPARE(r.errorStatus(), 400);
        QVERIFY(!r.errorText().isEmpty());
    }

    void badFraming_data()
    {
        QTest::addColumn<QByteArray>("headers");
        // RFC 7230 §3.3.3: both would let two parsers disagree on where the
        // body ends (request smuggling).
        QTest::newRow("content-length and chunked")
            << QByteArray("Content-Length: 5\r\nTransfer-Encoding: chunked\r\n");
        QTest::newRow("chunked and content-length")
            << QByteArray("Transfer-Encoding: chunked\r\nContent-Length: 5\r\n");
        QTest::newRow("two content-lengths") << QByteArray("Content-Length: 5\r\nContent-Length: 6\r\n");
        QTest::newRow("content-length not a number") << QByteArray("Content-Length: five\r\n");
        QTest::newRow("negative content-length") << QByteArray("Content-Length: -1\r\n");
        QTest::newRow("content-length with sign") << QByteArray("Content-Length: +5\r\n");
        // RFC 7230 §3.3.3: a request whose final transfer coding is not
        // chunked has no determinable length: 400.
        QTest::newRow("gzip only") << QByteArray("Transfer-Encoding: gzip\r\n");
        QTest::newRow("chunked, then gzip") << QByteArray("Transfer-Encoding: chunked, gzip\r\n");
        QTest::newRow("identity") << QByteArray("Transfer-Encoding: identity\r\n");
    }
    void badFraming()
    {
        QFETCH(QByteArray, headers);
        HttpRequest r;
        QCOMPARE(feedAll(r, "POST / HTTP/1.1\r\nHost: h\r\n" + headers + "\r\nhello"), Phase::Error);
        QCOMPARE(r.errorStatus(), 400);
    }

    void transferEncodingGzipChunked()
    {
        // Only "chunked" is a transfer coding this server can undo; a request
        // that applies gzip first cannot be read and must be refused (RFC 9112
        // §6.1: 501 for a coding the server does not understand).
        QFETCH(QByteArray, fields);
        HttpRequest r;
        const Phase p = feedAll(r, "POST / HTTP/1.1\r\nHost: h\r\n" + fields + "\r\n5\r\nhello\r\n0\r\n\r\n");
        QCOMPARE(p, Phase::Error);
        QCOMPARE(r.errorStatus(), 501);
        QVERIFY2(r.errorText().contains(QStringLiteral("gzip")), qPrintable(r.errorText()));
    }
    void transferEncodingGzipChunked_data()
    {
        QTest::addColumn<QByteArray>("fields");
        QTest::newRow("one field") << QByteArray("Transfer-Encoding: gzip, chunked\r\n");
        QTest::newRow("two fields") << QByteArray("Transfer-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n");
        QTest::newRow("upper case") << QByteArray("Transfer-Encoding: GZIP , Chunked\r\n");
    }

    void transferEncodingChunkedTwice()
    {
        // RFC 9112 §7: chunked is never applied twice; decoding it once would
        // leave chunk framing in the body.
        HttpRequest r;
        QCOMPARE(feedAll(r, "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked, chunked\r\n\r\n"
                            "5\r\nhello\r\n0\r\n\r\n"),
                 Phase::Error);
        QCOMPARE(r.errorStatus(), 400);
    }

    void transferEncodingChunkedAlone()
    {
        // The one accepted form (coding names are case-insensitive, RFC 9112 §7).
        HttpRequest r;
        QCOMPARE(feedAll(r, "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: Chunked\r\n\r\n"
                            "5\r\nhello\r\n0\r\n\r\n"),
                 Phase::Complete);
        QCOMPARE(r.body(), QByteArray("hello"));
    }

    void whitespaceBeforeColon_data()
    {
        QTest::addColumn<QByteArray>("field");
        QTest::newRow("space before the colon") << QByteArray("Host : h");
        QTest::newRow("tab before the colon") << QByteArray("Host\t: h");
        // The same flaw: libhttp-parser counts SP as a token character, so a
        // space anywhere before the colon becomes part of the name.
        QTest::newRow("space inside the name") << QByteArray("X Y: 1");
    }
    void whitespaceBeforeColon()
    {
        // RFC 7230 §3.2.4: "A server MUST reject any received request message
        // that contains whitespace between a header field-name and colon with
        // a response code of 400".
        QFETCH(QByteArray, field);
        HttpRequest r;
        const Phase p = feedAll(r, "GET / HTTP/1.1\r\n" + field + "\r\n\r\n");
        QCOMPARE(p, Phase::Error);
        QCOMPARE(r.errorStatus(), 400);
    }

    void methods_data()
    {
        QTest::addColumn<QByteArray>("method");
        for (const char *m : {"GET", "HEAD", "POST", "PUT", "DELETE", "OPTIONS", "PATCH"})
            QTest::newRow(m) << QByteArray(m);
    }
    void methods()
    {
        QFETCH(QByteArray, method);
        HttpRequest r;
        const Phase p = feedAll(r, method + " /api/sessions HTTP/1.1\r\nHost: h\r\n\r\n");
        QCOMPARE(p, Phase::Complete);
        QCOMPARE(r.method(), method);
    }

    void badRequestLine_data()
    {
        QTest::addColumn<QByteArray>("head");
        QTest::newRow("empty line") << QByteArray("\r\nHost: h\r\n\r\n");
        QTest::newRow("unknown method") << QByteArray("FROB / HTTP/1.1\r\nHost: h\r\n\r\n");
        QTest::newRow("lower-case method") << QByteArray("get / HTTP/1.1\r\nHost: h\r\n\r\n");
        QTest::newRow("method only") << QByteArray("GET\r\nHost: h\r\n\r\n");
        QTest::newRow("extra word") << QByteArray("GET / HTTP/1.1 extra\r\nHost: h\r\n\r\n");
        QTest::newRow("not HTTP") << QByteArray("GET / FTP/1.1\r\nHost: h\r\n\r\n");
        QTest::newRow("version without digits") << QByteArray("GET / HTTP/x.y\r\nHost: h\r\n\r\n");
        QTest::newRow("control character in target") << QByteArray("GET /a\x01 HTTP/1.1\r\nHost: h\r\n\r\n");
        QTest::newRow("space in target") << QByteArray("GET /a b HTTP/1.1\r\nHost: h\r\n\r\n");
        QTest::newRow("a response") << QByteArray("HTTP/1.1 200 OK\r\n\r\n");
        QTest::newRow("binary") << QByteArray("\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03", 11); // a TLS hello
        QTest::newRow("header without colon") << QByteArray("GET / HTTP/1.1\r\nHost h\r\n\r\n");
        QTest::newRow("header starts the head with a fold") << QByteArray("GET / HTTP/1.1\r\n folded\r\n\r\n");
    }
    void badRequestLine()
    {
        QFETCH(QByteArray, head);
        HttpRequest r;
        QCOMPARE(feedAll(r, head), Phase::Error);
        QCOMPARE(r.errorStatus(), 400);
        QVERIFY(!r.errorText().isEmpty());
    }

    void unsupportedVersion_data()
    {
        QTest::addColumn<QByteArray>("head");
        QTest::newRow("HTTP/2.0") << QByteArray("GET / HTTP/2.0\r\nHost: h\r\n\r\n");
        QTest::newRow("HTTP/9.9") << QByteArray("GET / HTTP/9.9\r\nHost: h\r\n\r\n");
        QTest::newRow("HTTP/0.9") << QByteArray("GET / HTTP/0.9\r\nHost: h\r\n\r\n");
        QTest::newRow("no version (HTTP/0.9 simple request)") << QByteArray("GET /\r\nHost: h\r\n\r\n");
    }
    void unsupportedVersion()
    {
        // This server speaks HTTP/1.x only (RFC 7230 §2.6: 505 for a major
        // version it does not support; HTTP/0.9 has no headers at all).
        QFETCH(QByteArray, head);
        HttpRequest r;
        const Phase p = feedAll(r, head);
        QCOMPARE(p, Phase::Error);
        QCOMPARE(r.errorStatus(), 505);
    }

    void supportedVersions_data()
    {
        QTest::addColumn<QByteArray>("version");
        QTest::addColumn<int>("minor");
        QTest::newRow("HTTP/1.0") << QByteArray("HTTP/1.0") << 0;
        QTest::newRow("HTTP/1.1") << QByteArray("HTTP/1.1") << 1;
        // A higher minor version of a major one we speak is read as the
        // highest we speak (RFC 9110 §2.5).
        QTest::newRow("HTTP/1.2 is read as 1.1") << QByteArray("HTTP/1.2") << 1;
    }
    void supportedVersions()
    {
        QFETCH(QByteArray, version);
        QFETCH(int, minor);
        HttpRequest r;
        QCOMPARE(feedAll(r, "GET / " + version + "\r\nHost: h\r\n\r\n"), Phase::Complete);
        QCOMPARE(r.httpMajor(), 1);
        QCOMPARE(r.httpMinor(), minor);
    }

    void target_data()
    {
        QTest::addColumn<QByteArray>("target");
        QTest::addColumn<QString>("path");
        QTest::addColumn<QByteArray>("rawPath");
        QTest::addColumn<bool>("hasQuery");
        QTest::addColumn<QString>("queryKey");
        QTest::addColumn<QString>("queryValue");
        QTest::addColumn<QByteArray>("authority");

        QTest::newRow("root") << QByteArray("/") << QStringLiteral("/") << QByteArray("/") << false << QString() << QString() << QByteArray();
        QTest::newRow("query") << QByteArray("/ws/abc?mode=watch&resume=42") << QStringLiteral("/ws/abc")
                               << QByteArray("/ws/abc") << true << QStringLiteral("resume") << QStringLiteral("42") << QByteArray();
        QTest::newRow("empty query") << QByteArray("/x?") << QStringLiteral("/x") << QByteArray("/x") << true
                                     << QStringLiteral("a") << QString() << QByteArray();
        QTest::newRow("percent-encoded path") << QByteArray("/a%20b/%C3%A9") << QStringLiteral("/a b/\u00e9")
                                              << QByteArray("/a%20b/%C3%A9") << false << QString() << QString() << QByteArray();
        QTest::newRow("encoded slash stays in the path") << QByteArray("/a%2Fb") << QStringLiteral("/a/b")
                                                         << QByteArray("/a%2Fb") << false << QString() << QString() << QByteArray();
        QTest::newRow("percent-encoded query value") << QByteArray("/?key=a%2Fb%20c") << QStringLiteral("/") << QByteArray("/")
                                                     << true << QStringLiteral("key") << QStringLiteral("a/b c") << QByteArray();
        QTest::newRow("fragment dropped") << QByteArray("/p?x=1#frag") << QStringLiteral("/p") << QByteArray("/p") << true
                                          << QStringLiteral("x") << QStringLiteral("1") << QByteArray();
        QTest::newRow("absolute-form") << QByteArray("http://127.0.0.1:7420/api/sessions?x=2") << QStringLiteral("/api/sessions")
                                       << QByteArray("/api/sessions") << true << QStringLiteral("x") << QStringLiteral("2")
                                       << QByteArray("127.0.0.1:7420");
        QTest::newRow("absolute-form, upper-case scheme") << QByteArray("HTTP://localhost:7420/") << QStringLiteral("/")
                                                          << QByteArray("/") << false << QString() << QString()
                                                          << QByteArray("localhost:7420");
        QTest::newRow("absolute-form, no path") << QByteArray("http://[::1]:7420") << QStringLiteral("/") << QByteArray("/")
                                                << false << QString() << QString() << QByteArray("[::1]:7420");
        QTest::newRow("absolute-form, query without path") << QByteArray("http://h:1?x=3") << QStringLiteral("/") << QByteArray("/")
                                                           << true << QStringLiteral("x") << QStringLiteral("3") << QByteArray("h:1");
    }
    void target()
    {
        QFETCH(QByteArray, target);
        QFETCH(QString, path);
        QFETCH(QByteArray, rawPath);
        QFETCH(bool, hasQuery);
        QFETCH(QString, queryKey);
        QFETCH(QString, queryValue);
        QFETCH(QByteArray, authority);
        HttpRequest r;
        QCOMPARE(feedAll(r, "GET " + target + " HTTP/1.1\r\nHost: other:1\r\n\r\n"), Phase::Complete);
        QCOMPARE(r.target(), target);
        QCOMPARE(r.path(), path);
        QCOMPARE(r.rawPath(), rawPath);
        QCOMPARE(r.hasQuery(), hasQuery);
        if (!queryKey.isEmpty())
            QCOMPARE(r.query().queryItemValue(queryKey, QUrl::FullyDecoded), queryValue);
        QCOMPARE(r.isAbsoluteForm(), !authority.isEmpty());
        QCOMPARE(r.authority(), authority);
        // In absolute-form the target names the host and the Host field is
        // ignored (RFC 7230 §5.4).
        QCOMPARE(r.host(), authority.isEmpty() ? QByteArray("other:1") : authority);
    }

    void badTarget_data()
    {
        QTest::addColumn<QByteArray>("head");
        QTest::newRow("asterisk-form") << QByteArray("OPTIONS * HTTP/1.1\r\nHost: h\r\n\r\n");
        QTest::newRow("authority-form") << QByteArray("CONNECT h:443 HTTP/1.1\r\nHost: h\r\n\r\n");
        QTest::newRow("relative") << QByteArray("GET api HTTP/1.1\r\nHost: h\r\n\r\n");
        QTest::newRow("https scheme") << QByteArray("GET https://h/ HTTP/1.1\r\nHost: h\r\n\r\n");
        QTest::newRow("other scheme") << QByteArray("GET ftp://h/ HTTP/1.1\r\nHost: h\r\n\r\n");
        QTest::newRow("empty authority") << QByteArray("GET http:///api HTTP/1.1\r\nHost: h\r\n\r\n");
        QTest::newRow("user info") << QByteArray("GET http://u@h/ HTTP/1.1\r\nHost: h\r\n\r\n");
        QTest::newRow("user and password") << QByteArray("GET http://u:p@h/ HTTP/1.1\r\nHost: h\r\n\r\n");
        QTest::newRow("NUL in the path") << QByteArray("GET /a%00b HTTP/1.1\r\nHost: h\r\n\r\n");
    }
    void badTarget()
    {
        QFETCH(QByteArray, head);
        HttpRequest r;
        QCOMPARE(feedAll(r, head), Phase::Error);
        QCOMPARE(r.errorStatus(), 400);
    }

    void upgrade_data()
    {
        QTest::addColumn<QByteArray>("headers");
        QTest::addColumn<bool>("upgrade");
        QTest::addColumn<bool>("webSocket");
        QTest::newRow("websocket") << QByteArray("Upgrade: websocket\r\nConnection: Upgrade\r\n") << true << true;
        QTest::newRow("case-insensitive") << QByteArray("Upgrade: WebSocket\r\nConnection: upgrade\r\n") << true << true;
        QTest::newRow("connection list") << QByteArray("Upgrade: websocket\r\nConnection: keep-alive, Upgrade\r\n") << true << true;
        QTest::newRow("protocol list") << QByteArray("Upgrade: foo/2, websocket\r\nConnection: Upgrade\r\n") << true << true;
        QTest::newRow("other protocol") << QByteArray("Upgrade: h2c\r\nConnection: Upgrade\r\n") << true << false;
        QTest::newRow("no Connection: upgrade") << QByteArray("Upgrade: websocket\r\nConnection: keep-alive\r\n") << false << false;
        QTest::newRow("no Upgrade") << QByteArray("Connection: Upgrade\r\n") << false << false;
        QTest::newRow("neither") << QByteArray() << false << false;
    }
    void upgrade()
    {
        QFETCH(QByteArray, headers);
        QFETCH(bool, upgrade);
        QFETCH(bool, webSocket);
        HttpRequest r;
        const QByteArray head = "GET /ws/x HTTP/1.1\r\nHost: h\r\n" + headers + "\r\n";
        const Phase p = r.feedHead(head.constData(), head.size());
        QVERIFY(p == Phase::Body || p == Phase::Complete);
        QCOMPARE(r.headLength(), head.size());
        QCOMPARE(r.isUpgrade(), upgrade);
        QCOMPARE(r.isWebSocketUpgrade(), webSocket);
    }

    void errorIsFinal()
    {
        HttpRequest r;
        QCOMPARE(feedAll(r, "FROB / HTTP/1.1\r\n"), Phase::Error);
        const QString text = r.errorText();
        const QByteArray good = "GET / HTTP/1.1\r\nHost: h\r\n\r\n";
        QCOMPARE(r.feedHead(good.constData(), good.size()), Phase::Error);
        QCOMPARE(r.feedBody("x", 1), Phase::Error);
        QCOMPARE(r.errorStatus(), 400);
        QCOMPARE(r.errorText(), text);
    }

    void bodyBeforeHeadIsIgnored()
    {
        HttpRequest r;
        QCOMPARE(r.feedBody("GET / HTTP/1.1\r\n\r\n", 18), Phase::Head);
        QCOMPARE(r.headBytesFed(), qsizetype(0));
        QCOMPARE(r.feedHead("", 0), Phase::Head);
        QCOMPARE(feedAll(r, "GET / HTTP/1.1\r\nHost: h\r\n\r\n"), Phase::Complete);
        QVERIFY(r.body().isEmpty());
    }
};

QTEST_APPLESS_MAIN(TestHttpRequest)
#include "tst_httprequest.moc"
