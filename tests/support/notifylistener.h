// SPDX-License-Identifier: GPL-2.0-or-later
// systemd's side of sd_notify(3), for tests: a real AF_UNIX datagram socket
// bound at a path, to be set as NOTIFY_SOCKET, that records every message
// with the pid of the process that sent it. The pid comes from the kernel
// (SO_PASSCRED, SCM_CREDENTIALS: unix(7)), as systemd learns it, not from
// anything the sender says.
#pragma once

#include <QList>
#include <QSocketNotifier>
#include <QString>
#include <QTemporaryDir>
#include <QTest>

#include <cstring>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

namespace TestUtil {

class NotifyListener
{
public:
    struct Message {
        qint64 pid = 0;    ///< the sender, from SCM_CREDENTIALS
        QByteArray text;   ///< the datagram, e.g. "READY=1\nSTATUS=..."
        int fds = 0;       ///< descriptors that came with it (SCM_RIGHTS)
        /// Whether the datagram holds the assignment `line` ("READY=1").
        bool has(const QByteArray &line) const { return text.split('\n').contains(line); }
        /// The value of NAME= in the datagram, or a null array.
        QByteArray value(const QByteArray &name) const
        {
            for (const QByteArray &l : text.split('\n'))
                if (l.startsWith(name + '='))
                    return l.mid(name.size() + 1);
            return QByteArray();
        }
    };

    NotifyListener()
    {
        m_path = m_dir.filePath(QStringLiteral("notify"));
        m_fd = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        struct sockaddr_un sa;
        std::memset(&sa, 0, sizeof sa);
        sa.sun_family = AF_UNIX;
        const QByteArray p = QFile::encodeName(m_path);
        if (m_fd < 0 || size_t(p.size()) >= sizeof sa.sun_path)
            return;
        std::memcpy(sa.sun_path, p.constData(), size_t(p.size()));
        const int on = 1;
        if (::bind(m_fd, reinterpret_cast<struct sockaddr *>(&sa), sizeof sa) != 0
            || ::setsockopt(m_fd, SOL_SOCKET, SO_PASSCRED, &on, sizeof on) != 0) {
            ::close(m_fd);
            m_fd = -1;
            return;
        }
        m_notifier = new QSocketNotifier(m_fd, QSocketNotifier::Read);
        QObject::connect(m_notifier, &QSocketNotifier::activated, [this]() { drain(); });
    }
    ~NotifyListener()
    {
        releaseFds();
        delete m_notifier;
        if (m_fd >= 0)
            ::close(m_fd);
    }
    NotifyListener(const NotifyListener &) = delete;
    NotifyListener &operator=(const NotifyListener &) = delete;

    bool isValid() const { return m_fd >= 0; }
    /// Keep the descriptors that come with messages open (a manager that
    /// has not yet processed a barrier) until releaseFds().
    bool holdFds = false;
    void releaseFds()
    {
        for (const int fd : std::as_const(m_held))
            ::close(fd);
        m_held.clear();
    }
    /// What to set NOTIFY_SOCKET to.
    QString address() const { return m_path; }
    /// Every message so far, in the order received.
    const QList<Message> &messages() const { return m_messages; }

    /// Index of the first message at or after `from` that has `line`
    /// (and, when `pid` > 0, was sent by it); -1 when none.
    int find(const QByteArray &line, int from = 0, qint64 pid = 0) const
    {
        for (int i = from; i < m_messages.size(); ++i)
            if (m_messages.at(i).has(line) && (pid <= 0 || m_messages.at(i).pid == pid))
                return i;
        return -1;
    }
    /// Index of the first message at or after `from` that assigns NAME=; -1 when none.
    int findName(const QByteArray &name, int from = 0) const
    {
        for (int i = from; i < m_messages.size(); ++i)
            if (!m_messages.at(i).value(name).isNull())
                return i;
        return -1;
    }
    /// Spins the event loop until find(line, from, pid) >= 0 or `ms` passed.
    int wait(const QByteArray &line, int from = 0, qint64 pid = 0, int ms = 15000)
    {
        const bool found = QTest::qWaitFor([&]() { return find(line, from, pid) >= 0; }, ms);
        Q_UNUSED(found); // find() says it again
        return find(line, from, pid);
    }
    /// All messages, one per line ("pid: text" with '\n' shown as '|'), for failure messages.
    QByteArray dump() const
    {
        QByteArray out;
        for (const Message &m : m_messages)
            out += QByteArray::number(m.pid) + ": " + QByteArray(m.text).replace('\n', '|') + '\n';
        return out;
    }

private:
    void drain()
    {
        for (;;) {
            char buf[4096];
            union {
                struct cmsghdr align;
                char bytes[CMSG_SPACE(sizeof(struct ucred)) + CMSG_SPACE(4 * sizeof(int))];
            } control;
            struct iovec iov = {buf, sizeof buf};
            struct msghdr mh;
            std::memset(&mh, 0, sizeof mh);
            mh.msg_iov = &iov;
            mh.msg_iovlen = 1;
            mh.msg_control = &control;
            mh.msg_controllen = sizeof control;
            const ssize_t n = ::recvmsg(m_fd, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
            if (n < 0)
                return;
            Message m;
            m.text = QByteArray(buf, int(n));
            for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c)) {
                if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_CREDENTIALS) {
                    struct ucred cred;
                    std::memcpy(&cred, CMSG_DATA(c), sizeof cred);
                    m.pid = cred.pid;
                } else if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
                    const int n = int((c->cmsg_len - CMSG_LEN(0)) / sizeof(int));
                    for (int i = 0; i < n; ++i) {
                        int fd;
                        std::memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof fd);
                        ++m.fds;
                        // As systemd does with a barrier's pipe: closed once
                        // read, which releases the sender (unless held).
                        if (holdFds)
                            m_held.append(fd);
                        else
                            ::close(fd);
                    }
                }
            }
            m_messages.append(m);
        }
    }

    QTemporaryDir m_dir;
    QString m_path;
    int m_fd = -1;
    QSocketNotifier *m_notifier = nullptr;
    QList<Message> m_messages;
    QList<int> m_held;
};

} // namespace TestUtil
