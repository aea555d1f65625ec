// SPDX-License-Identifier: GPL-2.0-or-later
// SystemdNotify: sd_notify(3)'s datagram without libsystemd, against real
// AF_UNIX datagram sockets (a path and an abstract name), the sender's pid
// from the kernel (SCM_CREDENTIALS); the addresses it refuses, with their
// errno; and NOTIFY_SOCKET taken out of the environment.
#include "notifylistener.h"
#include "systemdnotify.h"
#include "testutil.h"

#include <QElapsedTimer>
#include <QTemporaryDir>
#include <QTest>

#include <thread>

#include <cerrno>
#include <cstddef>
#include <cstring>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

using namespace Tether;
using TestUtil::NotifyListener;

namespace {
/// A datagram socket bound at `path`, or at the abstract name `path` when
/// `abstract` (unix(7)); -1 on failure.
int boundDatagramSocket(const QByteArray &path, bool abstract = false)
{
    const int fd = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    struct sockaddr_un sa;
    std::memset(&sa, 0, sizeof sa);
    sa.sun_family = AF_UNIX;
    std::memcpy(sa.sun_path + (abstract ? 1 : 0), path.constData(), size_t(path.size()));
    const socklen_t len = abstract ? socklen_t(offsetof(struct sockaddr_un, sun_path) + 1 + path.size()) : socklen_t(sizeof sa);
    if (fd >= 0 && ::bind(fd, reinterpret_cast<struct sockaddr *>(&sa), len) == 0)
        return fd;
    if (fd >= 0)
        ::close(fd);
    return -1;
}
} // namespace

class TestSystemdNotify : public QObject
{
    Q_OBJECT
private Q_SLOTS:
    void sendsToAPath();
    void sendsToAnAbstractName();
    void refusedAddresses_data();
    void refusedAddresses();
    void nobodyListening();
    void barrierWaitsForTheManager();
    void takenFromTheEnvironment();
};

void TestSystemdNotify::sendsToAPath()
{
    NotifyListener n;
    QVERIFY(n.isValid());
    const QByteArray msg = "READY=1\nSTATUS=Serving";
    QCOMPARE(SystemdNotify::sendDatagram(QFile::encodeName(n.address()).constData(), msg.constData(), size_t(msg.size())), 0);
    QTRY_COMPARE(n.messages().size(), 1);
    QCOMPARE(n.messages().at(0).text, msg);
    QCOMPARE(n.messages().at(0).pid, qint64(::getpid()));
    QCOMPARE(n.messages().at(0).value("STATUS"), QByteArray("Serving"));
}

void TestSystemdNotify::sendsToAnAbstractName()
{
    // "@name" is the abstract name "\0name" (unix(7)), as systemd writes it.
    const QByteArray name = "tether-test-notify-" + QByteArray::number(::getpid());
    const int fd = boundDatagramSocket(name, true);
    QVERIFY(fd >= 0);
    const QByteArray address = '@' + name;
    QCOMPARE(SystemdNotify::sendDatagram(address.constData(), "RELOADING=1", 11), 0);
    char buf[64] = {};
    const ssize_t got = ::recv(fd, buf, sizeof buf, MSG_DONTWAIT);
    ::close(fd);
    QCOMPARE(QByteArray(buf, int(qMax<ssize_t>(got, 0))), QByteArray("RELOADING=1"));
    // The same name with one more character is another socket.
    QCOMPARE(SystemdNotify::sendDatagram((address + 'x').constData(), "READY=1", 7), ECONNREFUSED);
}

void TestSystemdNotify::refusedAddresses_data()
{
    QTest::addColumn<QByteArray>("address");
    QTest::addColumn<int>("error");
    QTest::newRow("empty") << QByteArray("") << EINVAL;
    QTest::newRow("relative path") << QByteArray("run/notify") << EINVAL;
    QTest::newRow("bare @") << QByteArray("@") << EINVAL;
    // systemd 253 also passes vsock:CID:PORT; 252 (Debian 12) never does.
    QTest::newRow("vsock (systemd 253)") << QByteArray("vsock:2:1234") << EAFNOSUPPORT;
    QTest::newRow("longer than sun_path") << ('/' + QByteArray(200, 'a')) << EINVAL;
    QTest::newRow("no such file") << QByteArray("/nonexistent-tether-dir/notify") << ENOENT;
}

void TestSystemdNotify::refusedAddresses()
{
    QFETCH(QByteArray, address);
    QFETCH(int, error);
    QCOMPARE(SystemdNotify::sendDatagram(address.constData(), "READY=1", 7), error);
}

void TestSystemdNotify::nobodyListening()
{
    // A socket file whose owner went away (a manager that exited).
    NotifyListener n; // for a private directory
    QVERIFY(n.isValid());
    const QByteArray p = QFile::encodeName(n.address());
    const QByteArray stale = p + "-stale";
    const int fd = boundDatagramSocket(stale);
    QVERIFY(fd >= 0);
    ::close(fd); // the file stays, nobody reads it
    QCOMPARE(SystemdNotify::sendDatagram(stale.constData(), "READY=1", 7), ECONNREFUSED);
    ::unlink(stale.constData());
}

void TestSystemdNotify::barrierWaitsForTheManager()
{
    // sd_notify_barrier(3): "BARRIER=1" with a pipe's write end; done once
    // the manager has closed it, i.e. has read everything sent before.
    // The "manager" here is a thread reading a real socket, which closes
    // the descriptor 200 ms after it got it.
    QTemporaryDir dir;
    const QByteArray path = QFile::encodeName(dir.filePath(QStringLiteral("notify")));
    const int fd = boundDatagramSocket(path);
    QVERIFY(fd >= 0);
    QCOMPARE(SystemdNotify::sendDatagram(path.constData(), "MAINPID=42", 10), 0);
    QList<QByteArray> got;
    int received = -1;
    std::thread manager([&]() {
        for (int i = 0; i < 2; ++i) {
            char buf[64] = {};
            union {
                struct cmsghdr align;
                char bytes[CMSG_SPACE(sizeof(int))];
            } control;
            struct iovec iov = {buf, sizeof buf};
            struct msghdr mh;
            std::memset(&mh, 0, sizeof mh);
            mh.msg_iov = &iov;
            mh.msg_iovlen = 1;
            mh.msg_control = &control;
            mh.msg_controllen = sizeof control;
            const ssize_t n = ::recvmsg(fd, &mh, MSG_CMSG_CLOEXEC);
            got.append(QByteArray(buf, int(qMax<ssize_t>(n, 0))));
            if (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c && c->cmsg_type == SCM_RIGHTS)
                std::memcpy(&received, CMSG_DATA(c), sizeof(int));
        }
        ::usleep(200000);
        ::close(received);
    });
    QElapsedTimer t;
    t.start();
    const int err = SystemdNotify::barrier(path.constData(), 5000);
    const qint64 waited = t.elapsed();
    manager.join();
    ::close(fd);
    // 0, not ETIMEDOUT: it returned when the manager closed the fd, not
    // at its 5 s timeout (no upper bound on the time: speed is bench/'s).
    QCOMPARE(err, 0);
    QVERIFY2(waited >= 190, qPrintable(QString::number(waited)));
    QCOMPARE(got, (QList<QByteArray>{"MAINPID=42", "BARRIER=1"}));
    QVERIFY(received >= 0);

    // A manager that does not get to it: ETIMEDOUT after the timeout.
    NotifyListener n; // reads on the event loop, which barrier() blocks
    QVERIFY(n.isValid());
    t.restart();
    QCOMPARE(SystemdNotify::barrier(QFile::encodeName(n.address()).constData(), 300), ETIMEDOUT);
    QVERIFY(t.elapsed() >= 290);
    QTRY_COMPARE(n.messages().size(), 1);
    QCOMPARE(n.messages().at(0).fds, 1);
    QCOMPARE(SystemdNotify::barrier("/nonexistent-tether-dir/notify", 300), ENOENT);
}

void TestSystemdNotify::takenFromTheEnvironment()
{
    TestUtil::EnvGuard guard(SystemdNotify::kSocketEnv);
    NotifyListener n;
    QVERIFY(n.isValid());

    qunsetenv(SystemdNotify::kSocketEnv);
    SystemdNotify::takeFromEnvironment();
    QVERIFY(!SystemdNotify::isEnabled());
    QVERIFY(SystemdNotify::environmentEntry().isEmpty());
    QVERIFY(SystemdNotify::notify("READY=1")); // no manager: nothing to do, no error

    qputenv(SystemdNotify::kSocketEnv, QFile::encodeName(n.address()));
    SystemdNotify::takeFromEnvironment();
    QVERIFY(SystemdNotify::isEnabled());
    QVERIFY(!qEnvironmentVariableIsSet(SystemdNotify::kSocketEnv)); // what children inherit
    QCOMPARE(SystemdNotify::environmentEntry(), "NOTIFY_SOCKET=" + QFile::encodeName(n.address()));
    QVERIFY(SystemdNotify::notify("RELOADING=1\n" + SystemdNotify::monotonicUsec()));
    QTRY_COMPARE(n.messages().size(), 1);
    QVERIFY(n.messages().at(0).has("RELOADING=1"));
    const qint64 usec = n.messages().at(0).value("MONOTONIC_USEC").toLongLong();
    struct timespec ts;
    ::clock_gettime(CLOCK_MONOTONIC, &ts);
    const qint64 now = qint64(ts.tv_sec) * 1000000 + ts.tv_nsec / 1000;
    QVERIFY2(usec > 0 && usec <= now && now - usec < 10000000, qPrintable(QString::number(now - usec)));

    // The socket gone: notify() says so, with the address.
    qputenv(SystemdNotify::kSocketEnv, "/nonexistent-tether-dir/notify");
    SystemdNotify::takeFromEnvironment();
    QString why;
    QVERIFY(!SystemdNotify::notify("READY=1", &why));
    QVERIFY2(why.startsWith(QStringLiteral("/nonexistent-tether-dir/notify: ")), qPrintable(why));

    qunsetenv(SystemdNotify::kSocketEnv);
    SystemdNotify::takeFromEnvironment(); // leave no manager behind for other functions
}

QTEST_GUILESS_MAIN(TestSystemdNotify)
#include "tst_systemdnotify.moc"
