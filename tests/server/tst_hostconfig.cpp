// SPDX-License-Identifier: GPL-2.0-or-later
// The host's settings file through its two parts (issue 28): SessionConfig
// (engine, the sessions/ keys) and ServerConfig (server, the server/ keys),
// loaded and saved together by HostConfig. The file keeps the keys it has
// always had: each part writes its own group only, both together write the
// same thirteen keys as before the split, and what is read but never
// written (TLS files, allowed hosts) stays out of a saved file.
#include "hostconfig.h"

#include <QFileInfo>
#include <QSettings>
#include <QTemporaryDir>
#include <QTest>

using namespace Tether;

namespace {
QStringList sessionKeys()
{
    return {QStringLiteral("sessions/bufferSize"), QStringLiteral("sessions/command"),
            QStringLiteral("sessions/exitedTtl"), QStringLiteral("sessions/maxSessions"),
            QStringLiteral("sessions/notifyAfter"), QStringLiteral("sessions/savedScrollbackLines"),
            QStringLiteral("sessions/screen"), QStringLiteral("sessions/shellIntegration"),
            QStringLiteral("sessions/ttl")};
}
QStringList serverKeys()
{
    return {QStringLiteral("server/bind"), QStringLiteral("server/pingInterval"),
            QStringLiteral("server/pingTimeout"), QStringLiteral("server/port")};
}
QStringList sorted(QStringList l)
{
    l.sort();
    return l;
}
} // namespace

class TestHostConfig : public QObject
{
    Q_OBJECT
private Q_SLOTS:
    void eachPartWritesItsOwnGroup()
    {
        QTemporaryDir dir;
        QSettings sessions(dir.filePath(QStringLiteral("sessions.conf")), QSettings::IniFormat);
        SessionConfig().save(sessions);
        QCOMPARE(sorted(sessions.allKeys()), sorted(sessionKeys()));
        QSettings server(dir.filePath(QStringLiteral("server.conf")), QSettings::IniFormat);
        ServerConfig().save(server);
        QCOMPARE(sorted(server.allKeys()), sorted(serverKeys()));
        QSettings host(dir.filePath(QStringLiteral("tether.conf")), QSettings::IniFormat);
        HostConfig c;
        c.tlsCert = QStringLiteral("/x/cert.pem");
        c.tlsKey = QStringLiteral("/x/key.pem");
        c.allowHosts = QStringList{QStringLiteral("box.lan")};
        c.save(host);
        QCOMPARE(sorted(host.allKeys()), sorted(sessionKeys() + serverKeys()));
    }

    void savedAndLoadedBack()
    {
        QTemporaryDir dir;
        const QString file = dir.filePath(QStringLiteral("tether.conf"));
        HostConfig c;
        c.limits.ttlSeconds = 600;
        c.limits.exitedTtlSeconds = 60;
        c.limits.bufferCapacity = 128 * 1024;
        c.limits.maxSessions = 7;
        c.limits.screen = false;
        c.limits.shellIntegration = false;
        c.limits.notifyAfterSeconds = 3;
        c.savedScrollbackLines = 20;
        c.command = QStringLiteral("/bin/sh -c 'echo hi'");
        c.bind = QStringLiteral("::1");
        c.port = 9001;
        c.pingIntervalSec = 5;
        c.pingTimeoutSec = 15;
        {
            QSettings s(file, QSettings::IniFormat);
            c.save(s);
        }
        QSettings s(file, QSettings::IniFormat);
        const HostConfig back = HostConfig::load(s);
        QCOMPARE(back.limits.ttlSeconds, 600);
        QCOMPARE(back.limits.exitedTtlSeconds, 60);
        QCOMPARE(back.limits.bufferCapacity, qsizetype(128 * 1024));
        QCOMPARE(back.limits.maxSessions, 7);
        QCOMPARE(back.limits.screen, false);
        QCOMPARE(back.limits.shellIntegration, false);
        QCOMPARE(back.limits.notifyAfterSeconds, 3);
        QCOMPARE(back.savedScrollbackLines, 20);
        QCOMPARE(back.commandArgv(), (QStringList{QStringLiteral("/bin/sh"), QStringLiteral("-c"), QStringLiteral("echo hi")}));
        QCOMPARE(back.bind, QStringLiteral("::1"));
        QCOMPARE(back.port, quint16(9001));
        QCOMPARE(back.pingIntervalSec, 5);
        QCOMPARE(back.pingTimeoutSec, 15);
        QCOMPARE(back.accessKeyFile, QFileInfo(file).absolutePath() + QStringLiteral("/access-key"));
    }

    /// The server's keys that are read only, and clamping in both parts.
    void serverKeysReadAndClamped()
    {
        QTemporaryDir dir;
        const QString file = dir.filePath(QStringLiteral("tether.conf"));
        {
            QSettings s(file, QSettings::IniFormat);
            s.setValue(QStringLiteral("server/tlsCert"), QStringLiteral("/x/cert.pem"));
            s.setValue(QStringLiteral("server/tlsKey"), QStringLiteral("/x/key.pem"));
            s.setValue(QStringLiteral("server/allowHosts"), QStringList{QStringLiteral(" box.lan "), QString(), QStringLiteral("proxy:8443")});
            s.setValue(QStringLiteral("server/port"), 70000);
            s.setValue(QStringLiteral("server/pingTimeout"), 0);
            s.setValue(QStringLiteral("sessions/ttl"), -5);
            s.setValue(QStringLiteral("sessions/bufferSize"), qlonglong(1) << 40);
        }
        QSettings s(file, QSettings::IniFormat);
        const HostConfig c = HostConfig::load(s);
        QVERIFY(c.tlsEnabled());
        QCOMPARE(c.tlsCert, QStringLiteral("/x/cert.pem"));
        QCOMPARE(c.allowHosts, (QStringList{QStringLiteral("box.lan"), QStringLiteral("proxy:8443")}));
        QCOMPARE(c.port, quint16(65535));
        QCOMPARE(c.pingTimeoutSec, 1);
        QCOMPARE(c.limits.ttlSeconds, 0);
        QCOMPARE(c.limits.bufferCapacity, RingBuffer::kMaxCapacity);
        QCOMPARE(c.insecureBind, false);
    }
};

QTEST_GUILESS_MAIN(TestHostConfig)
#include "tst_hostconfig.moc"
