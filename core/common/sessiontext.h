// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <QJsonObject>
#include <QString>

namespace Tether {

/**
 * How a session's facts read to a person, one wording for every client
 * (issue 28): `tether list`, the desktop's Sessions window, tray menu and
 * notifications, and the dashboard, whose resources/dashboard/sessiontext.js
 * implements the same rules. tests/vectors/sessiontext.json holds both to
 * them (tests/common/tst_sessiontext.cpp, tests/js/sessiontext.test.mjs).
 * English only, like the protocol's own texts; no function here fails.
 */
namespace SessionText {

/// A duration in whole seconds, at most two units: "0s", "59s", "1m", "59m",
/// "1h", "2h 5m", "1d", "3d 4h" (a part of zero is left out: "2h", not
/// "2h 0m"). Less than a unit rounds down; a negative duration counts as 0.
QString duration(qint64 seconds);

/// A size in bytes in binary units: "0 B", "1023 B", "1 KiB", "1.5 KiB",
/// "12 KiB", "1 MiB", "10 MiB", "1.5 GiB". Below 10 units one decimal unless
/// whole, from 10 on rounded to whole units. A negative size counts as 0.
QString bytes(qint64 bytes);

/// How a process ended, as the server's own texts say it (the attach
/// stream's exit line, the `exit` notification; docs/protocol.md): "exited
/// with code 2", "killed by signal 9"; "exited" when neither is known
/// (`code` and `signal` below 0). A signal wins over a code.
QString exitStatus(int code, int signal);

/// The state of a SESSION object of the API (docs/protocol.md, section 4)
/// in a word or three, for lists and tables: "running", "exited 2",
/// "killed by signal 9", "exited" (neither known), "ended by reboot"
/// (a record of a session its host did not end: `state` "ended", the
/// `ended` field's reason).
QString state(const QJsonObject &session);

} // namespace SessionText
} // namespace Tether
