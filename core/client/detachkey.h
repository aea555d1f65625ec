// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <QString>

namespace Tether {

/**
 * Parses a detach key: "^X" for Ctrl-X (X one of @ A-Z [ \ ] ^ _ ?,
 * case-insensitive; "^?" is DEL), one ASCII control character, or "none"
 * (no detach key: *key = -1). False for anything else, with the reason in
 * *why (for the usage error): a printable key, and keys that terminals send
 * inside other keys or as everyday editing keys, which would detach when
 * the user only meant to type: ESC (^[, it starts every arrow and function
 * key: `--detach-key '^['` made each arrow key detach), CR (^M, Enter), LF
 * (^J, newline), TAB (^I), BS (^H) and DEL (^?), the last two Backspace.
 */
bool parseDetachKey(const QString &text, int *key, QString *why = nullptr);

/**
 * The detach key of `tether attach` in a chunk of keyboard input: the input
 * before it goes to the session, the key itself detaches, what follows it is
 * dropped (the user is leaving). Raw mode delivers the key as one byte
 * (Ctrl-backslash is 0x1c); parseDetachKey() refuses the keys that also come
 * inside other keys (ESC) or as everyday editing keys.
 */
class DetachKeyFilter
{
public:
    /// `key`: a byte from parseDetachKey(), or -1 for none.
    explicit DetachKeyFilter(int key = -1)
        : m_key(key)
    {
    }
    int key() const { return m_key; }
    /// Bytes of `data` before the detach key: `size` when it is not there
    /// (or there is none), else its index, and *hit = true.
    qsizetype scan(const char *data, qsizetype size, bool *hit) const;

private:
    int m_key;
};

} // namespace Tether
