// SPDX-License-Identifier: GPL-2.0-or-later
// SessionRegistry: create/find/kill, TTL expiry on one timer, max-session
// eviction and refusal, spawn errors, live limits, bounded shutdown.
#include "recordingviewer.h"
#include "registry.h"
#include "testutil.h"

#include <QElapsedTimer>
#include <QRegularExpression>
#include <QSignalSpy>
#include <QTest>

using namespace Tether;
using TestUtil::RecordingViewer;

class TestRegistry : public QObject
{
    Q_OBJECT

    static SpawnOptions sh(const QString &script) { return TestUtil::shell(script); }
    static SpawnOptions sleeper() { return sh(QStringLiteral("exec sleep 60")); }

    static Limits limits(int max, int ttl)
    {
        Limits l;
        l.maxSessions = max;
        l.ttlSeconds = ttl;
        l.bufferCapacity = 64 * 1024;
        return l;
    }

    static void shutdownAndWait(SessionRegistry &r)
    {
        QSignalSpy done(&r, &SessionRegistry::shutdownComplete);
        r.shutdown();
        QVERIFY(done.wait(15000));
    }

private Q_SLOTS:
    void initTestCase() { qRegisterMetaType<Tether::Session *>(); }

    void createFindListKill()
    {
        SessionRegistry r(limits(8, 0));
        r.setTeardownGrace(200);
        QSignalSpy added(&r, &SessionRegistry::sessionAdded);
        QSignalSpy removed(&r, &SessionRegistry::sessionRemoved);
        Session *a = r.create(sleeper());
        Session *b = r.create(sleeper());
        QVERIFY(a && b);
        QCOMPARE(added.count(), 2);
        QCOMPARE(r.sessions(), (QList<Session *>{a, b}));
        QCOMPARE(r.find(a->id()), a);
        QCOMPARE(r.find(QStringLiteral("nope")), nullptr);
        const QRegularExpression urlSafe(QStringLiteral("^[A-Za-z0-9_-]{22}$"));
        QVERIFY(urlSafe.match(a->id()).hasMatch());
        QVERIFY(a->id() != b->id());

        const pid_t pid = a->pid();
        const QString aid = a->id();
        QPointer<Session> pa(a);
        RecordingViewer v;
        a->attach(&v, ViewerMode::Control, std::nullopt);
        QVERIFY(r.kill(a->id()));
        // Gone from the list at once; its viewer told; process torn down later.
        QCOMPARE(r.sessions(), QList<Session *>{b});
        QCOMPARE(r.find(aid), nullptr);
        QCOMPARE(removed.count(), 1);
        QCOMPARE(v.detachReasons, QList<DetachReason>{DetachReason::Killed});
        QTRY_VERIFY_WITH_TIMEOUT(pa.isNull(), 10000);
        QVERIFY(TestUtil::processState(pid) == 0 || TestUtil::processState(pid) == 'Z');
        QVERIFY(!r.kill(QStringLiteral("nope")));
        shutdownAndWait(r);
        QCOMPARE(TestUtil::zombieChildren(), 0);
    }

    void spawnFailureIsAnError()
    {
        SessionRegistry r(limits(8, 0));
        SessionRegistry::CreateError e = SessionRegistry::CreateError::None;
        QString text;
        SpawnOptions o;
        o.argv = QStringList{QStringLiteral("/nonexistent/program")};
        QCOMPARE(r.create(o, &e, &text), nullptr);
        QCOMPARE(e, SessionRegistry::CreateError::SpawnFailed);
        QVERIFY2(text.contains(QStringLiteral("No such file or directory")), qPrintable(text));
        QCOMPARE(r.count(), 0);
        // The failed child is reaped (without blocking the event loop).
        QTRY_COMPARE(TestUtil::zombieChildren(), 0);
    }

    void ttlExpiresDetachedSessions()
    {
        SessionRegistry r(limits(8, 1));
        r.setTeardownGrace(200);
        QList<Session *> removed;
        connect(&r, &SessionRegistry::sessionRemoved, this, [&](Session *s) { removed << s; });
        Session *never = r.create(sleeper()); // never attached: counts from creation
        Session *watched = r.create(sleeper());
        RecordingViewer v;
        watched->attach(&v, ViewerMode::Watch, std::nullopt);
        QCOMPARE(r.expiresIn(watched), qint64(-1));
        QVERIFY(r.expiresIn(never) >= 0 && r.expiresIn(never) <= 1);
        QTRY_COMPARE_WITH_TIMEOUT(removed.count(), 1, 5000);
        QCOMPARE(removed.first(), never);
        QCOMPARE(r.count(), 1);
        // Detaching starts the clock.
        watched->detach(&v);
        QVERIFY(r.expiresIn(watched) >= 0);
        QTRY_COMPARE_WITH_TIMEOUT(r.count(), 0, 5000);
        QTRY_COMPARE_WITH_TIMEOUT(TestUtil::zombieChildren(), 0, 5000);
    }

    void ttlZeroNeverExpires()
    {
        SessionRegistry r(limits(8, 0));
        r.setTeardownGrace(200);
        Session *s = r.create(sleeper());
        QCOMPARE(r.expiresIn(s), qint64(-1));
        QVERIFY(r.expiryDeadline(s).isNull());
        // Turning a TTL on at run time applies to the running registry.
        Limits l = r.limits();
        l.ttlSeconds = 1;
        r.setLimits(l);
        QVERIFY(r.expiresIn(s) >= 0);
        QTRY_COMPARE_WITH_TIMEOUT(r.count(), 0, 5000);
        shutdownAndWait(r);
    }

    void finishedSessionCountsFromExit()
    {
        SessionRegistry r(limits(8, 2));
        r.setTeardownGrace(200);
        Session *s = r.create(sh(QStringLiteral("exit 4")));
        QSignalSpy exited(s, &Session::exited);
        QVERIFY(exited.wait(5000));
        const QDateTime deadline = r.expiryDeadline(s);
        QVERIFY(deadline >= s->exitedAt().addSecs(2));
        QTRY_COMPARE_WITH_TIMEOUT(r.count(), 0, 6000);
    }

    void maxSessionsEvictsOldestDetachedFinishedFirst()
    {
        SessionRegistry r(limits(3, 0));
        r.setTeardownGrace(200);
        Session *attached = r.create(sleeper());
        Session *runningDetached = r.create(sleeper());
        Session *finished = r.create(sh(QStringLiteral("exit 0")));
        QSignalSpy exited(finished, &Session::exited);
        QVERIFY(exited.wait(5000));
        RecordingViewer v;
        attached->attach(&v, ViewerMode::Control, std::nullopt);

        QList<Session *> removed;
        connect(&r, &SessionRegistry::sessionRemoved, this, [&](Session *s) { removed << s; });
        Session *fourth = r.create(sleeper());
        QVERIFY(fourth);
        QCOMPARE(removed.count(), 1);
        QCOMPARE(removed.at(0), finished); // finished goes first
        Session *fifth = r.create(sleeper());
        QVERIFY(fifth);
        QCOMPARE(removed.at(1), runningDetached); // then the oldest detached

        RecordingViewer v4, v5;
        fourth->attach(&v4, ViewerMode::Control, std::nullopt);
        fifth->attach(&v5, ViewerMode::Watch, std::nullopt);
        SessionRegistry::CreateError e;
        QString text;
        QCOMPARE(r.create(sleeper(), &e, &text), nullptr);
        QCOMPARE(e, SessionRegistry::CreateError::TooManySessions);
        QVERIFY(!text.isEmpty());
        QCOMPARE(r.count(), 3);
        QVERIFY(v.detachReasons.isEmpty());
        shutdownAndWait(r);
    }

    void bufferCapacityAppliesToRunningSessions()
    {
        SessionRegistry r(limits(4, 0));
        r.setTeardownGrace(200);
        Session *s = r.create(sleeper());
        QCOMPARE(s->buffer().capacity(), qsizetype(64 * 1024));
        Limits l = r.limits();
        l.bufferCapacity = 128 * 1024;
        r.setLimits(l);
        QCOMPARE(s->buffer().capacity(), qsizetype(128 * 1024));
        QCOMPARE(r.create(sleeper())->buffer().capacity(), qsizetype(128 * 1024));
        shutdownAndWait(r);
    }

    void shutdownIsBoundedAndLeavesNoProcess()
    {
        SessionRegistry r(limits(8, 0));
        r.setTeardownGrace(300);
        QList<pid_t> pids;
        pids << r.create(sleeper())->pid();
        pids << r.create(sh(QStringLiteral("trap '' HUP TERM; while :; do sleep 1; done")))->pid();
        pids << r.create(sh(QStringLiteral("exit 0")))->pid();
        QElapsedTimer t;
        t.start();
        shutdownAndWait(r);
        QVERIFY2(t.elapsed() < 5000, qPrintable(QString::number(t.elapsed())));
        QCOMPARE(r.count(), 0);
        for (pid_t p : pids)
            QVERIFY(TestUtil::processState(p) == 0 || TestUtil::processState(p) == 'Z');
        QCOMPARE(TestUtil::zombieChildren(), 0);
        QCOMPARE(r.create(sleeper()), nullptr);
    }
};

QTEST_GUILESS_MAIN(TestRegistry)
#include "tst_registry.moc"
