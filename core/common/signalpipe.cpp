// SPDX-License-Identifier: GPL-2.0-or-later
#include "signalpipe.h"
#include "logging.h"
#include "procinfo.h"

#include <QSocketNotifier>
#include <QStringList>

#include <cerrno>
#include <cstring>
#include <sys/socket.h>
#include <unistd.h>

namespace Tether {

namespace {
/// Write end, read by the handler; -1 when no SignalPipe exists. An int read
/// and written only while the handlers are (un)installed.
volatile sig_atomic_t g_writeFd = -1;

/// What the handler writes per signal: one write(2) of a few bytes on a
/// stream socket, taken whole or refused with EAGAIN (the kernel queues a
/// small write as one buffer), read back by drain().
struct Record {
    int number;
    int code;
    pid_t pid;
    uid_t uid;
};

void onSignal(int signalNumber, siginfo_t *info, void *)
{
    const int savedErrno = errno;
    Record r{signalNumber, 0, 0, 0};
    if (info) {
        r.code = info->si_code;
        r.pid = info->si_pid;
        r.uid = info->si_uid;
    }
    const int fd = g_writeFd;
    if (fd >= 0)
        [[maybe_unused]] const ssize_t n = ::write(fd, &r, sizeof r); // non-blocking: a full pipe drops it
    errno = savedErrno;
}
} // namespace

QString signalName(int signalNumber)
{
    switch (signalNumber) {
    case SIGHUP: return QStringLiteral("SIGHUP");
    case SIGINT: return QStringLiteral("SIGINT");
    case SIGQUIT: return QStringLiteral("SIGQUIT");
    case SIGTERM: return QStringLiteral("SIGTERM");
    case SIGUSR1: return QStringLiteral("SIGUSR1");
    case SIGUSR2: return QStringLiteral("SIGUSR2");
    case SIGPIPE: return QStringLiteral("SIGPIPE");
    case SIGALRM: return QStringLiteral("SIGALRM");
    case SIGCHLD: return QStringLiteral("SIGCHLD");
    case SIGCONT: return QStringLiteral("SIGCONT");
    case SIGTSTP: return QStringLiteral("SIGTSTP");
    case SIGTTIN: return QStringLiteral("SIGTTIN");
    case SIGTTOU: return QStringLiteral("SIGTTOU");
    case SIGWINCH: return QStringLiteral("SIGWINCH");
    default: return QStringLiteral("signal %1").arg(signalNumber);
    }
}

bool SignalInfo::fromProcess() const
{
    // signal(7), "siginfo_t": si_pid and si_uid are set for these.
    return code == SI_USER || code == SI_QUEUE || code == SI_TKILL;
}

QString SignalInfo::describe() const
{
    const QString name = signalName(number);
    if (fromProcess()) {
        const QStringList command = processCommandLine(senderPid);
        QString shown = command.join(QLatin1Char(' '));
        if (shown.size() > 200)
            shown = shown.left(200) + QStringLiteral("...");
        return QStringLiteral("%1 from pid %2 (%3), uid %4")
            .arg(name)
            .arg(qint64(senderPid))
            .arg(command.isEmpty() ? QStringLiteral("gone") : shown)
            .arg(qulonglong(senderUid));
    }
    if (code == SI_KERNEL)
        return QStringLiteral("%1 from the kernel (e.g. its terminal hung up, or the terminal's interrupt key)").arg(name);
    return QStringLiteral("%1 (si_code %2)").arg(name).arg(code);
}

SignalPipe::SignalPipe(const QList<int> &signalNumbers, QObject *parent)
    : QObject(parent)
{
    if (g_writeFd >= 0) {
        m_error = QStringLiteral("another SignalPipe is active");
        qCWarning(lcServer) << "SignalPipe:" << m_error;
        return;
    }
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, m_fds) != 0) {
        m_error = QString::fromLocal8Bit(std::strerror(errno));
        m_fds[0] = m_fds[1] = -1;
        return;
    }
    g_writeFd = m_fds[1];
    m_notifier = new QSocketNotifier(m_fds[0], QSocketNotifier::Read, this);
    connect(m_notifier, &QSocketNotifier::activated, this, [this]() { drain(); });

    qRegisterMetaType<Tether::SignalInfo>("Tether::SignalInfo");
    struct sigaction sa {};
    sa.sa_sigaction = onSignal;
    sigemptyset(&sa.sa_mask);
    // SA_RESTART: a signal must not fail unrelated syscalls with EINTR.
    // SA_SIGINFO: the sender's pid and uid (signal(7), sigaction(2)).
    sa.sa_flags = SA_RESTART | SA_SIGINFO;
    sigset_t unblock;
    sigemptyset(&unblock);
    for (int sig : signalNumbers) {
        Saved saved{sig, {}};
        if (::sigaction(sig, &sa, &saved.action) != 0) {
            m_error = QStringLiteral("signal %1: %2").arg(sig).arg(QString::fromLocal8Bit(std::strerror(errno)));
            return; // the destructor restores what was installed
        }
        m_saved.append(saved);
        sigaddset(&unblock, sig);
    }
    ::pthread_sigmask(SIG_UNBLOCK, &unblock, nullptr);
    std::signal(SIGPIPE, SIG_IGN);
    m_valid = true;
}

SignalPipe::~SignalPipe()
{
    for (const Saved &s : std::as_const(m_saved))
        ::sigaction(s.signalNumber, &s.action, nullptr);
    if (m_fds[1] >= 0 && g_writeFd == m_fds[1])
        g_writeFd = -1;
    delete m_notifier;
    for (int &fd : m_fds) {
        if (fd >= 0)
            ::close(fd);
        fd = -1;
    }
}

void SignalPipe::drain()
{
    char buf[64 * sizeof(Record)];
    ssize_t n;
    while ((n = ::read(m_fds[0], buf, sizeof buf)) > 0) {
        m_partial.append(buf, int(n));
        int used = 0;
        for (; m_partial.size() - used >= int(sizeof(Record)); used += int(sizeof(Record))) {
            Record r;
            std::memcpy(&r, m_partial.constData() + used, sizeof r);
            Q_EMIT receivedInfo(SignalInfo{r.number, r.code, r.pid, r.uid});
            Q_EMIT received(r.number);
        }
        m_partial.remove(0, used);
    }
}

} // namespace Tether
