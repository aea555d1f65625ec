// SPDX-License-Identifier: GPL-2.0-or-later
// Fuzz target: the HTTP request-head parser and the routing decision
// (core/server/httprequest.h, route.h), fed what any local process can send
// to Tether's port before showing a key. Beyond "no crash, no undefined
// behaviour", it checks:
//  - the head fed in pieces (as HttpConnection peeks it off a socket) gives
//    the same outcome as fed at once (phase, status, head length, target);
//  - a finished head's length is within what was fed;
//  - every accessor the server calls on a request works on what came out.
// Input: byte 0 is the piece size (0: all at once), the rest the bytes a
// client sent. tests/fuzz/README.md.
#include "httprequest.h"
#include "route.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>

using Tether::HttpRequest;

namespace {
void check(bool ok, const char *what)
{
    if (!ok) {
        std::fprintf(stderr, "fuzz_httprequest: %s\n", what);
        std::abort();
    }
}

/// Head then body, as HttpConnection feeds them; `piece` bytes at a time
/// (0: everything at once).
void feed(HttpRequest &r, const char *data, qsizetype size, qsizetype piece)
{
    qsizetype fed = 0;
    while (fed < size && r.phase() == HttpRequest::Phase::Head) {
        const qsizetype n = piece > 0 ? qMin(piece, size - fed) : size - fed;
        r.feedHead(data + fed, n);
        fed += n;
    }
    if (r.phase() != HttpRequest::Phase::Body)
        return;
    check(r.headLength() > 0 && r.headLength() <= fed, "head length outside what was fed");
    for (qsizetype at = r.headLength(); at < size && r.phase() == HttpRequest::Phase::Body;) {
        const qsizetype n = piece > 0 ? qMin(piece, size - at) : size - at;
        r.feedBody(data + at, n);
        at += n;
    }
}
} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    const char *bytes = reinterpret_cast<const char *>(data + 1);
    const qsizetype n = qsizetype(size - 1);

    HttpRequest whole;
    feed(whole, bytes, n, 0);
    HttpRequest pieces;
    feed(pieces, bytes, n, data[0]);
    // Over the head limit, which check fires first depends on where the
    // pieces end (431 or a parse error): both refuse.
    if (n <= HttpRequest::kMaxHeadBytes) {
        check(whole.phase() == pieces.phase(), "phase differs when fed in pieces");
        check(whole.errorStatus() == pieces.errorStatus(), "error status differs when fed in pieces");
        if (whole.phase() != HttpRequest::Phase::Head && whole.phase() != HttpRequest::Phase::Error) {
            check(whole.headLength() == pieces.headLength(), "head length differs when fed in pieces");
            check(whole.target() == pieces.target(), "target differs when fed in pieces");
            check(whole.headers() == pieces.headers(), "headers differ when fed in pieces");
        }
    }
    if (whole.phase() == HttpRequest::Phase::Error) {
        const int s = whole.errorStatus();
        check(s == 400 || s == 413 || s == 431 || s == 501 || s == 505, "an error status the class does not document");
        return 0;
    }
    if (whole.phase() == HttpRequest::Phase::Head)
        return 0;

    // What Server reads from a request, then the routing decision.
    (void)whole.host();
    (void)whole.cookies("tether_key");
    (void)whole.header("authorization");
    (void)whole.header("origin");
    (void)whole.isWebSocketUpgrade();
    (void)whole.headerCount("host");
    (void)whole.query().queryItems();
    (void)whole.body();
    const Tether::Route route = Tether::routeRequest(whole);
    if (route.kind == Tether::Route::Kind::Upgrade)
        check(!route.id.isEmpty() && !route.id.contains(QLatin1Char('/')), "an upgrade routed to a bad id");
    if (route.kind == Tether::Route::Kind::StaticFile)
        check(route.file.startsWith(QLatin1String(":/dashboard/")) && !route.file.contains(QLatin1String("/../")),
              "a static path outside the dashboard");
    return 0;
}
