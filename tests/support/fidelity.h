// SPDX-License-Identifier: GPL-2.0-or-later
// The reattach fidelity corpus (issue 9): programs run in a real shell in a
// real PTY with a 64 KiB ring, a reference viewer attached from the start,
// a late viewer attached once the ring has rolled over; both rendered in a
// headless terminal (libvterm, vtrender.h) at the same output offset and
// compared cell by cell.
//
// The corpus itself is data, tests/vectors/fidelity-corpus.json, shared with
// the browser test (tests/browser/fidelity.test.mjs). A row is a shell
// session of `cols`×`rows` driven by `steps`:
//   wait    {text, timeout}  wait until the reference stream has `text` after
//                            the position of the last match (then move past it)
//   start   {text, timeout}  as wait, and mark the program's start at the
//                            match: "rolled over" counts from here
//   type    {text}           input from the reference (control) viewer
//   rolled  {extra, timeout} wait until offset >= mark + ring capacity + extra:
//                            every byte of the program's first paint is gone
//   repeat  {text, extra,    type `text`, let the program answer, again, until
//            timeout}        offset >= mark + ring capacity + extra
//   resize  {cols, rows}     the reference resizes the session
//   quiet   {ms, timeout}    wait until no output came for `ms`
// Timeouts are in seconds. Every wait is bounded: a step that times out fails
// the row with the step named.
#pragma once

#include "procinfo.h"
#include "servertestutil.h"
#include "terminalstate.h"
#include "vtrender.h"

#include <QDir>
#include <QElapsedTimer>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QTemporaryDir>

#include <algorithm>
#include <functional>
#include <memory>
#include <vector>

#include <cerrno>
#include <csignal>
#include <fcntl.h>
#include <unistd.h>

namespace Fidelity {

/// True when every thread of every process of session `sid` in process group
/// `pgid` is stopped (state 'T' in /proc/PID/task/TID/stat, proc(5);
/// zombies, which processesInSession() leaves out, write nothing) and
/// there is at least one: none of them can write another byte to the
/// terminal. SIGSTOP is delivered asynchronously (a process in a write(2)
/// finishes it first), so this, not a pause, says the program has stopped.
inline bool groupStopped(pid_t sid, pid_t pgid)
{
    int seen = 0;
    for (const pid_t pid : Tether::processesInSession(sid)) {
        const QDir tasks(QStringLiteral("/proc/%1/task").arg(pid));
        const QStringList tids = tasks.entryList(QDir::Dirs | QDir::NoDotAndDotDot);
        for (const QString &tid : tids) {
            QFile f(tasks.filePath(tid + QStringLiteral("/stat")));
            if (!f.open(QIODevice::ReadOnly))
                continue; // gone: it writes nothing any more
            // "pid (comm) state ppid pgrp ...": comm may hold spaces and ')'.
            const QByteArray stat = f.readAll();
            const QList<QByteArray> fields = stat.mid(stat.lastIndexOf(')') + 2).split(' ');
            if (fields.size() < 3 || fields.at(2).toInt() != pgid)
                break; // another process group of the session (not stopped, not ours)
            if (fields.at(0) == "Z" || fields.at(0) == "X")
                continue; // an exited thread writes nothing
            if (fields.at(0) != "T")
                return false;
            ++seen;
        }
    }
    return seen > 0;
}

/// The terminal (PTY slave, "/dev/pts/N") that process `pid` has as its
/// standard input, output or error; empty when none is one.
inline QString terminalOf(pid_t pid)
{
    for (int fd = 0; fd <= 2; ++fd) {
        const QString target = QFile::symLinkTarget(QStringLiteral("/proc/%1/fd/%2").arg(pid).arg(fd));
        if (target.startsWith(QLatin1String("/dev/pts/")))
            return target;
    }
    return QString();
}

/// The corpus file (tests/vectors/fidelity-corpus.json) as parsed JSON; an
/// empty object when it cannot be read.
inline QJsonObject loadCorpus()
{
    QFile f(QStringLiteral(TETHER_SOURCE_DIR "/tests/vectors/fidelity-corpus.json"));
    if (!f.open(QIODevice::ReadOnly))
        return QJsonObject();
    return QJsonDocument::fromJson(f.readAll()).object();
}

/// The corpus's size rows ("size_rows", issue 29: reattach at another
/// size), as parsed JSON objects.
inline QJsonArray sizeRows()
{
    return loadCorpus().value(QStringLiteral("size_rows")).toArray();
}

/// The check "lines" of a size row: the numbers N (from..to) for which the
/// line prefix+N is not one of `shown` (what a viewer has in its scrollback
/// and screen, one line each, trailing blanks dropped), and for the last
/// N, "N twice" when it is there more than once (a repaint that scrolled
/// what it paints into the scrollback as well). Empty: the check holds.
inline QStringList missingLines(const QJsonObject &row, const QStringList &shown)
{
    const QJsonObject spec = row.value(QStringLiteral("lines")).toObject();
    const QString prefix = spec.value(QStringLiteral("prefix")).toString();
    const int from = spec.value(QStringLiteral("from")).toInt();
    const int to = spec.value(QStringLiteral("to")).toInt();
    QStringList missing;
    if (prefix.isEmpty() || to < from)
        return {QStringLiteral("a size row without its lines")};
    for (int i = from; i <= to; ++i)
        if (!shown.contains(prefix + QString::number(i)))
            missing << QString::number(i);
    if (shown.count(prefix + QString::number(to)) > 1)
        missing << QStringLiteral("%1 twice").arg(to);
    return missing;
}

/// How a row's shell starts: bash without start-up files at the row's size in
/// `dir`, with a known prompt and locale, and `home` as HOME for the
/// programs' own settings (htop writes there), never the user's.
inline Tether::SpawnOptions spawnOptions(const QJsonObject &row, const QString &dir, const QString &home)
{
    Tether::SpawnOptions o;
    o.argv = QStringList{QStringLiteral("/bin/bash"), QStringLiteral("--norc"), QStringLiteral("--noprofile")};
    o.cols = row.value(QStringLiteral("cols")).toInt();
    o.rows = row.value(QStringLiteral("rows")).toInt();
    o.cwd = dir;
    o.extraEnv = QStringList{QStringLiteral("PS1=$ "), QStringLiteral("LANG=C.UTF-8"), QStringLiteral("LC_ALL=C.UTF-8"),
                             QStringLiteral("HOME=") + home, QStringLiteral("LESSHISTFILE=-")};
    return o;
}

/// A terminal fed one viewer's messages in the order they came: binary
/// payload (prelude, snapshot, replay, live output) and the text messages
/// that carry terminal data (`fixup`) or change the size (`size`), the way a
/// real client applies them. A TerminalState follows the same bytes for the
/// modes libvterm 0.1.4 does not expose.
class ViewerTerminal
{
public:
    /// Starts at the size of the client's `attached` message; for a late
    /// viewer, the title of that message is written first, as clients show it.
    explicit ViewerTerminal(const ServerTest::WsClient &client, bool applyTitle)
        : m_client(client)
    {
        const QJsonObject &a = client.attachedMsg;
        vt.reset(new TestUtil::VtRender(a.value(QStringLiteral("cols")).toInt(), a.value(QStringLiteral("rows")).toInt()));
        const QByteArray title = a.value(QStringLiteral("title")).toString().toUtf8();
        if (applyTitle && !title.isEmpty())
            write("\x1b]2;" + title + "\x07");
        // Skip everything up to and including the attached message.
        while (m_event < client.events.size()) {
            const ServerTest::WsClient::Event &e = client.events.at(m_event++);
            if (e.text && e.data.contains("\"attached\""))
                break;
        }
    }

    /// Feeds what has arrived, up to `limit` binary bytes in all (bytes
    /// beyond it, and text messages after it, stay unfed).
    void pump(quint64 limit)
    {
        const QList<ServerTest::WsClient::Event> &events = m_client.events;
        while (m_event < events.size() && m_fed < limit) {
            const ServerTest::WsClient::Event &e = events.at(m_event);
            if (e.text) {
                applyText(QJsonDocument::fromJson(e.data).object());
                ++m_event;
                continue;
            }
            const qsizetype n = qsizetype(qMin<quint64>(quint64(e.data.size() - m_inEvent), limit - m_fed));
            write(e.data.constData() + m_inEvent, n);
            m_inEvent += n;
            m_fed += quint64(n);
            if (m_inEvent == e.data.size()) {
                ++m_event;
                m_inEvent = 0;
            }
        }
    }
    quint64 fed() const { return m_fed; }
    /// Applies the text messages that come next, before any more binary
    /// bytes: those at the offset pump() stopped at (a `size` message and
    /// its `fixup` right after the bytes before a resize).
    void pumpTexts()
    {
        const QList<ServerTest::WsClient::Event> &events = m_client.events;
        while (m_inEvent == 0 && m_event < events.size() && events.at(m_event).text)
            applyText(QJsonDocument::fromJson(events.at(m_event++).data).object());
    }

    /// Written to the terminal directly (a probe after the comparison).
    void write(const char *data, qsizetype size)
    {
        modes.feed(data, size);
        // libvterm 0.1.4 applies only the first mode of a DECSET/DECRST with
        // several ("CSI ? 1006 ; 1000 h", as ncurses enables the mouse for
        // htop, leaves mouse tracking off); xterm and xterm.js apply all.
        // Such a sequence reaches libvterm one mode at a time.
        qsizetype plain = 0;
        for (qsizetype i = 0; i < size; ++i) {
            const char c = data[i];
            switch (m_decState) {
            case 0:
                if (c == '\x1b')
                    m_decState = 1;
                continue;
            case 1:
                m_decState = c == '[' ? 2 : (c == '\x1b' ? 1 : 0);
                continue;
            case 2:
                if (c != '?') {
                    m_decState = c == '\x1b' ? 1 : 0;
                    continue;
                }
                vt->feed(data + plain, i + 1 - plain); // up to "ESC [ ?", held from here
                plain = i + 1;
                m_decParams.clear();
                m_decState = 3;
                continue;
            default:
                if ((c >= '0' && c <= '9') || c == ';') {
                    m_decParams += c;
                } else {
                    if ((c == 'h' || c == 'l') && m_decParams.contains(';')) {
                        const QList<QByteArray> params = m_decParams.split(';');
                        QByteArray split = params.first() + c;
                        for (int p = 1; p < params.size(); ++p)
                            split += "\x1b[?" + params.at(p) + c;
                        vt->feed(split);
                    } else {
                        vt->feed(m_decParams + c);
                    }
                    plain = i + 1;
                    m_decState = c == '\x1b' ? 1 : 0;
                }
                continue;
            }
        }
        if (m_decState != 3)
            vt->feed(data + plain, size - plain);
    }
    void write(const QByteArray &data) { write(data.constData(), data.size()); }

    std::unique_ptr<TestUtil::VtRender> vt;
    Tether::TerminalState modes;

private:
    void applyText(const QJsonObject &m)
    {
        const QString type = m.value(QStringLiteral("type")).toString();
        if (type == QLatin1String("fixup") || type == QLatin1String("snapshot")) {
            write(m.value(QStringLiteral("data")).toString().toLatin1());
        } else if (type == QLatin1String("size")) {
            // A terminal resets its scroll margins when resized.
            vt->resize(m.value(QStringLiteral("cols")).toInt(), m.value(QStringLiteral("rows")).toInt());
            modes.marginsResetByResize();
        }
    }

    const ServerTest::WsClient &m_client;
    int m_decState = 0;       ///< write(): 0 text, 1 ESC, 2 ESC [, 3 ESC [ ? params
    QByteArray m_decParams;   ///< the parameters of that DEC mode sequence so far
    int m_event = 0;
    qsizetype m_inEvent = 0;
    quint64 m_fed = 0;
};

/// Differences between the modes two TerminalStates track (DEC private
/// modes, keypad, insert mode, scroll margins, title); empty when equal.
inline QString modesDiff(const Tether::TerminalState &a, const Tether::TerminalState &b, int rows)
{
    QStringList out;
    if (a.modes() != b.modes())
        out << QStringLiteral("modes 0x%1 vs 0x%2 (TerminalState::Mode bits)").arg(a.modes(), 0, 16).arg(b.modes(), 0, 16);
    const auto margins = [rows](const Tether::TerminalState &s) {
        if (!s.marginsSet())
            return qMakePair(1, rows);
        return qMakePair(s.marginTop() > 0 ? s.marginTop() : 1, s.marginBottom() > 0 ? s.marginBottom() : rows);
    };
    if (margins(a) != margins(b))
        out << QStringLiteral("scroll margins %1;%2 vs %3;%4").arg(margins(a).first).arg(margins(a).second)
                   .arg(margins(b).first).arg(margins(b).second);
    if (a.title() != b.title())
        out << QStringLiteral("title \"%1\" vs \"%2\"").arg(a.title(), b.title());
    return out.join(QLatin1Char('\n'));
}

/**
 * What differs between the screens of `reference` and `late` (empty: none):
 * 1. the screen shown (cells, cursor, properties; `cells` gets how many
 * cells differ), 2. the modes, 3. the normal screen under the alternate one
 * (both leave it), 4. the pen and the pending wrap (the same character
 * written to both). 3 and 4 write to both terminals: compare once.
 */
inline QString screensDiff(ViewerTerminal &reference, ViewerTerminal &late, int *cells = nullptr)
{
    QString diff = reference.vt->diff(*late.vt);
    if (cells)
        *cells = reference.vt->differingCells(*late.vt);
    const QString modes = modesDiff(reference.modes, late.modes, reference.vt->rows());
    if (!modes.isEmpty())
        diff += QStringLiteral("\nmodes: ") + modes;
    if (diff.isEmpty() && reference.vt->altScreen()) {
        reference.write("\x1b[?1049l");
        late.write("\x1b[?1049l");
        const QString under = reference.vt->diff(*late.vt);
        if (!under.isEmpty())
            diff += QStringLiteral("\nnormal screen under the alternate one:\n") + under;
    }
    if (diff.isEmpty()) {
        reference.write("@");
        late.write("@");
        const QString pen = reference.vt->diff(*late.vt);
        if (!pen.isEmpty())
            diff += QStringLiteral("\nafter writing one character (pen, pending wrap):\n") + pen;
    }
    return diff;
}

/// Drives one corpus row through the reference viewer `ref` (attached from
/// the start): a state machine that poll() advances as far as it can without
/// waiting, so the rows of the corpus run side by side in one event loop.
/// It only reads the reference's bytes: `refTerm` is rendered when the late
/// viewer is compared (or a step times out), never while the program runs,
/// because the server's own screen shares this process and a test rendering
/// ten streams at once would take its time (the server would see floods
/// that are not there). Tests render at most kPumpChunk bytes a poll, so one
/// long stream does not hold the other rows up.
class Driver
{
public:
    enum Status { Running, Done, Failed };
    static constexpr quint64 kPumpChunk = 256 * 1024;

    Driver(ServerTest::WsClient *ref, ViewerTerminal *refTerm, quint64 capacity, const QJsonArray &steps)
        : m_ref(ref), m_refTerm(refTerm), m_capacity(capacity), m_steps(steps)
    {
        m_clock.start();
    }

    /// Called on a `resize` step, after the reference has asked for it (a
    /// test whose viewers live in real terminals resizes those too).
    std::function<void(int cols, int rows)> onResize;

    Status poll()
    {
        const qint64 now = m_clock.elapsed();
        if (quint64(m_ref->bytes.size()) != m_seen) {
            m_seen = quint64(m_ref->bytes.size());
            m_lastChange = now;
        }
        while (m_status == Running) {
            if (m_step >= m_steps.size()) {
                m_status = Done;
                break;
            }
            const QJsonObject step = m_steps.at(m_step).toObject();
            if (m_stepStart < 0)
                m_stepStart = now;
            if (!runStep(step, now)) {
                if (now - m_stepStart > qint64(step.value(QStringLiteral("timeout")).toDouble(15) * 1000)) {
                    m_refTerm->pump(std::numeric_limits<quint64>::max());
                    m_error = QStringLiteral("step %1 %2 timed out (offset %3, mark %4); screen:\n%5")
                                  .arg(m_step).arg(QString::fromUtf8(QJsonDocument(step).toJson(QJsonDocument::Compact)))
                                  .arg(m_ref->bytes.size()).arg(m_mark).arg(m_refTerm->vt->text());
                    m_status = Failed;
                }
                break;
            }
            ++m_step;
            m_stepStart = -1;
        }
        return m_status;
    }
    Status status() const { return m_status; }
    QString error() const { return m_error; }
    /// Offset where the program started (the match of the `start` step).
    quint64 mark() const { return m_mark; }

private:
    /// One step: true when it is complete.
    bool runStep(const QJsonObject &step, qint64 now)
    {
        const QString op = step.value(QStringLiteral("op")).toString();
        const QByteArray text = step.value(QStringLiteral("text")).toString().toUtf8();
        const qint64 extra = qint64(step.value(QStringLiteral("extra")).toDouble());
        const quint64 target = quint64(qint64(m_mark + m_capacity) + extra);
        const quint64 have = quint64(m_ref->bytes.size());
        if (op == QLatin1String("type")) {
            m_ref->sendInput(text);
            return true;
        }
        if (op == QLatin1String("resize")) {
            const int cols = step.value(QStringLiteral("cols")).toInt();
            const int rows = step.value(QStringLiteral("rows")).toInt();
            m_ref->sendText(QJsonDocument(QJsonObject{{QStringLiteral("type"), QStringLiteral("resize")},
                                                      {QStringLiteral("cols"), cols},
                                                      {QStringLiteral("rows"), rows}})
                                .toJson(QJsonDocument::Compact));
            if (onResize)
                onResize(cols, rows);
            return true;
        }
        if (op == QLatin1String("wait") || op == QLatin1String("start")) {
            const qsizetype at = m_ref->bytes.indexOf(text, m_search);
            if (at < 0)
                return false;
            m_search = at + text.size();
            if (op == QLatin1String("start"))
                m_mark = quint64(at);
            return true;
        }
        if (op == QLatin1String("rolled"))
            return have >= target;
        if (op == QLatin1String("repeat")) {
            if (have >= target)
                return true;
            // One batch at a time: the program answers it before the next.
            if (now - qMax(m_lastChange, m_lastSend) >= 30) {
                m_ref->sendInput(text);
                m_lastSend = now;
            }
            return false;
        }
        if (op == QLatin1String("quiet"))
            return now - qMax(m_lastChange, m_stepStart) >= step.value(QStringLiteral("ms")).toInt();
        m_error = QStringLiteral("unknown step ") + op;
        m_status = Failed;
        return false;
    }

    ServerTest::WsClient *m_ref;
    ViewerTerminal *m_refTerm;
    quint64 m_capacity;
    QJsonArray m_steps;
    QElapsedTimer m_clock;
    Status m_status = Running;
    QString m_error;
    int m_step = 0;
    qint64 m_stepStart = -1;   ///< ms on m_clock when the current step began
    qint64 m_lastChange = 0;   ///< ms on m_clock when output last arrived
    qint64 m_lastSend = -1000; ///< ms on m_clock of the last `repeat` input
    quint64 m_seen = 0;
    quint64 m_mark = 0;
    qsizetype m_search = 0;
};

/**
 * One row of the corpus on its way through a fidelity test: its shell (a
 * session of `fixture`'s registry), the reference WebSocket viewer that is
 * attached (control) from the start and drives it, and the phases every such
 * test goes through:
 *   Attaching  the reference (and the test's own reference viewers:
 *              referenceReady()) attached before the program writes
 *   Driving    the steps (Driver); then the program's first paint must be
 *              gone from the ring
 *   Freezing   with `freeze`: SIGSTOP to the terminal's foreground process
 *              group, then wait until every thread of it is stopped
 *              (groupStopped()), so the stream ends (viewers in real
 *              terminals cannot be read at an offset)
 *   Late       startLate() attaches the late viewer; pollLate() until it
 *              calls finish(); a frozen row's pollLate() writes the barrier
 *              (writeBarrier()) and compares once both viewers show it
 * advance() never waits; runAll() advances every row side by side.
 */
class RowRun
{
public:
    enum Phase { Attaching, Driving, Freezing, Late, Finished };

    RowRun(ServerTest::Fixture &fixture, const QJsonObject &def, const QString &home, quint64 capacity, bool freeze)
        : name(def.value(QStringLiteral("name")).toString()), def(def), m_fixture(fixture), m_capacity(capacity),
          m_freeze(freeze)
    {
        // Each row in a directory of its own (vim and less write long.txt).
        const QString dir = home + QLatin1Char('/') + name;
        QDir().mkpath(dir);
        QString error;
        session = fixture.registry->create(spawnOptions(def, dir, home), nullptr, &error);
        if (!session) {
            finish(QStringLiteral("cannot start the shell: ") + error);
            return;
        }
        ref.reset(new ServerTest::WsClient);
        ref->open(fixture.port, QStringLiteral("/ws/") + session->id(), fixture.key);
        clock.start();
    }
    virtual ~RowRun()
    {
        if (m_frozen > 0)
            ::kill(-m_frozen, SIGCONT);
    }
    RowRun(const RowRun &) = delete;
    RowRun &operator=(const RowRun &) = delete;

    void advance()
    {
        switch (phase) {
        case Attaching:
            if (!ref->gotAttached() || !referenceReady()) {
                if (clock.elapsed() > 20000)
                    finish(QStringLiteral("the reference viewers did not attach within 20 s"));
                return;
            }
            if (ref->num("replay_from") != 0 || ref->num("prelude_bytes") != 0)
                return finish(QStringLiteral("the reference did not get the stream from offset 0"));
            refTerm.reset(new ViewerTerminal(*ref, false));
            driver.reset(new Driver(ref.get(), refTerm.get(), m_capacity, def.value(QStringLiteral("steps")).toArray()));
            driver->onResize = [this](int cols, int rows) { resized(cols, rows); };
            phase = Driving;
            Q_FALLTHROUGH();
        case Driving: {
            const Driver::Status st = driver->poll();
            if (st == Driver::Running)
                return;
            if (st == Driver::Failed)
                return finish(driver->error());
            if (session->buffer().startOffset() <= driver->mark())
                return finish(QStringLiteral("the program's first paint is still retained"));
            clock.restart();
            if (m_freeze) {
                m_frozen = session->foregroundProcessGroup();
                if (m_frozen <= 0 || ::kill(-m_frozen, SIGSTOP) != 0)
                    return finish(QStringLiteral("cannot stop the foreground process group"));
                phase = Freezing;
                return;
            }
            return goLate();
        }
        case Freezing:
            driver->poll();
            if (groupStopped(session->pid(), m_frozen)) {
                clock.restart();
                goLate();
            } else if (clock.elapsed() > 10000) {
                finish(QStringLiteral("the program did not stop within 10 s of SIGSTOP"));
            }
            return;
        case Late:
            pollLate();
            if (phase == Late && clock.elapsed() > 30000)
                finish(QStringLiteral("the late viewer was not read within 30 s"));
            return;
        case Finished:
            return;
        }
    }

    /// Advances every row until all are finished or `timeoutMs` passed
    /// (then the rows left say so).
    template<typename Rows>
    static void runAll(Rows &rows, int timeoutMs)
    {
        QElapsedTimer t;
        t.start();
        const auto finished = [&]() {
            return std::all_of(rows.begin(), rows.end(), [](const auto &r) { return r->phase == Finished; });
        };
        while (!finished() && t.elapsed() < timeoutMs) {
            QTest::qWait(10);
            for (auto &r : rows)
                r->advance();
        }
        for (auto &r : rows)
            if (r->phase != Finished)
                r->finish(QStringLiteral("not finished within %1 s (phase %2)").arg(timeoutMs / 1000).arg(int(r->phase)));
    }

    /// Starts a fidelity test: reads the corpus into *corpus, starts
    /// `fixture` with the corpus's ring capacity (64 KiB, the smallest),
    /// makes a `Row` (a RowRun taking the fixture, a row, a home directory
    /// and the capacity) of every corpus row and runs them all (runAll,
    /// bounded by 150 s). Fails the calling test function on error.
    template<typename Row, typename... Extra>
    static void startAll(ServerTest::Fixture &fixture, QJsonObject *corpus, const QString &home,
                         std::vector<std::unique_ptr<RowRun>> *rows, Extra &...extra)
    {
        *corpus = loadCorpus();
        QVERIFY2(!corpus->value(QStringLiteral("rows")).toArray().isEmpty(), "tests/vectors/fidelity-corpus.json");
        QVERIFY(!home.isEmpty());
        Tether::Limits limits;
        limits.bufferCapacity = qsizetype(corpus->value(QStringLiteral("buffer_capacity")).toDouble());
        QCOMPARE(limits.bufferCapacity, Tether::RingBuffer::kMinCapacity);
        QVERIFY(fixture.start(limits));
        for (const QJsonValue &v : corpus->value(QStringLiteral("rows")).toArray())
            rows->push_back(std::make_unique<Row>(fixture, v.toObject(), home, quint64(limits.bufferCapacity), extra...));
        runAll(*rows, 150000);
    }

    /// The _data table of a fidelity test: one row ("name") per corpus row.
    static void addDataRows(const QJsonObject &corpus)
    {
        QTest::addColumn<QString>("name");
        for (const QJsonValue &v : corpus.value(QStringLiteral("rows")).toArray()) {
            const QString name = v.toObject().value(QStringLiteral("name")).toString();
            QTest::newRow(qPrintable(name)) << name;
        }
    }

    /// The row's result: passes when `failure` is empty; the whole story goes
    /// to the log (Qt Test cuts long messages).
    static void verify(const std::vector<std::unique_ptr<RowRun>> &rows, const QString &name)
    {
        const auto it = std::find_if(rows.begin(), rows.end(), [&](const auto &r) { return r->name == name; });
        QVERIFY(it != rows.end());
        if (!(*it)->failure.isEmpty())
            qInfo().noquote() << (*it)->failure;
        QVERIFY2((*it)->failure.isEmpty(), qPrintable((*it)->failure.section(QLatin1Char('\n'), 0, 0)));
    }

    /// Ends the row: passed when `why` is empty. A failure also says what
    /// the server's screen was (a late viewer gets no snapshot from a screen
    /// that is absent or unsynced: a flood outran it).
    void finish(const QString &why = QString())
    {
        failure = why;
        if (!why.isEmpty() && session)
            failure += QStringLiteral("\nserver screen: %1, parsed up to %2 of %3, outrun %4 times")
                           .arg(!session->hasScreen() ? QStringLiteral("none")
                                : session->screenSynced() ? QStringLiteral("synced") : QStringLiteral("unsynced"))
                           .arg(session->screenOffset()).arg(session->offset()).arg(session->screenOutruns());
        phase = Finished;
    }

    const QString name;
    const QJsonObject def;
    Tether::Session *session = nullptr;
    std::unique_ptr<ServerTest::WsClient> ref;
    std::unique_ptr<ViewerTerminal> refTerm;
    std::unique_ptr<Driver> driver;
    Phase phase = Attaching;
    QElapsedTimer clock; ///< since the phase began
    QString failure;     ///< empty: the late viewer saw exactly what the reference saw

protected:
    /// Attaching: true once the test's own reference viewers are attached.
    virtual bool referenceReady() { return true; }
    /// A `resize` step (the reference WebSocket asked for it).
    virtual void resized(int cols, int rows) { Q_UNUSED(cols) Q_UNUSED(rows) }
    /// Attaches the late viewer; false (with finish() called) when it cannot.
    virtual bool startLate() = 0;
    /// Late: reads the late viewer, and calls finish() once it is decided.
    virtual void pollLate() = 0;

    /// The title the barrier sets (unique to the row).
    QString barrierTitle() const { return QStringLiteral("tether-fidelity-barrier-") + name; }
    /**
     * The barrier, for tests whose viewers are real terminals that cannot be
     * read at an offset (tmux, QTermWidget): with the program stopped
     * (freeze) and the late viewer attached, an OSC 2 title (barrierTitle())
     * is written to the session's terminal itself. It enters the stream
     * after every byte the program wrote and after the late viewer's replay,
     * and terminals parse in order: once a viewer's terminal shows that
     * title, it has parsed everything before it, and nothing follows. Call
     * it on each poll: true once the barrier is written (non-blocking; a
     * full terminal is tried again on the next poll). A write error finishes
     * the row.
     */
    bool writeBarrier()
    {
        if (!m_barrierStarted) {
            m_barrierStarted = true;
            m_barrierLeft = "\x1b]2;" + barrierTitle().toUtf8() + "\x07";
        }
        if (m_barrierLeft.isEmpty())
            return true;
        const QString tty = terminalOf(session->pid());
        const int fd = tty.isEmpty() ? -1 : ::open(QFile::encodeName(tty).constData(), O_WRONLY | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
        if (fd < 0) {
            finish(QStringLiteral("cannot open the session's terminal \"%1\" for the barrier").arg(tty));
            return false;
        }
        const ssize_t n = ::write(fd, m_barrierLeft.constData(), size_t(m_barrierLeft.size()));
        const int error = errno;
        ::close(fd);
        if (n > 0)
            m_barrierLeft.remove(0, qsizetype(n));
        else if (error != EAGAIN && error != EINTR)
            finish(QStringLiteral("cannot write the barrier to %1: %2").arg(tty, QString::fromLocal8Bit(strerror(error))));
        return m_barrierLeft.isEmpty();
    }

    ServerTest::Fixture &m_fixture;

private:
    void goLate()
    {
        phase = Late;
        if (!startLate() && phase != Finished)
            finish(QStringLiteral("cannot attach the late viewer"));
    }

    quint64 m_capacity;
    bool m_freeze;
    pid_t m_frozen = -1;
    QByteArray m_barrierLeft; ///< bytes of the barrier not yet written
    bool m_barrierStarted = false;
};

} // namespace Fidelity
