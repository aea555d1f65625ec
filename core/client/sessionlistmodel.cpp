// SPDX-License-Identifier: GPL-2.0-or-later
#include "sessionlistmodel.h"
#include "sessiontext.h"
#include "shellwords.h"

#include <QFileInfo>
#include <QHash>
#include <QSet>

#include <limits>

namespace Tether {

namespace {

qint64 num(const QJsonObject &o, const char *key, qint64 fallback = -1)
{
    const QJsonValue v = o.value(QLatin1String(key));
    return v.isDouble() ? qint64(v.toDouble()) : fallback;
}
} // namespace

SessionListModel::SessionListModel(QObject *parent)
    : QAbstractTableModel(parent)
{
    m_received.start();
}

int SessionListModel::rowCount(const QModelIndex &parent) const
{
    return parent.isValid() ? 0 : int(m_rows.size());
}

int SessionListModel::columnCount(const QModelIndex &parent) const
{
    return parent.isValid() ? 0 : ColumnCount;
}

QJsonObject SessionListModel::sessionAt(int row) const
{
    return row >= 0 && row < m_rows.size() ? m_rows.at(row).session : QJsonObject();
}

QJsonObject SessionListModel::session(const QString &id) const
{
    return sessionAt(rowOf(id));
}

int SessionListModel::rowOf(const QString &id) const
{
    for (int i = 0; i < m_rows.size(); ++i)
        if (m_rows.at(i).id == id)
            return i;
    return -1;
}

bool SessionListModel::isRunning(const QJsonObject &s)
{
    return s.value(QStringLiteral("state")).toString() == QLatin1String("running");
}

bool SessionListModel::isExited(const QJsonObject &s)
{
    return s.value(QStringLiteral("state")).toString() == QLatin1String("exited");
}

int SessionListModel::runningCount() const
{
    int n = 0;
    for (const Row &r : m_rows)
        n += isRunning(r.session) ? 1 : 0;
    return n;
}

int SessionListModel::attachedCount() const
{
    int n = 0;
    for (const Row &r : m_rows)
        n += num(r.session, "viewers", 0) > 0 ? 1 : 0;
    return n;
}

qint64 SessionListModel::elapsedSeconds() const
{
    return m_received.elapsed() / 1000;
}

void SessionListModel::setSessions(const QJsonArray &sessions)
{
    QList<Row> incoming;
    incoming.reserve(sessions.size());
    QSet<QString> ids;
    for (const QJsonValue &v : sessions) {
        const QJsonObject o = v.toObject();
        const QString id = o.value(QStringLiteral("id")).toString();
        if (id.isEmpty() || ids.contains(id))
            continue;
        ids.insert(id);
        incoming.append(Row{id, o});
    }
    m_received.restart();
    // Rows gone.
    for (int i = int(m_rows.size()) - 1; i >= 0; --i) {
        if (!ids.contains(m_rows.at(i).id)) {
            beginRemoveRows(QModelIndex(), i, i);
            m_rows.removeAt(i);
            endRemoveRows();
        }
    }
    // Rows in the new order: the server lists oldest first and never
    // reorders, so a kept row stays where it is and new ones are inserted.
    QList<QJsonObject> exited;
    for (int i = 0; i < incoming.size(); ++i) {
        const Row &in = incoming.at(i);
        const int at = rowOf(in.id);
        if (at < 0) {
            const int row = qMin(i, int(m_rows.size()));
            beginInsertRows(QModelIndex(), row, row);
            m_rows.insert(row, in);
            endInsertRows();
            continue;
        }
        if (at != i && i < m_rows.size()) {
            // Not expected from a Tether server; kept correct all the same.
            beginMoveRows(QModelIndex(), at, at, QModelIndex(), at < i ? i + 1 : i);
            m_rows.move(at, i);
            endMoveRows();
        }
        const int row = rowOf(in.id);
        const bool wasExited = isExited(m_rows.at(row).session);
        if (m_rows.at(row).session != in.session) {
            m_rows[row].session = in.session;
            Q_EMIT dataChanged(index(row, 0), index(row, ColumnCount - 1));
            if (!wasExited && isExited(in.session))
                exited.append(in.session);
        } else {
            // Same object, but the clocks restarted with this event.
            Q_EMIT dataChanged(index(row, IdleColumn), index(row, TimeLeftColumn));
        }
    }
    for (const QJsonObject &s : std::as_const(exited))
        Q_EMIT sessionExited(s);
    Q_EMIT listChanged();
}

void SessionListModel::clear()
{
    if (m_rows.isEmpty())
        return;
    beginResetModel();
    m_rows.clear();
    endResetModel();
    Q_EMIT listChanged();
}

void SessionListModel::refreshClocks()
{
    if (!m_rows.isEmpty())
        Q_EMIT dataChanged(index(0, ShellColumn), index(int(m_rows.size()) - 1, TimeLeftColumn));
}

QString SessionListModel::shellText(const QJsonObject &s, qint64 laterSeconds)
{
    const QJsonObject shell = s.value(QStringLiteral("shell")).toObject();
    const QString state = shell.value(QStringLiteral("state")).toString();
    if (state.isEmpty() || state == QLatin1String("unknown"))
        return QStringLiteral("-");
    const QJsonValue last = shell.value(QStringLiteral("command"));
    if (!last.isObject())
        return state == QLatin1String("running") ? QStringLiteral("run") : QStringLiteral("idle");
    const QJsonObject c = last.toObject();
    QString status;
    if (c.value(QStringLiteral("running")).toBool())
        status = QStringLiteral("run ")
            + SessionText::duration(qint64(c.value(QStringLiteral("duration_ms")).toDouble() / 1000) + laterSeconds);
    else if (c.value(QStringLiteral("exit_status")).isDouble())
        status = QStringLiteral("exit %1").arg(c.value(QStringLiteral("exit_status")).toInt());
    else
        status = QStringLiteral("done");
    const QString line = c.value(QStringLiteral("command_line")).toString();
    return line.isEmpty() ? status : status + QStringLiteral(": ") + line;
}

QString SessionListModel::displayName(const QJsonObject &s)
{
    const QString name = s.value(QStringLiteral("name")).toString();
    if (!name.isEmpty())
        return name;
    const QString title = s.value(QStringLiteral("title")).toString().trimmed();
    if (!title.isEmpty())
        return title;
    QStringList cmd;
    for (const QJsonValue &a : s.value(QStringLiteral("command")).toArray())
        cmd.append(a.toString());
    if (!cmd.isEmpty()) {
        cmd[0] = QFileInfo(cmd.at(0)).fileName();
        return ShellWords::quote(cmd);
    }
    return s.value(QStringLiteral("id")).toString();
}

QString SessionListModel::attachedText(const QJsonObject &s)
{
    if (!s.value(QStringLiteral("attached")).toBool())
        return tr("nobody");
    const QString kind = s.value(QStringLiteral("viewer_kind")).toString();
    if (kind == QLatin1String("browser"))
        return tr("browser");
    if (kind == QLatin1String("local"))
        return tr("local window");
    if (kind == QLatin1String("cli"))
        return tr("CLI");
    return tr("other");
}

QVariant SessionListModel::headerData(int section, Qt::Orientation orientation, int role) const
{
    if (orientation != Qt::Horizontal || role != Qt::DisplayRole)
        return QVariant();
    switch (section) {
    case TitleColumn: return tr("Session");
    case PidColumn: return tr("PID");
    case StateColumn: return tr("State");
    case ShellColumn: return tr("Command");
    case AttachedColumn: return tr("Attached");
    case WatchersColumn: return tr("Watchers");
    case IdleColumn: return tr("Idle");
    case TimeLeftColumn: return tr("Time left");
    case BufferColumn: return tr("Buffer");
    }
    return QVariant();
}

Qt::ItemFlags SessionListModel::flags(const QModelIndex &index) const
{
    Qt::ItemFlags f = QAbstractTableModel::flags(index);
    if (m_renamable && index.isValid() && index.column() == TitleColumn)
        f |= Qt::ItemIsEditable;
    return f;
}

bool SessionListModel::setData(const QModelIndex &index, const QVariant &value, int role)
{
    if (!m_renamable || role != Qt::EditRole || !index.isValid() || index.column() != TitleColumn
        || index.row() >= m_rows.size())
        return false;
    const Row &r = m_rows.at(index.row());
    const QString name = value.toString();
    if (name == r.session.value(QStringLiteral("name")).toString())
        return false;
    Q_EMIT renameRequested(r.id, name);
    return true;
}

QVariant SessionListModel::data(const QModelIndex &index, int role) const
{
    if (!index.isValid() || index.row() >= m_rows.size())
        return QVariant();
    const QJsonObject &s = m_rows.at(index.row()).session;
    if (role == Qt::EditRole && index.column() == TitleColumn)
        return s.value(QStringLiteral("name")).toString();
    if (role == SessionIdRole)
        return m_rows.at(index.row()).id;
    if (role == SessionRole)
        return s;
    if (role != Qt::DisplayRole && role != SortRole && role != Qt::ToolTipRole)
        return QVariant();
    switch (index.column()) {
    case TitleColumn:
        if (role == Qt::ToolTipRole) {
            QStringList cmd;
            for (const QJsonValue &a : s.value(QStringLiteral("command")).toArray())
                cmd.append(a.toString());
            return ShellWords::quote(cmd);
        }
        return displayName(s);
    case PidColumn:
        return role == SortRole ? QVariant(num(s, "pid")) : QVariant(QString::number(num(s, "pid")));
    case StateColumn:
        return SessionText::state(s);
    case ShellColumn:
        if (role == Qt::ToolTipRole) {
            const QString cwd = s.value(QStringLiteral("shell")).toObject().value(QStringLiteral("cwd")).toString();
            return cwd.isEmpty() ? QVariant() : QVariant(tr("in %1").arg(cwd));
        }
        return shellText(s, isRunning(s) ? elapsedSeconds() : 0);
    case AttachedColumn:
        return attachedText(s);
    case WatchersColumn: {
        const qint64 watchers = qMax<qint64>(0, num(s, "viewers", 0) - (s.value(QStringLiteral("attached")).toBool() ? 1 : 0));
        return role == SortRole ? QVariant(watchers) : QVariant(QString::number(watchers));
    }
    case IdleColumn: {
        const qint64 idle = num(s, "idle_seconds", 0) + elapsedSeconds();
        return role == SortRole ? QVariant(idle) : QVariant(SessionText::duration(idle));
    }
    case TimeLeftColumn: {
        const qint64 given = num(s, "expires_in");
        const qint64 left = given < 0 ? -1 : qMax<qint64>(0, given - elapsedSeconds());
        if (role == SortRole)
            return left < 0 ? std::numeric_limits<qint64>::max() : left;
        if (left >= 0)
            return role == Qt::ToolTipRole ? QVariant(tr("Closed unless someone attaches")) : QVariant(SessionText::duration(left));
        const bool attached = num(s, "viewers", 0) > 0;
        if (role == Qt::ToolTipRole)
            return attached ? tr("Does not expire while someone is attached") : tr("Kept until killed");
        return attached ? tr("—") : tr("never");
    }
    case BufferColumn: {
        const qint64 size = num(s, "buffer_bytes", 0), cap = num(s, "buffer_capacity", 0);
        if (role == SortRole)
            return size;
        if (role == Qt::ToolTipRole)
            return tr("%1 bytes kept of %2; %3 bytes of output in total").arg(size).arg(cap).arg(num(s, "offset", 0));
        return tr("%1 of %2").arg(SessionText::bytes(size), SessionText::bytes(cap));
    }
    }
    return QVariant();
}

} // namespace Tether
