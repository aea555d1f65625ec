// SPDX-License-Identifier: GPL-2.0-or-later
#include "sessionmodel.h"
#include "displaytext.h"
#include "shellwords.h"
#include "procinfo.h"

#include "registry.h"
#include "session.h"

#include <QDateTime>
#include <QFileInfo>
#include <cstring>
#include <limits>
#include <utility>
#include <signal.h>

namespace Tether {

SessionModel::SessionModel(SessionRegistry *registry, QObject *parent)
    : QAbstractTableModel(parent)
    , m_registry(registry)
{
    if (!registry)
        return;
    m_sessions = registry->sessions();
    for (Session *s : std::as_const(m_sessions)) {
        watch(s);
        recountBackground(s);
    }
    connect(registry, &SessionRegistry::sessionAdded, this, &SessionModel::onAdded);
    connect(registry, &SessionRegistry::sessionRemoved, this, &SessionModel::onRemoved);
    connect(registry, &SessionRegistry::sessionChanged, this, &SessionModel::onChanged);
    connect(registry, &QObject::destroyed, this, [this] {
        beginResetModel();
        m_sessions.clear();
        endResetModel();
    });
}

SessionModel::~SessionModel() = default;

int SessionModel::rowCount(const QModelIndex &parent) const
{
    return parent.isValid() ? 0 : int(m_sessions.size());
}

int SessionModel::columnCount(const QModelIndex &parent) const
{
    return parent.isValid() ? 0 : ColumnCount;
}

Session *SessionModel::sessionAt(int row) const
{
    return row >= 0 && row < m_sessions.size() ? m_sessions.at(row) : nullptr;
}

int SessionModel::rowOf(const Session *session) const
{
    for (int i = 0; i < m_sessions.size(); ++i) {
        if (m_sessions.at(i) == session)
            return i;
    }
    return -1;
}

int SessionModel::rowOf(const QString &id) const
{
    for (int i = 0; i < m_sessions.size(); ++i) {
        if (m_sessions.at(i)->id() == id)
            return i;
    }
    return -1;
}

void SessionModel::onAdded(Session *session)
{
    if (!session || rowOf(session) >= 0)
        return;
    // The registry appends new sessions (oldest first), so the row goes last.
    const int row = int(m_sessions.size());
    beginInsertRows(QModelIndex(), row, row);
    m_sessions.append(session);
    endInsertRows();
    watch(session);
}

void SessionModel::watch(Session *session)
{
    // A session deleted without sessionRemoved (registry torn down first)
    // must not leave a dangling row.
    connect(session, &QObject::destroyed, this, [this, session] { onRemoved(session); });
    // Its last process is gone: nothing left in the background.
    connect(session, &Session::tornDown, this, [this, session] {
        if (m_background.remove(session) == 0)
            return;
        const int row = rowOf(session);
        if (row >= 0)
            Q_EMIT dataChanged(index(row, StateColumn), index(row, StateColumn));
    });
}

bool SessionModel::recountBackground(Session *session)
{
    int n = 0;
    if (session->state() == Session::State::Exited && !session->isTornDown())
        n = int(processesInSession(session->pid()).size());
    const int old = m_background.value(session, 0);
    if (n == old)
        return false;
    if (n > 0)
        m_background.insert(session, n);
    else
        m_background.remove(session);
    return true;
}

void SessionModel::onRemoved(Session *session)
{
    const int row = rowOf(session);
    if (row >= 0)
        removeRow(row);
}

void SessionModel::removeRow(int row)
{
    Session *s = m_sessions.at(row);
    beginRemoveRows(QModelIndex(), row, row);
    m_sessions.removeAt(row);
    endRemoveRows();
    m_background.remove(s);
    // The Session object lives on while it tears down; we no longer care.
    disconnect(s, nullptr, this, nullptr);
}

void SessionModel::onChanged(Session *session)
{
    const int row = rowOf(session);
    if (row < 0)
        return;
    recountBackground(session);
    Q_EMIT dataChanged(index(row, 0), index(row, ColumnCount - 1));
}

void SessionModel::refreshClocks()
{
    if (m_sessions.isEmpty())
        return;
    const int last = int(m_sessions.size()) - 1;
    Q_EMIT dataChanged(index(0, IdleColumn), index(last, BufferColumn),
                       {Qt::DisplayRole, Qt::ToolTipRole, SortRole});
    // Background jobs end without a signal of their own (only the last one
    // does: tornDown). Only exited sessions with processes left are scanned.
    if (m_background.isEmpty())
        return;
    for (int row = 0; row <= last; ++row) {
        Session *s = m_sessions.at(row);
        if (m_background.contains(s) && recountBackground(s))
            Q_EMIT dataChanged(index(row, StateColumn), index(row, StateColumn));
    }
}

QString SessionModel::backgroundText(int count)
{
    // Explicit plurals: without a translator loaded, %n would print "process(es)".
    return count == 1 ? tr("1 background process") : tr("%1 background processes").arg(count);
}

QString SessionModel::displayName(const Session *s)
{
    if (!s)
        return QString();
    // Shown in window titles, menus and notifications: through
    // DisplayText::escape(), the rule of `tether list` (issue 29).
    if (!s->name().isEmpty())
        return DisplayText::escape(s->name());
    const QString title = s->title().trimmed();
    if (!title.isEmpty())
        return DisplayText::escape(title);
    QStringList cmd = s->command();
    if (!cmd.isEmpty()) {
        // "/bin/bash -l" reads better as "bash -l"; a login shell's argv[0]
        // is shown as the program itself.
        cmd[0] = QFileInfo(cmd.at(0)).fileName();
        return DisplayText::escape(ShellWords::quote(cmd));
    }
    return s->id();
}

QString SessionModel::stateText(const Session *s)
{
    switch (s->state()) {
    case Session::State::Starting:
        return tr("starting");
    case Session::State::Running:
        return tr("running");
    case Session::State::Exited: {
        const ExitStatus st = s->exitStatus();
        if (st.signaled) {
            const char *name = strsignal(st.signal);
            return name ? tr("killed by signal %1 (%2)").arg(st.signal).arg(QString::fromLocal8Bit(name))
                        : tr("killed by signal %1").arg(st.signal);
        }
        return tr("exited %1").arg(st.code);
    }
    }
    return QString();
}

QString SessionModel::attachedText(const Session *s)
{
    const Viewer *v = s->controlViewer();
    if (!v)
        return tr("nobody");
    switch (v->kind()) {
    case ViewerKind::Browser:
        return tr("browser");
    case ViewerKind::LocalWindow:
        return tr("local window");
    case ViewerKind::Cli:
        return tr("CLI");
    case ViewerKind::Other:
        break;
    }
    return tr("other");
}

QString SessionModel::formatDuration(qint64 seconds)
{
    if (seconds < 0)
        seconds = 0;
    if (seconds < 60)
        return tr("%1 s").arg(seconds);
    if (seconds < 3600) {
        const qint64 m = seconds / 60, s = seconds % 60;
        return s ? tr("%1 min %2 s").arg(m).arg(s) : tr("%1 min").arg(m);
    }
    if (seconds < 86400) {
        const qint64 h = seconds / 3600, m = (seconds % 3600) / 60;
        return m ? tr("%1 h %2 min").arg(h).arg(m) : tr("%1 h").arg(h);
    }
    const qint64 d = seconds / 86400, h = (seconds % 86400) / 3600;
    return h ? tr("%1 d %2 h").arg(d).arg(h) : tr("%1 d").arg(d);
}

QString SessionModel::formatBytes(qint64 bytes)
{
    if (bytes < 1024)
        return tr("%1 B").arg(bytes);
    if (bytes < 1024 * 1024) {
        if (bytes % 1024 == 0)
            return tr("%1 KiB").arg(bytes / 1024);
        return tr("%1 KiB").arg(double(bytes) / 1024.0, 0, 'f', 1);
    }
    if (bytes % (1024 * 1024) == 0)
        return tr("%1 MiB").arg(bytes / (1024 * 1024));
    return tr("%1 MiB").arg(double(bytes) / (1024.0 * 1024.0), 0, 'f', 1);
}

QVariant SessionModel::headerData(int section, Qt::Orientation orientation, int role) const
{
    if (orientation != Qt::Horizontal)
        return QVariant();
    if (role == Qt::DisplayRole) {
        switch (section) {
        case TitleColumn: return tr("Session");
        case PidColumn: return tr("PID");
        case StateColumn: return tr("State");
        case AttachedColumn: return tr("Attached");
        case WatchersColumn: return tr("Watchers");
        case IdleColumn: return tr("Idle");
        case TimeLeftColumn: return tr("Expires in");
        case BufferColumn: return tr("Buffer");
        }
    } else if (role == Qt::ToolTipRole) {
        switch (section) {
        case TitleColumn: return tr("The session's name, else the window title the program set, else its command line");
        case AttachedColumn: return tr("Who types into the session (one at a time)");
        case WatchersColumn: return tr("Read-only viewers");
        case IdleColumn: return tr("Time since the last output or input");
        case TimeLeftColumn: return tr("A session nobody is attached to is closed after the TTL (Settings)");
        case BufferColumn: return tr("Output kept for replay, of the buffer size per session");
        }
    }
    return QVariant();
}

Qt::ItemFlags SessionModel::flags(const QModelIndex &index) const
{
    Qt::ItemFlags f = QAbstractTableModel::flags(index);
    if (index.isValid() && index.column() == TitleColumn)
        f |= Qt::ItemIsEditable;
    return f;
}

bool SessionModel::setData(const QModelIndex &index, const QVariant &value, int role)
{
    if (role != Qt::EditRole || !index.isValid() || index.column() != TitleColumn
        || index.row() >= m_sessions.size() || !m_registry)
        return false;
    QString why;
    // The registry's sessionChanged brings the new name to every row (onChanged).
    if (!m_registry->rename(m_sessions.at(index.row()), value.toString(), nullptr, &why)) {
        Q_EMIT renameRefused(why);
        return false;
    }
    return true;
}

QVariant SessionModel::data(const QModelIndex &index, int role) const
{
    if (!index.isValid() || index.row() >= m_sessions.size())
        return QVariant();
    const Session *s = m_sessions.at(index.row());
    if (role == SessionIdRole)
        return s->id();
    if (role == Qt::EditRole)
        return index.column() == TitleColumn ? QVariant(s->name()) : QVariant();
    if (role == Qt::TextAlignmentRole) {
        switch (index.column()) {
        case PidColumn:
        case WatchersColumn:
        case IdleColumn:
        case TimeLeftColumn:
        case BufferColumn:
            return int(Qt::AlignRight | Qt::AlignVCenter);
        default:
            return int(Qt::AlignLeft | Qt::AlignVCenter);
        }
    }
    if (role != Qt::DisplayRole && role != Qt::ToolTipRole && role != SortRole)
        return QVariant();

    const QDateTime now = QDateTime::currentDateTimeUtc();
    switch (index.column()) {
    case TitleColumn:
        if (role == Qt::ToolTipRole)
            return tr("%1\nid %2\nin %3").arg(DisplayText::escape(ShellWords::quote(s->command())), s->id(),
                                               DisplayText::escape(s->cwd()))
                + (s->name().isEmpty() ? QString() : tr("\nnamed %1").arg(DisplayText::escape(s->name())));
        if (role == SortRole)
            return displayName(s).toLower();
        return displayName(s);
    case PidColumn:
        if (role == SortRole)
            return qint64(s->pid());
        return role == Qt::DisplayRole ? QVariant(QString::number(s->pid())) : QVariant();
    case StateColumn:
        if (role == SortRole) {
            // Running first, then by exit status.
            if (s->state() != Session::State::Exited)
                return qint64(-1);
            const ExitStatus st = s->exitStatus();
            return qint64(st.signaled ? 1000 + st.signal : st.code);
        }
        if (const int n = backgroundProcesses(s)) {
            if (role == Qt::ToolTipRole)
                return (n == 1 ? tr("%1. A process it started in the background still runs in its terminal, "
                                    "so the session is kept until it expires (TTL) or you kill it.")
                                     .arg(stateText(s))
                               : tr("%1. %2 processes it started in the background still run in its terminal, "
                                    "so the session is kept until it expires (TTL) or you kill it.")
                                     .arg(stateText(s)).arg(n));
            return QStringLiteral("%1 · %2").arg(stateText(s), backgroundText(n));
        }
        return stateText(s);
    case AttachedColumn: {
        if (role == Qt::ToolTipRole) {
            const Viewer *v = s->controlViewer();
            return v ? v->describe() : tr("Nobody is attached");
        }
        return attachedText(s);
    }
    case WatchersColumn:
        if (role == SortRole)
            return qint64(s->watchers().size());
        return role == Qt::DisplayRole ? QVariant(QString::number(s->watchers().size())) : QVariant();
    case IdleColumn: {
        const QDateTime last = s->lastActivity();
        const qint64 idle = last.isValid() ? qMax<qint64>(0, last.secsTo(now)) : 0;
        if (role == SortRole)
            return idle;
        if (role == Qt::ToolTipRole)
            return last.isValid() ? tr("Last activity %1").arg(last.toLocalTime().toString(Qt::ISODate)) : QVariant();
        return formatDuration(idle);
    }
    case TimeLeftColumn: {
        const qint64 left = m_registry ? m_registry->expiresIn(s) : -1;
        const bool neverExpires = !m_registry || m_registry->ttlFor(s) == 0;
        if (role == SortRole)
            return left < 0 ? std::numeric_limits<qint64>::max() : left;
        if (left >= 0)
            return role == Qt::ToolTipRole
                ? QVariant(tr("Closed at %1 unless someone attaches")
                               .arg(m_registry->expiryDeadline(s).toLocalTime().toString(Qt::ISODate)))
                : QVariant(formatDuration(left));
        if (role == Qt::ToolTipRole)
            return neverExpires ? (s->state() == Session::State::Exited
                                       ? tr("Exited sessions are kept until killed (exited TTL 0)")
                                       : tr("Kept until killed: a running session never expires"))
                                : tr("Does not expire while someone is attached");
        return neverExpires ? tr("never") : tr("—");
    }
    case BufferColumn: {
        const RingBuffer &ring = s->buffer();
        if (role == SortRole)
            return qint64(ring.size());
        if (role == Qt::ToolTipRole)
            return tr("%1 bytes kept of %2; %3 bytes of output in total")
                .arg(ring.size()).arg(ring.capacity()).arg(s->offset());
        return tr("%1 of %2").arg(formatBytes(ring.size()), formatBytes(ring.capacity()));
    }
    }
    return QVariant();
}

} // namespace Tether
