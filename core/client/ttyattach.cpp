// SPDX-License-Identifier: GPL-2.0-or-later
#include "ttyattach.h"
#include "displaytext.h"
#include "leavesequence.h"
#include "signalpipe.h"
#include "writequeue.h"

#include <QCoreApplication>
#include <QSocketNotifier>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <fcntl.h>
#include <sys/stat.h>
#include <termios.h>

namespace Tether {

TtyAttach::TtyAttach(const ServerEndpoint &endpoint, const QString &id, ViewerMode mode, int detachKey,
                     int inFd, int outFd, QObject *parent)
    : QObject(parent)
    , m_client(endpoint, id, mode)
    , m_mode(mode)
    , m_detachKey(detachKey)
    , m_inFd(inFd)
    , m_ttyOutFd(outFd)
{
}

TtyAttach::~TtyAttach()
{
    m_raw.restore();
    // The queue's notifier watches m_outFd: it goes first.
    delete m_out;
    m_out = nullptr;
    if (m_outFd >= 0 && m_outFd != m_ttyOutFd)
        ::close(m_outFd);
}

int TtyAttach::run()
{
    if (!start())
        return ClientExit::Error;
    int status = ClientExit::Error;
    connect(this, &TtyAttach::finished, this, [&status](int s) {
        status = s;
        QCoreApplication::exit(s);
    });
    QCoreApplication::exec();
    return status;
}

bool TtyAttach::start()
{
    // Output: our own non-blocking open file description of the terminal,
    // so O_NONBLOCK never leaks into the description the shell (and our
    // stdin) share. Regular files never block: write them directly.
    struct stat st {};
    if (::fstat(m_ttyOutFd, &st) == 0 && (S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode))) {
        const QByteArray path = "/proc/self/fd/" + QByteArray::number(m_ttyOutFd);
        m_outFd = ::open(path.constData(), O_WRONLY | O_NOCTTY | O_CLOEXEC | O_NONBLOCK);
    }
    if (m_outFd < 0) {
        m_outFd = m_ttyOutFd;
        if (!S_ISREG(st.st_mode))
            m_raw.setNonBlocking(m_outFd);
    }
    m_out = new WriteQueue(m_outFd, m_highWater, m_lowWater, this);
    connect(m_out, &WriteQueue::blockedChanged, this, [this](bool blocked) {
        // Backpressure: pause the session's output (flow control), or let go
        // of the connection and resume from the offset later (older server).
        if (m_ending || m_suspending || blocked == m_client.isPaused())
            return;
        m_client.setPaused(blocked);
    });
    connect(m_out, &WriteQueue::progressed, &m_gate, &ReplayInputGate::rendered);
    connect(m_out, &WriteQueue::drained, this, [this]() {
        if (m_finishedEnd)
            finalize();
    });
    connect(m_out, &WriteQueue::failed, this, &TtyAttach::onOutputFailed);

    // Signals first, raw mode second: a SIGTERM in between must still find
    // a handler that gets the terminal restored.
    m_signals = new SignalPipe({SIGTERM, SIGINT, SIGHUP, SIGWINCH, SIGTSTP}, this);
    if (!m_signals->isValid()) {
        std::fprintf(stderr, "tether attach: cannot handle signals: %s\n", qPrintable(m_signals->errorString()));
        return false;
    }
    connect(m_signals, &SignalPipe::received, this, &TtyAttach::onSignal);

    if (::isatty(m_inFd)) {
        m_raw.enter(m_inFd);
        m_inIsTty = true;
    }
    pushTitle();
    m_inNotifier = new QSocketNotifier(m_inFd, QSocketNotifier::Read, this);
    connect(m_inNotifier, &QSocketNotifier::activated, this, &TtyAttach::readInput);
    m_inBuffer.resize(64 * 1024);

    connect(&m_client, &AttachClient::attached, this, [this](const QJsonObject &, bool reset) {
        m_reconnectNotice.stop();
        m_noticeShown = false;
        if (reset) {
            // Clear the screen before the replay, as the dashboard does
            // (RIS, in order through the output queue; docs/dashboard.md).
            appendOutput(QByteArrayLiteral("\x1b" "c"));
        }
        m_gate.begin(m_client.pendingReplay() > 0);
        sendSize();
    });
    connect(&m_client, &AttachClient::output, this, [this](const QByteArray &data, bool) { appendOutput(data); });
    connect(&m_client, &AttachClient::replayFinished, this, &TtyAttach::onReplayFinished);
    connect(&m_client, &AttachClient::reconnecting, this, [this](int, int) {
        if (!m_reconnectNotice.isActive() && !m_noticeShown)
            m_reconnectNotice.start();
    });
    connect(&m_client, &AttachClient::finished, this, &TtyAttach::onFinished);
    connect(&m_client, &AttachClient::inputDrained, this, [this]() {
        if (!m_inputHeld || m_client.inputQueued() >= AttachClient::kInputLowBytes)
            return;
        m_inputHeld = false;
        if (!m_ending && !m_finalized)
            m_inNotifier->setEnabled(true);
    });
    connect(&m_gate, &ReplayInputGate::opened, this, [this]() {
        if (m_leaving)
            finishExit();
    });
    m_reconnectNotice.setSingleShot(true);
    m_reconnectNotice.setInterval(kReconnectNoticeMs);
    connect(&m_reconnectNotice, &QTimer::timeout, this, [this]() {
        if (m_client.isAttached())
            return;
        m_noticeShown = true;
        const QByteArray line = "\r\n[tether: reconnecting\xe2\x80\xa6]\r\n";
        [[maybe_unused]] const ssize_t n = ::write(STDERR_FILENO, line.constData(), size_t(line.size()));
    });
    m_drainTimer.setSingleShot(true);
    connect(&m_drainTimer, &QTimer::timeout, this, &TtyAttach::finalize);

    sendSize();
    m_client.open();
    return true;
}

void TtyAttach::onReplayFinished()
{
    if (m_gate.state() != ReplayInputGate::State::Rendering)
        return;
    if (m_inIsTty && ::isatty(m_outFd)) {
        // The DSR fence (ReplayInputGate): the terminal answers it after
        // every query in the replay, in order.
        appendOutput(QByteArray::fromRawData(ReplayInputGate::kQuery, int(sizeof ReplayInputGate::kQuery - 1)));
        m_gate.fenceWritten();
        return;
    }
    m_gate.settleAfter(m_out->end(), m_out->written());
}

void TtyAttach::onSignal(int sig)
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
 * screen; after `fg` the terminal stayed cooked, nothing was redrawn, keys
 * echoed locally and Ctrl-\ SIGQUIT the client.
 *
 * Give the terminal back as on detach (leaveSequence, saved termios), stop
 * for real, and once continued (the stop returns here) take it again (raw
 * mode from the termios as it is now: the user may have run stty
 * meanwhile), send the window size and redraw the session from scratch:
 * AttachClient::reattach(), a reset replay into a cleared screen, with the
 * replay's input gate as on any attach. Output not yet written is dropped:
 * the replay redraws it.
 */
void TtyAttach::suspend()
{
    if (m_exited)
        return; // leaving anyway: the terminal is (being) restored
    if (!m_ending) {
        m_suspending = true;
        m_out->clear(); // nothing of it will ever be written
        m_suspending = false;
        m_drainTimer.stop();
    }
    const bool wasRaw = m_raw.isRaw();
    if (wasRaw && !m_out->hasFailed())
        writeDirect(leaveSequence(m_terminal));
    const int ttyFd = m_raw.fd();
    m_raw.restore();

    // Stop with SIGTSTP (the shell then reports the job "Stopped"), but the
    // kernel discards a default-action SIGTSTP in an orphaned process group
    // (POSIX: nobody there could continue it), and our parent not being a
    // job-control shell of our session is the common sign of one: then
    // SIGSTOP, which always stops.
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
    if (m_outFd == m_ttyOutFd)
        m_raw.setNonBlocking(m_outFd);
    if (wasRaw)
        m_raw.enter(ttyFd); // re-read: the user may have run stty meanwhile
    pushTitle();
    if (m_ending)
        return;
    // Input is gated from now until the new replay's DSR is answered.
    m_gate.close();
    sendSize();
    m_client.reattach();
}

bool TtyAttach::terminalSize(int *cols, int *rows) const
{
    for (int fd : {m_ttyOutFd, m_inFd, int(STDERR_FILENO)}) {
        if (RawTerminal::windowSize(fd, cols, rows))
            return true;
    }
    return false;
}

void TtyAttach::sendSize()
{
    int cols = 0, rows = 0;
    if (m_mode == ViewerMode::Control && terminalSize(&cols, &rows))
        m_client.setWindowSize(cols, rows);
}

void TtyAttach::writeDirect(const QByteArray &bytes)
{
    // Best effort, a few bytes, on a non-blocking fd: never waits.
    if (!bytes.isEmpty())
        [[maybe_unused]] const ssize_t n = ::write(m_outFd, bytes.constData(), size_t(bytes.size()));
}

void TtyAttach::pushTitle()
{
    // Saves the terminal's window title on its title stack (XTWINOPS 22;0;
    // the leave sequence pops it with 23;0), so the title a program sets
    // does not outlive the attachment. Terminals without a stack ignore it.
    if (m_outFd >= 0 && ::isatty(m_outFd))
        writeDirect(QByteArrayLiteral("\x1b[22;0t"));
}

void TtyAttach::readInput()
{
    const ssize_t n = ::read(m_inFd, m_inBuffer.data(), size_t(m_inBuffer.size()));
    if (n < 0 && (errno == EAGAIN || errno == EINTR))
        return;
    if (m_leaving) {
        // Swallow the terminal's late answers until the answer to our DSR
        // (the gate emits opened(), which ends us).
        if (n <= 0)
            finishExit();
        else
            m_gate.filter(m_inBuffer.constData(), n);
        return;
    }
    if (n <= 0) {
        // End of input: a hung-up terminal (EIO or 0) ends us like SIGHUP;
        // a pipe or file only stops feeding input.
        m_inNotifier->setEnabled(false);
        if (m_inIsTty && !m_ending) {
            m_signal = SIGHUP;
            m_ending = true;
            m_client.detach();
        }
        return;
    }
    if (m_ending)
        return;
    const ReplayInputGate::Verdict v = m_gate.filter(m_inBuffer.constData(), n);
    const char *data = m_inBuffer.constData() + v.from;
    bool detachNow = false;
    const qsizetype len = m_detachKey.scan(data, v.size, &detachNow);
    if (len > 0 && v.pass) {
        m_client.sendInput(data, len);
        // A paste larger than the program takes at once: the server holds
        // the connection back (protocol.md "Input flow control"); stop
        // reading the terminal rather than queue the paste in memory. The
        // terminal keeps the rest; nothing is given up on.
        if (m_client.inputQueued() > AttachClient::kInputHighBytes) {
            m_inputHeld = true;
            m_inNotifier->setEnabled(false);
        }
    }
    if (detachNow) {
        m_ending = true;
        m_client.detach();
    }
}

void TtyAttach::appendOutput(const QByteArray &data)
{
    if (data.isEmpty() || m_out->hasFailed())
        return;
    m_terminal.feed(data);
    m_out->append(data);
}

void TtyAttach::onOutputFailed()
{
    // EPIPE/EIO: nobody reads our output any more; detach quietly.
    if (!m_ending) {
        m_ending = true;
        m_signal = SIGHUP;
        m_client.detach();
    } else if (m_finishedEnd) {
        finalize();
    }
}

int TtyAttach::exitStatusFor(AttachStream::End end, int signal)
{
    if (signal)
        return 128 + signal;
    switch (end) {
    case AttachStream::End::Detached:
    case AttachStream::End::Exited:
        return ClientExit::Ok;
    case AttachStream::End::TakenOver:
        return ClientExit::TakenOver;
    case AttachStream::End::NotFound:
        return ClientExit::NotFound;
    case AttachStream::End::SessionKilled:
    case AttachStream::End::ServerShutdown:
        return ClientExit::Killed;
    default:
        return ClientExit::Error;
    }
}

void TtyAttach::onFinished(AttachStream::End end, const QString &message)
{
    m_ending = true;
    m_finishedEnd = true;
    m_message = message;
    m_status = exitStatusFor(end, m_signal);
    if (m_signal == SIGHUP)
        m_message.clear(); // no terminal to tell
    m_inNotifier->setEnabled(false);
    if (end == AttachStream::End::Detached)
        m_out->clear(); // the user wants out now: what the terminal has not taken is dropped
    if (m_out->pending() == 0) {
        finalize();
    } else {
        // Let the last output (before "[process exited ...]") reach the
        // terminal, but never wait on a terminal that takes nothing.
        m_drainTimer.start(kDrainMs);
    }
}

void TtyAttach::finalize()
{
    if (m_finalized)
        return;
    m_finalized = true;
    m_drainTimer.stop();
    const bool outputDead = m_out->hasFailed();
    m_out->clear(); // what is still queued will not be written
    if (!outputDead)
        writeDirect(leaveSequence(m_terminal));
    if (m_inIsTty && !outputDead && !m_gate.isOpen()) {
        // A replay was just written (attaching to an exited session ends
        // right after it): the terminal may still be answering queries in it
        // (cursor position, device attributes, colours). Once we are gone
        // those answers would land at the shell prompt as garbage
        // ("2RR84;0;0c", found by a first-time user). So discard input until
        // the answer to a DSR, which the terminal sends after every earlier
        // one; bounded for terminals that do not answer. The DSR sent after
        // the replay may still be unanswered: wait for that answer rather
        // than ask again (the second answer would come after we are gone,
        // at the shell prompt).
        const qsizetype len = qsizetype(sizeof ReplayInputGate::kQuery - 1);
        if (m_gate.isFencePending() || ::write(m_outFd, ReplayInputGate::kQuery, size_t(len)) == len) {
            m_leaving = true;
            m_inNotifier->setEnabled(true);
            m_gate.drain(kLeaveFenceMs);
            return;
        }
    }
    finishExit();
}

void TtyAttach::finishExit()
{
    if (m_exited)
        return;
    m_exited = true;
    m_leaving = false;
    m_inNotifier->setEnabled(false);
    if (m_inIsTty)
        ::tcflush(m_inFd, TCIFLUSH); // anything still unread is not the user's
    m_raw.restore();
    if (!m_message.isEmpty()) {
        // Escaped (DisplayText): the line may quote a session's name or the
        // server's close reason.
        const QString text = (::isatty(STDERR_FILENO) ? QStringLiteral("\n") : QString()) + DisplayText::escape(m_message);
        std::fprintf(stderr, "%s\n", qPrintable(text));
        std::fflush(stderr);
    }
    Q_EMIT finished(m_status);
}

} // namespace Tether
