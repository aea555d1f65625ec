// SPDX-License-Identifier: GPL-2.0-or-later
#include "windowstate.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QSaveFile>

namespace Tether {
namespace WindowState {

QString path()
{
    QString state = qEnvironmentVariable("XDG_STATE_HOME");
    if (state.isEmpty() || !QDir::isAbsolutePath(state))
        state = QDir::homePath() + QStringLiteral("/.local/state");
    return state + QStringLiteral("/tether/desktop.json");
}

QList<Window> load(const QString &file)
{
    QFile f(file);
    if (!f.open(QIODevice::ReadOnly))
        return {};
    QList<Window> windows;
    // A bounded read: the file is ours, but a damaged one must not cost much.
    const QJsonArray list = QJsonDocument::fromJson(f.read(1024 * 1024)).object().value(QStringLiteral("windows")).toArray();
    for (const QJsonValue &v : list) {
        const QJsonObject o = v.toObject();
        Window w;
        w.id = o.value(QStringLiteral("id")).toString();
        w.mode = o.value(QStringLiteral("mode")).toString() == QLatin1String("watch") ? ViewerMode::Watch
                                                                                     : ViewerMode::Control;
        if (!w.id.isEmpty() && !windows.contains(w))
            windows.append(w);
    }
    return windows;
}

bool save(const QList<Window> &windows, QString *error, const QString &file)
{
    QJsonArray list;
    for (const Window &w : windows)
        list.append(QJsonObject{{QStringLiteral("id"), w.id},
                                {QStringLiteral("mode"), w.mode == ViewerMode::Watch ? QStringLiteral("watch")
                                                                                    : QStringLiteral("control")}});
    QDir().mkpath(QFileInfo(file).absolutePath());
    QSaveFile f(file);
    if (!f.open(QIODevice::WriteOnly)) {
        if (error)
            *error = QStringLiteral("cannot write %1: %2").arg(file, f.errorString());
        return false;
    }
    f.setPermissions(QFile::ReadOwner | QFile::WriteOwner); // best effort: ids are not secrets
    if (f.write(QJsonDocument(QJsonObject{{QStringLiteral("windows"), list}}).toJson(QJsonDocument::Compact)) < 0
        || !f.commit()) {
        if (error)
            *error = QStringLiteral("cannot write %1: %2").arg(file, f.errorString());
        return false;
    }
    return true;
}

} // namespace WindowState
} // namespace Tether
