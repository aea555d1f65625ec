// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <QAbstractTableModel>
#include <QElapsedTimer>
#include <QJsonArray>
#include <QJsonObject>
#include <QList>

namespace Tether {

/**
 * The session list of a Tether host as a table, for a client's views (the
 * desktop app's Sessions window and tray menu, issue 23): rows are the
 * SESSION objects of the API (docs/protocol.md section 4), fed with
 * setSessions() from each `sessions` event of EventStream (the complete
 * list: rows are inserted, removed and changed by id, never reset, so a
 * view keeps its selection). Knows nothing of the engine: only the wire.
 *
 * Columns: title, pid, state, shell (its command), attached,
 * watchers, idle, time left, buffer; SortRole gives raw values, SessionIdRole the id. The idle and
 * time-left columns count on locally from the event's arrival
 * (`idle_seconds` and `expires_in` are computed when the object is made):
 * refreshClocks() re-announces them; the view calls it from its own timer
 * while shown (no timer here).
 */
class SessionListModel : public QAbstractTableModel
{
    Q_OBJECT
public:
    enum Column {
        TitleColumn,
        PidColumn,
        StateColumn,
        ShellColumn,   ///< shellText(): the shell's running or last command
        AttachedColumn,
        WatchersColumn,
        IdleColumn,
        TimeLeftColumn,
        BufferColumn,
        ColumnCount
    };
    enum Role {
        SortRole = Qt::UserRole + 1, ///< raw value for sorting (qint64 or QString)
        SessionIdRole,               ///< the session's id (QString), any column
        SessionRole,                 ///< the whole SESSION object (QJsonObject), any column
    };

    explicit SessionListModel(QObject *parent = nullptr);

    int rowCount(const QModelIndex &parent = QModelIndex()) const override;
    int columnCount(const QModelIndex &parent = QModelIndex()) const override;
    QVariant data(const QModelIndex &index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;
    /// The title column is editable (the name, Qt::EditRole) when
    /// setRenamable(true): the Sessions window's Rename (F2).
    Qt::ItemFlags flags(const QModelIndex &index) const override;
    /**
     * An edit of the title column's name: changes nothing here, emits
     * renameRequested(id, name) for the holder to send (`PATCH
     * /api/sessions/{id}`); the next `sessions` event shows the new name.
     * True when the edit was passed on (a changed name of a listed row).
     */
    bool setData(const QModelIndex &index, const QVariant &value, int role = Qt::EditRole) override;
    void setRenamable(bool on) { m_renamable = on; }

    /**
     * Replaces the list with `sessions` (SESSION objects, oldest first):
     * rows of ids no longer listed are removed, new ids inserted at their
     * place, changed objects announced with dataChanged. Emits
     * sessionExited() for each session that was listed running and is now
     * exited, and listChanged() once.
     */
    void setSessions(const QJsonArray &sessions);
    /// Empties the list (the host went away).
    void clear();

    /// The SESSION object in `row` (empty when out of range).
    QJsonObject sessionAt(int row) const;
    /// The SESSION object with `id` (empty when none).
    QJsonObject session(const QString &id) const;
    /// The row of the session with `id`, or -1.
    int rowOf(const QString &id) const;
    /// Sessions whose state is "running" (not "exited", nor "ended": the
    /// record of a session a reboot or a crash ended, on a server that keeps them).
    int runningCount() const;
    /// Sessions with a control viewer or watchers (`viewers` > 0).
    int attachedCount() const;

    /// Its name, else its title, else its command (`bash -l`), else its id.
    static QString displayName(const QJsonObject &session);
    /// The control viewer: "browser", "local window", "CLI", "other", "nobody".
    static QString attachedText(const QJsonObject &session);
    static bool isExited(const QJsonObject &session);
    /// Its state is "running".
    static bool isRunning(const QJsonObject &session);
    /**
     * The running or last command of the session's shell and its status
     * (the SESSION's `shell`, docs/protocol.md "Commands and
     * notifications"), one wording for `tether list`'s SHELL column and the
     * Sessions window: "run 12m: make -j8" while it runs (durations as
     * SessionText::duration), "exit 2: make -j8"
     * once it ended ("done: ..." without a status), "idle" at a first
     * prompt, "-" without shell integration. `laterSeconds` is added to a
     * running command's `duration_ms` (the list's age).
     */
    static QString shellText(const QJsonObject &session, qint64 laterSeconds = 0);
    /// Milliseconds passed since the last setSessions() (the list's age: a
    /// session's `expires_in` is that much less now).
    qint64 listAgeMs() const { return m_received.elapsed(); }

Q_SIGNALS:
    /// A session listed running is listed exited now (`session`: its new object).
    void sessionExited(const QJsonObject &session);
    /// The list changed (after setSessions() or clear()).
    void listChanged();
    /// The user renamed session `id` to `name` in a view (setData()); empty
    /// `name` takes the name away.
    void renameRequested(const QString &id, const QString &name);

public Q_SLOTS:
    /// dataChanged for the columns that count on (a running command's
    /// time, idle, time left) of every row.
    void refreshClocks();

private:
    struct Row {
        QString id;
        QJsonObject session;
    };
    /// Seconds passed since the last setSessions().
    qint64 elapsedSeconds() const;

    QList<Row> m_rows;
    QElapsedTimer m_received;
    bool m_renamable = false;
};

} // namespace Tether
