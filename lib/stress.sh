# shellcheck shell=bash
# stress: the serial port under load, faults and floods (lib/stress/stress.py).

STRESS_PY=$MINITTY_ROOT/lib/stress/stress.py

stress_options() {
	echo "quick|q||2000 ioctls, 20 s of tty stress, 3 unbind cycles, 64 KiB transfer, 200000 bytes of RX fuzz (make test runs this)"
	echo "$FLAVOUR_OPTION"
	echo "seed|s|N|seed of the random choices and bytes (default 11)"
	echo "against|a|G|flavour the ioctl fuzz is compared with (default fulltty for minitty*, fulltty-smp for minitty-smp; none: not compared)"
	echo "out|o|DIR|report directory (default sandbox/stress/F; --quick: sandbox/stress/F-quick)"
	no_build_opt
}
stress_help() {
	cat <<EOF
usage: minitty stress [--quick] [--flavour F] [--seed N] [--against G] [--out DIR]
Boot one guest of flavour F (2 CPUs for the -smp flavours) and, in it:
  ioctl fuzz  10000 (--quick: 2000) seeded ioctl() calls on ttyAMA0 over
              the tty ioctl range with random and bad arguments (NULL,
              unmapped and kernel pointers, a buffer's edge, random
              buffers, out-of-range integers), one result line a call
              (tests/guest/ioctlfuzz.c); then a guest of flavour G runs
              the same seed and the lines are compared: a difference
              fails unless tests/stress/ioctl-deviations lists it;
  tty stress  4 processes opening, closing, reading, writing, polling and
              changing the termios of ttyAMA0 at random (tests/guest/stress.c)
              for 300 s (--quick: 20 s) while the host floods the line with
              random bytes (every byte value); no call may fail but with
              EAGAIN or EINTR;
  unbind      50 (--quick: 3) removals of the port (PL011 unbind, bind) with
              a reader, a writer, a poller and a TIOCMIWAIT blocked on it
              (tests/guest/unbind.c): each must return, and the open files
              answer as hung up; minitty flavours only (with the TTY layer
              the built-in PL011 hides its unbind attribute, as upstream:
              the phase says so and is skipped);
  transfer    1 MiB (--quick: 64 KiB) of random bytes host to guest in raw
              mode, checksummed in the guest: bytes lost;
  RX fuzz     random bytes host to guest (all 256 values first) until the
              port has received 1000000 (--quick: 200000), while the guest
              changes the termios at random (ICANON, ECHO*, ISIG, IXON,
              ICRNL/INLCR/IGNCR, ISTRIP, VMIN/VTIME, control characters)
              and reads and drains (tests/guest/rxfuzz.c); then the shell
              must answer.
Then the serial logs (both guests') are checked for Oops, BUG, WARNING,
lockdep, KASAN, UBSAN, hung tasks and RCU stalls. Writes DIR/report.md
(load held, faults injected and survived, inputs tried, ioctl
differences, bytes lost, splats) and DIR/results.json, prints the report,
and fails when any phase did.
EOF
	options_help stress
}

# stress_against F: the flavour F's ioctl fuzz is compared with by default
# (the full layer of the same configuration), or none.
stress_against() {
	case $1 in
	minitty*-smp) echo fulltty-smp ;;
	minitty*) echo fulltty ;;
	*) echo none ;;
	esac
}

cmd_stress() {
	parse_options stress "$@"
	no_args stress
	local flavour out against seed=${OPT_seed:-11}
	local -a quick=()
	[[ $seed =~ ^[0-9]+$ ]] || usage_error "stress: --seed needs a number, not '$seed'"
	flavour=$(flavour_opt)
	need_shell stress "$flavour"
	no_build_set
	[[ -n ${OPT_quick:-} ]] && quick=(--quick)
	out=${OPT_out:-$SANDBOX/stress/$flavour${OPT_quick:+-quick}}
	against=${OPT_against:-$(stress_against "$flavour")}
	if [[ $against == none ]]; then
		against=
	else
		check_flavour "$against"
		need_shell stress "$against"
	fi
	ensure_current "$flavour"
	[[ -z $against ]] || ensure_current "$against"
	build_rootfs "$(flavour_arch "$flavour")" >/dev/null
	mkdir -p "$out"
	say "stress${OPT_quick:+ --quick} $flavour: report in ${out#"$MINITTY_ROOT"/}"
	"$PYTHON" "$STRESS_PY" --flavour "$flavour" --seed "$seed" --out "$out" \
		--against "$against" "${quick[@]}" ||
		die "stress: failed (see ${out#"$MINITTY_ROOT"/}/report.md)"
	step "done" "${out#"$MINITTY_ROOT"/}/report.md"
}
