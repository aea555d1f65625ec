// SPDX-License-Identifier: GPL-2.0-or-later
#include "settingsapi.h"
#include "ringbuffer.h"
#include "settingsbounds.h"
#include "shellwords.h"

#include <QHostAddress>
#include <QJsonDocument>

#include <cmath>

namespace Tether {
namespace SettingsApi {

// The bounds clients check a form against (settingsbounds.h) are the ones
// applied here.
static_assert(SettingsBounds::kMinBufferSize == RingBuffer::kMinCapacity, "buffer_size bounds");
static_assert(SettingsBounds::kMaxBufferSize == RingBuffer::kMaxCapacity, "buffer_size bounds");
static_assert(SettingsBounds::kMaxTtlSeconds == SessionConfig::kMaxTtlSeconds, "ttl bounds");
static_assert(SettingsBounds::kMaxSavedScrollbackLines == SessionConfig::kMaxSavedScrollbackLines, "saved_scrollback_lines bounds");

QJsonObject toJson(const HostConfig &c)
{
    return QJsonObject{
        {QStringLiteral("ttl"), c.limits.ttlSeconds},
        {QStringLiteral("exited_ttl"), c.limits.exitedTtlSeconds},
        {QStringLiteral("buffer_size"), double(c.limits.bufferCapacity)},
        {QStringLiteral("max_sessions"), c.limits.maxSessions},
        {QStringLiteral("max_sessions_limit"), SessionConfig::maxSessionsLimit()},
        {QStringLiteral("shell_integration"), c.limits.shellIntegration},
        {QStringLiteral("notify_after"), c.limits.notifyAfterSeconds},
        {QStringLiteral("saved_scrollback_lines"), c.savedScrollbackLines},
        {QStringLiteral("command"), c.command},
        {QStringLiteral("bind"), c.bind},
        {QStringLiteral("port"), int(c.port)},
    };
}

namespace {
/// An integer in [lo, hi] from `v`, else false.
bool integerIn(const QJsonValue &v, qint64 lo, qint64 hi, qint64 *out)
{
    if (!v.isDouble())
        return false;
    const double d = v.toDouble();
    if (std::floor(d) != d || d < double(lo) || d > double(hi))
        return false;
    *out = qint64(d);
    return true;
}
} // namespace

bool applyPatch(const QByteArray &body, HostConfig *c, QString *error, QStringList *changed)
{
    QJsonParseError err;
    const QJsonDocument doc = QJsonDocument::fromJson(body.trimmed(), &err);
    if (err.error != QJsonParseError::NoError) {
        *error = QStringLiteral("invalid JSON: %1").arg(err.errorString());
        return false;
    }
    if (!doc.isObject()) {
        *error = QStringLiteral("body must be a JSON object");
        return false;
    }
    const QJsonObject o = doc.object();
    HostConfig next = *c;
    bool any = false;
    auto integer = [&](const char *name, qint64 lo, qint64 hi, auto set) {
        const QJsonValue v = o.value(QLatin1String(name));
        if (v.isUndefined())
            return true;
        any = true;
        qint64 n = 0;
        if (!integerIn(v, lo, hi, &n)) {
            *error = QStringLiteral("%1 must be an integer %2..%3").arg(QLatin1String(name)).arg(lo).arg(hi);
            return false;
        }
        set(n);
        return true;
    };
    auto boolean = [&](const char *name, auto set) {
        const QJsonValue v = o.value(QLatin1String(name));
        if (v.isUndefined())
            return true;
        any = true;
        if (!v.isBool()) {
            *error = QStringLiteral("%1 must be true or false").arg(QLatin1String(name));
            return false;
        }
        set(v.toBool());
        return true;
    };
    auto text = [&](const char *name, auto set) {
        const QJsonValue v = o.value(QLatin1String(name));
        if (v.isUndefined())
            return true;
        any = true;
        if (!v.isString()) {
            *error = QStringLiteral("%1 must be a string").arg(QLatin1String(name));
            return false;
        }
        if (v.toString().contains(QChar(0))) {
            *error = QStringLiteral("%1 must not contain NUL characters").arg(QLatin1String(name));
            return false;
        }
        return set(v.toString());
    };
    const bool ok = integer("ttl", 0, SessionConfig::kMaxTtlSeconds, [&](qint64 n) { next.limits.ttlSeconds = int(n); })
        && integer("exited_ttl", 0, SessionConfig::kMaxTtlSeconds, [&](qint64 n) { next.limits.exitedTtlSeconds = int(n); })
        && integer("buffer_size", RingBuffer::kMinCapacity, RingBuffer::kMaxCapacity,
                   [&](qint64 n) { next.limits.bufferCapacity = qsizetype(n); })
        && integer("max_sessions", 1, SessionConfig::maxSessionsLimit(), [&](qint64 n) { next.limits.maxSessions = int(n); })
        && integer("notify_after", 0, SettingsBounds::kMaxNotifyAfterSeconds, [&](qint64 n) { next.limits.notifyAfterSeconds = int(n); })
        && integer("saved_scrollback_lines", 0, SessionConfig::kMaxSavedScrollbackLines,
                   [&](qint64 n) { next.savedScrollbackLines = int(n); })
        && boolean("shell_integration", [&](bool b) { next.limits.shellIntegration = b; })
        && integer("port", 0, 65535, [&](qint64 n) { next.port = quint16(n); })
        && text("command", [&](const QString &s) {
               QString why;
               if (!ShellWords::split(s, &why)) {
                   *error = QStringLiteral("command cannot be split into words: %1").arg(why);
                   return false;
               }
               next.command = s;
               return true;
           })
        && text("bind", [&](const QString &s) {
               if (QHostAddress(s.trimmed()).isNull()) {
                   *error = QStringLiteral("bind must be an IP address, not \"%1\"").arg(s);
                   return false;
               }
               next.bind = s.trimmed();
               return true;
           });
    if (!ok)
        return false;
    if (!any) {
        *error = QStringLiteral("nothing to change: the body has no setting");
        return false;
    }
    if (changed) {
        changed->clear();
        const QJsonObject before = toJson(*c), after = toJson(next);
        for (auto it = after.begin(); it != after.end(); ++it)
            if (before.value(it.key()) != it.value())
                changed->append(it.key());
    }
    *c = next;
    return true;
}

} // namespace SettingsApi
} // namespace Tether
