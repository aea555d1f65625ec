// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <QtGlobal>

/// The bounds of the host's settings as `PATCH /api/settings` takes them
/// (docs/protocol.md section 4, "Settings"): shared by the host, which
/// checks a body against them (SettingsApi, the settings file, the
/// command-line options), and its clients, which check a form before sending
/// (the desktop app's Settings dialog). `max_sessions` has no constant here:
/// its upper bound is the kernel's PTY limit, which the host reports
/// (`max_sessions_limit`).
namespace Tether {
namespace SettingsBounds {

/// `buffer_size`, bytes: the output kept per session (sessions/bufferSize).
inline constexpr qint64 kMinBufferSize = 64 * 1024;
inline constexpr qint64 kMaxBufferSize = 64 * 1024 * 1024;
/// `ttl` and `exited_ttl`, seconds: a year (0 = never).
inline constexpr int kMaxTtlSeconds = 365 * 24 * 3600;
/// `notify_after`, seconds: a day.
inline constexpr int kMaxNotifyAfterSeconds = 86400;
/// `saved_scrollback_lines`: the lines a session's record keeps at most
/// (the scrollback of the server's screen).
inline constexpr int kMaxSavedScrollbackLines = 1000;

} // namespace SettingsBounds
} // namespace Tether
