"""A booted guest as the differential suite needs it: the raw host side of
QEMU's pty, read and written without any host-side processing.

It boots through the project's guest module (lib/py/minitty/guest.py's
Guest, which runs lib/qemu.sh: the one QEMU command line) and only
touches QEMU's own pty.
"""

import errno
import os
import re
import select
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "lib", "py"))

from minitty import arch as arch_mod  # noqa: E402
from minitty import guest as guest_mod  # noqa: E402

SANDBOX = guest_mod.SANDBOX
# The kernel's problem lines: the one list (the guest module's).
PANIC_RE = guest_mod.PROBLEM_RE_BYTES


class BootError(Exception):
    pass


def kernel_image(flavour):
    return arch_mod.kernel_image(SANDBOX, flavour)


def initramfs(flavour):
    return arch_mod.initramfs(SANDBOX, flavour)


class Target:
    """One booted flavour.  .transcript holds everything received."""

    def __init__(self, flavour, log):
        self.flavour = flavour
        self.log = log              # callable(str) for progress notes
        self.guest = None
        self.fd = None
        self.serial_log = None
        self.transcript = bytearray()
        self.pos = 0                # start of the unconsumed part
        self.shell_n = 0

    # ---- boot --------------------------------------------------------
    def boot(self, timeout=120):
        self.guest = guest_mod.Guest(self.flavour)
        try:
            self.guest.start()
        except guest_mod.GuestError as e:
            self.guest.stop()
            self.guest = None
            raise BootError(str(e))
        self.fd = self.guest.fd
        self.pty_path = self.guest.pty_path
        self.serial_log = self.guest.serial_log
        # wait for a working shell
        deadline = time.time() + timeout
        while time.time() < deadline:
            if self.resync(timeout=5, quiet=True):
                return
        raise BootError("%s: no shell on the serial line after %ds"
                        % (self.flavour, timeout))

    def close(self):
        if self.guest is not None:
            self.guest.stop()           # closes the fd too
            self.guest = None
            self.fd = None
        self.fd = None

    def alive(self):
        if self.guest is not None:
            return self.guest.alive()
        return True

    # ---- I/O ---------------------------------------------------------
    def pump(self, timeout):
        """Read what is there, waiting at most timeout seconds for the
        first byte.  Returns the number of bytes read."""
        r, _, _ = select.select([self.fd], [], [], max(0.0, timeout))
        if not r:
            return 0
        total = 0
        while True:
            try:
                d = os.read(self.fd, 65536)
            except OSError as e:
                if e.errno in (errno.EAGAIN, errno.EWOULDBLOCK):
                    break
                if e.errno == errno.EIO:   # QEMU went away
                    time.sleep(min(timeout, 0.1))
                    break
                raise
            if not d:
                break
            self.transcript += d
            total += len(d)
        return total

    def write_some(self, data):
        """Write as much of data as the pty takes now; returns the count."""
        try:
            return os.write(self.fd, data)
        except OSError as e:
            if e.errno in (errno.EAGAIN, errno.EWOULDBLOCK):
                return 0
            raise

    def send_break(self):
        """A break on the line (the pty cannot carry one)."""
        self.guest.send_break()

    def write_all(self, data, timeout=10):
        deadline = time.time() + timeout
        while data:
            n = self.write_some(data)
            data = data[n:]
            if data:
                if time.time() > deadline:
                    raise BootError("write to the pty timed out")
                _, w, _ = select.select([self.fd], [self.fd], [], 0.05)
                self.pump(0)

    def wait_for(self, pattern, timeout, start=None):
        """Wait until the transcript from start (default self.pos) matches
        the bytes regex pattern; returns the match or None."""
        rx = re.compile(pattern) if isinstance(pattern, bytes) else pattern
        start = self.pos if start is None else start
        deadline = time.time() + timeout
        while True:
            m = rx.search(self.transcript, start)
            if m:
                return m
            left = deadline - time.time()
            if left <= 0 or not self.alive():
                return None
            self.pump(min(left, 0.2))

    def resync(self, timeout=10, quiet=False):
        """Make sure the shell reads commands: echo a marker whose typed
        form differs from its output.  Returns True when it came back."""
        self.shell_n += 1
        n = self.shell_n
        self.pump(0)
        self.pos = len(self.transcript)
        self.write_all(b"echo @@MTT-SH''ELL-%d@@\r" % n)
        m = self.wait_for(rb"@@MTT-SHELL-%d@@" % n, timeout)
        if m:
            # let the prompt arrive, then mark everything consumed
            self.wait_for(rb"# ", 1.0, start=m.end())
            self.pump(0.1)
            self.pos = len(self.transcript)
            return True
        return False

    def panic_lines(self, start=0):
        out = []
        for m in PANIC_RE.finditer(self.transcript, start):
            a = self.transcript.rfind(b"\n", 0, m.start()) + 1
            b = self.transcript.find(b"\n", m.end())
            out.append(bytes(self.transcript[a:b if b >= 0 else len(self.transcript)]))
        return out

    def serial_log_problems(self):
        """Problem lines of the serial log (the guest module's list)."""
        if self.guest is not None:
            return self.guest.log_problems()
        if self.serial_log:
            return guest_mod.problems_in(self.serial_log)
        return []
