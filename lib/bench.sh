# shellcheck shell=bash
# bench: size, memory and speed of minitty against the full TTY layer.

BENCH_PY=$MINITTY_ROOT/lib/bench/bench.py
# Built before the bench starts; bench.py builds bench-fulltty and
# bench-minitty (bin/minitty build) just before the memory boots.
BENCH_FLAVOURS=(fulltty minitty notty)

bench_options() {
	echo "quick|q||one run each, 128 KiB raw and 32 KiB ZMODEM transfers, 50 keystrokes (make test runs this)"
	echo "runs|r|N|alternating runs per flavour (default 5)"
	echo "out|o|DIR|report directory (default sandbox/bench; --quick: sandbox/bench/quick)"
	no_build_opt
}
bench_help() {
	cat <<EOF
usage: minitty bench [--quick] [--runs N] [--out DIR]
Compare minitty with fulltty, built from the same tree, and write
DIR/report.md, DIR/summary.md (its summary table), DIR/results.json
(every raw figure), DIR/sizes.svg (size per object, both flavours),
DIR/memory.svg (what an open port takes), DIR/speed.svg (every run and
the ratio of each alternating pair, per speed figure, and the floor) and
DIR/bloat-o-meter.txt:
  size     bin/minitty size of fulltty, minitty and notty (CONFIG_TTY=n, no
           serial: what the serial console costs on top of nothing),
           scripts/bloat-o-meter fulltty -> minitty, vmlinux and zImage;
  memory   MemFree after boot to a shell; slab objects, vmalloc and whole
           pages that opening ttyAMA0 allocates, counted exactly from /proc
           (meminfo, slabinfo, vmallocinfo, zoneinfo) in bench-fulltty and
           bench-minitty guests (configs/bench.config) whose PID 1 is
           lib/bench/memsnap.c (after lib/bench/meminit.sh's mounts),
           ttyAMA0 as the console, then as a port that is not (booted
           with console=none earlycon);
  speed    N alternating boots (fulltty minitty fulltty ...), medians of:
           boot to the first prompt, 1 MiB host to guest and guest to host
           in raw mode (bytes lost and md5 checked), echo round trip of one
           keystroke in canonical mode (200), a 200-line canonical read;
           then a guest of the same flavour with Debian's lrzsz appended
           to its initramfs: 256 KiB each way with sz and rz (ZMODEM),
           bytes and md5 checked (lrzsz of arm is fetched into
           sandbox/busybox/ the first time);
  floor    after each round, a fulltty guest takes the host-to-guest
           transfer's bytes and the canonical read's lines under N_NULL,
           which drops them (lib/bench/nullsink.c counts them as the
           driver receives them): QEMU's PL011 model, the UART driver
           and the flip buffer's hand-over, with no reader and nothing
           done with the bytes: what no TTY layer goes much below.
Builds what is missing or stale (bin/minitty build, rootfs) before it
needs it (--no-build: fulltty, minitty and notty as they are).
Each speed ratio comes with the median and the range of the ratios of the
alternating pairs; a figure ranks the flavours only when a two-sided sign
test over the pairs gives p < 0.1 (5 pairs: all five agree on the faster
one; else the report says the spread is too wide to rank them).
Exit 1 when a transfer lost or changed bytes, a guest failed, or a serial
log has Oops, BUG, WARNING or Kernel panic. No timing is a pass/fail
criterion: the figures depend on the machine and its load (both noted).
EOF
	options_help bench
}

cmd_bench() {
	parse_options bench "$@"
	no_args bench
	local runs=${OPT_runs:-5} out f
	local -a args=()
	[[ $runs =~ ^[1-9][0-9]*$ ]] || usage_error "bench: --runs needs a positive number, not '$runs'"
	if [[ -n ${OPT_quick:-} ]]; then
		out=${OPT_out:-$SANDBOX/bench/quick}
		args+=(--quick)
	else
		out=${OPT_out:-$SANDBOX/bench}
	fi
	need_cmd python3 bench
	no_build_set
	for f in "${BENCH_FLAVOURS[@]}"; do
		check_flavour "$f"
		ensure_current "$f"
	done
	build_rootfs >/dev/null
	gen_init_cpio >/dev/null
	# The guest's sz and rz for the ZMODEM transfers (bench.py lays them
	# over the guest's root, as boot --lrzsz).
	lrzsz_dir arm >/dev/null
	mkdir -p "$out"
	say "bench${OPT_quick:+ --quick}: report in ${out#"$MINITTY_ROOT"/}"
	python3 "$BENCH_PY" --out "$out" --runs "$runs" "${args[@]}" \
		--cmdline "bin/minitty bench${*:+ $*}" ||
		die "bench: failed (see ${out#"$MINITTY_ROOT"/}/report.md)"
	step "done" "${out#"$MINITTY_ROOT"/}/report.md"
}
