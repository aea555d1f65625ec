// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include "config.h"

#include <QDialog>
#include <QPointer>
#include <functional>
#include <optional>

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

class SessionRegistry;

/**
 * Tether's settings dialog. Edits the QSettings keys documented in config.h
 * (through Config::load / Config::save) and applies the session limits to the
 * running registry at once (SessionRegistry::setLimits):
 *  - TTL for detached running sessions and, beside it, for exited sessions
 *    (sessions/ttl, sessions/exitedTtl), each with a unit (seconds / minutes
 *    / hours; 0 = never);
 *  - buffer size per session in KiB or MiB, 64 KiB..64 MiB (RingBuffer's
 *    kMinCapacity..kMaxCapacity, as `tether serve --buffer-size`) — the new
 *    size also applies to sessions already running (shrinking drops their
 *    oldest output). Any number can be typed; one out of range shows the
 *    bound in red and disables OK/Apply (a spin box bounded per unit dropped
 *    keystrokes: "100" MiB silently became 10);
 *  - maximum number of sessions (1..1024);
 *  - default command (empty = login shell), split as shell words
 *    (ShellWords::split, as sessions/command is read); an unterminated
 *    quote shows the error in red and disables OK/Apply;
 *  - bind address and port: stored now, used after a restart; a non-loopback
 *    address asks for confirmation first (the server would be reachable from
 *    the network);
 *  - start at login: writes or removes ~/.config/autostart/tether.desktop
 *    (XDG autostart; the directory comes from QStandardPaths).
 *
 * Layout: three tabs (Sessions; Server; Desktop, with the terminal windows'
 * colours and font in a QTermWidget build), so that it fits a 1280x720
 * screen with its buttons (stacked, it was 584x843). It opens as tall as the
 * tallest page, bounded by the screen's available height; a page taller than
 * that scrolls. An error line grows the dialog when its page has no room and
 * gives the height back when it goes.
 */
class SettingsDialog : public QDialog
{
    Q_OBJECT
public:
    /// `registry` receives the new limits (may be null). `settings`: where to
    /// read and write (not owned); null = the default QSettings("Tether", "tether").
    explicit SettingsDialog(SessionRegistry *registry, QSettings *settings = nullptr,
                            QWidget *parent = nullptr);
    ~SettingsDialog() override;

    /// Tells the dialog where the running server listens (`bind`, `port`:
    /// shown as "Now listening on…") and the address that was saved in the
    /// settings when it started (`savedBind`, `savedPort`), which the command
    /// line may have overridden for this run (`tether --port 0`: any free
    /// port). The form opens with the saved address, which is no edit: it
    /// says "Restart Tether to use the new address" (and applied() says
    /// restartNeeded) only when the form's address is neither the one the
    /// server uses (a port of 0 takes any) nor the one saved at its start.
    void setRunningAddress(const QString &bind, quint16 port, const QString &savedBind, quint16 savedPort);
    /// The same for a server started with the saved address (savedBind =
    /// `bind`, savedPort = `port`).
    void setRunningAddress(const QString &bind, quint16 port) { setRunningAddress(bind, port, bind, port); }
    /// The limits the running host applies (`GET /api/settings`), for a
    /// dialog without a registry in its process (the desktop app, a client
    /// of its host): the note on values a command-line option set for this
    /// run is made from them, and apply() keeps them for the fields left as
    /// saved, as with a registry.
    void setRunningLimits(const Limits &run);
    /// Whether `c`'s bind and port need a restart of the running server (see
    /// setRunningAddress(); false before it was called).
    bool isRestartNeeded(const Config &c) const;

    /// The configuration the form currently shows (not saved yet).
    Config formConfig() const;
    /// Whether the form is valid: a parseable bind address and a buffer size
    /// within 64 KiB..64 MiB.
    bool isFormValid() const;

    /// Validates, confirms a non-loopback bind, saves to QSettings, applies the
    /// limits to the registry and updates the autostart entry. Returns false
    /// (nothing saved) when the form is invalid or the user declined.
    bool apply();

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
    /// True for 127.0.0.0/8, ::1 and "localhost".
    static bool isLoopbackAddress(const QString &address);
    /// The question asked before saving a bind `address` off loopback (rich
    /// text): with `tls` (a certificate and key are set) that other machines
    /// can then connect over HTTPS; without, that Tether will refuse to start
    /// there (BindPolicy; README "Remote use"), and the SSH tunnel.
    static QString nonLoopbackQuestion(const QString &address, bool tls);

    void accept() override;

protected:
    /// Opens at the whole form's height, bounded by the screen's available
    /// height (first show only).
    void showEvent(QShowEvent *event) override;

Q_SIGNALS:
    /// Settings were saved and limits applied. `restartNeeded`: bind or port
    /// differ from the running server's.
    void applied(const Tether::Config &config, bool restartNeeded);

private:
    /// Adds `page` as a tab, in a scroll area (vertical only) whose size hint
    /// is the page's.
    void addPage(QWidget *page, const QString &title);
    /// The height that shows the tallest page whole, bounded by the screen's
    /// available height less the window frame (never below the minimum).
    int fittingHeight();
    void load();
    void updateValidity();
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
    bool isBindValid() const;
    bool isBufferSizeValid() const;
    /// The default command splits into words (ShellWords::split); else
    /// false with *error ("unterminated single quote").
    bool isCommandValid(QString *error = nullptr) const;

    QPointer<SessionRegistry> m_registry;
    std::optional<Limits> m_runningLimits; ///< setRunningLimits(): the host's, without a registry
    QSettings *m_settings = nullptr;
    bool m_ownsSettings = false;
    QString m_runningBind;
    int m_runningPort = -1;
    QString m_savedBind;      ///< server/bind when the running server started
    int m_savedPort = -1;     ///< server/port when the running server started
    std::function<bool(const QString &)> m_confirmNonLoopback;

    DurationField m_ttl;        ///< sessions/ttl: a detached running session
    DurationField m_exitedTtl;  ///< sessions/exitedTtl: an exited session
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
    QLabel *m_overrideNote = nullptr; ///< running limits that differ from the file (command line)
    /// Shows which running limits differ from the settings file (set by
    /// command-line options), hidden when none do.
    void updateOverrideNote();
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

Q_DECLARE_METATYPE(Tether::Config)
