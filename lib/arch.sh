# shellcheck shell=bash
# The architectures (configs/arches) and a flavour's (configs/flavours,
# column 5). Sourced by bin/minitty (through the module list) and by
# lib/qemu.sh when it runs as a script; lib/py/minitty/arch.py reads the
# same tables for the Python side.

ARCH_CONFIGS=${ARCH_CONFIGS:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/configs}

# arch_names: the arches of configs/arches, one a line.
arch_names() {
	awk '!/^#/ && NF { print $1 }' "$ARCH_CONFIGS/arches"
}

# arch_field ARCH NAME: column NAME (karch, cross, image, qemu, machine,
# console, uart, debarch, gdbarch, setup, compat, elf) of ARCH; cross and
# compat are empty for - (the host's compiler; no compat arch), elf is the
# rest of the line; console is the port's name, and console-arg the whole
# column (console=, with the options after a comma).
arch_field() {
	awk -v a="$1" -v n="$2" '
	!/^#/ && $1 == a {
		split("arch karch cross image qemu machine console uart debarch gdbarch setup compat elf", c, " ")
		arg = (n == "console-arg"); if (arg) n = "console"
		for (i = 1; i <= 13; i++) if (c[i] == n) break
		if (i > 13) exit 2
		if (n == "elf") { for (j = 1; j < 13; j++) sub(/^[^ ]+ +/, ""); print; found = 1; exit }
		v = $i; if ((n == "cross" || n == "compat") && v == "-") v = ""
		if (n == "console" && !arg) sub(/,.*/, "", v)
		print v; found = 1; exit
	}
	END { if (!found) exit 1 }' "$ARCH_CONFIGS/arches"
}

# qemu_program ARCH SANDBOX: the QEMU program of ARCH (column qemu): the
# one setup unpacked into SANDBOX/qemu (QEMU_DEBS: bookworm-backports'
# QEMU, whose PL011 takes up to a FIFO's worth of bytes from the pty at a
# time where bookworm's 7.2 takes one), else the host's, on PATH.
qemu_program() {
	local prog
	prog=$(arch_field "$1" qemu) || return 1
	if [[ -x $2/qemu/usr/bin/$prog ]]; then
		echo "$2/qemu/usr/bin/$prog"
	else
		echo "$prog"
	fi
}

# arch_setup_names: the arches `minitty setup` prepares on every host
# (column setup: always), one a line; the opt-in ones are set up only
# when something needs them (setup_host ARCH...).
arch_setup_names() {
	awk '!/^#/ && NF && $11 == "always" { print $1 }' "$ARCH_CONFIGS/arches"
}

# arch_known ARCH: ARCH is a line of configs/arches.
arch_known() { arch_names | grep -qx -- "$1"; }

# flavour_arch FLAVOUR: its arch (an option flavour BASE+OPTION: BASE's).
flavour_arch() {
	awk -v f="${1%%+*}" '!/^#/ && $1 == f { print $5; exit }' "$ARCH_CONFIGS/flavours"
}

# flavour_arch_field FLAVOUR NAME: arch_field of FLAVOUR's arch.
flavour_arch_field() {
	local arch
	arch=$(flavour_arch "$1")
	[[ -n $arch ]] || { echo "minitty: flavour $1 has no arch (configs/flavours)" >&2; return 1; }
	arch_field "$arch" "$2"
}
