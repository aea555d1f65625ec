// SPDX-License-Identifier: GPL-2.0-or-later
#include "shellmarks.h"

#include <cstring>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace Tether {

namespace {

constexpr int kMaxOscNumber = 99999;

// The first ESC or BEL in [p, end), or end. 16 bytes per step with SSE2.
const unsigned char *findEscOrBel(const unsigned char *p, const unsigned char *end)
{
#if defined(__SSE2__)
    const __m128i esc = _mm_set1_epi8(0x1B);
    const __m128i bel = _mm_set1_epi8(0x07);
    while (end - p >= 16) {
        const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i *>(p));
        const int hits = _mm_movemask_epi8(_mm_or_si128(_mm_cmpeq_epi8(v, esc), _mm_cmpeq_epi8(v, bel)));
        if (hits)
            return p + __builtin_ctz(unsigned(hits));
        p += 16;
    }
#endif
    while (p < end && *p != 0x1B && *p != 0x07)
        ++p;
    return p;
}

bool interesting(int n)
{
    return n == 7 || n == 9 || n == 99 || n == 133 || n == 633 || n == 777;
}

int hexValue(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

// Percent-decodes [s, s + n) in place; returns the new length.
qsizetype percentDecode(char *s, qsizetype n)
{
    qsizetype o = 0;
    for (qsizetype i = 0; i < n; ++i) {
        if (s[i] == '%' && i + 2 < n && hexValue(s[i + 1]) >= 0 && hexValue(s[i + 2]) >= 0) {
            s[o++] = char(hexValue(s[i + 1]) * 16 + hexValue(s[i + 2]));
            i += 2;
        } else {
            s[o++] = s[i];
        }
    }
    return o;
}

} // namespace

ShellMarkScanner::ShellMarkScanner()
{
    m_buf.reserve(kMaxPayload);
}

void ShellMarkScanner::scan(const char *data, qsizetype size, quint64 offset, Handler &handler)
{
    const unsigned char *const begin = reinterpret_cast<const unsigned char *>(data);
    const unsigned char *p = begin;
    const unsigned char *const end = begin + std::max<qsizetype>(0, size);
    const auto at = [&](const unsigned char *q) { return offset + quint64(q - begin); };
    while (p < end) {
        switch (m_state) {
        case State::Ground: {
            p = findEscOrBel(p, end);
            if (p == end)
                return;
            if (*p == 0x07) {
                ShellMark m;
                m.kind = ShellMark::Bell;
                m.at = at(p);
                m.end = m.at + 1;
                ++p;
                handler.shellMark(m);
                continue;
            }
            m_oscAt = at(p);
            m_state = State::Escape;
            ++p;
            continue;
        }
        case State::Escape: {
            const unsigned char c = *p++;
            if (m_pendingDispatch) {
                // The OSC ended at its ESC: ESC \ (ST) is part of the mark,
                // any other ESC begins the next sequence.
                m_pendingDispatch = false;
                if (c == '\\') {
                    oscDispatch(at(p), handler);
                    m_state = State::Ground;
                    continue;
                }
                oscDispatch(m_oscAt, handler);
            }
            if (c == ']') {
                m_oscStart = m_oscAt;
                m_state = State::OscNumber;
                m_oscNumber = -1;
                m_inBody = false;
                m_buf.resize(0);
                m_truncated = false;
                m_prevC2 = false;
            } else if (c == 'P' || c == 'X' || c == '^' || c == '_') {
                m_state = State::String;
            } else if (c == 0x1B) {
                m_oscAt = at(p - 1);
            } else if (c >= 0x20) {
                m_state = State::Ground; // an escape or CSI sequence: nothing of ours
            }
            // C0 controls execute inside an escape sequence without ending it.
            continue;
        }
        case State::String: {
            // DCS/SOS/PM/APC: only ESC (ST), CAN and SUB end it.
            while (p < end && *p != 0x1B && *p != 0x18 && *p != 0x1A)
                ++p;
            if (p == end)
                return;
            if (*p == 0x1B) {
                m_oscAt = at(p);
                m_state = State::Escape;
            } else {
                m_state = State::Ground;
            }
            ++p;
            continue;
        }
        case State::OscNumber:
        case State::OscBody:
        case State::OscSkip: {
            const unsigned char c = *p++;
            if (c == 0x07) {
                oscDispatch(at(p), handler);
                m_state = State::Ground;
                continue;
            }
            if (c == 0x1B) { // ends the OSC; ESC \ is ST (dispatched with the next byte)
                m_pendingDispatch = true;
                m_oscAt = at(p - 1);
                m_state = State::Escape;
                continue;
            }
            if (c == 0x18 || c == 0x1A) { // CAN, SUB: aborted
                m_state = State::Ground;
                continue;
            }
            if (c == 0x9C && m_prevC2) { // C1 ST, UTF-8 encoded
                if (m_state == State::OscBody && !m_buf.isEmpty() && !m_truncated)
                    m_buf.chop(1); // its lead byte
                oscDispatch(at(p), handler);
                m_state = State::Ground;
                continue;
            }
            m_prevC2 = c == 0xC2;
            if (c < 0x20)
                continue; // other C0 controls are ignored inside an OSC
            if (m_state == State::OscNumber) {
                if (c >= '0' && c <= '9') {
                    m_oscNumber = std::min((m_oscNumber < 0 ? 0 : m_oscNumber) * 10 + (c - '0'), kMaxOscNumber);
                } else if (c == ';' && interesting(m_oscNumber)) {
                    m_state = State::OscBody;
                    m_inBody = true;
                } else {
                    m_state = State::OscSkip;
                }
            } else if (m_state == State::OscBody) {
                if (m_buf.size() < kMaxPayload)
                    m_buf.append(char(c));
                else
                    m_truncated = true;
            }
            continue;
        }
        }
    }
}

void ShellMarkScanner::oscDispatch(quint64 endOffset, Handler &handler)
{
    if (!m_inBody || m_buf.isEmpty())
        return;
    m_inBody = false;
    ShellMark m;
    m.at = m_oscStart;
    m.end = endOffset;
    m.truncated = m_truncated;
    char *const b = m_buf.data(); // capacity reserved: no allocation (not shared)
    const qsizetype n = m_buf.size();
    const auto payloadFrom = [&](qsizetype i) {
        m.payload = b + std::min(i, n);
        m.payloadSize = std::max<qsizetype>(0, n - i);
    };
    switch (m_oscNumber) {
    case 133:
    case 633: {
        // "A", "B", "C", "D", "D;status", "E;line", "P;Cwd=path"; further
        // ";key=value" options of A/B/C are ignored.
        if (n >= 2 && b[1] != ';')
            return;
        switch (b[0]) {
        case 'A': m.kind = ShellMark::PromptStart; break;
        case 'B': m.kind = ShellMark::CommandStart; break;
        case 'C': m.kind = ShellMark::OutputStart; break;
        case 'D':
            m.kind = ShellMark::CommandEnd;
            payloadFrom(2);
            break;
        case 'E':
            if (m_oscNumber != 633)
                return;
            m.kind = ShellMark::CommandLine;
            payloadFrom(2);
            break;
        case 'P': {
            static const char kCwd[] = "P;Cwd=";
            if (m_oscNumber != 633 || n < qsizetype(sizeof kCwd - 1) || std::memcmp(b, kCwd, sizeof kCwd - 1) != 0)
                return;
            m.kind = ShellMark::Cwd;
            payloadFrom(sizeof kCwd - 1);
            break;
        }
        default:
            return;
        }
        break;
    }
    case 7: {
        // file://host/path, percent-encoded (host may be empty).
        static const char kFile[] = "file://";
        if (n < qsizetype(sizeof kFile - 1) || std::memcmp(b, kFile, sizeof kFile - 1) != 0)
            return;
        const char *slash = static_cast<const char *>(
            std::memchr(b + sizeof kFile - 1, '/', size_t(n - qsizetype(sizeof kFile - 1))));
        if (!slash)
            return;
        const qsizetype from = slash - b;
        m.kind = ShellMark::Cwd;
        m.payload = b + from;
        m.payloadSize = percentDecode(b + from, n - from);
        break;
    }
    case 9: {
        // ConEmu's "9;N;..." subcommands (progress 9;4;...) are not texts.
        qsizetype i = 0;
        while (i < n && b[i] >= '0' && b[i] <= '9')
            ++i;
        if (i > 0 && (i == n || b[i] == ';'))
            return;
        m.kind = ShellMark::Notify;
        payloadFrom(0);
        break;
    }
    case 777: {
        static const char kNotify[] = "notify;";
        if (n < qsizetype(sizeof kNotify - 1) || std::memcmp(b, kNotify, sizeof kNotify - 1) != 0)
            return;
        m.kind = ShellMark::Notify;
        payloadFrom(sizeof kNotify - 1); // "title;body"
        break;
    }
    case 99: {
        // kitty: "99;metadata;payload".
        const char *semi = static_cast<const char *>(std::memchr(b, ';', size_t(n)));
        if (!semi)
            return;
        m.kind = ShellMark::Notify;
        payloadFrom(semi - b + 1);
        break;
    }
    default:
        return;
    }
    handler.shellMark(m);
}

QByteArray decodeVsCodeEscapes(const QByteArray &text)
{
    QByteArray out;
    out.reserve(text.size());
    for (qsizetype i = 0; i < text.size(); ++i) {
        const char c = text.at(i);
        if (c == ';')
            break; // the nonce follows
        if (c == '\\' && i + 1 < text.size()) {
            if (text.at(i + 1) == '\\') {
                out.append('\\');
                ++i;
                continue;
            }
            if (text.at(i + 1) == 'x' && i + 3 < text.size() && hexValue(text.at(i + 2)) >= 0
                && hexValue(text.at(i + 3)) >= 0) {
                out.append(char(hexValue(text.at(i + 2)) * 16 + hexValue(text.at(i + 3))));
                i += 3;
                continue;
            }
        }
        out.append(c);
    }
    return out;
}

} // namespace Tether
