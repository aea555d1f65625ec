// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <QAbstractTableModel>
#include <QHash>
#include <QList>
#include <QPointer>

namespace Tether {

class Session;
class SessionRegistry;

/**
 * A table of the registry's live sessions for views (the desktop's Sessions
 * window, the tray menu). QtCore only, so it lives in core.
 *
 * Rows follow the registry's order (oldest first) and are kept in step with
 * SessionRegistry::sessionAdded / sessionRemoved / sessionChanged: a session
 * appears, changes (title, state, viewers, size) and disappears without the
 * view polling anything.
 *
 * Clocks: the idle time, time left and buffer use columns change without a
 * signal (they depend on "now" and on output volume, which is deliberately not
 * signalled per chunk). refreshClocks() re-announces those columns; the view
 * calls it from its own timer while it is visible, so a hidden window costs
 * zero wakeups.
 *
 * Background processes: a session whose leader exited is kept (until the TTL
 * or a kill) while processes it started in the background still run in its
 * PTY session (by design: `make &` outliving the shell keeps its output). The
 * state column says so: "exited 0 · 1 background process". The count is read
 * from /proc (processesInSession) only when the row refreshes: when the
 * session changes (its exit) and in refreshClocks() while a view is shown;
 * the session's tornDown (its last process gone) clears it. No timer of its own.
 *
 * Display text is for people ("3 min", "1.2 MiB of 4 MiB"); SortRole gives a
 * raw number or string per cell so sorting by a proxy is numeric, and
 * SessionIdRole gives the session id for any cell.
 */
class SessionModel : public QAbstractTableModel
{
    Q_OBJECT
public:
    enum Column {
        TitleColumn,    ///< the name, else the OSC title, else the command line
        PidColumn,      ///< leader pid
        StateColumn,    ///< "running", "exited 0", "killed by signal 9"
        AttachedColumn, ///< who controls it: browser / local window / CLI / nobody
        WatchersColumn, ///< number of watch-only viewers
        IdleColumn,     ///< time since the last output or input
        TimeLeftColumn, ///< time until TTL expiry ("never", "attached")
        BufferColumn,   ///< retained output bytes of the ring capacity
        ColumnCount
    };

    enum Role {
        SortRole = Qt::UserRole + 1, ///< raw value for sorting (qint64 or QString)
        SessionIdRole,               ///< the session's id (QString), any column
    };

    explicit SessionModel(SessionRegistry *registry, QObject *parent = nullptr);
    ~SessionModel() override;

    int rowCount(const QModelIndex &parent = QModelIndex()) const override;
    int columnCount(const QModelIndex &parent = QModelIndex()) const override;
    QVariant data(const QModelIndex &index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;
    /// The title column is editable: its EditRole is the session's name.
    Qt::ItemFlags flags(const QModelIndex &index) const override;
    /**
     * Renames the session of `index` (title column, EditRole) through
     * SessionRegistry::rename(): false, and renameRefused() with the
     * reason, when the registry refuses the name (taken, not allowed).
     */
    bool setData(const QModelIndex &index, const QVariant &value, int role = Qt::EditRole) override;

    /// The session shown in `row`, or nullptr when out of range.
    Session *sessionAt(int row) const;
    /// The row showing `session`, or -1.
    int rowOf(const Session *session) const;
    /// The row of the session with `id`, or -1.
    int rowOf(const QString &id) const;

    /// A session's name for people: its name, else its title, else its
    /// command line (ShellWords::quote: `vim -c 'set number'`, as `tether
    /// list` shows it), else its id; through DisplayText::escape() (control,
    /// bidi and zero-width characters escaped: it is shown in window titles,
    /// menus and notifications).
    static QString displayName(const Session *session);
    /// "running", "exited 0", "killed by signal 9 (Killed)", "starting".
    static QString stateText(const Session *session);
    /// Processes still running in the session's PTY session after its leader
    /// exited, as last counted (see class doc); 0 while the leader runs.
    int backgroundProcesses(const Session *session) const { return m_background.value(session, 0); }
    /// "1 background process", "3 background processes".
    static QString backgroundText(int count);
    /// Who controls the session: "browser", "local window", "CLI", "other", "nobody".
    static QString attachedText(const Session *session);
    /// A duration for people, at most two units: "12 s", "3 min 5 s", "2 h 10 min", "3 d 4 h".
    static QString formatDuration(qint64 seconds);
    /// A byte count for people: "512 B", "64 KiB", "1.5 MiB".
    static QString formatBytes(qint64 bytes);

Q_SIGNALS:
    /// setData() could not rename: `reason` says why, for the user.
    void renameRefused(const QString &reason);

public Q_SLOTS:
    /// Emits dataChanged for the clock-driven columns (idle, time left, buffer)
    /// of every row, and for the state of an exited session whose count of
    /// background processes changed (one /proc scan per such session). Cheap;
    /// call it about once a second while a view is shown.
    void refreshClocks();

private:
    void onAdded(Session *session);
    void onRemoved(Session *session);
    void onChanged(Session *session);
    void removeRow(int row);
    void watch(Session *session);
    /// Recounts `session`'s background processes; true when the count changed.
    bool recountBackground(Session *session);

    QPointer<SessionRegistry> m_registry;
    QList<Session *> m_sessions; ///< rows, in the registry's order
    QHash<const Session *, int> m_background; ///< exited sessions with processes left
};

} // namespace Tether
