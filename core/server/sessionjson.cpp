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
    o.insert(QStringLiteral("shell"), shellToJson(s));
    const Session::NotifySettings n = s->notifySettings();
    o.insert(QStringLiteral("notify"), QJsonObject{{QStringLiteral("muted"), n.muted}, {QStringLiteral("next"), n.next},
                                                   {QStringLiteral("activity"), n.activity},
                                                   {QStringLiteral("silence"), n.silence}});
    return o;
}

QJsonObject commandToJson(const CommandRecord &c)
{
    QJsonObject o;
    o.insert(QStringLiteral("id"), double(c.id));
    o.insert(QStringLiteral("command_line"), c.commandLine);
    o.insert(QStringLiteral("cwd"), c.cwd);
    o.insert(QStringLiteral("started"), isoOrNull(QDateTime::fromMSecsSinceEpoch(c.startMs, Qt::UTC)));
    const bool running = c.running();
    o.insert(QStringLiteral("ended"), running ? QJsonValue(QJsonValue::Null)
                                              : isoOrNull(QDateTime::fromMSecsSinceEpoch(c.endMs, Qt::UTC)));
    const qint64 end = running ? QDateTime::currentMSecsSinceEpoch() : c.endMs;
    o.insert(QStringLiteral("duration_ms"), double(std::max<qint64>(0, end - c.startMs)));
    o.insert(QStringLiteral("exit_status"), c.exitStatus ? QJsonValue(*c.exitStatus) : QJsonValue(QJsonValue::Null));
    o.insert(QStringLiteral("running"), running);
    o.insert(QStringLiteral("output_start"), double(c.outputStart));
    o.insert(QStringLiteral("output_end"), running ? QJsonValue(QJsonValue::Null) : QJsonValue(double(c.outputEnd)));
    return o;
}

QJsonObject shellToJson(const Session *s)
{
    const CommandLog &log = s->commands();
    QString state = QStringLiteral("unknown");
    if (log.state() == CommandLog::ShellState::Prompt)
        state = QStringLiteral("prompt");
    else if (log.state() == CommandLog::ShellState::Running)
        state = QStringLiteral("running");
    QJsonObject o;
    o.insert(QStringLiteral("state"), state);
    o.insert(QStringLiteral("cwd"), log.cwd());
    const CommandRecord *last = log.last();
    o.insert(QStringLiteral("command"), last ? QJsonValue(commandToJson(*last)) : QJsonValue(QJsonValue::Null));
    return o;
}

QJsonObject commandListJson(const Session *s)
{
    QJsonArray list;
    for (const CommandRecord &c : s->commands().commands())
        list.append(commandToJson(c));
    QJsonObject o;
    o.insert(QStringLiteral("session"), s->id());
    o.insert(QStringLiteral("shell"), shellToJson(s));
    o.insert(QStringLiteral("commands"), list);
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
