# shellcheck shell=bash
# boot, status, console, debug, stop, run: the guest.
# shellcheck source=lib/qemu.sh
source "$MINITTY_ROOT/lib/qemu.sh"

GUEST_PY=$MINITTY_ROOT/tests/lib/guest.py
PICOCOM_HELP="picocom: quit with C-a C-x (C-a C-h for its other commands)"

# Everything a guest needs, built when missing.
guest_prepare() {
	ensure_built "$1"
	build_rootfs >/dev/null
}

# running: true when the guest recorded in sandbox/run/ is alive.
running() {
	local pid
	pid=$(cat "$RUN_DIR/pid" 2>/dev/null) || return 1
	[[ -n $pid ]] && kill -0 "$pid" 2>/dev/null &&
		[[ $(cat "/proc/$pid/comm" 2>/dev/null) == qemu-system-arm ]]
}

need_running() {
	running || die "$1: no guest running (start one with: minitty boot)"
}

boot_options() {
	echo "$FLAVOUR_OPTION"
	echo "gdb-wait|||start the CPU halted, for gdb (minitty debug) to start it"
	echo "no-attach|||do not attach picocom; return once the guest has booted"
	echo "login|||boot to a getty login (minitty.login=1) instead of a root shell"
}
boot_help() {
	cat <<EOF
usage: minitty boot [--flavour F] [--gdb-wait] [--no-attach] [--login]
Start qemu-system-arm (virt, cortex-a15, 64 MiB) on F's zImage and the
initramfs, the serial port on a host pty, a gdbstub on a free TCP port,
and record flavour, pid, serial, gdb, serial.log in sandbox/run/. Builds
what is missing first. When stdin is a terminal, attaches picocom
($PICOCOM_HELP; the guest keeps running); otherwise (or with
--no-attach) returns once the guest shows its prompt.
EOF
	options_help boot
}

cmd_boot() {
	parse_options boot "$@"
	no_args boot
	local flavour log
	flavour=$(flavour_opt)
	if running; then
		die "boot: a guest is already running ($(cat "$RUN_DIR/flavour"), pid $(cat "$RUN_DIR/pid")); minitty stop first"
	fi
	guest_prepare "$flavour"
	rm -rf "$RUN_DIR"
	log=$LOGS/serial-boot-$flavour-$(date +%Y%m%d-%H%M%S)-$$.log
	errexit_run qemu_launch "$RUN_DIR" "$flavour" "$log" "${OPT_gdb_wait:-0}" \
		"${OPT_login:+minitty.login=1}" || exit "$EX_FAIL"
	say "boot $flavour: pid $(cat "$RUN_DIR/pid"), serial $(cat "$RUN_DIR/serial"), gdb $(cat "$RUN_DIR/gdb")"
	if [[ -n ${OPT_gdb_wait:-} ]]; then
		say "  the CPU waits for gdb: minitty debug (then 'continue')"
	else
		"$PYTHON" "$GUEST_PY" wait-boot --log "$log" --pid "$(cat "$RUN_DIR/pid")" ||
			exit "$EX_FAIL"
		say "  booted (serial log: ${log#"$MINITTY_ROOT"/})"
	fi
	if [[ -z ${OPT_no_attach:-} && -t 0 ]]; then
		# What the guest said before picocom was there (the pty drops it).
		# (Without the shell's cursor position queries: the terminal would
		# answer them into picocom.)
		if [[ -z ${OPT_gdb_wait:-} ]]; then
			tr -d '\r' <"$log" | sed 's/\x1b\[6n//g'
			echo
		fi
		console_attach
	fi
}

status_options() { :; }
status_help() {
	cat <<EOF
usage: minitty status
For the guest started by boot: 'key: value' lines flavour, pid, serial
(the pty), gdb (host:port), log (the serial log). Exit 1 when none runs.
EOF
	options_help status
}

cmd_status() {
	parse_options status "$@"
	no_args status
	if ! running; then
		say "no guest running"
		exit "$EX_FAIL"
	fi
	local k
	for k in flavour pid serial gdb; do
		printf '%s: %s\n' "$k" "$(cat "$RUN_DIR/$k")"
	done
	printf 'log: %s\n' "$(readlink -f "$RUN_DIR/serial.log")"
}

stop_options() { :; }
stop_help() {
	cat <<EOF
usage: minitty stop
Stop the guest started by boot (by its recorded pid) and remove the run
files in sandbox/run/ (the serial log stays in sandbox/logs/).
EOF
	options_help stop
}

cmd_stop() {
	parse_options stop "$@"
	no_args stop
	if running; then
		local pid i
		pid=$(cat "$RUN_DIR/pid")
		kill "$pid"
		for ((i = 0; i < 50; i++)); do
			kill -0 "$pid" 2>/dev/null || break
			sleep 0.1
		done
		kill -0 "$pid" 2>/dev/null && kill -9 "$pid"
		say "stopped $(cat "$RUN_DIR/flavour") guest (pid $pid)"
	else
		say "no guest running"
	fi
	rm -rf "$RUN_DIR"
}

console_options() { :; }
console_help() {
	cat <<EOF
usage: minitty console
Attach picocom to the serial pty of the guest started by boot.
$PICOCOM_HELP; the guest keeps running.
EOF
	options_help console
}

cmd_console() {
	parse_options console "$@"
	no_args console
	need_running console
	console_attach
}

console_attach() {
	need_cmd picocom console
	say "console: $(cat "$RUN_DIR/serial") ($(cat "$RUN_DIR/flavour")); $PICOCOM_HELP"
	picocom --quiet --nolock --baud 115200 "$(cat "$RUN_DIR/serial")" ||
		die "console: picocom failed"
}

debug_options() { :; }
debug_help() {
	cat <<EOF
usage: minitty debug
gdb-multiarch on the running guest's vmlinux, connected to its gdbstub,
with the kernel's lx- helpers (vmlinux-gdb.py) and gdbscripts/*.py
loaded. When stdin is not a terminal, gdb reads its commands from stdin
(e.g. printf 'info registers\n' | minitty debug), then detaches: the
guest keeps running.
EOF
	options_help debug
}

# gdb_init FLAVOUR: the gdb commands that set up a session.
gdb_init() {
	local out
	out=$(flavour_build "$1")
	cat <<EOF
set pagination off
set confirm off
add-auto-load-safe-path $out
add-auto-load-safe-path $(flavour_tree "$1")
file $out/vmlinux
target remote $(cat "$RUN_DIR/gdb")
python
import glob, gdb
try:
    gdb.execute("help lx-symbols", to_string=True)
except gdb.error:
    gdb.execute("source $out/vmlinux-gdb.py")
for f in sorted(glob.glob("$MINITTY_ROOT/gdbscripts/*.py")):
    gdb.execute("source " + f)
end
EOF
}

cmd_debug() {
	parse_options debug "$@"
	no_args debug
	need_running debug
	need_cmd gdb-multiarch debug
	local flavour init
	flavour=$(cat "$RUN_DIR/flavour")
	[[ -f $(flavour_build "$flavour")/vmlinux ]] || die "debug: no vmlinux for $flavour"
	init=$RUN_DIR/gdbinit
	gdb_init "$flavour" >"$init"
	if [[ -t 0 ]]; then
		exec gdb-multiarch -q -x "$init"
	fi
	# gdb cannot source a pipe: keep stdin's commands in a file.
	cat >"$RUN_DIR/gdb-stdin"
	gdb-multiarch -q -batch -x "$init" -x "$RUN_DIR/gdb-stdin" -ex detach
}

run_options() {
	echo "$FLAVOUR_OPTION"
	echo "login|||log in through getty (root/root) instead of the root shell"
	echo "timeout|t|S|seconds the command may take (default 600)"
}
run_help() {
	cat <<EOF
usage: minitty run [--flavour F] [--login] [--timeout S] -- 'CMD'
Boot a guest of its own (the one of boot is not touched), run CMD in its
shell over the serial line, print CMD's output, power off, and exit with
CMD's status. Exit 1 when the guest does not boot (the serial log's tail
is shown) or when its serial log has Oops, BUG, WARNING or Kernel panic.
EOF
	options_help run
}

cmd_run() {
	parse_options run "$@"
	((${#ARGS[@]})) || usage_error "run: no command (usage: minitty run [--flavour F] -- 'CMD')"
	local flavour
	flavour=$(flavour_opt)
	[[ $(flavour_field "$flavour" 4) != no ]] ||
		usage_error "run: flavour $flavour has no shell on the serial port (configs/flavours)"
	guest_prepare "$flavour" >&2
	local -a opts=(--flavour "$flavour" --timeout "${OPT_timeout:-600}")
	[[ -n ${OPT_login:-} ]] && opts+=(--login)
	exec "$PYTHON" "$GUEST_PY" run "${opts[@]}" -- "${ARGS[*]}"
}
