// SPDX-License-Identifier: GPL-2.0-or-later
#include "sessionjson.h"
#include "procinfo.h"
#include "registry.h"
#include "session.h"

namespace Tether {

namespace {
QJsonValue isoOrNull(const QDateTime &t)
{
    if (!t.isValid())
        return QJsonValue(QJsonValue::Null);
    return t.toUTC().toString(Qt::ISODate);
}
} // namespace

QString viewerKindName(ViewerKind kind)
{
    switch (kind) {
    case ViewerKind::Browser: return QStringLiteral("browser");
    case ViewerKind::LocalWindow: return QStringLiteral("local");
    case ViewerKind::Cli: return QStringLiteral("cli");
    case ViewerKind::Other: break;
    }
    return QStringLiteral("other");
}

QJsonObject sessionToJson(const Session *s, const SessionRegistry *registry)
{
    QJsonObject o;
    o.insert(QStringLiteral("id"), s->id());
    o.insert(QStringLiteral("name"), s->name());
    o.insert(QStringLiteral("command"), QJsonArray::fromStringList(s->command()));
    o.insert(QStringLiteral("cwd"), s->cwd());
    o.insert(QStringLiteral("pid"), qint64(s->pid()));
    o.insert(QStringLiteral("title"), s->title());
    // The program in front (tmux's pane_current_command): the terminal's
    // foreground process group, named by its leader's /proc comm.
    const pid_t fg = s->foregroundProcessGroup();
    const QString fgName = fg > 0 ? processName(fg) : QString();
    o.insert(QStringLiteral("foreground"), fgName.isEmpty() ? QJsonValue(QJsonValue::Null)
             : QJsonValue(QJsonObject{{QStringLiteral("pid"), qint64(fg)}, {QStringLiteral("name"), fgName}}));
    o.insert(QStringLiteral("created"), isoOrNull(s->created()));
    const bool exited = s->state() == Session::State::Exited;
    o.insert(QStringLiteral("state"), exited ? QStringLiteral("exited") : QStringLiteral("running"));
    const ExitStatus st = s->exitStatus();
    o.insert(QStringLiteral("exit_code"), exited && !st.signaled ? QJsonValue(st.code) : QJsonValue(QJsonValue::Null));
    o.insert(QStringLiteral("exit_signal"), exited && st.signaled ? QJsonValue(st.signal) : QJsonValue(QJsonValue::Null));
    Viewer *control = s->controlViewer();
    o.insert(QStringLiteral("attached"), control != nullptr);
    o.insert(QStringLiteral("viewers"), s->viewerCount());
    o.insert(QStringLiteral("viewer_kind"), control ? QJsonValue(viewerKindName(control->kind())) : QJsonValue(QJsonValue::Null));
    o.insert(QStringLiteral("detached_since"), s->viewerCount() == 0 ? isoOrNull(s->detachedSince()) : QJsonValue(QJsonValue::Null));
    const qint64 expires = registry ? registry->expiresIn(s) : -1;
    o.insert(QStringLiteral("expires_in"), expires >= 0 ? QJsonValue(expires) : QJsonValue(QJsonValue::Null));
    const QDateTime last = s->lastActivity();
    const qint64 idle = last.isValid() ? qMax<qint64>(0, last.secsTo(QDateTime::currentDateTimeUtc())) : 0;
    o.insert(QStringLiteral("idle_seconds"), idle);
    o.insert(QStringLiteral("cols"), s->cols());
    o.insert(QStringLiteral("rows"), s->rows());
    o.insert(QStringLiteral("offset"), double(s->offset()));
    o.insert(QStringLiteral("buffer_bytes"), double(s->buffer().size()));
    o.insert(QStringLiteral("buffer_capacity"), double(s->buffer().capacity()));
    // The server-side screen (docs/protocol.md): its memory, and whether a
    // reset replay gets a snapshot (synced) and from where (offset = S).
    o.insert(QStringLiteral("screen_bytes"), double(s->screenBytes()));
    o.insert(QStringLiteral("screen"), s->hasScreen()
             ? QJsonValue(QJsonObject{{QStringLiteral("synced"), s->screenSynced()},
                                      {QStringLiteral("offset"), double(s->screenOffset())}})
             : QJsonValue(QJsonValue::Null));
    return o;
}

QJsonObject sessionListJson(const SessionRegistry *registry)
{
    QJsonArray list;
    const auto sessions = registry->sessions();
    for (const Session *s : sessions)
        list.append(sessionToJson(s, registry));
    QJsonObject o;
    o.insert(QStringLiteral("sessions"), list);
    return o;
}

} // namespace Tether
