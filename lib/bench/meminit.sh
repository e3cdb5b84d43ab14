#!/bin/sh
# PID 1 of the bench's memory boots (rdinit=/bench/meminit; appended to the
# normal initramfs by lib/bench/guestbench.py bench_root(), which
# replaces @CYCLES@ and compiles lib/bench/memsnap.c as /bench/memsnap).
# Mounts what memsnap reads, closes the console and hands PID 1 over to
# memsnap, which takes the snapshots of /proc with ttyAMA0 closed, open,
# and after one line in and out, prints them on the port and powers off:
# one process that forks nothing, so that the page counts are exact (see
# memsnap.c).
# No set -e: PID 1 must not exit (a panic); memsnap reports what fails.
set -u
/bin/busybox --install -s
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev 2>/dev/null || true
# With CONFIG_TTY=y the kernel opened /dev/console (the same tty as
# ttyAMA0) as fd 0-2 of init: close it so that the port starts closed.
exec </dev/null >/dev/null 2>&1
exec /bench/memsnap @CYCLES@
