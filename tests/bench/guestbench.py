"""The bench's measurements inside guests (lib/py/minitty/guest.py's Guest).

speed_run(flavour, ...)  boots one guest and times boot, both 1 MiB raw
                         transfers, the echo round trip and a 200-line
                         canonical read; it also reads /proc/meminfo.
memory_run(flavour, ...) boots a guest whose PID 1 is tests/bench/meminit.sh
                         and returns its /proc snapshots.
"""

import hashlib
import os
import re
import secrets
import select
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))

from guest import SANDBOX, Guest, GuestError, wait_boot  # noqa: E402
from minitty.arch import initramfs  # noqa: E402

MIB = 1 << 20
# The guest→host data: the first MiB of the guest's busybox binary (the
# guest also prints its md5; the host compares both with what it got).
G2H_FILE = "/bin/busybox"


def h2g_data(n=MIB):
    """N deterministic pseudo-random bytes (every byte value occurs)."""
    out = bytearray()
    i = 0
    while len(out) < n:
        out += hashlib.sha256(b"minitty-bench-%d" % i).digest()
        i += 1
    return bytes(out[:n])


def canon_lines(n=200):
    return b"".join(b"%04d the quick brown fox jumps over the lazy dog 0123456789\n" % i
                    for i in range(n))


def now():
    return time.monotonic()


class Driver:
    """Framed commands on a Guest's shell, with a READY marker inside the
    command so that the host knows when the guest side is in place."""

    def __init__(self, g):
        self.g = g

    def begin(self, body):
        """Send `body` (which may use $T, the token) framed; wait for the
        READY marker body prints with `printf '%s%s\\n' @@RD $T`."""
        tok = secrets.token_hex(6)
        line = (f"T={tok}; printf '%s%s\\n' @@MB $T; ({body}); __st=$?; "
                f"printf '\\n%s%s:%d\\n' @@ME $T $__st\n")
        self.g.send(line.encode())
        self.g.read_until(re.compile(rb"@@MB" + tok.encode() + rb"\r*\n"), 30)
        self.g.read_until(re.compile(rb"@@RD" + tok.encode() + rb"\r*\n"), 30)
        return tok

    def end(self, tok, timeout=60):
        got = self.g.read_until(
            re.compile(rb"\r*\n@@ME" + tok.encode() + rb":(\d+)\r*\n"), timeout)
        m = re.search(rb"@@ME" + tok.encode() + rb":(\d+)", got)
        return got[:m.start()], int(m.group(1))

    # raw I/O on the pty, past Guest's reading (what it read but did not
    # consume is taken over first, and given back after)
    def take_buf(self):
        return self.g.take_input()

    def read_raw(self, timeout):
        r, _, _ = select.select([self.g.fd], [], [], max(0, timeout))
        if not r:
            return b""
        try:
            return os.read(self.g.fd, 65536)
        except BlockingIOError:
            return b""

    def write_all(self, data, chunk=4096, stall=120):
        """Write DATA as fast as QEMU takes it from the pty (a full pty
        blocks the writer: that is the backpressure)."""
        view = memoryview(data)
        last = now()
        while view:
            try:
                n = os.write(self.g.fd, view[:chunk])
                view = view[n:]
                last = now()
            except BlockingIOError:
                select.select([], [self.g.fd], [], 1)
                if now() - last > stall:
                    raise GuestError(f"the guest took no input for {stall} s "
                                     f"({len(data) - len(view)} of {len(data)} bytes written)")


def boot_timed(g, timeout):
    """Launch G and return seconds from the launch to the first shell
    prompt in its serial log (polled every 5 ms)."""
    t0 = now()
    g.launch()
    wait_boot(g.serial_log, g.pid, timeout, poll=0.005)
    t = now() - t0
    g.sync(30)
    return t


def meminfo(text):
    out = {}
    for line in text.splitlines():
        m = re.match(r"(\w+(?:\(\w+\))?):\s+(\d+)", line)
        if m:
            out[m.group(1)] = int(m.group(2))
    return out


def h2g(d, data):
    """Host to guest, raw: returns dict(seconds, bytes_lost, ok)."""
    n = len(data)
    # min 0 time 50: if bytes are lost, head gets EOF after 5 s of silence
    # instead of waiting for ever, and wc tells how many arrived.
    tok = d.begin(f"stty raw -echo min 0 time 50; printf '%s%s\\n' @@RD $T; "
                  f"head -c {n} >/tmp/bench-h2g; stty sane; wc -c </tmp/bench-h2g; "
                  f"md5sum </tmp/bench-h2g; rm -f /tmp/bench-h2g")
    t0 = now()
    d.write_all(data)
    line = d.g.read_until(re.compile(rb"(\d+)\r*\n"), 1800)
    t = now() - t0
    out, st = d.end(tok, 60)
    count = int(re.search(rb"(\d+)\r*\n$", line).group(1))
    m = re.search(rb"([0-9a-f]{32})", out)
    md5 = m.group(1).decode() if m else None
    want = hashlib.md5(data).hexdigest()
    return {"seconds": t, "bytes": n, "bytes_received": count,
            "bytes_lost": n - count, "md5_ok": md5 == want, "status": st,
            "kib_per_s": n / 1024 / t}


def g2h(d, n=MIB, host_copy=None):
    """Guest to host, raw: returns dict(seconds, bytes_lost, ok)."""
    tok = d.begin(f"stty raw -echo; printf '%s%s\\n' @@RD $T; head -c {n} {G2H_FILE}; "
                  f"printf '%s%s\\n' @@TR $T; stty sane; head -c {n} {G2H_FILE} | md5sum")
    t0 = now()
    data = bytearray(d.take_buf())
    trailer = b"@@TR" + tok.encode()
    last = now()
    t = None
    while len(data) < n:
        chunk = d.read_raw(1.0)
        if chunk:
            data += chunk
            last = now()
            if trailer in data:  # bytes were lost
                break
        elif now() - last > 20:
            break
    t = now() - t0
    got = bytes(data[:n])
    i = got.find(trailer)
    if i >= 0:
        got = got[:i]
    d.g.put_back(data[len(got):])
    out, st = d.end(tok, 60)
    m = re.search(rb"([0-9a-f]{32})", out)
    guest_md5 = m.group(1).decode() if m else None
    md5 = hashlib.md5(got).hexdigest()
    res = {"seconds": t, "bytes": n, "bytes_received": len(got),
           "bytes_lost": n - len(got), "md5_ok": md5 == guest_md5, "status": st,
           "kib_per_s": n / 1024 / t}
    if host_copy:
        res["md5_matches_host_copy"] = md5 == hashlib.md5(host_copy[:n]).hexdigest()
    return res


def echo_rtt(d, keys=200):
    """Canonical mode with echo: seconds from writing one character to
    reading its echo, for KEYS keystrokes (cat reads the lines)."""
    tok = d.begin("stty sane; printf '%s%s\\n' @@RD $T; cat >/dev/null")
    time.sleep(0.3)
    d.take_buf()
    rtts = []
    for i in range(keys):
        c = b"abcdefghijklmnopqrstuvwxyz"[i % 26:i % 26 + 1]
        t0 = now()
        os.write(d.g.fd, c)
        buf = b""
        while c not in buf:
            r = d.read_raw(10)
            if not r:
                raise GuestError(f"no echo of keystroke {i}")
            buf += r
        rtts.append(now() - t0)
        if i % 40 == 39:
            os.write(d.g.fd, b"\r")
            d.g.read_until(b"\n", 10)
    d.g.send(b"\r\x04")
    d.end(tok, 30)
    return rtts


def canon_read(d, lines):
    """Canonical mode, echo off: seconds from the first byte of LINES sent
    to the md5 of the lines that head -n read."""
    n = lines.count(b"\n")
    tok = d.begin(f"stty sane -echo; printf '%s%s\\n' @@RD $T; head -n {n} | md5sum; stty sane")
    time.sleep(0.3)
    t0 = now()
    d.write_all(lines)
    line = d.g.read_until(re.compile(rb"[0-9a-f]{32}"), 120)
    t = now() - t0
    d.end(tok, 30)
    md5 = re.search(rb"([0-9a-f]{32})", line).group(1).decode()
    return {"seconds": t, "lines": n, "md5_ok": md5 == hashlib.md5(lines).hexdigest()}


def speed_run(flavour, data, lines, keys, host_copy=None, boot_timeout=120):
    g = Guest(flavour, boot_timeout=boot_timeout)
    try:
        res = {"flavour": flavour}
        res["boot_s"] = boot_timed(g, boot_timeout)
        d = Driver(g)
        out, _ = g.sh("cat /proc/meminfo")
        res["meminfo_after_boot"] = meminfo(out)
        out, _ = g.sh("cat /proc/zoneinfo")
        res["meminfo_after_boot"]["pcp_pages"] = sum(
            int(m) for m in re.findall(r"^\s*count:\s*(\d+)", out, re.M))
        res["h2g"] = h2g(d, data)
        res["g2h"] = g2h(d, len(data), host_copy=host_copy)
        res["echo_rtt_s"] = echo_rtt(d, keys)
        res["canon"] = canon_read(d, lines)
        res["serial_log"] = g.serial_log
    finally:
        g.stop()
    res["kernel_problems"] = g.log_problems()
    return res


# --- memory -------------------------------------------------------------
def bench_initramfs(tmp, flavour, cycles):
    """FLAVOUR's initramfs with tests/bench/meminit.sh appended as
    /bench/meminit (a second gzip'd cpio member: the kernel unpacks both),
    in a scratch sandbox whose build/ is the real one."""
    base = initramfs(SANDBOX, flavour)
    tool = os.path.join(SANDBOX, "host", "gen_init_cpio")
    with open(os.path.join(HERE, "meminit.sh")) as f:
        script = f.read().replace("@CYCLES@", str(cycles))
    sp = os.path.join(tmp, "meminit")
    with open(sp, "w") as f:
        f.write(script)
    lst = os.path.join(tmp, "cpio.list")
    with open(lst, "w") as f:
        f.write(f"dir /bench 755 0 0\nfile /bench/meminit {sp} 755 0 0\n")
    extra = subprocess.run([tool, lst], stdout=subprocess.PIPE, check=True).stdout
    out = initramfs(os.path.join(tmp, "sandbox"), flavour)
    os.makedirs(os.path.dirname(out))
    with open(out, "wb") as f, open(base, "rb") as b:
        shutil.copyfileobj(b, f)
        f.write(subprocess.run(["gzip", "-n", "-9"], input=extra,
                               stdout=subprocess.PIPE, check=True).stdout)
    # lib/qemu.sh takes the kernel and the initramfs from $MINITTY_SANDBOX.
    os.symlink(os.path.join(SANDBOX, "build"), os.path.join(tmp, "sandbox", "build"))
    return os.path.join(tmp, "sandbox")


MEM_APPEND = "rdinit=/bench/meminit slab_debug=F slab_nomerge"


def parse_snap(line):
    parts = line.split()
    tag, cyc = parts[0], int(parts[1])
    mem, slab, other = {}, {}, {}
    for p in parts[2:]:
        k, _, v = p.partition("=")
        if k.startswith("slab:"):
            a, _, s = v.partition("*")
            slab[k[5:]] = (int(a), int(s))
        elif k == "got":
            other["got"] = v
        elif v.isdigit():
            mem[k] = int(v)
    return {"tag": tag, "cycle": cyc, "meminfo": mem, "slab": slab, **other}


def memory_run(flavour, cycles, boot_timeout=120):
    tmp = tempfile.mkdtemp(prefix="minitty-bench-")
    old = os.environ.get("MINITTY_SANDBOX")
    try:
        os.environ["MINITTY_SANDBOX"] = bench_initramfs(tmp, flavour, cycles)
        g = Guest(flavour, extra_append=MEM_APPEND, boot_timeout=boot_timeout)
        try:
            g.launch()
        finally:
            if old is None:
                del os.environ["MINITTY_SANDBOX"]
            else:
                os.environ["MINITTY_SANDBOX"] = old
        try:
            timeout = boot_timeout + cycles * 30
            for i in range(cycles):
                g.read_until(re.compile(rb"@@BENCH-RX %d\r*\n" % i), timeout)
                g.send(b"ping%d\r" % i)
            out = g.read_until(b"@@BENCH-END", timeout)
        finally:
            g.stop()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    text = out.decode("utf-8", "replace").replace("\r", "")
    body = text.split("@@BENCH-BEGIN\n", 1)[1].split("@@BENCH-END")[0]
    snaps = [parse_snap(line) for line in body.splitlines() if line.strip()]
    return {"flavour": flavour, "snapshots": snaps, "serial_log": g.serial_log,
            "kernel_problems": g.log_problems(), "append": MEM_APPEND}
