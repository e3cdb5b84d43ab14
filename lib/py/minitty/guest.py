#!/usr/bin/python3
"""Drive a minitty sandbox guest over its serial pty.

The one guest module of the project (product code; the suites import it
through tests/lib/guest.py, the bench and the differential suite too):
the QEMU launch (through lib/qemu.sh, the one QEMU command line), the
pty, and the life cycle: start, wait for the prompt, run a command, stop,
kill on timeout. `bin/minitty run` / `boot` call its command line:

    guest.py run [--flavour F] [--login] [--timeout S] [--append A]
                 [--smp N] [--memory M] [--add DIR]... -- CMD [ARG...]
    guest.py wait-boot --log LOG --pid PID [--timeout S]

Library use:

    from guest import Guest
    with Guest("fulltty") as g:          # boots a guest of its own
        out, status = g.sh("uname -r")
        assert not g.log_problems()

The guest is started by lib/qemu.sh (the project's one QEMU command line)
in a temporary run directory, so it never disturbs the guest of
`minitty boot`. Its serial log is sandbox/logs/serial-FLAVOUR-*.log.
Note that the serial log holds everything the guest sends, echo of typed
commands included: do not type the words log_problems() looks for.
"""

import argparse
import atexit
import json
import os
import re
import secrets
import select
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import tty

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))
SANDBOX = os.environ.get("MINITTY_SANDBOX", os.path.join(ROOT, "sandbox"))
LAUNCH = os.path.join(ROOT, "lib", "qemu.sh")

# What the kernel prints when something went wrong, in the forms it
# prints it (so that a typed command naming a bug does not match): the one
# list of every caller (run, the suites, the differential suite, bench).
PROBLEM_RE = re.compile(
    r"Oops:|\bBUG:|\bWARNING:|Kernel panic"
    # lockdep (its reports also begin with WARNING:)
    r"|possible circular locking|inconsistent lock state"
    r"|possible recursive locking|possible irq lock inversion"
    r"|suspicious RCU usage|held lock freed"
    r"|\bKASAN:|\bUBSAN:"
    # hung tasks and RCU stalls
    r"|blocked for more than|self-detected stall|rcu: INFO:"
    r"|detected stalls on CPUs")
# The same, for bytes.
PROBLEM_RE_BYTES = re.compile(PROBLEM_RE.pattern.encode())
PANIC_RE = re.compile(rb"Kernel panic[^\r\n]*")
# The guest is ready when its log shows a shell prompt ("~ # ", "/ # ",
# "~ $ ") or a getty login prompt.
PROMPT_RE = re.compile(rb"(^|\n)[^\n]*[~/][^ \n]* [#$] |login: ")
LOGIN_RE = re.compile(rb"login: ")


class GuestError(Exception):
    """The guest did not do what was asked in time."""


class CommandTimeout(GuestError):
    """A command of sh()/sh_stream() did not finish in time."""


def log_tail(path, lines=20):
    """The last LINES lines of file PATH, as text."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError:
        return "(no serial log)"
    text = data.decode("utf-8", "replace").replace("\r", "")
    return "\n".join(text.splitlines()[-lines:])


def pid_alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # A zombie is not alive.
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def wait_boot(log, pid, timeout, pattern=PROMPT_RE, poll=0.1):
    """Wait until serial log LOG matches PATTERN (read every POLL
    seconds). Raise GuestError if QEMU PID dies (saying so when the kernel
    panicked) or TIMEOUT seconds pass."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            with open(log, "rb") as f:
                data = f.read()
        except OSError:
            data = b""
        if pattern.search(data):
            return
        if not pid_alive(pid):
            m = PANIC_RE.search(data)
            if m:
                raise GuestError("the kernel panicked before the guest booted: "
                                 + m.group(0).decode("utf-8", "replace").strip())
            raise GuestError(f"QEMU (pid {pid}) exited before the guest booted")
        if time.monotonic() > deadline:
            raise GuestError(f"the guest did not boot within {timeout} s")
        time.sleep(poll)


def problems_in(path):
    """Lines of file PATH that PROBLEM_RE matches."""
    try:
        with open(path, "rb") as f:
            text = f.read().decode("utf-8", "replace").replace("\r", "")
    except OSError:
        return []
    return [line for line in text.splitlines() if PROBLEM_RE.search(line)]


def _marker_start(buf, marker):
    """The length of the longest tail of BUF that may be the beginning of
    MARKER followed by digits (0 when none)."""
    for k in range(min(len(buf), len(marker) + 12), 0, -1):
        tail = buf[-k:]
        rest = tail[len(marker):].rstrip(b"\r")
        if marker.startswith(tail) or (
                tail.startswith(marker) and (not rest or rest.isdigit())):
            return k
    return 0


class Guest:
    """A guest of one flavour, booted by start() (or `with`), stopped by
    stop(). login=True boots with minitty.login=1 and logs in through
    getty as user/password (root/root by default)."""

    def __init__(self, flavour="fulltty", login=False, extra_append="",
                 boot_timeout=120, user="root", password=None, gdb_wait=False,
                 smp=None, memory=64, add=()):
        self.flavour = flavour
        self.smp = smp
        self.memory = memory
        self.add = list(add)
        self.login = login
        self.extra_append = extra_append
        self.boot_timeout = boot_timeout
        self.user = user
        self.password = password if password is not None else user
        self.gdb_wait = gdb_wait
        self.run_dir = None
        self.serial_log = None
        self.pty_path = None
        self.gdb_port = None
        self.pid = None
        self.fd = None
        self._buf = b""

    def __enter__(self):
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc):
        self.stop()
        return False

    # --- life cycle ---------------------------------------------------
    def launch(self):
        """Start QEMU and open the pty, without waiting for the guest."""
        logs = os.path.join(SANDBOX, "logs")
        os.makedirs(logs, exist_ok=True)
        self.run_dir = tempfile.mkdtemp(prefix=f"minitty-{self.flavour}-")
        stamp = time.strftime("%Y%m%d-%H%M%S")
        self.serial_log = os.path.join(
            logs, f"serial-{self.flavour}-{stamp}-{os.getpid()}-"
                  f"{os.path.basename(self.run_dir)[-6:]}.log")
        append = " ".join(a for a in ("minitty.login=1" if self.login else "",
                                      self.extra_append) if a)
        res = subprocess.run(
            ["bash", LAUNCH, self.run_dir, self.flavour, self.serial_log,
             "1" if self.gdb_wait else "0", append,
             "" if self.smp is None else str(self.smp),
             str(self.memory), *self.add],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            env=dict(os.environ, MINITTY_GUEST_OWNER=str(os.getpid())))
        if res.returncode != 0:
            raise GuestError(res.stderr.strip() or "lib/qemu.sh failed")
        self.pid = int(self._runfile("pid"))
        atexit.register(self.stop)
        self.pty_path = self._runfile("serial")
        self.gdb_port = int(self._runfile("gdb").rsplit(":", 1)[1])
        self.fd = os.open(self.pty_path, os.O_RDWR | os.O_NOCTTY | os.O_NONBLOCK)
        tty.setraw(self.fd)

    def start(self):
        """Boot and wait for the shell (logging in first with login=True)."""
        self.launch()
        if self.gdb_wait:
            return
        try:
            self.wait_ready()
        except BaseException:
            # A guest that did not boot is never left running.
            self.stop()
            raise

    def wait_ready(self):
        """Wait for the shell prompt and synchronize with a marker."""
        deadline = time.monotonic() + self.boot_timeout
        try:
            wait_boot(self.serial_log, self.pid, self.boot_timeout,
                      LOGIN_RE if self.login else PROMPT_RE)
            if self.login:
                self.send(self.user.encode() + b"\r")
                self.read_until(b"assword:", max(1, deadline - time.monotonic()))
                self.send(self.password.encode() + b"\r")
            self.sync(max(5, deadline - time.monotonic()))
            self.seed_crng(max(5, deadline - time.monotonic()))
        except GuestError as e:
            raise GuestError(f"{e}; serial log {self.serial_log}, last lines:\n"
                             f"{log_tail(self.serial_log)}") from None

    def seed_crng(self, timeout=60):
        """Wait until the kernel's crng is seeded. It prints "random: crng
        init done" on the console then: on x86_64 (no seed from the boot
        loader) that line came whenever enough interrupts had been seen,
        in the middle of a test's output. A read of /dev/random waits for
        the seeding, and makes it happen (jitter entropy)."""
        out, status = self.sh("head -c 1 /dev/random >/dev/null", timeout)
        if status != 0:
            raise GuestError(f"reading /dev/random failed ({status}): {out.strip()!r}")
        self._buf = b""

    def sync(self, timeout=60):
        """Run a no-op marker command until the shell answers, then drop
        everything read so far. Before each retry, INTR (^C) ends what the
        shell holds of an earlier try: a line that lost its start (sent
        while a respawned shell had not yet opened the port, whose driver
        drains its RX FIFO at startup) can leave a quote open, and the
        shell would take every later try as more of it."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                self.sh(":", timeout=min(5, max(1, deadline - time.monotonic())))
                break
            except GuestError:
                if time.monotonic() > deadline:
                    raise GuestError("the guest shell does not answer")
                self.send(b"\x03")
        self._buf = b""

    def stop(self):
        """Kill QEMU, close the pty, remove the run directory."""
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None
        if self.pid and pid_alive(self.pid):
            os.kill(self.pid, signal.SIGTERM)
            for _ in range(100):
                if not pid_alive(self.pid):
                    break
                time.sleep(0.05)
            else:
                os.kill(self.pid, signal.SIGKILL)
        self.pid = None
        if self.run_dir:
            shutil.rmtree(self.run_dir, ignore_errors=True)
            self.run_dir = None

    def alive(self):
        return bool(self.pid) and pid_alive(self.pid)

    # --- raw pty ------------------------------------------------------
    def send(self, data):
        """Write bytes DATA to the guest's serial port."""
        if isinstance(data, str):
            data = data.encode()
        view = memoryview(data)
        while view:
            try:
                n = os.write(self.fd, view)
                view = view[n:]
            except BlockingIOError:
                select.select([], [self.fd], [], 1)

    def send_break(self, timeout=10):
        """A break on the serial line, through QEMU's QMP socket (lib/qemu.sh)
        and chardev-send-break: a pty cannot carry a break, the chardev
        hands it to the UART as its break event."""
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.settimeout(timeout)
            try:
                s.connect(os.path.join(self.run_dir, "qmp"))
                f = s.makefile("rwb")
                f.readline()            # the greeting
                for cmd in ({"execute": "qmp_capabilities"},
                            {"execute": "chardev-send-break",
                             "arguments": {"id": "ser0"}}):
                    f.write(json.dumps(cmd).encode() + b"\n")
                    f.flush()
                    while True:         # events may come first
                        line = f.readline()
                        if not line:
                            raise GuestError("QMP closed the connection")
                        answer = json.loads(line)
                        if "error" in answer:
                            raise GuestError("QMP %s: %s" % (
                                cmd["execute"], answer["error"].get("desc")))
                        if "return" in answer:
                            break
            except OSError as e:
                raise GuestError(f"QMP: {e}") from None

    def _read_some(self, timeout):
        r, _, _ = select.select([self.fd], [], [], max(0, timeout))
        if not r:
            return b""
        try:
            return os.read(self.fd, 65536)
        except (BlockingIOError, InterruptedError):
            return b""
        except OSError as e:  # EIO: QEMU closed the pty
            raise GuestError(f"serial pty closed ({e}); is QEMU still running?")

    def read_until(self, pattern, timeout=30):
        """Read until PATTERN (bytes or a compiled bytes regex) shows up;
        return everything up to and including the match. Raise GuestError
        after TIMEOUT seconds."""
        if isinstance(pattern, bytes):
            pattern = re.compile(re.escape(pattern))
        deadline = time.monotonic() + timeout
        while True:
            m = pattern.search(self._buf)
            if m:
                out, self._buf = self._buf[:m.end()], self._buf[m.end():]
                return out
            left = deadline - time.monotonic()
            if left <= 0:
                seen = self._buf[-300:].decode("utf-8", "replace")
                raise GuestError(f"timeout ({timeout} s) waiting for "
                                 f"{pattern.pattern!r}; last output: {seen!r}")
            self._buf += self._read_some(min(left, 0.5))

    def read_for(self, seconds):
        """Everything the guest sends during SECONDS seconds."""
        deadline = time.monotonic() + seconds
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                break
            self._buf += self._read_some(left)
        out, self._buf = self._buf, b""
        return out

    # --- shell --------------------------------------------------------
    def sh(self, cmd, timeout=60):
        """Run shell command CMD in a subshell of the guest's shell; return
        (output, status). Output is what CMD wrote, with \\r\\n as \\n."""
        out = []
        status = self.sh_stream(cmd, out.append, timeout)
        return b"".join(out).decode("utf-8", "replace"), status

    def sh_stream(self, cmd, write, timeout=60):
        """Run CMD as sh() does, but hand its output (bytes, \\r\\n as
        \\n, any byte value) to WRITE as it arrives; return its status.
        TIMEOUT bounds the whole command."""
        tok = secrets.token_hex(6)
        # The markers are printed from split words, so the echo of the
        # typed line never matches them. The end marker follows CMD's
        # output directly (with or without a newline).
        line = (f"printf '%s%s\\n' @@MB {tok}; (\n{cmd}\n); __st=$?; "
                f"printf '%s%s:%d\\n' @@ME {tok} $__st\n")
        deadline = time.monotonic() + timeout
        self.send(line.encode())
        self.read_until(re.compile(rb"@@MB" + tok.encode() + rb"\r*\n"), timeout)
        marker = b"@@ME" + tok.encode() + b":"
        end = re.compile(re.escape(marker) + rb"(\d+)\r*\n")
        while True:
            m = end.search(self._buf)
            if m:
                write(self._buf[:m.start()].replace(b"\r\n", b"\n"))
                self._buf = self._buf[m.end():]
                return int(m.group(1))
            n = len(self._buf) - _marker_start(self._buf, marker)
            if self._buf[n - 1:n] == b"\r":
                n -= 1          # it may be the \r of a \r\n
            if n > 0:
                write(self._buf[:n].replace(b"\r\n", b"\n"))
                self._buf = self._buf[n:]
            left = deadline - time.monotonic()
            if left <= 0:
                raise CommandTimeout(f"the command did not finish within {timeout} s")
            self._buf += self._read_some(min(left, 0.5))

    def take_input(self):
        """What was read from the guest but not consumed yet (for a caller
        that goes on reading the pty itself: bench)."""
        data, self._buf = self._buf, b""
        return data

    def put_back(self, data):
        """Give bytes read from the pty back, before anything unread."""
        self._buf = bytes(data) + self._buf

    def log_problems(self):
        """Lines of the serial log with Oops, BUG, WARNING or Kernel panic."""
        return problems_in(self.serial_log)

    def _runfile(self, name):
        with open(os.path.join(self.run_dir, name)) as f:
            return f.read().strip()


# --- command line -----------------------------------------------------
# Exit statuses of `run` besides CMD's own: git bisect run skips a commit
# on 125 (the guest could not test it) and counts the others as bad.
EX_GUEST = 125     # no build, no boot, QEMU or the serial line gone
EX_TIMEOUT = 124   # CMD did not finish in time (as timeout(1))


def run_command(args):
    """The shell command line of ARGS: one argument is a command line as
    it is; several are a program and its arguments, each quoted."""
    if len(args) == 1:
        return args[0]
    return " ".join(shlex.quote(a) for a in args)


def main_run(args):
    cmd = run_command(args.cmd)
    if not args.cmd:
        print("minitty: run: no command (usage: minitty run [--flavour F] -- CMD)",
              file=sys.stderr)
        return 2
    g = Guest(args.flavour, login=args.login, boot_timeout=args.boot_timeout,
              extra_append=args.append, smp=args.smp, memory=args.memory,
              add=args.add)
    out = sys.stdout.buffer

    def write(data):
        out.write(data)
        out.flush()

    try:
        try:
            g.start()
        except GuestError as e:
            print(f"minitty: run: {e}", file=sys.stderr)
            return EX_GUEST
        try:
            status = g.sh_stream(cmd, write, timeout=args.timeout)
        except CommandTimeout as e:
            print(f"minitty: run: {e}", file=sys.stderr)
            return EX_TIMEOUT
        except GuestError as e:
            print(f"minitty: run: {e}; serial log {g.serial_log}, last lines:\n"
                  f"{log_tail(g.serial_log)}", file=sys.stderr)
            return EX_GUEST
        try:
            g.send(b"poweroff -f\n")
            for _ in range(50):
                if not g.alive():
                    break
                time.sleep(0.1)
        except GuestError:
            pass
    finally:
        g.stop()
    problems = g.log_problems()
    if problems:
        print(f"minitty: run: the kernel reported problems (serial log {g.serial_log}):",
              file=sys.stderr)
        for p in problems:
            print(f"    {p}", file=sys.stderr)
        return 1
    return status


def main_wait_boot(args):
    try:
        wait_boot(args.log, args.pid, args.timeout)
    except GuestError as e:
        print(f"minitty: boot: {e}; serial log {args.log}, last lines:\n"
              f"{log_tail(args.log)}", file=sys.stderr)
        return 1
    return 0


def main(argv):
    p = argparse.ArgumentParser(prog="guest.py")
    sub = p.add_subparsers(dest="what", required=True)
    r = sub.add_parser("run")
    r.add_argument("--flavour", "-f", default="fulltty")
    r.add_argument("--login", action="store_true")
    r.add_argument("--timeout", type=float, default=600,
                   help="seconds CMD may run")
    r.add_argument("--boot-timeout", type=float, default=120)
    r.add_argument("--append", default="")
    r.add_argument("--smp", type=int, default=None,
                   help="CPUs (default: 1; 2 for the -smp flavours)")
    r.add_argument("--memory", type=int, default=64)
    r.add_argument("--add", action="append", default=[])
    r.add_argument("cmd", nargs=argparse.REMAINDER)
    w = sub.add_parser("wait-boot")
    w.add_argument("--log", required=True)
    w.add_argument("--pid", type=int, required=True)
    w.add_argument("--timeout", type=float, default=120)
    args = p.parse_args(argv)
    if args.what == "run":
        if args.cmd[:1] == ["--"]:
            args.cmd = args.cmd[1:]
        return main_run(args)
    return main_wait_boot(args)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
