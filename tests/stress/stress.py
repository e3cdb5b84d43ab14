#!/usr/bin/python3
"""`bin/minitty stress`: the serial port under load, faults and floods, on
one flavour, one guest; a report of what was tried and what survived.

    stress.py --flavour F [--quick] [--seed N] --out DIR

In one guest (the flavour's CPUs: 2 for the -smp flavours), in order:

  tty stress  tests/guest/stress.c: four processes open, close, read,
              write, poll and change the termios of ttyAMA0 at random for
              a set time, while the host floods the line with seeded
              random bytes (every byte value, control characters
              included); no call may fail otherwise than EAGAIN/EINTR;
  unbind      tests/guest/unbind.c: the PL011 unbound and bound again,
              cycle after cycle, with a reader, a writer, a poller and a
              TIOCMIWAIT blocked on the port each time; every blocked call
              must return and the open files answer as hung up;
  transfer    seeded random bytes host to guest in raw mode, counted and
              checksummed by the guest (head -c N | md5sum): bytes lost.

Then the serial log is checked for the kernel's problem reports
(PROBLEM_RE of lib/py/minitty/guest.py). DIR/report.md and
DIR/results.json say: load held (host load averages, the guest's CPUs,
the time of each phase), faults injected and survived, inputs tried,
bytes lost, splats. Exit 0 when all passed, 1 when not.
"""

import argparse
import hashlib
import json
import os
import random
import re
import select
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))

from guest import Guest, GuestError  # noqa: E402

# quick (make test) and full figures
PLAN = {
    True: {"seconds": 20, "cycles": 3, "transfer": 64 * 1024},
    False: {"seconds": 300, "cycles": 50, "transfer": 1024 * 1024},
}
STRESS_RE = re.compile(rb"stress: ops (\d+) opens (\d+) reads (\d+) in (\d+) "
                       rb"writes (\d+) polls (\d+) termios (\d+) errors (\d+)([^\r\n]*)")


def flood(g, rng, until, timeout):
    """Send random bytes to the guest, reading what it sends meanwhile,
    until UNTIL (a bytes regex) shows up in it. Returns the bytes sent."""
    sent = 0
    out = b""
    deadline = time.monotonic() + timeout
    chunk = b""
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
                chunk = chunk[n:]
            except BlockingIOError:
                pass
        # keep the tail only: the marker is short
        out = out[-4096:]
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


def phase_unbind(g, res, plan):
    t0 = time.monotonic()
    g.send(f"unbind {plan['cycles']}\n".encode())
    out = g.read_until(re.compile(rb"unbind: result \w+ cycles \d+\r?\n"),
                       60 + 30 * plan["cycles"])
    text = out.decode("utf-8", "replace")
    ok = f"unbind: result ok cycles {plan['cycles']}" in text
    res["unbind"] = {"cycles": plan["cycles"], "ok": ok,
                     "blocked_calls": 4 * plan["cycles"],
                     "lines": [ln for ln in text.splitlines() if ln.startswith("unbind:")],
                     "seconds": round(time.monotonic() - t0, 1)}
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


def write_report(out, res):
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "results.json"), "w") as f:
        json.dump(res, f, indent=1)
    s, u, t = res.get("stress", {}), res.get("unbind", {}), res.get("transfer", {})
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
        f"| inputs tried | {s.get('flood_bytes', '-')} random bytes flooded (seed {res['seed']}), "
        f"{s.get('in', '-')} read back by the processes |",
        f"| faults injected | {u.get('cycles', '-')} port removals (unbind, bind) under "
        f"{u.get('blocked_calls', '-')} blocked calls: {'all survived' if u.get('ok') else 'FAILED'} |",
        f"| bytes lost | {t.get('bytes', '-')} bytes raw host to guest: "
        f"{'0 lost' if t.get('md5_ok') else t.get('lost', '-')} |",
        f"| splats | {len(res['splats'])} in the serial log {res['serial_log']} |",
        "",
    ]
    lines += [f"    {x}" for x in res["splats"][:20]]
    with open(os.path.join(out, "report.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--flavour", required=True)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--seed", type=int, default=11)
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
        for name, fn in (("tty-stress", lambda: phase_stress(g, res, plan, rng, args.seed)),
                         ("unbind", lambda: phase_unbind(g, res, plan)),
                         ("transfer", lambda: phase_transfer(g, res, plan, rng))):
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
    res["seconds"] = round(time.monotonic() - t0, 1)
    res["load_end"] = "%.2f %.2f %.2f" % os.getloadavg()
    res["passed"] = not res["failed"]
    print(write_report(args.out, res))
    for e in res.get("errors", []):
        print("error: " + e)
    return 0 if res["passed"] else 1


if __name__ == "__main__":
    sys.exit(main())
