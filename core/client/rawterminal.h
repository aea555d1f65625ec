// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <termios.h>

namespace Tether {

/**
 * A terminal in raw mode for as long as a client needs it, and given back
 * exactly as it was: `tether attach` puts its terminal in raw mode so every
 * key (Ctrl-C, Ctrl-Z, ...) is a byte for the session.
 *
 * enter() saves the termios of a terminal fd and applies cfmakeraw(3) to a
 * copy; restore() puts the saved termios back with TCSANOW (TCSADRAIN would
 * wait for output a stuck terminal never takes). setNonBlocking() sets
 * O_NONBLOCK on an fd's open file description and restore() puts its flags
 * back too: that description may be shared with the shell (stdout), which
 * must not get it back non-blocking.
 *
 * Every exit path must restore: the destructor does, and restoreAll()
 * (registered with atexit(3) by the first enter()) restores every instance
 * still active when the process exits through exit(3). Errors of
 * tcgetattr/tcsetattr/fcntl surface as a false return; errno says why.
 * Not thread-safe (one event loop thread).
 */
class RawTerminal
{
public:
    RawTerminal();
    ~RawTerminal();
    RawTerminal(const RawTerminal &) = delete;
    RawTerminal &operator=(const RawTerminal &) = delete;

    /// Saves the termios of `fd` as it is now (restore() puts it back) and
    /// switches it to raw mode. False, changing nothing, when `fd` is not a
    /// terminal or the termios cannot be set. Calling it again (after
    /// restore(), e.g. when continued after SIGTSTP) re-reads the termios:
    /// the user may have run stty meanwhile.
    bool enter(int fd);
    /// Sets O_NONBLOCK on `fd`'s open file description unless it is set
    /// already, keeping its flags for restore(). False on an fcntl error.
    bool setNonBlocking(int fd);
    /// Puts back the saved termios and fd flags (each once); idempotent.
    void restore();

    /// In raw mode (enter() succeeded, not restored since).
    bool isRaw() const { return m_raw; }
    /// The terminal fd of the last enter(), -1 before.
    int fd() const { return m_fd; }

    /// The window size of the terminal on `fd` (TIOCGWINSZ, tty_ioctl(4)),
    /// each capped at 1000 (the protocol's limit). False when `fd` is not a
    /// terminal or reports 0 columns or rows.
    static bool windowSize(int fd, int *cols, int *rows);

    /// restore() on every RawTerminal still alive (for atexit(3)).
    static void restoreAll();

private:
    struct termios m_saved {};
    int m_fd = -1;
    bool m_raw = false;
    int m_flagsFd = -1;   ///< the fd setNonBlocking() changed, -1 if none
    int m_savedFlags = 0; ///< its flags before
    RawTerminal *m_next = nullptr;
};

} // namespace Tether
