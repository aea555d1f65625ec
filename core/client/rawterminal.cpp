// SPDX-License-Identifier: GPL-2.0-or-later
#include "rawterminal.h"

#include <cstdlib>
#include <fcntl.h>
#include <sys/ioctl.h>
#include <unistd.h>

namespace Tether {

namespace {
RawTerminal *g_instances = nullptr; ///< every live RawTerminal (for restoreAll)
bool g_atexitRegistered = false;
} // namespace

RawTerminal::RawTerminal()
    : m_next(g_instances)
{
    g_instances = this;
}

RawTerminal::~RawTerminal()
{
    restore();
    for (RawTerminal **p = &g_instances; *p; p = &(*p)->m_next) {
        if (*p == this) {
            *p = m_next;
            break;
        }
    }
}

bool RawTerminal::enter(int fd)
{
    struct termios saved {};
    if (::tcgetattr(fd, &saved) != 0)
        return false;
    struct termios raw = saved;
    ::cfmakeraw(&raw);
    if (::tcsetattr(fd, TCSANOW, &raw) != 0)
        return false;
    m_saved = saved;
    m_fd = fd;
    m_raw = true;
    if (!g_atexitRegistered) {
        g_atexitRegistered = true;
        std::atexit(&RawTerminal::restoreAll);
    }
    return true;
}

bool RawTerminal::setNonBlocking(int fd)
{
    const int flags = ::fcntl(fd, F_GETFL);
    if (flags < 0)
        return false;
    if (flags & O_NONBLOCK)
        return true;
    if (::fcntl(fd, F_SETFL, flags | O_NONBLOCK) != 0)
        return false;
    m_flagsFd = fd;
    m_savedFlags = flags;
    return true;
}

void RawTerminal::restore()
{
    if (m_raw) {
        // TCSANOW: TCSADRAIN would wait for output a stuck terminal never takes.
        ::tcsetattr(m_fd, TCSANOW, &m_saved);
        m_raw = false;
    }
    if (m_flagsFd >= 0) {
        ::fcntl(m_flagsFd, F_SETFL, m_savedFlags);
        m_flagsFd = -1;
    }
}

bool RawTerminal::windowSize(int fd, int *cols, int *rows)
{
    struct winsize ws {};
    if (!::isatty(fd) || ::ioctl(fd, TIOCGWINSZ, &ws) != 0 || ws.ws_col == 0 || ws.ws_row == 0)
        return false;
    *cols = ws.ws_col < 1000 ? int(ws.ws_col) : 1000;
    *rows = ws.ws_row < 1000 ? int(ws.ws_row) : 1000;
    return true;
}

void RawTerminal::restoreAll()
{
    for (RawTerminal *t = g_instances; t; t = t->m_next)
        t->restore();
}

} // namespace Tether
