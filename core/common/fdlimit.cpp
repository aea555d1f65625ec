// SPDX-License-Identifier: GPL-2.0-or-later
#include "fdlimit.h"
#include "logging.h"

#include <QtGlobal>

#include <cerrno>
#include <cstring>

namespace Tether {
namespace FdLimit {

namespace {
/// The recorded original soft limit; RLIM_INFINITY until raiseSoftLimit().
/// Written once at start, before any thread exists; read when spawning.
rlim_t g_original = RLIM_INFINITY;
bool g_recorded = false;

QString errnoText(const char *what, int err)
{
    return QStringLiteral("%1: %2").arg(QLatin1String(what), QString::fromLocal8Bit(std::strerror(err)));
}
} // namespace

namespace {
Raise raiseLimit()
{
    Raise r;
    struct rlimit rl;
    if (::getrlimit(RLIMIT_NOFILE, &rl) != 0) {
        r.error = errnoText("getrlimit(RLIMIT_NOFILE)", errno);
        return r;
    }
    r.original = r.soft = rl.rlim_cur;
    r.hard = rl.rlim_max;
    // A restart in place: the soft limit is ours already; the one the user
    // started Tether with came along in the environment.
    const QByteArray handed = qgetenv(kOriginalSoftEnv);
    qunsetenv(kOriginalSoftEnv);
    bool ok = false;
    const qulonglong handedValue = handed.toULongLong(&ok);
    if (ok && handedValue > 0)
        r.original = rlim_t(handedValue);
    g_original = r.original;
    g_recorded = true;
    if (rl.rlim_cur == rl.rlim_max)
        return r;
    rl.rlim_cur = rl.rlim_max;
    if (::setrlimit(RLIMIT_NOFILE, &rl) != 0) {
        r.error = errnoText("setrlimit(RLIMIT_NOFILE)", errno);
        return r;
    }
    r.soft = rl.rlim_cur;
    return r;
}
} // namespace

Raise raiseSoftLimit()
{
    const Raise r = raiseLimit();
    if (!r.error.isEmpty())
        qCWarning(lcServer).noquote() << "cannot raise the descriptor limit:" << r.error;
    else
        qCDebug(lcServer).nospace() << "descriptor limit (RLIMIT_NOFILE): soft " << qulonglong(r.soft) << ", hard "
                                    << qulonglong(r.hard) << "; sessions get " << qulonglong(r.original);
    return r;
}

rlim_t childSoftLimit()
{
    if (g_recorded)
        return g_original;
    struct rlimit rl;
    return ::getrlimit(RLIMIT_NOFILE, &rl) == 0 ? rl.rlim_cur : RLIM_INFINITY;
}

QByteArray handoverEnvEntry()
{
    return QByteArray(kOriginalSoftEnv) + '=' + QByteArray::number(qulonglong(childSoftLimit()));
}

} // namespace FdLimit
} // namespace Tether
