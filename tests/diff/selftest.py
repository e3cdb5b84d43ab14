#!/usr/bin/python3
"""Checks of the differential suite's own verdicts (run.py's compare()), on
made-up results: a listed part waives only itself, an unlisted difference
FAILs, a listed part that no longer differs FAILs, and minitty must meet
the scenario's expectations; a call that completes at another point of the
input differs; the [FLAVOUR] sections of tests/deviations apply to their
flavours only. Prints PASS/FAIL lines (tests/suites/diff)."""

import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import run  # noqa: E402
import scenario as scn  # noqa: E402

REP = "mtt 1\n1 cfg std: r=0\n2 read 10: r=2 d=\"ab\"\n3 ioctl TIOCGPGRP: r=0\nend sigs=none\n"
STREAM = b"ab\r\n@@MTT-SYNC2@@cd\r\n"


def result(report=REP, stream=STREAM, status="ok"):
    return {"status": status, "report": report, "stream": stream}


def sc(expect=()):
    s = scn.Scenario("made-up", "selftest")
    s.prog = ["cfg std; read 10; ioctl TIOCGPGRP"]
    s.expect = list(expect)
    return s


def dev(parts):
    return scn.Deviation("made-up", set(parts.split(",")), "a reason", "deviations:1")


CASES = [
    # name, oracle, other, deviation parts (or None), expectations, verdict
    ("equal", result(), result(), None, (), True),
    ("unlisted-op-differs", result(),
     result(REP.replace("3 ioctl TIOCGPGRP: r=0", "3 ioctl TIOCGPGRP: e=ENOTTY")),
     None, (), False),
    ("listed-op-differs", result(),
     result(REP.replace("3 ioctl TIOCGPGRP: r=0", "3 ioctl TIOCGPGRP: e=ENOTTY")),
     "op3", (), True),
    ("listed-op-and-another-differs", result(),
     result(REP.replace("r=0\nend", "e=ENOTTY\nend").replace("r=2 d=\"ab\"", "r=1 d=\"a\"")),
     "op3", (), False),
    ("listed-op-no-longer-differs", result(), result(), "op3", (), False),
    ("listed-segment-differs", result(), result(stream=b"ab\r\n@@MTT-SYNC2@@c\r\n"),
     "stream:s2", (), True),
    ("other-segment-differs", result(), result(stream=b"a\r\n@@MTT-SYNC2@@cd\r\n"),
     "stream:s2", (), False),
    ("whole-stream-listed", result(), result(stream=b"x"), "stream", (), True),
    ("status-differs-even-if-listed", result(), result(status="timeout"), "op3", (), False),
    ("expectation-met-with-an-op-listed", result(),
     result(REP.replace("3 ioctl TIOCGPGRP: r=0", "3 ioctl TIOCGPGRP: e=ENOTTY")),
     "op3", [("expect-stream-has", b"cd")], True),
    ("expectation-not-met-by-minitty", result(), result(), None,
     [("expect-stream-has", b"!")], False),
]

failed = 0


def verdict(name, good, details):
    global failed
    failed += not good
    print("%s diff-selftest:%s" % ("PASS" if good else "FAIL", name))
    if not good:
        for d in details:
            print("    " + d)


for name, a, b, parts, expect, want in CASES:
    ok, _, details = run.compare(sc(expect), a, b, dev(parts) if parts else None,
                                 "pristine", "minitty")
    verdict(name, ok == want, ["verdict %s, want %s" % (ok, want)] + details)


# ---- input points: when a call completed, relative to the host's sends -----

STEPS = [scn.Step(1, 100, b"ab\r", 0, 0), scn.Step(1, 300, b"cd", 0, 0),
         scn.Step(2, 300, b"\r", 0, 0)]
for n, want in [("0", "after=send0"), ("2", "after=send1"), ("3", "after=send1"),
                ("4", "after=send2"), ("5", "after=send2"), ("6", "after=send3"),
                ("8", "after=send3+2"), ("?", "after=?")]:
    got = run.input_point(n, STEPS)
    verdict("input-point-%s" % n.replace("?", "unknown"), got == want,
            ["@in=%s gave %s, want %s" % (n, got, want)])
# The last step partly in when mtt counts (6 of its 7 bytes): it has
# begun, and no byte came after it (input-igncr once read "send1+-1").
got = run.input_point("6", [scn.Step(1, 100, b"a\r\rb\nc\n", 0, 0)])
verdict("input-point-inside-the-last-step", got == "after=send1",
        ["@in=6 of a 7-byte step gave %s, want after=send1" % got])

# A read that returns the same bytes but at another point of the input (a
# VMIN/VTIME read that wakes early or late) is a difference of its op.
TIMED = "mtt 1\n1 cfg std: r=0\n2 sync: 1\n3 read 10: r=3 d=\"ab\\n\" @in=%d\nend sigs=none\n"
on_time = run.input_points(TIMED % 3, STEPS)
late = run.input_points(TIMED % 5, STEPS)
verdict("input-points-in-the-report", "r=3 d=\"ab\\n\" after=send1\n" in on_time
        and "after=send2" in late, [on_time, late])
for name, other, parts, want in [
        ("wakeup-on-time", on_time, None, True),
        ("wakeup-late-differs", late, None, False),
        ("wakeup-late-listed", late, "op3", True),
        ("wakeup-early-differs", run.input_points(TIMED % 0, STEPS), None, False)]:
    ok, _, details = run.compare(sc(), result(on_time), result(other),
                                 dev(parts) if parts else None, "pristine", "minitty")
    verdict(name, ok == want, ["verdict %s, want %s" % (ok, want)] + details)


# ---- per-flavour sections of tests/deviations ------------------------------

SECTIONS = """# a comment
made-up     op2  for every minitty flavour
[minitty-tiny]
made-up     op3  the tiny flavour only
gone        op1  names no scenario
[minitty-tiny, minitty-debug]
both-*      sigs two flavours
"""
KNOWN = {"minitty", "minitty-tiny", "minitty-debug", "fulltty", "pristine"}


def load(text, known=KNOWN):
    with tempfile.NamedTemporaryFile("w", suffix=".deviations", delete=False) as f:
        f.write(text)
    try:
        return scn.load_deviations(f.name, known)
    finally:
        os.unlink(f.name)


def parse_error(text, known=KNOWN):
    """The ScenarioError text loading TEXT gives, or None."""
    try:
        load(text, known)
    except scn.ScenarioError as e:
        return str(e)
    return None


devs = load(SECTIONS)
got = {fl: [(d.pattern, sorted(d.parts)) for d in scn.deviations_for(fl, devs)]
       for fl in ("minitty", "minitty-tiny", "minitty-debug")}
want = {"minitty": [("made-up", ["op2"])],
        "minitty-tiny": [("made-up", ["op3"]), ("gone", ["op1"]),
                         ("both-*", ["sigs"]), ("made-up", ["op2"])],
        "minitty-debug": [("both-*", ["sigs"]), ("made-up", ["op2"])]}
verdict("sections-parsed", got == want, ["got %s" % got, "want %s" % want])

for name, text, known, frag in [
        ("section-not-minitty", "[fulltty]\n", KNOWN, "fulltty: a section names minitty"),
        ("section-unknown-flavour", "[minitty-nosuch]\n", KNOWN,
         "minitty-nosuch is not a flavour"),
        ("section-empty", "[]\n", KNOWN, "a section names minitty"),
        ("section-unclosed", "[minitty-tiny\n", KNOWN, "want a section header"),
        ("section-any-name-without-known", "[minitty-new]\nx op1 r\n", None, None),
        # a 32-bit run's flavour (run.py --compat): F+compat, known when
        # F's arch has a compat arch (run.known_flavours())
        ("section-compat-flavour", "[minitty-arm64+compat]\nx op1 r\n",
         run.known_flavours(), None),
        ("section-compat-of-an-arch-without", "[minitty+compat]\nx op1 r\n",
         run.known_flavours(), "minitty+compat is not a flavour"),
        ("section-other-suffix", "[minitty-arm64+tiny]\nx op1 r\n", None,
         "a section names minitty")]:
    e = parse_error(text, known)
    good = e is None if frag is None else (e is not None and frag in e)
    verdict(name, good, ["error %r, want one with %r" % (e, frag)])

# The verdicts per flavour: an entry of a section waives (and must still
# differ) on its flavours only.
OP3 = REP.replace("3 ioctl TIOCGPGRP: r=0", "3 ioctl TIOCGPGRP: e=ENOTTY")
OP2 = REP.replace("r=2 d=\"ab\"", "r=1 d=\"a\"")
for name, other, flavour, want in [
        ("section-entry-not-on-other-flavours", OP3, "minitty", False),
        # (the all-flavour entry's op2 does not differ: not stale there)
        ("section-entry-overrides-the-all-flavour-one", OP3, "minitty-tiny", True),
        ("all-flavour-entry-on-minitty", OP2, "minitty", True),
        ("all-flavour-entry-shadowed-on-tiny", OP2, "minitty-tiny", False),
        ("section-entry-stale-on-its-flavour", REP, "minitty-tiny", False),
        ("all-flavour-entry-stale", REP, "minitty", False),
        ("all-flavour-entry-on-another-section-flavour", OP2, "minitty-debug", True)]:
    d = run.deviation_for("made-up", scn.deviations_for(flavour, devs))
    ok, _, details = run.compare(sc(), result(), result(other), d, "pristine", flavour)
    verdict(name, ok == want, ["%s: verdict %s, want %s" % (flavour, ok, want)] + details)

# "names no scenario" per flavour, with the flavour in the check's name
for flavour, want in [("minitty", []),
                      ("minitty-tiny", ["FAIL diff-deviation-minitty-tiny:gone"]),
                      ("minitty-debug", [])]:
    lines = []

    def check(ok, name, details=()):
        lines.append("%s %s" % ("PASS" if ok else "FAIL", name))

    res = {"boot": "ok", "scenarios": {"made-up": result(), "both-x": result()}}
    both = scn.Scenario("both-x", "selftest")
    both.prog = ["get"]
    run.compare_flavour(check, [sc(), both], scn.deviations_for(flavour, devs),
                        "pristine", res, flavour, res, None, True)
    fails = [x for x in lines if x.startswith("FAIL diff-deviation")]
    verdict("names-no-scenario-%s" % flavour, fails == want,
            ["got %s, want %s" % (fails, want)])

sys.exit(1 if failed else 0)
