#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""`make bench` (issue 11): runs Tether and its peers through the same
workloads and writes the figures into docs/performance.md.

Usage: bench/run.py BUILD_DIR [--write-doc]
       bench/run.py --render FIGURES.json [--write-doc]   (an earlier run's figures)
  BUILD_DIR holds app/tether, bench/bench_client, bench/libbench_nodelay_off.so.
  --write-doc replaces the generated part of docs/performance.md (between
  <!-- bench:begin --> and <!-- bench:end -->); without it, figures are printed.
Environment:
  BENCH_QUICK=1        a smoke run of about a minute (small sizes, one run each)
  BENCH_RUNS=N         runs per workload (default 3; quick 1)
  BENCH_MIB=N          size of the cat file (default 64; quick 8)
  BENCH_WINDOW=PATH    bench_window (the Qt 5 tree's): the desktop terminal
                       window's keystroke echo is measured too
  BENCH_BROWSER_MIB=N  size of the file the dashboard's `cat` prints (default 16;
                       quick 2): the browser phase (bench/browser.mjs, Debian's
                       Chromium through tests/browser's playwright-core)
  BENCH_MAX_SESSIONS=N cap on the "largest count" idle phase (default: what
                       the kernel's PTY limit leaves, less BENCH_PTY_MARGIN=512
                       PTYs kept free for other users of the machine)
Every server runs in its own session (setsid) with a private HOME and
XDG_RUNTIME_DIR, on 127.0.0.1 port 0; every child has a timeout, and the whole
run is bounded (about 11 minutes on a loaded 2-CPU machine, 2 in quick mode).
"""
import concurrent.futures
import http.client
import json
import math
import os
import re
import resource
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
QUICK = os.environ.get('BENCH_QUICK') == '1'
RUNS = int(os.environ.get('BENCH_RUNS', '1' if QUICK else '3'))
MIB = int(os.environ.get('BENCH_MIB', '8' if QUICK else '64'))
KEYS = 100 if QUICK else 300
LINES = 50 if QUICK else 100
NAGLE_LINES = 20 if QUICK else 50      # each waits ~40 ms with Nagle on
IDLE_SECS = 3 if QUICK else 20
IDLE_COUNT = 100 if QUICK else 1000
FAIR_COUNT = 20 if QUICK else 200
FAIR_SECS = 2 if QUICK else 5
STARTUPS = 3 if QUICK else 10
BROWSER_MIB = int(os.environ.get('BENCH_BROWSER_MIB', '2' if QUICK else '16'))
BROWSER_KEYS = 50 if QUICK else 200
CREATE_SECS = 30 if QUICK else 120     # bound on making the idle sessions
PTY_MARGIN = int(os.environ.get('BENCH_PTY_MARGIN', '512'))
# A desktop session's default descriptor limits (systemd >= 240: soft 1024,
# hard 524288), capped by what this process may give.
DESKTOP_NOFILE_HARD = 524288
GATE = "stty raw -echo; printf @@GO@@; head -c 1 >/dev/null; exec "

log_lines = []


def log(*a):
    s = ' '.join(str(x) for x in a)
    print(s, flush=True)
    log_lines.append(s)


def stats(values):
    """(median, min, max) of a list, or None."""
    if not values:
        return None
    return statistics.median(values), min(values), max(values)


def pct(sorted_values, p):
    if not sorted_values:
        return float('nan')
    return sorted_values[max(0, math.ceil(p / 100 * len(sorted_values)) - 1)]


def proc_status(pid):
    """VmRSS in KiB and context switches summed over every thread."""
    out = {'rss': 0, 'vol': 0, 'invol': 0}
    with open('/proc/%d/status' % pid) as f:
        for line in f:
            if line.startswith('VmRSS:'):
                out['rss'] = int(line.split()[1])
    for tid in os.listdir('/proc/%d/task' % pid):
        try:
            with open('/proc/%d/task/%s/status' % (pid, tid)) as f:
                for line in f:
                    if line.startswith('voluntary_ctxt_switches:'):
                        out['vol'] += int(line.split()[1])
                    elif line.startswith('nonvoluntary_ctxt_switches:'):
                        out['invol'] += int(line.split()[1])
        except FileNotFoundError:
            pass
    return out


def cpu_ticks(pid):
    with open('/proc/%d/stat' % pid) as f:
        fields = f.read().rsplit(')', 1)[1].split()
    return int(fields[11]) + int(fields[12])  # utime + stime (proc(5) fields 14, 15)


def fd_count(pid):
    return len(os.listdir('/proc/%d/fd' % pid))


def pss_kib(pid):
    try:
        with open('/proc/%d/smaps_rollup' % pid) as f:
            for line in f:
                if line.startswith('Pss:'):
                    return int(line.split()[1])
    except (FileNotFoundError, PermissionError, ProcessLookupError):
        pass
    return 0


def kill_matching(pattern):
    """SIGTERM to the bench's own peer processes whose command line matches
    `pattern` (a pgrep -f regex naming a path inside the bench's temporary
    directory, so nothing else can match)."""
    out = subprocess.run(['pgrep', '-f', pattern], capture_output=True, text=True).stdout
    for p in out.split():
        try:
            os.kill(int(p), signal.SIGTERM)
        except ProcessLookupError:
            pass


def desktop_limits():
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    hard = DESKTOP_NOFILE_HARD if hard == resource.RLIM_INFINITY else min(hard, DESKTOP_NOFILE_HARD)
    return min(1024, hard), hard


class Server:
    """A `tether serve` in its own session and private directories."""

    def __init__(self, bench, preload=None, max_sessions=256):
        self.dir = tempfile.mkdtemp(prefix='tether-bench-srv-')
        run = os.path.join(self.dir, 'run')
        os.mkdir(run, 0o700)
        env = dict(os.environ, HOME=self.dir, XDG_RUNTIME_DIR=run,
                   XDG_CONFIG_HOME=os.path.join(self.dir, 'config'),
                   XDG_DATA_HOME=os.path.join(self.dir, 'data'), TERM='xterm-256color')
        env.pop('LD_PRELOAD', None)
        if preload:
            env['LD_PRELOAD'] = preload
        self.runtime_file = os.path.join(run, 'tether', 'server.json')
        limits = desktop_limits()
        t0 = time.monotonic()
        self.proc = subprocess.Popen(
            [bench.tether, 'serve', '--port', '0', '--bind', '127.0.0.1', '--max-sessions', str(max_sessions)],
            env=env, cwd=self.dir, stdout=subprocess.DEVNULL, stderr=open(os.path.join(self.dir, 'stderr'), 'w'),
            start_new_session=True,  # setsid(2): not in the bench's process group
            preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_NOFILE, limits))
        while not os.path.exists(self.runtime_file):
            if self.proc.poll() is not None or time.monotonic() - t0 > 30:
                raise RuntimeError('tether serve did not start: ' + open(os.path.join(self.dir, 'stderr')).read())
            time.sleep(0.0002)
        self.startup = time.monotonic() - t0
        for _ in range(100):
            try:
                info = json.load(open(self.runtime_file))
                break
            except ValueError:  # written but not complete yet
                time.sleep(0.01)
        self.port, self.key, self.pid = info['port'], info['key'], self.proc.pid
        self.url = 'http://127.0.0.1:%d/' % self.port

    def api(self, method, path, body=None):
        c = http.client.HTTPConnection('127.0.0.1', self.port, timeout=30)
        c.request(method, path, body=json.dumps(body) if body is not None else None,
                  headers={'Authorization': 'Bearer ' + self.key, 'Content-Type': 'application/json'})
        r = c.getresponse()
        data = r.read()
        c.close()
        return r.status, data

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)  # tears every session down (protocol 1)
            try:
                self.proc.wait(60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        shutil.rmtree(self.dir, ignore_errors=True)


class Bench:
    def __init__(self, build):
        self.build = os.path.abspath(build)
        self.tether = os.path.join(self.build, 'app', 'tether')
        self.client = os.path.join(self.build, 'bench', 'bench_client')
        self.shim = os.path.join(self.build, 'bench', 'libbench_nodelay_off.so')
        for p in (self.tether, self.client, self.shim):
            if not os.path.exists(p):
                sys.exit('bench: %s is missing (make bench builds it)' % p)
        self.window = os.environ.get('BENCH_WINDOW') or None
        if self.window and not os.path.exists(self.window):
            sys.exit('bench: BENCH_WINDOW %s is missing' % self.window)
        self.tmp = tempfile.mkdtemp(prefix='tether-bench-')
        self.tmux_conf = os.path.join(self.tmp, 'tmux.conf')
        with open(self.tmux_conf, 'w') as f:
            f.write('set -g status off\nset -g exit-empty on\n')
        self.tmux_sock = 'tether-bench-%d' % os.getpid()
        self.fig = {}
        self.started = time.monotonic()

    # --- helpers -----------------------------------------------------------
    def client_run(self, args, timeout=180):
        r = subprocess.run([self.client] + args, capture_output=True, text=True, timeout=timeout)
        if r.returncode != 0:
            raise RuntimeError('bench_client %s: %s' % (' '.join(args[:3]), r.stderr.strip()))
        return json.loads(r.stdout)

    def window_run(self, args, timeout=180):
        """bench_window (the desktop's terminal window, offscreen)."""
        env = dict(os.environ, QT_QPA_PLATFORM='offscreen')
        r = subprocess.run([self.window] + args, capture_output=True, text=True, timeout=timeout, env=env)
        if r.returncode != 0:
            raise RuntimeError('bench_window %s: %s' % (' '.join(args[:2]), r.stderr.strip()))
        return json.loads(r.stdout)

    def peer_argv(self, name, shell_command):
        """argv that runs `shell_command` (sh -c) in system `name` on a PTY."""
        if name == 'raw PTY':
            return ['sh', '-c', shell_command]
        if name == 'tmux':
            return ['tmux', '-L', self.tmux_sock, '-f', self.tmux_conf, 'new-session', shell_command]
        if name == 'dtach':
            return ['dtach', '-c', os.path.join(self.tmp, 'dtach.sock'), '-E', '-z', '-r', 'none',
                    'sh', '-c', shell_command]
        raise ValueError(name)

    def via(self, name, server, shell_command):
        """bench_client transport arguments for system `name`."""
        if name.startswith('Tether'):
            return ['ws', server.url, server.key, '--', 'sh', '-c', shell_command]
        return ['pty', '--'] + self.peer_argv(name, shell_command)

    def make_text(self, path, size):
        line_no, chunk = 0, bytearray()
        while len(chunk) < (1 << 20):
            chunk += b'line %d the quick brown fox jumps over the lazy dog\n' % line_no
            line_no += 1
        chunk = bytes(chunk[:1 << 20])
        with open(path, 'wb') as f:
            for _ in range(size >> 20):
                f.write(chunk)
            f.write(chunk[:size & ((1 << 20) - 1)])

    def cleanup_peers(self):
        """Ends what a peer left: the tmux server, dtach's master (a daemon
        that outlives its attach client when the client is killed)."""
        subprocess.run(['tmux', '-L', self.tmux_sock, 'kill-server'], stderr=subprocess.DEVNULL, timeout=10)
        sock = os.path.join(self.tmp, 'dtach.sock')
        kill_matching('^dtach -c %s ' % sock)
        try:
            os.unlink(sock)  # the master removes it as it exits: a race
        except FileNotFoundError:
            pass

    # --- workloads ---------------------------------------------------------
    def throughput(self, server):
        path = os.path.join(self.tmp, 'cat.txt')
        size = MIB << 20
        self.make_text(path, size)
        systems = ['raw PTY', 'Tether', 'tmux', 'dtach']
        mbs = {s: [] for s in systems}
        received = {s: [] for s in systems}
        ratios = {s: [] for s in systems}
        complete = True
        cpu = {'server': [], 'client': [], 'frame': []}
        # The client's own limit: the same bench client fed by a producer
        # that does nothing but send the file's frames from memory
        # (bench/trivial_producer.py), once per run, beside the others.
        producer = subprocess.Popen([sys.executable, os.path.join(HERE, 'trivial_producer.py'), path],
                                    stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        trivial_url = 'http://127.0.0.1:%d/' % int(producer.stdout.readline())
        client_limit = []
        for r in range(RUNS):
            order = systems[r % len(systems):] + systems[:r % len(systems)]  # rotate: load drifts
            got = {}
            for s in order:
                ticks = cpu_ticks(server.pid)
                out = self.client_run(['cat', path] + self.via(s, server, GATE + "cat '%s'" % path))
                self.cleanup_peers()
                if s == 'Tether':
                    # Where the time goes: the server's and the client's CPU
                    # per second of the run, and the frame size.
                    hz = os.sysconf('SC_CLK_TCK')
                    cpu['server'].append((cpu_ticks(server.pid) - ticks) / hz / out['secs'])
                    cpu['client'].append(out['client_cpu'] / out['secs'])
                    cpu['frame'].append(out['bytes'] / max(out['messages'], 1))
                got[s] = size / out['secs'] / 1e6
                mbs[s].append(got[s])
                received[s].append(int(out['bytes']))
                if s in ('Tether', 'raw PTY') and out['bytes'] != size:
                    complete = False
                    log('INCOMPLETE: %s received %d of %d bytes' % (s, out['bytes'], size))
            out = self.client_run(['cat', path, 'ws', trivial_url, 'none', '--', 'cat'])
            if out['bytes'] != size:
                raise RuntimeError('trivial producer: %d of %d bytes' % (out['bytes'], size))
            client_limit.append(size / out['secs'] / 1e6)
            for s in systems:
                ratios[s].append(got[s] / got['raw PTY'])
            log('throughput run %d: %s; the client alone (trivial producer) %.1f MB/s'
                % (r + 1, ', '.join('%s %.1f MB/s' % (s, got[s]) for s in systems), client_limit[-1]))
        producer.stdin.close()
        producer.wait(30)
        self.fig['throughput'] = {'size': size, 'mbs': mbs, 'ratio': ratios, 'received': received,
                                  'complete': complete, 'cpu': cpu, 'client_limit': client_limit}

    def browser(self, server):
        """The dashboard in real Chromium (bench/browser.mjs): `cat` to a
        visible terminal, Ctrl-C during a flood, keystroke to paint; the
        native client's `cat` of the same file over the same server beside
        it, in this phase, for the ratio."""
        chromium = os.environ.get('CHROMIUM', '/usr/bin/chromium')
        if not os.path.exists(chromium) or not os.path.isdir(os.path.join(ROOT, 'tests', 'browser', 'node_modules')):
            raise RuntimeError('Chromium or tests/browser/node_modules is missing (scripts/install-deps.sh, '
                               'then npm ci in tests/browser)')
        path = os.path.join(self.tmp, 'browser.txt')
        size = BROWSER_MIB << 20
        self.make_text(path, size)
        r = subprocess.run(['node', os.path.join(HERE, 'browser.mjs'), server.url, server.key, path, str(RUNS),
                            str(BROWSER_KEYS)], capture_output=True, text=True, timeout=900)
        if r.returncode != 0:
            raise RuntimeError('bench/browser.mjs: %s' % r.stderr.strip()[-2000:])
        b = json.loads(r.stdout)
        native = []
        for _ in range(RUNS):
            out = self.client_run(['cat', path] + self.via('Tether', server, GATE + "cat '%s'" % path))
            native.append(size / out['secs'] / 1e6)
        b['native'] = native
        log('browser: dashboard %.1f MB/s (%s renderer), the native client %.1f MB/s; Ctrl-C in a flood %.0f ms; '
            'keystroke to paint p99 %.1f ms'
            % (statistics.median(b['throughput']), b['renderer'], statistics.median(native),
               statistics.median(b['interrupt']), b['keys']['p99']))
        self.fig['browser'] = b

    def latency(self, server, nagle_server):
        kinds = {'keys': (KEYS, 'stty raw -echo; printf @@GO@@; exec cat'), 'line': (LINES, "PS1='$ ' exec sh -i")}
        systems = ['raw PTY', 'Tether', 'tmux', 'dtach']
        res = {}
        for kind, (n, cmd) in kinds.items():
            for r in range(RUNS):
                window = ['Tether window'] if kind == 'keys' and self.window else []
                for s in systems + window + ['Tether, Nagle on']:
                    srv = nagle_server if s == 'Tether, Nagle on' else server
                    count = NAGLE_LINES if s == 'Tether, Nagle on' else n
                    if s == 'Tether window':
                        # The desktop's terminal window, a client of the
                        # same server: key press to echo read by the widget.
                        out = self.window_run([kind, str(count), server.url, server.key, '--', 'sh', '-c', cmd])
                    else:
                        out = self.client_run([kind, str(count)] + self.via(s, srv, cmd))
                    self.cleanup_peers()
                    v = sorted(out['us'])
                    e = res.setdefault((kind, s), {'p50': [], 'p99': [], 'max': [], 'timeouts': 0, 'n': 0})
                    e['p50'].append(pct(v, 50))
                    e['p99'].append(pct(v, 99))
                    e['max'].append(v[-1] if v else float('nan'))
                    e['timeouts'] += out['timeouts']
                    e['n'] += len(v)
                log('latency %s run %d: %s' % (kind, r + 1, ', '.join(
                    '%s p50 %.0f p99 %.0f us' % (s, res[(kind, s)]['p50'][-1], res[(kind, s)]['p99'][-1])
                    for s in systems + window + ['Tether, Nagle on'])))
        self.fig['latency'] = {'%s|%s' % k: v for k, v in res.items()}

    def reattach(self, server):
        path = os.path.join(self.tmp, 'ring.txt')
        self.make_text(path, 1536 * 1024)  # more than the 1 MiB ring: it rolls over
        out = self.client_run(['reattach', path, str(max(RUNS, 5)), 'ws', server.url, server.key])
        self.fig['reattach'] = out
        log('reattach: %d bytes, ms %s' % (out['bytes'], ' '.join('%.2f' % x for x in out['ms'])))

    def fairness(self, server):
        # `timeout`: a producer ends by itself even if the bench dies.
        cmd = GATE + "timeout %d yes 'the quick brown fox jumps over the lazy dog 0123456789'" % (FAIR_SECS + 60)
        runs = []
        for r in range(RUNS):
            out = self.client_run(['fair', str(FAIR_COUNT), str(FAIR_SECS)] + self.via('Tether', server, cmd),
                                  timeout=300)
            b = out['bytes']
            mean = sum(b) / len(b)
            tenth = max(len(b) // 10, 1)
            runs.append({'min': min(b) / mean, 'max': max(b) / mean, 'mbs': sum(b) / out['secs'] / 1e6,
                         'zero': sum(1 for x in b if x == 0),
                         # Is the order of creation (= of attaching, of starting) what decides?
                         'first_tenth': sum(b[:tenth]) / tenth / mean, 'last_tenth': sum(b[-tenth:]) / tenth / mean})
            log('fairness run %d: %d sessions, %.1f MB/s in total, min %.2f max %.2f of the mean'
                % (r + 1, len(b), runs[-1]['mbs'], runs[-1]['min'], runs[-1]['max']))
        self.fig['fairness'] = {'count': FAIR_COUNT, 'secs': FAIR_SECS, 'runs': runs}

    def idle_window(self, pids):
        """CPU ticks and context switches of `pids` over IDLE_SECS."""
        before = [(cpu_ticks(p), proc_status(p)) for p in pids]
        time.sleep(IDLE_SECS)
        after = [(cpu_ticks(p), proc_status(p)) for p in pids]
        ticks = sum(a[0] - b[0] for a, b in zip(after, before))
        wake = sum(a[1]['vol'] + a[1]['invol'] - b[1]['vol'] - b[1]['invol'] for a, b in zip(after, before))
        hz = os.sysconf('SC_CLK_TCK')
        return {'cpu_pct': 100.0 * ticks / hz / IDLE_SECS, 'wakeups': wake, 'secs': IDLE_SECS}

    def idle_tether(self, count, label):
        server = Server(self, max_sessions=count)
        try:
            time.sleep(0.5)
            base = proc_status(server.pid)['rss']
            base_fds = fd_count(server.pid)
            made, refused = 0, ''
            t0 = time.monotonic()
            # Four requests in flight (the server forks one shell per request).
            with concurrent.futures.ThreadPoolExecutor(4) as pool:
                while made < count and not refused and time.monotonic() - t0 < CREATE_SECS:
                    batch = min(64, count - made)
                    for status, data in pool.map(lambda _: server.api('POST', '/api/sessions', {'command': ['sh']}),
                                                 range(batch)):
                        if status == 201:
                            made += 1
                        elif not refused:
                            refused = '%d %s' % (status, data.decode(errors='replace').strip())
            if made < count and not refused:
                refused = 'the bench\'s time bound: %d s for making sessions' % CREATE_SECS
            create_secs = time.monotonic() - t0
            time.sleep(2)  # the shells print their prompts
            st = proc_status(server.pid)
            fds = fd_count(server.pid)
            idle = self.idle_window([server.pid])
            out = {'asked': count, 'made': made, 'refused': refused, 'create_secs': create_secs,
                   'rss_kib': st['rss'], 'base_kib': base,
                   'kib_per_session': (st['rss'] - base) / max(made, 1),
                   'fds_per_session': (fds - base_fds) / max(made, 1), 'nofile': desktop_limits(), **idle}
            log('idle %s: %d sessions (%s), %.1f KiB and %.2f fds each, %d wakeups in %d s, CPU %.2f %%'
                % (label, made, refused or 'all made', out['kib_per_session'], out['fds_per_session'],
                   idle['wakeups'], IDLE_SECS, idle['cpu_pct']))
            return out
        finally:
            server.stop()

    def idle_tmux(self, count):
        """tmux: one server, `count` windows running sh; its PSS per window."""
        sock = self.tmux_sock + '-idle'
        base = ['tmux', '-L', sock, '-f', self.tmux_conf]
        env = dict(os.environ, TERM='xterm-256color')
        try:
            subprocess.run(base + ['new-session', '-d', '-x', '80', '-y', '24', 'sh'], env=env, timeout=30, check=True)
            pid = int(subprocess.run(base + ['display-message', '-p', '#{pid}'], capture_output=True, text=True,
                                     timeout=30).stdout)
            one = pss_kib(pid)
            t0 = time.monotonic()
            made = 1
            # One tmux client call adds many windows (a command list).
            while made < count and time.monotonic() - t0 < 120:
                n = min(100, count - made)
                cmds = []
                for _ in range(n):
                    cmds += ['new-window', '-d', 'sh', ';']
                r = subprocess.run(base + cmds[:-1], env=env, timeout=60, capture_output=True)
                if r.returncode != 0:
                    break
                made += n
            time.sleep(2)
            total = pss_kib(pid)
            idle = self.idle_window([pid])
            out = {'made': made, 'kib_per_session': (total - one) / max(made - 1, 1), **idle}
            log('idle tmux: %d windows, %.1f KiB (PSS) each, %d wakeups in %d s'
                % (made, out['kib_per_session'], idle['wakeups'], IDLE_SECS))
            return out
        finally:
            subprocess.run(base + ['kill-server'], stderr=subprocess.DEVNULL, timeout=30)

    def idle_dtach(self, count):
        """dtach: one master process per session; their PSS each."""
        d = tempfile.mkdtemp(prefix='dtach-', dir=self.tmp)
        pids = []
        try:
            t0 = time.monotonic()
            for i in range(count):
                if time.monotonic() - t0 > 120:
                    break
                sock = os.path.join(d, str(i))
                subprocess.run(['dtach', '-n', sock, '-E', '-z', 'sh'], timeout=10, check=True)
            time.sleep(2)
            out = subprocess.run(['pgrep', '-f', '^dtach -n %s/' % d], capture_output=True, text=True).stdout
            pids = [int(x) for x in out.split()]
            per = sum(pss_kib(p) for p in pids) / max(len(pids), 1)
            idle = self.idle_window(pids)
            res = {'made': len(pids), 'kib_per_session': per, **idle}
            log('idle dtach: %d masters, %.1f KiB (PSS) each, %d wakeups in %d s'
                % (len(pids), per, idle['wakeups'], IDLE_SECS))
            return res
        finally:
            kill_matching('^dtach -n %s/' % d)

    def tether_session_cap(self):
        """Tether's own limit on --max-sessions, from its --help (1..N)."""
        text = subprocess.run([self.tether, 'serve', '--help'], capture_output=True, text=True, timeout=30).stdout
        m = re.search(r'--max-sessions\b.*?1\.\.(\d+)', text, re.S)
        return int(m.group(1)) if m else None

    def idle(self):
        res = self.fig['idle'] = {}  # filled as it goes: a later failure keeps what was measured
        with open('/proc/sys/kernel/pty/max') as f:
            pty_max = int(f.read())
        with open('/proc/sys/kernel/pty/nr') as f:
            pty_nr = int(f.read())
        cap = self.tether_session_cap()
        largest = pty_max - pty_nr - PTY_MARGIN
        res['pty'] = {'max': pty_max, 'in_use': pty_nr, 'margin': PTY_MARGIN, 'by_pty': largest, 'tether_cap': cap}
        if cap:
            largest = min(largest, cap)
        if 'BENCH_MAX_SESSIONS' in os.environ:
            largest = min(largest, int(os.environ['BENCH_MAX_SESSIONS']))
        if QUICK:
            largest = min(largest, 2 * IDLE_COUNT)
        res['pty']['asked'] = largest
        count = min(IDLE_COUNT, largest)
        res['tether'] = self.idle_tether(count, str(count))
        res['tmux'] = self.idle_tmux(count)
        res['dtach'] = self.idle_dtach(count)
        res['largest'] = self.idle_tether(largest, 'largest') if largest > count else None

    def startup(self):
        tether = []
        for _ in range(STARTUPS):
            s = Server(self)
            tether.append(s.startup * 1e3)
            s.stop()
        tmux, dtach = [], []
        env = dict(os.environ, TERM='xterm-256color', TMUX_TMPDIR=self.tmp)
        for i in range(STARTUPS):
            sock = os.path.join(self.tmp, 'tmux-%d' % os.getuid(), 'start%d' % i)
            t0 = time.monotonic()
            subprocess.run(['tmux', '-L', 'start%d' % i, '-f', self.tmux_conf, 'new-session', '-d', 'sh'],
                           env=env, timeout=30, check=True)
            while not os.path.exists(sock) and time.monotonic() - t0 < 30:
                time.sleep(0.0002)
            tmux.append((time.monotonic() - t0) * 1e3)
            subprocess.run(['tmux', '-L', 'start%d' % i, 'kill-server'], env=env, timeout=30)
            sock = os.path.join(self.tmp, 'start-dtach')
            t0 = time.monotonic()
            subprocess.run(['dtach', '-n', sock, '-E', 'sh'], timeout=30, check=True)
            while not os.path.exists(sock) and time.monotonic() - t0 < 30:
                time.sleep(0.0002)
            dtach.append((time.monotonic() - t0) * 1e3)
            kill_matching('^dtach -n %s ' % sock)
            time.sleep(0.05)
            try:
                os.unlink(sock)
            except FileNotFoundError:
                pass
        self.fig['startup'] = {'Tether': tether, 'tmux': tmux, 'dtach': dtach}
        log('startup ms: Tether %s; tmux %s; dtach %s' % tuple(
            ' '.join('%.1f' % x for x in v) for v in (tether, tmux, dtach)))

    def phase(self, name, f):
        """Runs one phase; a failure is reported and the next phase runs."""
        t0 = time.monotonic()
        try:
            f()
        except (RuntimeError, OSError, ValueError, subprocess.SubprocessError) as e:
            log('bench: phase %s failed: %s' % (name, e))
            self.fig.setdefault('errors', {})[name] = 'the phase failed: %s' % e
            self.cleanup_peers()
        self.fig.setdefault('phase_secs', {})[name] = time.monotonic() - t0

    def run(self):
        for tool in ('tmux', 'dtach'):
            if not shutil.which(tool):
                log('bench: %s is missing: running scripts/install-deps.sh' % tool)
                subprocess.run([os.path.join(ROOT, 'scripts', 'install-deps.sh')], check=True)
        self.fig['machine'] = machine()
        log('machine:', self.fig['machine'])
        server = Server(self, max_sessions=FAIR_COUNT + 64)
        nagle = Server(self, preload=self.shim)
        try:
            phases = [('throughput', lambda: self.throughput(server)),
                      ('latency', lambda: self.latency(server, nagle)),
                      ('reattach', lambda: self.reattach(server)),
                      ('fairness', lambda: self.fairness(server)),
                      ('browser', lambda: self.browser(server))]
            for name, f in phases:
                self.phase(name, f)
        finally:
            server.stop()
            nagle.stop()
            self.cleanup_peers()
        for name, f in (('idle', self.idle), ('startup', self.startup)):
            self.phase(name, f)
        self.fig['machine']['load_after'] = open('/proc/loadavg').read().split()[:3]
        self.fig['total_secs'] = time.monotonic() - self.started
        shutil.rmtree(self.tmp, ignore_errors=True)


def machine():
    cpu = ''
    with open('/proc/cpuinfo') as f:
        for line in f:
            if line.startswith('model name'):
                cpu = line.split(':', 1)[1].strip()
                break
    with open('/proc/meminfo') as f:
        mem = int(f.readline().split()[1]) / 1048576
    def version(cmd):
        try:
            return subprocess.run(cmd, capture_output=True, text=True, timeout=10).stdout.strip().splitlines()[0]
        except (OSError, IndexError, subprocess.SubprocessError):
            return 'not found'
    git = subprocess.run(['git', '-C', ROOT, 'describe', '--always', '--dirty'], capture_output=True, text=True).stdout.strip()
    return {'date': time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime()), 'cpus': os.cpu_count(), 'cpu': cpu,
            'ram_gib': round(mem, 1), 'kernel': os.uname().release, 'commit': git,
            'tmux': version(['tmux', '-V']), 'dtach': version(['dtach', '--help']).replace('dtach - ', ''),
            'load_before': open('/proc/loadavg').read().split()[:3], 'quick': QUICK, 'runs': RUNS}


# --- the generated part of docs/performance.md ------------------------------
def fmt(triple, spec='%.1f'):
    if triple is None:
        return 'n/a'
    m, lo, hi = triple
    return (spec + ' (' + spec + '–' + spec + ')') % (m, lo, hi)


def render(fig):
    m = fig['machine']
    out = []
    w = out.append
    w('Run of %s at `%s`%s: %d CPUs (%s), %.1f GiB RAM, Linux %s; %s, dtach %s. '
      'Load average %s before, %s after (on %d CPUs). %d runs per workload; each figure is the '
      'median (min–max) over the runs; the whole run took %.0f s.'
      % (m['date'], m['commit'], ' **(BENCH_QUICK smoke run)**' if m['quick'] else '', m['cpus'], m['cpu'],
         m['ram_gib'], m['kernel'], m['tmux'], m['dtach'], ' '.join(m['load_before']),
         ' '.join(m['load_after']), m['cpus'], m['runs'], fig['total_secs']))
    w('')
    loaded = float(m['load_before'][0]) > 0.5 * m['cpus'] or float(m['load_after'][0]) > 0.5 * m['cpus']
    if loaded:
        w('**These figures were taken on a loaded machine** (the load averages above, other builds and '
          'tests running beside the bench): absolute figures and tails (p99, max) are worse than on an '
          'idle machine; the ratios measured in the same run are the ones to read.')
        w('')
    def sec_throughput():
        t = fig['throughput']
        w('### Throughput and completeness: `cat` of %d MiB to one attached viewer' % (t['size'] >> 20))
        w('')
        w('| system | MB/s | × raw PTY (same run) | bytes received (every run) |')
        w('|---|---|---|---|')
        for s in ('raw PTY', 'Tether', 'tmux', 'dtach'):
            rec = sorted(set(t['received'][s]))
            w('| %s | %s | %s | %s |' % (s, fmt(stats(t['mbs'][s])), fmt(stats(t['ratio'][s]), '%.2f'),
                                         ', '.join('{:,}'.format(x) for x in rec)))
        w('')
        tr = stats(t['ratio']['Tether'])
        w('- Bar ≥ 0.9 × raw PTY: **%s** (median %.2f). Completeness (Tether and the raw PTY received '
          'exactly the file\'s %s bytes in every run): **%s**.'
          % ('met' if tr[0] >= 0.9 else 'not met', tr[0], '{:,}'.format(t['size']), 'yes' if t['complete'] else 'NO'))
        c = t['cpu']
        w('- Where Tether\'s time went: the server used %s of a CPU and the client %s over the run '
          '(CPU seconds per second of wall time); %s bytes per WebSocket message.'
          % (fmt(stats(c['server']), '%.2f'), fmt(stats(c['client']), '%.2f'), fmt(stats(c['frame']), '%.0f')))
        if t.get('client_limit'):
            lim = stats(t['client_limit'])
            w('- The client is not the limit: fed by a producer that only sends the file\'s frames from memory '
              '(`bench/trivial_producer.py`), the same client received %s MB/s, %.1f× what it received through '
              'Tether in the same runs.' % (fmt(lim), lim[0] / statistics.median(t['mbs']['Tether'])))
        w('')
    def sec_latency():
        lat = fig['latency']
        w('### Keystroke latency (µs, from the send to the echo arriving)')
        w('')
        w('| workload | system | p50 | p99 | max | × raw PTY p50 | keys (timeouts) |')
        w('|---|---|---|---|---|---|---|')
        for kind, title in (('keys', 'single key, `cat` echoes'), ('line', '`echo h""i` ⏎ in `sh`, to "hi"')):
            raw = statistics.median(lat['%s|raw PTY' % kind]['p50'])
            for s in ('raw PTY', 'Tether', 'Tether window', 'tmux', 'dtach', 'Tether, Nagle on'):
                e = lat.get('%s|%s' % (kind, s))
                if e is None:
                    continue  # the terminal window: keys only, and only with BENCH_WINDOW
                w('| %s | %s | %s | %s | %s | %.2f | %d (%d) |' % (
                    title, s, fmt(stats(e['p50']), '%.0f'), fmt(stats(e['p99']), '%.0f'), fmt(stats(e['max']), '%.0f'),
                    statistics.median(e['p50']) / raw, e['n'], e['timeouts']))
        k99 = statistics.median(lat['keys|Tether']['p99'])
        l99 = statistics.median(lat['line|Tether']['p99'])
        w('')
        w('- Bar p99 < 1 ms on loopback: single key **%s** (median p99 %.0f µs), line **%s** (median p99 %.0f µs).'
          % ('met' if k99 < 1000 else 'not met', k99, 'met' if l99 < 1000 else 'not met', l99))
        if 'keys|Tether window' in lat:
            w99 = statistics.median(lat['keys|Tether window']['p99'])
            w('- The desktop\'s terminal window (`bench/bench_window.cpp`: a key press into its QTermWidget, offscreen, '
              'to the echo read back by the widget, through the same server): single key **%s** (median p99 %.0f µs).'
              % ('met' if w99 < 1000 else 'not met', w99))
        raw99 = max(statistics.median(lat['keys|raw PTY']['p99']), statistics.median(lat['line|raw PTY']['p99']))
        if raw99 >= 1000:
            w('- The raw PTY itself, with no server in between, had a median p99 of %.0f µs in this run: the '
              'machine\'s scheduling delays (other processes on the same CPUs) exceed the bar, so the bar is not '
              'decided by this run; the p50 ratios are.' % raw99)
        on = statistics.median(lat['line|Tether, Nagle on']['p50'])
        off = statistics.median(lat['line|Tether']['p50'])
        w('- What `TCP_NODELAY` bought: the line\'s p50 is %.0f µs with it and %.0f µs without it '
          '(%.0f× slower; the same binary with the Nagle shim preloaded, same run).' % (off, on, on / off))
        w('')
    def sec_reattach():
        t = fig['throughput']
        r = fig['reattach']
        rawmbs = statistics.median(t['mbs']['raw PTY'])
        ms = stats(r['ms'])
        w('### Reattach with a full ring')
        w('')
        w('A session printed 1.5 MiB into its %s-byte ring (offset %s); a watch viewer attached %d times: '
          '**%s ms** (median, min–max) from `open()` to the last of **%s bytes** of replay (prelude + replay), '
          'i.e. %.0f MB/s, %.1f× the raw PTY\'s throughput of this run (the time the raw PTY would take to carry '
          'those bytes: %.1f ms). tmux and dtach have no comparable replay (tmux redraws one screen, dtach '
          'replays nothing).'
          % ('{:,}'.format(int(r['capacity'])), '{:,}'.format(int(r['offset'])), len(r['ms']), fmt(ms, '%.2f'),
             '{:,}'.format(int(r['bytes'])), r['bytes'] / ms[0] / 1e3, r['bytes'] / ms[0] / 1e3 / rawmbs,
             r['bytes'] / rawmbs / 1e3))
        w('')
    def sec_idle():
        idle = fig['idle']
        w('### Idle cost and memory per session')
        w('')
        w('Sessions run `sh` at its prompt; the server was started with a desktop\'s default descriptor limits '
          '(soft %d, hard %d) and raises its own soft limit. Memory is the server\'s VmRSS growth per session '
          '(tmux, dtach: PSS per window or master process); wakeups are voluntary + involuntary context '
          'switches of every thread over %d s of idling (/proc/PID/task/*/status), CPU from /proc/PID/stat.'
          % (idle['tether']['nofile'][0], idle['tether']['nofile'][1], idle['tether']['secs']))
        w('')
        w('| system | sessions | KiB/session | fds/session | wakeups in %d s | CPU %% |' % idle['tether']['secs'])
        w('|---|---|---|---|---|---|')
        rows = [('Tether', idle['tether']), ('tmux', idle['tmux']), ('dtach', idle['dtach'])]
        if idle.get('largest'):
            rows.append(('Tether (largest count)', idle['largest']))
        for name, e in rows:
            w('| %s | %s | %.1f | %s | %d | %.2f |' % (
                name, '{:,}'.format(e['made']), e['kib_per_session'],
                '%.2f' % e['fds_per_session'] if 'fds_per_session' in e else '–', e['wakeups'], e['cpu_pct']))
        w('')
        p = idle['pty']
        w('- Memory per session: Tether %.2f× tmux, %.2f× dtach (same run).'
          % (idle['tether']['kib_per_session'] / max(idle['tmux']['kib_per_session'], 0.1),
             idle['tether']['kib_per_session'] / max(idle['dtach']['kib_per_session'], 0.1)))
        if idle.get('largest'):
            e = idle['largest']
            w('- Largest count: the kernel allows %d PTYs (`/proc/sys/kernel/pty/max`), %d were in use by others '
              'and %d were left free for them (BENCH_PTY_MARGIN), so %d were possible; Tether itself accepts '
              '`--max-sessions` up to %s: %d asked, %d made%s.'
              % (p['max'], p['in_use'], p['margin'], p['by_pty'], p['tether_cap'], e['asked'], e['made'],
                 ' (refused: %s)' % e['refused'] if e['refused'] else ''))
        w('')
    def sec_fairness():
        f = fig['fairness']
        w('### Fairness: %d sessions streaming at once (`yes`), %d s, each with its own control viewer' % (f['count'], f['secs']))
        w('')
        w('| run | total MB/s | slowest / mean | fastest / mean | sessions with nothing | first tenth made / mean | last tenth / mean |')
        w('|---|---|---|---|---|---|---|')
        for i, e in enumerate(f['runs']):
            w('| %d | %.1f | %.2f | %.2f | %d | %.2f | %.2f |' % (i + 1, e['mbs'], e['min'], e['max'], e['zero'],
                                                               e['first_tenth'], e['last_tenth']))
        ok = all(e['min'] >= 0.5 and e['max'] <= 2 for e in f['runs'])
        w('')
        w('- Bar: each session within 2× of the mean: **%s**.' % ('met' if ok else 'not met'))
        w('')
    def sec_browser():
        b = fig['browser']
        thr, nat = stats(b['throughput']), stats(b['native'])
        w('### The dashboard in Chromium')
        w('')
        w('The dashboard\'s own page in Debian\'s Chromium (headless, %s renderer, 1280×800), driven by '
          '`bench/browser.mjs`; times taken in the page (`performance.now()`), each until xterm.js has parsed '
          'the output and the next frame is painted.' % b['renderer'])
        w('')
        w('| workload | dashboard | the native client (`bench_client`, same server, same run) |')
        w('|---|---|---|')
        w('| `cat` of %d MiB until the last line is painted (MB/s) | %s | %s (dashboard: %.3f×) |'
          % (b['size'] >> 20, fmt(thr), fmt(nat), thr[0] / nat[0]))
        w('| Ctrl-C during a flood (`yes`) until the prompt is painted (ms) | %s | — |' % fmt(stats(b['interrupt']), '%.0f'))
        w('| keystroke to paint, %d keys (ms): median, p99, max | %.1f, %.1f, %.1f | see *Latency* |'
          % (b['keys']['n'], b['keys']['median'], b['keys']['p99'], b['keys']['max']))
        w('')
        w('Goals (issue 27): the dashboard within 2× of the native client\'s throughput: **%s**; Ctrl-C during '
          'a flood under 1 s: **%s**. ttyd is not in Debian 12 and was not built for this run; no peer figure.'
          % ('met' if thr[0] * 2 >= nat[0] else 'not met', 'met' if stats(b['interrupt'])[0] < 1000 else 'not met'))
        w('')
    def sec_startup():
        s = fig['startup']
        w('### Startup: exec to the runtime file existing (ms)')
        w('')
        w('| system | ms | × Tether |')
        w('|---|---|---|')
        tm = statistics.median(s['Tether'])
        for name, what in (('Tether', '`server.json`'), ('tmux', 'its server socket'), ('dtach', 'its socket')):
            w('| %s (%s) | %s | %.2f |' % (name, what, fmt(stats(s[name])), statistics.median(s[name]) / tm))
        w('')
    for name in ('throughput', 'latency', 'reattach', 'idle', 'fairness', 'browser', 'startup'):
        try:
            {'throughput': sec_throughput, 'latency': sec_latency, 'reattach': sec_reattach, 'idle': sec_idle,
             'fairness': sec_fairness, 'browser': sec_browser, 'startup': sec_startup}[name]()
        except (KeyError, IndexError, ValueError, TypeError, ZeroDivisionError, statistics.StatisticsError) as e:
            w('### %s' % name)
            w('')
            w('*Not measured in this run: %s (%s: %s).*' % (fig.get('errors', {}).get(name, 'no figures'), type(e).__name__, e))
            w('')
    w('Phases (s): ' + ', '.join('%s %.0f' % kv for kv in fig['phase_secs'].items()) + '.')
    return '\n'.join(out)


def main():
    # A SIGTERM (timeout(1), a job runner) unwinds like an exception, so the
    # servers and peers this run started are ended by the `finally` blocks.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit('bench: terminated'))
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    if sys.argv[1] == '--render':
        # Writes the figures of an earlier run again (after a change of this
        # page's layout): bench/run.py --render FIGURES.json [--write-doc]
        fig = json.load(open(sys.argv[2]))
        del sys.argv[1]
    else:
        bench = Bench(sys.argv[1])
        bench.run()
        fig = bench.fig
        os.makedirs(os.path.join(bench.build, 'bench'), exist_ok=True)
        with open(os.path.join(bench.build, 'bench', 'figures.json'), 'w') as f:
            json.dump(fig, f, indent=1)
    text = render(fig)
    print(text)
    if '--write-doc' in sys.argv[2:] and QUICK:
        print('bench: a BENCH_QUICK run does not write docs/performance.md')
    elif '--write-doc' in sys.argv[2:]:
        doc = os.path.join(ROOT, 'docs', 'performance.md')
        s = open(doc).read()
        b, e = '<!-- bench:begin -->', '<!-- bench:end -->'
        i, j = s.index(b) + len(b), s.index(e)
        open(doc, 'w').write(s[:i] + '\n' + text + '\n' + s[j:])
        print('bench: wrote the figures into', doc)


if __name__ == '__main__':
    main()
