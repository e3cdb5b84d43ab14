#!/usr/bin/env bash
# shellcheck shell=bash
# The one QEMU command line of the project. Sourced by bin/minitty (boot),
# and run as a script by lib/py/minitty/guest.py:
#   lib/qemu.sh RUN_DIR FLAVOUR SERIAL_LOG [GDB_WAIT(0|1)] [EXTRA_APPEND]
#               [SMP] [MEMORY_MB] [ADD_DIR...]
# starts a daemonized guest and writes RUN_DIR/{flavour,pid,serial,gdb}.
# An empty SMP is the flavour's number of CPUs (qemu_default_smp).
# Exit 1 with a message on stderr when QEMU does not start.

# (at source time: inside a function, BASH_SOURCE may name another file)
QEMU_SANDBOX=${MINITTY_SANDBOX:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/sandbox}
# The arch of the flavour decides the program, machine, image and console.
if ! declare -F arch_field >/dev/null; then
	# shellcheck source=lib/arch.sh
	source "$(dirname "${BASH_SOURCE[0]}")/arch.sh"
fi

# panic=-1: a panicking kernel reboots at once, and -no-reboot makes QEMU
# exit then, so that a caller sees the panic instead of waiting for a
# prompt that never comes.
# (console=: the flavour's arch's serial port, configs/arches, unless the
# extra command line has a console= of its own)
QEMU_APPEND_BASE="rdinit=/init panic=-1"

# add_archive DIR: a gzipped newc archive of DIR's files (owned by root),
# written with the kernel's usr/gen_init_cpio (sandbox/host, built by
# rootfs), on stdout. Appended to the initramfs, it lays DIR over the
# guest's root.
add_archive() {
	local dir=$1 sandbox=$2 tool=$2/host/gen_init_cpio
	[[ -x $tool ]] || { echo "minitty: boot: $tool missing (run: minitty rootfs)" >&2; return 1; }
	[[ -d $dir ]] || { echo "minitty: boot: --add $dir: not a directory" >&2; return 1; }
	(
		cd "$dir"
		find . -mindepth 1 | LC_ALL=C sort | while IFS= read -r f; do
			local name=${f#.} mode
			mode=$(stat -c %a "$f")
			if [[ -L $f ]]; then
				printf 'slink %s %s %s 0 0\n' "$name" "$(readlink "$f")" "$mode"
			elif [[ -d $f ]]; then
				printf 'dir %s %s 0 0\n' "$name" "$mode"
			elif [[ -f $f ]]; then
				printf 'file %s %s %s 0 0\n' "$name" "$PWD/${f#./}" "$mode"
			fi
		done
	) | "$tool" - | gzip -n
}

# guest_clock ARCH SANDBOX: what the kernel command line of an ARCH guest
# needs to keep time. x86_64: the rate of its TSC, which is the host's
# (lib/host/tsc_khz.c says why), and no clocksource watchdog: the watchdog
# measured the TSC against jiffies, took the ticks a loaded host lost for
# a TSC running fast, and put the guest on jiffies. The other arches
# read a counter whose rate the machine describes (the arch timer).
guest_clock() {
	local arch=$1 sandbox=$2 tool=$2/host/tsc_khz src khz
	[[ $arch == x86_64 ]] || return 0
	src=$(dirname "${BASH_SOURCE[0]}")/host/tsc_khz.c
	if [[ ! -x $tool || $src -nt $tool ]]; then
		mkdir -p "$sandbox/host"
		# (guests start at once: each builds its own copy, then renames)
		if ! gcc -O2 -o "$tool.$$" "$src"; then
			echo "minitty: boot: cannot build $tool from $src" >&2
			return 1
		fi
		mv -f "$tool.$$" "$tool"
	fi
	khz=$("$tool") || return 1
	echo "tsc_early_khz=$khz tsc=reliable"
}

# qemu_default_smp FLAVOUR: the CPUs of FLAVOUR's guests unless asked
# otherwise: 2 for the SMP debug flavours (configs/flavours: *-smp), else 1.
qemu_default_smp() {
	if [[ $1 == *-smp ]]; then echo 2; else echo 1; fi
}

free_port() {
	/usr/bin/python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# qemu_launch RUN_DIR FLAVOUR SERIAL_LOG GDB_WAIT EXTRA_APPEND SMP MEMORY ADD_DIR...
qemu_launch() {
	local run=$1 flavour=$2 log=$3 gdb_wait=${4:-0} extra=${5:-} smp=${6:-} mem=${7:-64}
	shift $(($# < 7 ? $# : 7))
	local sandbox=$QEMU_SANDBOX
	local arch kernel initrd qemu machine console clock
	local port try pty d
	local -a stop=() mach=()
	arch=$(flavour_arch "$flavour")
	[[ -n $arch ]] || { echo "minitty: boot: unknown flavour $flavour" >&2; return 1; }
	kernel=$sandbox/build/$flavour/$(arch_field "$arch" image)
	initrd=$sandbox/rootfs/$arch/initramfs.cpio.gz
	qemu=$(qemu_program "$arch" "$sandbox")
	machine=$(arch_field "$arch" machine)
	console=$(arch_field "$arch" console-arg)
	# a console= of the caller's replaces the serial port's
	[[ " $extra" != *" console="* ]] || console=
	clock=$(guest_clock "$arch" "$sandbox") || return 1
	mach=(-M "${machine%%,*}")
	[[ $machine != *,cpu=* ]] || mach+=(-cpu "${machine#*,cpu=}")
	[[ $gdb_wait == 1 ]] && stop=(-S)
	[[ -n $smp ]] || smp=$(qemu_default_smp "$flavour")
	[[ $smp =~ ^[1-8]$ ]] || { echo "minitty: boot: --smp needs 1 to 8 CPUs, not '$smp'" >&2; return 2; }
	[[ $mem =~ ^[1-9][0-9]*$ ]] || { echo "minitty: boot: --memory needs a size in MiB, not '$mem'" >&2; return 2; }
	for f in "$kernel" "$initrd"; do
		[[ -f $f ]] || { echo "minitty: boot: $f missing" >&2; return 1; }
	done
	mkdir -p "$run" "$(dirname "$log")"
	rm -f "$run/pid" "$run/serial" "$run/gdb" "$run/flavour"
	if (($#)); then
		# The initramfs, then an archive per directory: the kernel
		# unpacks them in order, the later over the earlier.
		cp "$initrd" "$run/initrd"
		for d in "$@"; do
			add_archive "$d" "$sandbox" >>"$run/initrd" || return 1
		done
		initrd=$run/initrd
	fi
	for try in 1 2 3; do
		port=$(free_port)
		if "$qemu" "${mach[@]}" -smp "$smp" -m "$mem" -nodefaults \
			-display none -monitor none -no-reboot \
			-qmp "unix:$run/qmp,server=on,wait=off" \
			-kernel "$kernel" -initrd "$initrd" \
			-append "${console:+console=$console }$QEMU_APPEND_BASE${clock:+ $clock}${extra:+ $extra}" \
			-chardev "pty,id=ser0,logfile=$log,logappend=off" \
			-serial chardev:ser0 \
			-gdb "tcp:127.0.0.1:$port" "${stop[@]}" \
			-daemonize -pidfile "$run/pid" >"$run/qemu.err" 2>&1; then
			break
		fi
		# a port taken between free_port and QEMU: try another
		grep -q 'gdbstub' "$run/qemu.err" && ((try < 3)) && continue
		echo "minitty: boot: $qemu failed: $(tr '\n' ' ' <"$run/qemu.err")" >&2
		return 1
	done
	pty=$(sed -n 's|.*char device redirected to \(/dev/pts/[0-9]*\) (label ser0).*|\1|p' "$run/qemu.err")
	[[ -n $pty ]] || { echo "minitty: boot: no pty in QEMU's messages: $(cat "$run/qemu.err")" >&2; return 1; }
	echo "$pty" >"$run/serial"
	echo "127.0.0.1:$port" >"$run/gdb"
	echo "$flavour" >"$run/flavour"
	# A guest that belongs to a process (lib/py/minitty/guest.py) goes with it,
	# run directory and all, even when that process is killed and cannot
	# stop it.
	if [[ -n ${MINITTY_GUEST_OWNER:-} ]]; then
		local qpid
		qpid=$(cat "$run/pid")
		# shellcheck disable=SC2016 # expanded by the watcher
		nohup bash -c 'while kill -0 "$1" && kill -0 "$2"; do sleep 2; done 2>/dev/null
			kill "$2" 2>/dev/null && sleep 1 && rm -rf "$3"' \
			watcher "$MINITTY_GUEST_OWNER" "$qpid" "$run" \
			</dev/null >/dev/null 2>&1 &
	fi
	[[ $log == "$run/serial.log" ]] || ln -sf "$log" "$run/serial.log"
}

if [[ ${BASH_SOURCE[0]} == "$0" ]]; then
	set -euo pipefail
	(($# >= 3)) || { echo "usage: $0 RUN_DIR FLAVOUR SERIAL_LOG [GDB_WAIT] [APPEND]" >&2; exit 2; }
	qemu_launch "$@"
fi
