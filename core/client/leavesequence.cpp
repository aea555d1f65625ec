// SPDX-License-Identifier: GPL-2.0-or-later
#include "leavesequence.h"

namespace Tether {

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

} // namespace Tether
