"""PASS/FAIL reporting for the suites (docs/layout.md, Tests).

    from checks import Suite
    t = Suite()
    with t.check("name"):
        assert something, "what went wrong"
    sys.exit(t.done())
"""

import contextlib
import os
import subprocess
import sys
import traceback

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MINITTY = os.path.join(ROOT, "bin", "minitty")


def flavours():
    """The flavours to test: $MINITTY_FLAVOURS (set by tests/run)."""
    env = os.environ.get("MINITTY_FLAVOURS")
    if env is None:
        env = subprocess.run([MINITTY, "flavours", "--buildable", "--shell"],
                             stdout=subprocess.PIPE, text=True).stdout
    return env.split()


def minitty(*args, env=None, input=None, timeout=900):
    """Run bin/minitty ARGS; return the CompletedProcess (text)."""
    e = dict(os.environ)
    e.update(env or {})
    return subprocess.run([MINITTY, *args], stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True, env=e,
                          input=input, timeout=timeout,
                          stdin=None if input is not None else subprocess.DEVNULL)


class Suite:
    def __init__(self):
        self.failed = 0
        self.passed = 0

    @contextlib.contextmanager
    def check(self, name):
        """One check: PASS when the block ends, FAIL (with details on
        indented lines) when it raises."""
        try:
            yield
        except Exception as e:  # noqa: BLE001 - every failure is a FAIL
            self.failed += 1
            print(f"FAIL {name}")
            detail = str(e) if isinstance(e, AssertionError) and str(e) \
                else traceback.format_exc()
            for line in detail.rstrip().splitlines():
                print(f"    {line}")
        else:
            self.passed += 1
            print(f"PASS {name}")
        sys.stdout.flush()

    def done(self):
        return 1 if self.failed else 0
