#!/usr/bin/python3
"""`bin/minitty stress`: the serial port under load, faults and floods, on
one flavour, one guest; a report of what was tried and what survived.

    stress.py --flavour F [--quick] [--seed N] [--against G] --out DIR

In one guest (the flavour's CPUs: 2 for the -smp flavours), in order:

  ioctl fuzz  tests/guest/ioctlfuzz.c: seeded ioctl() calls on ttyAMA0
              over the tty range with random and bad arguments, one
              result line each (first, on the port as booted, so that a
              second guest starts from the same state); with --against G
              a guest of flavour G runs the same seed afterwards and the
              lines are compared: a difference fails unless
              tests/stress/ioctl-deviations lists it;

  tty stress  tests/guest/stress.c: four processes open, close, read,
              write, poll and change the termios of ttyAMA0 at random for
              a set time, while the host floods the line with seeded
              random bytes (every byte value, control characters
              included); no call may fail otherwise than EAGAIN/EINTR;
  unbind      tests/guest/unbind.c: the PL011 unbound and bound again,
              cycle after cycle, with a reader, a writer, a poller and a
              TIOCMIWAIT blocked on the port each time; every blocked call
              must return and the open files answer as hung up (minitty
              only: with the TTY layer the built-in PL011 hides its
              unbind attribute, as upstream, and the phase is skipped);
  transfer    seeded random bytes host to guest in raw mode, counted and
              checksummed by the guest (head -c N | md5sum): bytes lost;
  rx fuzz     tests/guest/rxfuzz.c: the host sends seeded random bytes
              (all 256 values first) until the port has received N while
              the guest changes the termios at random and reads and
              drains; then the shell must answer (a sanity exchange).

Then the serial log is checked for the kernel's problem reports
(PROBLEM_RE of lib/py/minitty/guest.py). DIR/report.md and
DIR/results.json say: load held (host load averages, the guest's CPUs,
the time of each phase), faults injected and survived, inputs tried,
bytes lost, splats. Exit 0 when all passed, 1 when not.
"""

import argparse
import errno
import fnmatch
import hashlib
import json
import os
import random
import re
import select
import sys
import termios
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "py"))

from minitty.guest import PROMPT_RE, Guest, GuestError  # noqa: E402

# quick (make test) and full figures
PLAN = {
    True: {"seconds": 20, "cycles": 3, "transfer": 64 * 1024,
           "rxfuzz": 200 * 1000, "ioctls": 2000},
    False: {"seconds": 300, "cycles": 50, "transfer": 1024 * 1024,
            "rxfuzz": 1000 * 1000, "ioctls": 10000},
}
DEVIATIONS = os.path.join(HERE, "..", "..", "tests", "stress", "ioctl-deviations")
RXFUZZ_RE = re.compile(rb"rxfuzz: rx (\d+) termios (\d+) reads (\d+) in (\d+) flushes (\d+) "
                       rb"drains (\d+) signals (\d+) waits_cut (\d+) errors (\d+) end (\w+)([^\r\n]*)\r?\n")
IOCTL_RE = re.compile(r"ioctlfuzz: (\d+) (.*?)\s*$")
# names for the report (asm-generic/ioctls.h, ARM)
IOCTL_NAMES = {
    0x5401: "TCGETS", 0x5402: "TCSETS", 0x5403: "TCSETSW", 0x5404: "TCSETSF",
    0x5405: "TCGETA", 0x5406: "TCSETA", 0x5407: "TCSETAW", 0x5408: "TCSETAF",
    0x5409: "TCSBRK", 0x540A: "TCXONC", 0x540B: "TCFLSH", 0x540C: "TIOCEXCL",
    0x540D: "TIOCNXCL", 0x540E: "TIOCSCTTY", 0x540F: "TIOCGPGRP",
    0x5410: "TIOCSPGRP", 0x5411: "TIOCOUTQ", 0x5412: "TIOCSTI",
    0x5413: "TIOCGWINSZ", 0x5414: "TIOCSWINSZ", 0x5415: "TIOCMGET",
    0x5416: "TIOCMBIS", 0x5417: "TIOCMBIC", 0x5418: "TIOCMSET",
    0x5419: "TIOCGSOFTCAR", 0x541A: "TIOCSSOFTCAR", 0x541B: "FIONREAD",
    0x541C: "TIOCLINUX", 0x541D: "TIOCCONS", 0x541E: "TIOCGSERIAL",
    0x541F: "TIOCSSERIAL", 0x5420: "TIOCPKT", 0x5421: "FIONBIO",
    0x5422: "TIOCNOTTY", 0x5423: "TIOCSETD", 0x5424: "TIOCGETD",
    0x5425: "TCSBRKP", 0x5427: "TIOCSBRK", 0x5428: "TIOCCBRK",
    0x5429: "TIOCGSID", 0x802C542A: "TCGETS2", 0x402C542B: "TCSETS2",
    0x402C542C: "TCSETSW2", 0x402C542D: "TCSETSF2", 0x542E: "TIOCGRS485",
    0x542F: "TIOCSRS485", 0x80045430: "TIOCGPTN", 0x40045431: "TIOCSPTLCK",
    0x80045432: "TIOCGDEV", 0x5432: "TCGETX", 0x5433: "TCSETX",
    0x5434: "TCSETXF", 0x5435: "TCSETXW", 0x40045436: "TIOCSIG",
    0x5437: "TIOCVHANGUP", 0x80045438: "TIOCGPKT", 0x80045439: "TIOCGPTLCK",
    0x80045440: "TIOCGEXCL", 0x5441: "TIOCGPTPEER", 0x80285442: "TIOCGISO7816",
    0xC0285443: "TIOCSISO7816", 0x5450: "FIONCLEX", 0x5451: "FIOCLEX",
    0x5452: "FIOASYNC", 0x5453: "TIOCSERCONFIG", 0x5454: "TIOCSERGWILD",
    0x5455: "TIOCSERSWILD", 0x5456: "TIOCGLCKTRMIOS", 0x5457: "TIOCSLCKTRMIOS",
    0x5458: "TIOCSERGSTRUCT", 0x5459: "TIOCSERGETLSR", 0x545A: "TIOCSERGETMULTI",
    0x545B: "TIOCSERSETMULTI", 0x545C: "TIOCMIWAIT", 0x545D: "TIOCGICOUNT",
    0x5460: "FIOQSIZE",
}
STRESS_RE = re.compile(rb"stress: ops (\d+) opens (\d+) reads (\d+) in (\d+) "
                       rb"writes (\d+) polls (\d+) termios (\d+) errors (\d+)([^\r\n]*)\r?\n")


def flood(g, rng, until, timeout, chunk=b"", seen=None):
    """Send random bytes to the guest (CHUNK first), reading what it sends
    meanwhile, until UNTIL (a bytes regex) shows up in it. Returns the
    bytes sent; SEEN (a set), when given, gets the byte values sent."""
    sent = 0
    out = b""
    deadline = time.monotonic() + timeout
    while not until.search(out):
        if time.monotonic() > deadline:
            raise GuestError(f"no {until.pattern!r} within {timeout} s of flood")
        if not chunk:
            chunk = bytes(rng.getrandbits(8) for _ in range(256))
        r, w, _ = select.select([g.fd], [g.fd], [], 0.5)
        if r:
            try:
                out += os.read(g.fd, 65536)
            except BlockingIOError:
                pass
        if w:
            try:
                n = os.write(g.fd, chunk)
                sent += n
                if seen is not None and len(seen) < 256:
                    seen.update(chunk[:n])
                chunk = chunk[n:]
            except BlockingIOError:
                pass
        # keep the tail only: the marker is short
        out = out[-4096:]
    # what the pty still holds for QEMU is not sent: the guest drains the
    # line until it is quiet for a second, which a loaded host can exceed
    termios.tcflush(g.fd, termios.TCOFLUSH)
    m = until.search(out)
    g.put_back(out[m.start():])
    return sent


def phase_stress(g, res, plan, rng, seed):
    t0 = time.monotonic()
    g.send(f"stress {plan['seconds']} {seed}\n".encode())
    g.read_until(re.compile(rb"stress: running"), 120)
    sent = flood(g, rng, re.compile(rb"stress: stop"), plan["seconds"] + 600)
    out = g.read_until(STRESS_RE, 300)
    m = STRESS_RE.search(out)
    keys = ("ops", "opens", "reads", "in", "writes", "polls", "termios", "errors")
    figures = {k: int(v) for k, v in zip(keys, m.groups()[:8])}
    figures["flood_bytes"] = sent
    figures["first_error"] = m.group(9).decode("utf-8", "replace").strip()
    figures["seconds"] = round(time.monotonic() - t0, 1)
    res["stress"] = figures
    g.sync(120)
    return figures["errors"] == 0


UNBIND_ATTR = "/sys/bus/amba/drivers/uart-pl011/unbind"


def phase_unbind(g, res, plan):
    t0 = time.monotonic()
    # With the TTY layer the built-in PL011 hides its unbind attribute,
    # as upstream (removing it under an open tty frees the serial core's
    # state under it); minitty's must offer it.
    out, _ = g.sh(f"test -e {UNBIND_ATTR} && echo attr-yes || echo attr-no")
    if "attr-no" in out:
        if res["flavour"].startswith("minitty"):
            res["unbind"] = {"cycles": 0, "ok": False, "lines": [f"no {UNBIND_ATTR}"]}
            return False
        res["unbind"] = {"skipped": f"the full layer's built-in PL011 has no {UNBIND_ATTR} "
                                    "(suppress_bind_attrs, as upstream)"}
        return True
    g.send(f"unbind {plan['cycles']}\n".encode())
    out = g.read_until(re.compile(rb"unbind: result \w+ cycles \d+\r?\n"),
                       60 + 30 * plan["cycles"])
    text = out.decode("utf-8", "replace")
    ok = f"unbind: result ok cycles {plan['cycles']}" in text
    res["unbind"] = {"cycles": plan["cycles"], "ok": ok,
                     "blocked_calls": 4 * plan["cycles"],
                     "lines": [ln for ln in text.splitlines() if ln.startswith("unbind:")],
                     "seconds": round(time.monotonic() - t0, 1)}
    # The last removal hung the shell up: wait for init's new one to print
    # its prompt before sending anything. Bytes sent while the port is
    # closed fill the PL011 model's 16-byte FIFO, and QEMU 7.2 then
    # stopped reading the pty for good when the driver started the port
    # (seen with the kernel of the 43 patches and with later ones alike:
    # the port's interrupts on, rx 0 in its icount, the shell waiting).
    # (A prompt that came before the result line does not come again: the
    # wait then ends by its timeout, and sync checks the shell.)
    if ok:
        try:
            g.read_until(PROMPT_RE, 30)
        except GuestError:
            pass
    g.sync(120)
    return ok


def phase_transfer(g, res, plan, rng):
    t0 = time.monotonic()
    n = plan["transfer"]
    data = bytes(rng.getrandbits(8) for _ in range(n))
    # the data only once raw mode is on (the echo says RE''ADY, not READY)
    g.send(b"stty raw -echo; echo RE''ADY; head -c %d | md5sum; stty sane\n" % n)
    g.read_until(re.compile(rb"READY"), 60)
    g.send(data)
    want = hashlib.md5(data).hexdigest().encode()
    try:
        out = g.read_until(re.compile(rb"[0-9a-f]{32}"), 60 + n // 1000)
        got = re.search(rb"[0-9a-f]{32}", out).group(0)
        lost = None if got == want else "checksum differs"
    except GuestError:
        got, lost = b"", "the guest did not get them all"
    res["transfer"] = {"bytes": n, "md5_ok": got == want, "lost": lost,
                       "seconds": round(time.monotonic() - t0, 1)}
    g.sync(120)
    return got == want


def phase_rxfuzz(g, res, plan, rng, seed):
    t0 = time.monotonic()
    want = plan["rxfuzz"]
    every = bytes(rng.sample(range(256), 256))
    # a hang bound, not a speed test: 1 KB/s at the least; the guest
    # stops by itself a minute before ("end time": the phase fails)
    limit = 120 + want // 1000
    g.send(f"rxfuzz {want} {seed} {limit - 60}\n".encode())
    g.read_until(re.compile(rb"rxfuzz: running"), 120)
    seen = set()
    sent = flood(g, rng, re.compile(rb"rxfuzz: stop"), limit, chunk=every, seen=seen)
    out = g.read_until(RXFUZZ_RE, 300)
    m = RXFUZZ_RE.search(out)
    keys = ("rx", "termios", "reads", "in", "flushes", "drains", "signals", "waits_cut",
            "errors")
    figures = {k: int(v) for k, v in zip(keys, m.groups()[:9])}
    figures["end"] = m.group(10).decode()
    figures["first_error"] = m.group(11).decode("utf-8", "replace").strip()
    figures["sent"] = sent
    figures["byte_values"] = len(seen)
    # the guest must answer after it: a sanity exchange on the port
    g.sync(120)
    text, st = g.sh("echo sane-$((6 * 7))", 60)
    figures["sane"] = st == 0 and text.strip() == "sane-42"
    figures["seconds"] = round(time.monotonic() - t0, 1)
    res["rxfuzz"] = figures
    return (figures["errors"] == 0 and figures["end"] == "bytes" and
            figures["rx"] >= want and len(seen) == 256 and figures["sane"])


def run_ioctlfuzz(g, seed, n):
    """Run ioctlfuzz SEED N in guest G: {index: result} and the summary."""
    text, st = g.sh(f"ioctlfuzz {seed} {n}", 600 + n // 10)
    calls, done = {}, None
    for line in text.splitlines():
        m = IOCTL_RE.search(line)
        if m and m.group(2) != "restore":
            calls[int(m.group(1))] = m.group(2)
        elif "ioctlfuzz: done" in line:
            done = line[line.index("ioctlfuzz: done"):].strip()
    if st != 0 or done is None:
        raise GuestError(f"ioctlfuzz exited {st}: {text[-500:]!r}")
    return calls, done


def load_deviations(flavour, path=DEVIATIONS):
    """The entries of PATH that apply to FLAVOUR: (request, kinds glob,
    errno name or *, reason, line number)."""
    entries, section = [], None
    with open(path) as f:
        for no, line in enumerate(f, 1):
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            if line.startswith("["):
                section = line.strip("[]").split(",")
                continue
            if section is not None and flavour not in section:
                continue
            req, kinds, err, reason = line.split(None, 3)
            entries.append((int(req, 16), kinds, err, reason, no))
    return entries


def result_errno(result):
    """The errno name of a result ("REQ KIND RET ERRNO DIGEST"), or "0"."""
    ret, err = result.split()[2:4]
    return errno.errorcode.get(int(err), err) if int(ret) < 0 else "0"


def compare_ioctls(mine, theirs, entries):
    """Compare the results of two flavours call by call: (listed, unlisted,
    entries used), each difference as (index, mine, theirs, reason)."""
    listed, unlisted, used = [], [], set()
    for i in sorted(set(mine) | set(theirs)):
        a, b = mine.get(i), theirs.get(i)
        if a == b:
            continue
        reason = None
        if a and b:
            req, kind = int(a.split()[0], 16), a.split()[1]
            for e in entries:
                if e[0] == req and fnmatch.fnmatch(kind, e[1]) and \
                        e[2] in ("*", result_errno(a)):
                    reason = e[3]
                    used.add(e[4])
                    break
        (listed if reason else unlisted).append((i, a, b, reason))
    return listed, unlisted, used


def phase_ioctl(g, res, plan, seed):
    t0 = time.monotonic()
    calls, done = run_ioctlfuzz(g, seed, plan["ioctls"])
    res["ioctl"] = {"calls": len(calls), "summary": done, "requests": len({
        c.split()[0] for c in calls.values()}),
        "seconds": round(time.monotonic() - t0, 1)}
    res["_ioctl_calls"] = calls
    g.sync(120)
    return len(calls) == plan["ioctls"]


def phase_ioctl_against(res, plan, seed, against):
    """The same seed on flavour AGAINST, in a guest of its own; compare."""
    t0 = time.monotonic()
    r = res["ioctl"]
    r["against"] = against
    with Guest(against, boot_timeout=300) as g2:
        r["against_serial_log"] = g2.serial_log
        try:
            theirs, _ = run_ioctlfuzz(g2, seed, plan["ioctls"])
        finally:
            r["against_splats"] = g2.log_problems()
    entries = load_deviations(res["flavour"])
    listed, unlisted, used = compare_ioctls(res["_ioctl_calls"], theirs, entries)
    r["listed"] = len(listed)
    r["unlisted"] = len(unlisted)
    r["unlisted_first"] = [f"call {i} {name_of(a or b)}: {res['flavour']} {a} / {against} {b}"
                           for i, a, b, _ in unlisted[:30]]
    r["listed_by_reason"] = {}
    for _, _, _, reason in listed:
        r["listed_by_reason"][reason] = r["listed_by_reason"].get(reason, 0) + 1
    r["entries_unused"] = [e[4] for e in entries if e[4] not in used]
    r["against_seconds"] = round(time.monotonic() - t0, 1)
    return not unlisted and not r["against_splats"]


def name_of(result):
    """"0x5401 buf" -> "TCGETS(buf)"."""
    req, kind = result.split()[:2]
    return f"{IOCTL_NAMES.get(int(req, 16), req)}({kind})"


def write_report(out, res):
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "results.json"), "w") as f:
        json.dump({k: v for k, v in res.items() if not k.startswith("_")}, f, indent=1)
    s, u, t = res.get("stress", {}), res.get("unbind", {}), res.get("transfer", {})
    x, io = res.get("rxfuzz", {}), res.get("ioctl", {})
    if "against" not in io:
        diff = "not compared (no --against flavour)"
    elif "listed" not in io:
        diff = f"against {io['against']}: no comparison (the {io['against']} run failed)"
    else:
        diff = (f"against {io['against']} (same seed, {io.get('against_seconds', '-')} s): "
                f"{io['unlisted']} unlisted, {io['listed']} listed in "
                f"tests/stress/ioctl-deviations; {len(io.get('against_splats', []))} splats "
                f"in its serial log")
    lines = [
        f"# minitty stress: {res['flavour']}{' (quick)' if res['quick'] else ''}",
        "",
        f"Verdict: **{'PASS' if res['passed'] else 'FAIL'}** ({', '.join(res['failed']) or 'all phases passed'}).",
        "",
        "| | |",
        "| --- | --- |",
        f"| load held | host load average {res['load_start']} at the start, {res['load_end']} at the end; "
        f"guest CPUs: {res['cpus']}; {res['seconds']} s in all |",
        f"| tty stress | 4 processes for {s.get('seconds', '-')} s: {s.get('ops', '-')} calls "
        f"({s.get('opens', '-')} opens, {s.get('reads', '-')} reads, {s.get('writes', '-')} writes, "
        f"{s.get('polls', '-')} polls, {s.get('termios', '-')} termios changes), "
        f"{s.get('errors', '-')} failed {s.get('first_error', '')} |",
        (f"| faults injected | none: {u['skipped']} |" if "skipped" in u else
         f"| faults injected | {u.get('cycles', '-')} port removals (unbind, bind) under "
         f"{u.get('blocked_calls', '-')} blocked calls: {'all survived' if u.get('ok') else 'FAILED'} |"),
        f"| inputs tried: flood | {s.get('flood_bytes', '-')} random bytes flooded during the tty stress "
        f"(seed {res['seed']}), {s.get('in', '-')} read back by the processes |",
        f"| inputs tried: RX fuzz | {x.get('sent', '-')} random bytes sent ({x.get('byte_values', '-')} "
        f"of 256 byte values), {x.get('rx', '-')} received by the port, under "
        f"{x.get('termios', '-')} random termios changes, {x.get('flushes', '-')} flushes, "
        f"{x.get('drains', '-')} drains, {x.get('reads', '-')} reads ({x.get('in', '-')} bytes), "
        f"{x.get('signals', '-')} signals from ISIG, {x.get('waits_cut', '-')} drain waits cut "
        f"by an alarm (output stopped by a STOP no START could undo); {x.get('errors', '-')} calls failed "
        f"{x.get('first_error', '')}; {x.get('seconds', '-')} s; the shell answered after it: "
        f"{'yes' if x.get('sane') else 'NO'} |",
        f"| inputs tried: ioctl fuzz | {io.get('calls', '-')} ioctl calls (seed {res['seed']}, "
        f"{io.get('requests', '-')} distinct requests, {io.get('seconds', '-')} s) |",
        f"| ioctl differences | {diff} |",
        f"| bytes lost | {t.get('bytes', '-')} bytes raw host to guest: "
        f"{'0 lost' if t.get('md5_ok') else t.get('lost', '-')} |",
        f"| splats | {len(res['splats'])} in the serial log {res['serial_log']} |",
        "",
    ]
    lines += [f"    {x}" for x in res["splats"][:20]]
    if io.get("unlisted_first"):
        lines += ["Unlisted ioctl differences (first 30):", ""]
        lines += [f"    {d}" for d in io["unlisted_first"]]
        lines.append("")
    if io.get("listed_by_reason"):
        lines += ["Listed ioctl differences, by entry of tests/stress/ioctl-deviations:", ""]
        lines += [f"    {n:6d}  {r}" for r, n in sorted(io["listed_by_reason"].items())]
        lines.append("")
    if io.get("entries_unused"):
        lines += [f"Entries of tests/stress/ioctl-deviations without a difference in this run "
                  f"(lines {', '.join(map(str, io['entries_unused']))}): not drawn with this seed "
                  f"and count, or no longer different.", ""]
    for sp in io.get("against_splats", [])[:20]:
        lines.append(f"    {io['against']}: {sp}")
    with open(os.path.join(out, "report.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--flavour", required=True)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--seed", type=int, default=11)
    ap.add_argument("--against", default="",
                    help="flavour whose ioctl fuzz results are compared (none: not compared)")
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    plan = PLAN[args.quick]
    rng = random.Random(args.seed)
    res = {"flavour": args.flavour, "quick": args.quick, "seed": args.seed,
           "plan": plan, "load_start": "%.2f %.2f %.2f" % os.getloadavg(),
           "failed": []}
    t0 = time.monotonic()
    with Guest(args.flavour, boot_timeout=300) as g:
        res["serial_log"] = g.serial_log
        res["cpus"] = g.sh("nproc")[0].strip()
        for name, fn in (("ioctl-fuzz", lambda: phase_ioctl(g, res, plan, args.seed)),
                         ("tty-stress", lambda: phase_stress(g, res, plan, rng, args.seed)),
                         ("unbind", lambda: phase_unbind(g, res, plan)),
                         ("transfer", lambda: phase_transfer(g, res, plan, rng)),
                         ("rx-fuzz", lambda: phase_rxfuzz(g, res, plan, rng, args.seed))):
            try:
                ok = fn()
            except GuestError as e:
                ok = False
                res.setdefault("errors", []).append(f"{name}: {e}")
            if not ok:
                res["failed"].append(name)
                if not g.alive():
                    break
        res["splats"] = g.log_problems()
    if res["splats"]:
        res["failed"].append("splats")
    if args.against and "_ioctl_calls" in res:
        try:
            if not phase_ioctl_against(res, plan, args.seed, args.against):
                res["failed"].append("ioctl-diff")
        except GuestError as e:
            res["failed"].append("ioctl-diff")
            res.setdefault("errors", []).append(f"ioctl-diff: {e}")
    res.pop("_ioctl_calls", None)
    res["seconds"] = round(time.monotonic() - t0, 1)
    res["load_end"] = "%.2f %.2f %.2f" % os.getloadavg()
    res["passed"] = not res["failed"]
    print(write_report(args.out, res))
    for e in res.get("errors", []):
        print("error: " + e)
    return 0 if res["passed"] else 1


if __name__ == "__main__":
    sys.exit(main())
