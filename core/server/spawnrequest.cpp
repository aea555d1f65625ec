// SPDX-License-Identifier: GPL-2.0-or-later
#include "spawnrequest.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>

namespace Tether {

namespace {

SpawnRequest refuse(const QString &error)
{
    SpawnRequest r;
    r.status = 400;
    r.error = error;
    return r;
}

bool isAbsent(const QJsonValue &v)
{
    return v.isUndefined() || v.isNull();
}

} // namespace

SpawnRequest parseSpawnRequest(const QByteArray &rawBody, const QStringList &defaultCommand)
{
    const QByteArray body = rawBody.trimmed();
    QJsonObject o;
    if (!body.isEmpty()) {
        QJsonParseError err;
        const QJsonDocument doc = QJsonDocument::fromJson(body, &err);
        if (err.error != QJsonParseError::NoError)
            return refuse(QStringLiteral("invalid JSON: %1").arg(err.errorString()));
        if (!doc.isObject())
            return refuse(QStringLiteral("body must be a JSON object"));
        o = doc.object();
    }

    SpawnRequest r;
    SpawnOptions &opts = r.options;
    const QJsonValue command = o.value(QStringLiteral("command"));
    if (isAbsent(command)) {
        opts.argv = defaultCommand;
    } else {
        const QJsonArray a = command.toArray();
        if (!command.isArray() || a.isEmpty())
            return refuse(QStringLiteral("command must be a non-empty array of strings"));
        for (const QJsonValue &v : a) {
            if (!v.isString())
                return refuse(QStringLiteral("command must be a non-empty array of strings"));
            if (v.toString().contains(QChar(0)))
                return refuse(QStringLiteral("command must not contain NUL characters"));
            opts.argv.append(v.toString());
        }
        if (opts.argv.first().isEmpty())
            return refuse(QStringLiteral("command[0] must not be empty"));
    }

    const QJsonValue cwd = o.value(QStringLiteral("cwd"));
    if (!isAbsent(cwd)) {
        if (!cwd.isString() || (!cwd.toString().isEmpty() && !cwd.toString().startsWith(QLatin1Char('/')))
            || cwd.toString().contains(QChar(0))) {
            return refuse(QStringLiteral("cwd must be an absolute path (without NUL characters)"));
        }
        opts.cwd = cwd.toString();
    }

    for (const char *field : {"cols", "rows"}) {
        const QJsonValue v = o.value(QLatin1String(field));
        if (isAbsent(v))
            continue;
        const std::optional<int> n = cellCount(v);
        if (!n) {
            return refuse(QStringLiteral("%1 must be an integer %2..%3")
                              .arg(QLatin1String(field)).arg(kMinCells).arg(kMaxCells));
        }
        (qstrcmp(field, "cols") == 0 ? opts.cols : opts.rows) = *n;
    }

    const QJsonValue name = o.value(QStringLiteral("name"));
    if (!isAbsent(name)) {
        if (!name.isString())
            return refuse(QStringLiteral("name must be a string"));
        r.name = name.toString();
    }
    return r;
}

std::optional<int> cellCount(const QJsonValue &v)
{
    if (!v.isDouble())
        return std::nullopt;
    const double d = v.toDouble();
    // In range first (NaN fails both comparisons), only then int(d).
    if (!(d >= kMinCells && d <= kMaxCells) || d != double(int(d)))
        return std::nullopt;
    return int(d);
}

} // namespace Tether
