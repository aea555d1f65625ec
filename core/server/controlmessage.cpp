// SPDX-License-Identifier: GPL-2.0-or-later
#include "controlmessage.h"
#include "spawnrequest.h"

#include <QJsonDocument>
#include <QJsonObject>

namespace Tether {

ControlMessage parseControlMessage(const QByteArray &utf8)
{
    ControlMessage m;
    QJsonParseError err;
    const QJsonDocument doc = QJsonDocument::fromJson(utf8, &err);
    if (err.error != QJsonParseError::NoError || !doc.isObject())
        return m;
    const QJsonObject o = doc.object();
    const QString type = o.value(QStringLiteral("type")).toString();
    if (type == QLatin1String("pause") || type == QLatin1String("resume")) {
        m.type = type == QLatin1String("pause") ? ControlMessage::Type::Pause : ControlMessage::Type::Resume;
        return m;
    }
    if (type != QLatin1String("resize"))
        return m;
    const QJsonValue c = o.value(QStringLiteral("cols"));
    const QJsonValue r = o.value(QStringLiteral("rows"));
    if (!c.isDouble() || !r.isDouble())
        return m;
    m.type = ControlMessage::Type::Resize;
    const std::optional<int> cols = cellCount(c);
    const std::optional<int> rows = cellCount(r);
    if (cols && rows) {
        m.sizeInRange = true;
        m.cols = *cols;
        m.rows = *rows;
    }
    return m;
}

} // namespace Tether
