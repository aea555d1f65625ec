// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include "ptyprocess.h"

#include <QByteArray>
#include <QList>
#include <QString>
#include <QStringList>

#include <memory>
#include <optional>

/**
 * The state one Tether process image hands to the next when Tether restarts
 * in place (SIGUSR2, `tether restart`, POST /api/restart): the process
 * execve(2)s its own binary, keeping its pid, its children (the sessions'
 * shells) and the fds whose FD_CLOEXEC it cleared (PTY masters, pidfds, the
 * listening socket). Everything else travels in a memfd (memfd_create(2))
 * whose fd number is in the environment variable kStateEnv, in the binary
 * format documented in docs/architecture.md, "Restart in place", and
 * encoded/decoded here. A second, trivial variable (kFdsEnv) lists just the
 * fds, so that a successor that cannot read the state (a different format
 * version after an upgrade or a downgrade, a damaged memfd) still adopts
 * every PTY, with empty buffers, rather than dropping it.
 *
 * Pure data and I/O on an fd: no Qt event loop, no sockets.
 */
namespace Tether::Handover {

/// Environment variable: decimal fd number of the memfd holding the state.
inline constexpr char kStateEnv[] = "TETHER_HANDOVER_STATE";
/// Environment variable: the bare fd list (fdList()), read when the state is not.
inline constexpr char kFdsEnv[] = "TETHER_HANDOVER_FDS";
/// Environment variable: decimal fd number of the listening socket.
inline constexpr char kListenEnv[] = "TETHER_HANDOVER_LISTEN";
/// Test hook: when "1", the successor treats the state as unreadable and
/// adopts from the bare fd list (the path of a successor that cannot read
/// the format). Read only by the successor, only when a handover is present.
inline constexpr char kIgnoreStateEnv[] = "TETHER_TEST_IGNORE_HANDOVER_STATE";

/// Newest format version: written by this build when the state carries a TLS
/// pair, else kVersionWithoutTls (so that a build reading only up to that
/// one, after a downgrade, keeps everything of a server without TLS). read()
/// accepts every version from kOldestVersion to kVersion (a newer one falls
/// back to the fd list). Fields appended at the end of a session's metadata
/// do not change it: readers skip what they do not know. Version 2 added the
/// server-side screen (ScreenRecord; a version 1 state is read without one),
/// version 3 the TLS pair in use (State::tlsCertificatePem, tlsKeyPem; a
/// version 1 or 2 state is read without one).
constexpr quint32 kVersion = 3;
constexpr quint32 kVersionWithoutTls = 2;
constexpr quint32 kOldestVersion = 1;

/// A resize the session's screen has not reached yet: it applies at `offset`.
struct ResizeRecord {
    quint64 offset = 0;
    int cols = 0;
    int rows = 0;
};

/// A session's server-side screen (Screen, screen.h) as the successor needs
/// it to rebuild one: the state after parsing the output up to `offset`, as
/// a snapshot with its scrollback (Screen::snapshot with scrollbackLines and
/// inPlace = false) to feed into a fresh Screen of cols×rows.
struct ScreenRecord {
    bool present = false;     ///< false: the session had no screen (or a version 1 state)
    quint64 offset = 0;       ///< S: output parsed up to here
    bool synced = false;      ///< the screen is exact (see Session::screenSynced())
    int cols = 0, rows = 0;   ///< the screen's size at `offset`
    QByteArray snapshot;      ///< Screen::snapshot({scrollbackLines = kept, inPlace = false})
    QList<ResizeRecord> resizes; ///< resizes at offsets > `offset`, ascending
};

/// A read-only link (share) of a session, kept across a restart in place.
/// The engine only carries it: the server defines what it grants
/// (docs/protocol.md, "Read-only links").
struct ShareRecord {
    QString token;            ///< the link's secret (base64url)
    qint64 createdMs = 0;     ///< ms since the epoch, UTC
};

/// One session (or one being torn down, `dying`).
struct SessionRecord {
    QString id;               ///< empty only for a dying session adopted bare
    QStringList command;      ///< argv actually run
    QString cwd;
    qint64 createdMs = 0;     ///< ms since the epoch, UTC
    qint64 exitedAtMs = -1;   ///< -1: not exited
    qint64 detachedSinceMs = -1; ///< -1: a viewer was attached
    qint64 lastActivityMs = 0;
    bool exited = false;      ///< Session::State::Exited
    bool dying = false;       ///< removed from the list, teardown in progress
    PtyHandover pty;
    qsizetype capacity = 0;   ///< ring capacity, bytes
    quint64 ringStart = 0;    ///< offset of the first retained byte
    /// The session's output stream begins at ringStart, from a fresh
    /// terminal (nothing before it was dropped): a session the keeper held
    /// through a crash, whose new buffer starts past the dead server's
    /// offsets (KeeperLink::adoptAndFollow). In-process only, not written
    /// by write(): a handed-over ring is taken as having rolled over.
    bool freshStream = false;
    /// Retained bytes, in order, as pieces: when writing they point into the
    /// live ring (no copy); read() gives one piece pointing into the mapped
    /// state (no copy either: valid while the State, which holds the
    /// mapping, lives); decode() gives one copied piece.
    QList<QByteArray> ring;
    QByteArray headState;     ///< TerminalState::save() at the ring's end
    QByteArray tailState;     ///< TerminalState::save() at the ring's start
    QList<quint64> marginResets; ///< offsets where a resize reset the margins
    /// Session::name() (empty: none). Appended after the last field of the
    /// metadata (marginResets in version 1, the screen in version 2): a
    /// state from a build without names reads as "no name".
    QString name;
    ScreenRecord screen;      ///< format version 2 on
    /// The session's read-only links. Appended to the metadata after
    /// `name`: a state from a build without them reads as none.
    QList<ShareRecord> shares;
    /// Session::outputHold(): the output offset from which the control
    /// viewer the restart closed may be missing bytes (the first byte the
    /// old image had not handed to the kernel for it, or a lower bound);
    /// the successor keeps the ring from there until it comes back
    /// (Session::holdOutput). nullopt: no hold. Appended to the metadata
    /// after `shares` (an i64, -1 for none): a state from a build without
    /// it reads as no hold.
    std::optional<quint64> outputHold;
    /// Session::commands(): CommandLog::save(), appended after outputHold;
    /// empty from a build without it (the list then starts empty).
    QByteArray commands;
    /// Session::notifySettings(). Appended after `commands` as one u32: bit
    /// 0 muted, bit 1 next, bit 2 activity, bits 8..31 silence (seconds);
    /// bit 3 is loginShell (below); bits 4..7 are for later settings and
    /// ignored. A state from a build without it reads as none set.
    bool notifyMuted = false;
    bool notifyNext = false;
    bool notifyActivity = false;
    int notifySilence = 0;
    /// Session::loginShell(): bit 3 of the flags word above; a state from
    /// a build without it reads as not a login shell.
    bool loginShell = false;

    qsizetype ringSize() const
    {
        qsizetype n = 0;
        for (const QByteArray &p : ring)
            n += p.size();
        return n;
    }
};

struct State {
    quint32 restarts = 0;     ///< restarts in place so far, this one included
    QString key;              ///< the access key in use
    int listenFd = -1;        ///< the listening socket
    QStringList issuedIds;    ///< every session id ever handed out (never reused)
    QList<pid_t> reap;        ///< children only waiting to be reaped
    QList<SessionRecord> sessions; ///< live sessions oldest first, then dying ones
    /// The TLS certificate chain and private key the server had loaded (PEM,
    /// the files' bytes), empty without TLS. The next image serves them when
    /// it cannot read its certificate files (TlsContext::loadPem), so that a
    /// restart with unreadable or damaged files keeps serving HTTPS (issue
    /// 10). The state is a memfd readable only through the fd handed over,
    /// closed once read; it holds the access key already.
    QByteArray tlsCertificatePem;
    QByteArray tlsKeyPem;
    /// read() only: the state's memory mapping, which the ring pieces point
    /// into; unmapped with the last copy of the State.
    std::shared_ptr<const void> mapping;
};

/// An entry of the bare fd list.
struct FdEntry {
    QString id;               ///< empty: a dying session (tear down, reap)
    int masterFd = -1;
    int pidfd = -1;
    pid_t pid = 0;
};

/// Encodes `state` (format version kVersion) into a new memfd and returns its
/// fd, with FD_CLOEXEC set (the caller clears it just before execve) and the
/// file offset at 0; -1 with *error (errno text) when memfd_create or a write
/// fails. Ring bytes are written from their pieces without copying them.
int writeMemfd(const State &state, QString *error);
/// The same encoding in memory (for tests and small states).
QByteArray encode(const State &state);
/// Decodes the state in fd `fd` (read from offset 0, whatever its position;
/// the fd is left open, and may be closed at once: the State keeps its
/// mapping). The rings are not copied out of the mapping (a restart would
/// otherwise hold each ring three times for a moment: the memfd, a decoded
/// copy, the new ring). False with *error naming what is wrong: not a
/// Tether state, a format version outside kOldestVersion..kVersion,
/// truncated, or a field out of range.
bool read(int fd, State *state, QString *error);
/// Decodes an encoding in memory; see read().
bool decode(const char *data, qsizetype size, State *state, QString *error);

/// The bare fd list of `state`: "ID:MASTER:PIDFD:PID" per session, separated
/// by single spaces (ids are base64url, so never contain ':' or ' '); ID is
/// empty for a dying session; -1 for a closed fd. Sessions with neither an
/// open master nor an unreaped leader are left out (nothing to adopt).
QByteArray fdList(const State &state);
/// Parses fdList()'s text. Malformed entries are skipped (*skipped counts them).
QList<FdEntry> parseFdList(const QByteArray &text, int *skipped = nullptr);

} // namespace Tether::Handover
