"""A booted guest as the differential suite needs it: the raw host side of
QEMU's pty, read and written without any host-side processing.

It boots through tests/lib/guest.py's Guest when that exists and gives what
this needs; otherwise (while the CLI is being written) it starts QEMU
itself exactly as docs/layout.md describes the guest.  Either way it only
touches QEMU's own pty.
"""

import errno
import os
import re
import select
import subprocess
import sys
import time
import tty

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
SANDBOX = os.path.join(ROOT, "sandbox")

PANIC_RE = re.compile(rb"Oops:|BUG:|WARNING:|Kernel panic")


class BootError(Exception):
    pass


def kernel_image(flavour):
    return os.path.join(SANDBOX, "build", flavour, "arch/arm/boot/zImage")


def initramfs():
    return os.path.join(SANDBOX, "rootfs", "initramfs.cpio.gz")


class Target:
    """One booted flavour.  .transcript holds everything received."""

    def __init__(self, flavour, log):
        self.flavour = flavour
        self.log = log              # callable(str) for progress notes
        self.guest = None
        self.proc = None
        self.fd = None
        self.serial_log = None
        self.transcript = bytearray()
        self.pos = 0                # start of the unconsumed part
        self.shell_n = 0

    # ---- boot --------------------------------------------------------
    def boot(self, timeout=120):
        g = self._try_guest_py()
        if g is None:
            self._boot_qemu()
            self._open_pty()
        # wait for a working shell
        deadline = time.time() + timeout
        while time.time() < deadline:
            if self.resync(timeout=5, quiet=True):
                return
        raise BootError("%s: no shell on the serial line after %ds"
                        % (self.flavour, timeout))

    def _try_guest_py(self):
        """Boot with tests/lib/guest.py's Guest (it opens QEMU's pty raw and
        non-blocking; we read and write that same fd)."""
        libdir = os.path.join(ROOT, "tests", "lib")
        if not os.path.exists(os.path.join(libdir, "guest.py")):
            return None
        sys.path.insert(0, libdir)
        try:
            import guest as guest_mod
        finally:
            sys.path.remove(libdir)
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
        return self.guest

    def _boot_qemu(self):
        kernel, initrd = kernel_image(self.flavour), initramfs()
        for p in (kernel, initrd):
            if not os.path.exists(p):
                raise BootError("%s missing" % p)
        logdir = os.path.join(SANDBOX, "logs")
        os.makedirs(logdir, exist_ok=True)
        self.serial_log = os.path.join(logdir, "serial-diff-%s.log" % self.flavour)
        if os.path.exists(self.serial_log):
            os.unlink(self.serial_log)
        cmd = ["qemu-system-arm", "-M", "virt", "-cpu", "cortex-a15", "-m", "64",
               "-kernel", kernel, "-initrd", initrd,
               "-append", "console=ttyAMA0",
               "-chardev", "pty,id=s0,logfile=%s" % self.serial_log,
               "-serial", "chardev:s0", "-display", "none", "-monitor", "none",
               "-nodefaults", "-no-reboot"]
        self.proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL,
                                     stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT)
        line = b""
        deadline = time.time() + 20
        while time.time() < deadline:
            r, _, _ = select.select([self.proc.stdout], [], [], 0.5)
            if r:
                c = os.read(self.proc.stdout.fileno(), 1)
                if not c:
                    break
                line += c
                m = re.search(rb"char device redirected to (/dev/pts/\d+)", line)
                if m:
                    self.pty_path = m.group(1).decode()
                    return
        raise BootError("qemu did not announce its pty: %r" % line[-300:])

    def _open_pty(self):
        self.fd = os.open(self.pty_path, os.O_RDWR | os.O_NOCTTY | os.O_NONBLOCK)
        tty.setraw(self.fd)          # QEMU's pty: no host-side processing

    def close(self):
        if self.guest is not None:
            self.guest.stop()           # closes the fd too
            self.guest = None
            self.fd = None
        if self.fd is not None:
            try:
                os.close(self.fd)
            except OSError:
                pass
            self.fd = None
        if self.proc is not None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
            self.proc = None

    def alive(self):
        if self.guest is not None:
            return self.guest.alive()
        if self.proc is not None:
            return self.proc.poll() is None
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
        """Problem lines of the serial log: Guest.log_problems() when
        booted through it, and a scan for the kernel's own forms (Oops:,
        BUG:, WARNING:, Kernel panic)."""
        found = []
        if self.guest is not None:
            found += self.guest.log_problems()
        if self.serial_log and os.path.exists(self.serial_log):
            with open(self.serial_log, "rb") as f:
                data = f.read()
            found += [m.group(0).decode("latin-1").strip() for m in
                      re.finditer(rb"[^\n]*(?:Oops:|BUG:|WARNING:|Kernel panic)[^\n]*",
                                  data)]
        return found
