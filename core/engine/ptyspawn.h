// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <QByteArray>
#include <QList>
#include <QString>
#include <sys/types.h>
#include <vector>

namespace Tether {

struct SpawnOptions;

/*
 * Spawning a child in a new PTY: the steps of PtyProcess::start() up to the
 * moment it takes the master and the leader's pid (startRunning()). Internal
 * to the engine: included by ptyprocess.cpp and ptyspawn.cpp only, never
 * installed, never included by another layer.
 *
 * The steps, in start()'s order: ExecArgs (everything exec needs, built
 * before fork), openPty() (master and slave, IUTF8, the first window size),
 * spawnChild() (the report pipe, fork, the child's setup and exec, the
 * parent's wait for the report). start() checks the size and the command
 * before the first step and calls ensureChildrenWaitable() first; adopt()
 * calls it too.
 *
 * Spawn is done by hand (not forkpty(3)) so that exec/chdir failures can be
 * reported to the caller through a close-on-exec pipe, and so that the child
 * only runs async-signal-safe code between fork and exec: everything it needs
 * (argv, envp, candidate paths, cwd) is prepared before fork.
 *
 * The child between fork(2) and execve(2). Tether is a Qt program that may
 * run several threads; after fork() in a multithreaded process the child may
 * call only async-signal-safe functions until it execs (fork(2),
 * signal-safety(7)): another thread may have held malloc's lock, stdio's or
 * a Qt mutex at the moment of the fork, and the child has only the forking
 * thread. So the child (runChild() and its steps in ptyspawn.cpp) allocates
 * nothing, takes no lock, logs nothing and touches no Qt object: it reads
 * its ChildPlan, filled before fork() (ExecArgs::fill(), spawnChild()), and
 * calls only functions signal-safety(7) lists (sigaction, sigprocmask,
 * setsid, dup2, fcntl, close, chdir, execve, write, _exit) and thin
 * system-call wrappers (ioctl TIOCSCTTY, setrlimit, syscall(2) for
 * close_range(2) and the raw rt_sigaction of glibc's reserved signals).
 * Every signal is blocked across fork() (pthread_sigmask in the parent) so
 * that no handler of ours runs in the child before resetSignals() sets every
 * disposition to SIG_DFL and empties the mask. PATH is searched over the
 * paths ExecArgs computed (execvp(3) order), not by execvp(3), which may
 * allocate. The child is made with fork(2), not vfork(2): a vfork child
 * shares the parent's memory and may do nothing but execve or _exit
 * (vfork(2)), while this one sets up the terminal and writes into its plan
 * (execCandidates() puts the path into shArgv's slot for the ENOEXEC
 * fallback to /bin/sh).
 *
 * Errors. A step that fails in the child writes {step, errno} to the report
 * pipe (close-on-exec, so a successful execve(2) closes it: EOF) and calls
 * _exit(127). The parent reads the report (the only wait in start()), reaps
 * the child (poll(2) on its pidfd, bounded to 1 s, then waitpid(WNOHANG);
 * ChildReaper if it is still there), closes the master and returns a
 * StartError: the text names the step and the errno ("cannot execute /nope:
 * No such file or directory", "cannot change directory to ...") and err
 * keeps the errno. Failures in the parent (posix_openpt, the slave, pipe2,
 * fork) come back the same way with nothing left open. PtyProcess::start()
 * turns a StartError into its *error and StartFailure: isResourceShortage()
 * errnos are StartFailure::Resources, with resourceHint()'s text appended.
 *
 * Sources: fork(2), vfork(2), signal-safety(7), execve(2), execvp(3),
 * posix_openpt(3), grantpt(3), unlockpt(3), ptsname(3), pts(4),
 * ioctl_tty(2) (TIOCSCTTY, TIOCGPTPEER, TIOCSWINSZ), setsid(2),
 * close_range(2), pidfd_open(2), sigaction(2) (SA_NOCLDWAIT), and the
 * kernel's Documentation/filesystems/devpts.rst for the PTY limits.
 */

/// Defined in ptyspawn.cpp: everything the child needs, prepared before
/// fork() (fds, descriptor limit, exec arguments, signal defaults).
struct ChildPlan;

/// True for an errno that means "out of resources now", not "this command
/// cannot work" (PtyProcess::StartFailure::Resources): EMFILE/ENFILE (open(2),
/// pipe(2), accept(2)), ENOSPC (posix_openpt(3) past kernel.pty.max, pts(4)),
/// EAGAIN and ENOMEM (fork(2), execve(2)).
bool isResourceShortage(int err);

/// Which limit a resource shortage `err` (isResourceShortage()) hit and where
/// it is set, for the error text (the server's 503 shows it): "" for other
/// errors. The PTY limit: pts(4) and the kernel's Documentation/filesystems/
/// devpts.rst (kernel.pty.max for all instances, less kernel.pty.reserve for
/// every devpts instance but the first, and the mount's own max= option).
QString resourceHint(int err);

/// Makes our children waitable again if we were started with SIGCHLD ignored
/// (or SA_NOCLDWAIT). Both survive exec(2), so a launcher that ignores SIGCHLD
/// (some CI runners, daemons, `signal.signal(SIGCHLD, SIG_IGN)` before exec)
/// hands it to us; the kernel then reaps every child itself, waitpid() fails
/// with ECHILD and every exit status is lost (seen here: tst_ptyprocess
/// reported exit code -1 for all children). Nothing in Tether wants that, and
/// a handler somebody installed (Qt 5's forkfd) is left alone.
void ensureChildrenWaitable();

// ---------------------------------------------------------------------------
// start() in steps: the exec arguments, the PTY, the child, the parent's side.

/// A failed step of start(): the text for its caller and the errno of the
/// failing call (0 when there is none), which tells a shortage of resources
/// from a command that cannot work (isResourceShortage()).
struct StartError {
    QString text;
    int err = 0;
};

/// What the child's exec needs, built before fork() (the child may not
/// allocate): argv (argv[0] "-name" for a login shell), the environment
/// (inherited minus LINES/COLUMNS, plus TERM, COLORTERM and the extra
/// entries), the paths to try (execvp(3) order over PATH, or the program
/// itself when it contains a '/'), the cwd, and the null-terminated pointer
/// arrays into them. Not copyable: the arrays point into its own storage.
class ExecArgs
{
public:
    explicit ExecArgs(const SpawnOptions &options);
    ExecArgs(const ExecArgs &) = delete;
    ExecArgs &operator=(const ExecArgs &) = delete;

    /// Points the exec fields of `plan` (cwd, argv, envp, candidates,
    /// shArgv) into this object, which must outlive the fork.
    void fill(ChildPlan &plan);

private:
    QList<QByteArray> m_args;
    QList<QByteArray> m_env;
    QList<QByteArray> m_candidates;
    QByteArray m_cwd;
    std::vector<char *> m_argvPtrs;
    std::vector<char *> m_envPtrs;
    std::vector<const char *> m_candidatePtrs;
    std::vector<char *> m_shArgv;
};

/// A PTY master and its slave, both fds >= 3 and close-on-exec.
struct PtyPair {
    int master = -1;
    int slave = -1;
};

/// Opens a PTY (master O_NONBLOCK), with IUTF8 set and the window size
/// cols×rows applied. False with *error set ("cannot open ...: <errno
/// text>") and nothing left open when it fails.
bool openPty(int cols, int rows, PtyPair *pty, StartError *error);

/// Forks the child that runs `exec` on pty->slave and waits until it has
/// reached execve(2) (the close-on-exec report pipe closes) or reported a
/// failure: the only wait in start(). Always closes the slave (else the
/// master would never see EIO). Returns the child's pid; on failure -1 with
/// *error set, the master closed too and the child reaped.
pid_t spawnChild(ExecArgs &exec, PtyPair *pty, const SpawnOptions &options, StartError *error);

} // namespace Tether
