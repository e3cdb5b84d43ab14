# shellcheck shell=bash
# rootfs: the guest's initramfs (busybox + rootfs-overlay/ + tests/guest/*.c).

# rootfs_dir ARCH, initramfs ARCH: where ARCH's root is built.
rootfs_dir() { printf '%s/rootfs/%s\n' "$SANDBOX" "$1"; }
initramfs() { printf '%s/initramfs.cpio.gz\n' "$(rootfs_dir "$1")"; }

rootfs_options() { echo "arch||ARCH|the guest's architecture (configs/arches; default arm)"; }
rootfs_help() {
	cat <<EOF
usage: minitty rootfs [--arch ARCH]
Build sandbox/rootfs/ARCH/initramfs.cpio.gz (gzip, newc) from ARCH's
busybox-static package (its applet links are made by /init at boot with
busybox --install -s), rootfs-overlay/ (its /init and /etc/inittab*
naming ARCH's serial port instead of ttyAMA0), and each tests/guest/NAME.c
compiled with ARCH's gcc (-static -O2 -Wall, TTY_PATH the arch's serial
port: /dev/ttyAMA0, /dev/ttyS0) as /usr/bin/NAME; for an arch whose
kernel runs the programs of another (configs/arches, column compat: arm's
on arm64), each also compiled with that arch's gcc as /usr/bin/NAME32, so
that a test can go through the kernel's 32-bit compat path (the
differential suite runs mtt32 too). The archive is written
with the kernel's usr/gen_init_cpio, so /dev/console is a real node
without root privileges. The archive is checked: /init, busybox and every
guest program present, the programs executables of ARCH (NAME32 of the
compat arch). Rebuilt only
when an input changed (the toolchain and its headers included).
EOF
	options_help rootfs
}

cmd_rootfs() {
	parse_options rootfs "$@"
	no_args rootfs
	local arch=${OPT_arch:-arm}
	arch_names | grep -qx -- "$arch" ||
		usage_error "rootfs: unknown arch '$arch' (known: $(arch_names | paste -sd' '))"
	build_rootfs "$arch"
}

# guest_cc ARCH GUEST FILE OUT: compile guest program FILE with ARCH's
# compiler for a guest of arch GUEST (whose serial port it opens).
guest_cc() {
	"$(arch_field "$1" cross)gcc" -static -O2 -Wall \
		-DTTY_PATH="\"/dev/$(arch_field "$2" console)\"" -o "$4" "$3"
}

rootfs_inputs() {
	{
		busybox_deb "$1"
		echo "$MINITTY_ROOT/lib/rootfs.sh"
		find "$MINITTY_ROOT/rootfs-overlay" "$MINITTY_ROOT/tests/guest" -type f 2>/dev/null
	} | sort
}

# guest_arches ARCH: ARCH, then its compat arch if it has one, one a line.
guest_arches() {
	echo "$1"
	arch_field "$1" compat
}

# guest_suffix ARCH A: the suffix of the guest programs of arch A in
# ARCH's rootfs: none for ARCH's own, 32 for its compat arch's.
guest_suffix() {
	[[ $1 == "$2" ]] || echo 32
}

rootfs_key() {
	local arch=$1 a cross
	{
		arch_field "$arch" console
		rootfs_inputs "$arch" | while read -r f; do
			[[ -f $f ]] && printf '%s %s\n' "${f#"$MINITTY_ROOT"/}" "$(sha256sum <"$f")"
		done
		find "$MINITTY_ROOT/rootfs-overlay" -printf '%P %m\n' 2>/dev/null | sort
		# The toolchain decides the programs too: its packages, and each
		# program as preprocessed with the headers there are now (or the
		# error saying which is missing), so a repaired toolchain rebuilds.
		for a in $(guest_arches "$arch"); do
			cross=$(arch_field "$a" cross)
			echo "$a"
			"${cross}gcc" --version 2>&1 | head -n 1 || true
			# shellcheck disable=SC2046 # one word a package
			dpkg-query -W -f='${Package} ${Version}\n' $(arch_packages "$a") 2>&1 || true
			for f in "$MINITTY_ROOT"/tests/guest/*.c; do
				[[ -e $f ]] || continue
				"${cross}gcc" -E "$f" 2>&1 | sha256sum || true
			done
		done
	} | sha256sum | cut -d' ' -f1
}

# build_rootfs [ARCH]: ARCH's initramfs (default arm), when stale.
build_rootfs() {
	local arch=${1:-arm} key dir image a
	# shellcheck disable=SC2046 # one word an arch
	setup_host quiet $(guest_arches "$arch")
	for a in $(guest_arches "$arch"); do
		need_cmd "$(arch_field "$a" cross)gcc" rootfs
	done
	dir=$(rootfs_dir "$arch")
	image=$(initramfs "$arch")
	mkdir -p "$dir"
	lock "$dir.lock"
	key=$(rootfs_key "$arch")
	if [[ -f $image && $(cat "$dir/key" 2>/dev/null) == "$key" ]]; then
		step rootfs "unchanged: ${image#"$MINITTY_ROOT"/}"
		unlock
		return 0
	fi
	say "rootfs ($arch)"
	run_logged rootfs "$LOGS/rootfs-$arch.log" make_rootfs "$arch"
	echo "$key" >"$dir/key"
	unlock
	step "done" "${image#"$MINITTY_ROOT"/}"
}

# lrzsz_dir ARCH: print the directory that --lrzsz lays over an ARCH
# guest's root (sandbox/rootfs/ARCH-lrzsz): Debian's lrzsz of ARCH, sz and
# rz in /usr/bin (sb, sx, rb and rx: links, the programs go by their
# name), and the C library they link: the loader where their
# PT_INTERP names it and libc.so.6 in /lib, from ARCH's cross libc6 (the
# host's for the host's arch). The guests' own programs are static; these
# are Debian's. The package is setup's (GUEST_DEBS: build_rootfs, which
# boot, run and bench call first, fetches it); the directory is rebuilt
# when the package or the library changes (under a lock). Steps on
# stderr.
lrzsz_dir() {
	local arch=$1 deb dir cross libdir interp key x n
	deb=$(guest_deb lrzsz "$arch")
	[[ -n $deb ]] || die "lrzsz: no lrzsz package of $arch in sandbox/busybox (run: minitty setup)"
	cross=$(arch_field "$arch" cross)
	if [[ -z $cross ]]; then
		libdir=/lib/$(gcc -print-multiarch)
	else
		libdir=/usr/${cross%-}/lib
	fi
	[[ -f $libdir/libc.so.6 ]] || die "lrzsz: no $libdir/libc.so.6 (minitty setup installs it)"
	dir=$(rootfs_dir "$arch")-lrzsz
	key="$(basename "$deb") $(sha256sum <"$libdir/libc.so.6" | cut -c1-16)"
	lock "$dir.lock"
	if [[ -f $dir/.key && $(cat "$dir/.key") == "$key" ]]; then
		unlock
		echo "$dir"
		return 0
	fi
	step lrzsz "$(basename "$deb") and $libdir's C library: ${dir#"$MINITTY_ROOT"/}" >&2
	x=$(mktemp -d)
	# shellcheck disable=SC2064 # expand now: x is local
	trap "rm -rf '$x'" RETURN
	dpkg-deb -x "$deb" "$x/deb"
	mkdir -p "$x/root/usr/bin" "$x/root/lib"
	for n in sz rz; do
		cp "$x/deb/usr/bin/$n" "$x/root/usr/bin/$n"
	done
	ln -s sz "$x/root/usr/bin/sb"
	ln -s sz "$x/root/usr/bin/sx"
	ln -s rz "$x/root/usr/bin/rb"
	ln -s rz "$x/root/usr/bin/rx"
	interp=$(LC_ALL=C readelf -l "$x/deb/usr/bin/sz" |
		sed -n 's/.*Requesting program interpreter: \(.*\)]$/\1/p')
	[[ $interp == /* ]] || die "lrzsz: no program interpreter in $(basename "$deb")'s sz"
	mkdir -p "$x/root${interp%/*}"
	cp -L "$libdir/${interp##*/}" "$x/root$interp"
	cp -L "$libdir/libc.so.6" "$x/root/lib/libc.so.6"
	echo "$key" >"$x/root/.key"
	rm -rf "$dir"
	mv "$x/root" "$dir"
	unlock
	echo "$dir"
}

# gen_init_cpio is built from the kernel tree with the host compiler.
gen_init_cpio() {
	local tool=$SANDBOX/host/gen_init_cpio src=$SANDBOX/linux/usr/gen_init_cpio.c
	if [[ ! -x $tool || $src -nt $tool ]]; then
		[[ -f $src ]] || fetch_tree "$SANDBOX/linux" >&2
		mkdir -p "$SANDBOX/host"
		gcc -O2 -o "$tool" "$src"
	fi
	echo "$tool"
}

make_rootfs() {
	local arch=$1 dir stage tool c name image a
	dir=$(rootfs_dir "$arch")
	stage=$dir/stage
	image=$(initramfs "$arch")
	tool=$(gen_init_cpio)
	rm -rf "$stage" "$dir/busybox"
	mkdir -p "$stage" "$dir/busybox"
	dpkg-deb -x "$(busybox_deb "$arch")" "$dir/busybox"
	mkdir -p "$stage"/{bin,sbin,usr/bin,usr/sbin,dev,proc,sys,tmp,root,home/user,etc,var/run}
	install -m 0755 "$dir/busybox/bin/busybox" "$stage/bin/busybox"
	# Enough links to run /init; it makes the others (busybox --install -s).
	ln -s busybox "$stage/bin/sh"
	cp -a "$MINITTY_ROOT/rootfs-overlay/." "$stage/"
	# The overlay names the arm serial port (ttyAMA0): the arch's instead.
	sed -i "s/ttyAMA0/$(arch_field "$arch" console)/g" "$stage/init" "$stage"/etc/inittab*
	for a in $(guest_arches "$arch"); do
		for c in "$MINITTY_ROOT"/tests/guest/*.c; do
			[[ -e $c ]] || continue
			name=$(basename "$c" .c)$(guest_suffix "$arch" "$a")
			echo "compiling $c for $a"
			guest_cc "$a" "$arch" "$c" "$stage/usr/bin/$name"
		done
	done
	{
		(cd "$stage" && find . -mindepth 1 | sort) | while read -r p; do
			p=${p#.}
			local mode uid=0 gid=0
			mode=$(stat -c '%a' "$stage$p")
			[[ $p == /home/user* ]] && uid=1000 gid=1000
			if [[ -L $stage$p ]]; then
				echo "slink $p $(readlink "$stage$p") $mode $uid $gid"
			elif [[ -d $stage$p ]]; then
				[[ $p == /tmp ]] && mode=1777
				echo "dir $p $mode $uid $gid"
			else
				echo "file $p $stage$p $mode $uid $gid"
			fi
		done
		echo "nod /dev/console 0600 0 0 c 5 1"
	} >"$dir/cpio.list"
	"$tool" "$dir/cpio.list" | gzip -n -9 >"$image.new"
	verify_rootfs "$arch" "$image.new"
	mv "$image.new" "$image"
}

# verify_rootfs ARCH ARCHIVE: /init, busybox and every tests/guest/NAME.c
# as /usr/bin/NAME are in ARCHIVE, the programs as executables of ARCH
# (and as /usr/bin/NAME32, executables of ARCH's compat arch, if it has
# one).
verify_rootfs() {
	local arch=$1 archive=$2 tmp c p a
	local -a want=(init bin/busybox)
	# each program's arch
	local -A of=([bin/busybox]=$arch)
	for a in $(guest_arches "$arch"); do
		for c in "$MINITTY_ROOT"/tests/guest/*.c; do
			[[ -e $c ]] || continue
			p=usr/bin/$(basename "$c" .c)$(guest_suffix "$arch" "$a")
			want+=("$p")
			of[$p]=$a
		done
	done
	tmp=$(mktemp -d)
	# shellcheck disable=SC2064 # expand now: tmp is local
	trap "rm -rf '$tmp'" RETURN
	(cd "$tmp" && gzip -dc "$archive" | cpio -idm --quiet "${want[@]}")
	for p in "${want[@]}"; do
		[[ -s $tmp/$p ]] || { echo "rootfs: $p is not in the archive" >&2; return 1; }
		[[ $p == init ]] && continue
		a=${of[$p]}
		"$(arch_field "$a" cross)readelf" -h "$tmp/$p" |
			grep -Eq "Machine:[[:space:]]+$(arch_field "$a" elf)\$" ||
			{ echo "rootfs: $p is not an executable of $a ($(arch_field "$a" elf))" >&2; return 1; }
	done
	echo "verified: ${want[*]}"
}
