// SPDX-License-Identifier: GPL-2.0-or-later
// Commands and notifications (issue 25): CommandLog's rules, and real bash,
// zsh and fish with the shipped scripts (resources/shell-integration) in a
// real PTY: the command list, statuses and output offsets are exact; a
// user's own PROMPT_COMMAND / precmd and a nested shell without integration
// still work; a program's own marks, fake or endless, stay bounded.
#include "commandlog.h"
#include "session.h"
#include "shellintegration.h"
#include "recordingviewer.h"
#include "testutil.h"

#include <QDir>
#include <QFile>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QTest>

using namespace Tether;

namespace {

QString sourceScripts()
{
    return QStringLiteral(TETHER_SOURCE_DIR "/resources/shell-integration");
}

QByteArray ringBytes(const Session &s, quint64 from, quint64 to)
{
    QByteArray out(int(to - from), '\0');
    s.buffer().read(from, out.data(), out.size());
    return out;
}

/// `bytes` without the escape sequences fish writes around a command (it
/// switches bracketed paste off, sets the title and colours and returns the
/// cursor after its fish_preexec event, so inside the output range) and
/// without a carriage return before the first text.
QByteArray withoutFishSetup(const QByteArray &bytes)
{
    QByteArray out;
    for (qsizetype i = 0; i < bytes.size(); ++i) {
        if (bytes.at(i) == '\x1b' && i + 1 < bytes.size()) {
            const char k = bytes.at(i + 1);
            if (k == '[') { // CSI: to its final byte
                i += 2;
                while (i < bytes.size() && !(bytes.at(i) >= 0x40 && bytes.at(i) <= 0x7e))
                    ++i;
            } else if (k == ']') { // OSC: to BEL
                while (i < bytes.size() && bytes.at(i) != '\x07')
                    ++i;
            } else {
                i += (k == '(' || k == ')') ? 2 : 1;
            }
            continue;
        }
        if (bytes.at(i) == '\r' && out.isEmpty())
            continue;
        out += bytes.at(i);
    }
    return out;
}

ShellMark mark(ShellMark::Kind kind, quint64 at, quint64 end, const char *payload = "")
{
    ShellMark m;
    m.kind = kind;
    m.at = at;
    m.end = end;
    m.payload = payload;
    m.payloadSize = qsizetype(qstrlen(payload));
    return m;
}

void writeFile(const QString &path, const QByteArray &text)
{
    QFile f(path);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write(text);
}

} // namespace

class TestShellIntegration : public QObject
{
    Q_OBJECT

    QTemporaryDir m_home;

    /// A session running `shell` (bash, zsh, fish) alone, with the shipped
    /// scripts, HOME at m_home, started in m_home.
    Session *startShell(const QString &shell)
    {
        SpawnOptions o;
        o.argv = QStringList{shell};
        o.cwd = m_home.path();
        o.extraEnv = QStringList{QStringLiteral("HOME=") + m_home.path(), QStringLiteral("HISTFILE=/dev/null")};
        auto *s = new Session(QStringLiteral("s"), o, 1 << 20, this);
        s->setShellIntegration(sourceScripts());
        QString err;
        if (!s->start(&err)) {
            qWarning() << err;
            delete s;
            return nullptr;
        }
        return s;
    }

    /// Types `line` + Enter once the shell is at its prompt, and waits for
    /// the command to finish (or, for an empty line, for nothing to start).
    static bool run(Session *s, const QByteArray &line)
    {
        if (!QTest::qWaitFor([s] { return s->commands().state() == CommandLog::ShellState::Prompt; }, 20000))
            return false;
        const qsizetype before = s->commands().commands().size();
        const quint64 lastId = s->commands().last() ? s->commands().last()->id : 0;
        QSignalSpy finished(s, &Session::commandFinished);
        s->sendApiInput(line + "\r");
        if (line.trimmed().isEmpty()) {
            // An empty line: the shell draws a new prompt (A) and nothing else.
            const quint64 at = s->offset();
            return QTest::qWaitFor([s, at] { return s->offset() > at; }, 20000)
                && s->commands().commands().size() == before;
        }
        return QTest::qWaitFor([s, lastId] {
            const CommandRecord *c = s->commands().last();
            return c && c->id > lastId && !c->running() && s->commands().state() == CommandLog::ShellState::Prompt;
        }, 20000);
    }

    /// The checks every integrated shell passes.
    void checkShell(const QString &shell)
    {
        const QString path = QStandardPaths::findExecutable(shell);
        if (path.isEmpty())
            QSKIP(qPrintable(shell + QStringLiteral(" is not installed (scripts/install-deps.sh)")));
        Session *s = startShell(path);
        QVERIFY(s);
        // What a command printed: exact, but for what fish itself writes
        // between its preexec event and the command (see withoutFishSetup()).
        const bool fish = shell == QLatin1String("fish");
        const auto output = [s, fish](const CommandRecord &r) {
            const QByteArray b = ringBytes(*s, r.outputStart, r.outputEnd);
            return fish ? withoutFishSetup(b) : b;
        };
        QVERIFY(run(s, "echo hi"));
        QVERIFY(run(s, "false"));
        QVERIFY(run(s, ""));
        QVERIFY(run(s, "printf 'a;b\\nc'"));
        QVERIFY(run(s, "cd /tmp"));
        QVERIFY(run(s, "sh -c 'exit 7'")); // not (exit 7): fish has no subshells
        const QList<CommandRecord> &c = s->commands().commands();
        QCOMPARE(c.size(), 5);
        QCOMPARE(c.at(0).commandLine, QStringLiteral("echo hi"));
        QCOMPARE(c.at(0).exitStatus, std::optional<int>(0));
        QCOMPARE(output(c.at(0)), QByteArray("hi\r\n"));
        QCOMPARE(c.at(0).cwd, QDir(m_home.path()).canonicalPath());
        QCOMPARE(c.at(1).commandLine, QStringLiteral("false"));
        QCOMPARE(c.at(1).exitStatus, std::optional<int>(1));
        QCOMPARE(output(c.at(1)), QByteArray());
        QCOMPARE(c.at(2).commandLine, QStringLiteral("printf 'a;b\\nc'"));
        QCOMPARE(output(c.at(2)), QByteArray("a;b\r\nc"));
        QCOMPARE(c.at(3).exitStatus, std::optional<int>(0));
        QCOMPARE(c.at(4).commandLine, QStringLiteral("sh -c 'exit 7'"));
        QCOMPARE(c.at(4).exitStatus, std::optional<int>(7));
        QCOMPARE(c.at(4).cwd, QStringLiteral("/tmp"));
        QCOMPARE(s->commands().cwd(), QStringLiteral("/tmp"));
        for (const CommandRecord &r : c)
            QVERIFY(r.startMs <= r.endMs && r.outputStart <= r.outputEnd);
        // `exit 3`: the command the shell ended with gets the session's status.
        QSignalSpy exited(s, &Session::exited);
        s->sendApiInput("exit 3\r");
        QVERIFY(exited.wait(20000));
        QCOMPARE(s->commands().last()->commandLine, QStringLiteral("exit 3"));
        QCOMPARE(s->commands().last()->exitStatus, std::optional<int>(3));
        s->kill();
        QTRY_VERIFY_WITH_TIMEOUT(s->isTornDown(), 10000);
        delete s;
    }

private Q_SLOTS:
    void initTestCase()
    {
        qRegisterMetaType<Tether::ExitStatus>();
        qRegisterMetaType<Tether::CommandRecord>();
        QVERIFY(m_home.isValid());
        qunsetenv("ZDOTDIR");
        qunsetenv("PROMPT_COMMAND");
    }

    void init()
    {
        // A fresh, empty home (no rc files) for each test.
        for (const QString &f : QDir(m_home.path()).entryList(QDir::Files | QDir::Hidden))
            QFile::remove(m_home.filePath(f));
    }

    // --- CommandLog ------------------------------------------------------------

    void logRules()
    {
        CommandLog log;
        QCOMPARE(log.state(), CommandLog::ShellState::Unknown);
        // A D with nothing running (an empty line; a program's fake) changes nothing.
        QCOMPARE(log.apply(mark(ShellMark::CommandEnd, 0, 10, "0"), 1000), CommandLog::Change::None);
        QCOMPARE(log.apply(mark(ShellMark::PromptStart, 10, 18), 1000), CommandLog::Change::State);
        QCOMPARE(log.state(), CommandLog::ShellState::Prompt);
        log.apply(mark(ShellMark::Cwd, 18, 30, "/src"), 1000);
        log.apply(mark(ShellMark::CommandLine, 30, 40, "make\\x3b ls;nonce"), 1000);
        QCOMPARE(log.apply(mark(ShellMark::OutputStart, 40, 48), 2000), CommandLog::Change::Started);
        QCOMPARE(log.state(), CommandLog::ShellState::Running);
        QVERIFY(log.running());
        QCOMPARE(log.running()->commandLine, QStringLiteral("make; ls"));
        QCOMPARE(log.running()->cwd, QStringLiteral("/src"));
        QCOMPARE(log.running()->outputStart, quint64(48));
        QCOMPARE(log.apply(mark(ShellMark::CommandEnd, 100, 110, "2"), 5000), CommandLog::Change::Finished);
        QCOMPARE(log.last()->exitStatus, std::optional<int>(2));
        QCOMPARE(log.last()->outputEnd, quint64(100));
        QCOMPARE(log.last()->endMs - log.last()->startMs, qint64(3000));
        // A second D: ignored. A C with no E: no command line.
        QCOMPARE(log.apply(mark(ShellMark::CommandEnd, 110, 120, "0"), 5000), CommandLog::Change::None);
        QCOMPARE(log.last()->exitStatus, std::optional<int>(2));
        log.apply(mark(ShellMark::OutputStart, 120, 128), 6000);
        QCOMPARE(log.last()->commandLine, QString());
        // C while one runs ends it without a status; A too.
        QCOMPARE(log.apply(mark(ShellMark::OutputStart, 130, 138), 7000), CommandLog::Change::Started);
        QVERIFY(log.finishedBefore());
        QCOMPARE(log.finishedBefore()->exitStatus, std::optional<int>());
        QCOMPARE(log.apply(mark(ShellMark::PromptStart, 140, 148), 8000), CommandLog::Change::Finished);
        QCOMPARE(log.last()->exitStatus, std::optional<int>());
        // Statuses that are not 0..255 integers: none.
        for (const char *bad : {"256", "-1", "x", "", "3x"}) {
            log.apply(mark(ShellMark::OutputStart, 150, 158), 9000);
            log.apply(mark(ShellMark::CommandEnd, 160, 170, bad), 9000);
            QCOMPARE(log.last()->exitStatus, std::optional<int>());
        }
        log.apply(mark(ShellMark::OutputStart, 150, 158), 9000);
        log.apply(mark(ShellMark::CommandEnd, 160, 170, "255;aid=1"), 9000);
        QCOMPARE(log.last()->exitStatus, std::optional<int>(255));
    }

    void logIsBoundedAndSurvivesSaveRestore()
    {
        CommandLog log;
        for (int i = 0; i < 1000; ++i) {
            log.apply(mark(ShellMark::CommandLine, 0, 0, "cmd"), i);
            log.apply(mark(ShellMark::OutputStart, quint64(i) * 10, quint64(i) * 10 + 8), i);
            log.apply(mark(ShellMark::CommandEnd, quint64(i) * 10 + 9, quint64(i) * 10 + 10, "1"), i);
        }
        QCOMPARE(log.commands().size(), CommandLog::kMaxCommands);
        QCOMPARE(log.commands().first().id, quint64(1000 - CommandLog::kMaxCommands + 1));
        QCOMPARE(log.last()->id, quint64(1000));
        log.apply(mark(ShellMark::OutputStart, 20000, 20008), 5);
        CommandLog copy;
        QVERIFY(copy.restore(log.save()));
        QCOMPARE(copy.save(), log.save());
        QCOMPARE(copy.state(), CommandLog::ShellState::Running);
        QCOMPARE(copy.running()->outputStart, quint64(20008));
        // Damaged or foreign bytes: refused, nothing changed.
        QByteArray bad = log.save();
        bad.chop(1);
        QVERIFY(!copy.restore(bad));
        QVERIFY(!copy.restore(QByteArray("\x09garbage")));
        QCOMPARE(copy.save(), log.save());
    }

    // --- real shells -------------------------------------------------------------

    void scriptsAreFoundInTheBuildTree()
    {
        // tests/tst_* and app/tether find build/share/tether/shell-integration.
        const QString dir = ShellIntegration::scriptDir();
        QVERIFY2(!dir.isEmpty(), "no shell-integration directory beside the build");
        QVERIFY(QFile::exists(dir + QStringLiteral("/tether.bash")));
        QVERIFY(QFile::exists(dir + QStringLiteral("/zsh/.zshrc")));
        QVERIFY(QFile::exists(dir + QStringLiteral("/tether.fish")));
    }

    void onlyBareShellsAreChanged()
    {
        SpawnOptions o;
        o.argv = QStringList{QStringLiteral("/bin/bash"), QStringLiteral("-c"), QStringLiteral("true")};
        QVERIFY(!ShellIntegration::apply(&o, sourceScripts()));
        o.argv = QStringList{QStringLiteral("/bin/sh")};
        QVERIFY(!ShellIntegration::apply(&o, sourceScripts()));
        o.argv = QStringList{QStringLiteral("/bin/bash")};
        QVERIFY(!ShellIntegration::apply(&o, QString()));
        o.loginShell = true;
        QVERIFY(ShellIntegration::apply(&o, sourceScripts()));
        QCOMPARE(o.argv, (QStringList{QStringLiteral("/bin/bash"), QStringLiteral("--init-file"),
                                      sourceScripts() + QStringLiteral("/tether.bash")}));
        QVERIFY(!o.loginShell);
        QVERIFY(o.extraEnv.contains(QStringLiteral("TETHER_SHELL_LOGIN=1")));
    }

    void bash() { checkShell(QStringLiteral("bash")); }

    void zsh()
    {
        // PROMPT_SP (zsh's "%" for a last line without a newline) is drawn
        // before precmd, so inside the output range: off here for exact
        // offsets (docs/protocol.md says so).
        writeFile(m_home.filePath(QStringLiteral(".zshrc")), "unsetopt PROMPT_SP\nPS1='z> '\n");
        checkShell(QStringLiteral("zsh"));
    }

    void fish() { checkShell(QStringLiteral("fish")); }

    void bashKeepsTheUsersPromptCommand()
    {
        // The user's rc sets its own PROMPT_COMMAND (which must still see
        // the command's $?) and PS1, and our hooks still mark everything.
        writeFile(m_home.filePath(QStringLiteral(".bashrc")),
                  "PROMPT_COMMAND='echo \"user-pc:$?\"'\nPS1='mine> '\n");
        Session *s = startShell(QStandardPaths::findExecutable(QStringLiteral("bash")));
        QVERIFY(s);
        QVERIFY(run(s, "(exit 5)"));
        QCOMPARE(s->commands().last()->exitStatus, std::optional<int>(5));
        QTRY_VERIFY(ringBytes(*s, s->buffer().startOffset(), s->offset()).contains("user-pc:5\r\n"));
        QVERIFY(ringBytes(*s, s->buffer().startOffset(), s->offset()).contains("mine> "));
        s->kill();
        QTRY_VERIFY_WITH_TIMEOUT(s->isTornDown(), 10000);
        delete s;
    }

    void zshKeepsTheUsersPrecmd()
    {
        const QString zsh = QStandardPaths::findExecutable(QStringLiteral("zsh"));
        if (zsh.isEmpty())
            QSKIP("zsh is not installed");
        writeFile(m_home.filePath(QStringLiteral(".zshrc")),
                  "precmd() { print \"user-precmd:$?\" }\nPS1='zz> '\n");
        Session *s = startShell(zsh);
        QVERIFY(s);
        QVERIFY(run(s, "(exit 6)"));
        QCOMPARE(s->commands().last()->exitStatus, std::optional<int>(6));
        QTRY_VERIFY(ringBytes(*s, s->buffer().startOffset(), s->offset()).contains("user-precmd:6"));
        s->kill();
        QTRY_VERIFY_WITH_TIMEOUT(s->isTornDown(), 10000);
        delete s;
    }

    void nestedShellWithoutIntegration()
    {
        // A shell inside (as after `ssh` to a host without integration):
        // one command until it exits, with its status; its own prompts
        // and commands send no marks.
        Session *s = startShell(QStandardPaths::findExecutable(QStringLiteral("bash")));
        QVERIFY(s);
        QVERIFY(QTest::qWaitFor([s] { return s->commands().state() == CommandLog::ShellState::Prompt; }, 20000));
        s->sendApiInput("bash --norc --noprofile\r");
        QTRY_VERIFY_WITH_TIMEOUT(s->commands().running(), 20000);
        s->sendApiInput("echo inner\r");
        QTRY_VERIFY_WITH_TIMEOUT(ringBytes(*s, s->buffer().startOffset(), s->offset()).contains("inner\r\n"), 20000);
        s->sendApiInput("exit 4\r");
        QTRY_VERIFY_WITH_TIMEOUT(!s->commands().running() && s->commands().state() == CommandLog::ShellState::Prompt,
                                 20000);
        QCOMPARE(s->commands().commands().size(), 1);
        QCOMPARE(s->commands().last()->commandLine, QStringLiteral("bash --norc --noprofile"));
        QCOMPARE(s->commands().last()->exitStatus, std::optional<int>(4));
        // And the outer shell goes on being followed.
        QVERIFY(run(s, "true"));
        QCOMPARE(s->commands().commands().size(), 2);
        s->kill();
        QTRY_VERIFY_WITH_TIMEOUT(s->isTornDown(), 10000);
        delete s;
    }

    void programSendingMarksByHand()
    {
        // No shell integration: a program writes the marks itself; a fake D
        // before any C and a flood of C marks stay harmless and bounded.
        const QString script = QStringLiteral(
            "printf '\\033]133;D;0\\007\\033]133;A\\007$ \\033]133;B\\007'; "
            "printf '\\033]633;E;job\\\\x3b2\\007\\033]133;C\\007'; printf 'OUT'; "
            "printf '\\033]133;D;42\\007'; "
            "i=0; while [ $i -lt 300 ]; do printf '\\033]133;C\\007'; i=$((i+1)); done; "
            "printf '\\033]133;D;1\\007DONE'; exec sleep 30");
        Session s(QStringLiteral("p"), TestUtil::shell(script), 1 << 20);
        QSignalSpy started(&s, &Session::commandStarted);
        QSignalSpy finished(&s, &Session::commandFinished);
        QString err;
        QVERIFY2(s.start(&err), qPrintable(err));
        QTRY_VERIFY_WITH_TIMEOUT(ringBytes(s, s.buffer().startOffset(), s.offset()).endsWith("DONE"), 20000);
        const QList<CommandRecord> &c = s.commands().commands();
        QCOMPARE(c.size(), CommandLog::kMaxCommands);
        QCOMPARE(c.last().id, quint64(301));
        QCOMPARE(c.last().exitStatus, std::optional<int>(1));
        QCOMPARE(started.count(), 301);
        QCOMPARE(finished.count(), 301);
        const CommandRecord first = finished.first().at(0).value<CommandRecord>();
        QCOMPARE(first.commandLine, QStringLiteral("job;2"));
        QCOMPARE(first.exitStatus, std::optional<int>(42));
        QCOMPARE(ringBytes(s, first.outputStart, first.outputEnd), QByteArray("OUT"));
        s.kill();
        QTRY_VERIFY_WITH_TIMEOUT(s.isTornDown(), 10000);
    }

    void notifications()
    {
        // With nobody watching: a command over the threshold, bells, OSC 9
        // and 777, and the exit.
        // Threshold 0: every command notifies (no wall-clock duration in a test).
        const QString script = QStringLiteral(
            "printf '\\033]133;A\\007\\033]633;E;long\\007\\033]133;C\\007'; printf '\\033]133;D;0\\007'; "
            "printf 'x\\007\\007\\007\\007\\007\\007\\007\\007\\007\\007\\033]9;built\\007\\033]777;notify;T;B\\007'; "
            "exit 2");
        Session s(QStringLiteral("n"), TestUtil::shell(script), 1 << 20);
        s.setNotifyAfterMs(0);
        QSignalSpy notify(&s, &Session::notify);
        QString err;
        QVERIFY2(s.start(&err), qPrintable(err));
        QSignalSpy exited(&s, &Session::exited);
        QVERIFY(exited.wait(20000));
        QCOMPARE(notify.count(), 1 + Session::kNotifyBurst + 3);
        QStringList seen;
        for (const QList<QVariant> &n : notify)
            seen << n.at(0).toString() + QLatin1Char(':') + n.at(1).toString() + QLatin1Char(':')
                    + (n.at(2).toBool() ? QLatin1String("watched") : QLatin1String("alone"));
        QStringList expected{QStringLiteral("command:long:alone")};
        for (int i = 0; i < Session::kNotifyBurst; ++i) // 10 bells at once: the first kNotifyBurst
            expected << QStringLiteral("bell::alone");
        expected << QStringLiteral("message:built:alone") << QStringLiteral("message:T: B:alone")
                 << QStringLiteral("exit:exited with code 2:alone");
        QCOMPARE(seen, expected);
        QCOMPARE(notify.first().at(4).value<CommandRecord>().commandLine, QStringLiteral("long"));
        for (const QList<QVariant> &n : notify)
            QCOMPARE(n.at(3).toBool(), false); // nobody asked (NotifySettings::next)
        s.kill();
        QTRY_VERIFY_WITH_TIMEOUT(s.isTornDown(), 10000);
    }

    void notifySettings_data()
    {
        QTest::addColumn<bool>("muted");
        QTest::addColumn<bool>("next");
        QTest::addColumn<qint64>("notifyAfterMs");
        QTest::addColumn<QStringList>("expected"); // kind:text:requested
        // Two commands far shorter than the default threshold, a bell, OSC 9, exit 2.
        QTest::newRow("default: short commands say nothing")
            << false << false << Session::kDefaultNotifyAfterMs
            << QStringList{QStringLiteral("bell::no"), QStringLiteral("message:hey:no"), QStringLiteral("exit:exited with code 2:no")};
        QTest::newRow("next: the first command, however short")
            << false << true << Session::kDefaultNotifyAfterMs
            << QStringList{QStringLiteral("command:one:yes"), QStringLiteral("bell::no"), QStringLiteral("message:hey:no"),
                           QStringLiteral("exit:exited with code 2:no")};
        QTest::newRow("muted: nothing, whatever the threshold")
            << true << false << qint64(0) << QStringList();
        QTest::newRow("muted and next: only what next asked for")
            << true << true << qint64(0) << QStringList{QStringLiteral("command:one:yes")};
    }

    void notifySettings()
    {
        QFETCH(bool, muted);
        QFETCH(bool, next);
        QFETCH(qint64, notifyAfterMs);
        QFETCH(QStringList, expected);
        const QString script = QStringLiteral(
            "for c in one two; do printf '\\033]133;A\\007\\033]633;E;%s\\007\\033]133;C\\007\\033]133;D;0\\007' $c; done; "
            "printf '\\007\\033]9;hey\\007'; exit 2");
        Session s(QStringLiteral("n"), TestUtil::shell(script), 1 << 20);
        s.setNotifyAfterMs(notifyAfterMs);
        QSignalSpy changed(&s, &Session::notifySettingsChanged);
        s.setNotifySettings({muted, next});
        QCOMPARE(changed.count(), (muted || next) ? 1 : 0);
        s.setNotifySettings({muted, next}); // the same: no signal
        QCOMPARE(changed.count(), (muted || next) ? 1 : 0);
        QSignalSpy notify(&s, &Session::notify);
        QSignalSpy exited(&s, &Session::exited);
        QString err;
        QVERIFY2(s.start(&err), qPrintable(err));
        QVERIFY(exited.wait(20000));
        QStringList seen;
        for (const QList<QVariant> &n : notify)
            seen << n.at(0).toString() + QLatin1Char(':') + n.at(1).toString() + QLatin1Char(':')
                    + (n.at(3).toBool() ? QLatin1String("yes") : QLatin1String("no"));
        QCOMPARE(seen, expected);
        // A request is used up by what it asked for.
        QCOMPARE(s.notifySettings().next, false);
        QCOMPARE(s.notifySettings().muted, muted);
        QCOMPARE(changed.count(), (muted || next) ? 1 + (next ? 1 : 0) : 0);
        s.kill();
        QTRY_VERIFY_WITH_TIMEOUT(s.isTornDown(), 10000);
    }

    void nextRequestIsAnsweredByTheExit()
    {
        // A session whose shell marks no command: the exit answers the
        // request (requested), muted or not.
        Session s(QStringLiteral("x"), TestUtil::shell(QStringLiteral("exit 4")), 1 << 20);
        s.setNotifySettings({true, true});
        QSignalSpy notify(&s, &Session::notify);
        QSignalSpy exited(&s, &Session::exited);
        QString err;
        QVERIFY2(s.start(&err), qPrintable(err));
        QVERIFY(exited.wait(20000));
        QCOMPARE(notify.count(), 1);
        QCOMPARE(notify.first().at(0).toString(), QStringLiteral("exit"));
        QCOMPARE(notify.first().at(3).toBool(), true);
        QCOMPARE(s.notifySettings().next, false);
        s.kill();
        QTRY_VERIFY_WITH_TIMEOUT(s.isTornDown(), 10000);
    }

    /// tmux's monitor-activity: output while nobody watches tells once,
    /// then again only after a viewer attached; muted, never.
    void activityAlert()
    {
        Session s(QStringLiteral("a"), TestUtil::shell(QStringLiteral("while read x; do echo \"got $x\"; done")), 1 << 20);
        s.setNotifySettings({false, false, true, 0});
        QSignalSpy notify(&s, &Session::notify);
        QString err;
        QVERIFY2(s.start(&err), qPrintable(err));
        const auto activity = [&notify] {
            int n = 0;
            for (const QList<QVariant> &a : notify)
                n += a.at(0).toString() == QLatin1String("activity");
            return n;
        };
        // Types a line and waits for all it brings: the echo "LINE\r\n" and "got LINE\r\n".
        const auto type = [&s](const QByteArray &line) {
            const quint64 until = s.offset() + quint64(2 * line.size() + 8);
            s.sendApiInput(line + "\r");
            return QTest::qWaitFor([&s, until] { return s.offset() >= until; }, 20000);
        };
        QVERIFY(type("one"));
        QTRY_COMPARE(activity(), 1);
        QVERIFY(type("two"));
        QCOMPARE(activity(), 1); // not again: nobody looked since
        QCOMPARE(notify.first().at(1).toString(), QStringLiteral("output while nobody watched"));
        QCOMPARE(notify.first().at(2).toBool(), false);
        {
            TestUtil::RecordingViewer v;
            s.attach(&v, ViewerMode::Watch, std::nullopt);
            QVERIFY(type("watched")); // while watched: nothing
            s.detach(&v);
        }
        QCOMPARE(activity(), 1);
        QVERIFY(type("three")); // someone looked since the last one
        QTRY_COMPARE(activity(), 2);
        s.setNotifySettings({true, false, true, 0});
        {
            TestUtil::RecordingViewer v;
            s.attach(&v, ViewerMode::Watch, std::nullopt);
            s.detach(&v);
        }
        QVERIFY(type("muted"));
        QCOMPARE(activity(), 2);
        s.kill();
        QTRY_VERIFY_WITH_TIMEOUT(s.isTornDown(), 10000);
    }

    /// tmux's monitor-silence: no output for N s tells once, then again
    /// only after more output and N s more.
    void silenceAlert()
    {
        Session s(QStringLiteral("q"), TestUtil::shell(QStringLiteral("while read x; do echo \"got $x\"; done")), 1 << 20);
        QString err;
        QVERIFY2(s.start(&err), qPrintable(err));
        QSignalSpy notify(&s, &Session::notify);
        s.setNotifySettings({false, false, false, 1});
        QCOMPARE(s.notifySettings().silence, 1);
        QVERIFY(notify.wait(20000));
        QCOMPARE(notify.count(), 1);
        QCOMPARE(notify.first().at(0).toString(), QStringLiteral("silence"));
        QCOMPARE(notify.first().at(1).toString(), QStringLiteral("no output for 1 s"));
        // Silence goes on: nothing more until output came.
        QVERIFY(!notify.wait(1500));
        s.sendApiInput("x\r");
        QVERIFY(notify.wait(20000));
        QCOMPARE(notify.count(), 2);
        QCOMPARE(notify.last().at(0).toString(), QStringLiteral("silence"));
        // Off: nothing.
        s.setNotifySettings({false, false, false, 0});
        s.sendApiInput("y\r");
        QVERIFY(!notify.wait(1500));
        QCOMPARE(notify.count(), 2);
        s.kill();
        QTRY_VERIFY_WITH_TIMEOUT(s.isTornDown(), 10000);
    }

    void notifySettingsSurviveTheHandover()
    {
        Session s(QStringLiteral("h"), TestUtil::shell(QStringLiteral("read x")), 1 << 20);
        QString err;
        QVERIFY2(s.start(&err), qPrintable(err));
        s.setNotifySettings({true, true, true, 45});
        const Handover::SessionRecord r = s.handover();
        QCOMPARE(r.notifyMuted, true);
        QCOMPARE(r.notifyNext, true);
        QCOMPARE(r.notifyActivity, true);
        QCOMPARE(r.notifySilence, 45);
        s.setNotifySettings({false, true});
        QCOMPARE(s.handover().notifyMuted, false);
        QCOMPARE(s.handover().notifyNext, true);
        s.kill();
        QTRY_VERIFY_WITH_TIMEOUT(s.isTornDown(), 10000);
    }
};

QTEST_GUILESS_MAIN(TestShellIntegration)
#include "tst_shellintegration.moc"
