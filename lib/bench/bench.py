#!/usr/bin/python3
"""minitty bench: size, memory and speed of minitty against the full TTY
layer, in one run. Called by `bin/minitty bench` (lib/bench.sh), which
builds what is needed first; writes OUT/report.md, OUT/summary.md,
OUT/results.json, OUT/sizes.svg, OUT/memory.svg, OUT/speed.svg and
OUT/bloat-o-meter.txt.

    bench.py --out DIR [--runs N] [--quick] [--cmdline 'bin/minitty bench']

Exit 0 when every transfer arrived whole (0 bytes lost, checksums right)
and no guest's serial log has Oops, BUG, WARNING or Kernel panic; 1 else.
"""

import argparse
import collections
import json
import math
import os
import platform
import re
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import guestbench as gb  # noqa: E402
import svgchart  # noqa: E402
from guestbench import SANDBOX  # noqa: E402
from minitty.arch import qemu_program  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(HERE))
MINITTY = os.path.join(ROOT, "bin", "minitty")
CROSS = "arm-linux-gnueabihf-"
A, B = "fulltty", "minitty"          # the two flavours compared
NOTHING = "notty"                    # CONFIG_TTY=n, no serial at all
MEM = {A: "bench-" + A, B: "bench-" + B}
# The floor boots (guestbench.floor_run()): the full layer, whose N_NULL
# line discipline (drivers/tty/n_null.c, built in with CONFIG_TTY) drops
# what it gets.
FLOOR = A
# The figures that have a floor: FLOOR_OF[speed key] is floor_run()'s key
FLOOR_OF = {"h2g_s": "h2g", "canon_s": "canon"}
# The memory boots of MEM, one per port (guestbench.MEM_PORTS): the key
# of their figures in results.json (their snapshots: key + "_raw"), the
# port, and what the report calls it. The console comes first: a
# results.json from before the other port has only it.
MemRun = collections.namedtuple("MemRun", "key port what")
MEM_RUNS = (MemRun("memory", "console", "console port"),
            MemRun("memory_other", "other", "port that is not the console"))
PAGE_KB = 4


def log(msg):
    print(f"  {msg}", flush=True)


def sh(*cmd, cwd=None):
    return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True, cwd=cwd, check=True).stdout


def rel(p):
    return os.path.relpath(p, ROOT)


def build_dir(f):
    return os.path.join(SANDBOX, "build", f)


def ensure_built(f):
    """bin/minitty build F unless F's zImage and vmlinux are there (what
    lib/build.sh's ensure_built does)."""
    d = build_dir(f)
    if not (os.path.isfile(os.path.join(d, "arch/arm/boot/zImage"))
            and os.path.isfile(os.path.join(d, "vmlinux"))):
        log(f"building {f}")
        subprocess.run([MINITTY, "build", "--flavour", f], check=True,
                       stdout=sys.stdout, stderr=sys.stderr)


# --- sizes --------------------------------------------------------------
SIZE_RE = re.compile(r"^\s*(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+([0-9a-f]+)\s+(.+?)\s*$")


def parse_size(text):
    """`bin/minitty size` output: (objects [(name, t, d, b, dec)], totals,
    vmlinux) from its two size tables."""
    objs, totals, vml = [], None, None
    for line in text.splitlines():
        m = SIZE_RE.match(line)
        if not m:
            continue
        t, d, b, dec = (int(m.group(i)) for i in range(1, 5))
        name = m.group(6)
        row = {"object": name, "text": t, "data": d, "bss": b, "dec": dec}
        if name == "(TOTALS)":
            totals = row
        elif name == "vmlinux":
            vml = row
        else:
            objs.append(row)
    if totals is None:
        totals = {"object": "(TOTALS)", "text": 0, "data": 0, "bss": 0, "dec": 0}
    return objs, totals, vml


NM_WRAPPER = f"""#!/bin/sh
{CROSS}nm "$@" | awk 'NF == 3 || !/^[0-9a-f]+ [a-zA-Z] *$/'
"""


def sizes():
    res = {}
    for f in (A, B, NOTHING):
        text = sh(MINITTY, "size", "--flavour", f)
        objs, totals, vml = parse_size(text)
        zimage = os.path.getsize(os.path.join(build_dir(f), "arch/arm/boot/zImage"))
        res[f] = {"table": text, "objects": objs, "totals": totals,
                  "vmlinux": vml, "zimage_bytes": zimage}
    # bloat-o-meter runs "PREFIXnm --size-sort" and dies on the nameless
    # symbols of this Thumb-2 vmlinux ("00000004 t "): give it an nm that
    # drops the lines without a name.
    with tempfile.TemporaryDirectory(prefix="minitty-bench-nm-") as tmp:
        wrapper = os.path.join(tmp, CROSS + "nm")
        with open(wrapper, "w") as f:
            f.write(NM_WRAPPER)
        os.chmod(wrapper, 0o755)
        bloat = sh(os.path.join(SANDBOX, "linux", "scripts", "bloat-o-meter"),
                   "-p", os.path.join(tmp, CROSS), os.path.join(build_dir(A), "vmlinux"),
                   os.path.join(build_dir(B), "vmlinux"))
    m = re.search(r"add/remove: (\d+)/(\d+) grow/shrink: (\d+)/(\d+) up/down: (-?\d+)/(-?\d+) \(([-+]?\d+)\)", bloat)
    res["bloat_o_meter"] = {"output": bloat,
                            "summary": m.group(0) if m else bloat.splitlines()[0],
                            "total": int(m.group(7)) if m else None}
    return res


# --- memory -------------------------------------------------------------
def snap_sum(s):
    """Bytes of the active slab objects of snapshot S."""
    return sum(t[0] * t[1] for t in s["slab"].values())


def snap_pages(s):
    """Snapshot S's page counts, in 4 KiB pages: free (the zones' free
    pages plus their per-CPU free lists, /proc/zoneinfo), slab (the pages
    of the slab caches, /proc/slabinfo), Slab (meminfo's: also the
    kmalloc()s too large for a cache), vmalloc (VmallocUsed) and user
    (AnonPages + Cached + PageTables: memsnap's own memory and the page
    cache, which do not move). exact: memsnap's snapshots of a
    uniprocessor kernel (an SMP kernel's counters lag by their per-CPU
    differentials); those of the shell meminit before memsnap had MemFree
    and meminfo's Slab only (and a shell that grew with each)."""
    m = s["meminfo"]
    memsnap = "free_pages" in m and all(len(t) > 2 for t in s["slab"].values())

    def kb(k):
        return m.get(k, 0) // PAGE_KB
    return {"free": (m["free_pages"] if memsnap else kb("MemFree")) + m.get("pcp_pages", 0),
            "slab": sum(t[2] for t in s["slab"].values()) if memsnap else kb("Slab"),
            "Slab": kb("Slab"), "vmalloc": kb("VmallocUsed"),
            "user": kb("AnonPages") + kb("Cached") + kb("PageTables"),
            "memsnap": memsnap, "exact": memsnap and m.get("percpu_vmstat", 0) == 0}


# mem_analysis()'s figures of one snapshot against another (the medians)
MEM_FIGURES = ("slab_object_bytes", "vmalloc_kb", "vmap_areas", "pages", "other_pages_kb",
               "kernel_bytes", "kernel_kb", "taken_pages", "memfree_kb", "slab_pages",
               "slab_pages_kb", "large_kmalloc_pages", "user_kb")


def snap_delta(s, c0, callers):
    """What snapshot S holds more than snapshot C0, exactly: slab objects
    (bytes, and per cache), vmalloc (kB, and per caller: CALLERS maps
    vmallocinfo's caller addresses to symbols), taken (the drop of the
    free pages), and pages: taken - the slab caches' pages - vmalloc's -
    user's, i.e. the whole pages that the kernel took outside slab caches
    and vmalloc (a transmit or receive buffer, a kmalloc() too large for
    a cache: large_kmalloc_pages of them). kernel: slab objects + vmalloc
    + pages (the slab objects rather than the slab pages they moved: a
    cache only sometimes needs a new page for one more object)."""
    p, q = snap_pages(s), snap_pages(c0)
    m, m0 = s["meminfo"], c0["meminfo"]
    caches = {}
    for name, t in s["slab"].items():
        dd = (t[0] - c0["slab"].get(name, (0,))[0]) * t[1]
        if dd:
            caches[name] = dd
    vm = {}
    v, v0 = s.get("vmalloc", {}), c0.get("vmalloc", {})
    for a in set(v) | set(v0):
        dp = v.get(a, (0, 0))[0] - v0.get(a, (0, 0))[0]
        if dp:
            sym = callers.get(a, a).split("+")[0]
            vm[sym] = vm.get(sym, 0) + PAGE_KB * dp
    taken = q["free"] - p["free"]
    slab_pages = p["slab"] - q["slab"]
    vm_pages = p["vmalloc"] - q["vmalloc"]
    user = p["user"] - q["user"]
    pages = taken - slab_pages - vm_pages - user
    slab_b = snap_sum(s) - snap_sum(c0)
    return {"slab_object_bytes": slab_b, "caches": caches,
            "vmalloc_kb": PAGE_KB * vm_pages, "vmalloc_callers": vm,
            "vmap_areas": m.get("vmap_areas", 0) - m0.get("vmap_areas", 0),
            "taken_pages": taken, "memfree_kb": -PAGE_KB * taken,
            "slab_pages": slab_pages, "slab_pages_kb": PAGE_KB * slab_pages,
            "large_kmalloc_pages": p["Slab"] - q["Slab"] - slab_pages if p["memsnap"] else 0,
            "user_kb": PAGE_KB * user, "pages": pages, "other_pages_kb": PAGE_KB * pages,
            "kernel_bytes": slab_b + 1024 * PAGE_KB * (vm_pages + pages),
            "kernel_kb": slab_b / 1024 + PAGE_KB * (vm_pages + pages),
            "uart_irq": m.get("uart_irq"), "got": s.get("got")}


def mem_analysis(run):
    """What an open port holds: each open and traffic snapshot against
    the closed one just before it (snap_delta()), the median over the
    cycles after the first (the first open also allocates what the port
    then keeps, closed or open: what the first cycle left; a run of one
    cycle has only the first). cycles: each cycle's figures;
    same_after_first: whether every cycle after the first gave the same;
    left_per_cycle: what each cycle left once the port was closed again
    (closed i+1 against closed i); closed: the first closed snapshot;
    exact: memsnap's snapshots of a uniprocessor kernel."""
    snaps = run["snapshots"]
    callers = run.get("vmalloc_callers", {})
    closed = {s["cycle"]: s for s in snaps if s["tag"] == "closed"}
    out = {"exact": all(snap_pages(s)["exact"] for s in snaps)}
    for tag in ("open", "traffic"):
        per = [snap_delta(s, closed[s["cycle"]], callers) for s in snaps if s["tag"] == tag]
        if not per:
            continue
        use = per[1:] or per
        med = {k: statistics.median(p[k] for p in use) for k in MEM_FIGURES}
        for key in ("caches", "vmalloc_callers"):
            names = sorted({n for p in use for n in p[key]})
            med[key] = {n: statistics.median(p[key].get(n, 0) for p in use) for n in names}
            med[key] = {n: x for n, x in med[key].items() if x}
        med["same_after_first"] = all(
            all(p[k] == per[-1][k] for k in MEM_FIGURES + ("caches", "vmalloc_callers"))
            for p in per[1:])
        med["uart_irq"] = per[-1]["uart_irq"]
        med["median_of"] = len(use)
        med["cycles"] = per
        out[tag] = med
    cl = [closed[k] for k in sorted(closed)]
    out["left_per_cycle"] = [snap_delta(b, a, callers) for a, b in zip(cl, cl[1:])]
    d = snap_delta(cl[-1], cl[0], callers)
    out["closed_drift"] = {k: d[k] for k in ("memfree_kb", "slab_object_bytes", "caches",
                                             "vmalloc_kb", "pages", "kernel_bytes")}
    p0, m0 = snap_pages(cl[0]), cl[0]["meminfo"]
    out["closed"] = {"MemFree_kb": PAGE_KB * p0["free"], "Slab_kb": m0.get("Slab"),
                     "VmallocUsed_kb": m0.get("VmallocUsed"), "slab_object_bytes": snap_sum(cl[0]),
                     "uart_irq": m0.get("uart_irq"),
                     "vmap_unpurged": [c["meminfo"].get("vmap_unpurged") for c in cl]}
    answered = all(p["got"] == "ping%d" % i for i, p in enumerate(out.get("traffic", {}).get("cycles", [])))
    out["line_in_ok"] = answered
    return out


# --- speed --------------------------------------------------------------
# The speed figures, one entry each (one more figure: one more entry):
# key, the figure's name in each flavour's speed summary (its median over
# the runs; key + "_all": its value in every run); what it is, for the
# summary, where {n} stands for the byte count in results.json's
# n_key; short, its name in the report's tables and the charts; its unit
# and format; get, its value in one run (one of speed_runs). Every figure
# is a time: lower is faster. A figure that a run lacks (a results.json
# from before the figure existed) is left out of the summary.
Speed = collections.namedtuple("Speed", "key what n_key short unit prec get")
SPEED = (
    Speed("boot_s", "boot to the first shell prompt", None, "boot", "s", ".3f",
          lambda r: r["boot_s"]),
    Speed("h2g_s", "{n} host to guest, raw", "transfer_bytes", "host to guest", "s", ".3f",
          lambda r: r["h2g"]["seconds"]),
    Speed("g2h_s", "{n} guest to host, raw", "transfer_bytes", "guest to host", "s", ".3f",
          lambda r: r["g2h"]["seconds"]),
    Speed("echo_rtt_ms", "echo round trip of one keystroke, canonical", None, "echo round trip",
          "ms", ".2f", lambda r: 1000 * statistics.median(r["echo_rtt_s"])),
    Speed("canon_s", "200-line canonical read", None, "200-line canonical read", "s", ".3f",
          lambda r: r["canon"]["seconds"]),
    Speed("zm_h2g_s", "{n} host to guest, ZMODEM (sz, rz)", "zmodem_bytes",
          "ZMODEM host to guest", "s", ".3f", lambda r: r["zm_h2g"]["seconds"]),
    Speed("zm_g2h_s", "{n} guest to host, ZMODEM (sz, rz)", "zmodem_bytes",
          "ZMODEM guest to host", "s", ".3f", lambda r: r["zm_g2h"]["seconds"]),
)
# The transfers whose bytes are counted and checksummed (a run from
# before the ZMODEM ones lacks them).
TRANSFERS = ("h2g", "g2h", "zm_h2g", "zm_g2h")
# The ranking rule: the flavours are ranked on a figure only when a
# two-sided sign test over the alternating pairs says the split is
# unlikely by chance: p below RANK_P. Five pairs rank only when all five
# agree (p = 2/32); four of five happen by chance 37.5% of the time.
RANK_P = 0.1


def sign_test(k, n):
    """Two-sided sign test: the chance that N fair coin tosses split at
    least as unevenly as K of N."""
    k = max(k, n - k)
    tail = sum(math.comb(n, i) for i in range(k, n + 1)) / 2 ** n
    return min(1.0, 2 * tail)


def speed_values(fig, rs):
    """FIG's value in each of the runs RS; None when one of them lacks it."""
    try:
        return [fig.get(r) for r in rs]
    except (KeyError, TypeError):
        return None


def speed_what(fig, res):
    """FIG's description for the summary, with its byte count."""
    if not fig.n_key:
        return fig.what
    n = res.get(fig.n_key, 0)
    size = f"{n // gb.MIB} MiB" if n and n % gb.MIB == 0 else \
        (f"{n // 1024} KiB" if n % 1024 == 0 else f"{n} bytes")
    return fig.what.format(n=size)


def spread(ratios):
    """The spread of one figure's pair ratios (B / A of each alternating
    pair) and the ranking rule's outcome: a pair has B faster when its
    ratio is below 1, A faster above 1, neither at exactly 1."""
    n = len(ratios)
    faster_in = {A: sum(x > 1 for x in ratios), B: sum(x < 1 for x in ratios)}
    lead = B if faster_in[B] >= faster_in[A] else A
    agree = faster_in[lead]
    # (a pair at exactly 1 counts against both)
    p = sign_test(agree, n)
    ranked = n >= 2 and p < RANK_P
    rng = f"{min(ratios):.3f}-{max(ratios):.3f}"
    if n < 2:
        verdict = f"one pair of runs (pair ratio {ratios[0]:.3f}): too few to rank"
    elif ranked:
        verdict = f"{lead} faster in {agree} of {n} pairs (sign test p {p:.3f}; pair ratios {rng})"
    else:
        verdict = (f"spread too wide to rank: {agree} of {n} pairs have {lead} faster "
                   f"(sign test p {p:.3f}; pair ratios {rng})")
    return {"pair_ratios": ratios, "pairs": n, "min": min(ratios), "max": max(ratios),
            "median": statistics.median(ratios), "faster_in": faster_in, "agree": agree,
            "sign_test_p": p,
            "ranked": ranked, "faster": lead if ranked else None, "verdict": verdict}


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))]


def speed_summary(runs):
    s = {}
    for f in (A, B):
        rs = [r for r in runs if r["flavour"] == f]
        allrtt = [x for r in rs for x in r["echo_rtt_s"]]
        s[f] = {
            "runs": len(rs),
            "echo_rtt_p10_ms": 1000 * pct(allrtt, 10),
            "echo_rtt_p90_ms": 1000 * pct(allrtt, 90),
            # bytes lost per transfer, over the runs that made it
            "lost": {k: sum(r[k]["bytes_lost"] for r in rs if k in r)
                     for k in TRANSFERS if any(k in r for r in rs)},
            "md5_ok": all(r[k]["md5_ok"] for r in rs for k in TRANSFERS + ("canon",) if k in r),
            "memfree_kb": statistics.median(r["meminfo_after_boot"]["MemFree"] for r in rs),
            "memtotal_kb": statistics.median(r["meminfo_after_boot"]["MemTotal"] for r in rs),
            "free_pcp_kb": statistics.median(r["meminfo_after_boot"]["MemFree"] + PAGE_KB *
                                             r["meminfo_after_boot"].get("pcp_pages", 0) for r in rs),
            "slab_kb": statistics.median(r["meminfo_after_boot"].get("Slab", 0) for r in rs),
            "vmalloc_kb": statistics.median(r["meminfo_after_boot"].get("VmallocUsed", 0) for r in rs),
        }
        for fig in SPEED:
            vals = speed_values(fig, rs)
            if vals:
                s[f][fig.key] = statistics.median(vals)
                s[f][fig.key + "_all"] = vals
    # Alternating runs: run i of B against run i of A, the pair closest in
    # time (and in machine load); per figure the ratio of each pair, their
    # spread and the ranking rule's outcome; pair_ratio: their medians.
    # A pair is a run of A followed at once by a run of B in speed_runs
    # (main() runs A then B each time): a run whose guest failed leaves its
    # partner unpaired rather than shifting every later pair.
    pairs = [(a, b) for a, b in zip(runs, runs[1:]) if a["flavour"] == A and b["flavour"] == B]
    ra, rb = [a for a, _ in pairs], [b for _, b in pairs]
    s["spread"] = {}
    for fig in SPEED:
        va, vb = speed_values(fig, ra), speed_values(fig, rb)
        ratios = [b / a for a, b in zip(va or [], vb or []) if a]
        if ratios:
            s["spread"][fig.key] = spread(ratios)
    s["pair_ratio"] = {k: v["median"] for k, v in s["spread"].items()}
    s["rank_rule"] = (f"ranked on a figure only when a two-sided sign test over the "
                      f"alternating pairs gives p below {RANK_P} (five pairs: all five agree)")
    return s


def floor_summary(floors, runs):
    """The floor of each figure of FLOOR_OF: its median over the floor
    boots FLOORS, and its ratio to A's figure, median of A's runs and of
    each round (run i of A with floor boot i: the same machine state);
    None without floor boots."""
    out = {}
    for k, fk in FLOOR_OF.items():
        vals = [f[fk]["seconds"] for f in floors]
        if not vals:
            return None
        by_round = {r["round"]: r for r in runs if r["flavour"] == A and "round" in r}
        ratios = [f[fk]["seconds"] / fig_get(k, by_round[f["round"]])
                  for f in floors if f["round"] in by_round]
        ra = [r for r in runs if r["flavour"] == A]
        out[k] = {"median": statistics.median(vals), "all": vals,
                  "ratio": (statistics.median(vals) / statistics.median(fig_get(k, r) for r in ra)
                            if ra else None),
                  "round_ratios": ratios}
    return out


def fig_get(key, run):
    return next(f for f in SPEED if f.key == key).get(run)


# --- machine ------------------------------------------------------------
def loadavg():
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def machine():
    cpu = ""
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.lower().startswith(("model name", "hardware")):
                cpu = line.split(":", 1)[1].strip()
                break
    with open("/proc/meminfo") as f:
        memtotal = f.readline().split()[1]

    def first(*cmd):
        try:
            return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                  text=True).stdout.splitlines()[0]
        except (OSError, IndexError):
            return "?"
    tree = os.path.join(SANDBOX, "linux")
    rels = {}
    for f in (A, B, NOTHING, MEM[A], MEM[B]):
        try:
            with open(os.path.join(build_dir(f), "include/config/kernel.release")) as fh:
                rels[f] = fh.read().strip()
        except OSError:
            rels[f] = "?"
    return {
        "host": platform.node(), "uname": " ".join(platform.uname()[i] for i in (0, 2, 4)),
        "cpu": cpu, "cpus": os.cpu_count(), "mem_kb": int(memtotal),
        "qemu": first(qemu_program("arm", SANDBOX), "--version"),
        "gcc": first(CROSS + "gcc", "--version"),
        "python": platform.python_version(),
        "kernel_release": rels,
        "tree_head": first("git", "-C", tree, "log", "-1", "--format=%h %s"),
        "tree_series": first("git", "-C", tree, "rev-list", "--count", "pristine..HEAD"),
        "tree_dirty_files": len(subprocess.run(["git", "-C", tree, "status", "--porcelain",
                                                "--untracked-files=no"],
                                               stdout=subprocess.PIPE, text=True).stdout.splitlines()),
        "repo_head": first("git", "-C", ROOT, "log", "-1", "--format=%h %s"),
    }


# --- report -------------------------------------------------------------
def ratio(b, a):
    return b / a if a else float("nan")


def rstr(b, a):
    """B / A to 3 decimals, '-' when A is 0."""
    return f"{b / a:.3f}" if a else "-"


def fmt(n):
    return f"{n:,.0f}" if isinstance(n, (int, float)) else str(n)


def summary_rows(res):
    sz, sp = res["sizes"], res["speed"]
    rows = []
    ta, tb = sz[A]["totals"]["dec"], sz[B]["totals"]["dec"]
    rows.append(("TTY/serial layer, dec bytes (`bin/minitty size`)", fmt(ta), fmt(tb), rstr(tb, ta)))
    va, vb = sz[A]["vmlinux"]["dec"], sz[B]["vmlinux"]["dec"]
    rows.append(("vmlinux text+data+bss, bytes", fmt(va), fmt(vb), rstr(vb, va)))
    vn = sz[NOTHING]["vmlinux"]["dec"]
    rows.append((f"serial console cost over `{NOTHING}`, vmlinux bytes", fmt(va - vn), fmt(vb - vn),
                 rstr(vb - vn, va - vn)))
    za, zb = sz[A]["zimage_bytes"], sz[B]["zimage_bytes"]
    rows.append(("zImage, bytes", fmt(za), fmt(zb), rstr(zb, za)))
    zn = sz[NOTHING]["zimage_bytes"]
    rows.append((f"serial console cost over `{NOTHING}`, zImage bytes", fmt(za - zn), fmt(zb - zn),
                 rstr(zb - zn, za - zn)))
    for mk in MEM_RUNS:
        mem = res.get(mk.key)
        if not (mem and all("traffic" in mem.get(f, {}) for f in (A, B))):
            continue
        ma, mb = mem[A]["traffic"], mem[B]["traffic"]
        what = f"open {mk.what} (after a line in and out)"
        rows.append((f"{what}: slab objects, bytes", fmt(ma["slab_object_bytes"]),
                     fmt(mb["slab_object_bytes"]),
                     rstr(mb['slab_object_bytes'], ma['slab_object_bytes'])))
        rows.append((f"{what}: vmalloc (VmallocUsed), kB", fmt(ma["vmalloc_kb"]),
                     fmt(mb["vmalloc_kb"]), rstr(mb['vmalloc_kb'], ma['vmalloc_kb'])))
        if "kernel_bytes" in ma and "kernel_bytes" in mb:
            rows.append((f"{what}: kernel memory (slab objects + vmalloc + pages), bytes",
                         fmt(ma["kernel_bytes"]), fmt(mb["kernel_bytes"]),
                         rstr(mb['kernel_bytes'], ma['kernel_bytes'])))
        else:  # a results.json from before memsnap
            rows.append((f"{what}: kernel memory (slab + vmalloc + pages), kB",
                         fmt(ma["kernel_kb"]), fmt(mb["kernel_kb"]),
                         rstr(mb['kernel_kb'], ma['kernel_kb'])))
    if sp:
        fa, fb = sp[A]["memfree_kb"], sp[B]["memfree_kb"]
        rows.append(("MemFree after boot to a shell, kB", fmt(fa), fmt(fb), rstr(fb, fa)))
        for fig in SPEED:
            k = fig.key
            if k not in sp[A] or k not in sp[B]:
                continue
            rows.append((f"{speed_what(fig, res)}, {fig.unit} (median)", f"{sp[A][k]:{fig.prec}}",
                         f"{sp[B][k]:{fig.prec}}",
                         rstr(sp[B][k], sp[A][k]) + spread_cell(sp.get("spread", {}).get(k))))
        rows.append(("bytes lost, all transfers",
                     *(str(sum(sp[f]["lost"].values())) for f in (A, B)), ""))
    fl = res.get("floor")
    for fig in SPEED if sp and fl else ():
        d = fl.get(fig.key)
        if not d or d["ratio"] is None:
            continue
        rr = d["round_ratios"]
        rows.append((f"{speed_what(fig, res)}, the floor: the bytes only reach the guest "
                     f"({FLOOR} under N_NULL), {fig.unit} (median; in the {A} column)",
                     f"{d['median']:{fig.prec}}", "",
                     f"floor / {A}: {d['ratio']:.3f}" +
                     (f" (rounds {min(rr):.3f}-{max(rr):.3f})" if rr else "")))
    return rows


def spread_cell(d):
    """What the summary's ratio cell adds for a speed figure: the median
    of the pair ratios, their range and the ranking rule's outcome."""
    if not d:
        return ""
    if d["pairs"] < 2:
        return " (one pair: too few to rank)"
    return (f" (pairs: {d['median']:.3f}, {d['min']:.3f}-{d['max']:.3f}; "
            + (f"{d['faster']} faster" if d["ranked"] else "spread too wide to rank") + ")")


def md_table(head, rows):
    out = ["| " + " | ".join(head) + " |", "|" + "|".join(" --- " for _ in head) + "|"]
    out += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    return "\n".join(out)


def mem_tables(L, mem):
    """The report's tables and notes of one memory boot's figures (MEM of
    each flavour), appended to L."""
    for f in (A, B):
        if not mem[f].get("exact", False):
            L.append(f"Note: {f}'s pages and totals are not exact: its snapshots come from "
                     "an SMP kernel (counters with per-CPU differentials) or from the older "
                     "shell meminit (MemFree and meminfo's Slab only, a shell that grew with "
                     "each snapshot).")
            L.append("")
    rows = []
    for tag, what in (("open", "opened"), ("traffic", "after a line in and out")):
        for f in (A, B):
            m = mem[f].get(tag)
            if not m:
                continue
            caches = ", ".join(f"{n} {v:+,.0f}" for n, v in sorted(m["caches"].items())) or "-"
            vmc = ", ".join(f"{n} {v:+,.0f}" for n, v in sorted(m.get("vmalloc_callers", {}).items()))
            rows.append((what, f, fmt(m["slab_object_bytes"]), caches,
                         fmt(m["vmalloc_kb"]) + (f" ({vmc})" if vmc else ""),
                         fmt(m["pages"]), fmt(m["kernel_bytes"]),
                         " ".join(fmt(c["kernel_bytes"]) for c in m["cycles"]),
                         f"{fmt(m['taken_pages'])} ({fmt(m['slab_pages'])})"))
    L.append(md_table(["port", "flavour", "slab objects, bytes", "per cache, bytes",
                       "vmalloc, kB (by caller)", "pages (4 KiB)", "total, bytes",
                       "total, each cycle", "free pages taken (of them slab pages)"], rows))
    L.append("")
    irq = {f: mem[f]["closed"].get("uart_irq") for f in (A, B)}
    for f in (A, B):
        d = mem[f]["closed_drift"]
        c = mem[f]["closed"]
        left = mem[f].get("left_per_cycle", [])
        first = ", ".join(f"{n} {v:+,}" for n, v in sorted(left[0]["caches"].items())) if left else ""
        L.append(f"- {f}, port closed: UART interrupt requested "
                 f"{'-' if irq[f] is None else ('yes' if irq[f] else 'no')} (/proc/interrupts); "
                 f"free {fmt(c['MemFree_kb'])} kB, Slab {fmt(c['Slab_kb'])} kB, slab objects "
                 f"{fmt(c['slab_object_bytes'])} bytes, VmallocUsed {fmt(c['VmallocUsed_kb'])} kB. "
                 "Left allocated by each open/close cycle (closed against the closed before), "
                 "bytes: " + (" ".join(fmt(x["kernel_bytes"]) for x in left) or "-") +
                 (f" (the first: {first})" if first else "") +
                 f"; from the first closed snapshot to the last: {d['kernel_bytes']:+,} bytes, "
                 f"free {d['memfree_kb']:+,} kB; freed vmalloc areas awaiting vmalloc's lazy "
                 "purge (vmallocinfo's unpurged vm_area; their vmap_area objects, 40 bytes each, "
                 "are what a cycle leaves in vmap_area): "
                 + " ".join(str(x) for x in c.get("vmap_unpurged", [])) +
                 f"; line read back: {'yes' if mem[f]['line_in_ok'] else 'NO'}.")
    L.append("")
    if irq[A] and irq[B] == 0:
        L.append(f"What stays allocated with the port closed: {A}'s UART interrupt stays "
                 "requested with the port closed, and its open adds no transmit page: the full "
                 "TTY layer never shuts a console port down (tty_port_shutdown() returns "
                 "early for a console port), so what uart_startup() allocated at the kernel's "
                 "open of /dev/console for init, before PID 1 runs (the 4 KiB transmit page, the "
                 "IRQ's irqaction and /proc/irq entry), stays allocated after the last close, "
                 "as does the port's last flip buffer (tty_buffer, allocated by the first line "
                 f"in: what the first cycle left). None of that is in {A}'s per-open figures; "
                 "an open of a port that is not the console takes the transmit page too (below, "
                 "when measured). "
                 f"{B} shuts the port down at the last close, console or not: its per-open "
                 "figures hold its two pages (receive ring and transmit buffer), the IRQ and "
                 "its buffers" +
                 (", and each close gave back all its open took (0 bytes left by every cycle)."
                  if all(x["kernel_bytes"] == 0 for x in mem[B].get("left_per_cycle", [1]))
                  else "."))
        L.append("")


def write_report(res, out):
    sz, sp, mem, mc = res["sizes"], res["speed"], res["memory"], res["machine"]
    L = []
    L.append(f"# minitty bench: {B} against {A}{' (--quick)' if res['quick'] else ''}")
    L.append("")
    L.append(f"Run {res['started']} to {res['finished']} ({res['wall_s']:.0f} s) with "
             f"`{res['cmdline']}`. Ratios are {B} / {A} (below 1: {B} is smaller or faster).")
    # what the figures say, not a guess at why: the 5- and 15-minute
    # averages also count work that ended before the run
    idle = "an idle machine" if res["load_busy"] is False else \
        ("**not an idle machine by its load average** (one of these figures "
         "is above half the CPUs; the 5- and 15-minute ones also count work "
         "that ended before the run)")
    L.append(f"Load average (1, 5, 15 min) at the start {res['load_start']}, at the end "
             f"{res['load_end']}, on {mc['cpus']} CPUs: {idle}. Speed figures compare "
             "the flavours inside this run only (alternating runs); do not compare them "
             "across runs.")
    L.append("")
    L.append("## Summary")
    L.append("")
    L.append(md_table(["figure", A, B, "ratio"], summary_rows(res)))
    L.append("")
    status = "all transfers whole (0 bytes lost, checksums right)" if res["ok"] else \
        "**FAILED**: " + "; ".join(res["problems"])
    L.append(f"Result: {status}.")
    L.append("")
    L.append("Speed ratios: the ratio of the medians, and in brackets the median of the "
             f"ratios of each pair of runs made one after the other (run i of {A}, then run i "
             f"of {B}: closest in machine load), the lowest and highest of those pair ratios, "
             "and the ranking rule's outcome. Ranking rule: the flavours are ranked on a "
             f"figure only when a two-sided sign test over the pairs (pair ratio below 1: "
             f"{B} faster, above 1: {A}) gives p below {RANK_P}, i.e. when a split as uneven "
             "would come by chance less than one time in ten (with five pairs: only when all "
             "five agree; four of five come by chance 37.5% of the time); otherwise "
             "the figure does not rank them, whatever the ratio of the medians says. "
             "On a loaded host the echo round trip is mostly the wait for QEMU to be "
             "scheduled (a few ms when the host is busy, tenths of a ms when it is not), so "
             "its ratio says more about the load during each run than about the TTY layer.")
    L.append("")
    if sp and sp.get("spread"):
        L.extend(f"- {fig.short}: {sp['spread'][fig.key]['verdict']}"
                 for fig in SPEED if fig.key in sp["spread"])
        L.append("")

    # sizes
    L.append("## Static size")
    L.append("")
    L.append("From the test flavours' builds (sandbox/build/{fulltty,minitty,notty}: "
             "tinyconfig + configs/base.config + the flavour's fragment, the same tree). "
             "The tables are `bin/minitty size --flavour F` verbatim "
             f"({CROSS}size of the drivers/tty objects that vmlinux links, "
             "without the UART driver amba-pl011.o and earlycon.o, as in the cover letter).")
    L.append("")
    for f in (A, B, NOTHING):
        L.append(f"### {f}")
        L.append("")
        L.append("```")
        L.append(sz[f]["table"].rstrip())
        L.append("```")
        L.append("")
    L.append(f"zImage: {A} {fmt(sz[A]['zimage_bytes'])}, {B} {fmt(sz[B]['zimage_bytes'])}, "
             f"{NOTHING} {fmt(sz[NOTHING]['zimage_bytes'])} bytes.")
    L.append("")
    rows = []
    for f in (A, B):
        v, n = sz[f]["vmlinux"], sz[NOTHING]["vmlinux"]
        rows.append((f, *(fmt(v[k] - n[k]) for k in ("text", "data", "bss", "dec")),
                     fmt(sz[f]["zimage_bytes"] - sz[NOTHING]["zimage_bytes"])))
    L.append(f"What the serial console costs on top of nothing (vmlinux and zImage of F "
             f"minus those of `{NOTHING}`: CONFIG_TTY=n, no serial layer, no UART driver; "
             "this includes the PL011 driver and its console):")
    L.append("")
    L.append(md_table(["flavour", "text", "data", "bss", "dec", "zImage"], rows))
    L.append("")
    L.append(f"`scripts/bloat-o-meter` from {A}'s vmlinux to {B}'s: {sz['bloat_o_meter']['summary']} "
             "(full output: bloat-o-meter.txt; its first lines:)")
    L.append("")
    L.append("```")
    L.extend(sz["bloat_o_meter"]["output"].splitlines()[:25])
    L.append("```")
    L.append("")
    L.append("Chart of the per-object breakdown: sizes.svg.")
    L.append("")

    # memory
    L.append("## Runtime memory")
    L.append("")
    if sp:
        L.append(f"After boot to a shell (test flavours, the normal initramfs, `cat /proc/meminfo` "
                 f"in the guest right after the first prompt; median of {sp[A]['runs']} boots, 64 MiB guest):")
        L.append("")
        L.append(md_table(["kB", A, B, f"{B} - {A}"],
                          [(k, fmt(sp[A][key]), fmt(sp[B][key]), fmt(sp[B][key] - sp[A][key]))
                           for k, key in (("MemTotal", "memtotal_kb"), ("MemFree", "memfree_kb"),
                                          ("MemFree + per-CPU free lists", "free_pcp_kb"),
                                          ("Slab", "slab_kb"), ("VmallocUsed", "vmalloc_kb"))]))
        L.append("")
    if mem:
        cyc = len(mem[A]["open"]["cycles"]) if "open" in mem[A] else 0
        L.append(f"What the TTY layer allocates for an open port: kernels {MEM[A]} and {MEM[B]} "
                 "(the test flavours plus configs/bench.config, the same for both: "
                 "CONFIG_SLUB_DEBUG for /proc/slabinfo; uniprocessor), booted with "
                 f"`{res['memory_append']}` and the normal initramfs plus lib/bench/meminit.sh "
                 "as PID 1, which mounts /proc and hands PID 1 over to lib/bench/memsnap.c: one "
                 "process that forks nothing and maps, touches and locks all its memory before "
                 "it starts, so that between its snapshots only the TTY layer allocates, and "
                 "nothing holds ttyAMA0 open but it. slab_debug=F makes every cache a debug "
                 "cache (no per-CPU slabs), so /proc/slabinfo counts each object. "
                 f"Each of {cyc} cycles takes a snapshot of /proc/meminfo, slabinfo, "
                 "vmallocinfo, zoneinfo and interrupts with the port closed, one a second after "
                 "`open(\"/dev/ttyAMA0\", O_RDWR | O_NOCTTY)`, one a second after one line out "
                 "and one line in (written to the port, answered by the host, read), and one a "
                 "second after the close (the full TTY layer frees the tty from a work item); "
                 "a snapshot reads the five files with all of them open, so that their own "
                 "allocations are the same in every snapshot.")
        L.append("")
        L.append("Each figure is an opened or after-traffic snapshot against the closed one "
                 "just before it, counted exactly: slab objects, the sum over the caches of "
                 "active_objs x objsize; vmalloc, VmallocUsed (by caller from vmallocinfo, its "
                 "addresses looked up in System.map); taken, the drop of the free pages: the "
                 "zones' free pages plus their per-CPU free lists (zoneinfo's pages free and "
                 "count:, printed together under the zone lock; a uniprocessor kernel's counters "
                 "have no per-CPU differentials); pages, taken minus the slab caches' pages "
                 "(num_slabs x pagesperslab), vmalloc's and AnonPages + Cached + PageTables "
                 "(memsnap's own memory, which does not move): the whole pages that the kernel "
                 "took outside slab caches and vmalloc, such as a transmit buffer or a receive "
                 "ring; total, slab objects + vmalloc + pages (the objects rather than the slab "
                 "pages: a cache needs a new page only now and then). The table gives the median "
                 "over the cycles after the first (the first open also allocates what the port "
                 "keeps from then on, open or closed: what the first cycle left, below), and the "
                 "total of each cycle, the first included.")
        L.append("")
        for mk in MEM_RUNS:
            if all(res.get(mk.key) and res[mk.key].get(f) for f in (A, B)):
                L.append(f"### The {mk.what}")
                L.append("")
                if mk.port != "console":
                    L.append(f"The same boots with `{gb.MEM_PORTS[mk.port]}` added to the command "
                             "line: it names no console, so the UART's console is never "
                             "registered and ttyAMA0 is an ordinary port (earlycon keeps the "
                             "kernel's messages on the serial log). Both layers shut such a port "
                             "down at its last close, the full one freeing its transmit page too "
                             "(it keeps the port's flip buffer: what its first cycle left, below), "
                             "so these figures compare like with like.")
                    L.append("")
                mem_tables(L, res[mk.key])

    if memory_panels(res):
        L.append("![What an open port takes, per flavour](memory.svg)")
        L.append("")
        L.append("Chart: memory.svg, the open-port figures above as bars, in kB "
                 "(slab objects too, from their bytes).")
        L.append("")

    # speed
    if sp:
        L.append("## Speed under QEMU")
        L.append("")
        n = res["transfer_bytes"]
        L.append(f"Test flavours, the normal initramfs; {sp[A]['runs']} boot(s) per flavour, "
                 f"alternating ({A} {B} {A} {B} ...); each boot runs every test once; "
                 "figures are medians over the boots.")
        L.append("")
        L.append("- boot: from starting lib/qemu.sh (QEMU -daemonize) to the first shell prompt in "
                 "the serial log (polled every 5 ms).")
        L.append(f"- host to guest: {n} bytes of deterministic pseudo-random data written to QEMU's "
                 "pty (host side tty.setraw, blocking on a full pty: QEMU reads as fast as the "
                 "PL011 takes it) while the guest runs `stty raw -echo min 0 time 50; head -c N "
                 ">/tmp/f; wc -c </tmp/f; md5sum </tmp/f`; time from the first byte written to "
                 "wc's answer; bytes lost = N - wc, md5 compared.")
        L.append(f"- guest to host: `stty raw -echo; head -c {n} /bin/busybox`; time from the "
                 "guest's ready marker to the N-th byte read on the host; the guest then prints "
                 "the md5 of the same bytes, compared with the host's.")
        L.append(f"- echo round trip: `stty sane; cat >/dev/null`, one character written to the "
                 f"pty, time until its echo is read back; {res['keys']} keystrokes one after the "
                 "other (a carriage return every 40, not timed); median per boot.")
        L.append("- canonical read: `stty sane -echo; head -n 200 | md5sum`; 200 lines of "
                 f"{len(gb.canon_lines(1))} bytes "
                 "written at once; time from the first byte to the md5 line.")
        if res.get("zmodem_bytes"):
            L.append(f"- ZMODEM: a real file-transfer program on both ends, Debian's lrzsz (the "
                     f"host's sz and rz, and the arm build in the guest, with the C library of "
                     f"libc6-armhf-cross: appended to the initramfs of a guest booted for it after "
                     f"each speed boot). Host to guest: `sz -q -b FILE` on the host, `rz -q -y` in "
                     f"the guest; guest to host: `sz -q -b FILE` in the guest (the first "
                     f"{res['zmodem_bytes']} bytes of /bin/busybox), `rz -q -y -b` on the host; "
                     f"{res['zmodem_bytes']} bytes each way; time from starting the host's program "
                     f"to its exit; bytes counted and md5 compared on both ends.")
        L.append("")
        rows = []
        for fig in SPEED:
            k = fig.key
            if k not in sp[A] or k not in sp[B]:
                continue
            what = f"{fig.short}, {fig.unit}"
            for f in (A, B):
                rows.append((what, f, f"{sp[f][k]:.3f}", " ".join(f"{x:.3f}" for x in sp[f][k + "_all"])))
            d = sp.get("spread", {}).get(k)
            if d:
                rows.append((what, f"pair ratios {B} / {A}", f"{d['median']:.3f}",
                             " ".join(f"{x:.3f}" for x in d["pair_ratios"])))
        L.append(md_table(["figure", "flavour", "median", "every run"], rows))
        L.append("")
        L.append("![Every run of each flavour and the ratio of each pair of runs, per figure]"
                 "(speed.svg)")
        L.append("")
        L.append(f"Chart: speed.svg, one panel per figure: every run of each flavour (dots) and "
                 f"its median (bar) on the figure's axis, and below them the pair ratios "
                 f"{B} / {A} with a line at 1 (left of it: {B} faster); a dashed line at "
                 f"the floor, and at its ratio to {A}, where the figure has one.")
        L.append("")
        rows = []
        for f in (A, B):
            rows.append((f, f"{sp[f]['echo_rtt_ms']:.3f}", f"{sp[f]['echo_rtt_p10_ms']:.3f}",
                         f"{sp[f]['echo_rtt_p90_ms']:.3f}",
                         f"{n / 1024 / sp[f]['h2g_s']:.1f}", f"{n / 1024 / sp[f]['g2h_s']:.1f}",
                         str(sp[f]["lost"]["h2g"]), str(sp[f]["lost"]["g2h"]),
                         str(sp[f]["lost"]["zm_h2g"] + sp[f]["lost"]["zm_g2h"])
                         if "zm_h2g" in sp[f]["lost"] else "-",
                         "yes" if sp[f]["md5_ok"] else "NO"))
        L.append(md_table(["flavour", "echo ms (median)", "p10", "p90", "h2g KiB/s", "g2h KiB/s",
                           "h2g bytes lost", "g2h bytes lost", "ZMODEM bytes lost",
                           "checksums right"], rows))
        L.append("")

    fl = res.get("floor")
    if sp and fl:
        L.append("## The floor")
        L.append("")
        L.append(f"What no TTY layer goes much below: after each round of speed boots, a boot of "
                 f"{FLOOR} runs "
                 f"lib/bench/nullsink.c, which puts the port under N_NULL (the line discipline "
                 f"that drops what it gets: no reader, no copy, no processing) and polls the "
                 f"driver's count of received bytes (TIOCGICOUNT) every millisecond; the host "
                 f"sends the same bytes as the raw transfer and as the canonical read's 200 "
                 f"lines, and times from the first byte written to nullsink's report that the "
                 f"last one was counted. What is left is QEMU's PL011 model, the UART driver and "
                 f"the flip buffer's hand-over to the line discipline, with no reader and "
                 f"nothing done with the bytes; the driver and QEMU are the same under every "
                 f"layer.")
        L.append("")
        rows = []
        for fig in SPEED:
            d = fl.get(fig.key)
            if not d or fig.key not in sp[A]:
                continue
            rows.append((f"{speed_what(fig, res)}, {fig.unit}", f"{d['median']:.3f}",
                         " ".join(f"{x:.3f}" for x in d["all"]), f"{sp[A][fig.key]:.3f}",
                         f"{d['ratio']:.3f}", " ".join(f"{x:.3f}" for x in d["round_ratios"])))
        L.append(md_table(["figure", "floor (median)", "every floor boot", f"{A} (median)",
                           f"floor / {A}", "per round"], rows))
        L.append("")

    # machine
    L.append("## Machine and rerunning")
    L.append("")
    L.append(f"- host {mc['host']}: {mc['uname']}; {mc['cpu']} x {mc['cpus']}; "
             f"{mc['mem_kb'] // 1024} MiB")
    L.append(f"- {mc['qemu']}; {mc['gcc']}; Python {mc['python']}")
    L.append("- guest kernel release: " + ", ".join(f"{k} {v}" for k, v in mc["kernel_release"].items()))
    L.append(f"- sandbox/linux at {mc['tree_head']} ({mc['tree_series']} commits on top of "
             f"pristine; {mc['tree_dirty_files']} tracked files modified in the work tree); "
             f"this repository at {mc['repo_head']}")
    L.append("- guest: qemu-system-arm -M virt -cpu cortex-a15 -m 64, PL011 on -chardev pty (lib/qemu.sh)")
    L.append("")
    L.append("Commands (all run by the bench itself):")
    L.append("")
    L.append("```")
    L.append(f"{res['cmdline']}")
    L.append(f"bin/minitty build --flavour F        # F = {A} {B} {NOTHING} {MEM[A]} {MEM[B]}")
    L.append("bin/minitty rootfs")
    L.append(f"bin/minitty size --flavour F         # F = {A} {B} {NOTHING}")
    L.append(f"sandbox/linux/scripts/bloat-o-meter -p DIR/{CROSS} "
             f"sandbox/build/{A}/vmlinux sandbox/build/{B}/vmlinux")
    L.append(f"    # DIR/{CROSS}nm: {CROSS}nm without its nameless symbols "
             "(lines 'SIZE t '), on which bloat-o-meter fails")
    L.append("stat -c %s sandbox/build/F/arch/arm/boot/zImage")
    L.append("python3 lib/bench/bench.py ...     # the guests, through lib/py/minitty/guest.py")
    L.append("```")
    L.append("")
    if res.get("reanalysed"):
        L.append(f"The derived figures were computed again from the raw ones in results.json "
                 f"(`python3 lib/bench/bench.py --out DIR --reanalyse`) on {res['reanalysed']}.")
    L.append("Raw figures: results.json (every run, every snapshot). Serial logs: sandbox/logs/serial-*.log.")
    with open(os.path.join(out, "report.md"), "w") as f:
        f.write("\n".join(L) + "\n")


def speed_panels(res):
    """speed.svg's panels: per speed figure every run of each flavour, the
    pair ratios, the ranking rule's outcome and the floor (None without)."""
    sp = res.get("speed")
    panels = []
    for fig in SPEED if sp else ():
        k = fig.key
        if k not in sp[A] or k not in sp[B]:
            continue
        d = sp.get("spread", {}).get(k)
        fl = (res.get("floor") or {}).get(k) or {}
        panels.append({"title": f"{speed_what(fig, res)}, {fig.unit}", "unit": fig.unit,
                       "runs": {f: sp[f][k + "_all"] for f in (A, B)},
                       "ratios": d["pair_ratios"] if d else [],
                       "note": d["verdict"] if d else "",
                       "floor": fl.get("median"), "floor_ratio": fl.get("ratio")})
    return panels


# memory.svg's bars: the label, the figure of mem_analysis() and what
# takes it to kB
MEM_BARS = (("slab objects", "slab_object_bytes", 1 / 1024),
            ("VmallocUsed", "vmalloc_kb", 1),
            ("Slab pages", "slab_pages_kb", 1),
            ("pages (free pages taken - slab pages - vmalloc)", "other_pages_kb", 1),
            ("kernel (slab objects + vmalloc + pages)", "kernel_kb", 1))


def memory_panels(res):
    """memory.svg's panels: the open-port figures of each flavour and
    port (MEM_RUNS), opened and after a line in and out, [] when there
    are none."""
    panels = []
    for mk, tag, what in ((mk, tag, what) for mk in MEM_RUNS
                          for tag, what in (("open", "opened"),
                                            ("traffic", "after a line in and out"))):
        mem = res.get(mk.key)
        if not mem or not all(tag in (mem.get(f) or {}) for f in (A, B)):
            continue
        what = f"{mk.what}, {what}"
        groups = []
        for label, key, to_kb in MEM_BARS:
            if not all(key in mem[f][tag] for f in (A, B)):
                continue
            bars = {}
            for f in (A, B):
                v = mem[f][tag][key]
                kb = f"{round(v, 1) or 0.0:,.1f}".removesuffix(".0")  # no "-0.0"
                bars[f] = (v * to_kb, f"{v:,.0f} bytes" if to_kb != 1 else f"{kb} kB")
            groups.append((label, bars))
        if groups:
            cyc = mem[A][tag].get("median_of", len(mem[A][tag].get("cycles", [])))
            panels.append((f"{what} (median of {cyc} cycles)" if cyc else what, groups))
    return panels


def write_outputs(res, out):
    with open(os.path.join(out, "bloat-o-meter.txt"), "w") as f:
        f.write(res["sizes"]["bloat_o_meter"]["output"])
    with open(os.path.join(out, "sizes.svg"), "w") as f:
        f.write(svgchart.size_chart({fl: res["sizes"][fl] for fl in (A, B)},
                                    f"TTY/serial layer objects, bytes ({CROSS}size)"))
    # speed.svg and memory.svg when there are figures for them; no older
    # chart left behind when there are not
    charts = {"speed.svg": (speed_panels(res), lambda p: svgchart.speed_chart(
                  p, (A, B), f"Speed under QEMU: every run and the pair ratios {B} / {A} "
                  "(lower is faster)")),
              "memory.svg": (memory_panels(res), lambda p: svgchart.bar_chart(
                  p, (A, B), f"What an open ttyAMA0 takes in the kernel, kB ({MEM[A]}, {MEM[B]})",
                  "kB", {f: MEM[f] for f in (A, B)}))}
    for name, (panels, chart) in charts.items():
        path = os.path.join(out, name)
        if panels:
            with open(path, "w") as f:
                f.write(chart(panels))
        elif os.path.exists(path):
            os.remove(path)
    with open(os.path.join(out, "results.json"), "w") as f:
        json.dump(res, f, indent=1, sort_keys=True)
    write_report(res, out)
    with open(os.path.join(out, "summary.md"), "w") as f:
        f.write(md_table(["figure", A, B, "ratio"], summary_rows(res)) + "\n")
    for line in summary_rows(res):
        print(f"  {line[0]}: {line[1]} / {line[2]}" + (f" (ratio {line[3]})" if line[3] else ""))


def reanalyse(out):
    """Recompute the derived figures of OUT/results.json from its raw ones
    (the snapshots and the runs) with this version of the analysis, and
    write the report again. Nothing is measured."""
    with open(os.path.join(out, "results.json")) as f:
        res = json.load(f)
    for mk in MEM_RUNS:
        raw = res.get(mk.key + "_raw")
        if raw and all(f in raw for f in (A, B)):
            res[mk.key] = {f: mem_analysis(raw[f]) for f in (A, B)}
    if res.get("speed_runs"):
        res["speed"] = speed_summary(res["speed_runs"])
        res["floor"] = floor_summary(res.get("floor_runs", []), res["speed_runs"])
    res["reanalysed"] = (time.strftime("%Y-%m-%d %H:%M:%S %Z") + ", " +
                         subprocess.run(["git", "-C", ROOT, "log", "-1", "--format=%h"],
                                        stdout=subprocess.PIPE, text=True).stdout.strip())
    write_outputs(res, out)
    return 0 if res["ok"] else 1


def main(argv):
    p = argparse.ArgumentParser(prog="bench.py")
    p.add_argument("--out", required=True)
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--quick", action="store_true")
    p.add_argument("--cmdline", default="bin/minitty bench")
    p.add_argument("--reanalyse", action="store_true",
                   help="recompute the report from OUT/results.json, measure nothing")
    args = p.parse_args(argv)
    if args.reanalyse:
        return reanalyse(args.out)
    os.makedirs(args.out, exist_ok=True)
    quick = args.quick
    runs = 1 if quick else max(1, args.runs)
    n = 128 * 1024 if quick else gb.MIB
    # ZMODEM: a quarter of the raw transfers (sz and rz add their framing
    # on the same PL011 pace: more would only lengthen the bench)
    zn = n // 4
    keys = 50 if quick else 200
    cycles = 2 if quick else 5
    res = {"quick": quick, "cmdline": args.cmdline, "runs": runs, "transfer_bytes": n,
           "zmodem_bytes": zn,
           "keys": keys, "memory_cycles": cycles, "memory_append": gb.MEM_APPEND,
           "started": time.strftime("%Y-%m-%d %H:%M:%S %Z"), "load_start": loadavg()}
    t0 = time.monotonic()
    problems = []

    log("machine")
    res["machine"] = machine()
    log("sizes: bin/minitty size, bloat-o-meter, zImage")
    res["sizes"] = sizes()

    host_copy = None
    try:
        with open(os.path.join(SANDBOX, "rootfs", "stage", gb.G2H_FILE.lstrip("/")), "rb") as fh:
            host_copy = fh.read()
    except OSError:
        pass
    data, lines = gb.h2g_data(n), gb.canon_lines(200)
    speed_runs, floor_runs = [], []
    for i in range(runs):
        for f in (A, B):
            log(f"speed: run {i + 1}/{runs} {f}")
            try:
                r = gb.speed_run(f, data, lines, keys, host_copy=host_copy)
            except gb.GuestError as e:
                problems.append(f"speed run {i + 1} of {f}: {e}")
                continue
            try:
                zm = gb.zmodem_run(f, zn)
            except (gb.GuestError, subprocess.CalledProcessError,
                    subprocess.TimeoutExpired) as e:
                problems.append(f"zmodem run {i + 1} of {f}: {e}")
                continue
            r["round"] = i
            r["zm_h2g"], r["zm_g2h"] = zm["h2g"], zm["g2h"]
            r["zm_serial_log"] = zm["serial_log"]
            r["kernel_problems"] += zm["kernel_problems"]
            speed_runs.append(r)
            for k in TRANSFERS:
                if r[k]["bytes_lost"] or not r[k]["md5_ok"]:
                    problems.append(f"{f} run {i + 1}: {k} lost {r[k]['bytes_lost']} bytes, "
                                    f"checksum {'right' if r[k]['md5_ok'] else 'WRONG'}")
            if r["g2h"].get("md5_matches_host_copy") is False:
                problems.append(f"{f} run {i + 1}: g2h data differs from the host's copy of {gb.G2H_FILE}")
            if not r["canon"]["md5_ok"]:
                problems.append(f"{f} run {i + 1}: the 200 lines arrived wrong")
            if r["kernel_problems"]:
                problems.append(f"{f} run {i + 1}: kernel problems in {r['serial_log']} "
                                f"or {r['zm_serial_log']}")
            log(f"  boot {r['boot_s']:.2f} s, h2g {r['h2g']['seconds']:.2f} s "
                f"(lost {r['h2g']['bytes_lost']}), g2h {r['g2h']['seconds']:.2f} s "
                f"(lost {r['g2h']['bytes_lost']}), echo {1000 * statistics.median(r['echo_rtt_s']):.2f} ms, "
                f"canon {r['canon']['seconds']:.2f} s, zmodem h2g {r['zm_h2g']['seconds']:.2f} s, "
                f"g2h {r['zm_g2h']['seconds']:.2f} s")
        log(f"floor: run {i + 1}/{runs} {FLOOR} with N_NULL")
        try:
            fr = gb.floor_run(FLOOR, data, lines)
        except (gb.GuestError, subprocess.CalledProcessError) as e:
            problems.append(f"floor run {i + 1}: {e}")
            continue
        fr["round"] = i
        floor_runs.append(fr)
        for k in ("h2g", "canon"):
            if fr[k]["bytes_lost"] or fr[k]["status"]:
                problems.append(f"floor run {i + 1}: {k}: {fr[k]['bytes_lost']} bytes not "
                                f"counted, nullsink exit {fr[k]['status']}")
        if fr["kernel_problems"]:
            problems.append(f"floor run {i + 1}: kernel problems in {fr['serial_log']}")
        log(f"  h2g {fr['h2g']['seconds']:.2f} s, canon's bytes {fr['canon']['seconds']:.3f} s")
    res["speed_runs"], res["floor_runs"] = speed_runs, floor_runs
    have = {r["flavour"] for r in speed_runs}
    res["speed"] = speed_summary(speed_runs) if have == {A, B} else None
    res["floor"] = floor_summary(floor_runs, speed_runs) if res["speed"] else None

    for mk in MEM_RUNS:
        log(f"memory, {mk.what}: {MEM[A]} and {MEM[B]}, {cycles} open/close cycles each")
        res[mk.key], res[mk.key + "_raw"] = {}, {}
        for f in (A, B):
            try:
                ensure_built(MEM[f])
                run = gb.memory_run(MEM[f], cycles, port=mk.port)
                res[mk.key + "_raw"][f] = run
                res[mk.key][f] = mem_analysis(run)
            except (gb.GuestError, subprocess.CalledProcessError, KeyError, IndexError,
                    ValueError, statistics.StatisticsError) as e:
                problems.append(f"memory boot of {MEM[f]} ({mk.what}): {type(e).__name__}: {e}")
                res[mk.key] = None
                break
            if run["kernel_problems"]:
                problems.append(f"{MEM[f]}: kernel problems in {run['serial_log']}")
            if not res[mk.key][f]["line_in_ok"]:
                problems.append(f"{MEM[f]} ({mk.what}): the line sent to the open port was "
                                "not read back")

    # the bench-* kernels may have been built only now
    res["machine"]["kernel_release"] = machine()["kernel_release"]
    res["load_end"] = loadavg()
    res["finished"] = time.strftime("%Y-%m-%d %H:%M:%S %Z")
    res["wall_s"] = time.monotonic() - t0
    busy = max(float(x) for x in (res["load_start"] + " " + res["load_end"]).split())
    res["load_busy"] = busy > 0.5 * (os.cpu_count() or 1)
    res["problems"] = problems
    res["ok"] = not problems
    write_outputs(res, args.out)
    for pr in problems:
        print(f"minitty: bench: {pr}", file=sys.stderr)
    return 0 if res["ok"] else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
