#!/usr/bin/python3
"""Checks of the differential suite's own verdicts (run.py's compare()), on
made-up results: a listed part waives only itself, an unlisted difference
FAILs, a listed part that no longer differs FAILs, and minitty must meet
the scenario's expectations. Prints PASS/FAIL lines (tests/suites/diff)."""

import os
import sys

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
for name, a, b, parts, expect, want in CASES:
    ok, _, details = run.compare(sc(expect), a, b, dev(parts) if parts else None,
                                 "pristine", "minitty")
    good = ok == want
    failed += not good
    print("%s diff-selftest:%s" % ("PASS" if good else "FAIL", name))
    if not good:
        print("    verdict %s, want %s" % (ok, want))
        for d in details:
            print("    " + d)
sys.exit(1 if failed else 0)
