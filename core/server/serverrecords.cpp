// SPDX-License-Identifier: GPL-2.0-or-later
// Server's ended sessions (docs/protocol.md, "Ended sessions"): the records
// SessionRecordStore keeps, listed after the live sessions, their saved
// screen (and a live session's screen now), 409 for what only a live session
// can do, and revival.
#include "server.h"
#include "httpconnection.h"
#include "logging.h"
#include "registry.h"
#include "route.h"
#include "screen.h"
#include "serverutil.h"
#include "sessionjson.h"
#include "sessionrecordstore.h"

#include <QJsonArray>
#include <QUrlQuery>

namespace Tether {

void Server::setRecordStore(SessionRecordStore *store)
{
    if (m_records)
        m_records->disconnect(this);
    m_records = store;
    if (store)
        connect(store, &SessionRecordStore::endedChanged, this, &Server::scheduleEvents);
}

const SessionRecord *Server::endedRecord(const QString &id) const
{
    return m_records && !m_registry->find(id) ? m_records->findEnded(id) : nullptr;
}

QJsonObject Server::listJson() const
{
    QJsonObject o = sessionListJson(m_registry);
    if (!m_records || m_records->ended().isEmpty())
        return o;
    QJsonArray list = o.value(QStringLiteral("sessions")).toArray();
    for (const SessionRecord &r : m_records->ended())
        list.append(m_records->toJson(r));
    o.insert(QStringLiteral("sessions"), list);
    return o;
}

bool Server::refuseEnded(HttpConnection *c, const QString &id)
{
    const SessionRecord *r = endedRecord(id);
    if (!r)
        return false;
    c->respondError(409, QStringLiteral("session ended by %1: revive it (POST /api/sessions/%2/revive) or delete it")
                             .arg(m_records->why(*r), id));
    return true;
}

void Server::serveSavedScreen(HttpConnection *c, const QString &id)
{
    // ?lines=N: at most N lines of an ended session's saved scrollback (the
    // dashboard's miniatures ask for 0: they draw the screen only). A live
    // session's screen has no scrollback: N changes nothing there.
    int lines = -1;
    const QUrlQuery query = c->request().query();
    if (query.hasQueryItem(QStringLiteral("lines"))) {
        const std::optional<quint64> n = parseOffset(query.queryItemValue(QStringLiteral("lines"), QUrl::FullyDecoded));
        if (!n || *n > quint64(Screen::kMaxScrollbackLines)) {
            c->respondError(400, QStringLiteral("bad lines: an integer 0..%1").arg(Screen::kMaxScrollbackLines));
            return;
        }
        lines = int(*n);
    }
    if (const SessionRecord *r = endedRecord(id)) {
        Headers h;
        h.append(qMakePair(QByteArray("Content-Type"), QByteArray("application/octet-stream")));
        h.append(qMakePair(QByteArray("Cache-Control"), QByteArray("no-store")));
        c->respond(200, h, lines >= 0 ? SessionRecordStore::screenWithLines(*r, lines) : r->screen);
        return;
    }
    if (Session *s = m_registry->find(id)) {
        // A live session: its screen now (for a look without attaching).
        quint64 offset = 0;
        const QByteArray bytes = s->screenPreview(&offset);
        const Screen *screen = s->screen();
        if (!screen) {
            c->respondError(409, QStringLiteral("the session has no server screen (setting sessions/screen is off, "
                                                "or it is larger than %1 cells): attach to see it")
                                     .arg(Session::kMaxScreenCells));
            return;
        }
        Headers h;
        h.append(qMakePair(QByteArray("Content-Type"), QByteArray("application/octet-stream")));
        h.append(qMakePair(QByteArray("Cache-Control"), QByteArray("no-store")));
        h.append(qMakePair(QByteArray("X-Tether-Offset"), QByteArray::number(offset)));
        h.append(qMakePair(QByteArray("X-Tether-Size"),
                           QByteArray::number(screen->cols()) + 'x' + QByteArray::number(screen->rows())));
        c->respond(200, h, bytes);
        return;
    }
    c->respondError(404, QStringLiteral("no such session"));
}

void Server::reviveSession(HttpConnection *c, const QString &id)
{
    if (m_registry->find(id)) {
        c->respondError(409, QStringLiteral("the session is running: only an ended session can be revived"));
        return;
    }
    const SessionRecord *found = endedRecord(id);
    if (!found) {
        c->respondError(404, QStringLiteral("no such session"));
        return;
    }
    if (m_registry->isShuttingDown()) {
        c->respondError(503, QStringLiteral("server shutting down"));
        return;
    }
    const SessionRecord r = *found;
    SpawnOptions opts;
    opts.argv = r.command;
    opts.loginShell = r.loginShell; // a login shell comes back as one
    opts.cwd = r.cwd;
    opts.cols = r.cols;
    opts.rows = r.rows;
    SessionRegistry::CreateError error = SessionRegistry::CreateError::None;
    QString errorText;
    QString evicted;
    // Its name, unless a live session took it meanwhile, or it is not a
    // name a session can have (a record is read as it is on disk: written
    // by another version, or by hand; too long, say): a record listed as
    // ended is revivable, by its id and by its name, and comes back unnamed.
    QString name = r.name;
    if (m_registry->findByName(name)) {
        name.clear();
    } else if (const QString problem = SessionRegistry::nameProblem(name); !problem.isEmpty()) {
        qCInfo(lcServer).noquote() << "session" << id << "is revived unnamed: its recorded name is refused now:" << problem;
        name.clear();
    }
    Session *s = m_registry->create(opts, name, &error, &errorText, &evicted);
    if (!s) {
        if (error == SessionRegistry::CreateError::TooManySessions || error == SessionRegistry::CreateError::OutOfResources)
            c->respondError(503, errorText.isEmpty() ? QStringLiteral("too many sessions") : errorText);
        else
            c->respondError(422, errorText.isEmpty() ? QStringLiteral("command cannot start") : errorText);
        return;
    }
    // Before the event loop reads the program's first output.
    s->injectOutput(SessionRecordStore::revivePreamble(r, m_records->why(r)));
    m_records->forget(id);
    qCInfo(lcServer) << "session" << id << "revived as" << s->id();
    QJsonObject j = sessionToJson(s, m_registry);
    j.insert(QStringLiteral("revived_from"), id);
    j.insert(QStringLiteral("evicted"), evicted.isEmpty() ? QJsonValue(QJsonValue::Null) : QJsonValue(evicted));
    c->respondJson(201, j, header("Location", "/api/sessions/" + QUrl::toPercentEncoding(s->id())));
}

} // namespace Tether
