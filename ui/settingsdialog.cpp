// SPDX-License-Identifier: GPL-2.0-or-later
#include "settingsdialog.h"
#include "loopback.h"
#include "appicon.h"

#include "logging.h"
#include "settingsbounds.h"
#include "shellwords.h"

#include <QCheckBox>
#include <QComboBox>
#include <QCoreApplication>
#include <QDialogButtonBox>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QFontComboBox>
#include <QFontDatabase>
#include <QFormLayout>
#include <QGroupBox>
#include <QScreen>
#include <QScrollArea>
#include <QScrollBar>
#include <QShowEvent>
#include <QStyle>
#include <QTabWidget>
#include <QGuiApplication>
#include <QHBoxLayout>
#include <QJsonArray>
#include <QHostAddress>
#include <QJsonDocument>
#include <QLabel>
#include <QLineEdit>
#include <QMessageBox>
#include <QPushButton>
#include <QSaveFile>
#include <QSettings>
#include <QSpinBox>
#include <QStandardPaths>
#include <QVBoxLayout>

#ifdef TETHER_HAVE_QTERMWIDGET
#if TETHER_QTERMWIDGET_MAJOR == 6
#include <qtermwidget6/qtermwidget.h>
#else
#include <qtermwidget5/qtermwidget.h>
#endif
#endif

#include <algorithm>

namespace Tether {

namespace {
constexpr int kMaxTtlSeconds = SettingsBounds::kMaxTtlSeconds;

struct Unit {
    const char *name;
    qint64 factor;
};
const Unit kTtlUnits[] = {{QT_TRANSLATE_NOOP("Tether::SettingsDialog", "seconds"), 1},
                          {QT_TRANSLATE_NOOP("Tether::SettingsDialog", "minutes"), 60},
                          {QT_TRANSLATE_NOOP("Tether::SettingsDialog", "hours"), 3600}};
/// The largest number the buffer size box takes, whatever the unit; bigger
/// than any valid size in either unit so that no keystroke is dropped.
constexpr int kBufferMaxTyped = 9999999;
const Unit kBufferUnits[] = {{QT_TRANSLATE_NOOP("Tether::SettingsDialog", "KiB"), 1024},
                             {QT_TRANSLATE_NOOP("Tether::SettingsDialog", "MiB"), 1024 * 1024}};

QLabel *hint(const QString &text, QWidget *parent)
{
    auto *l = new QLabel(text, parent);
    // No word wrap: wrapped labels in a QFormLayout get clipped (their
    // height is computed for another width); hints carry explicit breaks.
    QFont f = l->font();
    f.setPointSizeF(f.pointSizeF() * 0.9);
    l->setFont(f);
    // Dimmed text: WindowText blended halfway towards Window. (PlaceholderText
    // renders invisible for plain-text labels in some Qt 5 styles.)
    QPalette pal = l->palette();
    const QColor fg = pal.color(QPalette::WindowText);
    const QColor bg = pal.color(QPalette::Window);
    pal.setColor(QPalette::WindowText, QColor((fg.red() * 3 + bg.red() * 2) / 5,
                                              (fg.green() * 3 + bg.green() * 2) / 5,
                                              (fg.blue() * 3 + bg.blue() * 2) / 5));
    l->setPalette(pal);
    return l;
}

/// A settings page that scrolls (vertically) only on a screen too small for
/// it. Its size hint is the whole page's, as the page has it now:
/// QScrollArea's own is cached and bounded to 24 lines of its font, so the
/// Sessions page scrolled in a dialog that had room for it.
class PageArea : public QScrollArea
{
public:
    QSize sizeHint() const override
    {
        const int f = 2 * frameWidth();
        const QSize page = widget() ? widget()->sizeHint() : QSize(0, 0);
        return page + QSize(f + verticalScrollBar()->sizeHint().width(), f);
    }
};

/// The red line under a field that says what is wrong with it; hidden until
/// updateValidity() has something to say.
QLabel *errorLine(const char *objectName, QWidget *parent)
{
    auto *l = new QLabel(parent);
    l->setObjectName(QLatin1String(objectName));
    l->setStyleSheet(QStringLiteral("color: #b00020;"));
    l->hide();
    return l;
}
} // namespace

SettingsDialog::SettingsDialog(QSettings *settings, QWidget *parent)
    : QDialog(parent)
    , m_settings(settings)
{
    qRegisterMetaType<Tether::DesktopSettings>();
    if (!m_settings) {
        m_settings = new QSettings(QStringLiteral("Tether"), QStringLiteral("tether"));
        m_ownsSettings = true;
    }
    // "Settings — Tether": Qt appends the application display name itself.
    setWindowTitle(QGuiApplication::applicationDisplayName().isEmpty() ? tr("Tether Settings")
                                                                       : tr("Settings"));
    setWindowIcon(appIcon());

    auto *top = new QVBoxLayout(this);
    // One tab per topic: stacked as group boxes the dialog was 584x843, and
    // OK/Cancel/Apply were below a 1280x800 screen (a new user's tryout).
    // A tab is as tall as the tallest page; each page scrolls on a screen
    // smaller still (fitHeight()).
    m_tabs = new QTabWidget(this);
    m_tabs->setObjectName(QStringLiteral("settingsTabs"));

    // --- sessions ---------------------------------------------------------
    auto *sessions = new QWidget;
    m_sessionsPage = sessions;
    auto *sform = new QFormLayout(sessions);

    sform->addRow(tr("Close detached sessions after:"), makeDurationField(&m_ttl, sessions, QStringLiteral("ttl")));
    sform->addRow(QString(), hint(tr("A running session nobody is attached to ends this long\n"
                                     "after its last viewer left. 0 = never (as tmux)."), sessions));
    sform->addRow(tr("Keep exited sessions for:"),
                  makeDurationField(&m_exitedTtl, sessions, QStringLiteral("exitedTtl")));
    sform->addRow(QString(), hint(tr("A session whose program ended stays this long, unwatched,\n"
                                     "so that its last output can be read. 0 = until closed."), sessions));

    m_buffer = new QSpinBox(sessions);
    m_buffer->setObjectName(QStringLiteral("bufferSize"));
    m_bufferUnit = new QComboBox(sessions);
    m_bufferUnit->setObjectName(QStringLiteral("bufferUnit"));
    for (const Unit &u : kBufferUnits)
        m_bufferUnit->addItem(tr(u.name), u.factor);
    // The number is not bounded per unit: a QSpinBox drops a keystroke that
    // would pass its maximum, so with a 64 (MiB) maximum typing "100" left
    // "10" without a word. Any number can be typed; one outside 64 KiB ..
    // 64 MiB shows m_bufferError and disables OK/Apply (updateValidity()).
    m_buffer->setRange(1, kBufferMaxTyped);
    m_buffer->setToolTip(tr("64 KiB to 64 MiB"));
    auto *bufRow = new QHBoxLayout;
    bufRow->addWidget(m_buffer, 1);
    bufRow->addWidget(m_bufferUnit);
    sform->addRow(tr("Output kept per session:"), bufRow);
    m_bufferError = errorLine("bufferError", sessions);
    sform->addRow(QString(), m_bufferError);
    sform->addRow(QString(), hint(tr("64 KiB to 64 MiB, replayed when you reattach.\n"
                                     "A new size applies at once, to running sessions too:\n"
                                     "shrinking drops their oldest output."), sessions));

    m_maxSessions = new QSpinBox(sessions);
    m_maxSessions->setObjectName(QStringLiteral("maxSessions"));
    m_maxSessions->setRange(1, 1); // up to the host's max_sessions_limit (setHostSettings())
    sform->addRow(tr("Maximum sessions:"), m_maxSessions);
    sform->addRow(QString(), hint(tr("When full, a new session may end an exited session\n"
                                     "nobody watches; never a running one."), sessions));

    m_command = new QLineEdit(sessions);
    m_command->setObjectName(QStringLiteral("command"));
    m_command->setPlaceholderText(tr("your login shell"));
    sform->addRow(tr("Default command:"), m_command);
    m_commandError = errorLine("commandError", sessions);
    sform->addRow(QString(), m_commandError);
    sform->addRow(QString(), hint(tr("Words as a shell reads them (quotes group words),\n"
                                     "but nothing is expanded: for | or $VAR use sh -c '…'."), sessions));
    addPage(sessions, tr("Sessions"));

    // --- server -----------------------------------------------------------
    auto *server = new QWidget;
    m_serverPage = server;
    auto *vform = new QFormLayout(server);
    m_bind = new QLineEdit(server);
    m_bind->setObjectName(QStringLiteral("bind"));
    m_bind->setPlaceholderText(QStringLiteral("127.0.0.1"));
    vform->addRow(tr("Listen on address:"), m_bind);
    m_bindError = errorLine("bindError", server);
    vform->addRow(QString(), m_bindError);
    m_port = new QSpinBox(server);
    m_port->setObjectName(QStringLiteral("port"));
    m_port->setRange(0, 65535);
    m_port->setSpecialValueText(tr("any free port"));
    vform->addRow(tr("Port:"), m_port);
    // As the README says (Remote use, Settings: server/bind): off loopback
    // only over HTTPS; without a certificate the server refuses to start
    // there (BindPolicy).
    m_serverNote = hint(tr("Address and port take effect when Tether restarts.\n"
                           "Off loopback (127.0.0.1, ::1, localhost) Tether serves only over\n"
                           "HTTPS: set server/tlsCert and server/tlsKey in the settings file,\n"
                           "or it refuses to start there. An SSH tunnel needs neither."), server);
    m_serverNote->setObjectName(QStringLiteral("serverNote"));
    vform->addRow(QString(), m_serverNote);
    addPage(server, tr("Server"));

    // Above the tabs: whether the host's settings are in, or what the host
    // answered.
    m_hostNote = new QLabel(this);
    m_hostNote->setObjectName(QStringLiteral("hostNote"));
    m_hostNote->setWordWrap(true);
    top->addWidget(m_hostNote);
    // Above the tabs too: it names session limits and may show with any tab.
    m_overrideNote = hint(QString(), this);
    m_overrideNote->setObjectName(QStringLiteral("overrideNote"));
    m_overrideNote->setWordWrap(true);
    top->addWidget(m_overrideNote);
    top->addWidget(m_tabs, 1);

    // --- desktop ------------------------------------------------------------
    auto *desktop = new QWidget;
    auto *dlay = new QVBoxLayout(desktop);
    m_autostart = new QCheckBox(tr("Start Tether when I log in"), desktop);
    m_autostart->setObjectName(QStringLiteral("autostart"));
    // Which binary login will start: `tether` from PATH, or this build's path.
    m_autostart->setToolTip(tr("Writes %1, which runs: %2")
                                .arg(autostartPath(), autostartExec(QCoreApplication::applicationFilePath())));
    dlay->addWidget(m_autostart);

#ifdef TETHER_HAVE_QTERMWIDGET
    // --- terminal windows ----------------------------------------------------
    auto *terminal = new QGroupBox(tr("Terminal windows"), desktop);
    auto *tform = new QFormLayout(terminal);
    m_colorScheme = new QComboBox(terminal);
    m_colorScheme->setObjectName(QStringLiteral("colorScheme"));
    QStringList schemes = QTermWidget::availableColorSchemes();
    schemes.sort(Qt::CaseInsensitive);
    m_colorScheme->addItems(schemes);
    tform->addRow(tr("Colours:"), m_colorScheme);
    m_fontFamily = new QFontComboBox(terminal);
    m_fontFamily->setObjectName(QStringLiteral("fontFamily"));
    m_fontFamily->setFontFilters(QFontComboBox::MonospacedFonts);
    tform->addRow(tr("Font:"), m_fontFamily);
    m_fontSize = new QSpinBox(terminal);
    m_fontSize->setObjectName(QStringLiteral("fontSize"));
    m_fontSize->setRange(DesktopSettings::kMinTerminalFontSize, DesktopSettings::kMaxTerminalFontSize);
    m_fontSize->setSuffix(tr(" pt"));
    tform->addRow(tr("Size:"), m_fontSize);
    tform->addRow(QString(), hint(tr("For every terminal window, open ones included.\n"
                                     "Ctrl++ / Ctrl+- zoom one window for a while."), terminal));
    dlay->addWidget(terminal);
#endif
    addPage(desktop, tr("Desktop"));

    m_buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Apply
                                     | QDialogButtonBox::Cancel, this);
    connect(m_buttons, &QDialogButtonBox::accepted, this, &SettingsDialog::accept);
    connect(m_buttons, &QDialogButtonBox::rejected, this, &SettingsDialog::reject);
    connect(m_buttons->button(QDialogButtonBox::Apply), &QPushButton::clicked, this,
            [this] { apply(); });
    top->addWidget(m_buttons);

    connect(m_bufferUnit, QOverload<int>::of(&QComboBox::currentIndexChanged), this,
            &SettingsDialog::onBufferUnitChanged);
    connect(m_bind, &QLineEdit::textChanged, this, &SettingsDialog::updateValidity);
    connect(m_command, &QLineEdit::textChanged, this, &SettingsDialog::updateValidity);
    connect(m_buffer, QOverload<int>::of(&QSpinBox::valueChanged), this, &SettingsDialog::updateValidity);
    connect(m_port, QOverload<int>::of(&QSpinBox::valueChanged), this, &SettingsDialog::updateValidity);

    m_confirmNonLoopback = [this](const QString &address) {
        return QMessageBox::warning(this, tr("Listen on the network?"), nonLoopbackQuestion(address, m_hostTls),
                                    QMessageBox::Yes | QMessageBox::No, QMessageBox::No)
            == QMessageBox::Yes;
    };

    m_overrideNote->hide();
    loadDesktop();
    setHostNote(tr("Reading Tether's settings…"));
}

void SettingsDialog::addPage(QWidget *page, const QString &title)
{
    if (auto *box = qobject_cast<QBoxLayout *>(page->layout()))
        box->addStretch(1);
    auto *area = new PageArea;
    area->setFrameShape(QFrame::NoFrame);
    area->setWidgetResizable(true);
    area->setWidget(page);
    // Only vertical scrolling: as wide as the page needs, with room for the bar.
    area->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
    area->setMinimumWidth(page->minimumSizeHint().width()
                          + area->verticalScrollBar()->sizeHint().width());
    m_tabs->addTab(area, title);
}

int SettingsDialog::fittingHeight()
{
    // The pages' new hints reach the dialog's layout only through posted
    // LayoutRequest events: push them through now.
    for (int i = 0; i < m_tabs->count(); ++i) {
        auto *area = qobject_cast<QScrollArea *>(m_tabs->widget(i));
        if (area && area->widget() && area->widget()->layout())
            area->widget()->layout()->activate();
        m_tabs->widget(i)->updateGeometry();
    }
    m_tabs->updateGeometry();
    if (layout())
        layout()->activate();
    int h = sizeHint().height();
    if (const QScreen *screen = this->screen()) {
        // The window manager's frame: known once shown; a title bar's worth before.
        const int frame = qMax(frameGeometry().height() - height(),
                               style()->pixelMetric(QStyle::PM_TitleBarHeight, nullptr, this));
        h = qMin(h, screen->availableGeometry().height() - frame);
    }
    return qMax(h, minimumSizeHint().height());
}

void SettingsDialog::showEvent(QShowEvent *event)
{
    QDialog::showEvent(event);
    // Qt opens a window at most 2/3 of the screen tall (QWidget::adjustSize):
    // open at the whole form instead, bounded by the screen.
    if (!m_fitted && !event->spontaneous()) {
        m_fitted = true;
        resize(width(), fittingHeight());
    }
}

SettingsDialog::~SettingsDialog()
{
    if (m_ownsSettings)
        delete m_settings;
}

void SettingsDialog::setHost(const ServerEndpoint &endpoint)
{
    delete m_api; // its requests' callbacks go with it
    m_api = new ApiClient(endpoint, this);
    m_patchPending = false;
    const bool tls = endpoint.url.scheme() == QLatin1String("https");
    if (m_host.isEmpty())
        setHostNote(tr("Reading Tether's settings…"));
    m_api->get(QStringLiteral("api/settings"), [this, tls](const ApiReply &reply) {
        if (reply.status != 200) {
            setHostNote(tr("Cannot read Tether's settings: %1").arg(reply.errorText()), true);
            return;
        }
        // What the user changed in the form stays changed (a host that moved
        // while the dialog was open): only the baseline is the new host's.
        const QJsonObject edits = hostChanges();
        QJsonObject shown = reply.json();
        for (auto it = edits.begin(); it != edits.end(); ++it)
            shown.insert(it.key(), it.value());
        setHostSettings(shown, tls);
        m_host = reply.json();
        updateValidity();
    });
}

void SettingsDialog::setHostSettings(const QJsonObject &settings, bool tls)
{
    m_host = settings;
    m_hostTls = tls;
    setDuration(&m_ttl, settings.value(QStringLiteral("ttl")).toInt());
    setDuration(&m_exitedTtl, settings.value(QStringLiteral("exited_ttl")).toInt());

    const qint64 buf = qint64(settings.value(QStringLiteral("buffer_size")).toDouble());
    const int bunit = buf % (1024 * 1024) == 0 ? 1 : 0;
    m_bufferUnit->blockSignals(true);
    m_bufferUnit->setCurrentIndex(bunit);
    m_bufferUnit->blockSignals(false);
    m_bufferUnitBytes = kBufferUnits[bunit].factor;
    m_buffer->setValue(int(buf / m_bufferUnitBytes));

    const int max = settings.value(QStringLiteral("max_sessions")).toInt(1);
    m_maxSessions->setRange(1, qMax(max, settings.value(QStringLiteral("max_sessions_limit")).toInt(max)));
    m_maxSessions->setValue(max);
    m_command->setText(settings.value(QStringLiteral("command")).toString());
    m_bind->setText(settings.value(QStringLiteral("bind")).toString());
    m_port->setValue(settings.value(QStringLiteral("port")).toInt());
    const QJsonObject serving = settings.value(QStringLiteral("serving")).toObject();
    m_runningBind = serving.value(QStringLiteral("bind")).toString();
    m_runningPort = serving.contains(QStringLiteral("port")) ? serving.value(QStringLiteral("port")).toInt() : -1;

    // What this run of the host has from its command line, over the file.
    QStringList differ;
    for (const QJsonValue &v : settings.value(QStringLiteral("overridden")).toArray()) {
        const QString name = v.toString();
        const QJsonValue value = settings.value(name);
        if (name == QLatin1String("ttl"))
            differ << tr("close after %1 s").arg(value.toInt());
        else if (name == QLatin1String("exited_ttl"))
            differ << tr("keep exited sessions %1 s").arg(value.toInt());
        else if (name == QLatin1String("buffer_size"))
            differ << tr("%1 KiB kept per session").arg(qint64(value.toDouble()) / 1024);
        else if (name == QLatin1String("max_sessions"))
            differ << tr("at most %1 sessions").arg(value.toInt());
        else if (name == QLatin1String("command"))
            differ << tr("command “%1”").arg(value.toString());
        else
            differ << name;
    }
    m_overrideNote->setText(differ.isEmpty() ? QString()
        : tr("This run uses command-line values: %1. They stay in effect until you change "
             "that field here; the changed field is then saved too.").arg(differ.join(QStringLiteral(", "))));
    m_overrideNote->setVisible(!differ.isEmpty());
    setHostNote(QString());
    updateValidity();
}

void SettingsDialog::setHostNote(const QString &note, bool error)
{
    m_hostNote->setText(note);
    m_hostNote->setStyleSheet(error ? QStringLiteral("color: #b00020;") : QString());
    m_hostNote->setVisible(!note.isEmpty());
    m_sessionsPage->setEnabled(!m_host.isEmpty());
    m_serverPage->setEnabled(!m_host.isEmpty());
}

bool SettingsDialog::isRestartNeeded() const
{
    if (m_host.isEmpty() || m_runningPort < 0)
        return false;
    const QString bind = formBind();
    const int port = m_port->value();
    // What the host uses already: nothing to restart for.
    if (bind == m_runningBind && (port == 0 || port == m_runningPort))
        return false;
    // What its settings file holds, which the form opens with: started with
    // `--port 0` (or --bind), the host listens elsewhere than saved, and the
    // form showing the saved address is no edit.
    return bind != m_host.value(QStringLiteral("bind")).toString() || port != m_host.value(QStringLiteral("port")).toInt();
}

void SettingsDialog::loadDesktop()
{
    const DesktopSettings d = DesktopSettings::load(*m_settings);
    m_autostart->setChecked(isAutostartEnabled());
    if (m_colorScheme) {
        const int scheme = m_colorScheme->findText(d.terminalColorScheme);
        m_colorScheme->setCurrentIndex(scheme >= 0 ? scheme : m_colorScheme->findText(QStringLiteral("BlackOnWhite")));
        m_fontFamily->setCurrentFont(d.terminalFontFamily.isEmpty() ? QFontDatabase::systemFont(QFontDatabase::FixedFont)
                                                                    : QFont(d.terminalFontFamily));
        m_fontSize->setValue(d.terminalFontSize);
    }
    updateValidity();
}

int SettingsDialog::DurationField::seconds() const
{
    return value->value() * unitSeconds;
}

QHBoxLayout *SettingsDialog::makeDurationField(DurationField *f, QWidget *parent, const QString &name)
{
    f->value = new QSpinBox(parent);
    f->value->setObjectName(name);
    f->value->setSpecialValueText(tr("never"));
    f->unit = new QComboBox(parent);
    f->unit->setObjectName(name + QStringLiteral("Unit"));
    for (const Unit &u : kTtlUnits)
        f->unit->addItem(tr(u.name), u.factor);
    // The number stays; only its unit changes ("30" minutes -> "30" hours),
    // clamped to the longest TTL the host accepts.
    connect(f->unit, QOverload<int>::of(&QComboBox::currentIndexChanged), this, [f](int index) {
        const int value = f->value->value();
        f->unitSeconds = int(kTtlUnits[index].factor);
        f->value->setRange(0, kMaxTtlSeconds / f->unitSeconds);
        f->value->setValue(value);
    });
    auto *row = new QHBoxLayout;
    row->addWidget(f->value, 1);
    row->addWidget(f->unit);
    return row;
}

void SettingsDialog::setDuration(DurationField *f, int seconds)
{
    int unit = 1; // minutes for 0 and for whole minutes
    if (seconds != 0 && seconds % 3600 == 0)
        unit = 2;
    else if (seconds % 60 != 0)
        unit = 0;
    f->unit->blockSignals(true);
    f->unit->setCurrentIndex(unit);
    f->unit->blockSignals(false);
    f->unitSeconds = int(kTtlUnits[unit].factor);
    f->value->setRange(0, kMaxTtlSeconds / f->unitSeconds);
    f->value->setValue(seconds / f->unitSeconds);
}

void SettingsDialog::onBufferUnitChanged(int index)
{
    // As for the TTL, the number stays and only its unit changes; a size out
    // of range now shows the error instead of being clamped silently.
    m_bufferUnitBytes = kBufferUnits[index].factor;
    updateValidity();
}

bool SettingsDialog::isBufferSizeValid() const
{
    const qint64 bytes = qint64(m_buffer->value()) * m_bufferUnitBytes;
    return bytes >= SettingsBounds::kMinBufferSize && bytes <= SettingsBounds::kMaxBufferSize;
}

QString SettingsDialog::nonLoopbackQuestion(const QString &address, bool tls)
{
    const QString a = address.toHtmlEscaped();
    if (tls)
        return tr("<p>After a restart Tether will listen on <b>%1</b>, which is not a loopback address, "
                  "over HTTPS with the certificate of the settings file. Other machines that can reach "
                  "this one can then connect to your terminals; only the access key stops them.</p>"
                  "<p>Listen on %1?</p>")
            .arg(a);
    return tr("<p>After a restart Tether will be set to listen on <b>%1</b>, which is not a loopback "
              "address. Off loopback Tether serves only over HTTPS, and no certificate is set "
              "(server/tlsCert and server/tlsKey in the settings file): it will refuse to start "
              "until you set one, or bind a loopback address again. From another machine, an SSH "
              "tunnel to a loopback bind needs no certificate (README, Remote use).</p>"
              "<p>Save %1 anyway?</p>")
        .arg(a);
}

bool SettingsDialog::isLoopbackAddress(const QString &address)
{
    return isLoopbackHost(address);
}

bool SettingsDialog::isFormValid() const
{
    return isBufferSizeValid() && isBindValid() && isCommandValid();
}

bool SettingsDialog::isCommandValid(QString *error) const
{
    return ShellWords::split(m_command->text(), error).has_value();
}

bool SettingsDialog::isBindValid() const
{
    const QString a = m_bind->text().trimmed();
    if (a.isEmpty() || a.compare(QLatin1String("localhost"), Qt::CaseInsensitive) == 0)
        return true;
    QHostAddress h;
    return h.setAddress(a);
}

void SettingsDialog::updateValidity()
{
    const auto errorLines = {m_bindError, m_bufferError, m_commandError};
    const bool wasShowingError = std::any_of(errorLines.begin(), errorLines.end(), [](QLabel *l) { return !l->isHidden(); });
    const bool bindOk = isBindValid();
    m_bindError->setText(bindOk ? QString() : tr("Not an IP address (e.g. 127.0.0.1, ::1, 0.0.0.0)."));
    m_bindError->setVisible(!bindOk);
    const bool bufferOk = isBufferSizeValid();
    const QString typed = QStringLiteral("%1 %2").arg(m_buffer->value()).arg(tr(kBufferUnits[m_bufferUnit->currentIndex()].name));
    m_bufferError->setText(bufferOk ? QString()
                                    : qint64(m_buffer->value()) * m_bufferUnitBytes > SettingsBounds::kMaxBufferSize
                                    ? tr("%1 is too large: at most 64 MiB (65536 KiB).").arg(typed)
                                    : tr("%1 is too small: at least 64 KiB.").arg(typed));
    m_bufferError->setVisible(!bufferOk);
    QString commandWhy;
    const bool commandOk = isCommandValid(&commandWhy);
    m_commandError->setText(commandOk ? QString() : tr("Cannot split the command: %1.").arg(commandWhy));
    m_commandError->setVisible(!commandOk);
    const bool ok = bindOk && bufferOk && commandOk;
    m_buttons->button(QDialogButtonBox::Ok)->setEnabled(ok);
    m_buttons->button(QDialogButtonBox::Apply)->setEnabled(ok);
    // An error line needs a line more on its page: grow to show it (the
    // pages scroll, so the layout would not grow the window itself), and give
    // that height back once it is gone. A page with room to spare (not the
    // tallest) changes nothing.
    const bool showingError = std::any_of(errorLines.begin(), errorLines.end(), [](QLabel *l) { return !l->isHidden(); });
    if (showingError != wasShowingError) {
        const int h = fittingHeight();
        if (showingError ? height() < h : height() > h)
            resize(width(), h);
    }
    if (m_runningPort >= 0) {
        const bool restart = isRestartNeeded();
        m_serverNote->setText(
            (restart ? tr("<b>Restart Tether to use the new address.</b><br>") : QString())
            + tr("Now listening on %1, port %2.<br>Off loopback (127.0.0.1, ::1, localhost) Tether serves only over<br>"
                 "HTTPS: set server/tlsCert and server/tlsKey in the settings file,<br>"
                 "or it refuses to start there. An SSH tunnel needs neither.")
                  .arg(m_runningBind.toHtmlEscaped())
                  .arg(m_runningPort));
    }
}

QString SettingsDialog::formBind() const
{
    const QString bind = m_bind->text().trimmed();
    return bind.isEmpty() ? QStringLiteral("127.0.0.1") : bind;
}

qint64 SettingsDialog::bufferBytes() const
{
    return qBound<qint64>(SettingsBounds::kMinBufferSize, qint64(m_buffer->value()) * m_bufferUnitBytes,
                          SettingsBounds::kMaxBufferSize);
}

QJsonObject SettingsDialog::hostForm() const
{
    if (m_host.isEmpty())
        return QJsonObject();
    return QJsonObject{
        {QStringLiteral("ttl"), m_ttl.seconds()},
        {QStringLiteral("exited_ttl"), m_exitedTtl.seconds()},
        {QStringLiteral("buffer_size"), double(bufferBytes())},
        {QStringLiteral("max_sessions"), m_maxSessions->value()},
        {QStringLiteral("command"), m_command->text().trimmed()},
        {QStringLiteral("bind"), formBind()},
        {QStringLiteral("port"), m_port->value()},
    };
}

QJsonObject SettingsDialog::hostChanges() const
{
    QJsonObject changes;
    const QJsonObject form = hostForm();
    for (auto it = form.begin(); it != form.end(); ++it) {
        // Numbers compared as numbers (a JSON 120 and 120.0 are one value).
        const QJsonValue was = m_host.value(it.key());
        const bool same = it.value().isDouble() ? was.isDouble() && was.toDouble() == it.value().toDouble()
                                                : was == it.value();
        if (!same)
            changes.insert(it.key(), it.value());
    }
    return changes;
}

DesktopSettings SettingsDialog::desktopForm() const
{
    DesktopSettings d = DesktopSettings::load(*m_settings); // keeps keys this dialog does not show
    if (m_colorScheme) {
        d.terminalColorScheme = m_colorScheme->currentText();
        d.terminalFontFamily = m_fontFamily->currentFont().family();
        d.terminalFontSize = m_fontSize->value();
    }
    return d;
}

bool SettingsDialog::apply()
{
    if (!isFormValid())
        return false;
    const QJsonObject changes = hostChanges();
    const QString bind = changes.value(QStringLiteral("bind")).toString();
    if (!bind.isEmpty() && !isLoopbackAddress(bind) && m_confirmNonLoopback && !m_confirmNonLoopback(bind))
        return false;

    // The desktop's own part.
    const DesktopSettings desktop = desktopForm();
    desktop.save(*m_settings);
    m_settings->setValue(QStringLiteral("ui/autostart"), m_autostart->isChecked());
    m_settings->sync();
    if (m_settings->status() != QSettings::NoError)
        qCWarning(lcUi) << "could not write settings to" << m_settings->fileName();
    if (m_autostart->isChecked() != isAutostartEnabled()) {
        QString error;
        if (!setAutostartEnabled(m_autostart->isChecked(), &error)) {
            QMessageBox::warning(this, tr("Start at login"), error);
            m_autostart->setChecked(isAutostartEnabled());
        }
    }
    Q_EMIT applied(desktop);

    // The host's part: it checks, saves and applies them.
    if (changes.isEmpty() || !m_api)
        return true;
    m_patchPending = true;
    setHostNote(tr("Saving…"));
    const bool tls = m_hostTls;
    // Judged on the form as sent (the answer is the new baseline).
    const bool restart = isRestartNeeded();
    m_api->patch(QStringLiteral("api/settings"), QJsonDocument(changes).toJson(QJsonDocument::Compact),
                 [this, tls, restart](const ApiReply &reply) {
                     m_patchPending = false;
                     if (reply.status != 200) {
                         m_closeWhenApplied = false;
                         const QString why = tr("Tether did not take the settings: %1").arg(reply.errorText());
                         setHostNote(why, true);
                         Q_EMIT hostRefused(why);
                         return;
                     }
                     const QJsonObject answer = reply.json();
                     setHostSettings(answer, tls);
                     Q_EMIT hostApplied(answer, restart);
                     if (m_closeWhenApplied) {
                         m_closeWhenApplied = false;
                         QDialog::accept();
                     }
                 });
    return true;
}

void SettingsDialog::accept()
{
    if (!apply())
        return;
    if (m_patchPending)
        m_closeWhenApplied = true; // once the host answered
    else
        QDialog::accept();
}

QString SettingsDialog::autostartPath()
{
    const QString config = QStandardPaths::writableLocation(QStandardPaths::GenericConfigLocation);
    return QDir(config).filePath(QStringLiteral("autostart/tether.desktop"));
}

bool SettingsDialog::isAutostartEnabled()
{
    return QFile::exists(autostartPath());
}

QString SettingsDialog::autostartExec(const QString &binary, const QStringList &searchPath)
{
    static const QString name = QStringLiteral("tether");
    if (binary.isEmpty())
        return name;
    const QString canonical = QFileInfo(binary).canonicalFilePath();
    const QString found = QStandardPaths::findExecutable(name, searchPath);
    if (!canonical.isEmpty() && !found.isEmpty() && QFileInfo(found).canonicalFilePath() == canonical)
        return name;

    // Desktop Entry spec, "The Exec key": an argument with a reserved
    // character is quoted, and inside the quotes " ` $ \ take a backslash.
    QString arg = QFileInfo(binary).absoluteFilePath();
    static const QString reserved = QStringLiteral(" \t\n\"'\\><~|&;$*?#()`");
    bool quote = false;
    for (QChar ch : arg)
        quote = quote || reserved.contains(ch);
    if (quote) {
        QString q;
        for (QChar ch : arg) {
            if (ch == QLatin1Char('"') || ch == QLatin1Char('`') || ch == QLatin1Char('$')
                || ch == QLatin1Char('\\'))
                q += QLatin1Char('\\');
            q += ch;
        }
        arg = QLatin1Char('"') + q + QLatin1Char('"');
    }
    // A literal % would start a field code (%f, %u, ...).
    arg.replace(QLatin1Char('%'), QStringLiteral("%%"));
    // Exec is a string value, unescaped before the quoting rules apply: every
    // backslash doubles again (so a literal backslash is four in the file),
    // and control characters become \n \t \r (a raw newline ends the key).
    QString out;
    for (QChar ch : arg) {
        switch (ch.unicode()) {
        case '\\': out += QStringLiteral("\\\\"); break;
        case '\n': out += QStringLiteral("\\n"); break;
        case '\t': out += QStringLiteral("\\t"); break;
        case '\r': out += QStringLiteral("\\r"); break;
        default: out += ch;
        }
    }
    return out;
}

bool SettingsDialog::setAutostartEnabled(bool enable, QString *error)
{
    const QString path = autostartPath();
    if (!enable) {
        if (QFile::exists(path) && !QFile::remove(path)) {
            if (error)
                *error = tr("Cannot remove %1.").arg(path);
            return false;
        }
        return true;
    }
    if (!QDir().mkpath(QFileInfo(path).absolutePath())) {
        if (error)
            *error = tr("Cannot create the directory %1.").arg(QFileInfo(path).absolutePath());
        return false;
    }
    const QString exec = autostartExec(QCoreApplication::applicationFilePath());
    const QString text = QStringLiteral(
        "[Desktop Entry]\n"
        "Type=Application\n"
        "Name=Tether\n"
        "GenericName=Terminal Session Keeper\n"
        "Comment=Keeps terminal sessions alive; reattach from the tray or a browser\n"
        "Exec=%1\n"
        "Icon=tether\n"
        "Terminal=false\n"
        "Categories=System;TerminalEmulator;\n"
        "X-GNOME-Autostart-enabled=true\n").arg(exec);
    QSaveFile f(path);
    if (!f.open(QIODevice::WriteOnly) || f.write(text.toUtf8()) < 0 || !f.commit()) {
        if (error)
            *error = tr("Cannot write %1: %2").arg(path, f.errorString());
        return false;
    }
    return true;
}

} // namespace Tether
