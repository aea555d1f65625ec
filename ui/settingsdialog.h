// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include "apiclient.h"
#include "desktopsettings.h"

#include <QDialog>
#include <QJsonObject>
#include <QPointer>
#include <functional>

class QCheckBox;
class QComboBox;
class QFontComboBox;
class QDialogButtonBox;
class QHBoxLayout;
class QLabel;
class QLineEdit;
class QSettings;
class QSpinBox;
class QTabWidget;

namespace Tether {

/**
 * Tether's settings dialog, in the desktop app: a client of the host, which
 * owns its settings (issue 23). The host's part is read with `GET
 * /api/settings` and changed with `PATCH /api/settings` (docs/protocol.md
 * section 4), which the host checks, saves in its settings file and applies
 * at once; the dialog never writes the host's keys. The desktop's own part
 * (DesktopSettings: the terminal windows' look, the terminal emulator; and
 * start at login) is read and written here.
 *
 * The host's fields (their bounds: settingsbounds.h, and the host's
 * `max_sessions_limit`):
 *  - TTL for detached running sessions and, beside it, for exited sessions
 *    (`ttl`, `exited_ttl`), each with a unit (seconds / minutes / hours;
 *    0 = never);
 *  - buffer size per session in KiB or MiB, 64 KiB..64 MiB — the new size
 *    also applies to sessions already running (shrinking drops their
 *    oldest output). Any number can be typed; one out of range shows the
 *    bound in red and disables OK/Apply (a spin box bounded per unit dropped
 *    keystrokes: "100" MiB silently became 10);
 *  - maximum number of sessions (1..max_sessions_limit);
 *  - default command (empty = login shell), split as shell words
 *    (ShellWords::split, as the host reads it); an unterminated quote shows
 *    the error in red and disables OK/Apply;
 *  - bind address and port: saved by the host now, used after a restart; a
 *    non-loopback address asks for confirmation first.
 * Only the fields changed in the form are sent: a value a command-line
 * option set for the host's run (`tether serve --ttl 120`, listed by the
 * host as `overridden` and said above the tabs) stays until that field is
 * changed here. Until the host's settings arrived (setHost(),
 * setHostSettings()) its pages are disabled and say why.
 *
 * The desktop's fields: start at login (writes or removes
 * ~/.config/autostart/tether.desktop, XDG autostart; the directory comes
 * from QStandardPaths) and, in a QTermWidget build, the terminal windows'
 * colours and font.
 *
 * Layout: three tabs (Sessions; Server; Desktop), so that it fits a
 * 1280x720 screen with its buttons (stacked, it was 584x843). It opens as
 * tall as the tallest page, bounded by the screen's available height; a
 * page taller than that scrolls. An error line grows the dialog when its
 * page has no room and gives the height back when it goes.
 */
class SettingsDialog : public QDialog
{
    Q_OBJECT
public:
    /// `settings`: where the desktop's own settings are read and written
    /// (not owned); null = the default QSettings("Tether", "tether").
    explicit SettingsDialog(QSettings *settings = nullptr, QWidget *parent = nullptr);
    ~SettingsDialog() override;

    /// The host whose settings the dialog shows and changes: asks it for
    /// them now (`GET /api/settings`); setHostSettings() follows, or the
    /// host's note says why not. Called again when the host moved (a new
    /// address after it was started again): fields changed in the form and
    /// not applied yet keep their values.
    void setHost(const ServerEndpoint &endpoint);
    /**
     * The host's settings, as `GET /api/settings` answers them (also the
     * answer to a PATCH): fills the host's fields and enables them, and
     * makes them the baseline hostChanges() is counted from. Its `serving`
     * object (`bind`, `port`) is where the host listens now (shown as "Now
     * listening on…"); its `bind` and `port` are what its settings file
     * holds, which the command line may have overridden for this run
     * (`tether --port 0`: any free port). "Restart Tether to use the new
     * address" shows (and isRestartNeeded() says so) only when the form's
     * address is neither the one the host uses (a port of 0 takes any) nor
     * the one saved. `tls`: the host serves HTTPS (for the question before
     * a non-loopback bind).
     */
    void setHostSettings(const QJsonObject &settings, bool tls = false);
    /// The host's settings have arrived (its fields are enabled).
    bool hasHostSettings() const { return !m_host.isEmpty(); }
    /// Whether the form's address needs a restart of the host (see
    /// setHostSettings(); false before they arrived).
    bool isRestartNeeded() const;

    /// The host's fields as the form shows them, named as in `PATCH
    /// /api/settings` (`ttl`, `exited_ttl`, `buffer_size`, `max_sessions`,
    /// `command`, `bind`, `port`); empty before setHostSettings().
    QJsonObject hostForm() const;
    /// The PATCH body: the fields of hostForm() that differ from the host's
    /// settings (empty: nothing of the host changed).
    QJsonObject hostChanges() const;
    /// The desktop's settings as the form shows them (not saved yet).
    DesktopSettings desktopForm() const;
    /// Whether the form is valid: a parseable bind address, a buffer size
    /// within 64 KiB..64 MiB and a command that splits into words.
    bool isFormValid() const;

    /**
     * Validates, confirms a non-loopback bind, saves the desktop's settings
     * and the autostart entry (applied()), and sends hostChanges() to the
     * host (`PATCH /api/settings`): hostApplied() or hostRefused() follows.
     * Returns false (nothing saved nor sent) when the form is invalid or
     * the user declined.
     */
    bool apply();
    /// A PATCH sent by apply() has not been answered yet.
    bool isHostChangePending() const { return m_patchPending; }

    /// Replaces the "listen on a non-loopback address?" question (tests).
    /// The function gets the address and returns true to go ahead.
    void setNonLoopbackConfirmation(std::function<bool(const QString &)> confirm)
    { m_confirmNonLoopback = std::move(confirm); }

    /// ~/.config/autostart/tether.desktop (from QStandardPaths::GenericConfigLocation).
    static QString autostartPath();
    static bool isAutostartEnabled();
    /// Writes (enable) or removes the autostart entry. False with *error set on failure.
    /// Its Exec is autostartExec(QCoreApplication::applicationFilePath()).
    static bool setAutostartEnabled(bool enable, QString *error = nullptr);
    /// The Exec value that starts `binary`: plain `tether` when the `tether`
    /// found in `searchPath` (empty: $PATH) is that same file (after resolving
    /// symlinks), so the entry keeps working when an upgrade replaces the
    /// binary; else `binary`'s absolute path (a build-directory binary).
    /// Written per the Desktop Entry spec ("The Exec key"): quoted when it has
    /// a reserved character, with `"`, `` ` ``, `$` and `\` backslash-escaped
    /// inside the quotes, `%` doubled (field codes), then escaped as a string
    /// value (each backslash doubled, newline/tab/CR as \n \t \r).
    static QString autostartExec(const QString &binary, const QStringList &searchPath = QStringList());
    /// True for 127.0.0.0/8, ::1 and "localhost" (isLoopbackHost(), loopback.h).
    static bool isLoopbackAddress(const QString &address);
    /// The question asked before saving a bind `address` off loopback (rich
    /// text): with `tls` (the host serves HTTPS) that other machines can
    /// then connect over HTTPS; without, that Tether will refuse to start
    /// there (BindPolicy; README "Remote use"), and the SSH tunnel.
    static QString nonLoopbackQuestion(const QString &address, bool tls);

    /// OK: apply(), and close once the host took the changes (at once when
    /// none were sent); a refusal keeps the dialog open and says why.
    void accept() override;

protected:
    /// Opens at the whole form's height, bounded by the screen's available
    /// height (first show only).
    void showEvent(QShowEvent *event) override;

Q_SIGNALS:
    /// apply() saved the desktop's settings (and the autostart entry).
    void applied(const Tether::DesktopSettings &desktop);
    /// The host took the changes: `settings` is its answer (every field,
    /// as GET /api/settings); `restartNeeded`: isRestartNeeded() of the
    /// form as it was sent.
    void hostApplied(const QJsonObject &settings, bool restartNeeded);
    /// The host refused the changes, or could not be reached: `error`, as
    /// the dialog shows it.
    void hostRefused(const QString &error);

private:
    /// Adds `page` as a tab, in a scroll area (vertical only) whose size hint
    /// is the page's.
    void addPage(QWidget *page, const QString &title);
    /// The height that shows the tallest page whole, bounded by the screen's
    /// available height less the window frame (never below the minimum).
    int fittingHeight();
    /// Fills the desktop's fields from the settings file.
    void loadDesktop();
    void updateValidity();
    /// Enables the host's pages (Sessions, Server) or not; `note` says why
    /// not, or what the host answered (`error`: in red).
    void setHostNote(const QString &note, bool error = false);
    /// A duration as a number and a unit (seconds / minutes / hours, 0 = never).
    struct DurationField {
        QSpinBox *value = nullptr;
        QComboBox *unit = nullptr;
        int unitSeconds = 60;
        int seconds() const;
    };
    /// Makes `f`'s spin box and unit box (object names `name` and
    /// `name`+"Unit") and returns the row holding them.
    QHBoxLayout *makeDurationField(DurationField *f, QWidget *parent, const QString &name);
    /// Shows `seconds` in the largest unit that holds it exactly (minutes for 0).
    static void setDuration(DurationField *f, int seconds);
    void onBufferUnitChanged(int index);
    qint64 bufferBytes() const;
    bool isBindValid() const;
    bool isBufferSizeValid() const;
    /// The default command splits into words (ShellWords::split); else
    /// false with *error ("unterminated single quote").
    bool isCommandValid(QString *error = nullptr) const;
    /// The form's bind (127.0.0.1 for an empty field).
    QString formBind() const;

    QSettings *m_settings = nullptr;
    bool m_ownsSettings = false;
    ApiClient *m_api = nullptr;     ///< to the host (setHost()); owned
    QJsonObject m_host;             ///< the host's settings: the baseline of hostChanges()
    bool m_hostTls = false;
    bool m_patchPending = false;
    bool m_closeWhenApplied = false; ///< accept(): close once the PATCH is answered
    QString m_runningBind;
    int m_runningPort = -1;
    std::function<bool(const QString &)> m_confirmNonLoopback;

    DurationField m_ttl;        ///< ttl: a detached running session
    DurationField m_exitedTtl;  ///< exited_ttl: an exited session
    QSpinBox *m_buffer = nullptr;
    QComboBox *m_bufferUnit = nullptr;
    qint64 m_bufferUnitBytes = 1024 * 1024;
    QSpinBox *m_maxSessions = nullptr;
    QLineEdit *m_command = nullptr;
    QLineEdit *m_bind = nullptr;
    QSpinBox *m_port = nullptr;
    QLabel *m_serverNote = nullptr;
    QLabel *m_bindError = nullptr;
    QLabel *m_bufferError = nullptr;
    QLabel *m_commandError = nullptr;
    QLabel *m_hostNote = nullptr;     ///< "Reading Tether's settings…", or the host's refusal
    QLabel *m_overrideNote = nullptr; ///< the host's values set by its command line (`overridden`)
    QWidget *m_sessionsPage = nullptr;
    QWidget *m_serverPage = nullptr;
    QCheckBox *m_autostart = nullptr;
    /// Terminal windows (only in a build with QTermWidget; else null).
    QComboBox *m_colorScheme = nullptr;
    QFontComboBox *m_fontFamily = nullptr;
    QSpinBox *m_fontSize = nullptr;
    QDialogButtonBox *m_buttons = nullptr;
    QTabWidget *m_tabs = nullptr;  ///< Sessions, Server, Desktop
    bool m_fitted = false;         ///< sized to the form on the first show
};

} // namespace Tether

Q_DECLARE_METATYPE(Tether::DesktopSettings)
