#!/usr/bin/python3
"""Regenerate (or, with --check, compare) the README's command reference
from bin/minitty's help text."""

import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BEGIN = "<!-- generated from bin/minitty's help text by `make readme`; do not edit -->"
END = "<!-- end of the command reference -->"


def minitty(*args):
    return subprocess.run([os.path.join(ROOT, "bin", "minitty"), *args],
                          stdout=subprocess.PIPE, check=True, text=True).stdout


def indent(text):
    return "\n".join("    " + l if l else "" for l in text.rstrip().splitlines())


def reference():
    out = ["", indent(minitty("help")), ""]
    for line in minitty("help").splitlines():
        if line.startswith("  ") and not line.startswith("   ") and line.split():
            cmd = line.split()[0]
            if cmd.startswith("-"):
                continue
            out.append(f"### {cmd}\n")
            out.append(indent(minitty(cmd, "--help")))
            out.append("")
    return "\n".join(out)


def main():
    path = os.path.join(ROOT, "README")
    text = open(path).read()
    head, rest = text.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    new = head + BEGIN + "\n" + reference() + "\n" + END + tail
    if "--check" in sys.argv:
        if new != text:
            print("README's command reference differs from the help text (run: make readme)")
            return 1
        return 0
    if new != text:
        open(path, "w").write(new)
    return 0


if __name__ == "__main__":
    sys.exit(main())
