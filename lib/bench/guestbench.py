"""The bench's measurements inside guests (lib/py/minitty/guest.py's Guest).

speed_run(flavour, ...)  boots one guest and times boot, both 1 MiB raw
                         transfers, the echo round trip and a 200-line
                         canonical read; it also reads /proc/meminfo.
zmodem_run(flavour, n)   boots one guest with lrzsz and times N bytes
                         each way with sz and rz (ZMODEM).
floor_run(flavour, ...)  boots one guest of the full layer and, under N_NULL,
                         times the same transfers with the bytes dropped
                         as they come (lib/bench/nullsink.c): the floor.
memory_run(flavour, ...) boots a guest whose PID 1 is lib/bench/memsnap.c
                         (after lib/bench/meminit.sh's mounts) and returns
                         its /proc snapshots; port="other" boots it with
                         the port not the console (MEM_PORTS).
"""

import bisect
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
sys.path.insert(0, os.path.join(HERE, "..", "py"))

from minitty.guest import SANDBOX, Guest, GuestError, wait_boot  # noqa: E402
from minitty.arch import flavour_arch, flavour_info  # noqa: E402

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

    def send_timed(self, data, until, timeout):
        """Write DATA (write_all) and read up to UNTIL: what was read and
        the seconds from the first byte written."""
        t0 = now()
        self.write_all(data)
        got = self.g.read_until(until, timeout)
        return got, now() - t0

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
    line, t = d.send_timed(data, re.compile(rb"(\d+)\r*\n"), 1800)
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
    line, t = d.send_timed(lines, re.compile(rb"[0-9a-f]{32}"), 120)
    d.end(tok, 30)
    md5 = re.search(rb"([0-9a-f]{32})", line).group(1).decode()
    return {"seconds": t, "lines": n, "md5_ok": md5 == hashlib.md5(lines).hexdigest()}


# --- ZMODEM ---------------------------------------------------------------
# A real file-transfer program on both ends: Debian's lrzsz, sz and rz on
# the host, the guest's arch's build in the guest, laid over its root as
# `minitty boot --lrzsz` does (lib/rootfs.sh lrzsz_dir: the package and
# the C library it links; lib/bench.sh makes it before the bench starts).


def _zmodem_host(g, argv, cwd, timeout):
    """Run sz or rz (ARGV) on the host with the guest's pty as stdin and
    stdout (a file of its own: Guest's is non-blocking); its seconds."""
    fd = os.open(g.pty_path, os.O_RDWR | os.O_NOCTTY)
    try:
        t0 = now()
        r = subprocess.run(argv, stdin=fd, stdout=fd, stderr=subprocess.PIPE,
                           cwd=cwd, timeout=timeout)
        t = now() - t0
    finally:
        os.close(fd)
    if r.returncode:
        raise GuestError(f"{' '.join(argv)} on the host: exit {r.returncode}: "
                         f"{r.stderr.decode(errors='replace').strip()[-300:]}")
    return t


def zmodem_h2g(d, data, tmp):
    """sz on the host sends DATA, rz in the guest receives it."""
    src = os.path.join(tmp, "zm-h2g")
    with open(src, "wb") as f:
        f.write(data)
    tok = d.begin("cd /tmp && rm -f zm-h2g && printf '%s%s\\n' @@RD $T && rz -q -y 2>/dev/null; "
                  "st=$?; stty sane; wc -c <zm-h2g; md5sum <zm-h2g; rm -f zm-h2g; exit $st")
    d.take_buf()
    t = _zmodem_host(d.g, ["sz", "-q", "-b", src], tmp, 1800)
    out, st = d.end(tok, 120)
    m = re.search(rb"(\d+)\r*\n[^\n]*?([0-9a-f]{32})", out)
    got = int(m.group(1)) if m else 0
    return {"seconds": t, "bytes": len(data), "bytes_received": got,
            "bytes_lost": len(data) - got, "status": st,
            "md5_ok": bool(m) and m.group(2).decode() == hashlib.md5(data).hexdigest(),
            "kib_per_s": len(data) / 1024 / t}


def zmodem_g2h(d, n, tmp):
    """sz in the guest sends the first N bytes of G2H_FILE, rz on the host
    receives them."""
    dst = os.path.join(tmp, "g2h")
    os.makedirs(dst)
    tok = d.begin(f"cd /tmp && head -c {n} {G2H_FILE} >zm-g2h && printf '%s%s\\n' @@RD $T && "
                  "sz -q -b zm-g2h 2>/dev/null; st=$?; stty sane; md5sum <zm-g2h; "
                  "rm -f zm-g2h; exit $st")
    d.take_buf()
    t = _zmodem_host(d.g, ["rz", "-q", "-y", "-b"], dst, 1800)
    out, st = d.end(tok, 120)
    m = re.search(rb"([0-9a-f]{32})", out)
    try:
        with open(os.path.join(dst, "zm-g2h"), "rb") as f:
            got = f.read()
    except OSError:
        got = b""
    return {"seconds": t, "bytes": n, "bytes_received": len(got),
            "bytes_lost": n - len(got), "status": st,
            "md5_ok": bool(m) and m.group(1).decode() == hashlib.md5(got).hexdigest(),
            "kib_per_s": n / 1024 / t}


def added_run(flavour, prefix, run, boot_timeout=120):
    """Boot a guest of FLAVOUR with the directory that RUN(tmp) returns
    first laid over its root (Guest's add), TMP a scratch directory named
    after PREFIX; then the dict that RUN's second value, a function of a
    Driver, returns, with the flavour, serial log and kernel problems."""
    tmp = tempfile.mkdtemp(prefix=prefix)
    try:
        add, measure = run(tmp)
        g = Guest(flavour, boot_timeout=boot_timeout, add=[add])
        g.start()
        try:
            g.sync(30)
            res = dict(measure(Driver(g)), flavour=flavour, serial_log=g.serial_log)
        finally:
            g.stop()
        res["kernel_problems"] = g.log_problems()
        return res
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def zmodem_run(flavour, n, boot_timeout=120):
    """A guest of FLAVOUR with lrzsz: N bytes each way with ZMODEM."""
    def run(tmp):
        lrzsz = os.path.join(SANDBOX, "rootfs", flavour_arch(flavour) + "-lrzsz")
        if not os.path.isdir(lrzsz):
            raise GuestError(f"no {lrzsz} (lib/bench.sh makes it)")
        return lrzsz, lambda d: {"h2g": zmodem_h2g(d, h2g_data(n), tmp),
                                 "g2h": zmodem_g2h(d, n, tmp)}
    return added_run(flavour, "minitty-bench-zm-", run, boot_timeout)


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


# --- floor --------------------------------------------------------------
# What no TTY layer goes below: a guest of the full layer puts the port
# under N_NULL, which drops what it gets, and counts the bytes as the UART
# driver receives them (lib/bench/nullsink.c), for the raw host-to-guest
# transfer's bytes and for the canonical read's lines.


def guest_program(root, flavour, name, *cflags):
    """Compile lib/bench/NAME.c for FLAVOUR's guest as the guest programs
    are (lib/rootfs.sh guest_cc), as ROOT/bench/NAME."""
    os.makedirs(os.path.join(root, "bench"), exist_ok=True)
    subprocess.run([flavour_info(flavour)["cross"] + "gcc", "-static", "-O2", "-Wall",
                    *cflags, "-o", os.path.join(root, "bench", name),
                    os.path.join(HERE, name + ".c")], check=True)


def floor_root(tmp, flavour):
    """A directory to lay over FLAVOUR's guest root: lib/bench/nullsink.c
    as /bench/nullsink."""
    root = os.path.join(tmp, "root")
    guest_program(root, flavour, "nullsink")
    return root


def null_sink(d, data):
    """DATA to a guest running nullsink: dict(seconds from the first byte
    written to nullsink's count of the last, bytes_lost)."""
    n = len(data)
    tok = d.begin(f"printf '%s%s\\n' @@RD $T; /bench/nullsink {n}")
    # under N_NULL from here: its ready marker comes as a kernel message
    d.g.read_until(re.compile(rb"@@NS-READY"), 30)
    line, t = d.send_timed(data, re.compile(rb"@@NS-DONE (\d+)\r*\n"), 1800)
    _, st = d.end(tok, 60)
    got = int(re.search(rb"@@NS-DONE (\d+)", line).group(1))
    return {"seconds": t, "bytes": n, "bytes_received": got, "bytes_lost": n - got,
            "status": st}


def floor_run(flavour, data, lines, boot_timeout=120):
    """A guest of FLAVOUR (the full layer: N_NULL) with nullsink: the
    transfer of DATA and of LINES with nothing done with the bytes."""
    return added_run(flavour, "minitty-bench-floor-",
                     lambda tmp: (floor_root(tmp, flavour),
                                  lambda d: {"h2g": null_sink(d, data),
                                             "canon": null_sink(d, lines)}),
                     boot_timeout)


# --- memory -------------------------------------------------------------
def bench_root(tmp, flavour, cycles):
    """A directory to lay over FLAVOUR's guest root (Guest's add, as
    `minitty boot --add`): lib/bench/meminit.sh as /bench/meminit and
    lib/bench/memsnap.c, compiled here as the guest programs are
    (lib/rootfs.sh guest_cc), as /bench/memsnap. memsnap is compiled
    here rather than put in every guest's rootfs: only this boot runs it."""
    root = os.path.join(tmp, "root")
    os.makedirs(os.path.join(root, "bench"))
    with open(os.path.join(HERE, "meminit.sh")) as f:
        script = f.read().replace("@CYCLES@", str(cycles))
    sp = os.path.join(root, "bench", "meminit")
    with open(sp, "w") as f:
        f.write(script)
    os.chmod(sp, 0o755)
    guest_program(root, flavour, "memsnap",
                  f'-DTTY_PATH="/dev/{flavour_info(flavour)["console"]}"')
    return root


MEM_APPEND = "rdinit=/bench/meminit slab_debug=F slab_nomerge"
# The ports of the memory boots, by what their command line adds: the
# serial console (lib/qemu.sh's console=), and the same port when it is
# not the console. console=none names no console, so the UART driver's
# is never registered (a console= of the caller's replaces lib/qemu.sh's)
# and the port is an ordinary one; earlycon keeps the kernel's messages
# on the serial log, which is checked as every guest's.
MEM_PORTS = {"console": "", "other": "console=none earlycon"}


def parse_snap(line):
    """One snapshot line of memsnap (lib/bench/memsnap.c): meminfo
    {field: kB, and free_pages, pcp_pages, vmap_areas, vmalloc_pages...},
    slab {cache: (active objects, object size[, pages])} (the pages since
    memsnap; the shell's meminit gave only the first two), vmalloc
    {caller address: (pages, areas)}, and got (the line read back)."""
    parts = line.split()
    tag, cyc = parts[0], int(parts[1])
    mem, slab, vm, other = {}, {}, {}, {}
    for p in parts[2:]:
        k, _, v = p.partition("=")
        if k.startswith("slab:"):
            slab[k[5:]] = tuple(int(x) for x in v.split("*"))
        elif k.startswith("vm:"):
            pages, _, areas = v.partition("*")
            vm[k[3:]] = (int(pages), int(areas))
        elif k == "got":
            other["got"] = v
        elif v.isdigit():
            mem[k] = int(v)
    return {"tag": tag, "cycle": cyc, "meminfo": mem, "slab": slab, "vmalloc": vm, **other}


def vmalloc_callers(flavour, snaps):
    """{caller address: symbol+offset} for the vmalloc callers of SNAPS,
    from FLAVOUR's System.map (its kernel has no kallsyms: vmallocinfo
    names a caller by its address)."""
    addrs = {a for s in snaps for a in s.get("vmalloc", {}) if a.startswith("0x")}
    syms = []
    try:
        with open(os.path.join(SANDBOX, "build", flavour, "System.map")) as f:
            for ln in f:
                w = ln.split()
                # (this Thumb-2 vmlinux has nameless symbols: "00000004 t")
                if len(w) >= 3 and w[1] in "tTwW":
                    syms.append((int(w[0], 16), w[2]))
    except OSError:
        return {}
    syms.sort()
    keys = [a for a, _ in syms]
    out = {}
    for a in addrs:
        i = bisect.bisect_right(keys, int(a, 16)) - 1
        if i >= 0:
            out[a] = f"{syms[i][1]}+{int(a, 16) - syms[i][0]:#x}"
    return out


def memory_run(flavour, cycles, port="console", boot_timeout=120):
    append = " ".join(a for a in (MEM_APPEND, MEM_PORTS[port]) if a)
    tmp = tempfile.mkdtemp(prefix="minitty-bench-")
    try:
        g = Guest(flavour, extra_append=append, boot_timeout=boot_timeout,
                  add=[bench_root(tmp, flavour, cycles)])
        g.launch()
        try:
            timeout = boot_timeout + cycles * 30
            out = b""
            for i in range(cycles):
                # (memsnap prints @@BENCH-END at once when it fails)
                out = g.read_until(re.compile(rb"@@BENCH-RX %d\r*\n|@@BENCH-END" % i), timeout)
                if out.endswith(b"@@BENCH-END"):
                    break
                g.send(b"ping%d\r" % i)
            else:
                out = g.read_until(b"@@BENCH-END", timeout)
        finally:
            g.stop()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    text = out.decode("utf-8", "replace").replace("\r", "")
    if "@@BENCH-BEGIN\n" not in text:
        err = re.findall(r"memsnap: .*", text)
        raise GuestError(f"{flavour}: " + (err[-1] if err else "no @@BENCH-BEGIN"))
    body = text.split("@@BENCH-BEGIN\n", 1)[1].split("@@BENCH-END")[0]
    snaps = [parse_snap(line) for line in body.splitlines() if line.strip()]
    return {"flavour": flavour, "snapshots": snaps, "serial_log": g.serial_log,
            "kernel_problems": g.log_problems(), "append": append, "port": port,
            "vmalloc_callers": vmalloc_callers(flavour, snaps)}
