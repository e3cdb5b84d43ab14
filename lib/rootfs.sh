# shellcheck shell=bash
# rootfs: the guest's initramfs (busybox + rootfs-overlay/ + tests/guest/*.c).

ROOTFS=$SANDBOX/rootfs
INITRAMFS=$ROOTFS/initramfs.cpio.gz

rootfs_options() { :; }
rootfs_help() {
	cat <<EOF
usage: minitty rootfs
Build sandbox/rootfs/initramfs.cpio.gz (gzip, newc) from the armhf
busybox-static package (its applet links are made by /init at boot with
busybox --install -s), rootfs-overlay/, and each tests/guest/NAME.c
compiled with ${CROSS}gcc -static -O2 -Wall as /usr/bin/NAME. The archive
is written with the kernel's usr/gen_init_cpio, so /dev/console is a real
node without root privileges. The archive is checked: /init, busybox and
every guest program present, the programs ARM executables. Rebuilt only
when an input changed (the toolchain and its headers included).
EOF
	options_help rootfs
}

cmd_rootfs() {
	parse_options rootfs "$@"
	no_args rootfs
	build_rootfs
}

rootfs_inputs() {
	{
		busybox_deb
		echo "$MINITTY_ROOT/lib/rootfs.sh"
		find "$MINITTY_ROOT/rootfs-overlay" "$MINITTY_ROOT/tests/guest" -type f 2>/dev/null
	} | sort
}

rootfs_key() {
	{
		rootfs_inputs | while read -r f; do
			[[ -f $f ]] && printf '%s %s\n' "${f#"$MINITTY_ROOT"/}" "$(sha256sum <"$f")"
		done
		"${CROSS}gcc" --version 2>&1 | head -n 1 || true
		find "$MINITTY_ROOT/rootfs-overlay" -printf '%P %m\n' 2>/dev/null | sort
		# The toolchain decides the programs too: its packages, and each
		# program as preprocessed with the headers there are now (or the
		# error saying which is missing), so a repaired toolchain rebuilds.
		dpkg-query -W -f='${Package} ${Version}\n' gcc-arm-linux-gnueabihf \
			libc6-dev-armhf-cross binutils-arm-linux-gnueabihf 2>&1 || true
		for f in "$MINITTY_ROOT"/tests/guest/*.c; do
			[[ -e $f ]] || continue
			"${CROSS}gcc" -E "$f" 2>&1 | sha256sum || true
		done
	} | sha256sum | cut -d' ' -f1
}

build_rootfs() {
	setup_host quiet
	need_cmd "${CROSS}gcc" rootfs
	local key
	lock "$ROOTFS.lock"
	key=$(rootfs_key)
	if [[ -f $INITRAMFS && $(cat "$ROOTFS/key" 2>/dev/null) == "$key" ]]; then
		step rootfs "unchanged: ${INITRAMFS#"$MINITTY_ROOT"/}"
		unlock
		return 0
	fi
	say "rootfs"
	run_logged rootfs "$LOGS/rootfs.log" make_rootfs
	echo "$key" >"$ROOTFS/key"
	unlock
	step "done" "${INITRAMFS#"$MINITTY_ROOT"/}"
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
	local stage=$ROOTFS/stage tool c name
	tool=$(gen_init_cpio)
	rm -rf "$stage" "$ROOTFS/busybox"
	mkdir -p "$stage" "$ROOTFS/busybox"
	dpkg-deb -x "$(busybox_deb)" "$ROOTFS/busybox"
	mkdir -p "$stage"/{bin,sbin,usr/bin,usr/sbin,dev,proc,sys,tmp,root,home/user,etc,var/run}
	install -m 0755 "$ROOTFS/busybox/bin/busybox" "$stage/bin/busybox"
	# Enough links to run /init; it makes the others (busybox --install -s).
	ln -s busybox "$stage/bin/sh"
	cp -a "$MINITTY_ROOT/rootfs-overlay/." "$stage/"
	for c in "$MINITTY_ROOT"/tests/guest/*.c; do
		[[ -e $c ]] || continue
		name=$(basename "$c" .c)
		echo "compiling $c"
		"${CROSS}gcc" -static -O2 -Wall -o "$stage/usr/bin/$name" "$c"
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
	} >"$ROOTFS/cpio.list"
	"$tool" "$ROOTFS/cpio.list" | gzip -n -9 >"$INITRAMFS.new"
	verify_rootfs "$INITRAMFS.new"
	mv "$INITRAMFS.new" "$INITRAMFS"
}

# verify_rootfs ARCHIVE: /init, busybox and every tests/guest/NAME.c as
# /usr/bin/NAME are in ARCHIVE, the programs as ARM executables.
verify_rootfs() {
	local archive=$1 tmp c name p
	local -a want=(init bin/busybox)
	for c in "$MINITTY_ROOT"/tests/guest/*.c; do
		[[ -e $c ]] && want+=("usr/bin/$(basename "$c" .c)")
	done
	tmp=$(mktemp -d)
	# shellcheck disable=SC2064 # expand now: tmp is local
	trap "rm -rf '$tmp'" RETURN
	(cd "$tmp" && gzip -dc "$archive" | cpio -idm --quiet "${want[@]}")
	for p in "${want[@]}"; do
		[[ -s $tmp/$p ]] || { echo "rootfs: $p is not in the archive" >&2; return 1; }
		[[ $p == init ]] && continue
		"${CROSS}readelf" -h "$tmp/$p" | grep -Eq 'Machine:[[:space:]]+ARM$' ||
			{ echo "rootfs: $p is not an ARM executable" >&2; return 1; }
	done
	echo "verified: ${want[*]}"
}
