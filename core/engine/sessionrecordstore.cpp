// SPDX-License-Identifier: GPL-2.0-or-later
#include "sessionrecordstore.h"
#include "regularfile.h"
#include "logging.h"
#include "procinfo.h"
#include "registry.h"
#include "screen.h"
#include "session.h"
#include "terminalstate.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QSaveFile>
#include <QTimer>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace Tether {

struct SessionRecordStore::Tracker : QObject {
    Session *session = nullptr;
    QTimer timer;
    qint64 lastWriteMs = 0; ///< monotonic-ish wall ms of the last write; 0: never
    bool dirty = true;      ///< something changed since the last write
    bool urgent = false;    ///< the last viewer left: write without waiting for quiet
    int screenWaits = 0;    ///< turns spent waiting for the screen to catch up
};

namespace {
qint64 nowMs() { return QDateTime::currentMSecsSinceEpoch(); }

QString isoUtc(const QDateTime &t)
{
    return t.isValid() ? t.toUTC().toString(Qt::ISODate) : QString();
}

bool makePrivateDir(const QString &dir, QString *error)
{
    if (!QDir().mkpath(dir)) {
        if (error)
            *error = QStringLiteral("cannot create %1").arg(dir);
        return false;
    }
    ::chmod(QFile::encodeName(dir).constData(), 0700);
    // $XDG_STATE_HOME/tether too: nobody else has anything to look for there.
    const QString parent = QFileInfo(dir).absolutePath();
    if (QFileInfo(parent).fileName() == QLatin1String("tether"))
        ::chmod(QFile::encodeName(parent).constData(), 0700);
    return true;
}
} // namespace

QString SessionRecordStore::defaultDir()
{
    QString base = qEnvironmentVariable("XDG_STATE_HOME");
    if (base.isEmpty() || !QDir::isAbsolutePath(base))
        base = QDir::homePath() + QStringLiteral("/.local/state");
    return base + QStringLiteral("/tether/sessions");
}

QString SessionRecordStore::currentBootId()
{
    QString path = qEnvironmentVariable("TETHER_BOOT_ID_FILE");
    if (path.isEmpty())
        path = QStringLiteral("/proc/sys/kernel/random/boot_id");
    QFile f(path);
    if (!f.open(QIODevice::ReadOnly))
        return QString();
    return QString::fromLatin1(f.read(128).trimmed());
}

QString SessionRecordStore::fileFor(const QString &dir, const QString &id)
{
    return dir + QLatin1Char('/') + id + QStringLiteral(".json");
}

SessionRecordStore::SessionRecordStore(SessionRegistry *registry, const QString &dir, int lines, QObject *parent)
    : QObject(parent)
    , m_registry(registry)
    , m_dir(dir)
    , m_lines(std::clamp(lines, 0, Screen::kMaxScrollbackLines))
    , m_bootId(currentBootId())
{
    m_io.setMaxThreadCount(1); // in order
    m_io.setExpiryTimeout(5000); // the thread goes when idle: no cost at rest
}

SessionRecordStore::~SessionRecordStore()
{
    m_io.waitForDone();
    qDeleteAll(m_trackers);
}

void SessionRecordStore::enqueue(std::function<void()> job)
{
    m_io.start(std::move(job));
}

void SessionRecordStore::flush()
{
    m_io.waitForDone();
}

void SessionRecordStore::setTiming(int idleMs, int minIntervalMs)
{
    m_idleMs = std::max(0, idleMs);
    m_minIntervalMs = std::max(0, minIntervalMs);
}

void SessionRecordStore::start()
{
    m_started = true;
    if (isEnabled())
        follow();
}

void SessionRecordStore::setLines(int lines)
{
    lines = std::clamp(lines, 0, Screen::kMaxScrollbackLines);
    if (lines == m_lines)
        return;
    const bool was = isEnabled();
    m_lines = lines;
    if (!m_started || m_shuttingDown || was == isEnabled())
        return; // the next save takes the new number of lines
    if (isEnabled()) {
        follow();
        return;
    }
    // Turned off: nothing more is written, and what this run wrote goes.
    disconnect(m_registry, nullptr, this, nullptr);
    for (Session *s : m_trackers.keys())
        untrack(s, true);
}

void SessionRecordStore::follow()
{
    connect(m_registry, &SessionRegistry::sessionAdded, this, &SessionRecordStore::track);
    connect(m_registry, &SessionRegistry::sessionRemoved, this, [this](Session *s) {
        untrack(s, !m_shuttingDown);
    });
    for (Session *s : m_registry->sessions())
        track(s);
}

void SessionRecordStore::track(Session *s)
{
    if (m_trackers.contains(s) || s->state() == Session::State::Exited || m_shuttingDown)
        return;
    auto *t = new Tracker;
    t->session = s;
    t->timer.setSingleShot(true);
    connect(&t->timer, &QTimer::timeout, this, [this, t] { onTimer(t); });
    m_trackers.insert(s, t);
    // The output path: one bool test per read once dirty.
    connect(s, &Session::outputArrived, t, [this, t] {
        if (!t->dirty) {
            t->dirty = true;
            t->timer.start(m_idleMs);
        }
    });
    const auto changed = [this, t] {
        t->dirty = true;
        if (!t->timer.isActive())
            t->timer.start(m_idleMs);
    };
    connect(s, &Session::titleChanged, t, changed);
    connect(s, &Session::nameChanged, t, changed);
    connect(s, &Session::viewersChanged, t, [this, t] {
        if (t->session->viewerCount() == 0 && t->dirty) {
            t->urgent = true;
            t->timer.start(0);
        }
    });
    connect(s, &QObject::destroyed, this, [this, s] { untrack(s, false); });
    // A session that ended normally is forgotten.
    connect(s, &Session::exited, this, [this, s] {
        if (!m_shuttingDown)
            untrack(s, true);
    });
    t->timer.start(m_idleMs); // a first record, once it is quiet
}

void SessionRecordStore::untrack(Session *s, bool removeFile)
{
    Tracker *t = m_trackers.take(s);
    if (!t)
        return;
    delete t; // disconnects its lambdas
    if (removeFile) {
        const QString file = fileFor(m_dir, s->id()), id = s->id();
        enqueue([file, id] {
            if (QFile::remove(file))
                qCDebug(lcRegistry) << "record of session" << id << "removed: it ended";
        });
    }
}

void SessionRecordStore::onTimer(Tracker *t)
{
    Session *s = t->session;
    const qint64 now = nowMs();
    if (!t->urgent) {
        const qint64 quiet = now - s->lastActivity().toMSecsSinceEpoch();
        if (quiet < m_idleMs) {
            t->timer.start(int(m_idleMs - quiet));
            return;
        }
    }
    if (t->lastWriteMs > 0 && now - t->lastWriteMs < m_minIntervalMs) {
        t->timer.start(int(m_minIntervalMs - (now - t->lastWriteMs)));
        return;
    }
    // The screen is waited for kMaxScreenWaits turns at most; then the
    // record takes what it shows.
    if (!save(s, t->screenWaits >= kMaxScreenWaits)) { // the screen has not caught up yet
        ++t->screenWaits;
        t->timer.start(kScreenWaitMs);
    }
}

SessionRecord SessionRecordStore::recordOf(Session *s) const
{
    SessionRecord r;
    r.id = s->id();
    r.name = s->name();
    r.command = s->command();
    r.loginShell = s->loginShell();
    r.cwd = processCwd(s->pid());
    if (r.cwd.isEmpty())
        r.cwd = s->cwd();
    r.title = s->title();
    r.created = s->created();
    r.saved = QDateTime::currentDateTimeUtc();
    r.bootId = m_bootId;
    r.cols = s->cols();
    r.rows = s->rows();
    if (const Screen *screen = s->screen()) {
        Screen::SnapshotOptions o;
        o.scrollbackLines = int(std::min<qsizetype>(m_lines, screen->scrollbackLineCount()));
        o.inPlace = false;
        o.synchronized = false;
        r.screen = screen->snapshot(o);
        r.scrollbackLines = o.scrollbackLines;
    }
    return r;
}

bool SessionRecordStore::save(Session *s, bool force)
{
    if (!isEnabled())
        return false;
    if (!force && s->screenEnabled()) {
        s->ensureScreen();
        // Wait for the screen to reach the end of the output (it parses on
        // its own timer, off the output path).
        if (s->hasScreen() && s->screenOffset() < s->offset())
            return false;
    }
    // The record is what the session shows now; the write is the I/O
    // thread's. Output after this marks it dirty again.
    const SessionRecord r = recordOf(s);
    if (Tracker *t = m_trackers.value(s)) {
        t->lastWriteMs = nowMs();
        t->dirty = false;
        t->urgent = false;
        t->screenWaits = 0;
    }
    const QString dir = m_dir;
    enqueue([this, dir, r, hook = m_beforeWrite] {
        if (hook)
            hook();
        QString why;
        const bool ok = write(dir, r, &why);
        // Back on the event loop (the store outlives its queue: the
        // destructor drains it, and Qt drops events of a deleted receiver).
        QMetaObject::invokeMethod(this, [this, ok, why, id = r.id] { onWritten(id, ok, why); }, Qt::QueuedConnection);
    });
    return true;
}

void SessionRecordStore::onWritten(const QString &id, bool ok, const QString &error)
{
    if (ok) {
        Q_EMIT saved(id);
        return;
    }
    // A full disk or the like: try again after the rate limit, not in a loop.
    qCWarning(lcRegistry).noquote() << "cannot save the record of session" << id << ":" << error;
    for (Tracker *t : std::as_const(m_trackers)) {
        if (t->session->id() == id && !m_shuttingDown) {
            t->dirty = true;
            t->timer.start(m_minIntervalMs);
        }
    }
}

void SessionRecordStore::shutdown()
{
    if (!isEnabled() || m_shuttingDown)
        return;
    m_shuttingDown = true;
    flush(); // the writes in flight first: the ones below are the last word
    for (Tracker *t : std::as_const(m_trackers)) {
        t->timer.stop();
        QString error;
        SessionRecord r;
        if (t->dirty || !read(fileFor(m_dir, t->session->id()), &r, &error)) {
            // Nothing to wait with: the screen parses what it has not yet
            // here, kShutdownParseBytes at most.
            t->session->ensureScreen(kShutdownParseBytes);
            r = recordOf(t->session);
        }
        r.shutdown = true;
        if (!write(m_dir, r, &error))
            qCWarning(lcRegistry).noquote() << "cannot save the record of session" << r.id << ":" << error;
    }
}

bool SessionRecordStore::write(const QString &dir, const SessionRecord &r, QString *error)
{
    if (!makePrivateDir(dir, error))
        return false;
    QJsonObject o;
    o.insert(QStringLiteral("version"), 1);
    o.insert(QStringLiteral("id"), r.id);
    o.insert(QStringLiteral("name"), r.name);
    o.insert(QStringLiteral("command"), QJsonArray::fromStringList(r.command));
    o.insert(QStringLiteral("login_shell"), r.loginShell);
    o.insert(QStringLiteral("cwd"), r.cwd);
    o.insert(QStringLiteral("title"), r.title);
    o.insert(QStringLiteral("created"), isoUtc(r.created));
    o.insert(QStringLiteral("saved"), isoUtc(r.saved));
    o.insert(QStringLiteral("boot_id"), r.bootId);
    o.insert(QStringLiteral("shutdown"), r.shutdown);
    o.insert(QStringLiteral("cols"), r.cols);
    o.insert(QStringLiteral("rows"), r.rows);
    o.insert(QStringLiteral("scrollback_lines"), r.scrollbackLines);
    o.insert(QStringLiteral("screen"), QString::fromLatin1(r.screen.toBase64()));
    QSaveFile f(fileFor(dir, r.id));
    if (!f.open(QIODevice::WriteOnly)) {
        if (error)
            *error = f.errorString();
        return false;
    }
    f.setPermissions(QFileDevice::ReadOwner | QFileDevice::WriteOwner);
    f.write(QJsonDocument(o).toJson(QJsonDocument::Compact));
    if (!f.commit()) {
        if (error)
            *error = f.errorString();
        return false;
    }
    return true;
}

bool SessionRecordStore::read(const QString &file, SessionRecord *r, QString *error)
{
    *r = SessionRecord();
    // Only a regular file Tether wrote: a symlink is never followed, and
    // what the opened fd is (not the name, which may change in between)
    // must be a regular file; a FIFO is refused instead of waited on.
    QByteArray bytes;
    if (!readRegularFile(file, kMaxRecordBytes, Symlinks::Refuse, &bytes, error))
        return false;
    if (bytes.size() > kMaxRecordBytes) {
        *error = QStringLiteral("larger than %1 bytes").arg(kMaxRecordBytes);
        return false;
    }
    QJsonParseError pe;
    const QJsonDocument doc = QJsonDocument::fromJson(bytes, &pe);
    if (pe.error != QJsonParseError::NoError || !doc.isObject()) {
        *error = QStringLiteral("not a JSON object: %1").arg(pe.errorString());
        return false;
    }
    const QJsonObject o = doc.object();
    r->id = o.value(QStringLiteral("id")).toString();
    if (r->id.isEmpty() || QFileInfo(file).fileName() != r->id + QStringLiteral(".json")) {
        *error = QStringLiteral("its id does not match its file name");
        return false;
    }
    r->name = o.value(QStringLiteral("name")).toString();
    for (const QJsonValue &v : o.value(QStringLiteral("command")).toArray())
        r->command.append(v.toString());
    r->loginShell = o.value(QStringLiteral("login_shell")).toBool(); // absent (an older record): false
    r->cwd = o.value(QStringLiteral("cwd")).toString();
    r->title = o.value(QStringLiteral("title")).toString();
    r->created = QDateTime::fromString(o.value(QStringLiteral("created")).toString(), Qt::ISODate);
    r->saved = QDateTime::fromString(o.value(QStringLiteral("saved")).toString(), Qt::ISODate);
    r->bootId = o.value(QStringLiteral("boot_id")).toString();
    r->shutdown = o.value(QStringLiteral("shutdown")).toBool();
    r->cols = std::clamp(o.value(QStringLiteral("cols")).toInt(80), 1, 1000);
    r->rows = std::clamp(o.value(QStringLiteral("rows")).toInt(24), 1, 1000);
    r->scrollbackLines = o.value(QStringLiteral("scrollback_lines")).toInt();
    r->screen = QByteArray::fromBase64(o.value(QStringLiteral("screen")).toString().toLatin1());
    if (r->command.isEmpty()) {
        *error = QStringLiteral("no command");
        return false;
    }
    return true;
}

int SessionRecordStore::loadEnded()
{
    m_ended.clear();
    // QDir::System too: a FIFO, socket or device named like a record is
    // said (and refused by read()), not silently passed over.
    const QFileInfoList files = QDir(m_dir).entryInfoList({QStringLiteral("*.json")}, QDir::Files | QDir::System);
    for (const QFileInfo &fi : files) {
        SessionRecord r;
        QString error;
        if (!read(fi.absoluteFilePath(), &r, &error)) {
            qCWarning(lcRegistry).noquote() << "session record" << fi.absoluteFilePath() << "is not used:" << error;
            continue;
        }
        if (m_registry->find(r.id))
            continue; // held (a restart in place): a live session
        m_ended.append(r);
    }
    std::sort(m_ended.begin(), m_ended.end(),
              [](const SessionRecord &a, const SessionRecord &b) { return a.created < b.created; });
    if (!m_ended.isEmpty())
        qCInfo(lcRegistry) << m_ended.size() << "ended sessions found in" << m_dir;
    return int(m_ended.size());
}

const SessionRecord *SessionRecordStore::findEnded(const QString &id) const
{
    for (const SessionRecord &r : m_ended)
        if (r.id == id)
            return &r;
    return nullptr;
}

QString SessionRecordStore::why(const SessionRecord &r) const
{
    if (r.bootId != m_bootId)
        return QStringLiteral("reboot");
    return r.shutdown ? QStringLiteral("shutdown") : QStringLiteral("crash");
}

bool SessionRecordStore::forget(const QString &id)
{
    for (int i = 0; i < m_ended.size(); ++i) {
        if (m_ended.at(i).id == id) {
            m_ended.removeAt(i);
            const QString file = fileFor(m_dir, id);
            enqueue([file] { QFile::remove(file); });
            Q_EMIT endedChanged();
            return true;
        }
    }
    return false;
}

QJsonObject SessionRecordStore::toJson(const SessionRecord &r) const
{
    QJsonObject o;
    o.insert(QStringLiteral("id"), r.id);
    o.insert(QStringLiteral("name"), r.name);
    o.insert(QStringLiteral("command"), QJsonArray::fromStringList(r.command));
    o.insert(QStringLiteral("cwd"), r.cwd);
    o.insert(QStringLiteral("pid"), QJsonValue::Null);
    o.insert(QStringLiteral("title"), r.title);
    o.insert(QStringLiteral("created"), isoUtc(r.created));
    o.insert(QStringLiteral("state"), QStringLiteral("ended"));
    o.insert(QStringLiteral("ended"), why(r));
    o.insert(QStringLiteral("ended_at"), isoUtc(r.saved));
    o.insert(QStringLiteral("exit_code"), QJsonValue::Null);
    o.insert(QStringLiteral("exit_signal"), QJsonValue::Null);
    o.insert(QStringLiteral("attached"), false);
    o.insert(QStringLiteral("viewers"), 0);
    o.insert(QStringLiteral("cols"), r.cols);
    o.insert(QStringLiteral("rows"), r.rows);
    o.insert(QStringLiteral("saved_screen_bytes"), int(r.screen.size()));
    o.insert(QStringLiteral("saved_scrollback_lines"), r.scrollbackLines);
    return o;
}

QByteArray SessionRecordStore::revivePreamble(const SessionRecord &r, const QString &why)
{
    return screenPreamble(r, "--- tether: session ended by " + why.toUtf8() + " at "
                              + r.saved.toUTC().toString(QStringLiteral("yyyy-MM-dd HH:mm:ss")).toUtf8()
                              + " UTC; revived ---");
}

QByteArray SessionRecordStore::screenWithLines(const SessionRecord &r, int lines, bool *parsed)
{
    if (parsed)
        *parsed = false;
    lines = std::max(lines, 0);
    if (lines >= r.scrollbackLines || r.screen.isEmpty())
        return r.screen;
    // The layout Screen::snapshot gives recordOf() (from a reset terminal, not
    // synchronized, scrollbackLines > 0): reset prefix, autowrap on, each
    // line (cells and SGR, never CR or LF) + EL CR LF, rows - 1 LF, then the
    // screen painted from a CUP. Checked, then cut.
    static const QByteArray prefix("\x1b[?1047l\x1b[0m\x1b[?6l\x1b[r\x1b[4l\x1b(B\x0f");
    static const QByteArray wrap("\x1b[?7h");
    static const QByteArray end("\x1b[K\r\n");
    const QByteArray &b = r.screen;
    const auto cut = [&]() -> QByteArray {
        if (!b.startsWith(prefix + wrap))
            return {};
        qsizetype at = prefix.size() + wrap.size();
        qsizetype keepFrom = -1;
        for (int i = 0; i < r.scrollbackLines; ++i) {
            if (i == r.scrollbackLines - lines)
                keepFrom = at;
            const qsizetype e = b.indexOf(end, at);
            if (e < 0)
                return {};
            // A line holds no CR or LF: one that does is not this layout.
            for (qsizetype k = at; k < e; ++k)
                if (b.at(k) == '\r' || b.at(k) == '\n')
                    return {};
            at = e + end.size();
        }
        const qsizetype feeds = qsizetype(std::max(r.rows - 1, 0));
        for (qsizetype k = 0; k < feeds; ++k)
            if (at + k >= b.size() || b.at(at + k) != '\n')
                return {};
        if (!b.mid(at + feeds, 2).startsWith("\x1b["))
            return {};
        if (lines == 0)
            return prefix + b.mid(at + feeds);
        return prefix + wrap + b.mid(keepFrom, at - keepFrom) + b.mid(at);
    };
    QByteArray out = cut();
    if (!out.isEmpty())
        return out;
    // Another layout: parsed again at the saved size.
    if (parsed)
        *parsed = true;
    Screen screen(r.cols, r.rows);
    screen.feed(b);
    Screen::SnapshotOptions o;
    o.scrollbackLines = lines;
    o.inPlace = false;
    o.synchronized = false;
    return screen.snapshot(o);
}

QByteArray SessionRecordStore::screenPreamble(const SessionRecord &r, const QByteArray &marker)
{
    QByteArray out = r.screen;
    // Where the screen leaves the cursor, and whether in the alternate
    // screen: the marker goes on the line below the cursor (below a
    // shell's last prompt), or below everything when a full-screen program
    // was in front (its normal screen is shown again).
    Screen screen(r.cols, r.rows);
    screen.feed(r.screen);
    const bool alt = screen.modes().hasMode(TerminalState::AltScreen);
    const int row = alt ? screen.rows() : screen.cursorRow() + 1;
    // Back to a fresh terminal's modes: the normal screen (?1047: no cursor
    // restore), no margins or origin mode (both home the cursor, hence the
    // CUP after), default pen and charsets, cursor shown, no mouse or paste
    // modes, cursor and keypad keys in normal mode, autowrap on.
    out += "\x1b[?1047l\x1b[?6l\x1b[r\x1b[0m\x1b[?25h\x1b[?1000l\x1b[?1002l\x1b[?1003l\x1b[?1006l"
           "\x1b[?2004l\x1b[?1l\x1b>\x1b[?7h\x1b[4l\x1b(B\x0f";
    if (!r.screen.isEmpty())
        out += "\x1b[" + QByteArray::number(row) + ";1H\r\n";
    // The marker line (docs/protocol.md, "Ended sessions").
    out += "\x1b[7m" + marker + "\x1b[0m\r\n";
    return out;
}

} // namespace Tether
