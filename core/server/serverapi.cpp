// SPDX-License-Identifier: GPL-2.0-or-later
// Server's REST API (docs/protocol.md): the dispatch of /api/... routes and
// the session endpoints (create, rename and notify settings, input), the
// settings and /api/restart. The ended sessions' endpoints are in
// serverrecords.cpp, the read-only links' in servershares.cpp, the event
// stream in serverevents.cpp.
#include "server.h"
#include "httpconnection.h"
#include "logging.h"
#include "registry.h"
#include "route.h"
#include "serverutil.h"
#include "sessionjson.h"
#include "sessionrecordstore.h"
#include "settingsapi.h"
#include "sharestore.h"
#include "spawnrequest.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QSettings>

#include <algorithm>
#include <cmath>

namespace Tether {

void Server::serveApi(HttpConnection *c, const Route &route)
{
    if (!m_registry) {
        c->respondError(503, QStringLiteral("server shutting down"));
        return;
    }
    if (!c->shareToken().isEmpty()) {
        // shareAccess() let only this through; checked again, so that no
        // later change of the routing can widen what a link grants.
        ShareStore::Share share;
        const bool found = m_shares->find(c->shareToken().toLatin1(), &share);
        Session *s = found ? m_registry->find(share.sessionId) : nullptr;
        if (route.kind != Route::Kind::GetSession || !s || !shareCovers(share.sessionId, route.id)) {
            c->respondError(403, QStringLiteral("a read-only link can only watch its own session"));
            return;
        }
        // What a watcher needs to show the session, not how it runs (the
        // command line, directory and processes may hold what the owner
        // did not mean to show).
        const QJsonObject full = sessionToJson(s, m_registry);
        QJsonObject o;
        for (const char *field : {"id", "name", "title", "created", "state", "exit_code", "exit_signal", "cols", "rows"})
            o.insert(QLatin1String(field), full.value(QLatin1String(field)));
        o.insert(QStringLiteral("read_only"), true);
        c->respondJson(200, o);
        return;
    }
    switch (route.kind) {
    case Route::Kind::ListShares:
    case Route::Kind::CreateShare:
    case Route::Kind::RevokeShare:
    case Route::Kind::RevokeSessionShares:
        serveShares(c, route);
        return;
    case Route::Kind::ListSessions:
        c->respondJson(200, listJson());
        return;
    case Route::Kind::CreateSession:
        createSession(c);
        return;
    case Route::Kind::GetSession:
        if (Session *s = m_registry->find(route.id))
            c->respondJson(200, sessionToJson(s, m_registry));
        else if (const SessionRecord *r = endedRecord(route.id))
            c->respondJson(200, m_records->toJson(*r));
        else if (Session *named = m_registry->find(sessionNamedByCarriedLink(c, route.id)))
            c->respondJson(200, sessionToJson(named, m_registry));
        else
            c->respondError(404, QStringLiteral("no such session"));
        return;
    case Route::Kind::DeleteSession:
        // An ended session's record is forgotten (docs/protocol.md, "Ended sessions").
        if (m_registry->kill(route.id) || (m_records && m_records->forget(route.id)))
            c->respond(204, Headers(), QByteArray());
        else
            c->respondError(404, QStringLiteral("no such session"));
        return;
    case Route::Kind::PatchSession:
        if (!refuseEnded(c, route.id))
            patchSession(c, route.id);
        return;
    case Route::Kind::SessionScreen:
        serveSavedScreen(c, route.id);
        return;
    case Route::Kind::ReviveSession:
        reviveSession(c, route.id);
        return;
    case Route::Kind::SessionCommands:
        if (Session *s = m_registry->find(route.id))
            c->respondJson(200, commandListJson(s));
        else
            c->respondError(404, QStringLiteral("no such session"));
        return;
    case Route::Kind::CommandOutput:
        serveCommandOutput(c, route.id, route.command);
        return;
    case Route::Kind::SessionInput:
        if (!refuseEnded(c, route.id))
            sessionInput(c, route.id);
        return;
    case Route::Kind::RotateKey: {
        QString error;
        if (!rotateAccessKey(&error)) {
            c->respondError(500, QStringLiteral("cannot store the new key: %1").arg(error));
            return;
        }
        QJsonObject o;
        o.insert(QStringLiteral("key"), m_key);
        o.insert(QStringLiteral("url"), keyedUrl());
        c->respondJson(200, o);
        return;
    }
    case Route::Kind::Restart:
        serveRestart(c);
        return;
    case Route::Kind::Events: {
        const QString output = c->request().query().queryItemValue(QStringLiteral("output"));
        if (!output.isEmpty() && output != QLatin1String("0") && output != QLatin1String("1")) {
            c->respondError(400, QStringLiteral("output must be 0 or 1"));
            return;
        }
        startEventStream(c);
        if (output == QLatin1String("1") && m_eventStreams.contains(c))
            m_outputStreams.insert(c);
        return;
    }
    case Route::Kind::Settings:
        serveSettings(c);
        return;
    case Route::Kind::MethodNotAllowed:
        c->respondError(405, QStringLiteral("method not allowed"), header("Allow", route.allow));
        return;
    default:
        c->respondError(404, QStringLiteral("not found"));
        return;
    }
}

namespace {
/// The HTTP status of a refused name.
int nameErrorStatus(SessionRegistry::CreateError error)
{
    // 409 Conflict: the request is fine but clashes with another session
    // (RFC 9110 section 15.5.10); a malformed name is the request's fault.
    return error == SessionRegistry::CreateError::NameTaken ? 409 : 400;
}
} // namespace

void Server::createSession(HttpConnection *c)
{
    const SpawnRequest request = parseSpawnRequest(c->request().body(), m_config.commandArgv());
    if (!request.ok()) {
        c->respondError(request.status, request.error);
        return;
    }
    const SpawnOptions &opts = request.options;
    if (m_registry->isShuttingDown()) {
        c->respondError(503, QStringLiteral("server shutting down"));
        return;
    }
    SessionRegistry::CreateError error = SessionRegistry::CreateError::None;
    QString errorText;
    QString evicted;
    Session *s = m_registry->create(opts, request.name, &error, &errorText, &evicted);
    if (!s) {
        if (error == SessionRegistry::CreateError::BadName || error == SessionRegistry::CreateError::NameTaken)
            c->respondError(nameErrorStatus(error), errorText);
        else if (error == SessionRegistry::CreateError::TooManySessions)
            c->respondError(503, errorText.isEmpty() ? QStringLiteral("too many sessions") : errorText);
        else if (error == SessionRegistry::CreateError::OutOfResources)
            // Not the command's fault (that is 422): the server is out of
            // file descriptors, PTYs, processes or memory; retrying later can
            // work (protocol.md, POST /api/sessions).
            c->respondError(503, QStringLiteral("out of resources, try again later: %1").arg(errorText));
        else
            c->respondError(422, errorText.isEmpty() ? QStringLiteral("command cannot start") : errorText);
        return;
    }
    qCInfo(lcServer) << "session created:" << s->id();
    QJsonObject j = sessionToJson(s, m_registry);
    // Which detached session was ended to make room (protocol.md, POST).
    j.insert(QStringLiteral("evicted"), evicted.isEmpty() ? QJsonValue(QJsonValue::Null) : QJsonValue(evicted));
    c->respondJson(201, j, header("Location", "/api/sessions/" + QUrl::toPercentEncoding(s->id())));
}

void Server::patchSession(HttpConnection *c, const QString &id)
{
    Session *s = m_registry->find(id);
    if (!s) {
        c->respondError(404, QStringLiteral("no such session"));
        return;
    }
    QJsonParseError err;
    const QJsonDocument doc = QJsonDocument::fromJson(c->request().body().trimmed(), &err);
    if (err.error != QJsonParseError::NoError) {
        c->respondError(400, QStringLiteral("invalid JSON: %1").arg(err.errorString()));
        return;
    }
    if (!doc.isObject()) {
        c->respondError(400, QStringLiteral("body must be a JSON object"));
        return;
    }
    const QJsonObject body = doc.object();
    const QJsonValue name = body.value(QStringLiteral("name"));
    const QJsonValue notify = body.value(QStringLiteral("notify"));
    if (name.isUndefined() && notify.isUndefined()) {
        // A body with nothing known to change is a mistake, not a no-op.
        c->respondError(400, QStringLiteral("nothing to change: the body has no \"name\" and no \"notify\""));
        return;
    }
    if (!name.isUndefined() && !name.isString() && !name.isNull()) {
        c->respondError(400, QStringLiteral("name must be a string or null"));
        return;
    }
    // Every field is checked before anything changes: a bad body changes nothing.
    Session::NotifySettings settings = s->notifySettings();
    if (!notify.isUndefined()) {
        if (!notify.isObject()) {
            c->respondError(400, QStringLiteral("notify must be an object: {\"muted\": true|false, \"next\": true|false, "
                                                "\"activity\": true|false, \"silence\": SECONDS}"));
            return;
        }
        const QJsonObject n = notify.toObject();
        for (const QString &field : {QStringLiteral("muted"), QStringLiteral("next"), QStringLiteral("activity")}) {
            const QJsonValue v = n.value(field);
            if (!v.isUndefined() && !v.isBool()) {
                c->respondError(400, QStringLiteral("notify.%1 must be true or false").arg(field));
                return;
            }
        }
        const QJsonValue silence = n.value(QStringLiteral("silence"));
        if (!silence.isUndefined()
            && (!silence.isDouble() || silence.toDouble() != std::floor(silence.toDouble()) || silence.toDouble() < 0
                || silence.toDouble() > Session::kMaxSilenceSeconds)) {
            c->respondError(400, QStringLiteral("notify.silence must be an integer 0..%1 (seconds; 0: off)")
                                     .arg(Session::kMaxSilenceSeconds));
            return;
        }
        settings.muted = n.value(QStringLiteral("muted")).toBool(settings.muted);
        settings.next = n.value(QStringLiteral("next")).toBool(settings.next);
        settings.activity = n.value(QStringLiteral("activity")).toBool(settings.activity);
        if (!silence.isUndefined())
            settings.silence = int(silence.toDouble());
    }
    if (!name.isUndefined()) {
        SessionRegistry::CreateError error = SessionRegistry::CreateError::None;
        QString errorText;
        if (!m_registry->rename(s, name.toString(), &error, &errorText)) {
            c->respondError(nameErrorStatus(error), errorText);
            return;
        }
        qCInfo(lcServer) << "session renamed:" << s->id();
    }
    s->setNotifySettings(settings);
    c->respondJson(200, sessionToJson(s, m_registry));
}

// --- settings ------------------------------------------------------------------

void Server::setSettingsFile(const QString &path)
{
    m_settingsFile = path;
    if (path.isEmpty())
        return;
    QSettings file(path, QSettings::IniFormat);
    const HostConfig saved = HostConfig::load(file);
    m_startBind = saved.bind;
    m_startPort = saved.port;
}

void Server::serveSettings(HttpConnection *c)
{
    // What runs (limits, command) and, for the address, what the next start
    // uses.
    HostConfig view = m_config;
    view.limits = m_registry->limits();
    if (m_records)
        view.savedScrollbackLines = m_records->lines();
    if (!m_settingsFile.isEmpty()) {
        QSettings file(m_settingsFile, QSettings::IniFormat);
        const HostConfig saved = HostConfig::load(file);
        view.bind = saved.bind;
        view.port = saved.port;
    }
    auto answer = [this](const HostConfig &shown) {
        QJsonObject o = SettingsApi::toJson(shown);
        o.insert(QStringLiteral("saved"), !m_settingsFile.isEmpty());
        o.insert(QStringLiteral("serving"), QJsonObject{{QStringLiteral("bind"), m_config.bind},
                                                        {QStringLiteral("port"), int(port())}});
        o.insert(QStringLiteral("restart_needed"),
                 !m_settingsFile.isEmpty() && (shown.bind != m_startBind || shown.port != m_startPort));
        // The values this run has from its command line, not from the file.
        QJsonArray overridden;
        if (!m_settingsFile.isEmpty()) {
            QSettings file(m_settingsFile, QSettings::IniFormat);
            const QJsonObject saved = SettingsApi::toJson(HostConfig::load(file));
            for (const char *name : {"ttl", "exited_ttl", "buffer_size", "max_sessions", "notify_after",
                                     "saved_scrollback_lines", "shell_integration", "command"})
                if (saved.value(QLatin1String(name)) != o.value(QLatin1String(name)))
                    overridden.append(QLatin1String(name));
        }
        o.insert(QStringLiteral("overridden"), overridden);
        return o;
    };
    if (c->request().method() != "PATCH") {
        c->respondJson(200, answer(view));
        return;
    }
    HostConfig next = view;
    QString error;
    QStringList changed;
    if (!SettingsApi::applyPatch(c->request().body(), &next, &error, &changed)) {
        c->respondError(400, error);
        return;
    }
    if (!m_settingsFile.isEmpty() && !changed.isEmpty()) {
        // Only what changed replaces the file's values: a limit given on the
        // command line for this run (`--ttl 120`) is not saved by a change
        // of another field.
        QSettings file(m_settingsFile, QSettings::IniFormat);
        HostConfig saved = HostConfig::load(file);
        const QJsonObject fields = SettingsApi::toJson(next);
        QJsonObject patch;
        for (const QString &name : std::as_const(changed))
            patch.insert(name, fields.value(name));
        QString ignored;
        SettingsApi::applyPatch(QJsonDocument(patch).toJson(QJsonDocument::Compact), &saved, &ignored);
        saved.save(file);
        file.sync();
        if (file.status() != QSettings::NoError) {
            c->respondError(500, QStringLiteral("cannot save the settings to %1; nothing was changed").arg(m_settingsFile));
            return;
        }
    }
    // Live: the limits (a new buffer size applies to every session), the
    // default command of new sessions.
    // The address is used at the next start.
    if (!changed.isEmpty()) {
        m_registry->setLimits(next.limits);
        m_config.limits = next.limits;
        m_config.command = next.command;
        m_config.savedScrollbackLines = next.savedScrollbackLines;
        if (m_records)
            m_records->setLines(next.savedScrollbackLines);
        qCInfo(lcServer).noquote() << "settings changed:" << changed.join(QStringLiteral(", "));
    }
    c->respondJson(200, answer(next));
}

void Server::sessionInput(HttpConnection *c, const QString &id)
{
    Session *s = m_registry->find(id);
    if (!s) {
        c->respondError(404, QStringLiteral("no such session"));
        return;
    }
    QJsonParseError err;
    const QJsonDocument doc = QJsonDocument::fromJson(c->request().body().trimmed(), &err);
    if (err.error != QJsonParseError::NoError || !doc.isObject()) {
        c->respondError(400, QStringLiteral("body must be a JSON object {\"data\": \"TEXT\"}"));
        return;
    }
    const QJsonValue data = doc.object().value(QStringLiteral("data"));
    if (!data.isString()) {
        c->respondError(400, QStringLiteral("\"data\" must be a string"));
        return;
    }
    if (s->state() != Session::State::Running) {
        c->respondError(409, QStringLiteral("the session has exited"));
        return;
    }
    if (!s->sendApiInput(data.toString().toUtf8())) {
        c->respondError(503, QStringLiteral("the program is not reading its input"));
        return;
    }
    c->respond(204, Headers(), QByteArray());
}

// --- restart in place ----------------------------------------------------------

void Server::serveRestart(HttpConnection *c)
{
    // GET or POST (routeRequest answers 405 to the others).
    const QByteArray method = c->request().method();
    if (!m_restartHooks.request || !m_restartHooks.status) {
        c->respondError(503, QStringLiteral("restart in place is not available in this server"));
        return;
    }
    if (method == "GET") {
        c->respondJson(200, m_restartHooks.status());
        return;
    }
    QString why;
    if (!m_restartHooks.request(&why)) {
        c->respondError(500, QStringLiteral("cannot restart: %1").arg(why));
        return;
    }
    c->respondJson(202, m_restartHooks.status());
}

void Server::serveCommandOutput(HttpConnection *c, const QString &id, quint64 commandId)
{
    Session *s = m_registry->find(id);
    if (!s) {
        c->respondError(404, QStringLiteral("no such session"));
        return;
    }
    const QList<CommandRecord> &commands = s->commands().commands();
    const auto it = std::find_if(commands.cbegin(), commands.cend(),
                                 [commandId](const CommandRecord &r) { return commandId != 0 && r.id == commandId; });
    if (it == commands.cend()) {
        c->respondError(404, QStringLiteral("no such command"));
        return;
    }
    if (it->running()) {
        c->respondError(409, QStringLiteral("command %1 is still running").arg(it->id));
        return;
    }
    const RingBuffer &ring = s->buffer();
    const quint64 start = it->outputStart;
    const quint64 end = std::max(it->outputEnd, start);
    if (start < ring.startOffset() || end > ring.endOffset()) {
        c->respondError(410, QStringLiteral("the output of command %1 is no longer retained (the session keeps its "
                                            "last %2 bytes)")
                                 .arg(it->id)
                                 .arg(ring.capacity()));
        return;
    }
    QByteArray bytes(qsizetype(end - start), Qt::Uninitialized);
    if (!bytes.isEmpty())
        bytes.resize(ring.read(start, bytes.data(), bytes.size()));
    Headers h;
    h.append(qMakePair(QByteArray("Content-Type"), QByteArray("application/octet-stream")));
    h.append(qMakePair(QByteArray("Cache-Control"), QByteArray("no-store")));
    c->respond(200, h, bytes);
}

} // namespace Tether
