// SPDX-License-Identifier: GPL-2.0-or-later
#include "clientcommand.h"
#include "commandline.h"
#include "apiclient.h"
#include "attachclient.h"
#include "shellwords.h"
#include "signalpipe.h"
#include "terminalstate.h"

#include <QCommandLineParser>
#include <QCoreApplication>
#include <QDir>
#include <QJsonArray>
#include <QJsonDocument>
#include <QSocketNotifier>
#include <QElapsedTimer>
#include <QTimer>
#include <QVector>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <fcntl.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <termios.h>
#include <unistd.h>

#ifndef TETHER_VERSION
#define TETHER_VERSION "0.1.0"
#endif

namespace Tether {

namespace {

// Exit statuses (documented in clientcommand.h and in --help).
constexpr int kExitOk = 0;
constexpr int kExitError = 1;
constexpr int kExitUsage = 2;
constexpr int kExitTakenOver = 3;
constexpr int kExitNotFound = 4;
constexpr int kExitKilled = 5;

const char kNotRunning[] = "Tether is not running: start it with `tether` or `tether serve`";

// --- terminal state restored on every exit path --------------------------------

struct termios g_savedTermios;
bool g_rawActive = false;
int g_ttyFd = -1;
int g_stdoutSavedFlags = -1; ///< fd 1's flags when we had to set O_NONBLOCK on it

void restoreTerminal()
{
    if (g_rawActive) {
        // TCSANOW: TCSADRAIN would wait for output a stuck terminal never takes.
        ::tcsetattr(g_ttyFd, TCSANOW, &g_savedTermios);
        g_rawActive = false;
    }
    if (g_stdoutSavedFlags >= 0) {
        ::fcntl(STDOUT_FILENO, F_SETFL, g_stdoutSavedFlags);
        g_stdoutSavedFlags = -1;
    }
}

/// Saves the termios of `fd` (restoreTerminal() puts it back) and switches
/// it to raw mode (cfmakeraw(3)). False, changing nothing, on failure.
bool enterRawMode(int fd)
{
    if (::tcgetattr(fd, &g_savedTermios) != 0)
        return false;
    struct termios raw = g_savedTermios;
    ::cfmakeraw(&raw);
    g_ttyFd = fd;
    if (::tcsetattr(fd, TCSANOW, &raw) == 0)
        g_rawActive = true;
    return g_rawActive;
}

/// Sets O_NONBLOCK on stdout's open file description, keeping its flags for
/// restoreTerminal().
void makeStdoutNonBlocking()
{
    const int flags = ::fcntl(STDOUT_FILENO, F_GETFL);
    if (flags >= 0 && !(flags & O_NONBLOCK)) {
        g_stdoutSavedFlags = flags;
        ::fcntl(STDOUT_FILENO, F_SETFL, flags | O_NONBLOCK);
    }
}

void printErr(const QString &text)
{
    std::fprintf(stderr, "%s\n", qPrintable(text));
    std::fflush(stderr);
}

int fail(const QString &command, const QString &text, int status = kExitError)
{
    printErr(QStringLiteral("tether %1: %2").arg(command, text));
    return status;
}

/// Runs the event loop until `body` (which starts asynchronous work) calls
/// done(status).
int runAsync(const std::function<void(std::function<void(int)>)> &body)
{
    int status = kExitError;
    bool finished = false;
    QTimer::singleShot(0, qApp, [&]() {
        body([&](int s) {
            if (finished)
                return;
            finished = true;
            status = s;
            QCoreApplication::exit(s);
        });
    });
    if (!finished)
        QCoreApplication::exec();
    return status;
}

QString stateText(const QJsonObject &s)
{
    if (s.value(QStringLiteral("state")).toString() != QLatin1String("exited"))
        return QStringLiteral("running");
    if (s.value(QStringLiteral("exit_code")).isDouble())
        return QStringLiteral("exited %1").arg(s.value(QStringLiteral("exit_code")).toInt());
    if (s.value(QStringLiteral("exit_signal")).isDouble())
        return QStringLiteral("signal %1").arg(s.value(QStringLiteral("exit_signal")).toInt());
    return QStringLiteral("exited");
}

QString commandText(const QJsonObject &s)
{
    const QString title = s.value(QStringLiteral("title")).toString();
    if (!title.isEmpty())
        return title;
    QStringList argv;
    for (const QJsonValue &v : s.value(QStringLiteral("command")).toArray())
        argv << v.toString();
    return ShellWords::quote(argv);
}

/// `text` cut to `limit` characters, its last one "…" when cut (a UTF-16
/// surrogate pair is never split).
QString ellipsize(const QString &text, int limit)
{
    if (text.size() <= limit)
        return text;
    int keep = qMax(0, limit - 1);
    if (keep > 0 && text.at(keep - 1).isHighSurrogate())
        --keep;
    return text.left(keep) + QChar(0x2026);
}

/// When the session expires: "never" (a running session with no TTL, the
/// default), "-" while a viewer keeps it ("cannot expire now"), else the time
/// left as "45s", "29m", "2h05m" (from expires_in).
QString expiresText(const QJsonObject &s)
{
    const QJsonValue left = s.value(QStringLiteral("expires_in"));
    if (!left.isDouble())
        return s.value(QStringLiteral("viewers")).toInt() > 0 ? QStringLiteral("-") : QStringLiteral("never");
    const qint64 secs = qint64(left.toDouble());
    if (secs < 60)
        return QStringLiteral("%1s").arg(secs);
    if (secs < 3600)
        return QStringLiteral("%1m").arg(secs / 60);
    return QStringLiteral("%1h%2m").arg(secs / 3600).arg((secs % 3600) / 60, 2, 10, QLatin1Char('0'));
}

/// The program in front of the session's terminal ("vim"), "-" when none.
QString programText(const QJsonObject &s)
{
    const QString name = s.value(QStringLiteral("foreground")).toObject().value(QStringLiteral("name")).toString();
    return name.isEmpty() ? QStringLiteral("-") : ShellWords::quote({name}); // "my prog" must stay one column
}

/// Shortest prefix length (>= 8) that tells every id apart.
int uniquePrefixLength(const QStringList &ids)
{
    int len = 8;
    for (int i = 0; i < ids.size(); ++i) {
        for (int j = i + 1; j < ids.size(); ++j) {
            int common = 0;
            while (common < ids[i].size() && common < ids[j].size() && ids[i][common] == ids[j][common])
                ++common;
            len = qMax(len, common + 1);
        }
    }
    return len;
}

/// Columns of the terminal on `fd` (TIOCGWINSZ); 0 when it is not a
/// terminal or reports no size.
int terminalColumns(int fd)
{
    if (!::isatty(fd))
        return 0;
    struct winsize ws {};
    if (::ioctl(fd, TIOCGWINSZ, &ws) != 0)
        return 0;
    return ws.ws_col;
}

/// The `tether list` table. Only the last column (COMMAND/TITLE) is ever
/// cut: to what is left of `columns` (the terminal's width) after the other
/// columns, at least kMinLastColumn, or at kMaxLastColumn characters when
/// `columns` is 0 (not a terminal). A program may set a 4096-byte title
/// (TerminalState::kMaxTitle), which filled whole screens.
QString table(const QJsonArray &sessions, int columns)
{
    constexpr int kMinLastColumn = 10;
    constexpr int kMaxLastColumn = 200;
    QStringList ids;
    for (const QJsonValue &v : sessions)
        ids << v.toObject().value(QStringLiteral("id")).toString();
    const int idLen = uniquePrefixLength(ids);
    QList<QStringList> rows;
    rows << QStringList{QStringLiteral("ID"), QStringLiteral("STATE"), QStringLiteral("ATTACHED"),
                        QStringLiteral("VIEWERS"), QStringLiteral("EXPIRES"), QStringLiteral("SIZE"), QStringLiteral("PROGRAM"),
                        QStringLiteral("COMMAND/TITLE")};
    for (const QJsonValue &v : sessions) {
        const QJsonObject s = v.toObject();
        const bool attached = s.value(QStringLiteral("attached")).toBool();
        rows << QStringList{s.value(QStringLiteral("id")).toString().left(idLen), stateText(s),
                            attached ? QStringLiteral("yes (%1)").arg(s.value(QStringLiteral("viewer_kind")).toString())
                                     : QStringLiteral("no"),
                            QString::number(s.value(QStringLiteral("viewers")).toInt()), expiresText(s),
                            QStringLiteral("%1x%2").arg(s.value(QStringLiteral("cols")).toInt()).arg(s.value(QStringLiteral("rows")).toInt()),
                            programText(s), commandText(s)};
    }
    QVector<int> widths(rows.first().size(), 0);
    for (const QStringList &r : rows)
        for (int c = 0; c < r.size(); ++c)
            widths[c] = qMax(widths[c], int(r[c].size()));
    int lastLimit = kMaxLastColumn;
    if (columns > 0) {
        int used = 0;
        for (int c = 0; c + 1 < widths.size(); ++c)
            used += widths[c] + 2;
        lastLimit = qMax(kMinLastColumn, columns - used);
    }
    for (QStringList &r : rows)
        r.last() = ellipsize(r.last(), lastLimit);
    QString out;
    for (const QStringList &r : rows) {
        QString line;
        for (int c = 0; c < r.size(); ++c)
            line += c + 1 < r.size() ? r[c].leftJustified(widths[c] + 2) : r[c];
        out += line + QLatin1Char('\n');
    }
    return out;
}

/// Finds the session `prefix` names: an exact id, else the one id starting with it.
bool resolveId(const QJsonArray &sessions, const QString &prefix, QString *id, QString *error)
{
    QStringList matches;
    for (const QJsonValue &v : sessions) {
        const QString sid = v.toObject().value(QStringLiteral("id")).toString();
        if (sid == prefix) {
            *id = sid;
            return true;
        }
        if (!prefix.isEmpty() && sid.startsWith(prefix))
            matches << sid;
    }
    if (matches.size() == 1) {
        *id = matches.first();
        return true;
    }
    *error = matches.isEmpty() ? QStringLiteral("no session matches \"%1\" (see `tether list`)").arg(prefix)
                               : QStringLiteral("\"%1\" is ambiguous: %2").arg(prefix, matches.join(QStringLiteral(", ")));
    return false;
}

bool terminalSize(int *cols, int *rows)
{
    struct winsize ws {};
    for (int fd : {STDOUT_FILENO, STDIN_FILENO, STDERR_FILENO}) {
        if (::isatty(fd) && ::ioctl(fd, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0 && ws.ws_row > 0) {
            *cols = qMin(int(ws.ws_col), 1000);
            *rows = qMin(int(ws.ws_row), 1000);
            return true;
        }
    }
    return false;
}

/// Escape sequences that switch off what the terminal (as `terminal` saw
/// it) has on, then reset untracked state (colours, character set, insert
/// mode, autowrap, keypad, scroll margins, cursor shape), and pop the title
/// stack down to the title pushed at attach, so the shell gets a usable
/// terminal back after detach (and on SIGTSTP). Origin mode is reset only
/// when it is on (resetting it homes the cursor: then to the last row).
QByteArray leaveSequence(const TerminalState &terminal)
{
    const quint32 modes = terminal.modes();
    QByteArray s;
    auto off = [&](quint32 bit, const char *seq) {
        if (modes & bit)
            s += seq;
    };
    off(TerminalState::MouseX10, "\x1b[?9l");
    off(TerminalState::MouseNormal, "\x1b[?1000l");
    off(TerminalState::MouseButton, "\x1b[?1002l");
    off(TerminalState::MouseAny, "\x1b[?1003l");
    off(TerminalState::MouseUtf8, "\x1b[?1005l");
    off(TerminalState::MouseSgr, "\x1b[?1006l");
    off(TerminalState::MouseUrxvt, "\x1b[?1015l");
    off(TerminalState::FocusEvents, "\x1b[?1004l");
    off(TerminalState::BracketedPaste, "\x1b[?2004l");
    off(TerminalState::AppCursorKeys, "\x1b[?1l");
    if (modes & TerminalState::AltScreen)
        s += (modes & TerminalState::AltScreen1049) ? "\x1b[?1049l" : "\x1b[?1047l";
    off(TerminalState::CursorHidden, "\x1b[?25h");
    // State nobody tracks, reset to what a shell expects whatever it was (a
    // first-time user's detach left insert mode, keypad mode, margins 5..10
    // and the line-drawing set behind): colours, G0 = ASCII selected, insert
    // mode off, autowrap on, numeric keypad, and full-screen scroll margins
    // inside DECSC/DECRC (CSI r alone would move the cursor home).
    if (modes & TerminalState::OriginMode)
        s += "\x1b[?6l\x1b[999;1H";
    s += "\x1b[0m\x0f\x1b(B\x1b[4l\x1b[?7h\x1b>\x1b" "7\x1b[r\x1b" "8";
    // The cursor shape (DECSCUSR, e.g. vim's blinking bar "CSI 5 SP q"):
    // back to the terminal's default.
    s += "\x1b[0 q";
    // The window title from before the attachment (pushed at attach), under
    // whatever the program pushed and has not popped (vim pushes on start).
    for (int i = 0; i <= terminal.titleStackDepth(); ++i)
        s += "\x1b[23;0t";
    return s;
}

// --- tether attach ------------------------------------------------------------

/**
 * One `tether attach`: terminal in raw mode, stdin → AttachClient,
 * AttachClient → stdout queue, signals through SignalPipe.
 */
class TtyAttach : public QObject
{
public:
    static constexpr qint64 kHighWater = 4 * 1024 * 1024;
    static constexpr qint64 kLowWater = 256 * 1024;

    TtyAttach(const ServerEndpoint &ep, const QString &id, ViewerMode mode, int detachKey)
        : m_client(ep, id, mode)
        , m_id(id)
        , m_mode(mode)
        , m_detachKey(detachKey)
    {
    }

    ~TtyAttach() override
    {
        restoreTerminal();
        if (m_outFd >= 0 && m_outFd != STDOUT_FILENO)
            ::close(m_outFd);
    }

    int run()
    {
        if (!setup())
            return kExitError;
        connect(&m_client, &AttachClient::attached, this, [this](const QJsonObject &m, bool reset) {
            m_reconnectNotice.stop();
            if (reset) {
                // Clear the screen before the replay, as the dashboard does
                // (RIS, in order through the output queue; docs/dashboard.md).
                appendOutput(QByteArrayLiteral("\x1b" "c"));
            }
            const qint64 replay = qint64(m.value(QStringLiteral("prelude_bytes")).toDouble())
                + qint64(m.value(QStringLiteral("replay_bytes")).toDouble());
            m_gateInput = replay > 0;
            m_gateUntil = -1;
            m_gateFence = false;
            m_gateTail.clear();
            m_gateTimer.stop();
            sendSize();
        });
        connect(&m_client, &AttachClient::output, this, [this](const QByteArray &data, bool) { appendOutput(data); });
        connect(&m_client, &AttachClient::replayFinished, this, [this]() {
            if (m_gateInput && m_stdinIsTty && ::isatty(m_outFd)) {
                // A Device Status Report right after the replay: the
                // terminal answers it after every query in the replay, in
                // order, so input is gated exactly until that answer, however
                // slow the terminal or the link (ssh) is. A fixed delay let
                // late answers through.
                appendOutput(QByteArrayLiteral("\x1b[5n"));
                m_gateFence = true;
                m_gateTail.clear();
                m_gateTimer.start(kGateFallbackMs);
                return;
            }
            m_gateUntil = m_appended;
            checkGate();
        });
        connect(&m_client, &AttachClient::reconnecting, this, [this](int, int) {
            if (!m_reconnectNotice.isActive() && !m_noticeShown)
                m_reconnectNotice.start();
        });
        connect(&m_client, &AttachClient::finished, this, [this](AttachClient::End end, const QString &msg) {
            onFinished(end, msg);
        });
        m_reconnectNotice.setSingleShot(true);
        m_reconnectNotice.setInterval(1500);
        connect(&m_reconnectNotice, &QTimer::timeout, this, [this]() {
            if (m_client.isAttached())
                return;
            m_noticeShown = true;
            const QByteArray line = "\r\n[tether: reconnecting\xe2\x80\xa6]\r\n";
            [[maybe_unused]] const ssize_t n = ::write(STDERR_FILENO, line.constData(), size_t(line.size()));
        });
        connect(&m_client, &AttachClient::attached, this, [this]() { m_noticeShown = false; });
        m_gateTimer.setSingleShot(true);
        connect(&m_gateTimer, &QTimer::timeout, this, [this]() {
            m_gateInput = false; // a terminal that never answers DSR: stop waiting
            m_gateFence = false;
        });
        m_drainTimer.setSingleShot(true);
        connect(&m_drainTimer, &QTimer::timeout, this, [this]() { finalize(); });

        sendSize();
        m_client.open();
        QCoreApplication::exec();
        return m_status;
    }

private:
    bool setup()
    {
        // Output: our own non-blocking open file description of stdout, so
        // O_NONBLOCK never leaks into the description the shell (and our
        // stdin) share. Regular files never block: write them directly.
        struct stat st {};
        if (::fstat(STDOUT_FILENO, &st) == 0 && (S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode))) {
            m_outFd = ::open("/proc/self/fd/1", O_WRONLY | O_NOCTTY | O_CLOEXEC | O_NONBLOCK);
        }
        if (m_outFd < 0) {
            m_outFd = STDOUT_FILENO;
            if (!S_ISREG(st.st_mode))
                makeStdoutNonBlocking();
        }
        m_outNotifier = new QSocketNotifier(m_outFd, QSocketNotifier::Write, this);
        m_outNotifier->setEnabled(false);
        connect(m_outNotifier, &QSocketNotifier::activated, this, [this]() { flushOutput(); });

        // Signals first, raw mode second: a SIGTERM in between must still
        // find a handler that gets the terminal restored.
        m_signals = new SignalPipe({SIGTERM, SIGINT, SIGHUP, SIGWINCH, SIGTSTP}, this);
        if (!m_signals->isValid()) {
            std::fprintf(stderr, "tether attach: cannot handle signals: %s\n", qPrintable(m_signals->errorString()));
            return false;
        }
        connect(m_signals, &SignalPipe::received, this, [this](int sig) { onSignal(sig); });

        if (::isatty(STDIN_FILENO)) {
            enterRawMode(STDIN_FILENO);
            m_stdinIsTty = true;
        }
        pushTitle();
        std::atexit(restoreTerminal);
        m_inNotifier = new QSocketNotifier(STDIN_FILENO, QSocketNotifier::Read, this);
        connect(m_inNotifier, &QSocketNotifier::activated, this, [this]() { readInput(); });
        m_inBuffer.resize(64 * 1024);

        return true;
    }

    void onSignal(int sig)
    {
        if (sig == SIGWINCH) {
            sendSize();
        } else if (sig == SIGTSTP) {
            suspend();
        } else if (!m_ending) {
            // SIGHUP: the terminal is gone; SIGTERM/SIGINT: asked to stop.
            // Either way detach (the session lives on).
            m_signal = sig;
            m_ending = true;
            m_client.detach();
        }
    }

    /**
     * SIGTSTP (`kill -TSTP` from another shell: in raw mode Ctrl-Z is only a
     * byte for the session), handled as tmux's client does. Without it the
     * client stopped with the terminal raw and in the program's alternate
     * screen; after `fg` the terminal stayed cooked, nothing was redrawn,
     * keys echoed locally and Ctrl-\ SIGQUIT the client.
     *
     * Give the terminal back as on detach (leaveSequence, saved termios),
     * stop for real, and once continued (the stop returns here) take it
     * again (raw mode from the termios as it is now: the user may have run
     * stty meanwhile), send the window size and redraw the session from
     * scratch: AttachClient::reattach(), a reset replay into a cleared
     * screen, with the replay's input gate as on any attach. Output not yet
     * written is dropped: the replay redraws it.
     */
    void suspend()
    {
        if (m_exited)
            return; // leaving anyway: the terminal is (being) restored
        if (!m_ending) {
            m_queue.clear();
            m_head = 0;
            m_queued = 0;
            m_appended = m_written; // nothing of it will ever be written
            m_outNotifier->setEnabled(false);
            m_drainTimer.stop();
        }
        const bool wasRaw = g_rawActive;
        if (wasRaw && !m_outputDead) {
            const QByteArray leave = leaveSequence(m_terminal);
            [[maybe_unused]] const ssize_t n = ::write(m_outFd, leave.constData(), size_t(leave.size()));
        }
        restoreTerminal();

        // Stop with SIGTSTP (the shell then reports the job "Stopped"), but
        // the kernel discards a default-action SIGTSTP in an orphaned process
        // group (POSIX: nobody there could continue it), and our parent not
        // being a job-control shell of our session is the common sign of
        // one: then SIGSTOP, which always stops.
        const pid_t parent = ::getppid();
        const bool shellParent = parent > 1 && ::getsid(parent) == ::getsid(0) && ::getpgid(parent) != ::getpgrp();
        struct sigaction dfl {}, ours {};
        dfl.sa_handler = SIG_DFL;
        sigemptyset(&dfl.sa_mask);
        if (shellParent && ::sigaction(SIGTSTP, &dfl, &ours) == 0) {
            ::raise(SIGTSTP); // returns once continued (SIGCONT)
            ::sigaction(SIGTSTP, &ours, nullptr);
        } else {
            ::raise(SIGSTOP);
        }

        // Continued (fg; after bg, tcsetattr stops us with SIGTTOU until fg).
        if (m_outFd == STDOUT_FILENO)
            makeStdoutNonBlocking();
        if (wasRaw)
            enterRawMode(g_ttyFd); // re-read: the user may have run stty meanwhile
        pushTitle();
        if (m_ending)
            return;
        // Input is gated from now until the new replay's DSR is answered.
        m_gateInput = true;
        m_gateUntil = -1;
        m_gateFence = false;
        m_gateTail.clear();
        m_gateTimer.stop();
        sendSize();
        m_client.reattach();
    }

    void sendSize()
    {
        int cols = 0, rows = 0;
        if (m_mode == ViewerMode::Control && terminalSize(&cols, &rows))
            m_client.setWindowSize(cols, rows);
    }

    /// Saves the terminal's window title on its title stack (XTWINOPS 22;0;
    /// the leave sequence pops it with 23;0), so the title a program sets
    /// does not outlive the attachment. Terminals without a stack ignore it.
    void pushTitle()
    {
        if (m_outFd < 0 || !::isatty(m_outFd))
            return;
        static const char push[] = "\x1b[22;0t";
        [[maybe_unused]] const ssize_t n = ::write(m_outFd, push, sizeof push - 1);
    }

    void readInput()
    {
        const ssize_t n = ::read(STDIN_FILENO, m_inBuffer.data(), size_t(m_inBuffer.size()));
        if (n < 0 && (errno == EAGAIN || errno == EINTR))
            return;
        if (m_fencing) {
            // Leaving: swallow the terminal's late answers until the answer to
            // our own DSR (which comes after them, in order) arrives.
            if (n <= 0) {
                finishExit();
                return;
            }
            m_fenceInput += QByteArray(m_inBuffer.constData(), int(n));
            if (m_fenceInput.contains("\x1b[0n") || m_fenceInput.contains("\x1b[3n"))
                finishExit();
            else
                m_fenceInput = m_fenceInput.right(8); // bounded: only a split answer matters
            return;
        }
        if (n <= 0) {
            // End of input: a hung-up terminal (EIO or 0) ends us like SIGHUP;
            // a pipe or file only stops feeding input.
            m_inNotifier->setEnabled(false);
            if (m_stdinIsTty && !m_ending) {
                m_signal = SIGHUP;
                m_ending = true;
                m_client.detach();
            }
            return;
        }
        if (m_ending)
            return;
        const char *data = m_inBuffer.constData();
        qsizetype avail = n;
        if (m_gateInput && m_gateFence) {
            // Everything up to the answer to our DSR answers the replay's
            // queries: dropped. What follows it is typed.
            const QByteArray seen = m_gateTail + QByteArray::fromRawData(data, int(avail));
            int hit = seen.indexOf("\x1b[0n");
            if (hit < 0)
                hit = seen.indexOf("\x1b[3n");
            if (hit >= 0) {
                const qsizetype skip = qMax<qsizetype>(0, hit + 4 - m_gateTail.size());
                data += skip;
                avail -= skip;
                m_gateInput = false;
                m_gateFence = false;
                m_gateTimer.stop();
                m_gateTail.clear();
            } else {
                m_gateTail = seen.right(3); // an answer split between reads
            }
        }
        qsizetype len = avail;
        bool detachNow = false;
        if (m_detachKey >= 0) {
            const void *hit = std::memchr(data, m_detachKey, size_t(avail));
            if (hit) {
                len = static_cast<const char *>(hit) - data;
                detachNow = true;
            }
        }
        // While a replay is being written and until the terminal has answered
        // the DSR after it, input that starts with ESC is dropped: the
        // terminal's automatic answers to queries in the replay (CSI 6 n →
        // ESC [ r ; c R, CSI c → ESC [ ? ... c) must not reach the program
        // (microsoft/vscode#123803). Plain typing passes.
        const bool answerLike = len > 0 && data[0] == '\x1b';
        if (len > 0 && !(m_gateInput && answerLike))
            m_client.sendInput(data, len);
        if (detachNow) {
            m_ending = true;
            m_client.detach();
        }
    }

    void appendOutput(const QByteArray &data)
    {
        if (data.isEmpty() || m_outputDead)
            return;
        m_terminal.feed(data);
        m_appended += data.size();
        if (m_queue.empty()) {
            // Fast path: straight to the terminal; queue only what it did not take.
            const ssize_t n = ::write(m_outFd, data.constData(), size_t(data.size()));
            if (n == data.size()) {
                m_written += n;
                checkGate();
                return;
            }
            if (n < 0 && errno != EAGAIN && errno != EINTR) {
                outputFailed();
                return;
            }
            m_queue.push_back(data);
            m_head = n > 0 ? n : 0;
            m_written += m_head;
            m_queued = data.size() - m_head;
        } else {
            m_queue.push_back(data); // shares the QByteArray: no copy
            m_queued += data.size();
        }
        m_outNotifier->setEnabled(true);
        if (m_queued > kHighWater && !m_client.isPaused() && !m_ending)
            m_client.setPaused(true); // backpressure: let go, resume from the offset later
    }

    void flushOutput()
    {
        while (!m_queue.empty()) {
            const QByteArray &front = m_queue.front();
            const ssize_t n = ::write(m_outFd, front.constData() + m_head, size_t(front.size() - m_head));
            if (n < 0) {
                if (errno == EAGAIN || errno == EINTR)
                    break;
                outputFailed();
                return;
            }
            m_head += n;
            m_written += n;
            m_queued -= n;
            if (m_head == front.size()) {
                m_queue.pop_front();
                m_head = 0;
            }
        }
        m_outNotifier->setEnabled(!m_queue.empty());
        checkGate();
        if (m_queued < kLowWater && m_client.isPaused() && !m_ending)
            m_client.setPaused(false);
        if (m_queue.empty() && m_finishedEnd)
            finalize();
    }

    void outputFailed()
    {
        // EPIPE/EIO: nobody reads our output any more; detach quietly.
        m_outputDead = true;
        m_queue.clear();
        m_queued = 0;
        m_outNotifier->setEnabled(false);
        if (!m_ending) {
            m_ending = true;
            m_signal = SIGHUP;
            m_client.detach();
        } else if (m_finishedEnd) {
            finalize();
        }
    }

    void checkGate()
    {
        if (m_gateInput && m_gateUntil >= 0 && m_written >= m_gateUntil && !m_gateTimer.isActive())
            m_gateTimer.start(100); // the terminal answers just after parsing
    }

    void onFinished(AttachClient::End end, const QString &message)
    {
        m_ending = true;
        m_finishedEnd = true;
        m_message = message;
        switch (end) {
        case AttachClient::End::Detached:
        case AttachClient::End::Exited:
            m_status = kExitOk;
            break;
        case AttachClient::End::TakenOver:
            m_status = kExitTakenOver;
            break;
        case AttachClient::End::NotFound:
            m_status = kExitNotFound;
            break;
        case AttachClient::End::SessionKilled:
        case AttachClient::End::ServerShutdown:
            m_status = kExitKilled;
            break;
        default:
            m_status = kExitError;
            break;
        }
        if (m_signal) {
            m_status = 128 + m_signal;
            if (m_signal == SIGHUP)
                m_message.clear(); // no terminal to tell
        }
        m_inNotifier->setEnabled(false);
        if (end == AttachClient::End::Detached) {
            // The user wants out now: what the terminal has not taken is dropped.
            m_queue.clear();
            m_queued = 0;
        }
        if (m_queue.empty()) {
            finalize();
        } else {
            // Let the last output (before "[process exited ...]") reach the
            // terminal, but never wait on a terminal that takes nothing.
            m_drainTimer.start(2000);
        }
    }

    void finalize()
    {
        if (m_finalized)
            return;
        m_finalized = true;
        m_drainTimer.stop();
        m_outNotifier->setEnabled(false);
        if (!m_outputDead) {
            const QByteArray leave = leaveSequence(m_terminal);
            if (!leave.isEmpty())
                [[maybe_unused]] const ssize_t n = ::write(m_outFd, leave.constData(), size_t(leave.size()));
        }
        if (m_stdinIsTty && !m_outputDead && m_gateInput) {
            // A replay was just written (attaching to an exited session ends
            // right after it): the terminal may still be answering queries in
            // it (cursor position, device attributes, colours). Once we are
            // gone those answers would land at the shell prompt as garbage
            // ("2RR84;0;0c", found by a first-time user). So ask for a Device
            // Status Report and discard input until its answer, which the
            // terminal sends after every earlier one; bounded for terminals
            // that do not answer.
            // The DSR sent after the replay may still be unanswered: wait
            // for that answer rather than ask again (the second answer would
            // come after we are gone, at the shell prompt).
            static const char dsr[] = "\x1b[5n";
            const bool pending = m_gateFence;
            if (pending)
                m_fenceInput = m_gateTail;
            if (pending || ::write(m_outFd, dsr, sizeof dsr - 1) == qsizetype(sizeof dsr - 1)) {
                m_fencing = true;
                m_inNotifier->setEnabled(true);
                m_fenceTimer.setSingleShot(true);
                connect(&m_fenceTimer, &QTimer::timeout, this, [this]() { finishExit(); });
                m_fenceTimer.start(500);
                return;
            }
        }
        finishExit();
    }

    void finishExit()
    {
        if (m_exited)
            return;
        m_exited = true;
        m_fencing = false;
        m_fenceTimer.stop();
        m_inNotifier->setEnabled(false);
        if (m_stdinIsTty)
            ::tcflush(STDIN_FILENO, TCIFLUSH); // anything still unread is not the user's
        restoreTerminal();
        if (!m_message.isEmpty())
            printErr((::isatty(STDERR_FILENO) ? QStringLiteral("\n") : QString()) + m_message);
        QCoreApplication::exit(m_status);
    }

    AttachClient m_client;
    QString m_id;
    ViewerMode m_mode;
    int m_detachKey;
    int m_outFd = -1;
    QSocketNotifier *m_outNotifier = nullptr;
    QSocketNotifier *m_inNotifier = nullptr;
    SignalPipe *m_signals = nullptr;
    QByteArray m_inBuffer;
    std::deque<QByteArray> m_queue;
    qsizetype m_head = 0;      ///< bytes of m_queue.front() already written
    qint64 m_queued = 0;       ///< bytes in m_queue not yet written
    qint64 m_appended = 0;     ///< bytes ever given to the output path
    qint64 m_written = 0;      ///< bytes ever written to the terminal
    qint64 m_gateUntil = -1;   ///< input opens once m_written reaches this
    TerminalState m_terminal;
    QTimer m_gateTimer;
    static constexpr int kGateFallbackMs = 3000; ///< for a terminal that never answers DSR
    bool m_gateFence = false;   ///< our DSR after the replay awaits its answer
    QByteArray m_gateTail;      ///< last bytes of input while waiting (split answer)
    QTimer m_drainTimer;
    QTimer m_reconnectNotice;
    QTimer m_fenceTimer;
    QByteArray m_fenceInput;
    bool m_fencing = false;
    bool m_exited = false;
    bool m_gateInput = true;
    bool m_noticeShown = false;
    bool m_stdinIsTty = false;
    bool m_ending = false;
    bool m_finishedEnd = false;
    bool m_finalized = false;
    bool m_outputDead = false;
    int m_signal = 0;
    int m_status = kExitError;
    QString m_message;
};

// --- command line --------------------------------------------------------------

const char kExitStatusHelp[] =
    "Exit status: 0 detached (detach key) or the process exited; 1 Tether not running,\n"
    "connection lost or another error; 2 usage error; 3 taken over by another viewer;\n"
    "4 session not found or expired; 5 session killed or server shutting down;\n"
    "128+N ended by signal N (SIGHUP, SIGINT, SIGTERM).";

struct Common {
    QCommandLineOption url{QStringLiteral("url"),
                           QStringLiteral("Server address (default: TETHER_URL, else the runtime file)."),
                           QStringLiteral("URL")};
    QCommandLineOption key{QStringLiteral("key"),
                           QStringLiteral("Access key (default: TETHER_KEY, else the runtime file)."),
                           QStringLiteral("KEY")};
};

/// Session ids are base64url and may start with '-' ("-x3Fq..."): such an
/// argument that is not one of the command's options is an ID, not an
/// unknown option. Moves it after a "--" so QCommandLineParser takes it as
/// positional. `valueOptions` take a value (the next argument unless
/// written "--name=value").
QStringList idsAsPositional(const QStringList &args, const QStringList &flags, const QStringList &valueOptions)
{
    QStringList out{args.value(0)};
    QStringList ids;
    for (int i = 1; i < args.size(); ++i) {
        const QString &a = args.at(i);
        if (a == QLatin1String("--")) {
            ids += args.mid(i + 1);
            break;
        }
        const QString name = a.section(QLatin1Char('='), 0, 0);
        if (!a.startsWith(QLatin1Char('-')) || a.size() < 2 || flags.contains(name) || valueOptions.contains(name)) {
            out << a;
            if (valueOptions.contains(a) && i + 1 < args.size())
                out << args.at(++i);
            continue;
        }
        ids << a;
    }
    if (!ids.isEmpty())
        out << QStringLiteral("--") << ids;
    return out;
}

} // namespace

namespace {

/// Parses `args` (argv without the subcommand); shows help and exits on
/// -h, --help or --help-all (helpRequested()).
bool parse(QCommandLineParser &parser, const Common &common, const QString &command, const QStringList &args,
           int *status)
{
    parser.addOptions({common.url, common.key});
    parser.addHelpOption();
    if (!parser.parse(args)) {
        *status = fail(command, parser.errorText() + QStringLiteral(" (see --help)"), kExitUsage);
        return false;
    }
    if (helpRequested(parser)) {
        std::fputs(qPrintable(commandHelp(parser, command)), stdout);
        std::fflush(stdout);
        *status = kExitOk;
        return false;
    }
    return true;
}

bool endpoint(const QCommandLineParser &parser, const Common &common, const QString &command,
              ServerEndpoint *ep, int *status)
{
    QString error;
    if (!ServerEndpoint::resolve(parser.value(common.url), parser.value(common.key), ep, &error)) {
        // No runtime file (and no --url/--key): not running.
        if (parser.value(common.url).isEmpty() && qEnvironmentVariable("TETHER_URL").isEmpty())
            printErr(QString::fromLatin1(kNotRunning));
        else
            fail(command, error);
        *status = kExitError;
        return false;
    }
    return true;
}

/// Reports a failed API call and returns the exit status.
int apiFailure(const QString &command, const ApiReply &r)
{
    if (r.connectionRefused) {
        printErr(QString::fromLatin1(kNotRunning));
        return kExitError;
    }
    if (r.status == 401)
        return fail(command, QStringLiteral("the server refused the access key (is --key or TETHER_KEY from another server?)"));
    return fail(command, r.errorText());
}

/// Attaching needs a terminal on standard input AND standard output: kExitOk,
/// else the usage error printed for `command` and kExitUsage.
int checkTerminal(const QString &command)
{
    // Raw mode, the detach key and the window size need a terminal; with a
    // pipe or /dev/null the attachment could never be left (found by a
    // first-time user: `tether attach ID </dev/null` hung).
    if (!::isatty(STDIN_FILENO))
        return fail(command, QStringLiteral("standard input is not a terminal (use `tether list`, or the dashboard)"),
                    kExitUsage);
    // `tether attach ID >file` attached blind: nothing on screen, keys sent
    // to the session, its escape sequences written into the file, exit 0.
    if (!::isatty(STDOUT_FILENO))
        return fail(command,
                    QStringLiteral("standard output is not a terminal (attach draws the session's screen there; "
                                   "use `tether list`, or the dashboard)"),
                    kExitUsage);
    return kExitOk;
}

int runAttach(const ServerEndpoint &ep, const QString &id, ViewerMode mode, int detachKey)
{
    const int status = checkTerminal(QStringLiteral("attach"));
    if (status != kExitOk)
        return status;
    TtyAttach a(ep, id, mode, detachKey);
    return a.run();
}

int listCommand(const QStringList &args)
{
    const QString cmd = QStringLiteral("list");
    QCommandLineParser parser;
    Common common;
    parser.setApplicationDescription(QStringLiteral("Lists the sessions of the running Tether server."));
    const QCommandLineOption json(QStringLiteral("json"), QStringLiteral("Print the API's JSON ({\"sessions\": [...]})."));
    parser.addOption(json);
    int status = kExitOk;
    ServerEndpoint ep;
    if (!parse(parser, common, cmd, args, &status) || !endpoint(parser, common, cmd, &ep, &status))
        return status;
    if (!parser.positionalArguments().isEmpty())
        return fail(cmd, QStringLiteral("unexpected argument \"%1\"").arg(parser.positionalArguments().first()), kExitUsage);
    ApiClient api(ep);
    return runAsync([&](std::function<void(int)> done) {
        api.get(QStringLiteral("api/sessions"), [&, done](const ApiReply &r) {
            if (r.status != 200)
                return done(apiFailure(cmd, r));
            if (parser.isSet(json)) {
                QByteArray body = r.body;
                if (!body.endsWith('\n'))
                    body += '\n';
                std::fwrite(body.constData(), 1, size_t(body.size()), stdout);
            } else {
                const QJsonArray sessions = r.json().value(QStringLiteral("sessions")).toArray();
                if (sessions.isEmpty())
                    std::fputs("no sessions\n", stdout);
                else
                    std::fputs(table(sessions, terminalColumns(STDOUT_FILENO)).toUtf8().constData(), stdout);
            }
            std::fflush(stdout);
            done(kExitOk);
        });
    });
}

int killCommand(const QStringList &args)
{
    const QString cmd = QStringLiteral("kill");
    QCommandLineParser parser;
    Common common;
    parser.setApplicationDescription(QStringLiteral(
        "Ends a session: its processes get SIGHUP, then SIGTERM, then SIGKILL.\n"
        "ID may be any unique prefix of a session id.\n\n"
        "Exit status: 0 killed; 1 Tether not running or another error; 2 usage error;\n"
        "4 no session matches ID (or it is ambiguous)."));
    parser.addPositionalArgument(QStringLiteral("ID"), QStringLiteral("The session (or a unique prefix of its id)."));
    int status = kExitOk;
    ServerEndpoint ep;
    const QStringList flags{QStringLiteral("-h"), QStringLiteral("--help"), QStringLiteral("-?"), QStringLiteral("--help-all")};
    const QStringList values{QStringLiteral("--url"), QStringLiteral("--key")};
    if (!parse(parser, common, cmd, idsAsPositional(args, flags, values), &status))
        return status;
    if (parser.positionalArguments().size() != 1)
        return fail(cmd, QStringLiteral("expected one session ID (see --help)"), kExitUsage);
    if (!endpoint(parser, common, cmd, &ep, &status))
        return status;
    const QString prefix = parser.positionalArguments().first();
    ApiClient api(ep);
    return runAsync([&](std::function<void(int)> done) {
        api.get(QStringLiteral("api/sessions"), [&, done](const ApiReply &r) {
            if (r.status != 200)
                return done(apiFailure(cmd, r));
            QString id, error;
            if (!resolveId(r.json().value(QStringLiteral("sessions")).toArray(), prefix, &id, &error))
                return done(fail(cmd, error, kExitNotFound));
            api.deleteResource(QStringLiteral("api/sessions/") + id, [&, done](const ApiReply &d) {
                if (d.status != 204)
                    return done(apiFailure(cmd, d));
                done(kExitOk);
            });
        });
    });
}

/// The start of a command that takes options but no argument: parses
/// `args` (help exits), refuses an argument (usage error) and finds the
/// server. False with *status when the command ends here.
bool setUpWithoutArguments(QCommandLineParser &parser, const Common &common, const QString &command,
                           const QStringList &args, ServerEndpoint *ep, int *status)
{
    if (!parse(parser, common, command, args, status))
        return false;
    if (!parser.positionalArguments().isEmpty()) {
        *status = fail(command, QStringLiteral("unexpected argument %1 (see --help)").arg(parser.positionalArguments().first()),
                       kExitUsage);
        return false;
    }
    return endpoint(parser, common, command, ep, status);
}

int keyCommand(const QStringList &args)
{
    const QString cmd = QStringLiteral("key");
    Common common;
    QCommandLineParser parser;
    parser.setApplicationDescription(QStringLiteral(
        "Print the dashboard link with Tether's access key (the key is kept across restarts).\n"
        "With --rotate, make a new key: the old one stops working at once, and open dashboards\n"
        "say so; the new link is printed."));
    const QCommandLineOption rotate(QStringLiteral("rotate"), QStringLiteral("Make a new access key and print its link."));
    parser.addOption(rotate);
    int status = kExitOk;
    ServerEndpoint ep;
    if (!setUpWithoutArguments(parser, common, cmd, args, &ep, &status))
        return status;
    ApiClient api(ep);
    auto print = [](const QString &url) {
        std::fputs(qPrintable(url + QLatin1Char('\n')), stdout);
        std::fflush(stdout);
    };
    return runAsync([&](std::function<void(int)> done) {
        if (parser.isSet(rotate)) {
            api.post(QStringLiteral("api/key"), QByteArray(), [&, done](const ApiReply &r) {
                if (r.status != 200)
                    return done(apiFailure(cmd, r));
                print(r.json().value(QStringLiteral("url")).toString());
                done(kExitOk);
            });
            return;
        }
        // Ask first, so that the link printed is one the server accepts.
        api.get(QStringLiteral("api/sessions"), [&, done](const ApiReply &r) {
            if (r.status != 200)
                return done(apiFailure(cmd, r));
            QUrl url = ep.url;
            url.setQuery(QStringLiteral("key=") + ep.key);
            print(url.toString());
            done(kExitOk);
        });
    });
}

int restartCommand(const QStringList &args)
{
    const QString cmd = QStringLiteral("restart");
    Common common;
    QCommandLineParser parser;
    parser.setApplicationDescription(QStringLiteral(
        "Restart Tether in place: the running server executes its binary again (a new version after an\n"
        "upgrade) in the same process, and keeps every session, its processes and its output; attached\n"
        "viewers reconnect and miss nothing. The same as SIGUSR2 to the server.\n\n"
        "Exit status: 0 restarted; 1 Tether not running, the restart refused or failed (the reason is\n"
        "printed; the server carries on as it was), or no new process image within 15 s; 2 usage error."));
    int status = kExitOk;
    ServerEndpoint ep;
    if (!setUpWithoutArguments(parser, common, cmd, args, &ep, &status))
        return status;
    ApiClient api(ep);
    QString before;
    QTimer poll;
    poll.setSingleShot(true);
    poll.setInterval(100);
    QElapsedTimer waited;
    return runAsync([&](std::function<void(int)> done) {
        // Whether the restart happened shows in GET /api/restart: a new
        // process image has a new "instance"; one that failed says why in
        // "last_error" and carries on (protocol.md, "Restart in place").
        QObject::connect(&poll, &QTimer::timeout, qApp, [&, done]() {
            api.get(QStringLiteral("api/restart"), [&, done](const ApiReply &r) {
                const QJsonObject o = r.json();
                const QString instance = o.value(QStringLiteral("instance")).toString();
                if (r.status == 200 && !instance.isEmpty() && instance != before) {
                    std::printf("Tether restarted in place (pid %lld)\n", qint64(o.value(QStringLiteral("pid")).toDouble()));
                    std::fflush(stdout);
                    return done(kExitOk);
                }
                if (r.status == 200 && !o.value(QStringLiteral("restarting")).toBool()
                    && o.value(QStringLiteral("last_error")).isString())
                    return done(fail(cmd, QStringLiteral("the restart failed, Tether carries on: %1")
                                              .arg(o.value(QStringLiteral("last_error")).toString())));
                if (waited.hasExpired(15000))
                    return done(fail(cmd, QStringLiteral("no new Tether process answered within 15 s")));
                poll.start();
            });
        });
        api.post(QStringLiteral("api/restart"), QByteArray(), [&, done](const ApiReply &r) {
            if (r.status != 202)
                return done(apiFailure(cmd, r));
            before = r.json().value(QStringLiteral("instance")).toString();
            waited.start();
            poll.start();
        });
    });
}

QCommandLineOption detachKeyOption()
{
    return QCommandLineOption(QStringLiteral("detach-key"),
                              QStringLiteral("Key that detaches: ^X for Ctrl-X, or none (default ^\\, Ctrl-\\, as dtach and "
                                             "abduco). Not ^[ (ESC starts every arrow and function key), nor ^M ^J ^I "
                                             "^H ^? (Enter, newline, Tab, Backspace)."),
                              QStringLiteral("KEY"), QStringLiteral("^\\"));
}

int newCommand(const QStringList &args)
{
    const QString cmd = QStringLiteral("new");
    QCommandLineParser parser;
    Common common;
    parser.setApplicationDescription(QStringLiteral(
        "Starts a session and prints its id. Without a command: the server's default\n"
        "(your login shell). The command runs directly, without a shell: put it after --.\n"
        "\n") + QString::fromLatin1(kExitStatusHelp) + QStringLiteral(" (with --attach)"));
    parser.setOptionsAfterPositionalArgumentsMode(QCommandLineParser::ParseAsPositionalArguments);
    const QCommandLineOption cwd(QStringLiteral("cwd"), QStringLiteral("Working directory (default: the current one, as tmux does)."),
                                 QStringLiteral("DIR"));
    const QCommandLineOption attach(QStringLiteral("attach"), QStringLiteral("Attach to it at once (like tether attach)."));
    const QCommandLineOption detachKey = detachKeyOption();
    parser.addOptions({cwd, attach, detachKey});
    parser.addPositionalArgument(QStringLiteral("-- CMD ARGS..."), QStringLiteral("Command to run."));
    int status = kExitOk;
    ServerEndpoint ep;
    if (!parse(parser, common, cmd, args, &status))
        return status;
    int key = -1;
    QString why;
    if (!parseDetachKey(parser.value(detachKey), &key, &why))
        return fail(cmd, QStringLiteral("bad --detach-key \"%1\" (%2)").arg(parser.value(detachKey), why), kExitUsage);
    // Before any API call: `tether new --attach </dev/null` created the
    // session (and, when full, ended the one detached longest) and only then
    // failed for want of a terminal.
    if (parser.isSet(attach) && (status = checkTerminal(cmd)) != kExitOk)
        return status;
    if (!endpoint(parser, common, cmd, &ep, &status))
        return status;
    QJsonObject body;
    const QStringList command = parser.positionalArguments();
    if (!command.isEmpty())
        body.insert(QStringLiteral("command"), QJsonArray::fromStringList(command));
    // Like `tmux new-session`: the session starts where you are, not in the
    // server's directory (your home), unless --cwd says otherwise.
    body.insert(QStringLiteral("cwd"), QDir(parser.isSet(cwd) ? parser.value(cwd) : QDir::currentPath()).absolutePath());
    int cols = 0, rows = 0;
    if (terminalSize(&cols, &rows)) {
        body.insert(QStringLiteral("cols"), cols);
        body.insert(QStringLiteral("rows"), rows);
    }
    ApiClient api(ep);
    QString id;
    status = runAsync([&](std::function<void(int)> done) {
        api.post(QStringLiteral("api/sessions"), QJsonDocument(body).toJson(QJsonDocument::Compact),
                 [&, done](const ApiReply &r) {
                     if (r.status != 201)
                         return done(apiFailure(cmd, r));
                     id = r.json().value(QStringLiteral("id")).toString();
                     std::fprintf(stdout, "%s\n", qPrintable(id));
                     std::fflush(stdout);
                     // The list was full: say which session made room.
                     const QString evicted = r.json().value(QStringLiteral("evicted")).toString();
                     if (!evicted.isEmpty())
                         printErr(QStringLiteral("tether new: the session limit was reached: session %1 "
                                                 "(exited, detached longest) was ended to make room")
                                      .arg(evicted));
                     done(kExitOk);
                 });
    });
    if (status != kExitOk || !parser.isSet(attach))
        return status;
    return runAttach(ep, id, ViewerMode::Control, key);
}

int attachCommand(const QStringList &args)
{
    const QString cmd = QStringLiteral("attach");
    QCommandLineParser parser;
    Common common;
    parser.setApplicationDescription(QStringLiteral(
        "Attaches this terminal to a session, like tmux attach. Leave with the detach key\n"
        "(Ctrl-\\ unless --detach-key): the session lives on. Without ID: the one detached\n"
        "running session. After a lost connection it reconnects and resumes where it was\n"
        "(nothing lost, nothing twice).\n"
        "\n") + QString::fromLatin1(kExitStatusHelp));
    const QCommandLineOption watch(QStringLiteral("watch"), QStringLiteral("Watch only: show output, send nothing, never take over."));
    const QCommandLineOption detachKey = detachKeyOption();
    parser.addOptions({watch, detachKey});
    parser.addPositionalArgument(QStringLiteral("ID"), QStringLiteral("The session (or a unique prefix of its id)."),
                                 QStringLiteral("[ID]"));
    int status = kExitOk;
    ServerEndpoint ep;
    const QStringList flags{QStringLiteral("-h"), QStringLiteral("--help"), QStringLiteral("-?"),
                            QStringLiteral("--help-all"), QStringLiteral("--watch")};
    const QStringList values{QStringLiteral("--url"), QStringLiteral("--key"), QStringLiteral("--detach-key")};
    if (!parse(parser, common, cmd, idsAsPositional(args, flags, values), &status))
        return status;
    if (parser.positionalArguments().size() > 1)
        return fail(cmd, QStringLiteral("expected at most one session ID (see --help)"), kExitUsage);
    if (parser.positionalArguments().size() == 1 && parser.positionalArguments().first().isEmpty())
        return fail(cmd, QStringLiteral("empty session ID (omit it to pick the one detached session)"), kExitUsage);
    int key = -1;
    QString why;
    if (!parseDetachKey(parser.value(detachKey), &key, &why))
        return fail(cmd, QStringLiteral("bad --detach-key \"%1\" (%2)").arg(parser.value(detachKey), why), kExitUsage);
    if (!endpoint(parser, common, cmd, &ep, &status))
        return status;
    const QString prefix = parser.positionalArguments().value(0);
    ApiClient api(ep);
    QString id;
    status = runAsync([&](std::function<void(int)> done) {
        api.get(QStringLiteral("api/sessions"), [&, done](const ApiReply &r) {
            if (r.status != 200)
                return done(apiFailure(cmd, r));
            const QJsonArray sessions = r.json().value(QStringLiteral("sessions")).toArray();
            QString error;
            if (!prefix.isEmpty()) {
                if (!resolveId(sessions, prefix, &id, &error))
                    return done(fail(cmd, error, kExitNotFound));
                return done(kExitOk);
            }
            QJsonArray detached;
            for (const QJsonValue &v : sessions) {
                const QJsonObject s = v.toObject();
                if (s.value(QStringLiteral("state")).toString() == QLatin1String("running")
                    && !s.value(QStringLiteral("attached")).toBool())
                    detached.append(s);
            }
            if (detached.size() == 1) {
                id = detached.first().toObject().value(QStringLiteral("id")).toString();
                return done(kExitOk);
            }
            if (sessions.isEmpty())
                return done(fail(cmd, QStringLiteral("no sessions (start one with `tether new --attach`)")));
            fail(cmd, detached.isEmpty() ? QStringLiteral("no detached running session; name one:")
                                         : QStringLiteral("%1 detached sessions; name one:").arg(detached.size()));
            std::fputs(table(detached.isEmpty() ? sessions : detached, terminalColumns(STDERR_FILENO)).toUtf8().constData(), stderr);
            done(kExitUsage);
        });
    });
    if (status != kExitOk)
        return status;
    return runAttach(ep, id, parser.isSet(watch) ? ViewerMode::Watch : ViewerMode::Control, key);
}

} // namespace

bool isClientCommand(const char *arg)
{
    if (!arg)
        return false;
    for (const char *c : {"attach", "list", "new", "kill", "key", "restart"}) {
        if (std::strcmp(arg, c) == 0)
            return true;
    }
    return false;
}

bool parseDetachKey(const QString &text, int *key, QString *why)
{
    if (why)
        why->clear();
    if (text.compare(QLatin1String("none"), Qt::CaseInsensitive) == 0) {
        *key = -1;
        return true;
    }
    int k = -1;
    if (text.size() == 2 && text.at(0) == QLatin1Char('^')) {
        const char c = text.at(1).toUpper().toLatin1();
        if (c == '?')
            k = 0x7f;
        else if (c >= '@' && c <= '_')
            k = c & 0x1f;
    } else if (text.size() == 1 && (text.at(0).unicode() < 0x20 || text.at(0).unicode() == 0x7f)) {
        // A literal control character is fine; a printable one would detach
        // on ordinary typing ("--detach-key ^" made every '^' detach).
        k = text.at(0).toLatin1();
    }
    if (k < 0) {
        if (why)
            *why = QStringLiteral("use ^X or none");
        return false;
    }
    // Keys that terminals send inside other keys or as everyday editing
    // keys: with ESC, every arrow and function key detached.
    const char *reason = nullptr;
    switch (k) {
    case 0x1b: reason = "ESC starts every arrow and function key"; break;
    case 0x0d: reason = "^M is the Enter key"; break;
    case 0x0a: reason = "^J is newline, sent by Enter in some terminals and programs"; break;
    case 0x09: reason = "^I is the Tab key"; break;
    case 0x08: reason = "^H is Backspace in many terminals"; break;
    case 0x7f: reason = "^? (DEL) is Backspace in most terminals"; break;
    default: break;
    }
    if (reason) {
        if (why)
            *why = QString::fromLatin1(reason) + QStringLiteral("; pick another ^X or none");
        return false;
    }
    *key = k;
    return true;
}

int clientMain(int argc, char **argv)
{
    QCoreApplication app(argc, argv);
    QCoreApplication::setApplicationName(QStringLiteral("tether"));
    QCoreApplication::setApplicationVersion(QStringLiteral(TETHER_VERSION));
    QStringList args = QCoreApplication::arguments();
    const QString command = args.value(1);
    // "tether attach" in the usage line and errors.
    args[0] = args.value(0) + QLatin1Char(' ') + command;
    args.removeAt(1);
    if (command == QLatin1String("list"))
        return listCommand(args);
    if (command == QLatin1String("kill"))
        return killCommand(args);
    if (command == QLatin1String("new"))
        return newCommand(args);
    if (command == QLatin1String("attach"))
        return attachCommand(args);
    if (command == QLatin1String("key"))
        return keyCommand(args);
    if (command == QLatin1String("restart"))
        return restartCommand(args);
    return fail(command, QStringLiteral("unknown command"), kExitUsage);
}

} // namespace Tether
