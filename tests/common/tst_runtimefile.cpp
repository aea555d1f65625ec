// SPDX-License-Identifier: GPL-2.0-or-later
// RuntimeFile: where server.json lives (XDG_RUNTIME_DIR or Qt's fallback),
// its modes, atomic replacement, what is not trusted (another user's
// directory or file, symlinks), the live-server check through /proc comm, and
// that a second server leaves a running first server's file alone. Real files
// in a QTemporaryDir; XDG_RUNTIME_DIR and TMPDIR point into it.
#include "runtimefile.h"
#include "testutil.h"

#include <QDir>
#include <QFile>
#include <QJsonDocument>
#include <QProcess>
#include <QRegularExpression>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QTest>

#include <fcntl.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

using namespace Tether;

namespace {

const uid_t kOtherUid = 65534; // nobody

QByteArray local(const QString &path)
{
    return QFile::encodeName(path);
}

int modeOf(const QString &path)
{
    struct stat st;
    return ::lstat(local(path).constData(), &st) == 0 ? int(st.st_mode & 07777) : -1;
}

QByteArray contentsOf(const QString &path)
{
    QFile f(path);
    return f.open(QIODevice::ReadOnly) ? f.readAll() : QByteArray();
}

bool writeRaw(const QString &path, const QByteArray &data)
{
    QFile f(path);
    return f.open(QIODevice::WriteOnly | QIODevice::Truncate) && f.write(data) == data.size();
}

QJsonObject server(qint64 pid, const QString &key = QStringLiteral("K"))
{
    return QJsonObject{{QStringLiteral("url"), QStringLiteral("http://127.0.0.1:7420/")},
                       {QStringLiteral("port"), 7420},
                       {QStringLiteral("pid"), double(pid)},
                       {QStringLiteral("key"), key}};
}

QString userName()
{
    const struct passwd *pw = ::getpwuid(::geteuid());
    return pw ? QString::fromLocal8Bit(pw->pw_name) : QString::number(::geteuid());
}

QString ownComm()
{
    return QString::fromLocal8Bit(contentsOf(QStringLiteral("/proc/self/comm")).trimmed());
}

} // namespace

class TestRuntimeFile : public QObject
{
    Q_OBJECT

    std::unique_ptr<QTemporaryDir> m_dir;
    std::unique_ptr<TestUtil::EnvGuard> m_xdgGuard;
    std::unique_ptr<TestUtil::EnvGuard> m_tmpGuard;
    QString m_run; ///< XDG_RUNTIME_DIR of the test: ours, 0700
    QString m_tmp; ///< TMPDIR of the test (QDir::tempPath(), base of the fallback)
    QList<QProcess *> m_processes;

    QString fallback() const { return m_tmp + QStringLiteral("/runtime-") + userName(); }

    /// Starts `program` with `args`; killed at cleanup().
    qint64 startProcess(const QString &program, const QStringList &args)
    {
        auto *p = new QProcess;
        m_processes.append(p);
        p->start(program, args);
        if (!p->waitForStarted(5000))
            return -1;
        return p->processId();
    }

    /// A live process whose /proc comm is ours: a copy of sleep(1) named
    /// like this test binary (comm is the executable's name, 15 bytes at most).
    qint64 startNamesake()
    {
        const QString copy = m_dir->path() + QLatin1Char('/') + ownComm();
        if (!QFile::exists(copy) && !QFile::copy(QStringLiteral("/bin/sleep"), copy))
            return -1;
        QFile::setPermissions(copy, QFileDevice::ReadOwner | QFileDevice::WriteOwner | QFileDevice::ExeOwner);
        return startProcess(copy, {QStringLiteral("600")});
    }

    /// The pid of a process that has exited and been reaped.
    static qint64 deadPid()
    {
        QProcess p;
        p.start(QStringLiteral("/bin/true"), QStringList());
        if (!p.waitForStarted(5000))
            return -1;
        const qint64 pid = p.processId();
        p.waitForFinished(5000);
        return pid;
    }

private Q_SLOTS:
    void init()
    {
        m_dir.reset(new QTemporaryDir);
        QVERIFY(m_dir->isValid());
        m_xdgGuard.reset(new TestUtil::EnvGuard("XDG_RUNTIME_DIR"));
        m_tmpGuard.reset(new TestUtil::EnvGuard("TMPDIR"));
        m_run = m_dir->path() + QStringLiteral("/run");
        m_tmp = m_dir->path() + QStringLiteral("/tmp");
        QCOMPARE(::mkdir(local(m_run).constData(), 0700), 0);
        QCOMPARE(::mkdir(local(m_tmp).constData(), 0700), 0);
        qputenv("XDG_RUNTIME_DIR", local(m_run));
        qputenv("TMPDIR", local(m_tmp));
        QCOMPARE(QDir::tempPath(), m_tmp);
    }
    void cleanup()
    {
        for (QProcess *p : qAsConst(m_processes)) {
            p->kill();
            p->waitForFinished(5000);
            delete p;
        }
        m_processes.clear();
        m_xdgGuard.reset();
        m_tmpGuard.reset();
        m_dir.reset(); // as root, files given to another user are removed too
    }

    void baseDirectory_data()
    {
        QTest::addColumn<QString>("xdg");       // relative to the temporary dir; "-" = unset
        QTest::addColumn<bool>("needsRoot");
        QTest::addColumn<bool>("usesXdg");
        QTest::newRow("ours") << QStringLiteral("run") << false << true;
        QTest::newRow("unset (sudo, cron)") << QStringLiteral("-") << false << false;
        QTest::newRow("empty") << QString() << false << false;
        QTest::newRow("missing") << QStringLiteral("nowhere") << false << false;
        QTest::newRow("a plain file") << QStringLiteral("plain") << false << false;
        QTest::newRow("symlink to our directory") << QStringLiteral("link") << false << true;
        // Plain `su` keeps the caller's XDG_RUNTIME_DIR.
        QTest::newRow("another user's") << QStringLiteral("foreign") << true << false;
    }
    void baseDirectory()
    {
        QFETCH(QString, xdg);
        QFETCH(bool, needsRoot);
        QFETCH(bool, usesXdg);
        if (needsRoot && ::geteuid() != 0)
            QSKIP("needs root to make a directory of another user");
        QVERIFY(writeRaw(m_dir->path() + QStringLiteral("/plain"), "x"));
        QVERIFY(QFile::link(m_run, m_dir->path() + QStringLiteral("/link")));
        const QString foreign = m_dir->path() + QStringLiteral("/foreign");
        QCOMPARE(::mkdir(local(foreign).constData(), 0700), 0);
        if (needsRoot)
            QCOMPARE(::chown(local(foreign).constData(), kOtherUid, kOtherUid), 0);

        const QString value = xdg.isEmpty() ? QString() : m_dir->path() + QLatin1Char('/') + xdg;
        if (xdg == QLatin1String("-"))
            qunsetenv("XDG_RUNTIME_DIR");
        else
            qputenv("XDG_RUNTIME_DIR", local(value));
        const QString expected = usesXdg ? value : fallback();
        QCOMPARE(RuntimeFile::baseDirectory(), expected);
        QCOMPARE(RuntimeFile::directory(), expected + QStringLiteral("/tether"));
        QCOMPARE(RuntimeFile::path(), expected + QStringLiteral("/tether/server.json"));
        // Nothing is created by asking.
        QVERIFY(!QFileInfo::exists(fallback()));
        QVERIFY(!QFileInfo::exists(m_run + QStringLiteral("/tether")));

        // Writing follows the same rule and never touches a directory it
        // refused.
        QString error;
        QVERIFY2(RuntimeFile::write(server(1234), &error), qPrintable(error));
        QVERIFY(QFile::exists(expected + QStringLiteral("/tether/server.json")));
        QVERIFY(!QFileInfo::exists(foreign + QStringLiteral("/tether")));
        QCOMPARE(RuntimeFile::read(), server(1234));
    }

    void fallbackMatchesQt()
    {
        // Clients and server must agree with Qt's own RuntimeLocation
        // fallback (which warns, so RuntimeFile computes it itself).
        qunsetenv("XDG_RUNTIME_DIR");
        QTest::ignoreMessage(QtWarningMsg, QRegularExpression(QStringLiteral("XDG_RUNTIME_DIR not set")));
        QCOMPARE(RuntimeFile::baseDirectory(), QStandardPaths::writableLocation(QStandardPaths::RuntimeLocation));
    }

    void writeAndRead_data()
    {
        QTest::addColumn<int>("umask");
        QTest::newRow("umask 000") << 0;
        QTest::newRow("umask 022") << 022;
        QTest::newRow("umask 077") << 077;
    }
    void writeAndRead()
    {
        QFETCH(int, umask);
        const mode_t old = ::umask(mode_t(umask));
        QString error;
        QJsonObject other = server(99);
        const bool ok = RuntimeFile::write(server(::getpid(), QStringLiteral("secret")), &error, &other);
        ::umask(old);
        QVERIFY2(ok, qPrintable(error));
        QVERIFY(other.isEmpty());
        const QString path = m_run + QStringLiteral("/tether/server.json");
        QCOMPARE(RuntimeFile::path(), path);
        // It holds the key: never readable by group or others.
        QCOMPARE(modeOf(m_run + QStringLiteral("/tether")), 0700);
        QCOMPARE(modeOf(path), 0600);
        QCOMPARE(contentsOf(path), QJsonDocument(server(::getpid(), QStringLiteral("secret"))).toJson(QJsonDocument::Compact) + '\n');
        QCOMPARE(RuntimeFile::read(), server(::getpid(), QStringLiteral("secret")));
        // The temporary file was renamed, not left behind.
        QCOMPARE(QDir(m_run + QStringLiteral("/tether")).entryList(QDir::AllEntries | QDir::Hidden | QDir::System | QDir::NoDotAndDotDot),
                 QStringList{QStringLiteral("server.json")});
    }

    void replacedAtomically()
    {
        // A reader holding the old file keeps reading the old contents whole:
        // the new file is renamed over it, never rewritten in place.
        QString error;
        QVERIFY(RuntimeFile::write(server(::getpid(), QStringLiteral("first")), &error));
        QFile old(RuntimeFile::path());
        QVERIFY(old.open(QIODevice::ReadOnly));
        QVERIFY(RuntimeFile::write(server(::getpid(), QStringLiteral("second")), &error));
        QCOMPARE(QJsonDocument::fromJson(old.readAll()).object(), server(::getpid(), QStringLiteral("first")));
        QCOMPARE(RuntimeFile::read(), server(::getpid(), QStringLiteral("second")));
        QCOMPARE(modeOf(RuntimeFile::path()), 0600);
    }

    void looseDirectoryTightened()
    {
        const QString dir = m_run + QStringLiteral("/tether");
        QCOMPARE(::mkdir(local(dir).constData(), 0755), 0);
        QCOMPARE(::chmod(local(dir).constData(), 0777), 0);
        QString error;
        QVERIFY2(RuntimeFile::write(server(1), &error), qPrintable(error));
        QCOMPARE(modeOf(dir), 0700);
    }

    void fallbackCreatedPrivate()
    {
        qunsetenv("XDG_RUNTIME_DIR");
        const mode_t old = ::umask(0);
        QString error;
        const bool ok = RuntimeFile::write(server(1), &error);
        ::umask(old);
        QVERIFY2(ok, qPrintable(error));
        // The fallback lives in a shared /tmp: 0700, like the tether directory.
        QCOMPARE(modeOf(fallback()), 0700);
        QCOMPARE(modeOf(fallback() + QStringLiteral("/tether")), 0700);
        QCOMPARE(modeOf(fallback() + QStringLiteral("/tether/server.json")), 0600);
        QCOMPARE(RuntimeFile::read(), server(1));
    }

    void untrustedDirectories_data()
    {
        QTest::addColumn<bool>("xdgUnset");   // the fallback base is tested, else XDG_RUNTIME_DIR/tether
        QTest::addColumn<QString>("kind");    // "other user", "symlink", "file"
        QTest::addColumn<QString>("error");   // part of the expected error text
        QTest::newRow("fallback of another user") << true << QStringLiteral("other user") << QStringLiteral("belongs to another user");
        QTest::newRow("fallback is a symlink") << true << QStringLiteral("symlink") << QStringLiteral("is not a directory");
        QTest::newRow("fallback is a file") << true << QStringLiteral("file") << QStringLiteral("is not a directory");
        QTest::newRow("tether dir of another user") << false << QStringLiteral("other user") << QStringLiteral("belongs to another user");
        QTest::newRow("tether dir is a symlink") << false << QStringLiteral("symlink") << QStringLiteral("is not a directory");
        QTest::newRow("tether dir is a file") << false << QStringLiteral("file") << QStringLiteral("is not a directory");
    }
    void untrustedDirectories()
    {
        // Whoever owns the directory could swap in a server.json of their own
        // (and read the key): such a directory is neither written nor read.
        QFETCH(bool, xdgUnset);
        QFETCH(QString, kind);
        QFETCH(QString, error);
        if (kind == QLatin1String("other user") && ::geteuid() != 0)
            QSKIP("needs root to make a directory of another user");
        if (xdgUnset)
            qunsetenv("XDG_RUNTIME_DIR");
        const QString target = xdgUnset ? fallback() : m_run + QStringLiteral("/tether");
        // A directory of ours elsewhere, holding a valid server.json: what a
        // symlink would lead to.
        const QString elsewhere = m_dir->path() + QStringLiteral("/elsewhere");
        QCOMPARE(::mkdir(local(elsewhere).constData(), 0700), 0);
        QCOMPARE(::mkdir(local(elsewhere + QStringLiteral("/tether")).constData(), 0700), 0);
        QVERIFY(writeRaw(elsewhere + QStringLiteral("/server.json"), QJsonDocument(server(7)).toJson()));
        QVERIFY(writeRaw(elsewhere + QStringLiteral("/tether/server.json"), QJsonDocument(server(7)).toJson()));
        if (kind == QLatin1String("symlink")) {
            QVERIFY(QFile::link(xdgUnset ? elsewhere : elsewhere + QStringLiteral("/tether"), target));
        } else if (kind == QLatin1String("file")) {
            QVERIFY(writeRaw(target, "x"));
        } else {
            QCOMPARE(::mkdir(local(target).constData(), 0700), 0);
            if (xdgUnset)
                QCOMPARE(::mkdir(local(target + QStringLiteral("/tether")).constData(), 0700), 0);
            // Everything there is theirs, as another user would set it up.
            const QString file = RuntimeFile::path();
            QVERIFY(writeRaw(file, QJsonDocument(server(7)).toJson()));
            QCOMPARE(::chmod(local(file).constData(), 0600), 0);
            QCOMPARE(::chown(local(file).constData(), kOtherUid, kOtherUid), 0);
            QCOMPARE(::chown(local(RuntimeFile::directory()).constData(), kOtherUid, kOtherUid), 0);
            QCOMPARE(::chown(local(target).constData(), kOtherUid, kOtherUid), 0);
        }
        QString text;
        QVERIFY(!RuntimeFile::write(server(1), &text));
        QVERIFY2(text.contains(error) && text.contains(target), qPrintable(text));
        // Nothing was written through the symlink.
        QCOMPARE(QJsonDocument::fromJson(contentsOf(elsewhere + QStringLiteral("/server.json"))).object(), server(7));
        QCOMPARE(QJsonDocument::fromJson(contentsOf(elsewhere + QStringLiteral("/tether/server.json"))).object(), server(7));
        // read() checks the tether directory and the file, not the base: a
        // fallback symlinked to a directory of our own is read through.
        if (xdgUnset && kind == QLatin1String("symlink"))
            return;
        QVERIFY(RuntimeFile::read().isEmpty());
        QVERIFY(!RuntimeFile::removeIfOwned(7));
    }

    void fileOfAnotherUserNotTrusted()
    {
        if (::geteuid() != 0)
            QSKIP("needs root to make a file of another user");
        QString error;
        QVERIFY(RuntimeFile::write(server(7), &error));
        QCOMPARE(RuntimeFile::read(), server(7));
        QCOMPARE(::chown(local(RuntimeFile::path()).constData(), kOtherUid, kOtherUid), 0);
        // It could send this user's keystrokes to someone else's server.
        QVERIFY(RuntimeFile::read().isEmpty());
        QVERIFY(!RuntimeFile::removeIfOwned(7));
        QVERIFY(QFile::exists(RuntimeFile::path()));
    }

    void unreadableContents_data()
    {
        QTest::addColumn<QByteArray>("contents");
        QTest::newRow("empty") << QByteArray();
        QTest::newRow("garbage") << QByteArray("not json {");
        QTest::newRow("array") << QByteArray("[1,2]");
        QTest::newRow("truncated") << QByteArray("{\"url\": \"http://127.0.0.1:7420/\", \"ke");
    }
    void unreadableContents()
    {
        QFETCH(QByteArray, contents);
        QVERIFY(RuntimeFile::read().isEmpty()); // missing
        QCOMPARE(::mkdir(local(RuntimeFile::directory()).constData(), 0700), 0);
        QVERIFY(writeRaw(RuntimeFile::path(), contents));
        QVERIFY(RuntimeFile::read().isEmpty());
        // A file nobody can parse names no live server: it is replaced.
        QString error;
        QVERIFY(RuntimeFile::write(server(5), &error));
        QCOMPARE(RuntimeFile::read(), server(5));
    }

    void liveOtherServer_data()
    {
        QTest::addColumn<QString>("who");
        QTest::addColumn<bool>("live");
        QTest::newRow("a running namesake") << QStringLiteral("namesake") << true;
        QTest::newRow("ourselves") << QStringLiteral("self") << false;
        QTest::newRow("a dead pid") << QStringLiteral("dead") << false;
        // A pid reused by an unrelated program after a crash.
        QTest::newRow("another program") << QStringLiteral("sleep") << false;
        QTest::newRow("no pid") << QStringLiteral("none") << false;
        QTest::newRow("pid 0") << QStringLiteral("0") << false;
        QTest::newRow("pid -1") << QStringLiteral("-1") << false;
        QTest::newRow("pid beyond pid_t") << QStringLiteral("huge") << false;
        QTest::newRow("pid as a string") << QStringLiteral("string") << false;
    }
    void liveOtherServer()
    {
        QFETCH(QString, who);
        QFETCH(bool, live);
        QJsonObject o = server(0);
        if (who == QLatin1String("namesake")) {
            const qint64 pid = startNamesake();
            QVERIFY(pid > 0);
            // The copy runs under our own name (what /proc/PID/comm shows).
            QTRY_COMPARE(QString::fromLocal8Bit(contentsOf(QStringLiteral("/proc/%1/comm").arg(pid)).trimmed()), ownComm());
            o = server(pid);
        } else if (who == QLatin1String("self")) {
            o = server(::getpid());
        } else if (who == QLatin1String("dead")) {
            const qint64 pid = deadPid();
            QVERIFY(pid > 0);
            o = server(pid);
        } else if (who == QLatin1String("sleep")) {
            const qint64 pid = startProcess(QStringLiteral("/bin/sleep"), {QStringLiteral("600")});
            QVERIFY(pid > 0);
            o = server(pid);
        } else if (who == QLatin1String("none")) {
            o.remove(QStringLiteral("pid"));
        } else if (who == QLatin1String("huge")) {
            o = server(Q_INT64_C(1) << 40);
        } else if (who == QLatin1String("string")) {
            o.insert(QStringLiteral("pid"), QString::number(::getpid()));
        } else {
            o = server(who.toLongLong());
        }
        QCOMPARE(RuntimeFile::isLiveOtherServer(o), live);

        // write() keeps exactly the files that name a live other server, and
        // says whose it is.
        QString error;
        QVERIFY(RuntimeFile::write(o, &error));
        QCOMPARE(RuntimeFile::read(), o);
        QJsonObject other;
        QVERIFY2(RuntimeFile::write(server(::getpid(), QStringLiteral("mine")), &error, &other), qPrintable(error));
        if (live) {
            QCOMPARE(other, o);
            QCOMPARE(RuntimeFile::read(), o);
            QVERIFY(RuntimeFile::write(server(::getpid(), QStringLiteral("mine")), &error)); // no *other: fine
            QCOMPARE(RuntimeFile::read(), o);
        } else {
            QVERIFY(other.isEmpty());
            QCOMPARE(RuntimeFile::read(), server(::getpid(), QStringLiteral("mine")));
        }
    }

    void unwritableKeepsOnlyAFileThatLeadsHere_data()
    {
        // When the new file cannot be written (a full disk), the file there
        // stays only if it sends clients to this server all the same.
        QTest::addColumn<QString>("there");
        QTest::addColumn<bool>("kept");
        QTest::newRow("a dead server's, another port") << QStringLiteral("other port") << false;
        QTest::newRow("a dead server's, another key") << QStringLiteral("other key") << false;
        QTest::newRow("a dead server's, another certificate") << QStringLiteral("other cert") << false;
        QTest::newRow("a dead server's, same address and key") << QStringLiteral("same") << true;
        QTest::newRow("this process's (before a restart in place)") << QStringLiteral("self") << true;
        QTest::newRow("none") << QStringLiteral("none") << false;
    }
    void unwritableKeepsOnlyAFileThatLeadsHere()
    {
        QFETCH(QString, there);
        QFETCH(bool, kept);
        const qint64 dead = deadPid();
        QVERIFY(dead > 0);
        const QJsonObject mine = server(::getpid(), QStringLiteral("mine"));
        QJsonObject before = server(dead, QStringLiteral("mine"));
        if (there == QLatin1String("other port"))
            before.insert(QStringLiteral("url"), QStringLiteral("http://127.0.0.1:7421/"));
        else if (there == QLatin1String("other key"))
            before.insert(QStringLiteral("key"), QStringLiteral("old"));
        else if (there == QLatin1String("other cert"))
            before.insert(QStringLiteral("cert_sha256"), QStringLiteral("ab"));
        else if (there == QLatin1String("self"))
            before = mine;
        QString error;
        if (there != QLatin1String("none")) {
            QVERIFY2(RuntimeFile::write(before, &error), qPrintable(error));
            QCOMPARE(RuntimeFile::read(), before);
        }
        // A directory where write() makes its temporary file: its open(2)
        // fails (EEXIST), as a write on a full disk would (ENOSPC), after the
        // file there was read and found not to be a live server's.
        const QString blocker = RuntimeFile::path() + QStringLiteral(".tmp-%1").arg(::getpid());
        QVERIFY(QDir().mkpath(blocker));
        QVERIFY(!RuntimeFile::write(mine, &error));
        QVERIFY2(error.startsWith(QStringLiteral("cannot create ") + blocker), qPrintable(error));
        QCOMPARE(QFile::exists(RuntimeFile::path()), kept);
        if (kept)
            QCOMPARE(RuntimeFile::read(), before);
        QCOMPARE(RuntimeFile::sameServer(RuntimeFile::read(), mine), kept);
        // Room again: written as usual.
        QVERIFY(QDir().rmdir(blocker));
        QVERIFY2(RuntimeFile::write(mine, &error), qPrintable(error));
        QCOMPARE(RuntimeFile::read(), mine);
    }

    void removeIfOwned()
    {
        QVERIFY(!RuntimeFile::removeIfOwned(::getpid())); // nothing there
        QString error;
        QVERIFY(RuntimeFile::write(server(4242), &error));
        // A server exiting does not remove the file of one started after it.
        QVERIFY(!RuntimeFile::removeIfOwned(::getpid()));
        QVERIFY(QFile::exists(RuntimeFile::path()));
        QVERIFY(RuntimeFile::removeIfOwned(4242));
        QVERIFY(!QFile::exists(RuntimeFile::path()));
        QVERIFY(!RuntimeFile::removeIfOwned(4242));
    }
};

QTEST_GUILESS_MAIN(TestRuntimeFile)
#include "tst_runtimefile.moc"
