#!/bin/sh
# PID 1 of the bench's memory boots (rdinit=/bench/meminit; appended to the
# normal initramfs by tests/bench/bench.py, which replaces @CYCLES@).
# Measures what the TTY layer allocates for an open port, with nothing else
# holding the port: snapshots of /proc/meminfo, /proc/slabinfo and
# /proc/vmallocinfo with ttyAMA0 closed, just opened, and after one line in
# and one line out; CYCLES times; then prints them on the port, framed by
# @@BENCH-BEGIN / @@BENCH-END, and powers off.
/bin/busybox --install -s
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev 2>/dev/null
# With CONFIG_TTY=y the kernel opened /dev/console (the same tty as
# ttyAMA0) as fd 0-2 of init: close it so that the port starts closed.
exec </dev/null >/dev/null 2>&1
cycles=@CYCLES@

# One snapshot on one line: the meminfo fields (kB), then per slab cache
# active_objs*objsize, the number of busy vmalloc areas and the pages on
# the per-CPU free lists.
snap() {
	awk -v tag="$1" '
	BEGIN { printf "%s", tag }
	FILENAME == "/proc/meminfo" { f = $1; sub(":", "", f); printf " %s=%s", f, $2; next }
	FILENAME == "/proc/slabinfo" { if (FNR > 2) printf " slab:%s=%d*%d", $1, $2, $4; next }
	FILENAME == "/proc/vmallocinfo" { v++; next }
	FILENAME == "/proc/zoneinfo" && $1 == "count:" { pcp += $2 }
	END { printf " vmap_areas=%d pcp_pages=%d\n", v, pcp }' $files
}
# /proc/slabinfo needs CONFIG_SLUB_DEBUG (configs/bench.config). The free
# pages on the per-CPU lists (/proc/zoneinfo, count:) are not in MemFree:
# the bench adds them, or a page allocation would often not show.
files=/proc/meminfo
for f in /proc/slabinfo /proc/vmallocinfo /proc/zoneinfo; do
	[ -r "$f" ] && files="$files $f"
done

sleep 1
R=
i=0
while [ "$i" -lt "$cycles" ]; do
	R="$R$(snap "closed $i")
"
	exec 3<>/dev/ttyAMA0
	sleep 1
	R="$R$(snap "open $i")
"
	# One line out, one line in (the host answers this marker).
	echo "@@BENCH-RX $i" >&3
	read -r -t 20 line <&3 || line=
	sleep 1
	R="$R$(snap "traffic $i") got=$line
"
	exec 3>&-
	# The last close frees the tty (CONFIG_TTY=y) from a work item.
	sleep 1
	i=$((i + 1))
done
R="$R$(snap "closed $i")
"
exec </dev/ttyAMA0 >/dev/ttyAMA0 2>&1
echo "@@BENCH-BEGIN"
printf '%s' "$R"
echo "@@BENCH-END"
sleep 1
poweroff -f
