# shellcheck shell=bash
# boot, status, console, debug, stop, run: the guest.
# shellcheck source=lib/qemu.sh
source "$MINITTY_ROOT/lib/qemu.sh"

GUEST_PY=$MINITTY_ROOT/lib/py/minitty/guest.py
PICOCOM_HELP="picocom: quit with C-a C-x (C-a C-h for its other commands)"

# guest_prepare FLAVOUR [NO_BUILD]: everything a guest needs, built when
# missing or stale (NO_BUILD: as in ensure_current; errexit_run does not
# carry variables over).
guest_prepare() {
	ensure_current "$1" "${2:-$NO_BUILD}"
	build_rootfs "$(flavour_arch "$1")" >/dev/null
}

# running: true when the guest recorded in sandbox/run/ is alive.
running() {
	local pid
	pid=$(cat "$RUN_DIR/pid" 2>/dev/null) || return 1
	[[ -n $pid ]] && kill -0 "$pid" 2>/dev/null &&
		[[ $(cat "/proc/$pid/comm" 2>/dev/null) == qemu-system-* ]]
}

# need_shell CMD FLAVOUR: usage error when FLAVOUR boots to no shell.
need_shell() {
	[[ $(flavour_field "$2" 4) != no ]] ||
		usage_error "$1: flavour $2 has no shell on the serial port (configs/flavours)"
}

# The guest options of boot and run.
guest_opts() {
	echo "append|a|ARGS|more kernel command line (after console=PORT, which a console= in ARGS replaces, rdinit=/init panic=-1)"
	echo "smp||N|CPUs (default 1; 2 for the -smp flavours)"
	echo "memory|m|M|memory in MiB (default 64)"
	echo "add||DIR|lay host directory DIR over the guest's root (an archive appended to the initramfs)"
	echo "lrzsz|||lay Debian's lrzsz (sz, rz) and its C library over the guest's root: file transfer with picocom"
}
# guest_opts_check CMD: usage errors for the guest options; sets ADD_DIRS.
declare -a ADD_DIRS=()
guest_opts_check() {
	[[ -z ${OPT_smp:-} || $OPT_smp =~ ^[1-8]$ ]] || usage_error "$1: --smp needs 1 to 8 CPUs, not '${OPT_smp}'"
	[[ ${OPT_memory:-64} =~ ^[1-9][0-9]*$ ]] || usage_error "$1: --memory needs a size in MiB, not '${OPT_memory}'"
	ADD_DIRS=()
	if [[ -n ${OPT_add:-} ]]; then
		[[ -d $OPT_add ]] || usage_error "$1: --add $OPT_add: not a directory"
		ADD_DIRS=("$(cd "$OPT_add" && pwd)")
	fi
}

# guest_lrzsz FLAVOUR: with --lrzsz, FLAVOUR's arch's lrzsz_dir joins
# ADD_DIRS.
guest_lrzsz() {
	local d
	[[ -n ${OPT_lrzsz:-} ]] || return 0
	d=$(lrzsz_dir "$(flavour_arch "$1")")
	ADD_DIRS+=("$d")
}

need_running() {
	running || die "$1: no guest running (start one with: minitty boot)"
}

boot_options() {
	echo "$FLAVOUR_OPTION"
	echo "gdb-wait|||start the CPU halted, for gdb (minitty debug) to start it"
	echo "no-attach|||do not attach picocom; return once the guest has booted"
	echo "login|||boot to a getty login (minitty.login=1) instead of a root shell"
	guest_opts
	no_build_opt
}
boot_help() {
	cat <<EOF
usage: minitty boot [--flavour F] [--gdb-wait] [--no-attach] [--login]
                    [--append ARGS] [--smp N] [--memory M] [--add DIR] [--lrzsz]
                    [--no-build]
Start the QEMU of F's arch (configs/arches: qemu-system-arm -M virt
-cpu cortex-a15, qemu-system-x86_64 -M pc, qemu-system-aarch64 -M virt
-cpu cortex-a53; 64 MiB) on F's kernel image
and the arch's initramfs, console= the arch's serial port (ttyAMA0, ttyS0), the serial port on a host pty, a gdbstub on a free TCP port,
and record flavour, pid, serial, gdb, serial.log in sandbox/run/. Builds
F first when it is stale, and the initramfs. When stdin is a terminal,
attaches picocom ($PICOCOM_HELP; the guest keeps running); otherwise (or
with --no-attach) returns once the guest shows its prompt. A guest that
does not boot is stopped and the serial log's tail shown; a panic ends it
at once (panic=-1). Refused for a flavour without a shell (configs/flavours).
File transfer (--lrzsz): in picocom, C-a C-s sends a host file with the
host's sz, which starts rz in the guest's shell; to receive, run sz FILE
in the guest, then C-a C-r (the host's rz writes it to the current
directory). Setup fetches the arch's lrzsz package with its busybox.
EOF
	options_help boot
}

cmd_boot() {
	parse_options boot "$@"
	no_args boot
	local flavour log
	flavour=$(flavour_opt)
	no_build_set
	need_shell boot "$flavour"
	guest_opts_check boot
	if running; then
		die "boot: a guest is already running ($(cat "$RUN_DIR/flavour"), pid $(cat "$RUN_DIR/pid")); minitty stop first"
	fi
	guest_prepare "$flavour"
	guest_lrzsz "$flavour"
	rm -rf "$RUN_DIR"
	log=$LOGS/serial-boot-$flavour-$(date +%Y%m%d-%H%M%S)-$$.log
	local append=${OPT_login:+minitty.login=1}
	append+=${OPT_append:+${append:+ }$OPT_append}
	errexit_run qemu_launch "$RUN_DIR" "$flavour" "$log" "${OPT_gdb_wait:-0}" \
		"$append" "${OPT_smp:-}" "${OPT_memory:-64}" "${ADD_DIRS[@]}" || exit "$EX_FAIL"
	say "boot $flavour: pid $(cat "$RUN_DIR/pid"), serial $(cat "$RUN_DIR/serial"), gdb $(cat "$RUN_DIR/gdb")"
	if [[ -n ${OPT_gdb_wait:-} ]]; then
		say "  the CPU waits for gdb: minitty debug (then 'continue')"
	else
		if ! "$PYTHON" "$GUEST_PY" wait-boot --log "$log" --pid "$(cat "$RUN_DIR/pid")"; then
			stop_guest >/dev/null
			exit "$EX_FAIL"
		fi
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
	stop_guest
}

# stop_guest: stop the guest of boot, if any, and remove its run files.
stop_guest() {
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

debug_options() {
	echo "flavour|f|F|the running guest's flavour, checked (default: whichever runs); with no guest running, gdb on F's vmlinux alone"
}
debug_help() {
	cat <<EOF
usage: minitty debug [--flavour F]
gdb-multiarch on the running guest's vmlinux, connected to its gdbstub,
with gdb's architecture the flavour's (configs/arches: arm, i386:x86-64),
the kernel's lx- helpers (vmlinux-gdb.py) and gdbscripts/*.py loaded.
When stdin is not a terminal, gdb reads its commands from stdin (e.g.
printf 'info registers\n' | minitty debug), then detaches: the guest
keeps running. With --flavour F, refused when the guest that runs is of
another flavour (gdb would read it with the wrong symbols); when none
runs, gdb on F's vmlinux without a target (types, symbols, disassembly;
the lx- and minitty commands need a guest).
EOF
	options_help debug
}

# gdb_init FLAVOUR [OFFLINE]: the gdb commands that set up a session (with
# OFFLINE, no target: the vmlinux alone).
gdb_init() {
	local out
	out=$(flavour_build "$1")
	cat <<EOF
set pagination off
set confirm off
set architecture $(flavour_arch_field "$1" gdbarch)
add-auto-load-safe-path $out
add-auto-load-safe-path $(flavour_tree "$1")
file $out/vmlinux
EOF
	[[ -n ${2:-} ]] || echo "target remote $(cat "$RUN_DIR/gdb")"
	cat <<EOF
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
	local flavour init dir offline=
	if [[ -n ${OPT_flavour:-} ]]; then
		flavour=$(flavour_opt)
		if running; then
			[[ $(cat "$RUN_DIR/flavour") == "$flavour" ]] ||
				die "debug: the guest that runs is $(cat "$RUN_DIR/flavour"), not $flavour (minitty stop, then minitty boot --flavour $flavour)"
		else
			offline=1
		fi
	else
		need_running debug
		flavour=$(cat "$RUN_DIR/flavour")
	fi
	need_cmd gdb-multiarch debug
	[[ -f $(flavour_build "$flavour")/vmlinux ]] ||
		die "debug: no vmlinux for $flavour${offline:+ (minitty build --flavour $flavour)}"
	dir=$RUN_DIR
	if [[ -n $offline ]]; then
		say "debug: no guest running: gdb on $flavour's vmlinux alone (minitty boot --flavour $flavour for a live one)"
		dir=$(mktemp -d)
	fi
	init=$dir/gdbinit
	gdb_init "$flavour" "$offline" >"$init"
	local -a gdb=(gdb-multiarch -q -x "$init")
	if [[ ! -t 0 ]]; then
		# gdb cannot source a pipe: keep stdin's commands in a file.
		cat >"$dir/gdb-stdin"
		gdb=(gdb-multiarch -q -batch -x "$init" -x "$dir/gdb-stdin")
		# then detach: the guest runs on
		[[ -n $offline ]] || gdb+=(-ex detach)
	fi
	[[ -n $offline ]] || exec "${gdb[@]}"
	local rc=0
	"${gdb[@]}" || rc=$?
	rm -rf "$dir"
	return "$rc"
}

run_options() {
	echo "$FLAVOUR_OPTION"
	echo "login|||log in through getty (root/root) instead of the root shell"
	echo "timeout|t|S|seconds the command may take (default 600)"
	guest_opts
	no_build_opt
}
run_help() {
	cat <<EOF
usage: minitty run [--flavour F] [--login] [--timeout S] [--append ARGS]
                   [--smp N] [--memory M] [--add DIR] [--lrzsz] [--no-build]
                   -- CMD [ARG...]
Build F when it is stale, boot a guest of its own (the one of boot is not
touched), run CMD in its shell over the serial line, print CMD's output as
it comes (bytes as they are; the serial line turns \n into \r\n, run
turns it back), power off, and exit with CMD's status. One CMD argument is
a shell command line ('stty -a; tty'); several are a program and its
arguments, passed as they are (run -- printf '%s\n' 'a b').
Exit 125 when the guest failed, not CMD (F does not build, the guest does
not boot or panics: the serial log's tail is shown, the serial line
goes away), so that git bisect run skips that commit; 124 when CMD did not
finish within the timeout; 1 when the serial log has a kernel problem
(Oops, BUG, WARNING, Kernel panic, lockdep, KASAN, UBSAN, hung task, RCU
stall).
EOF
	options_help run
}

cmd_run() {
	parse_options run "$@"
	((${#ARGS[@]})) || usage_error "run: no command (usage: minitty run [--flavour F] -- 'CMD')"
	local flavour
	flavour=$(flavour_opt)
	no_build_set
	need_shell run "$flavour"
	guest_opts_check run
	[[ ${OPT_timeout:-600} =~ ^[0-9]+([.][0-9]+)?$ ]] ||
		usage_error "run: --timeout needs seconds, not '${OPT_timeout}'"
	# A kernel that does not build cannot be tested: 125 (git bisect skips).
	errexit_run guest_prepare "$flavour" "$NO_BUILD" >&2 || exit 125
	guest_lrzsz "$flavour"
	local d
	local -a opts=(--flavour "$flavour" --timeout "${OPT_timeout:-600}"
		--memory "${OPT_memory:-64}")
	[[ -n ${OPT_smp:-} ]] && opts+=(--smp "$OPT_smp")
	[[ -n ${OPT_login:-} ]] && opts+=(--login)
	[[ -n ${OPT_append:-} ]] && opts+=(--append "$OPT_append")
	for d in "${ADD_DIRS[@]}"; do
		opts+=(--add "$d")
	done
	exec "$PYTHON" "$GUEST_PY" run "${opts[@]}" -- "${ARGS[@]}"
}
