// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <QByteArray>
#include <QString>
#include <QtEndian>

#include <cstring>

namespace Tether {

/**
 * Writes the fixed-width little-endian fields of Tether's binary formats (the
 * restart-in-place state, docs/architecture.md "Restart in place", and the
 * saved TerminalState inside it): integers of 1, 4 or 8 bytes; byte strings
 * as a u32 length then the bytes; text as such a byte string in UTF-8.
 * Appends to one QByteArray; nothing is aligned or padded.
 */
class ByteWriter
{
public:
    void u8(quint8 v) { m_out.append(char(v)); }
    void boolean(bool v) { u8(v ? 1 : 0); }
    void u32(quint32 v) { putLe(v); }
    void i32(qint32 v) { putLe(quint32(v)); }
    void u64(quint64 v) { putLe(v); }
    void i64(qint64 v) { putLe(quint64(v)); }
    /// u32 length, then the bytes.
    void bytes(const QByteArray &b) { bytes(b.constData(), b.size()); }
    void bytes(const char *data, qsizetype size)
    {
        u32(quint32(size));
        m_out.append(data, int(size));
    }
    /// UTF-8, as bytes().
    void text(const QString &s) { bytes(s.toUtf8()); }
    /// Appends raw bytes (no length): for a nested record already encoded.
    void raw(const QByteArray &b) { m_out.append(b); }

    const QByteArray &data() const { return m_out; }
    QByteArray take() { return std::move(m_out); }

private:
    template<typename T> void putLe(T v)
    {
        char buf[sizeof(T)];
        qToLittleEndian(v, buf);
        m_out.append(buf, int(sizeof(T)));
    }
    QByteArray m_out;
};

/**
 * Reads what ByteWriter wrote, from memory it does not own (a QByteArray or
 * a mapped file that must outlive the reader). Every read is bounds-checked:
 * past the end, or a length beyond what is left, the reader fails (ok()
 * turns false for good) and returns zeros and empty values, so a truncated
 * or corrupt input is reported once by the caller instead of crashing.
 */
class ByteReader
{
public:
    ByteReader(const char *data, qsizetype size) : m_p(data), m_end(data + (size > 0 ? size : 0)) {}
    explicit ByteReader(const QByteArray &b) : ByteReader(b.constData(), b.size()) {}

    bool ok() const { return m_ok; }
    bool atEnd() const { return m_p == m_end; }
    qsizetype remaining() const { return qsizetype(m_end - m_p); }

    quint8 u8() { return getLe<quint8>(); }
    bool boolean() { return u8() != 0; }
    quint32 u32() { return getLe<quint32>(); }
    qint32 i32() { return qint32(getLe<quint32>()); }
    quint64 u64() { return getLe<quint64>(); }
    qint64 i64() { return qint64(getLe<quint64>()); }
    /// A u32-length-prefixed byte string, copied.
    QByteArray bytes()
    {
        const char *p = nullptr;
        const qsizetype n = view(&p);
        return QByteArray(p, int(n));
    }
    /// A u32-length-prefixed byte string, not copied: *data points into the
    /// input. Returns its length (0 on failure).
    qsizetype view(const char **data)
    {
        const quint32 n = u32();
        *data = m_p;
        if (!take(n))
            return 0;
        return qsizetype(n);
    }
    QString text() { return QString::fromUtf8(bytes()); }
    /// Skips `n` raw bytes (false past the end).
    bool skip(qsizetype n) { return take(n); }
    /// `n` raw bytes (no length prefix), not copied; nullptr past the end.
    const char *rawView(qsizetype n)
    {
        const char *p = m_p;
        return take(n) ? p : nullptr;
    }
    /// Marks the input as bad (a value out of its range).
    void fail() { m_ok = false; m_p = m_end; }

private:
    bool take(qsizetype n)
    {
        if (!m_ok || n < 0 || n > remaining()) {
            fail();
            return false;
        }
        m_p += n;
        return true;
    }
    template<typename T> T getLe()
    {
        const char *p = m_p;
        if (!take(qsizetype(sizeof(T))))
            return T(0);
        return qFromLittleEndian<T>(p);
    }
    const char *m_p;
    const char *m_end;
    bool m_ok = true;
};

} // namespace Tether
