// SPDX-License-Identifier: GPL-2.0-or-later
#include "upgradewatch.h"
#include "commandline.h"
#include "logging.h"

#include <QFile>
#include <QFileInfo>
#include <QJsonObject>
#include <QProcess>
#include <QSocketNotifier>

#include <cerrno>
#include <csignal>
#include <cstring>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

namespace Tether {

namespace {

constexpr int kMaxProbeOutput = 4096;
/// Events that can mean "another file has this name now": created, moved
/// here, written and closed, mode changed (made executable), removed or
/// moved away (a symlink target swapped), and the directory itself going.
constexpr uint32_t kDirEvents = IN_CREATE | IN_MOVED_TO | IN_CLOSE_WRITE | IN_ATTRIB | IN_DELETE | IN_MOVED_FROM
    | IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR;

bool statFile(const QString &path, struct stat *st)
{
    return ::stat(QFile::encodeName(path).constData(), st) == 0 && S_ISREG(st->st_mode);
}

} // namespace

UpgradeWatch::UpgradeWatch(std::function<QString()> binary, QObject *parent)
    : QObject(parent)
    , m_binary(std::move(binary))
{
    m_settle.setSingleShot(true);
    m_settle.setInterval(300);
    connect(&m_settle, &QTimer::timeout, this, &UpgradeWatch::check);
    m_probeTimeout.setSingleShot(true);
    m_probeTimeout.setInterval(5000);
    connect(&m_probeTimeout, &QTimer::timeout, this, [this]() {
        qCInfo(lcServer).noquote() << "upgrade check:" << m_probePath << "--version did not answer in time";
        killProbe();
        probeDone(false, QByteArray());
    });
}

UpgradeWatch::~UpgradeWatch()
{
    // Not killProbe(): it leaves the probe to delete itself once it has
    // ended, through the event loop, and at exit there is none any more: the
    // QProcess, its notifiers and its pipes leaked (LeakSanitizer in
    // tst_systemd, a `tether` stopped while its probe ran) and the child was
    // left unreaped. SIGKILL cannot be caught, so the wait below is for the
    // kernel to tear the process down, not for the program; bounded anyway.
    m_probeTimeout.stop();
    if (QProcess *p = m_probe) {
        m_probe = nullptr;
        p->disconnect(this);
        if (p->state() != QProcess::NotRunning) {
            p->kill();
            p->waitForFinished(1000);
        }
        delete p;
    }
    if (m_inotify >= 0)
        ::close(m_inotify);
}

bool UpgradeWatch::start(QString *error)
{
    if (m_inotify >= 0)
        return true;
    if (m_binary().isEmpty()) {
        if (error)
            *error = QStringLiteral("the binary this process was started from is not known");
        return false;
    }
    m_inotify = ::inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
    if (m_inotify < 0) {
        if (error)
            *error = QStringLiteral("inotify: %1").arg(QString::fromLocal8Bit(std::strerror(errno)));
        return false;
    }
    m_buf.resize(16 * (int(sizeof(struct inotify_event)) + NAME_MAX + 1));
    m_notifier = new QSocketNotifier(m_inotify, QSocketNotifier::Read, this);
    connect(m_notifier, &QSocketNotifier::activated, this, &UpgradeWatch::onInotify);
    check();
    return true;
}

QJsonValue UpgradeWatch::updateJson() const
{
    if (m_update.version.isEmpty())
        return QJsonValue(QJsonValue::Null);
    QJsonObject o;
    o.insert(QStringLiteral("version"), m_update.version);
    o.insert(QStringLiteral("binary"), m_update.binary);
    return o;
}

void UpgradeWatch::onInotify()
{
    bool relevant = false;
    for (;;) {
        const ssize_t n = ::read(m_inotify, m_buf.data(), size_t(m_buf.size()));
        if (n <= 0)
            break; // EAGAIN: drained (inotify never returns a partial event)
        for (ssize_t at = 0; at + ssize_t(sizeof(struct inotify_event)) <= n;) {
            const auto *e = reinterpret_cast<const struct inotify_event *>(m_buf.constData() + at);
            at += ssize_t(sizeof(struct inotify_event)) + e->len;
            const QString dir = m_dirs.value(e->wd);
            if (e->mask & (IN_IGNORED | IN_DELETE_SELF | IN_MOVE_SELF)) {
                if (e->mask & IN_IGNORED)
                    m_dirs.remove(e->wd);
                relevant = true; // the directory went: look again (and re-watch)
                continue;
            }
            if (e->len == 0 || dir.isEmpty())
                continue;
            const QString path = dir + QLatin1Char('/') + QFile::decodeName(QByteArray(e->name));
            if (m_names.contains(path))
                relevant = true;
        }
    }
    if (relevant)
        m_settle.start(); // restarts: looked at once the burst is over
}

void UpgradeWatch::updateWatches()
{
    const QString bin = m_binary();
    QSet<QString> names;
    QSet<QString> dirs;
    if (!bin.isEmpty()) {
        const QFileInfo fi(bin);
        names.insert(fi.absoluteFilePath());
        dirs.insert(fi.absolutePath());
        const QString target = fi.canonicalFilePath(); // symlinks resolved; empty when missing
        if (!target.isEmpty() && target != fi.absoluteFilePath()) {
            names.insert(target);
            dirs.insert(QFileInfo(target).absolutePath());
        }
    }
    m_names = names;
    for (auto it = m_dirs.begin(); it != m_dirs.end();) {
        if (!dirs.contains(it.value())) {
            ::inotify_rm_watch(m_inotify, it.key());
            it = m_dirs.erase(it);
        } else {
            dirs.remove(it.value()); // already watched
            ++it;
        }
    }
    for (const QString &dir : std::as_const(dirs)) {
        const int wd = ::inotify_add_watch(m_inotify, QFile::encodeName(dir).constData(), kDirEvents);
        if (wd < 0)
            qCInfo(lcServer).noquote() << "upgrade check: cannot watch" << dir << ":" << std::strerror(errno);
        else
            m_dirs.insert(wd, dir);
    }
}

void UpgradeWatch::check()
{
    if (m_inotify < 0)
        return;
    updateWatches();
    const QString bin = m_binary();
    struct stat st, running;
    if (bin.isEmpty() || !statFile(bin, &st)) {
        // Gone (an upgrade in progress, or removed): no restart could run it.
        killProbe();
        m_seen = Identity();
        setUpdate(Update());
        return;
    }
    if (::access(QFile::encodeName(bin).constData(), X_OK) != 0) {
        killProbe();
        m_seen = Identity();
        setUpdate(Update()); // not executable (yet): a restart would be refused
        return;
    }
    if (::stat("/proc/self/exe", &running) == 0 && running.st_dev == st.st_dev && running.st_ino == st.st_ino) {
        killProbe();
        m_seen = Identity();
        setUpdate(Update()); // the running file itself: nothing new
        return;
    }
    Identity id;
    id.dev = st.st_dev;
    id.ino = st.st_ino;
    id.mtimeNs = qint64(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
    id.size = qint64(st.st_size);
    id.mode = st.st_mode;
    if (id == m_seen && bin == m_probePath)
        return; // this very file was (or is being) asked already
    probe(bin, id);
}

void UpgradeWatch::probe(const QString &path, const Identity &id)
{
    killProbe();
    m_seen = id;
    m_probePath = path;
    auto *p = new QProcess(this);
    m_probe = p;
    p->setStandardInputFile(QProcess::nullDevice());
    p->setStandardErrorFile(QProcess::nullDevice());
    connect(p, &QProcess::readyReadStandardOutput, this, [this, p]() {
        if (p == m_probe && p->bytesAvailable() > kMaxProbeOutput) {
            killProbe();
            probeDone(false, QByteArray());
        }
    });
    connect(p, QOverload<int, QProcess::ExitStatus>::of(&QProcess::finished), this,
            [this, p](int code, QProcess::ExitStatus status) {
                if (p != m_probe)
                    return;
                const QByteArray out = p->read(kMaxProbeOutput);
                m_probe = nullptr;
                p->deleteLater();
                m_probeTimeout.stop();
                probeDone(status == QProcess::NormalExit && code == 0, out);
            });
    connect(p, &QProcess::errorOccurred, this, [this, p](QProcess::ProcessError e) {
        if (p != m_probe || e != QProcess::FailedToStart)
            return; // other errors end in finished()
        m_probe = nullptr;
        p->deleteLater();
        m_probeTimeout.stop();
        probeDone(false, QByteArray());
    });
    m_probeTimeout.start();
    p->start(path, {QStringLiteral("--version")}, QIODevice::ReadOnly);
}

void UpgradeWatch::probeDone(bool ok, const QByteArray &output)
{
    const QString v = ok ? parseVersionLine(output) : QString();
    if (v.isEmpty()) {
        qCInfo(lcServer).noquote() << "upgrade check:" << m_probePath << "is not a Tether that tells its version";
        setUpdate(Update());
        return;
    }
    setUpdate(Update{v, m_probePath});
}

void UpgradeWatch::setUpdate(const Update &u)
{
    if (u.version == m_update.version && u.binary == m_update.binary)
        return;
    m_update = u;
    if (!u.version.isEmpty())
        qCInfo(lcServer).noquote() << "Tether" << u.version << "was installed at" << u.binary << "(running"
                                   << version() + QStringLiteral("): restart in place to use it; sessions are kept");
    Q_EMIT updateChanged();
}

void UpgradeWatch::killProbe()
{
    m_probeTimeout.stop();
    QProcess *p = m_probe;
    if (!p)
        return;
    m_probe = nullptr;
    p->disconnect(this);
    // Not our child object any more: deleting it while it runs would wait for
    // it (~QProcess), and it may outlive us by the moment it takes to die.
    p->setParent(nullptr);
    if (p->state() == QProcess::NotRunning) {
        p->deleteLater();
        return;
    }
    // Reaped by QProcess when it ends (deleting it now would wait for that).
    connect(p, QOverload<int, QProcess::ExitStatus>::of(&QProcess::finished), p, &QObject::deleteLater);
    p->kill();
    m_seen = Identity(); // not answered: ask again on the next look
}

pid_t UpgradeWatch::abandonProbe()
{
    QProcess *p = m_probe;
    if (!p || p->state() == QProcess::NotRunning)
        return 0;
    const pid_t pid = pid_t(p->processId());
    killProbe();
    // If the exec fails we carry on: look at the binary again then.
    QTimer::singleShot(0, this, [this]() { m_settle.start(); });
    return pid;
}

} // namespace Tether
