"""A gdb session on a live guest that the suite acts on meanwhile:
`bin/minitty debug` with the commands on stdin (MINITTY_RUN_DIR points it
at the suite's own guest), its output read as it comes.

    out, result = debug_session(g, commands, "Temporary breakpoint", act)

Once gdb prints a line that starts with the given prefix (gdb has set
what it needs), act() runs (sends input, runs a shell command) while gdb
goes on; then gdb is waited for. gdb ends with its commands (`bin/minitty
debug` detaches: the guest runs on). TIMEOUT only bounds a hung guest
or gdb."""

import os
import signal
import subprocess
import threading

from checks import MINITTY


def debug_session(guest, commands, armed_prefix, act, timeout):
    """(gdb's output and stderr, act()'s result: None when gdb ended before
    ARMED_PREFIX showed)."""
    p = subprocess.Popen([MINITTY, "debug"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, start_new_session=True,
                         env=dict(os.environ, MINITTY_RUN_DIR=guest.run_dir))
    p.stdin.write("".join(c + "\n" for c in commands).encode())
    p.stdin.close()
    out = []
    armed = threading.Event()

    def reader():
        for raw in p.stdout:
            line = raw.decode("utf-8", "replace")
            out.append(line)
            if line.startswith(armed_prefix):
                armed.set()
        armed.set()

    th = threading.Thread(target=reader, daemon=True)
    th.start()
    result = None
    try:
        if armed.wait(timeout) and p.poll() is None:
            result = act()
        p.wait(timeout)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        p.wait()
        out.append("(gdb killed after %d s)\n" % timeout)
    th.join(10)
    return "".join(out), result
