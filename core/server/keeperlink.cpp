// SPDX-License-Identifier: GPL-2.0-or-later
#include "keeperlink.h"
#include "fdpassing.h"
#include "handover.h"
#include "keeper.h"
#include "logging.h"
#include "ptyprocess.h"
#include "registry.h"
#include "runtimefile.h"
#include "session.h"
#include "sharestore.h"
#include "terminalstate.h"

#include <QDateTime>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QSet>
#include <QSocketNotifier>
#include <QTimer>

#include <algorithm>

#include <cerrno>
#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <poll.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>
#include <vector>

extern char **environ;

namespace Tether {

const char KeeperLink::kDisableEnv[] = "TETHER_KEEPER";

namespace {

/// How long connectToKeeper() waits for the keeper's whole answer to hello.
constexpr int kHelloTimeoutMs = 5000;
/// The same for a keeper started again while the event loop runs (the wait
/// blocks it): shorter.
constexpr int kRestartHelloTimeoutMs = 500;
/// How long it waits for an exiting keeper to release its lock.
constexpr int kLockWaitMs = 2000;
/// A keeper that died is started again at most this often.
constexpr qint64 kRestartIntervalMs = 10000;
/// The bound sent for a session at `offset`: well above it, so that it is
/// raised (a message) only each time the output doubles.
quint64 boundFor(quint64 offset)
{
    return offset * 2 + 2 * 1024 * 1024;
}
/// Margin below the bound at which it is raised: more than one read.
constexpr quint64 kBoundMargin = 1024 * 1024;
/// Messages waiting for a keeper that is behind, at most (then it is taken
/// for dead): a few per session, and 256 sessions by default.
constexpr int kMaxQueued = 16384;

QString errnoText(int err)
{
    return QString::fromLocal8Bit(std::strerror(err));
}

qint64 monotonicNowMs()
{
    struct timespec ts;
    ::clock_gettime(CLOCK_MONOTONIC, &ts);
    return qint64(ts.tv_sec) * 1000 + ts.tv_nsec / 1000000;
}

bool fillAddress(const QString &path, struct sockaddr_un *addr, QString *error)
{
    const QByteArray p = QFile::encodeName(path);
    std::memset(addr, 0, sizeof *addr);
    addr->sun_family = AF_UNIX;
    if (size_t(p.size()) >= sizeof addr->sun_path) {
        *error = QStringLiteral("%1: path too long for a socket").arg(path);
        return false;
    }
    std::memcpy(addr->sun_path, p.constData(), size_t(p.size()));
    return true;
}

/// Receives one message (blocking up to `deadline`, monotonic ms); its fds
/// are appended to `fds`. The message, or an empty array with *error.
QByteArray receive(int sock, qint64 deadline, QList<int> *fds, QString *error)
{
    for (;;) {
        const qint64 left = deadline - monotonicNowMs();
        if (left <= 0) {
            *error = QStringLiteral("the keeper did not answer in time");
            return QByteArray();
        }
        struct pollfd p = {sock, POLLIN, 0};
        const int r = ::poll(&p, 1, int(left));
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            continue;
        QByteArray buf(Keeper::kMaxMessage, Qt::Uninitialized);
        std::vector<int> got;
        const ssize_t n = FdPassing::receive(sock, buf.data(), size_t(buf.size()), &got);
        const int err = errno;
        for (const int fd : got)
            fds->append(fd);
        if (n < 0 && err == EAGAIN)
            continue;
        if (n <= 0) {
            *error = n == 0 ? QStringLiteral("the keeper closed the connection") : errnoText(err);
            return QByteArray();
        }
        buf.truncate(int(n));
        return buf;
    }
}

} // namespace

KeeperLink::KeeperLink(SessionRegistry *registry, QObject *parent)
    : QObject(parent)
    , m_registry(registry)
{
}

KeeperLink::~KeeperLink()
{
    m_stopped = true; // nothing is started again from here
    for (const Kept &k : std::as_const(m_kept)) {
        if (k.masterFd >= 0)
            ::close(k.masterFd);
        if (k.pidfd >= 0)
            ::close(k.pidfd);
    }
    if (m_sock >= 0 && !m_queue.isEmpty())
        flushQueue(); // the last of them (a 'Q'), as far as the socket takes it now
    clearQueue();
    delete m_notifier;
    delete m_writeNotifier;
    if (m_sock >= 0)
        ::close(m_sock);
}

QString KeeperLink::socketPath()
{
    return RuntimeFile::directory() + QStringLiteral("/keeper.sock");
}

QString KeeperLink::lockPath()
{
    return RuntimeFile::directory() + QStringLiteral("/keeper.lock");
}

bool KeeperLink::connectSocket(QString *error)
{
    struct sockaddr_un addr;
    if (!fillAddress(socketPath(), &addr, error))
        return false;
    const int s = ::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    if (s < 0) {
        *error = QStringLiteral("socket: %1").arg(errnoText(errno));
        return false;
    }
    if (::connect(s, reinterpret_cast<struct sockaddr *>(&addr), sizeof addr) != 0) {
        *error = QStringLiteral("%1: %2").arg(socketPath(), errnoText(errno));
        ::close(s);
        return false;
    }
    m_sock = s;
    return true;
}

bool KeeperLink::startKeeper(QString *error)
{
    if (!RuntimeFile::ensureDirectory(error))
        return false;
    const QByteArray lock = QFile::encodeName(lockPath());
    const int lockFd = ::open(lock.constData(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (lockFd < 0) {
        *error = QStringLiteral("%1: %2").arg(lockPath(), errnoText(errno));
        return false;
    }
    // One keeper per user. One that is exiting (it held nothing when its
    // host left) lets go of it in a moment.
    const qint64 until = monotonicNowMs() + (m_following ? 0 : kLockWaitMs); // no wait once the loop runs
    while (::flock(lockFd, LOCK_EX | LOCK_NB) != 0) {
        if ((errno != EWOULDBLOCK && errno != EINTR) || monotonicNowMs() >= until) {
            *error = errno == EWOULDBLOCK ? QStringLiteral("another keeper holds %1 but does not answer").arg(lockPath())
                                          : QStringLiteral("%1: %2").arg(lockPath(), errnoText(errno));
            ::close(lockFd);
            return false;
        }
        struct timespec ts = {0, 10 * 1000 * 1000};
        ::nanosleep(&ts, nullptr); // startup only, before the event loop
    }
    struct sockaddr_un addr;
    if (!fillAddress(socketPath(), &addr, error)) {
        ::close(lockFd);
        return false;
    }
    const int listenFd = ::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    ::unlink(addr.sun_path); // a dead keeper's: we hold the lock
    const mode_t oldMask = ::umask(0077);
    const bool bound = listenFd >= 0 && ::bind(listenFd, reinterpret_cast<struct sockaddr *>(&addr), sizeof addr) == 0
        && ::listen(listenFd, 16) == 0;
    ::umask(oldMask);
    if (!bound) {
        *error = QStringLiteral("%1: %2").arg(socketPath(), errnoText(errno));
        if (listenFd >= 0)
            ::close(listenFd);
        ::close(lockFd);
        return false;
    }
    // Connected before the keeper runs: the connection waits in the backlog,
    // so the keeper's first host is us, without a race.
    if (!connectSocket(error)) {
        ::close(listenFd);
        ::close(lockFd);
        ::unlink(addr.sun_path);
        return false;
    }

    // Everything the children need, made before fork (only async-signal-safe
    // calls after it: we may have threads).
    QList<QByteArray> env;
    for (char **e = environ; e && *e; ++e) {
        const QByteArray entry(*e);
        if (!entry.startsWith(QByteArray(Keeper::kFdsEnv) + '=') && !entry.startsWith(QByteArray(Keeper::kSocketEnv) + '='))
            env.append(entry);
    }
    env.append(QByteArray(Keeper::kFdsEnv) + '=' + QByteArray::number(listenFd) + ':' + QByteArray::number(lockFd));
    env.append(QByteArray(Keeper::kSocketEnv) + '=' + QByteArray(addr.sun_path));
    std::vector<char *> envp;
    for (QByteArray &e : env)
        envp.push_back(e.data());
    envp.push_back(nullptr);
    char arg0[] = "tether";
    char arg1[] = "keeper";
    char *argv[] = {arg0, arg1, nullptr};
    const int devNull = ::open("/dev/null", O_RDWR | O_CLOEXEC);
    struct stat st;
    const bool stderrToFile = ::fstat(STDERR_FILENO, &st) == 0 && S_ISREG(st.st_mode);

    const pid_t first = ::fork();
    if (first == 0) {
        // Its own process session and group, so that nothing aimed at ours
        // (a terminal's hangup, a job runner's kill of the group) reaches
        // it; and not our child (the middle process exits at once), so it
        // is nobody's to reap but init's or a subreaper's.
        ::setsid();
        const pid_t second = ::fork();
        if (second != 0)
            ::_exit(second < 0 ? 1 : 0);
        if (devNull >= 0) {
            ::dup2(devNull, STDIN_FILENO);
            ::dup2(devNull, STDOUT_FILENO);
            if (!stderrToFile)
                ::dup2(devNull, STDERR_FILENO);
        }
        ::fcntl(listenFd, F_SETFD, 0);
        ::fcntl(lockFd, F_SETFD, 0);
        sigset_t none;
        sigemptyset(&none);
        ::sigprocmask(SIG_SETMASK, &none, nullptr);
        ::execve("/proc/self/exe", argv, envp.data());
        ::_exit(127);
    }
    const int forkErr = errno;
    if (devNull >= 0)
        ::close(devNull);
    ::close(listenFd);
    ::close(lockFd);
    if (first < 0) {
        *error = QStringLiteral("fork: %1").arg(errnoText(forkErr));
        ::close(m_sock);
        m_sock = -1;
        return false;
    }
    reapChildLater(first);
    return true;
}

bool KeeperLink::hello(QString *error)
{
    if (!send('H', QByteArray())) {
        *error = QStringLiteral("cannot talk to the keeper: %1").arg(errnoText(errno));
        return false;
    }
    const qint64 deadline = monotonicNowMs() + (m_following ? kRestartHelloTimeoutMs : kHelloTimeoutMs);
    QList<Kept> kept;
    auto closeAll = [&kept]() {
        for (const Kept &k : std::as_const(kept)) {
            if (k.masterFd >= 0)
                ::close(k.masterFd);
            if (k.pidfd >= 0)
                ::close(k.pidfd);
        }
    };
    for (;;) {
        QList<int> fds;
        const QByteArray m = receive(m_sock, deadline, &fds, error);
        if (m.isEmpty()) {
            for (const int fd : std::as_const(fds))
                ::close(fd);
            closeAll();
            return false;
        }
        if (m.at(0) == 'E') {
            for (const int fd : std::as_const(fds))
                ::close(fd);
            m_keeperPid = m.mid(1).toLongLong();
            m_kept = kept;
            return true;
        }
        if (m.at(0) == 'L') {
            for (const int fd : std::as_const(fds))
                ::close(fd);
            m_hostLostMs = m.mid(1).toLongLong();
            continue;
        }
        const int nl = m.indexOf('\n');
        if (m.at(0) != 'S' || fds.isEmpty() || nl < 2) {
            for (const int fd : std::as_const(fds))
                ::close(fd);
            continue;
        }
        Kept k;
        k.id = QString::fromUtf8(m.mid(1, nl - 1));
        k.meta = m.mid(nl + 1);
        k.masterFd = fds.value(0, -1);
        k.pidfd = fds.value(1, -1);
        for (int i = 2; i < fds.size(); ++i)
            ::close(fds.at(i));
        kept.append(k);
    }
}

bool KeeperLink::connectToKeeper(QString *error)
{
    if (qgetenv(kDisableEnv) == "0") {
        *error = QStringLiteral("turned off (%1=0)").arg(QLatin1String(kDisableEnv));
        return false;
    }
    QString why;
    // A keeper that is there answers; one that is exiting (it held nothing)
    // may close on us: then a new one is started.
    if (connectSocket(&why) && hello(&why)) {
        // connected
    } else {
        if (m_sock >= 0) {
            ::close(m_sock);
            m_sock = -1;
        }
        if (!startKeeper(error) || !hello(error)) {
            if (m_sock >= 0) {
                ::close(m_sock);
                m_sock = -1;
            }
            return false;
        }
    }
    ::fcntl(m_sock, F_SETFL, ::fcntl(m_sock, F_GETFL) | O_NONBLOCK);
    m_notifier = new QSocketNotifier(m_sock, QSocketNotifier::Read, this);
    connect(m_notifier, &QSocketNotifier::activated, this, &KeeperLink::onReadable);
    qCInfo(lcServer) << "session keeper pid" << m_keeperPid << "holds" << m_kept.size() << "sessions";
    Q_EMIT keeperChanged();
    return true;
}

void KeeperLink::setShareStore(ShareStore *shares)
{
    if (m_shares)
        disconnect(m_shares, nullptr, this, nullptr);
    m_shares = shares;
    if (shares)
        connect(shares, &ShareStore::sharesChanged, this, [this](const QString &id) {
            if (Session *s = m_registry->find(id))
                sendMeta(s); // only a session the keeper holds
        });
}

int KeeperLink::adoptAndFollow(QStringList *problems)
{
    QHash<QString, QList<Handover::ShareRecord>> shares;
    Handover::State state;
    const QByteArray freshState = TerminalState().save();
    const qint64 now = QDateTime::currentMSecsSinceEpoch();
    QSet<QString> keptIds;
    for (const Kept &k : std::as_const(m_kept)) {
        keptIds.insert(k.id);
        if (m_registry->find(k.id)) {
            // A restart in place handed it over already: the keeper's copy
            // stays the keeper's.
            ::close(k.masterFd);
            if (k.pidfd >= 0)
                ::close(k.pidfd);
            continue;
        }
        const QJsonObject o = QJsonDocument::fromJson(k.meta).object();
        Handover::SessionRecord r;
        r.id = k.id;
        for (const QJsonValue &a : o.value(QStringLiteral("argv")).toArray())
            r.command.append(a.toString());
        r.loginShell = o.value(QStringLiteral("login")).toBool();
        const quint32 notify = quint32(o.value(QStringLiteral("notify")).toDouble());
        r.notifyMuted = notify & 1u;
        r.notifyNext = notify & 2u;
        r.notifyActivity = notify & 4u;
        r.notifySilence = int(notify >> 8);
        for (const QJsonValue &v : o.value(QStringLiteral("shares")).toArray())
            shares[k.id].append({v.toObject().value(QStringLiteral("token")).toString(),
                                 qint64(v.toObject().value(QStringLiteral("created")).toDouble())});
        r.cwd = o.value(QStringLiteral("cwd")).toString();
        r.name = o.value(QStringLiteral("name")).toString();
        r.createdMs = qint64(o.value(QStringLiteral("created")).toDouble());
        const qint64 detached = qint64(o.value(QStringLiteral("detached_since")).toDouble());
        r.detachedSinceMs = detached > 0 && detached <= now ? detached : now;
        r.lastActivityMs = now;
        r.pty.pid = pid_t(o.value(QStringLiteral("pid")).toDouble());
        r.pty.masterFd = k.masterFd;
        r.pty.pidfd = k.pidfd;
        struct winsize ws = {};
        if (::ioctl(k.masterFd, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0 && ws.ws_row > 0) {
            r.pty.cols = ws.ws_col;
            r.pty.rows = ws.ws_row;
        }
        r.capacity = m_registry->limits().bufferCapacity;
        // Past every offset the dead host gave out: a viewer resuming from
        // one of them gets a reset replay, never bytes of another place.
        r.ringStart = quint64(o.value(QStringLiteral("bound")).toDouble());
        r.freshStream = true; // an empty buffer from a fresh terminal: nothing dropped
        r.headState = freshState;
        r.tailState = freshState;
        if (r.pty.pid <= 0) {
            if (problems)
                problems->append(QStringLiteral("session %1: no process id in the keeper's record").arg(k.id));
            ::close(k.masterFd);
            if (k.pidfd >= 0)
                ::close(k.pidfd);
            continue;
        }
        state.sessions.append(r);
    }
    m_kept.clear();
    int recovered = 0;
    if (!state.sessions.isEmpty())
        recovered = m_registry->adopt(state, problems);
    for (const Handover::SessionRecord &r : std::as_const(state.sessions)) {
        if (!m_registry->find(r.id))
            continue;
        m_recoveredIds.append(r.id);
        // Its read-only links work again (malformed tokens are skipped).
        if (m_shares && shares.contains(r.id))
            m_shares->adopt(r.id, shares.value(r.id));
    }

    m_following = true;
    connect(m_registry, &SessionRegistry::sessionAdded, this, &KeeperLink::follow);
    connect(m_registry, &SessionRegistry::sessionRemoved, this, &KeeperLink::drop);
    for (const QString &id : std::as_const(keptIds))
        if (!m_registry->find(id))
            send('D', id.toUtf8());
    for (Session *s : m_registry->sessions()) {
        if (keptIds.contains(s->id()) && s->state() == Session::State::Running) {
            watch(s);
            m_bound.insert(s, 0);
            sendMeta(s); // a new bound, and the name the registry has now
        } else {
            if (keptIds.contains(s->id())) // exited: nothing to keep
                send('D', s->id().toUtf8());
            follow(s);
        }
    }
    return recovered;
}

void KeeperLink::watch(Session *s)
{
    connect(s, &Session::exited, this, [this, s]() { drop(s); });
    connect(s, &Session::nameChanged, this, [this, s]() { sendMeta(s); });
    connect(s, &Session::notifySettingsChanged, this, [this, s]() { sendMeta(s); });
    // detached_since: a message per attach or detach, none on the output path.
    connect(s, &Session::viewersChanged, this, [this, s]() {
        if (s->detachedSince() != m_detachedSent.value(s))
            sendMeta(s);
    });
    // One comparison per read; a message only when the output nears the bound.
    connect(s, &Session::outputArrived, this, [this, s]() {
        const auto it = m_bound.constFind(s);
        if (it != m_bound.constEnd() && s->offset() + kBoundMargin >= it.value())
            sendMeta(s);
    });
}

void KeeperLink::follow(Session *s)
{
    if (m_stopped || s->state() != Session::State::Running || m_bound.contains(s))
        return;
    watch(s);
    add(s);
    scheduleRestart(); // no keeper (it died and could not be started again): try once more
}

QByteArray KeeperLink::meta(Session *s) const
{
    QJsonObject o;
    o.insert(QStringLiteral("name"), s->name());
    o.insert(QStringLiteral("argv"), QJsonArray::fromStringList(s->command()));
    o.insert(QStringLiteral("login"), s->loginShell());
    o.insert(QStringLiteral("cwd"), s->cwd());
    o.insert(QStringLiteral("created"), double(s->created().toMSecsSinceEpoch()));
    o.insert(QStringLiteral("pid"), double(s->process()->pid()));
    o.insert(QStringLiteral("bound"), double(m_bound.value(s)));
    // What a crash must not lose besides the process (the restart state's
    // encoding of the notification settings: Handover::SessionRecord).
    const Session::NotifySettings n = s->notifySettings();
    o.insert(QStringLiteral("notify"), double((n.muted ? 1u : 0u) | (n.next ? 2u : 0u) | (n.activity ? 4u : 0u)
                                              | (quint32(std::clamp(n.silence, 0, 0xffffff)) << 8)));
    // The TTL clock of a detached session goes on across the crash (a
    // session that had viewers is detached from the adoption on).
    if (s->detachedSince().isValid())
        o.insert(QStringLiteral("detached_since"), double(s->detachedSince().toMSecsSinceEpoch()));
    if (m_shares) {
        QJsonArray shares;
        for (const Handover::ShareRecord &r : m_shares->records(s->id()))
            shares.append(QJsonObject{{QStringLiteral("token"), r.token}, {QStringLiteral("created"), double(r.createdMs)}});
        if (!shares.isEmpty())
            o.insert(QStringLiteral("shares"), shares);
    }
    return s->id().toUtf8() + '\n' + QJsonDocument(o).toJson(QJsonDocument::Compact);
}

void KeeperLink::add(Session *s)
{
    if (m_stopped)
        return;
    const int master = s->process()->masterFd();
    if (master < 0)
        return;
    // Followed even while no keeper is connected: a keeper started again
    // gets every session in m_bound (restartKeeper()).
    m_bound.insert(s, boundFor(s->offset()));
    if (m_sock < 0)
        return;
    m_detachedSent.insert(s, s->detachedSince());
    const int fds[2] = {master, s->process()->pidfd()};
    send('A', meta(s), fds, fds[1] >= 0 ? 2 : 1);
}

void KeeperLink::sendMeta(Session *s)
{
    if (m_sock < 0 || m_stopped || !m_bound.contains(s))
        return;
    m_bound.insert(s, boundFor(s->offset()));
    m_detachedSent.insert(s, s->detachedSince());
    send('M', meta(s));
}

void KeeperLink::drop(Session *s)
{
    if (!m_bound.contains(s))
        return;
    m_bound.remove(s);
    m_detachedSent.remove(s);
    disconnect(s, nullptr, this, nullptr);
    if (m_sock >= 0 && !m_stopped)
        send('D', s->id().toUtf8());
}

void KeeperLink::stop()
{
    if (m_sock >= 0 && !m_stopped) {
        // 'Q' closes everything: what still waits to be sent does not matter.
        // Should the socket be full, the write notifier sends it while the
        // sessions are torn down.
        clearQueue();
        send('Q', QByteArray());
    }
    m_stopped = true;
}

namespace {
/// One sendmsg(2) without waiting: the bytes sent, or -1 with errno.
ssize_t sendNow(int sock, const QByteArray &buf, const int *fds, int nfds)
{
    return FdPassing::send(sock, buf.constData(), size_t(buf.size()), fds, nfds, MSG_DONTWAIT);
}
} // namespace

bool KeeperLink::send(char kind, const QByteArray &payload, const int *fds, int nfds)
{
    if (m_sock < 0)
        return false;
    const QByteArray buf = kind + payload;
    if (m_queue.isEmpty()) {
        const ssize_t r = sendNow(m_sock, buf, fds, nfds);
        if (r == ssize_t(buf.size()))
            return true;
        if (r >= 0 || (errno != EAGAIN && errno != EWOULDBLOCK) || !m_notifier) {
            if (m_notifier) // after connectToKeeper(): the link is running
                lose(QStringLiteral("cannot send to it: %1").arg(r < 0 ? errnoText(errno) : QStringLiteral("short write")));
            return false;
        }
    }
    // The keeper is behind (a burst: many sessions at once, a rename storm;
    // or it is stopped): queued in order, its descriptors copied, and sent
    // when the socket has room again (a write notifier, on only then).
    if (m_queue.size() >= kMaxQueued) {
        lose(QStringLiteral("it took no message for too long (%1 waiting)").arg(m_queue.size()));
        return false;
    }
    Pending p;
    p.message = buf;
    for (int i = 0; i < nfds && i < 2; ++i)
        p.fds[i] = ::fcntl(fds[i], F_DUPFD_CLOEXEC, 3);
    p.nfds = nfds;
    m_queue.append(p);
    if (!m_writeNotifier) {
        m_writeNotifier = new QSocketNotifier(m_sock, QSocketNotifier::Write, this);
        connect(m_writeNotifier, &QSocketNotifier::activated, this, &KeeperLink::flushQueue);
    }
    m_writeNotifier->setEnabled(true);
    return true;
}

void KeeperLink::flushQueue()
{
    while (!m_queue.isEmpty() && m_sock >= 0) {
        Pending &p = m_queue.first();
        const ssize_t r = sendNow(m_sock, p.message, p.fds, p.nfds);
        if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return; // the notifier stays on
        if (r != ssize_t(p.message.size())) {
            lose(QStringLiteral("cannot send to it: %1").arg(r < 0 ? errnoText(errno) : QStringLiteral("short write")));
            return;
        }
        for (int &fd : p.fds) {
            if (fd >= 0)
                ::close(fd);
            fd = -1;
        }
        m_queue.removeFirst();
    }
    if (m_writeNotifier)
        m_writeNotifier->setEnabled(false);
}

void KeeperLink::clearQueue()
{
    for (const Pending &p : std::as_const(m_queue))
        for (const int fd : p.fds)
            if (fd >= 0)
                ::close(fd);
    m_queue.clear();
    if (m_writeNotifier)
        m_writeNotifier->setEnabled(false);
}

void KeeperLink::onReadable()
{
    // The keeper sends nothing unasked: readable means it is gone.
    char c;
    const ssize_t n = ::recv(m_sock, &c, 1, MSG_DONTWAIT);
    if (n < 0 && (errno == EAGAIN || errno == EINTR))
        return;
    lose(n == 0 ? QStringLiteral("it ended") : n < 0 ? errnoText(errno) : QStringLiteral("it sent something unasked"));
}

void KeeperLink::lose(const QString &why)
{
    if (m_sock < 0)
        return;
    // Maybe from one of their own signals: deleted later.
    for (QSocketNotifier *n : {m_notifier, m_writeNotifier}) {
        if (n) {
            n->setEnabled(false);
            n->deleteLater();
        }
    }
    m_notifier = nullptr;
    m_writeNotifier = nullptr;
    clearQueue();
    ::close(m_sock);
    m_sock = -1;
    const qint64 was = m_keeperPid;
    m_keeperPid = 0;
    Q_EMIT keeperChanged();
    if (m_stopped)
        return;
    qCWarning(lcServer).noquote() << QStringLiteral("lost the session keeper (pid %1): %2; sessions go on, but would "
                                                    "not survive a crash of Tether until a keeper holds them again")
                                         .arg(was).arg(why);
    scheduleRestart();
}

void KeeperLink::scheduleRestart()
{
    if (m_stopped || m_sock >= 0 || !m_following || m_restartPending)
        return;
    // At most once per kRestartIntervalMs (a keeper that cannot run must
    // not make us spin).
    const qint64 now = monotonicNowMs();
    const qint64 wait = m_lastRestartMs == 0 ? 0 : std::max<qint64>(0, m_lastRestartMs + kRestartIntervalMs - now);
    m_restartPending = true;
    QTimer::singleShot(int(wait), this, [this]() {
        m_restartPending = false;
        restartKeeper();
    });
}

void KeeperLink::restartKeeper()
{
    if (m_stopped || m_sock >= 0 || !m_following)
        return;
    m_lastRestartMs = monotonicNowMs();
    QString error;
    if (!connectToKeeper(&error)) {
        // Tried again when the next session starts (no timer meanwhile).
        qCWarning(lcServer).noquote() << "cannot start a session keeper again:" << error;
        return;
    }
    // A keeper we did not start may hold sessions (none should): ours win.
    QSet<QString> ours;
    for (Session *s : m_registry->sessions())
        ours.insert(s->id());
    for (const Kept &k : std::as_const(m_kept)) {
        ::close(k.masterFd);
        if (k.pidfd >= 0)
            ::close(k.pidfd);
        if (!ours.contains(k.id))
            send('D', k.id.toUtf8());
    }
    m_kept.clear();
    const QList<Session *> held = m_bound.keys();
    for (Session *s : held)
        add(s);
    qCInfo(lcServer) << "session keeper started again (pid" << m_keeperPid << "), holding" << held.size() << "sessions";
}

} // namespace Tether
