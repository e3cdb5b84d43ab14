#!/usr/bin/python3
"""The measured parts of the cover letter (bin/minitty export).

The cover letter is the description of branch minitty. Regions of it
between a line <!-- minitty:NAME --> and a line <!-- /minitty:NAME -->
are generated: export replaces what is between the two lines with what
this script writes from the measurements, and leaves the rest of the
text and the marker lines as they are (so that patch, which reads the
cover letter back into the description, and the next export keep them).

    cover.py regions < DESCRIPTION        the region names, one a line
    cover.py fill DATA < DESCRIPTION      the description, regions filled

DATA is the directory export fills (lib/patch.sh, cover_data): size-F.txt
(bin/minitty size --flavour F), zimage-F (bytes), options.txt (bin/minitty
size --options), meta (KEY=VALUE lines); for the arches region, arches
(ARCH PORT FULL MINITTY lines), image-F and bloat-FULL-MINITTY. The scenarios and deviations
come from tests/diff, the runtime memory from sandbox/bench/results.json,
the stress figures from sandbox/stress/*/results.json, the checks
from the records of bin/minitty check --bisect and --randconfig
(sandbox/logs/check-*.result).
"""

import fnmatch
import json
import os
import re
import sys
import textwrap

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tests", "diff"))

import scenario  # noqa: E402

SANDBOX = os.environ.get("MINITTY_SANDBOX", os.path.join(ROOT, "sandbox"))
MARK_RE = re.compile(r"<!-- (/?)minitty:([a-z-]+) -->")
# The regions, each with the flavour builds it needs (export builds them).
REGIONS = {
    "headline": True,   # the layer before the series, and minitty's
    "sizes": True,      # the per-object tables and the options' costs
    "totals": True,     # totals, vmlinux and zImage of every flavour
    "memory": False,    # runtime memory per open port (bin/minitty bench)
    "tests": False,     # scenarios, deviations, the stress run
    "arches": True,     # the full layer and minitty on the other arches
    "checks": False,    # check --bisect and --randconfig on this series
}
WIDTH = 72


class CoverError(Exception):
    pass


def split(text):
    """TEXT as a list of ('text', lines) and ('region', name, lines)."""
    out, cur, name = [], [], None
    for n, line in enumerate(text.split("\n"), 1):
        m = MARK_RE.fullmatch(line.strip())
        if m is None:
            if line.strip().startswith("<!-- ") and "minitty:" in line:
                raise CoverError(f"line {n}: not a region marker: {line!r} "
                                 "(<!-- minitty:NAME --> or <!-- /minitty:NAME -->)")
            cur.append(line)
            continue
        closing, what = m.group(1), m.group(2)
        if what not in REGIONS:
            raise CoverError(f"line {n}: unknown region {what!r} "
                             f"(known: {', '.join(REGIONS)})")
        if not closing:
            if name is not None:
                raise CoverError(f"line {n}: region {what} opens inside region {name}")
            out.append(("text", cur))
            cur, name = [], what
        else:
            if name != what:
                raise CoverError(f"line {n}: <!-- /minitty:{what} --> closes no open region")
            out.append(("region", name, cur))
            cur, name = [], None
    if name is not None:
        raise CoverError(f"region {name} is not closed (<!-- /minitty:{name} -->)")
    out.append(("text", cur))
    return out


def n(x):
    return f"{x:,}"


def wrap(text):
    return textwrap.wrap(text, WIDTH, break_on_hyphens=False, break_long_words=False)


# --- measurements ---------------------------------------------------------
ROW_RE = re.compile(r"^\s*(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+([0-9a-f]+)\s+(.+?)\s*$")


def read(data, name):
    path = os.path.join(data, name)
    if not os.path.exists(path):
        raise CoverError(f"{name}: not measured (export fills {data})")
    with open(path) as f:
        return f.read()


def size_table(data, flavour):
    """bin/minitty size --flavour F: (object rows, totals row, vmlinux row),
    each row (text, data, bss, dec, hex, name)."""
    objs, totals, vml = [], None, None
    for line in read(data, f"size-{flavour}.txt").splitlines():
        m = ROW_RE.match(line)
        if not m:
            continue
        row = tuple(int(m.group(i)) for i in range(1, 5)) + (m.group(5), m.group(6))
        if row[5] == "(TOTALS)":
            totals = row
        elif row[5] == "vmlinux":
            vml = row
        else:
            objs.append(row)
    if totals is None and not objs:
        # notty: no object under drivers/tty (size says so)
        totals = (0, 0, 0, 0, "0", "(TOTALS)")
    if totals is None or vml is None:
        raise CoverError(f"size-{flavour}.txt: no TOTALS or vmlinux line")
    return objs, totals, vml


def fmt_table(objs, totals):
    lines = ["%5s%8s%8s%8s%8s %s" % ("text", "data", "bss", "dec", "hex", "filename")]
    for r in objs + [totals]:
        lines.append("%5d%8d%8d%8d%8s %s" % r)
    return lines


def meta(data):
    out = {}
    for line in read(data, "meta").splitlines():
        k, _, v = line.partition("=")
        out[k] = v
    return out


class Sizes:
    FLAVOURS = ("pristine", "fulltty", "minitty", "minitty-tiny", "notty")

    def __init__(self, data):
        self.data = data
        self.meta = meta(data)
        self.t = {f: size_table(data, f) for f in self.FLAVOURS}
        self.z = {f: int(read(data, f"zimage-{f}").strip()) for f in self.FLAVOURS}

    def layer(self, f):
        return self.t[f][1][3]

    def vmlinux(self, f):
        return self.t[f][2][3]

    def obj(self, f, name):
        for r in self.t[f][0]:
            if r[5].endswith("/" + name):
                return r[3]
        raise CoverError(f"{name} is not in the {f} size table")


def pct(a, b):
    return f"{round(100 * a / b)}%"


def r_headline(data):
    s = Sizes(data)
    return wrap(
        "On a tiny ARM kernel (Linux 6.12, tinyconfig with the virt machine's "
        "PL011 console, Thumb-2, -Os) the TTY layer and the serial core take "
        f"{n(s.layer('pristine'))} bytes before any UART driver; minitty, with "
        f"CONFIG_TTY=n, takes {n(s.layer('minitty'))} with every option "
        f"({pct(s.layer('minitty'), s.layer('pristine'))}) and "
        f"{n(s.layer('minitty-tiny'))} with none "
        f"({pct(s.layer('minitty-tiny'), s.layer('pristine'))}).")


def r_sizes(data):
    s = Sizes(data)
    m = s.meta
    out = wrap(
        f"Sizes ({m['size']}, gcc {m['gcc']}; every object under drivers/tty "
        "that vmlinux links, except the UART driver amba-pl011.o and "
        "earlycon.o; `minitty size` in the series' sandbox, run by `minitty "
        "export`):")
    out.append("")
    cost = s.layer("fulltty") - s.layer("pristine")
    out += wrap(
        f"CONFIG_TTY=y (the series applied; {n(s.layer('pristine'))} bytes "
        f"before it: the series' shared helpers "
        f"{'cost' if cost >= 0 else 'save'} the full layer {n(abs(cost))} "
        f"byte{'' if abs(cost) == 1 else 's'}):")
    out.append("")
    out += fmt_table(*s.t["fulltty"][:2])
    out.append("")
    out.append("CONFIG_TTY=n, CONFIG_MINITTY_SERIAL=y, every option on (the default):")
    out.append("")
    out += fmt_table(*s.t["minitty"][:2])
    out.append("")
    out.append("The same with every option off (EXPERT):")
    out.append("")
    out += fmt_table(*s.t["minitty-tiny"][:2])
    out.append("")
    out += wrap(
        "What each option adds to that, built with the options it needs "
        "(`minitty size --options`; TTY layer as above, vmlinux "
        "text+data+bss, and bloat-o-meter's total):")
    out.append("")
    rows = [line.rstrip() for line in read(data, "options.txt").splitlines()]
    head = [r for r in rows if r.startswith("option ")]
    body = [r for r in rows if r.startswith("MINITTY_")]
    if not head or not body:
        raise CoverError("options.txt: no table (bin/minitty size --options)")
    out += head[:1] + body
    return out


def r_totals(data):
    s = Sizes(data)
    ft, mt, ti = s.layer("fulltty"), s.layer("minitty"), s.layer("minitty-tiny")
    v = {f: s.vmlinux(f) for f in s.FLAVOURS}
    out = wrap(
        f"minitty_serial.o is {n(s.obj('minitty-tiny', 'minitty_serial.o'))} "
        f"bytes with every option off and "
        f"{n(s.obj('minitty', 'minitty_serial.o'))} with every option on. "
        f"All in, minitty takes {n(mt)} bytes with every option "
        f"({pct(mt, ft)} of the full layer, {n(ft - mt)} bytes less) and "
        f"{n(ti)} with none ({pct(ti, ft)}, {n(ft - ti)} less). The whole "
        "kernel (vmlinux text+data+bss) is "
        f"{n(v['fulltty'])} bytes with the full layer, {n(v['minitty'])} with "
        f"minitty, {n(v['minitty-tiny'])} with minitty and no option, and "
        f"{n(v['notty'])} with CONFIG_TTY=n and no serial at all: a PL011 "
        f"console costs {n(v['fulltty'] - v['notty'])} bytes with the full "
        f"layer, {n(v['minitty'] - v['notty'])} with minitty and "
        f"{n(v['minitty-tiny'] - v['notty'])} with minitty and no option. "
        f"zImage: {n(s.z['fulltty'])}, {n(s.z['minitty'])}, "
        f"{n(s.z['minitty-tiny'])} and {n(s.z['notty'])} bytes.")
    return out


def r_memory(data):
    path = os.path.join(SANDBOX, "bench", "results.json")
    res = None
    if os.path.exists(path):
        with open(path) as f:
            res = json.load(f)
    head = meta(data).get("head", "")
    mem = (res or {}).get("memory") or {}
    fl = sorted(mem)
    tree = ((res or {}).get("machine") or {}).get("tree_head", "")
    if res is None or len(fl) != 2 or not all("traffic" in mem[f] for f in fl):
        return wrap("Runtime memory per open port: not measured for this "
                    "version (`minitty bench` measures it; no report in "
                    "sandbox/bench).")
    if not head or not tree.startswith(head + " "):
        return wrap("Runtime memory per open port: not measured for this "
                    f"version (sandbox/bench/results.json is of {tree or 'another tree'}; "
                    "`minitty bench` measures it again).")
    full = [f for f in fl if "fulltty" in f][0]
    mini = [f for f in fl if f != full][0]
    a, b = mem[full]["traffic"], mem[mini]["traffic"]

    def kernel(m):
        if "kernel_bytes" in m:  # memsnap's exact count
            return f"{n(round(m['kernel_bytes']))} bytes"
        return f"{m['kernel_kb']:.0f} kB"
    run = (f"`minitty bench` of {res.get('started', '?')} on {tree.split()[0]}, load "
           f"average {res.get('load_start', '?')} at its start")
    text = (
        f"Runtime memory per open port ({run}; after one line in "
        "and one out, median over its open/close cycles): slab objects "
        f"{n(round(a['slab_object_bytes']))} bytes with the full layer, "
        f"{n(round(b['slab_object_bytes']))} with minitty; kernel memory "
        f"(slab objects, vmalloc and pages) {kernel(a)} and {kernel(b)}")
    other = res.get("memory_other") or {}
    if all("traffic" in (other.get(f) or {}) for f in (full, mini)):
        # the full layer keeps a console port's transmit page after the
        # last close, so only the other port compares like with like
        text += (" on the console port, which the full layer never shuts "
                 "down; on a port that is not the console, "
                 f"{kernel(other[full]['traffic'])} and "
                 f"{kernel(other[mini]['traffic'])}")
    return wrap(text + ".")


def r_tests(data):
    scens = scenario.load_all(os.path.join(ROOT, "tests", "diff", "scenarios"))
    names = [s.name for s in scens]
    devs = scenario.load_deviations(os.path.join(ROOT, "tests", "deviations"))

    def listed(flavour, own=False):
        return {nm for nm in names for d in scenario.deviations_for(flavour, devs)
                if fnmatch.fnmatchcase(nm, d.pattern) and not (own and d.flavours is None)}
    full, tiny = listed("minitty"), listed("minitty-tiny")
    # those of minitty-tiny's own section: what the options add
    added = listed("minitty-tiny", own=True)
    text = (
        f"The differential suite has {len(names)} scenarios "
        f"(tests/diff/scenarios); tests/deviations lists parts that differ "
        f"in {len(full)} of them for minitty with every option, in "
        f"{len(tiny)} for minitty-tiny ({len(added)} of them for what the "
        "options add), and in none for the full layer.")
    runs = []
    base = os.path.join(SANDBOX, "stress")
    for d in sorted(os.listdir(base)) if os.path.isdir(base) else []:
        p = os.path.join(base, d, "results.json")
        if not os.path.exists(p):
            continue
        with open(p) as f:
            r = json.load(f)
        if r.get("quick") or not r.get("passed") or "stress" not in r:
            continue
        runs.append(r)
    if not runs:
        text += (" No long stress run is reported here (`minitty stress` "
                 "writes one in sandbox/stress).")
    for r in runs:
        st = r["stress"]
        unb = r.get("unbind", {}).get("cycles", 0)
        tr = r.get("transfer", {}).get("bytes", 0)
        text += (
            f" A {st['seconds']:.0f} s stress run on {r['flavour']} "
            f"(sandbox/stress/{r['flavour']}) made {n(st['ops'])} calls, took "
            f"{st['flood_bytes'] / 1e6:.1f} MB of random input and {unb} port "
            f"removals, and lost nothing of {n(tr)} bytes.")
    return wrap(text)


def r_arches(data):
    """arches: lines ARCH PORT FULL MINITTY; size-F.txt and image-F of
    each flavour, bloat-FULL-MINITTY (bloat-o-meter's total)."""
    rows = [ln.split() for ln in read(data, "arches").splitlines() if ln.strip()]
    if not rows:
        return wrap("No arch but arm has a full-layer and a minitty flavour "
                    "(configs/flavours).")
    out = wrap(
        "The same on the other arches (`minitty size --flavour F`: the TTY "
        "layer without the UART driver and earlycon; vmlinux as "
        "scripts/bloat-o-meter counts it, since x86_64 pads its sections; "
        "the image QEMU boots; gcc "
        f"{meta(data).get('gcc', '?')}; the port: "
        + ", ".join(f"{r[1]} on {r[0]}" for r in rows) + "):")
    out += ["", "| arch | full layer | minitty | vmlinux | image: full | minitty |",
            "| --- | --- | --- | --- | --- | --- |"]
    for arch, port, full, mini in rows:
        ft, mt = size_table(data, full)[1][3], size_table(data, mini)[1][3]
        zf, zm = (int(read(data, f"image-{f}").strip()) for f in (full, mini))
        bloat = int(read(data, f"bloat-{full}-{mini}").strip())
        out.append(f"| {arch} | {n(ft)} | {n(mt)} ({pct(mt, ft)}) | "
                   f"{bloat:+,} | {n(zf)} | {n(zm)} |")
    return out


def check_result(name):
    """The last `minitty check --NAME` run's record (sandbox/logs/
    check-NAME.result, KEY=VALUE lines: lib/tools.sh, check_record), or
    None."""
    path = os.path.join(SANDBOX, "logs", f"check-{name}.result")
    if not os.path.exists(path):
        return None
    with open(path) as f:
        return dict(ln.rstrip("\n").partition("=")[::2] for ln in f if "=" in ln)


def r_checks(data):
    """checks: the last check --bisect and check --randconfig, when they
    ran on this series (the tree of its last commit)."""
    tree = meta(data).get("tree", "")

    def state(r):
        if r is None or r.get("tree") != tree:
            return "not run"
        return "passed" if r.get("passed") == "1" else "failed"

    b, r = check_result("bisect"), check_result("randconfig")
    if state(b) == "passed":
        text = (
            f"Each of the {b['commits']} patches builds with CONFIG_TTY=y and "
            "with CONFIG_TTY=n (minitty with every option once the series "
            "offers it), W=1 clean for the C files it touches and sparse "
            "clean for those the series adds, and passes checkpatch --strict "
            "and kernel-doc -Wall (a pure move is checked in the patch after "
            f"it): `minitty check --bisect`, {round(int(b['seconds']) / 60)} "
            f"minutes on {b['cores']} cores.")
    else:
        text = ("`minitty check --bisect` (each patch built in both layers, "
                "W=1, sparse, checkpatch --strict, kernel-doc -Wall) "
                + ("has not been run on this version of the series."
                   if state(b) == "not run" else
                   "did not pass, or did not finish, on this version of the series "
                   "(sandbox/logs/bisect-*.log)."))
    if state(r) == "passed":
        seed, k = int(r["seed"]), int(r["configs"])
        text += (
            f" {k} random configurations of the serial area (x86_64, "
            "CONFIG_TTY=n with minitty; every bool and tristate of "
            "drivers/tty/serial and its 8250 at random, with modules, "
            f"COMPILE_TEST and a random PCI, OF and GPIOLIB; seeds {seed} "
            f"to {seed + k - 1}) configure, build and link: `minitty check "
            "--randconfig`.")
    else:
        text += (" `minitty check --randconfig` (random configurations of "
                 "the serial area with minitty, built and linked) "
                 + ("has not been run on this version."
                    if state(r) == "not run" else
                    "did not pass, or did not finish, on this version "
                    "(sandbox/logs/randconfig-*.log)."))
    return wrap(text)


RENDER = {"headline": r_headline, "sizes": r_sizes, "totals": r_totals,
          "memory": r_memory, "tests": r_tests, "arches": r_arches,
          "checks": r_checks}


def main(argv):
    text = sys.stdin.read()
    try:
        parts = split(text)
        if argv[:1] == ["regions"]:
            for p in parts:
                if p[0] == "region":
                    print(p[1], "build" if REGIONS[p[1]] else "")
            return 0
        if len(argv) != 2 or argv[0] != "fill":
            print("usage: cover.py regions | cover.py fill DATA", file=sys.stderr)
            return 2
        out = []
        for p in parts:
            if p[0] == "text":
                out += p[1]
            else:
                out.append(f"<!-- minitty:{p[1]} -->")
                out += [line.rstrip() for line in RENDER[p[1]](argv[1])]
                out.append(f"<!-- /minitty:{p[1]} -->")
        sys.stdout.write("\n".join(out))
    except (CoverError, scenario.ScenarioError, KeyError, ValueError, OSError) as e:
        print(f"minitty: export: cover letter: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
