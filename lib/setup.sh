# shellcheck shell=bash
# setup: host packages; fetch: the pristine kernel tree.

# Host packages the sandbox needs (Debian names). Installed without their
# recommends, so what a recommend would bring and a step uses is named
# here (libc6-dev-armhf-cross: the guest programs' C library). lrzsz:
# sz and rz, which picocom sends and receives files with, and the bench's
# ZMODEM transfers (the guest's are fetched by the bench). Each
# arch of configs/arches adds its own (arch_packages).
SETUP_PACKAGES=(linux-source-6.12
	gdb-multiarch picocom flex bison bc cpio libssl-dev libelf-dev ccache
	python3 python3-pexpect shellcheck git make gcc libc6-dev xz-utils
	python3-ply python3-git python3-pyflakes perl file sparse lrzsz)

# arch_packages ARCH: the host packages ARCH's flavours need: its
# compiler, binutils and C library for the guest programs, and its QEMU.
arch_packages() {
	case $1 in
	arm) echo gcc-arm-linux-gnueabihf libc6-dev-armhf-cross binutils-arm-linux-gnueabihf qemu-system-arm ;;
	x86_64) echo gcc binutils libc6-dev qemu-system-x86 ;;
	# qemu-system-aarch64 is in Debian's qemu-system-arm.
	arm64) echo gcc-aarch64-linux-gnu libc6-dev-arm64-cross binutils-aarch64-linux-gnu qemu-system-arm ;;
	*) die "setup: no packages known for arch $1 (lib/setup.sh: arch_packages)" ;;
	esac
}

# setup_arches [ARCH...]: the arches to set up, one a line, in the
# order of configs/arches: those of column setup `always`, and each ARCH
# named (an opt-in one: something needs it).
setup_arches() {
	local a want
	want=" $(arch_setup_names | paste -sd' ') $* "
	for a in $(arch_names); do
		[[ $want == *" $a "* ]] && echo "$a"
	done
	return 0
}

# all_packages [ARCH...]: SETUP_PACKAGES and those of each arch of
# setup_arches ARCH..., one a line.
all_packages() {
	local a
	printf '%s\n' "${SETUP_PACKAGES[@]}"
	for a in $(setup_arches "$@"); do
		arch_packages "$a" | tr ' ' '\n'
	done
}

# The QEMU the PL011 guests (arm, arm64) run on: Debian's build from
# bookworm-backports, unpacked into sandbox/qemu/ (lib/arch.sh
# qemu_program) through a package list of its own there, so that the
# host's apt sources and its QEMU stay as they are. Its PL011 takes up to
# a FIFO's worth of bytes from the pty at a time; bookworm's QEMU 7.2 took
# one per turn of its main loop, which held a host-to-guest transfer near
# 95 KiB/s whatever the kernel did (the bench's floor, the bytes dropped
# as they arrive, was 0.98 of the full layer's time). Its libraries are
# those of the host's qemu-system-arm, which setup installs.
QEMU_SUITE=bookworm-backports
QEMU_DEBS=(qemu-system-arm qemu-system-common qemu-system-data)

# busybox_pkg ARCH: the guest's busybox (Debian's, of ARCH's debarch).
busybox_pkg() { echo "busybox-static:$(arch_field "$1" debarch)"; }
# The Debian packages of each arch's guests, kept in sandbox/busybox/:
# busybox-static (their root) and lrzsz (boot --lrzsz, the bench's ZMODEM).
GUEST_DEBS=(busybox-static lrzsz)
# guest_pkgs ARCH: those packages, of ARCH's debarch.
guest_pkgs() {
	local p
	for p in "${GUEST_DEBS[@]}"; do
		echo "$p:$(arch_field "$1" debarch)"
	done
}

setup_options() {
	echo "arch||ARCH[,ARCH...]|also set up these opt-in arches (configs/arches, column setup)"
}
setup_help() {
	local a optin=""
	for a in $(arch_names); do
		[[ $(arch_field "$a" setup) == always ]] ||
			optin+="${optin:+; }$a: $(arch_packages "$a") $(guest_pkgs "$a" | paste -sd' ')"
	done
	fold -s -w 72 <<EOF | sed 's/ *$//'
usage: minitty setup [--arch ARCH[,ARCH...]]
Install the missing host packages with apt-get (after an apt-get update when something is missing: three tries, then it goes on with the package lists there are, and the install fails if one it needs is missing): $(all_packages | paste -sd' '); and download busybox-static and lrzsz of each arch that configs/arches sets up always ($(for a in $(setup_arches); do guest_pkgs "$a"; done | paste -sd' '); after dpkg --add-architecture for a foreign one) into sandbox/busybox/, for the guests' root and boot --lrzsz; and the QEMU of $QEMU_SUITE (${QEMU_DEBS[*]}) into sandbox/qemu/ (through a package list of its own: the host's apt sources and its QEMU stay as they are), which the arm and arm64 guests run on (when it cannot be had: a warning, and they run on the host's QEMU). An opt-in arch (column setup; ${optin:-none}) is set up only when --arch names it, or when build or rootfs need it for one of its flavours (and so boot, run, size...). Then check that each tool works, not only that its package is there (for each arch set up: a static C program compiled and checked with readelf, its QEMU machine, gdb-multiarch's architecture; the kernel's host tools and libraries, picocom, sz, the Python modules of the tests); a tool that does not work is named with its package, exit 1.
EOF
	options_help setup
}

as_root() {
	if ((EUID == 0)); then "$@"; else sudo "$@"; fi
}

# busybox_deb [ARCH]: the busybox-static package of ARCH (default arm)
# in sandbox/busybox/.
busybox_deb() { guest_deb busybox-static "$@"; }

cmd_setup() {
	parse_options setup "$@"
	no_args setup
	local a
	local -a arches=()
	IFS=, read -ra arches <<<"${OPT_arch:-}"
	for a in "${arches[@]}"; do
		arch_known "$a" ||
			usage_error "setup: unknown arch '$a' (known: $(arch_names | paste -sd' '))"
	done
	setup_host loud "${arches[@]}"
}

# setup_host quiet|loud [ARCH...]: install what is missing for the arches
# of setup_arches ARCH... (build and rootfs name theirs: an opt-in arch is
# set up when one of its flavours is built); quiet says nothing when
# nothing is missing (build and rootfs call it, so that `boot` alone is
# enough).
setup_host() {
	local mode=$1 p a missing=() updated="" no_deb=() no_qemu=""
	shift
	local -a all arches
	local -A have=()
	mapfile -t arches < <(setup_arches "$@")
	mapfile -t all < <(all_packages "${arches[@]}")
	while read -r p; do
		have[$p]=1
	done < <(dpkg-query -W -f='${Package} ${Status}\n' "${all[@]%%:*}" 2>/dev/null |
		awk '/ ok installed$/ { print $1 }')
	for p in "${all[@]}"; do
		[[ -n ${have[$p]:-} ]] || missing+=("$p")
	done
	for a in "${arches[@]}"; do
		for p in "${GUEST_DEBS[@]}"; do
			[[ -n $(guest_deb "$p" "$a") ]] || no_deb+=("$p $a")
		done
	done
	# (a quiet setup does not try again after a fetch that failed)
	if [[ " ${all[*]} " == *" ${QEMU_DEBS[0]} "* &&
		! -x $SANDBOX/qemu/usr/bin/${QEMU_DEBS[0]} &&
		($mode == loud || ! -e $SANDBOX/qemu/unavailable) ]]; then
		no_qemu=1
	fi
	[[ $mode == quiet && ${#missing[@]} -eq 0 && ${#no_deb[@]} -eq 0 &&
		-z $no_qemu ]] && return 0
	if ((${#missing[@]})); then
		# What was installed is checked below, even from a quiet setup.
		mode=loud
		step setup "installing: ${missing[*]}"
		apt_update
		updated=1
		run_logged install "$LOGS/setup-apt-install.log" \
			as_root env DEBIAN_FRONTEND=noninteractive \
			apt-get install -y --no-install-recommends "${missing[@]}"
	fi
	for p in "${no_deb[@]}"; do
		fetch_guest_deb "${p% *}" "${p#* }" "$updated"
		updated=1
	done
	if [[ -n $no_qemu ]]; then
		mode=loud
		fetch_qemu
	fi
	step setup "host ready"
	[[ $mode == quiet ]] || setup_check "${arches[@]}"
}

# apt_update: apt-get update, three tries 20 s apart. A mirror caught
# syncing fails one index ("File has unexpected size ... Mirror sync in
# progress?", 5 December: bookworm-security's armhf) while the packages
# setup needs are in the others: after the third failure it says so and
# goes on, and the install or download that follows fails, with its own
# log, when a list it needs is missing.
apt_update() {
	local try log=$LOGS/setup-apt.log
	mkdir -p "$LOGS"
	step update "(log: ${log#"$MINITTY_ROOT"/})"
	for try in 1 2 3; do
		errexit_run as_root apt-get update >"$log" 2>&1 && return 0
		((try == 3)) || sleep 20
	done
	sed -n 's/^\(E\|W\|Err\):/    &/p' "$log" | tail -n 5 >&2
	warn "apt-get update failed 3 times (log: $log): going on with the package lists there are"
}


# guest_deb PKG [ARCH]: the Debian package PKG of ARCH (default arm) in
# sandbox/busybox/, where the guests' packages are kept; nothing (and
# success) when there is none.
guest_deb() {
	local p
	for p in "$SANDBOX/busybox/${1}_"*"_$(arch_field "${2:-arm}" debarch).deb"; do
		[[ -e $p ]] && { echo "$p"; break; }
	done
	return 0
}

# fetch_guest_deb PKG ARCH [UPDATED]: the Debian package PKG of ARCH's
# debarch into sandbox/busybox/ (a copy in /tmp first, else apt-get
# download, after an apt-get update unless UPDATED).
fetch_guest_deb() {
	local name=$1 arch=$2 updated=${3:-} debarch pkg cached p
	debarch=$(arch_field "$arch" debarch)
	pkg=$name:$debarch
	mkdir -p "$SANDBOX/busybox"
	if [[ $debarch != "$(dpkg --print-architecture)" ]] &&
		! dpkg --print-foreign-architectures | grep -qx "$debarch"; then
		step setup "adding the $debarch architecture"
		as_root dpkg --add-architecture "$debarch"
		updated=
	fi
	cached=$(compgen -G "/tmp/${name}_*_$debarch.deb" | head -n 1 || true)
	if [[ -n $cached ]]; then
		step setup "$name for $debarch: $cached"
		cp "$cached" "$SANDBOX/busybox/"
	else
		step setup "downloading $pkg"
		[[ -n $updated ]] || apt_update
		(cd "$SANDBOX/busybox" && apt-get download "$pkg") \
			>"$LOGS/setup-$name.log" 2>&1 ||
			die "setup: apt-get download $pkg failed (log: $LOGS/setup-$name.log)"
	fi
	# apt-get download names the file with an url-encoded epoch (1%3a).
	for p in "$SANDBOX"/busybox/*%3a*.deb; do
		[[ -e $p ]] && mv "$p" "${p//%3a/_}"
	done
	return 0
}

# fetch_qemu: QEMU_DEBS of QEMU_SUITE, from the host's Debian mirror,
# unpacked into sandbox/qemu/. When they cannot be had, say so and leave
# sandbox/qemu/unavailable with the reason: the guests then run on the
# host's QEMU (the bench names the QEMU it measured with).
fetch_qemu() {
	local dir=$SANDBOX/qemu log=$LOGS/setup-qemu.log mirror tmp deb
	local apt=$dir/apt
	local -a o=(-o "Dir::Etc::SourceList=$apt/sources.list"
		-o "Dir::Etc::SourceParts=$apt/none" -o "Dir::State::Lists=$apt/lists"
		-o "Dir::Cache=$apt/cache")
	# (the mirror the host takes the suite's release from)
	mirror=$(apt-cache policy 2>/dev/null |
		awk -v s="${QEMU_SUITE%%-*}/main" '$3 == s { print $2; exit }')
	mirror=${mirror:-http://deb.debian.org/debian}
	step setup "downloading ${QEMU_DEBS[*]} ($QEMU_SUITE) into sandbox/qemu"
	mkdir -p "$apt/lists/partial" "$apt/cache/archives/partial" "$LOGS"
	echo "deb $mirror $QEMU_SUITE main" >"$apt/sources.list"
	tmp=$(mktemp -d "$dir/unpack.XXXXXX")
	if errexit_run apt-get "${o[@]}" update >"$log" 2>&1 &&
		(cd "$tmp" && apt-get "${o[@]}" download "${QEMU_DEBS[@]/%//$QEMU_SUITE}") >>"$log" 2>&1; then
		for deb in "$tmp"/*.deb; do
			dpkg-deb -x "$deb" "$tmp/root"
		done
		rm -rf "${dir:?}/usr"
		mv "$tmp/root/usr" "$dir/usr"
		rm -rf "$tmp" "$dir/unavailable"
		step setup "$("$dir/usr/bin/${QEMU_DEBS[0]}" --version | head -n 1)"
		return 0
	fi
	rm -rf "$tmp"
	echo "$QEMU_SUITE's ${QEMU_DEBS[*]} could not be downloaded (log: $log)" >"$dir/unavailable"
	warn "setup: $(cat "$dir/unavailable"): the guests run on the host's QEMU"
}

# setup_check ARCH...: every tool a later step compiles or runs with
# works (for the arches named); each one that does not is named with its
# package, then exit 1.
setup_check() {
	local tmp bad=() out a pkgs cross qemu machine
	local -a arches=("$@")
	tmp=$(mktemp -d)
	# shellcheck disable=SC2064 # expand now: tmp is local
	trap "rm -rf '$tmp'" RETURN
	# try PACKAGE WHAT CMD...: CMD must succeed.
	try() {
		local pkg=$1 what=$2
		shift 2
		"$@" >>"${MINITTY_SETUP_LOG:-/dev/null}" 2>&1 || bad+=("$what (package $pkg)")
	}
	# The guest programs: static executables of each arch with termios
	# and ioctls.
	printf '%s\n' '#include <stdio.h>' '#include <termios.h>' \
		'#include <sys/ioctl.h>' '#include <poll.h>' \
		'int main(void) { struct termios t; return tcgetattr(0, &t) ? 0 : 1; }' \
		>"$tmp/guest.c"
	for a in "${arches[@]}"; do
		pkgs=$(arch_packages "$a")
		cross=$(arch_field "$a" cross)
		try "$pkgs" "${cross}gcc -static (a static $a C program)" \
			"${cross}gcc" -static -O2 -Wall -o "$tmp/guest-$a" "$tmp/guest.c"
		if [[ -f $tmp/guest-$a ]]; then
			out=$("${cross}readelf" -h "$tmp/guest-$a" 2>&1 || true)
			[[ $out =~ Machine:[[:space:]]+$(arch_field "$a" elf)$'\n' ]] ||
				bad+=("${cross}readelf -h says the $a program is not $(arch_field "$a" elf) (packages $pkgs)")
		fi
		qemu=$(qemu_program "$a" "$SANDBOX")
		machine=$(arch_field "$a" machine)
		out=$("$qemu" -M help 2>&1 || true)
		grep -q "^${machine%%,*} " <<<"$out" || bad+=("$qemu -M ${machine%%,*} (packages $pkgs)")
		out=$(gdb-multiarch -q -nx -batch -ex "set architecture $(arch_field "$a" gdbarch)" \
			-ex 'python print("py-" + "ok")' 2>&1 || true)
		[[ $out == *"set to \"$(arch_field "$a" gdbarch)\""*py-ok* ]] ||
			bad+=("gdb-multiarch with $(arch_field "$a" gdbarch) and Python (package gdb-multiarch)")
		try "$(busybox_pkg "$a")" "the $a busybox package in sandbox/busybox" \
			dpkg-deb --field "$(busybox_deb "$a")" Architecture
	done
	# The kernel's host tools and libraries.
	printf '%s\n' '#include <gelf.h>' '#include <openssl/opensslv.h>' \
		'int main(void) { return elf_version(EV_CURRENT) == EV_NONE; }' \
		>"$tmp/host.c"
	try "gcc libc6-dev libelf-dev libssl-dev" "gcc with libelf and the openssl headers" \
		gcc -o "$tmp/host" "$tmp/host.c" -lelf
	try "gcc libelf-dev" "a host program linked with libelf" "$tmp/host"
	try flex flex flex --version
	try bison bison bison --version
	[[ $(echo '6*7' | bc 2>/dev/null) == 42 ]] || bad+=("bc (package bc)")
	try make make make --version
	try cpio cpio cpio --version
	try perl perl perl -e 'use Getopt::Long; use Term::ANSIColor; exit 0'
	try xz-utils "xz" xz --version
	try git git git --version
	try ccache ccache ccache --version
	try linux-source-6.12 "the kernel source ($SRC_TARBALL)" test -s "$SRC_TARBALL"
	# The tools around the guest.
	try picocom picocom picocom --help
	try lrzsz "sz and rz" sz --version
	try shellcheck shellcheck shellcheck --version
	try sparse sparse sparse --version
	try "python3 python3-pexpect python3-ply python3-git python3-pyflakes" \
		"$PYTHON with the modules the tests and check import (pexpect, ply, git, pyflakes)" \
		"$PYTHON" -c 'import pexpect, ply, git, pyflakes'
	unset -f try
	if ((${#bad[@]})); then
		local list
		list=$(printf '; %s' "${bad[@]}")
		die "setup: does not work: ${list#; }; install the package(s) named (details: rerun with MINITTY_SETUP_LOG=FILE)"
	fi
	step check "every tool works (${arches[*]}: C, QEMU, gdb; kernel host tools, picocom, lrzsz, Python)"
}

fetch_options() { :; }
fetch_help() {
	cat <<EOF
usage: minitty fetch
Unpack $SRC_TARBALL into sandbox/linux as a git repository
(branch minitty) whose first commit is the pristine tree, tagged
'pristine'. Does nothing when the tree already exists.
EOF
	options_help fetch
}

tree_ready() { git -C "$1" rev-parse -q --verify refs/tags/pristine >/dev/null 2>&1; }

cmd_fetch() {
	parse_options fetch "$@"
	no_args fetch
	fetch_tree "$SANDBOX/linux"
}

# fetch_tree DIR: create the pristine tree in DIR unless it is there.
fetch_tree() {
	local dir=$1
	if tree_ready "$dir"; then
		step fetch "tree present: ${dir#"$MINITTY_ROOT"/} (tag pristine)"
		return 0
	fi
	[[ ! -e $dir ]] || die "fetch: $dir exists but has no 'pristine' tag; move it away first"
	[[ -f $SRC_TARBALL ]] || setup_host loud
	[[ -f $SRC_TARBALL ]] || die "fetch: $SRC_TARBALL missing (package linux-source-6.12)"
	local tmp=$dir.fetching
	rm -rf "$tmp"
	mkdir -p "$tmp"
	run_logged unpack "$LOGS/fetch.log" \
		tar -C "$tmp" --strip-components=1 -xJf "$SRC_TARBALL"
	run_logged commit "$LOGS/fetch-git.log" fetch_commit "$tmp"
	mv "$tmp" "$dir"
}

fetch_commit() {
	local dir=$1
	# The Debian tarball's .gitignore ends with a packaging block ('/*',
	# '!/debian/') that hides the whole tree from git: drop it.
	# The block is a blank line, '#', '# Debian packaging: ...' and on to
	# the end of the file.
	awk '/^# Debian packaging/ { exit } { l[n++] = $0 }
		END { while (n && (l[n-1] == "" || l[n-1] == "#")) n--
			for (i = 0; i < n; i++) print l[i] }' "$dir/.gitignore" >"$dir/.gitignore.new"
	mv "$dir/.gitignore.new" "$dir/.gitignore"
	git -C "$dir" init -q -b minitty
	# 80,000 files: the fastest zlib level halves the time of the add.
	git -C "$dir" -c core.looseCompression=1 add -A
	git -C "$dir" -c user.name=minitty -c user.email=minitty@localhost \
		commit -q -m "Linux 6.12 pristine (Debian linux-source-6.12)" -m \
		"Unpacked from $SRC_TARBALL. Only change: the
Debian packaging block at the end of .gitignore ('/*' with '!/debian/')
is dropped so that the tree behaves like an upstream checkout."
	git -C "$dir" tag pristine
}
