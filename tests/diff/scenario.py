"""Scenario files of the differential suite (tests/diff/scenarios/*.scn).

A file holds any number of scenarios.  Lines:

    # comment                          (blank lines are ignored too)
    scenario NAME                      starts a scenario; names are unique
    desc TEXT                          what it checks (shown on FAIL)
    prog OPS                           the mtt program (tests/guest/mtt.c);
                                       several prog lines are joined by "; "
    send [sN] DELAY_MS DATA [chunk=BYTES/MS]
                                       after sync marker N (default: the
                                       sync of the previous send, or 1) has
                                       been seen and DELAY_MS after the
                                       previous send (or the marker), send
                                       DATA, optionally in chunks
    timeout SECONDS                    how long to wait for the report after
                                       the first sync (default 35: mtt's watchdog
                                       ends a stuck program after 30)
    expect-report-has "TEXT"           the fulltty report contains TEXT;
                                       {input_fnv} and {input_len} stand for
                                       the fnv1a32 (%08x) and length of all
                                       the bytes the host sent; the line of
                                       an op that waits ends with its input
                                       point, after=sendK: it returned once
                                       the first K send lines' bytes (in
                                       file order, from 1) had begun to come
    expect-report-re REGEX             the fulltty report matches REGEX
                                       (Python re, multiline, rest of line)
    expect-stream DATA                 the fulltty stream equals DATA
    expect-stream-has DATA             the fulltty stream contains DATA
    allow-watchdog                     a watchdog abort is not malformed

DATA is a "quoted string" with C escapes (\\n \\r \\t \\e \\b \\a \\f \\v
\\0 \\\\ \\" \\xHH), gen:N:SEED (N bytes of mtt's xorshift32 generator),
seq:N (N bytes i & 255), or rep:N:"STRING" (STRING N times).  A send
of `break` sends a break instead of bytes (QMP chardev-send-break: the
pty cannot carry one); the UART receives it as a \\0 flagged as a break,
one byte of the input point's count.  The expectations are checked on the oracle
(fulltty) only: they check the scenario and the tooling, the comparison
with minitty is byte for byte.
"""

import os
import re

MARK_SYNC = b"@@MTT-SYNC%d@@"


class ScenarioError(Exception):
    pass


def unescape(s, where):
    out = bytearray()
    i = 0
    simple = {"n": 10, "r": 13, "t": 9, "e": 27, "b": 8, "a": 7, "f": 12,
              "v": 11, "0": 0, "\\": 92, '"': 34}
    while i < len(s):
        c = s[i]
        if c == "\\":
            i += 1
            if i >= len(s):
                raise ScenarioError("%s: trailing backslash" % where)
            c = s[i]
            if c == "x":
                try:
                    out.append(int(s[i + 1:i + 3], 16))
                except ValueError:
                    raise ScenarioError("%s: bad \\x escape" % where)
                i += 3
                continue
            if c not in simple:
                raise ScenarioError("%s: unknown escape \\%s" % (where, c))
            out.append(simple[c])
            i += 1
            continue
        out += c.encode("utf-8")
        i += 1
    return bytes(out)


def xorshift_bytes(n, seed):
    x = seed or 1
    out = bytearray(n)
    for i in range(n):
        x ^= (x << 13) & 0xffffffff
        x ^= x >> 17
        x ^= (x << 5) & 0xffffffff
        out[i] = x >> 24
    return bytes(out)


def fnv1a(data):
    h = 2166136261
    for b in data:
        h ^= b
        h = (h * 16777619) & 0xffffffff
    return h


def parse_data(word, where):
    if word.startswith('"'):
        if len(word) < 2 or not word.endswith('"'):
            raise ScenarioError("%s: unterminated string" % where)
        return unescape(word[1:-1], where)
    m = re.fullmatch(r"gen:(\d+):(\d+)", word)
    if m:
        return xorshift_bytes(int(m.group(1)), int(m.group(2)))
    m = re.fullmatch(r'rep:(\d+):(".*")', word)
    if m:
        return parse_data(m.group(2), where) * int(m.group(1))
    m = re.fullmatch(r"seq:(\d+)", word)
    if m:
        return bytes(i & 255 for i in range(int(m.group(1))))
    raise ScenarioError("%s: bad data %r" % (where, word))


def split_quoted(rest):
    """Split REST into words, keeping "quoted strings" (with \\") whole."""
    words, i = [], 0
    while i < len(rest):
        if rest[i].isspace():
            i += 1
            continue
        j = i
        if rest[i] == '"':
            j += 1
            while j < len(rest) and rest[j] != '"':
                j += 2 if rest[j] == "\\" else 1
            j += 1
        else:
            while j < len(rest) and not rest[j].isspace():
                j += 1
        words.append(rest[i:j])
        i = j
    return words


class Step:
    def __init__(self, sync, delay_ms, data, chunk, chunk_ms, brk=False):
        self.sync, self.delay_ms, self.data = sync, delay_ms, data
        self.chunk, self.chunk_ms = chunk, chunk_ms
        self.brk = brk          # a break: data is the \0 the UART receives


class Scenario:
    def __init__(self, name, where):
        self.name, self.where = name, where
        self.desc = ""
        self.prog = []
        self.steps = []
        self.timeout = 35.0     # more than mtt's 30 s watchdog
        self.expect = []        # (kind, value)
        self.allow_watchdog = False

    @property
    def program(self):
        return "; ".join(self.prog)

    def input_bytes(self):
        return b"".join(s.data for s in self.steps)


def parse_file(path):
    scens = []
    cur = None
    with open(path, encoding="utf-8") as f:
        for lineno, raw in enumerate(f, 1):
            where = "%s:%d" % (os.path.basename(path), lineno)
            line = raw.rstrip("\n")
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            key, _, rest = line.strip().partition(" ")
            rest = rest.strip()
            if key == "scenario":
                if not re.fullmatch(r"[a-z0-9][a-z0-9._-]*", rest):
                    raise ScenarioError("%s: bad scenario name %r" % (where, rest))
                cur = Scenario(rest, where)
                scens.append(cur)
                continue
            if cur is None:
                raise ScenarioError("%s: %s before any scenario" % (where, key))
            if key == "desc":
                cur.desc = (cur.desc + " " + rest).strip()
            elif key == "prog":
                cur.prog.append(rest)
            elif key == "send":
                w = split_quoted(rest)
                sync = cur.steps[-1].sync if cur.steps else 1
                if w and re.fullmatch(r"s\d+", w[0]):
                    sync = int(w[0][1:])
                    w = w[1:]
                chunk, chunk_ms = 0, 0
                if w and w[-1].startswith("chunk="):
                    m = re.fullmatch(r"chunk=(\d+)/(\d+)", w[-1])
                    if not m:
                        raise ScenarioError("%s: bad chunk=" % where)
                    chunk, chunk_ms = int(m.group(1)), int(m.group(2))
                    w = w[:-1]
                if len(w) != 2 or not w[0].isdigit():
                    raise ScenarioError("%s: send [sN] DELAY_MS DATA [chunk=B/MS]" % where)
                if w[1] == "break":
                    if chunk:
                        raise ScenarioError("%s: a break has no chunks" % where)
                    cur.steps.append(Step(sync, int(w[0]), b"\0", 0, 0, brk=True))
                    continue
                data = parse_data(w[1], where)
                if not data:
                    raise ScenarioError("%s: send of no bytes" % where)
                cur.steps.append(Step(sync, int(w[0]), data, chunk, chunk_ms))
            elif key == "timeout":
                cur.timeout = float(rest)
            elif key in ("expect-report-has", "expect-stream", "expect-stream-has"):
                w = split_quoted(rest)
                if len(w) != 1:
                    raise ScenarioError("%s: %s takes one DATA" % (where, key))
                if key == "expect-report-has":
                    if not w[0].startswith('"'):
                        raise ScenarioError("%s: %s takes a string" % (where, key))
                    cur.expect.append((key, unescape(w[0][1:-1], where).decode("latin-1")))
                else:
                    cur.expect.append((key, parse_data(w[0], where)))
            elif key == "expect-report-re":
                try:
                    re.compile(rest, re.M)
                except re.error as e:
                    raise ScenarioError("%s: bad regex: %s" % (where, e))
                cur.expect.append((key, rest))
            elif key == "allow-watchdog":
                cur.allow_watchdog = True
            else:
                raise ScenarioError("%s: unknown key %r" % (where, key))
    for s in scens:
        if not s.prog:
            raise ScenarioError("%s: scenario %s has no prog" % (s.where, s.name))
        if s.steps and "sync" not in s.program:
            raise ScenarioError("%s: scenario %s sends input but never syncs"
                                % (s.where, s.name))
    return scens


def load_all(directory):
    scens, seen = [], {}
    for fn in sorted(os.listdir(directory)):
        if fn.endswith(".scn"):
            for s in parse_file(os.path.join(directory, fn)):
                if s.name in seen:
                    raise ScenarioError("%s: scenario %s already defined at %s"
                                        % (s.where, s.name, seen[s.name]))
                seen[s.name] = s.where
                scens.append(s)
    return scens


# What a deviation entry may name: the report line of op N, the signal
# counts of the report's end line, the whole stream, or the stream segment
# that follows sync marker N (s1: from the first marker to the second).
PART_RE = re.compile(r"op\d+|sigs|stream|stream:s\d+")


class Deviation:
    def __init__(self, pattern, parts, reason, where, flavours=None):
        self.pattern, self.parts, self.reason, self.where = \
            pattern, parts, reason, where
        # None: every minitty flavour; else the set of flavours the
        # entry's section names
        self.flavours = flavours

    def applies_to(self, flavour):
        return self.flavours is None or flavour in self.flavours


# A section header of tests/deviations: [FLAVOUR] or [FLAVOUR,FLAVOUR..].
SECTION_RE = re.compile(r"\[([^\]]*)\]")
MINITTY_FLAVOUR_RE = re.compile(r"minitty[a-z0-9-]*(\+compat)?")


def load_deviations(path, known=None):
    """tests/deviations: 'NAME PARTS REASON' per line, '#' comments.  NAME
    is a scenario name or a shell glob; PARTS a comma-separated list of
    what may differ (PART_RE).  Entries before any section header apply to
    every minitty flavour; a line [FLAVOUR] (or [F1,F2]) starts a section
    whose entries apply to those flavours only.  KNOWN, when given, is the
    set of flavour names a section may name.  Returns a list of
    Deviation."""
    devs = []
    if not os.path.exists(path):
        return devs
    section = None
    with open(path, encoding="utf-8") as f:
        for lineno, line in enumerate(f, 1):
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            where = "deviations:%d" % lineno
            m = SECTION_RE.fullmatch(line)
            if m:
                names = [n.strip() for n in m.group(1).split(",")]
                bad = [n for n in names if not MINITTY_FLAVOUR_RE.fullmatch(n)]
                if bad:
                    raise ScenarioError("%s: %s: a section names minitty "
                                        "flavours (minitty...), comma-separated"
                                        % (where, ",".join(bad) or "[]"))
                unknown = [n for n in names if known is not None and n not in known]
                if unknown:
                    raise ScenarioError("%s: %s is not a flavour of configs/flavours"
                                        % (where, ",".join(unknown)))
                section = set(names)
                continue
            if line.startswith("["):
                raise ScenarioError("%s: want a section header [FLAVOUR,..]" % where)
            w = line.split(None, 2)
            if len(w) < 3:
                raise ScenarioError("%s: want 'NAME PARTS REASON'" % where)
            parts = w[1].split(",")
            bad = [p for p in parts if not PART_RE.fullmatch(p)]
            if bad:
                raise ScenarioError("%s: %s is not a part (opN, sigs, stream, "
                                    "stream:sN)" % (where, ",".join(bad)))
            if section is not None:
                where += " [%s]" % ",".join(sorted(section))
            devs.append(Deviation(w[0], set(parts), w[2], where, section))
    return devs


def deviations_for(flavour, devs):
    """The entries that apply to FLAVOUR, those of its sections first (an
    entry of a flavour's section overrides an all-flavour entry of the same
    scenario)."""
    own = [d for d in devs if d.flavours is not None and flavour in d.flavours]
    return own + [d for d in devs if d.flavours is None]
