#!/usr/bin/python3
"""minitty bench: size, memory and speed of minitty against the full TTY
layer, in one run. Called by `bin/minitty bench` (lib/bench.sh), which
builds what is needed first; writes OUT/report.md, OUT/summary.md,
OUT/results.json, OUT/sizes.svg and OUT/bloat-o-meter.txt.

    bench.py --out DIR [--runs N] [--quick] [--cmdline 'bin/minitty bench']

Exit 0 when every transfer arrived whole (0 bytes lost, checksums right)
and no guest's serial log has Oops, BUG, WARNING or Kernel panic; 1 else.
"""

import argparse
import json
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

ROOT = os.path.dirname(os.path.dirname(HERE))
MINITTY = os.path.join(ROOT, "bin", "minitty")
CROSS = "arm-linux-gnueabihf-"
A, B = "fulltty", "minitty"          # the two flavours compared
NOTHING = "notty"                    # CONFIG_TTY=n, no serial at all
MEM = {A: "bench-" + A, B: "bench-" + B}
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
    return sum(a * z for a, z in s["slab"].values())


def mem_analysis(run):
    """Deltas of each open-port snapshot against the closed snapshots
    before and after it, interpolated to its place in the sequence (the
    snapshots are taken closed, open, traffic, closed: the shell's own
    memory grows a little with each), then the median over the cycles."""
    snaps = run["snapshots"]
    closed = {s["cycle"]: s for s in snaps if s["tag"] == "closed"}
    out = {}
    for tag, w in (("open", 1 / 3), ("traffic", 2 / 3)):
        per = []
        for s in (x for x in snaps if x["tag"] == tag):
            c0, c1 = closed[s["cycle"]], closed[s["cycle"] + 1]

            def dm(k, s=s, c0=c0, c1=c1):
                g = (lambda x: x["meminfo"].get(k, 0))
                return g(s) - ((1 - w) * g(c0) + w * g(c1))
            # Slab and vmalloc counters do not drift with the shell's own
            # memory: against the closed snapshot just before, exactly.
            caches = {}
            for name, (a, z) in s["slab"].items():
                dd = (a - c0["slab"].get(name, (0, z))[0]) * z
                if dd:
                    caches[name] = dd
            slab_b = snap_sum(s) - snap_sum(c0)
            vm_kb = s["meminfo"].get("VmallocUsed", 0) - c0["meminfo"].get("VmallocUsed", 0)
            # free pages = MemFree + the per-CPU free lists (4 KiB pages)
            free_kb = dm("MemFree") + PAGE_KB * dm("pcp_pages")
            # what the shell and its children hold, not the kernel's
            user_kb = dm("AnonPages") + dm("PageTables") + dm("KernelStack")
            slabpages_kb = dm("Slab")
            kernel_kb = -free_kb - user_kb
            per.append({"slab_object_bytes": slab_b, "caches": caches,
                        "vmalloc_kb": vm_kb,
                        "vmap_areas": s["meminfo"].get("vmap_areas", 0) - c0["meminfo"].get("vmap_areas", 0),
                        "memfree_kb": free_kb, "user_kb": user_kb,
                        "kernel_kb": kernel_kb, "slab_pages_kb": slabpages_kb,
                        "other_pages_kb": kernel_kb - slabpages_kb - vm_kb,
                        "got": s.get("got")})
        if not per:
            continue
        med = {k: statistics.median(p[k] for p in per)
               for k in ("slab_object_bytes", "vmalloc_kb", "vmap_areas", "memfree_kb",
                         "user_kb", "kernel_kb", "slab_pages_kb", "other_pages_kb")}
        names = sorted({n for p in per for n in p["caches"]})
        med["caches"] = {n: statistics.median(p["caches"].get(n, 0) for p in per) for n in names}
        med["caches"] = {n: v for n, v in med["caches"].items() if v}
        med["cycles"] = per
        out[tag] = med
    cl = [closed[k] for k in sorted(closed)]
    def free(x):
        return x["meminfo"]["MemFree"] + PAGE_KB * x["meminfo"].get("pcp_pages", 0)
    out["closed_drift"] = {
        "memfree_kb": free(cl[-1]) - free(cl[0]),
        "slab_object_bytes": snap_sum(cl[-1]) - snap_sum(cl[0])}
    out["closed"] = {"MemFree_kb": free(cl[0]),
                     "Slab_kb": cl[0]["meminfo"].get("Slab"),
                     "VmallocUsed_kb": cl[0]["meminfo"].get("VmallocUsed"),
                     "slab_object_bytes": snap_sum(cl[0])}
    answered = all(p["got"] == "ping%d" % i for i, p in enumerate(out.get("traffic", {}).get("cycles", [])))
    out["line_in_ok"] = answered
    return out


# --- speed --------------------------------------------------------------
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
            "boot_s": statistics.median(r["boot_s"] for r in rs),
            "h2g_s": statistics.median(r["h2g"]["seconds"] for r in rs),
            "g2h_s": statistics.median(r["g2h"]["seconds"] for r in rs),
            "echo_rtt_ms": 1000 * statistics.median(statistics.median(r["echo_rtt_s"]) for r in rs),
            "echo_rtt_p10_ms": 1000 * pct(allrtt, 10),
            "echo_rtt_p90_ms": 1000 * pct(allrtt, 90),
            "canon_s": statistics.median(r["canon"]["seconds"] for r in rs),
            "h2g_lost": sum(r["h2g"]["bytes_lost"] for r in rs),
            "g2h_lost": sum(r["g2h"]["bytes_lost"] for r in rs),
            "md5_ok": all(r["h2g"]["md5_ok"] and r["g2h"]["md5_ok"] and r["canon"]["md5_ok"]
                          for r in rs),
            "memfree_kb": statistics.median(r["meminfo_after_boot"]["MemFree"] for r in rs),
            "memtotal_kb": statistics.median(r["meminfo_after_boot"]["MemTotal"] for r in rs),
            "free_pcp_kb": statistics.median(r["meminfo_after_boot"]["MemFree"] + PAGE_KB *
                                             r["meminfo_after_boot"].get("pcp_pages", 0) for r in rs),
            "slab_kb": statistics.median(r["meminfo_after_boot"].get("Slab", 0) for r in rs),
            "vmalloc_kb": statistics.median(r["meminfo_after_boot"].get("VmallocUsed", 0) for r in rs),
        }
        for k in ("boot_s", "h2g_s", "g2h_s", "canon_s"):
            vals = [r["boot_s"] if k == "boot_s" else
                    r[{"h2g_s": "h2g", "g2h_s": "g2h", "canon_s": "canon"}[k]]["seconds"]
                    for r in rs]
            s[f][k + "_all"] = vals
    # Alternating runs: run i of B against run i of A, the pair closest in
    # time (and in machine load); the median of those ratios.
    ra = [r for r in runs if r["flavour"] == A]
    rb = [r for r in runs if r["flavour"] == B]
    get = {"boot_s": lambda r: r["boot_s"], "h2g_s": lambda r: r["h2g"]["seconds"],
           "g2h_s": lambda r: r["g2h"]["seconds"], "canon_s": lambda r: r["canon"]["seconds"],
           "echo_rtt_ms": lambda r: statistics.median(r["echo_rtt_s"])}
    s["pair_ratio"] = {k: statistics.median(g(b) / g(a) for a, b in zip(ra, rb))
                       for k, g in get.items()} if ra and rb else {}
    return s


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
        "qemu": first("qemu-system-arm", "--version"),
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
    sz, sp, mem = res["sizes"], res["speed"], res["memory"]
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
    if mem and "traffic" in mem[A] and "traffic" in mem[B]:
        ma, mb = mem[A]["traffic"], mem[B]["traffic"]
        what = "open port (after a line in and out)"
        rows.append((f"{what}: slab objects, bytes", fmt(ma["slab_object_bytes"]),
                     fmt(mb["slab_object_bytes"]),
                     rstr(mb['slab_object_bytes'], ma['slab_object_bytes'])))
        rows.append((f"{what}: vmalloc (VmallocUsed), kB", fmt(ma["vmalloc_kb"]),
                     fmt(mb["vmalloc_kb"]), rstr(mb['vmalloc_kb'], ma['vmalloc_kb'])))
        rows.append((f"{what}: kernel memory (slab + vmalloc + pages), kB",
                     fmt(ma["kernel_kb"]), fmt(mb["kernel_kb"]),
                     rstr(mb['kernel_kb'], ma['kernel_kb'])))
    if sp:
        fa, fb = sp[A]["memfree_kb"], sp[B]["memfree_kb"]
        rows.append(("MemFree after boot to a shell, kB", fmt(fa), fmt(fb), rstr(fb, fa)))
        for k, what, unit in (("boot_s", "boot to the first shell prompt", "s"),
                              ("h2g_s", "1 MiB host to guest, raw", "s"),
                              ("g2h_s", "1 MiB guest to host, raw", "s"),
                              ("echo_rtt_ms", "echo round trip of one keystroke, canonical", "ms"),
                              ("canon_s", "200-line canonical read", "s")):
            if k in ("h2g_s", "g2h_s") and res["transfer_bytes"] != gb.MIB:
                what = what.replace("1 MiB", f"{res['transfer_bytes'] // 1024} KiB")
            prec = ".2f" if unit == "ms" else ".3f"
            pr = sp.get("pair_ratio", {}).get(k)
            rows.append((f"{what}, {unit} (median)", f"{sp[A][k]:{prec}}", f"{sp[B][k]:{prec}}",
                         rstr(sp[B][k], sp[A][k]) +
                         (f" (pairs: {pr:.3f})" if pr is not None and runs_n(res) > 1 else "")))
        rows.append(("bytes lost, all transfers", str(sp[A]["h2g_lost"] + sp[A]["g2h_lost"]),
                     str(sp[B]["h2g_lost"] + sp[B]["g2h_lost"]), ""))
    return rows


def runs_n(res):
    return len(res.get("speed_runs", [])) // 2


def md_table(head, rows):
    out = ["| " + " | ".join(head) + " |", "|" + "|".join(" --- " for _ in head) + "|"]
    out += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    return "\n".join(out)


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
             "ratios of each pair of runs made one after the other (closest in machine "
             "load). On a loaded host the echo round trip is mostly the wait for QEMU to be "
             "scheduled (a few ms when the host is busy, tenths of a ms when it is not), so "
             "its ratio says more about the load during each run than about the TTY layer.")
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
                 "CONFIG_SLUB_DEBUG for /proc/slabinfo), booted with "
                 f"`{res['memory_append']}` and the normal initramfs plus tests/bench/meminit.sh "
                 "as PID 1, so that nothing holds ttyAMA0 open. slab_debug=F makes every "
                 "cache a debug cache (no per-CPU slabs), so /proc/slabinfo counts each object. "
                 f"Each of {cyc} cycles takes snapshots of /proc/meminfo, /proc/slabinfo, "
                 "/proc/vmallocinfo and /proc/zoneinfo with the port closed, opened "
                 "(`exec 3<>/dev/ttyAMA0`), after one line out and one line in (`echo` to it, "
                 "the host answers, `read`), and closed again. Slab and vmalloc figures: each "
                 "open snapshot against the closed one just before it (exact counters). Page "
                 "figures: against the closed snapshots before and after it, interpolated to "
                 "its place in the sequence (the script's shell grows by a few kB with each "
                 "snapshot). Every figure is the median over the cycles. Slab objects: the sum over the "
                 "caches of active_objs x objsize; vmalloc: VmallocUsed; free: MemFree plus "
                 "the pages on the per-CPU free lists (zoneinfo count:, which MemFree leaves "
                 "out; one CPU, no per-CPU counter drift); user: AnonPages + PageTables + "
                 "KernelStack (the script's processes); kernel: drop of free - user; pages: "
                 "kernel - Slab - VmallocUsed, i.e. whole pages such as a transmit or "
                 "receive buffer. Small figures are within a page or two of noise: compare "
                 "the slab and vmalloc columns first, they are exact.")
        L.append("")
        rows = []
        for tag, what in (("open", "opened"), ("traffic", "after a line in and out")):
            for f in (A, B):
                m = mem[f].get(tag)
                if not m:
                    continue
                caches = ", ".join(f"{n} {v:+,.0f}" for n, v in sorted(m["caches"].items())) or "-"
                rows.append((what, f, fmt(m["slab_object_bytes"]), caches, fmt(m["vmalloc_kb"]),
                             fmt(m["vmap_areas"]), fmt(m["slab_pages_kb"]), fmt(m["other_pages_kb"]),
                             fmt(m["kernel_kb"]), fmt(m["user_kb"])))
        L.append(md_table(["port", "flavour", "slab objects, bytes", "per cache, bytes",
                           "VmallocUsed, kB", "vmalloc areas", "Slab pages, kB", "pages, kB",
                           "kernel, kB", "user, kB"], rows))
        L.append("")
        for f in (A, B):
            d = mem[f]["closed_drift"]
            c = mem[f]["closed"]
            L.append(f"- {f}: with the port closed free {fmt(c['MemFree_kb'])} kB, Slab "
                     f"{fmt(c['Slab_kb'])} kB, slab objects {fmt(c['slab_object_bytes'])} bytes, "
                     f"VmallocUsed {fmt(c['VmallocUsed_kb'])} kB; drift of the closed snapshots "
                     f"from the first to the last cycle: free {d['memfree_kb']:+,} kB, slab objects "
                     f"{d['slab_object_bytes']:+,} bytes; line read back: {'yes' if mem[f]['line_in_ok'] else 'NO'}.")
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
        L.append("- canonical read: `stty sane -echo; head -n 200 | md5sum`; 200 lines of 59 bytes "
                 "written at once; time from the first byte to the md5 line.")
        L.append("")
        rows = []
        for k, what in (("boot_s", "boot, s"), ("h2g_s", "host to guest, s"),
                        ("g2h_s", "guest to host, s"), ("canon_s", "200-line canonical read, s")):
            for f in (A, B):
                rows.append((what, f, f"{sp[f][k]:.3f}", " ".join(f"{x:.3f}" for x in sp[f][k + "_all"])))
        L.append(md_table(["figure", "flavour", "median", "every run"], rows))
        L.append("")
        rows = []
        for f in (A, B):
            rows.append((f, f"{sp[f]['echo_rtt_ms']:.3f}", f"{sp[f]['echo_rtt_p10_ms']:.3f}",
                         f"{sp[f]['echo_rtt_p90_ms']:.3f}",
                         f"{n / 1024 / sp[f]['h2g_s']:.1f}", f"{n / 1024 / sp[f]['g2h_s']:.1f}",
                         str(sp[f]["h2g_lost"]), str(sp[f]["g2h_lost"]),
                         "yes" if sp[f]["md5_ok"] else "NO"))
        L.append(md_table(["flavour", "echo ms (median)", "p10", "p90", "h2g KiB/s", "g2h KiB/s",
                           "h2g bytes lost", "g2h bytes lost", "checksums right"], rows))
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
    L.append("python3 tests/bench/bench.py ...     # the guests, through lib/py/minitty/guest.py")
    L.append("```")
    L.append("")
    if res.get("reanalysed"):
        L.append(f"The derived figures were computed again from the raw ones in results.json "
                 f"(`python3 tests/bench/bench.py --out DIR --reanalyse`) on {res['reanalysed']}.")
    L.append("Raw figures: results.json (every run, every snapshot). Serial logs: sandbox/logs/serial-*.log.")
    with open(os.path.join(out, "report.md"), "w") as f:
        f.write("\n".join(L) + "\n")


def write_outputs(res, out):
    with open(os.path.join(out, "bloat-o-meter.txt"), "w") as f:
        f.write(res["sizes"]["bloat_o_meter"]["output"])
    with open(os.path.join(out, "sizes.svg"), "w") as f:
        f.write(svgchart.size_chart({fl: res["sizes"][fl] for fl in (A, B)},
                                    f"TTY/serial layer objects, bytes ({CROSS}size)"))
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
    if res.get("memory_raw") and all(f in res["memory_raw"] for f in (A, B)):
        res["memory"] = {f: mem_analysis(res["memory_raw"][f]) for f in (A, B)}
    if res.get("speed_runs"):
        res["speed"] = speed_summary(res["speed_runs"])
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
    keys = 50 if quick else 200
    cycles = 2 if quick else 5
    res = {"quick": quick, "cmdline": args.cmdline, "runs": runs, "transfer_bytes": n,
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
    speed_runs = []
    for i in range(runs):
        for f in (A, B):
            log(f"speed: run {i + 1}/{runs} {f}")
            try:
                r = gb.speed_run(f, data, lines, keys, host_copy=host_copy)
            except gb.GuestError as e:
                problems.append(f"speed run {i + 1} of {f}: {e}")
                continue
            speed_runs.append(r)
            for k in ("h2g", "g2h"):
                if r[k]["bytes_lost"] or not r[k]["md5_ok"]:
                    problems.append(f"{f} run {i + 1}: {k} lost {r[k]['bytes_lost']} bytes, "
                                    f"checksum {'right' if r[k]['md5_ok'] else 'WRONG'}")
            if r["g2h"].get("md5_matches_host_copy") is False:
                problems.append(f"{f} run {i + 1}: g2h data differs from the host's copy of {gb.G2H_FILE}")
            if not r["canon"]["md5_ok"]:
                problems.append(f"{f} run {i + 1}: the 200 lines arrived wrong")
            if r["kernel_problems"]:
                problems.append(f"{f} run {i + 1}: kernel problems in {r['serial_log']}")
            log(f"  boot {r['boot_s']:.2f} s, h2g {r['h2g']['seconds']:.2f} s "
                f"(lost {r['h2g']['bytes_lost']}), g2h {r['g2h']['seconds']:.2f} s "
                f"(lost {r['g2h']['bytes_lost']}), echo {1000 * statistics.median(r['echo_rtt_s']):.2f} ms, "
                f"canon {r['canon']['seconds']:.2f} s")
    res["speed_runs"] = speed_runs
    have = {r["flavour"] for r in speed_runs}
    res["speed"] = speed_summary(speed_runs) if have == {A, B} else None

    log(f"memory: {MEM[A]} and {MEM[B]}, {cycles} open/close cycles each")
    res["memory"], res["memory_raw"] = {}, {}
    for f in (A, B):
        try:
            ensure_built(MEM[f])
            run = gb.memory_run(MEM[f], cycles)
            res["memory_raw"][f] = run
            res["memory"][f] = mem_analysis(run)
        except (gb.GuestError, subprocess.CalledProcessError, KeyError, IndexError,
                ValueError, statistics.StatisticsError) as e:
            problems.append(f"memory boot of {MEM[f]}: {type(e).__name__}: {e}")
            res["memory"] = None
            break
        if run["kernel_problems"]:
            problems.append(f"{MEM[f]}: kernel problems in {run['serial_log']}")
        if not res["memory"][f]["line_in_ok"]:
            problems.append(f"{MEM[f]}: the line sent to the open port was not read back")

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
