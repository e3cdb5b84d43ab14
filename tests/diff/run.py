#!/usr/bin/python3
"""Differential terminal tests: every scenario of tests/diff/scenarios/ runs
on the oracle (pristine: CONFIG_TTY=y built from the pristine tree, the
real n_tty with no patch applied), on the port (minitty: CONFIG_TTY=n) and
on the series' full layer (fulltty: CONFIG_TTY=y with the helpers patches
0001-0004 move), one boot each, and each is compared with the oracle:

  1. the bytes the host received from the line during the scenario (echo
     and output), from the end of the guest's first sync marker to the
     start of its report, in segments: s1 up to the next sync marker, sN
     after marker N;
  2. the guest's report: what every call of mtt (tests/guest/mtt.c)
     returned, one line per op (opN) and the end line's signal counts
     (sigs).

Checks printed (docs/layout.md's suite format):
  PASS/FAIL diff-oracle:NAME   the scenario ran on the oracle and gave a
                               well-formed report meeting its expectations
  PASS/FAIL diff:NAME          minitty equals the oracle but for the parts
                               its tests/deviations entry lists (each of
                               which must still differ), and meets the
                               scenario's expectations on the other parts
  PASS/FAIL diff-FLAVOUR:NAME  the same for another minitty flavour (its
                               entries: the all-flavour ones and those of
                               its [FLAVOUR] sections); fulltty must
                               equal the oracle exactly
  PASS/FAIL diff-log:FLAVOUR   no Oops/BUG/WARNING/Kernel panic on the line
  FAIL diff-deviation:NAME     an entry of tests/deviations that applies to
                               minitty names no scenario
                               (diff-deviation-FLAVOUR:NAME for another
                               minitty flavour)
When a flavour cannot be built, one line says its comparison was not run.
Results go to sandbox/logs/diff-FLAVOUR.json; one progress line per
scenario as it ends.

--compat runs the 32-bit build of the guest program (mtt32: the rootfs of
an arch with a compat arch, configs/arches) on 64-bit kernels, so that
every ioctl goes through the layer's compat_ioctl: each flavour F is then
named F+compat in the checks, in tests/deviations' sections (its entries:
the all-flavour ones, then [F+compat]'s) and in its results file.

usage: run.py [--flavours pristine,minitty,fulltty] [--only GLOB]
              [--compare-only] [--no-build] [--program NAME] [--compat]
              [--jobs N] [--verbose]
The flavours are built one after the other, then their guests run at
once (--jobs N: N at a time), each in a child run.py --run-only on its
own pty; the verdicts come once all have ended.
Before any scenario, each guest runs mtt once: when it does not answer,
one FAIL diff-boot:FLAVOUR says why and no scenario runs.
"""

import argparse
import fnmatch
import json
import os
import re
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import scenario as scn               # noqa: E402
from target import (Target, BootError, ROOT, SANDBOX, kernel_image,  # noqa: E402
                    initramfs)
from minitty.arch import arch_info, flavour_arch  # noqa: E402

LOGDIR = os.path.join(SANDBOX, "logs")
DEVIATIONS = os.path.join(ROOT, "tests", "deviations")
REPORT_RE = re.compile(rb"@@MTT-REPORT ([0-9a-f]*) @@END")
START_RE = re.compile(rb"@@MTT-SYNC1@@|@@MTT-REPORT ([0-9a-f]*) @@END")
PRINTK_TIME_RE = re.compile(rb"\[ *\d+\.\d+\] ")
MAX_CMD_HEX = 700        # the shell's line editor has a line length limit
# The guest program (tests/guest/mtt.c); --program names another, which
# the suite's own test uses to check the preflight on a missing one.
PROGRAM = b"mtt"
# --compat: the program's 32-bit build, and each flavour's name in the
# checks, sections and results gets this suffix.
COMPAT_SUFFIX = "+compat"
COMPAT = False

VERBOSE = False
RUN_ONLY = False        # a child of run_concurrently (progress as lines)


def label(flavour):
    """FLAVOUR as the checks, tests/deviations and the results file name
    it: F+compat when the 32-bit program runs (--compat)."""
    return flavour + COMPAT_SUFFIX if COMPAT else flavour


def note(msg):
    if VERBOSE:
        sys.stderr.write("diff: %s\n" % msg)
        sys.stderr.flush()


# ---- running one scenario on one guest ------------------------------------

INPUT_POINT_RE = re.compile(r" @in=(\d+|\?)")


def input_point(n, steps):
    """The input point of a call that completed when the line had received
    N bytes of the scenario's input (mtt's " @in=N"): "after=sendK", K the
    number of send steps whose bytes had begun to arrive (0: none), with
    "+X" when X more bytes than all the steps' had come. (Begun, not all
    arrived: mtt counts the bytes after the call returns, and the rest of
    the step that woke it may or may not be in by then. The next step is
    ~300 ms later, well after the count.)"""
    if n == "?":
        return "after=?"
    n = int(n)
    k, total = 0, 0
    for st in steps:
        if n <= total:
            break
        total += len(st.data)
        k += 1
    # (more than every step's bytes: none of the last step may be missing)
    extra = n - total if k == len(steps) and n > total else 0
    return "after=send%d%s" % (k, "+%d" % extra if extra else "")


def input_points(report, steps):
    """REPORT with each of mtt's input points " @in=N" made the send step
    after which the call completed (" after=sendK"): the order of the
    call's completion and the host's input, not a time."""
    return INPUT_POINT_RE.sub(lambda m: " " + input_point(m.group(1), steps),
                              report)

def send_program(t, sc):
    """Type the mtt command; long programs go through a shell variable."""
    hx = sc.program.encode("utf-8").hex()
    if len(hx) <= MAX_CMD_HEX:
        t.write_all(PROGRAM + b" x:" + hx.encode() + b"\r")
        return True
    parts = [hx[i:i + MAX_CMD_HEX] for i in range(0, len(hx), MAX_CMD_HEX)]
    for i, p in enumerate(parts):
        t.write_all(("P=%s%s; echo @@MTT-P''ART-%d@@\r"
                     % ("${P}" if i else "", p, i)).encode())
        if not t.wait_for(rb"@@MTT-PART-%d@@" % i, 10):
            return False
    t.write_all(PROGRAM + b" x:$P\r")
    return True


def run_scenario(t, sc):
    res = {"status": "ok", "stream": b"", "report": "", "notes": [],
           "input_len": len(sc.input_bytes()),
           "input_fnv": "%08x" % scn.fnv1a(sc.input_bytes())}
    if not t.resync(10):
        t.write_all(b"\x03\r")
        if not t.resync(40):
            res["status"] = "dead"
            res["notes"].append("no shell before the scenario")
            return res
    start = len(t.transcript)
    if not send_program(t, sc):
        res["status"] = "dead"
        res["notes"].append("the shell did not take the program")
        return res
    m = t.wait_for(START_RE, 15, start)
    if not m:
        res["status"] = "timeout"
        res["notes"].append("no sync marker and no report within 15 s")
        res["transcript"] = bytes(t.transcript[start:])
        return res

    sync_end = m.end()
    seen = {}               # sync number -> host time it was seen
    if m.group(0).startswith(b"@@MTT-SYNC1"):
        seen[1] = time.time()
    deadline = time.time() + sc.timeout
    steps = sc.steps
    idx = 0
    last_done = None
    queue = []              # [(not_before, bytes)] of the step being sent
    rep = REPORT_RE.search(t.transcript, start) if 1 not in seen else None
    while rep is None:
        now = time.time()
        if now > deadline or not t.alive():
            res["status"] = "timeout"
            res["notes"].append("no report within %gs of the first sync"
                                % sc.timeout)
            break
        # markers
        for k in {s.sync for s in steps[idx:]} - set(seen):
            if (scn.MARK_SYNC % k) in t.transcript[max(0, sync_end - 16):]:
                seen[k] = now
        # start the next step when due
        if not queue and idx < len(steps):
            st = steps[idx]
            if st.sync in seen:
                if idx == 0 or steps[idx - 1].sync != st.sync:
                    base = seen[st.sync]
                else:
                    base = last_done
                due = base + st.delay_ms / 1000.0
                if now >= due and st.brk:
                    t.send_break()
                    last_done = time.time()
                    idx += 1
                    continue
                if now >= due:
                    if st.chunk:      # chunk_ms is the gap between chunks
                        queue = [(due + j * st.chunk_ms / 1000.0,
                                  st.data[o:o + st.chunk])
                                 for j, o in enumerate(range(0, len(st.data),
                                                             st.chunk))]
                    else:
                        queue = [(due, st.data)]
        # send what is due
        wait = 0.05
        if queue:
            nb, data = queue[0]
            if now >= nb:
                n = t.write_some(data)
                data = data[n:]
                if data:
                    queue[0] = (nb, data)
                    wait = 0.005
                else:
                    queue.pop(0)
                    if not queue:
                        last_done = time.time()
                        idx += 1
                    wait = 0
            else:
                wait = min(wait, nb - now)
        elif idx < len(steps) and steps[idx].sync in seen:
            wait = 0.005
        t.pump(max(0.0, wait))
        rep = REPORT_RE.search(t.transcript, sync_end)
    if idx < len(steps) and res["status"] == "ok":
        res["notes"].append("%d input step(s) not sent before the report"
                            % (len(steps) - idx))
        res["unsent"] = len(steps) - idx
    if rep is not None:
        if 1 in seen:
            res["stream"] = bytes(t.transcript[sync_end:rep.start()])
        try:
            raw = bytes.fromhex(rep.group(1).decode()).decode("latin-1")
            res["report"] = input_points(raw, sc.steps)
        except ValueError:
            res["status"] = "malformed"
            res["notes"].append("report is not hex")
        end = rep.end()
    else:
        res["stream"] = bytes(t.transcript[sync_end:]) if 1 in seen else b""
        end = len(t.transcript)
    res["stream"] = PRINTK_TIME_RE.sub(b"[T] ", res["stream"])
    res["transcript"] = bytes(t.transcript[start:end])
    res["panic"] = [p.decode("latin-1") for p in t.panic_lines(start)]
    # the shell must come back (the watchdog ends mtt after 30 s at most)
    if res["status"] != "ok" or not t.resync(10):
        if not t.resync(40):
            t.write_all(b"\x03\r")
            if not t.resync(20):
                res["notes"].append("the shell did not come back")
                res["status"] = "dead" if res["status"] == "ok" else res["status"]
                t.dead = True
    return res


def ensure_built(flavour, build):
    """Returns None when the flavour's kernel and the rootfs are there,
    else why not."""
    cli = os.path.join(ROOT, "bin", "minitty")
    os.makedirs(LOGDIR, exist_ok=True)
    if build and os.access(cli, os.X_OK):
        # built when missing or stale: never a diff of an old kernel
        with open(os.path.join(LOGDIR, "diff-build-%s.log" % flavour), "wb") as lf:
            subprocess.call([cli, "build", "--if-stale", "--flavour", flavour], cwd=ROOT,
                            stdout=lf, stderr=subprocess.STDOUT,
                            stdin=subprocess.DEVNULL)
    if not os.path.exists(kernel_image(flavour)):
        return "no kernel image %s" % os.path.relpath(kernel_image(flavour), ROOT)
    # the rootfs must hold the current guest programs (bin/minitty rootfs
    # rebuilds only when an input changed)
    rfs = initramfs(flavour)
    if build and os.access(cli, os.X_OK):
        with open(os.path.join(LOGDIR, "diff-rootfs.log"), "wb") as lf:
            subprocess.call([cli, "rootfs", "--arch", flavour_arch(flavour)],
                            cwd=ROOT, stdout=lf,
                            stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    if not os.path.exists(rfs):
        return "no rootfs %s" % os.path.relpath(rfs, ROOT)
    return None


def progress(line):
    """One line per scenario as it ends: a counter on a terminal (when one
    flavour runs), a line otherwise (a log, tests/run, a child of
    run_concurrently)."""
    if sys.stdout.isatty() and not RUN_ONLY:
        sys.stdout.write("\r\x1b[Kdiff: " + line)
    else:
        sys.stdout.write("diff: " + line + "\n")
    sys.stdout.flush()


def preflight(t):
    """Run mtt once with a one-call program before any scenario: None when
    it answers with a report, else why not (so that no scenario waits out
    its timeout on a missing or broken guest program)."""
    probe = scn.Scenario("preflight", "run.py")
    probe.prog = ["get"]
    probe.timeout = 10
    r = run_scenario(t, probe)
    if r["status"] == "ok" and r["report"].startswith("mtt 1\n"):
        return None
    seen = r.get("transcript", b"")[-200:].decode("latin-1").replace("\r", "")
    return ("the guest program %s did not answer a one-call program "
            "(%s%s); the line showed: %r"
            % (PROGRAM.decode(), r["status"],
               "; " + "; ".join(r["notes"]) if r["notes"] else "", seen))


def run_flavour(flavour, scens):
    """Boot once, check that mtt answers, run every scenario; returns the
    results dict ("boot" starts with "failed" when no scenario ran)."""
    out = {"flavour": label(flavour), "boot": "ok", "scenarios": {}, "log": []}
    t_begin = time.time()
    t = None
    reboots = 0
    i = 0
    while i < len(scens):
        if t is None:
            t = Target(flavour, note)
            t.dead = False
            try:
                note("booting %s" % flavour)
                t.boot()
                why = None if i else preflight(t)
            except (BootError, OSError) as e:
                why = str(e)
            if why:
                out["boot"] = "failed: %s" % why
                out["log"] += t.serial_log_problems()
                t.close()
                t = None
                break
        sc = scens[i]
        note("%s: %s" % (flavour, sc.name))
        t0 = time.time()
        try:
            r = run_scenario(t, sc)
        except (OSError, BootError) as e:
            r = {"status": "dead", "stream": b"", "report": "",
                 "notes": ["host error: %s" % e]}
            t.dead = True
        r["seconds"] = round(time.time() - t0, 2)
        out["scenarios"][sc.name] = r
        i += 1
        progress("%s %d/%d %s: %s, %.1f s" % (flavour, i, len(scens), sc.name,
                                              r["status"], r["seconds"]))
        if t.dead or not t.alive():
            out["log"] += t.serial_log_problems()
            out["log"] += [p.decode("latin-1") for p in t.panic_lines()]
            t.close()
            t = None
            if reboots >= 1:
                break
            reboots += 1
            out["boot"] = "rebooted after %s" % sc.name
    if t is not None:
        out["log"] += t.serial_log_problems()
        out["log"] += [p.decode("latin-1") for p in t.panic_lines()]
        t.close()
    out["log"] = sorted(set(out["log"]))
    out["seconds"] = round(time.time() - t_begin, 1)
    return out


def run_concurrently(flavours, args, jobs):
    """Run the scenarios on FLAVOURS, JOBS guests at once: one child
    run.py --run-only per flavour (its own QEMU and pty; the verdicts do
    not depend on what runs beside it: each result is compared with the
    oracle's part by part, input points are counts of bytes, not times).
    Returns ({flavour: results}, {flavour: why not})."""
    cmd = [sys.executable, os.path.abspath(__file__), "--run-only",
           "--only", args.only, "--program", args.program]
    if COMPAT:
        cmd.append("--compat")
    if VERBOSE:
        cmd.append("-v")
    pending, running, results, why_not = list(flavours), {}, {}, {}
    try:
        while pending or running:
            while pending and len(running) < jobs:
                fl = pending.pop(0)
                path = os.path.join(LOGDIR, "diff-%s.json" % label(fl))
                if os.path.exists(path):
                    os.unlink(path)      # never the results of an earlier run
                running[subprocess.Popen(cmd + ["--flavours", fl],
                                         stdin=subprocess.DEVNULL)] = fl
            done = [p for p in running if p.poll() is not None]
            if not done:
                time.sleep(0.5)
                continue
            for p in done:
                fl = running.pop(p)
                try:
                    results[fl] = load(label(fl))
                except (OSError, ValueError) as e:
                    why_not[fl] = "its run ended with exit %d and no results (%s)" % (
                        p.returncode, e)
    finally:
        # interrupted: end the children (lib/qemu.sh's watcher then ends
        # their guests)
        for p in running:
            p.terminate()
        for p in running:
            p.wait()
    return results, why_not


# ---- JSON -----------------------------------------------------------------

def to_json(res):
    def enc(v):
        if isinstance(v, bytes):
            return {"latin1": v.decode("latin-1")}
        if isinstance(v, dict):
            return {k: enc(x) for k, x in v.items()}
        if isinstance(v, list):
            return [enc(x) for x in v]
        return v
    return enc(res)


def from_json(obj):
    if isinstance(obj, dict):
        if set(obj) == {"latin1"}:
            return obj["latin1"].encode("latin-1")
        return {k: from_json(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [from_json(x) for x in obj]
    return obj


def save(res):
    os.makedirs(LOGDIR, exist_ok=True)
    with open(os.path.join(LOGDIR, "diff-%s.json" % res["flavour"]), "w") as f:
        json.dump(to_json(res), f, indent=1)


def load(flavour):
    with open(os.path.join(LOGDIR, "diff-%s.json" % flavour)) as f:
        return from_json(json.load(f))


# ---- verdicts -------------------------------------------------------------

def esc(b):
    out = []
    for c in b:
        if c == 10:
            out.append("\\n")
        elif c == 13:
            out.append("\\r")
        elif c == 9:
            out.append("\\t")
        elif c == 92:
            out.append("\\\\")
        elif 32 <= c < 127:
            out.append(chr(c))
        else:
            out.append("\\x%02x" % c)
    return "".join(out)


NAMES = ["fulltty", "minitty"]     # the column titles (set by main)


def side_by_side(title, left, right, width=58):
    """Lines of two columns; left/right are lists of text lines."""
    lines = ["    %s" % title,
             "    %-*s | %s" % (width, NAMES[0], NAMES[1])]
    n = max(len(left), len(right))
    for i in range(n):
        a = left[i] if i < len(left) else ""
        b = right[i] if i < len(right) else ""
        mark = " " if a == b else "*"
        lines.append("  %s %-*s | %s" % (mark, width, a[:width], b[:width]))
        if len(a) > width or len(b) > width:
            a, b = a[width:], b[width:]
            while a or b:
                lines.append("    %-*s | %s" % (width, a[:width], b[:width]))
                a, b = a[width:], b[width:]
    return lines


def stream_lines(b, width=58):
    """An escaped stream cut after each \\n and at width."""
    out, cur = [], ""
    for c in b:
        e = esc(bytes([c]))
        if len(cur) + len(e) > width:
            out.append(cur)
            cur = ""
        cur += e
        if c == 10:
            out.append(cur)
            cur = ""
    if cur:
        out.append(cur)
    return out


def stream_window(a, b):
    """For long streams: the part around the first difference."""
    if len(a) <= 1500 and len(b) <= 1500:
        return a, b, ""
    i = 0
    while i < len(a) and i < len(b) and a[i] == b[i]:
        i += 1
    lo = max(0, i - 200)
    return (a[lo:i + 400], b[lo:i + 400],
            " (%d and %d bytes; first difference at byte %d, shown from %d)"
            % (len(a), len(b), i, lo))


def oracle_problems(sc, r):
    """Why the fulltty result of a scenario is not well-formed (or does not
    meet the scenario's expectations); [] when fine."""
    p = []
    if r is None:
        return ["not run"]
    if r["status"] != "ok":
        p.append("status %s" % r["status"])
    p += ["note: %s" % n for n in r.get("notes", [])]
    rep = r.get("report", "")
    if not rep.startswith("mtt 1\n"):
        p.append("no report (or not from mtt)")
    if "\nend sigs=" not in rep:
        p.append("report has no end line")
    if re.search(r"^\d+ .*: ERROR", rep, re.M) or "\nERROR" in rep:
        p.append("mtt rejected the program: %s" %
                 [l for l in rep.splitlines() if "ERROR" in l])
    if not sc.allow_watchdog and ("skipped (watchdog)" in rep or
                                  re.search(r"^end .*watchdog", rep, re.M)):
        p.append("the watchdog ended the program")
    if r.get("panic"):
        p.append("kernel problem: %s" % r["panic"])
    if p:
        return p
    return expect_problems(sc, r, False, False)


def known_flavours():
    """The flavour names of configs/flavours (what a section of
    tests/deviations may name), and F+compat for each flavour F whose arch
    runs 32-bit programs (configs/arches, column compat)."""
    names = set()
    with open(os.path.join(ROOT, "configs", "flavours"), encoding="utf-8") as f:
        for line in f:
            w = line.split()
            if w and not w[0].startswith("#"):
                names.add(w[0])
                if len(w) > 4 and arch_info(w[4])["compat"]:
                    names.add(w[0] + COMPAT_SUFFIX)
    return names


def deviation_for(name, devs):
    """The Deviation whose pattern matches scenario NAME, or None."""
    for d in devs:
        if fnmatch.fnmatchcase(name, d.pattern):
            return d
    return None


SYNC_SPLIT_RE = re.compile(rb"@@MTT-SYNC(\d+)@@")


def report_parts(rep):
    """A report as {part: text}: opN for each op's line, sigs for the end
    line, "report" for the rest (header, lines no op owns)."""
    parts = {}
    for line in rep.splitlines():
        m = re.match(r"(\d+) ", line)
        if m:
            k = "op" + m.group(1)
        elif line.startswith("end "):
            k = "sigs"
        else:
            k = "report"
        parts[k] = parts.get(k, "") + line + "\n"
    return parts


def stream_parts(stream):
    """A stream as {stream:sN: bytes}: s1 up to the next sync marker, then
    the segment after each marker sN."""
    parts = {}
    pieces = SYNC_SPLIT_RE.split(stream)
    parts["stream:s1"] = pieces[0]
    for i in range(1, len(pieces) - 1, 2):
        parts["stream:s" + pieces[i].decode()] = pieces[i + 1]
    return parts


def differing_parts(a, b):
    """The parts in which results A and B differ: opN, sigs, report (a
    report line of no op), stream:sN (and stream when any does)."""
    out = set()
    ra, rb = report_parts(a["report"]), report_parts(b["report"])
    out |= {k for k in set(ra) | set(rb) if ra.get(k) != rb.get(k)}
    sa, sb = stream_parts(a["stream"]), stream_parts(b["stream"])
    seg = {k for k in set(sa) | set(sb) if sa.get(k) != sb.get(k)}
    if seg:
        out |= seg | {"stream"}
    return out


def waived(diffs, parts):
    """The differences DIFFS that PARTS (of a deviation) cover."""
    if "stream" in parts:
        return {d for d in diffs if d in parts or d.startswith("stream")}
    out = {d for d in diffs if d in parts}
    if all(d in parts for d in diffs if d.startswith("stream:")):
        out |= {"stream"} & diffs
    return out


def stale_parts(diffs, parts):
    """The listed PARTS that do not differ (the entry should drop them)."""
    return {p for p in parts if p not in diffs}


def expect_problems(sc, r, skip_report, skip_stream):
    """The scenario's expect-* lines that result R does not meet, but for
    the report or stream ones when SKIP_REPORT / SKIP_STREAM."""
    p = []
    subst = {"input_fnv": r.get("input_fnv", ""), "input_len": str(r.get("input_len", 0))}
    rep, stream = r.get("report", ""), r.get("stream", b"")
    for kind, v in sc.expect:
        if kind.startswith("expect-report") and skip_report:
            continue
        if kind.startswith("expect-stream") and skip_stream:
            continue
        if kind == "expect-report-has" and v.format(**subst) not in rep:
            p.append("report lacks %r" % v.format(**subst))
        elif kind == "expect-report-re" and not re.search(v, rep, re.M):
            p.append("report does not match /%s/" % v)
        elif kind == "expect-stream" and stream != v:
            p.append("stream is not the expected %d bytes (got %d: %s...)"
                     % (len(v), len(stream), esc(stream[:80])))
        elif kind == "expect-stream-has" and v not in stream:
            p.append("stream lacks %s" % esc(v))
    return p


def compare(sc, a, b, dev, oracle, second):
    """The verdict on scenario SC: oracle result A, result B, deviation
    DEV (or None). Returns (ok, title suffix, detail lines)."""
    diffs = differing_parts(a, b)
    if a["status"] != b["status"]:
        diffs.add("status")
    parts = dev.parts if dev else set()
    unlisted = diffs - waived(diffs, parts)
    stale = stale_parts(diffs, parts)
    exp = expect_problems(sc, b, any(p.startswith("op") or p == "sigs" for p in parts),
                          any(p.startswith("stream") for p in parts))
    if not diffs and not exp and not dev:
        return True, "", []
    details = []
    if sc.desc:
        details.append(sc.desc)
    details.append("prog: %s" % sc.program)
    if "status" in diffs:
        details.append("status: %s %s, %s %s" % (oracle, a["status"],
                                                 second, b["status"]))
    for e in exp:
        details.append("%s: expectation not met: %s" % (second, e))
    if unlisted:
        details.append("differs in: %s%s" % (", ".join(sorted(unlisted)),
                       " (not in its deviation entry, %s)" % dev.where if dev else ""))
    if stale:
        details.append("%s lists %s, which no longer differ%s: remove %s from the entry"
                       % (dev.where, ", ".join(sorted(stale)),
                          "s" if len(stale) == 1 else "",
                          "it" if len(stale) == 1 else "them"))
    if a["report"] != b["report"]:
        details += side_by_side("report", a["report"].splitlines(),
                                b["report"].splitlines())
    if a["stream"] != b["stream"]:
        x, y, how = stream_window(a["stream"], b["stream"])
        details += side_by_side("stream" + how, stream_lines(x), stream_lines(y))
    if unlisted or stale or exp:
        return False, "", details
    return True, " (listed deviation in %s: %s)" % (",".join(sorted(parts)),
                                                   dev.reason), details


def compare_flavour(check, scens, devs, oracle, ref, second, other, why_not,
                    all_scenarios):
    """The diff checks of flavour SECOND (results OTHER) against the oracle
    (results REF): diff:NAME for minitty, diff-FLAVOUR:NAME for others."""
    NAMES[:] = [oracle, second]
    prefix = "diff" if second == "minitty" else "diff-%s" % second
    if other is None:
        print("diff: the %s comparison was not run: %s" % (second, why_not or
              "%s is not among the flavours tested" % second))
        return
    if not other["boot"].startswith(("ok", "rebooted")):
        check(False, "diff-boot:%s" % second, [other["boot"]])
    if ref is None or not ref["scenarios"] or not other["scenarios"]:
        return
    for sc in scens:
        a = ref["scenarios"].get(sc.name)
        b = other["scenarios"].get(sc.name)
        name = "%s:%s" % (prefix, sc.name)
        if a is None or b is None:
            check(False, name, ["not run on %s" % (oracle if a is None else second)])
            continue
        if b.get("panic"):
            check(False, name, ["%s kernel problem: %s" % (second, b["panic"])])
            continue
        if b["status"] in ("dead", "timeout") and a["status"] == "ok":
            extra = ["%s: %s (%s)" % (second, b["status"], "; ".join(b["notes"]))]
            extra += side_by_side("transcript", stream_lines(a.get("transcript", b"")[-1500:]),
                                  stream_lines(b.get("transcript", b"")[-1500:]))
            check(False, name, extra)
            continue
        dev = deviation_for(sc.name, devs)
        ok, title, details = compare(sc, a, b, dev, oracle, second)
        check(ok, name + title, details if (not ok or VERBOSE) else [])
    # entries (of this flavour) that name no scenario
    if all_scenarios:
        dprefix = "diff-deviation" if second == "minitty" else "diff-deviation-%s" % second
        for d in devs:
            if not any(fnmatch.fnmatchcase(sc.name, d.pattern) for sc in scens):
                check(False, "%s:%s" % (dprefix, d.pattern),
                      ["%s: names no scenario: remove this entry" % d.where])


def main():
    global VERBOSE, PROGRAM, RUN_ONLY, COMPAT
    ap = argparse.ArgumentParser()
    ap.add_argument("--flavours", default="pristine,minitty,fulltty",
                    help="the oracle first, then the flavours compared with it")
    ap.add_argument("--only", default="*", help="glob of scenario names")
    ap.add_argument("--compare-only", action="store_true",
                    help="compare the saved sandbox/logs/diff-*.json")
    ap.add_argument("--no-build", action="store_true",
                    help="never run bin/minitty build/rootfs")
    ap.add_argument("--save-as", metavar="LABEL",
                    help="save the results of the one flavour run as "
                    "sandbox/logs/diff-LABEL.json (e.g. to compare two runs "
                    "of fulltty: --compare-only --flavours fulltty,LABEL)")
    ap.add_argument("--program", default="mtt",
                    help="the guest program to run the scenarios with")
    ap.add_argument("--compat", action="store_true",
                    help="run PROGRAM32, the program's 32-bit build, on "
                    "flavours whose arch has a compat arch (arm64: arm's); "
                    "each flavour F is then F+compat")
    ap.add_argument("--jobs", type=int, default=0, metavar="N",
                    help="guests run at once, one per flavour (default: "
                    "every flavour at once; 1: one after the other)")
    ap.add_argument("--run-only", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--verbose", "-v", action="store_true")
    args = ap.parse_args()
    VERBOSE = args.verbose
    COMPAT = args.compat
    PROGRAM = (args.program + ("32" if COMPAT else "")).encode()
    RUN_ONLY = args.run_only

    passed = failed = 0

    def check(ok, name, details=()):
        nonlocal passed, failed
        if ok:
            passed += 1
            print("PASS %s" % name)
        else:
            failed += 1
            print("FAIL %s" % name)
        for d in details:
            print("    %s" % d if not d.startswith("  ") else d)
        sys.stdout.flush()

    try:
        scens = [s for s in scn.load_all(os.path.join(HERE, "scenarios"))
                 if fnmatch.fnmatchcase(s.name, args.only)]
        devs = scn.load_deviations(DEVIATIONS, known_flavours())
    except scn.ScenarioError as e:
        check(False, "diff:scenarios", [str(e)])
        print("%d passed, %d failed" % (passed, failed))
        return 1
    flavours = [f for f in args.flavours.split(",") if f]
    if args.run_only:
        # a child of run_concurrently: run, save, no verdicts
        for fl in flavours:
            res = run_flavour(fl, scens)
            save(res)
        return 0
    results = {}
    not_run = {}
    to_run = []
    for fl in flavours:
        if args.compare_only:
            try:
                results[fl] = load(label(fl))
            except (OSError, ValueError) as e:
                not_run[fl] = "no saved results (%s)" % e
            continue
        # built one after the other (one build at a time), run at once
        why = ensure_built(fl, not args.no_build)
        if why:
            not_run[fl] = why
        else:
            to_run.append(fl)
    jobs = args.jobs if args.jobs > 0 else len(to_run)
    t_run = time.time()
    if len(to_run) > 1 and jobs > 1 and not args.save_as:
        ran, failed_runs = run_concurrently(to_run, args, jobs)
        results.update(ran)
        not_run.update(failed_runs)
    else:
        for fl in to_run:
            results[fl] = run_flavour(fl, scens)
            if sys.stdout.isatty():
                sys.stdout.write("\n")
            if args.save_as:
                results[fl]["flavour"] = args.save_as
            save(results[fl])
            if results[fl]["boot"].startswith("failed"):
                # Every flavour boots the same initramfs: stop at the first
                # guest that cannot run the scenarios.
                for rest in to_run[to_run.index(fl) + 1:]:
                    not_run[rest] = "not run: the %s guest failed first" % fl
                break
    for fl in to_run:
        if fl in results:
            print("diff: %s: %d scenarios in %.0f s (%s)"
                  % (fl, len(results[fl]["scenarios"]), results[fl]["seconds"],
                     results[fl]["boot"]))
    if len(to_run) > 1:
        print("diff: %d flavours in %.0f s, %s" % (len(to_run), time.time() - t_run,
              "%d guests at once" % min(jobs, len(to_run)) if jobs > 1
              else "one after the other"))
    sys.stdout.flush()

    # the verdicts name each flavour as its checks do (F+compat: --compat)
    results = {label(f): r for f, r in results.items()}
    not_run = {label(f): w for f, w in not_run.items()}
    flavours = [label(f) for f in flavours]
    # the first flavour is the oracle, each other one is compared with it
    oracle = flavours[0] if flavours else "pristine"
    ref = results.get(oracle)
    NAMES[:] = [oracle, flavours[1] if len(flavours) > 1 else "minitty"]
    if ref is None:
        check(False, "diff-boot:%s" % oracle, [not_run.get(oracle, "not run")])
    elif not ref["boot"].startswith(("ok", "rebooted")):
        check(False, "diff-boot:%s" % oracle, [ref["boot"]])
    # oracle self-checks (none when its guest could not run them: the
    # diff-boot FAIL above says why)
    if ref is not None and ref["scenarios"]:
        for sc in scens:
            r = ref["scenarios"].get(sc.name)
            p = oracle_problems(sc, r)
            details = list(p)
            if p and r is not None:
                details += side_by_side("report (%s only)" % oracle,
                                        r.get("report", "").splitlines(), [])
                details += side_by_side("stream (%s only)" % oracle,
                                        stream_lines(r.get("stream", b"")[:600]), [])
            check(not p, "%s:%s" % ("diff-oracle" if oracle == "pristine"
                                     else "diff-oracle-" + oracle, sc.name), details)
    for fl, res in results.items():
        check(not res["log"], "diff-log:%s" % fl, res["log"][:20])

    # comparisons: tests/deviations applies to the minitty flavours only
    # (each its all-flavour entries and those of its sections); a flavour
    # with the full layer (the series' fulltty) must equal the oracle
    # exactly
    for second in flavours[1:]:
        compare_flavour(check, scens,
                        scn.deviations_for(second, devs)
                        if second.startswith("minitty") else [],
                        oracle, ref, second, results.get(second),
                        not_run.get(second), args.only == "*")

    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
