# shellcheck shell=bash
# size, flavours, check, test.

# Not counted by size: the UART driver and earlycon (see the cover letter):
# the PL011 on arm, the 8250 (drivers/tty/serial/8250/) on x86_64.
SIZE_EXCLUDE='/(amba-pl011|earlycon)\.o$|/8250/'

size_options() {
	echo "$FLAVOUR_OPTION"
	no_build_opt
	echo "options|||the cost of each minitty option instead (see above)"
}
size_help() {
	cat <<EOF
usage: minitty size [--flavour F | --options] [--no-build]
size (the binutils of F's arch) of every object under drivers/tty/ that
vmlinux links (read from the thin archive drivers/tty/built-in.a), except
the UART driver (amba-pl011.o, drivers/tty/serial/8250/) and earlycon.o,
with a TOTALS line; then vmlinux.
Builds F first when it is stale (see: minitty build --help).

--options: the bytes each minitty option adds. The options are those
configs/tiny.config turns off (minitty-tiny). Each is built on
minitty-tiny with the options it depends on (drivers/tty/Kconfig), as
option flavour minitty-tiny+OPTION... in sandbox/build/, and compared
with the build of those dependencies alone: the TTY/serial layer's
TOTALS, vmlinux (text+data+bss) and scripts/bloat-o-meter's total
(symbols). Then the totals of minitty-tiny and of minitty (the defaults:
every option on).
EOF
	options_help size
}

# tiny_options: the minitty options, as configs/tiny.config lists them.
tiny_options() {
	sed -n 's/^CONFIG_\(MINITTY_[A-Z0-9_]*\)=n$/\1/p' "$CONFIGS/tiny.config"
}

# option_deps OPTION: the minitty options OPTION depends on, directly or
# not, from its "depends on" lines in drivers/tty/Kconfig; deepest first.
option_deps() {
	local kconfig=$SANDBOX/linux/drivers/tty/Kconfig dep
	while read -r dep; do
		[[ $dep == MINITTY_SERIAL ]] && continue
		option_deps "$dep"
		echo "$dep"
	done < <(awk -v o="config $1" '
		$0 == o { in_it = 1; next }
		/^(config|menuconfig|if|endif|menu|endmenu|source|choice)/ { in_it = 0 }
		in_it && /^[ \t]+depends on/ {
			while (match($0, /MINITTY_[A-Z0-9_]+/)) {
				print substr($0, RSTART, RLENGTH)
				$0 = substr($0, RSTART + RLENGTH)
			}
		}' "$kconfig") | awk '!seen[$0]++'
}

# option_flavour OPTION...: print the option flavour minitty-tiny+OPTION...
# (the options in configs/tiny.config order) after writing its fragment.
option_flavour() {
	local name=minitty-tiny o out
	for o in $(tiny_options); do
		[[ " $* " == *" $o "* ]] && name+=+$o
	done
	if [[ $name != minitty-tiny ]]; then
		out=$(flavour_build "$name")
		mkdir -p "$out"
		# rewritten only when it changes: a new file makes the build stale
		tr '+' '\n' <<<"${name#minitty-tiny+}" | sed 's/^/CONFIG_/; s/$/=y/' >"$out/options.config.new"
		if cmp -s "$out/options.config.new" "$out/options.config"; then
			rm "$out/options.config.new"
		else
			mv "$out/options.config.new" "$out/options.config"
		fi
	fi
	printf '%s\n' "$name"
}

# layer_bytes FLAVOUR: text+data+bss of the TTY/serial layer (size's TOTALS).
layer_bytes() {
	local out
	local -a objs
	out=$(flavour_build "$1")
	mapfile -t objs < <(tty_objects "$1")
	if ((${#objs[@]} == 0)); then
		echo 0
		return
	fi
	(cd "$out" && "$(flavour_arch_field "$1" cross)size" -t "${objs[@]}") |
		awk '/\(TOTALS\)/ { print $4 }'
}

# vmlinux_bytes FLAVOUR: text+data+bss of vmlinux.
vmlinux_bytes() {
	"$(flavour_arch_field "$1" cross)size" "$(flavour_build "$1")/vmlinux" | awk 'NR == 2 { print $4 }'
}

# bloat_total OLD NEW: scripts/bloat-o-meter's total change from flavour
# OLD's vmlinux to NEW's. (Its nm parsing breaks on ARM's unnamed local
# symbols: a wrapper leaves them out.)
bloat_total() {
	local tmp
	tmp=$(mktemp -d)
	# shellcheck disable=SC2064 # expand now: tmp is local
	trap "rm -rf '$tmp'" RETURN
	printf '#!/bin/sh\n%snm "$@" | awk '\''NF == 3'\''\n' \
		"$(flavour_arch_field "$1" cross)" >"$tmp/x-nm"
	chmod +x "$tmp/x-nm"
	"$SANDBOX/linux/scripts/bloat-o-meter" -p "$tmp/x-" \
		"$(flavour_build "$1")/vmlinux" "$(flavour_build "$2")/vmlinux" |
		sed -n '1s/.*up\/down: .* (\(-\{0,1\}[0-9]*\))$/\1/p'
}

# size_of_options: the table of size --options.
size_of_options() {
	local o base flavour
	local -a deps rows=()
	[[ -f $CONFIGS/tiny.config ]] || die "size: configs/tiny.config is missing: no options to size"
	ensure_current minitty-tiny >&2
	for o in $(tiny_options); do
		mapfile -t deps < <(option_deps "$o")
		base=$(option_flavour "${deps[@]}")
		flavour=$(option_flavour "${deps[@]}" "$o")
		ensure_current "$base" >&2
		ensure_current "$flavour" >&2
		rows+=("$(printf '%-22s %-20s %9s %9s %9s' "$o" \
			"$(IFS=,; echo "${deps[*]:--}")" \
			"+$(($(layer_bytes "$flavour") - $(layer_bytes "$base")))" \
			"+$(($(vmlinux_bytes "$flavour") - $(vmlinux_bytes "$base")))" \
			"+$(bloat_total "$base" "$flavour")")")
	done
	ensure_current minitty >&2
	say "minitty options: the bytes each adds to minitty-tiny with the options it needs"
	printf '%-22s %-20s %9s %9s %9s\n' option needs "TTY layer" vmlinux "bloat-o-m"
	printf '%s\n' "${rows[@]}"
	printf '%-43s %9s %9s\n' "minitty-tiny (every option off)" \
		"$(layer_bytes minitty-tiny)" "$(vmlinux_bytes minitty-tiny)"
	printf '%-43s %9s %9s\n' "minitty (every option on)" \
		"$(layer_bytes minitty)" "$(vmlinux_bytes minitty)"
}


# tty_objects FLAVOUR: the drivers/tty objects vmlinux links, in table order.
tty_objects() {
	local out cross
	out=$(flavour_build "$1")
	cross=$(flavour_arch_field "$1" cross)
	[[ -f $out/drivers/tty/built-in.a ]] || return 0
	(cd "$out" && "${cross}ar" t drivers/tty/built-in.a) |
		grep -Ev "$SIZE_EXCLUDE" |
		awk '{ d = $0; sub(/[^/]*$/, "", d); print d "\t" $0 }' |
		LC_ALL=C sort -t "$(printf '\t')" -k1,1 -k2,2 | cut -f2
}

cmd_size() {
	parse_options size "$@"
	no_args size
	local flavour out cross
	local -a objs
	no_build_set
	if [[ -n ${OPT_options:-} ]]; then
		[[ -z ${OPT_flavour:-} ]] || usage_error "size: --options compares builds of minitty-tiny: no --flavour with it"
		size_of_options
		return
	fi
	flavour=$(flavour_opt)
	ensure_current "$flavour" >&2
	out=$(flavour_build "$flavour")
	cross=$(flavour_arch_field "$flavour" cross)
	mapfile -t objs < <(tty_objects "$flavour")
	say "TTY/serial layer of $flavour ($(flavour_arch "$flavour"); not counted: the UART driver, earlycon.o):"
	if ((${#objs[@]})); then
		(cd "$out" && "${cross}size" -t "${objs[@]}")
	else
		say "  (no object under drivers/tty/)"
	fi
	say ""
	say "vmlinux of $flavour:"
	(cd "$out" && "${cross}size" vmlinux)
}

# serial_options: the bool and tristate options of the serial drivers'
# Kconfig files, with their type, one "NAME TYPE" a line.
serial_options() {
	awk '/^(menu)?config [A-Z0-9_]+$/ { name = $2; next }
		name != "" && /^[ \t]+(bool|tristate)/ { print name, $1; name = ""; next }
		name != "" && /^[ \t]+(int|hex|string)/ { name = "" }' \
		"$SANDBOX/linux/drivers/tty/serial/Kconfig" \
		"$SANDBOX/linux/drivers/tty/serial/8250/Kconfig"
}

# randconfig_fragment SEED: the random part of one configuration.
randconfig_fragment() {
	local name type v
	RANDOM=$1
	echo "CONFIG_MODULES=y"
	echo "CONFIG_COMPILE_TEST=y"
	for name in PCI OF GPIOLIB; do
		if ((RANDOM % 2)); then echo "CONFIG_$name=y"; else echo "CONFIG_$name=n"; fi
	done
	while read -r name type; do
		case $((RANDOM % 3)) in
		0) v=n ;;
		1) v=y ;;
		*) if [[ $type == tristate ]]; then v=m; else v=y; fi ;;
		esac
		echo "CONFIG_$name=$v"
	done < <(serial_options)
}

# check_randconfig N SEED: build N random serial configurations (seeds
# SEED, SEED+1, ...); die at the first that fails.
check_randconfig() {
	local n=$1 seed=$2 i f=minitty-x86+randconfig out log
	out=$(flavour_build "$f")
	ensure_tree minitty-x86
	mkdir -p "$out"
	lock "$out.lock"
	for ((i = 0; i < n; i++)); do
		randconfig_fragment $((seed + i)) >"$out/options.config"
		log=$LOGS/randconfig-$((seed + i)).log
		step randconfig "$((i + 1))/$n seed $((seed + i)) (log: ${log#"$MINITTY_ROOT"/})"
		errexit_run configure "$f" >"$log" 2>&1 ||
			die "check: randconfig seed $((seed + i)) does not configure (log: $log)"
		if ! grep -qx '# CONFIG_TTY is not set' "$out/.config" ||
			! grep -qx 'CONFIG_MINITTY_SERIAL=y' "$out/.config"; then
			die "check: randconfig seed $((seed + i)): not CONFIG_TTY=n with CONFIG_MINITTY_SERIAL=y ($out/.config)"
		fi
		cp "$out/options.config" "$out/options-$((seed + i)).config"
		errexit_run kmake "$f" vmlinux modules >>"$log" 2>&1 ||
			die "check: randconfig seed $((seed + i)) does not build: $(grep -m 3 -E 'undefined reference|error:|ERROR:' "$log" | paste -sd' ') (fragment: $out/options-$((seed + i)).config, log: $log)"
		step ok "seed $((seed + i)): $(grep -c '^CONFIG_SERIAL.*=[ym]$' "$out/.config") serial options on"
	done
	unlock
	step check "$n random serial configuration(s) build (seeds $seed to $((seed + n - 1)))"
}

flavours_options() {
	echo "buildable|||only the flavours whose requested options all exist in the tree"
	echo "shell|||only the flavours that boot to a shell (that run and the tests use)"
	echo "oracle|||only the oracle flavours (the differential suite's reference)"
	echo "arch||ARCH|only the flavours of ARCH (configs/arches)"
	echo "smp|||only the SMP debug flavours (make test-smp runs the stress on them, and the differential suite on minitty-smp)"
}
flavours_help() {
	cat <<EOF
usage: minitty flavours [--buildable] [--shell] [--oracle] [--smp] [--arch ARCH]
The flavours of configs/flavours with their fragments and meaning; with
an option, only their names. --buildable configures each flavour as
build does, but aside (sandbox/build/F/.minitty-query.config, again only
when configs/ or a Kconfig changed; F's .config and build are left
alone), and keeps those whose config check passes.
EOF
	options_help flavours
}

cmd_flavours() {
	parse_options flavours "$@"
	no_args flavours
	local f
	if [[ -n ${OPT_arch:-} ]] && ! arch_names | grep -qx -- "$OPT_arch"; then
		usage_error "flavours: unknown arch '$OPT_arch' (known: $(arch_names | paste -sd' '))"
	fi
	if [[ -z ${OPT_buildable:-}${OPT_shell:-}${OPT_oracle:-}${OPT_smp:-}${OPT_arch:-} ]]; then
		for f in $(flavour_names); do
			printf '%-14s %-7s %-28s %s\n' "$f" "$(flavour_field "$f" 5)" \
				"$(flavour_field "$f" 3)" "$(flavour_field "$f" 6)"
		done
		return 0
	fi
	for f in $(flavour_names); do
		[[ -n ${OPT_shell:-} && $(flavour_field "$f" 4) != yes ]] && continue
		[[ -n ${OPT_oracle:-} && $(flavour_field "$f" 4) != oracle ]] && continue
		[[ -n ${OPT_smp:-} && $(flavour_field "$f" 4) != smp ]] && continue
		[[ -n ${OPT_arch:-} && $(flavour_field "$f" 5) != "$OPT_arch" ]] && continue
		if [[ -n ${OPT_buildable:-} ]]; then
			ensure_tree "$f" >&2
			flavour_buildable "$f" || continue
		fi
		echo "$f"
	done
}

check_options() {
	echo "lint|||only the shell and Python checks (no checkpatch, kernel-doc, sparse)"
	echo "randconfig||N|instead: build N random configurations of the serial area (see above)"
	echo "seed||S|the first random configuration's seed (default: random; each next one S+1)"
}
check_help() {
	cat <<EOF
usage: minitty check [--lint]
shellcheck bin/minitty, lib/*.sh, tests/run and .ci/run; every Python
file of the project (*.py, and scripts whose first line names python)
compiled, and checked with pyflakes (python3-pyflakes); the tree's
scripts/checkpatch.pl --strict on patches/*.patch (not the cover letter);
scripts/kernel-doc -Wall on minitty_serial.c; sparse (C=2) on the objects
of the minitty flavour that the series adds or moves (minitty_serial.o,
serial_lib.o, tty_baudrate.o). Exit 1 on findings.

--randconfig N: instead, N random configurations of the serial area
with CONFIG_TTY=n and CONFIG_MINITTY_SERIAL=y, each built (vmlinux and
modules) on x86_64 in sandbox/build/minitty-x86+randconfig: minitty-x86's
fragments plus CONFIG_MODULES, CONFIG_COMPILE_TEST, a random choice of
PCI, OF and GPIOLIB, and each bool or tristate option of
drivers/tty/serial/Kconfig and 8250/Kconfig at random (y, m or n), then
olddefconfig. Exit 1 at the first that does not configure with minitty,
or does not build or link; its seed and fragment are named (--seed S
builds it again).
EOF
	options_help check
}

# python_files: the project's Python, one path a line.
python_files() {
	local f
	while IFS= read -r -d '' f; do
		if [[ $f == *.py ]] || head -n1 "$f" | grep -q python; then
			printf '%s\n' "$f"
		fi
	done < <(find "$MINITTY_ROOT"/{bin,lib,tests,gdbscripts,.ci} \
		-name __pycache__ -prune -o -type f ! -name '*.pyc' -print0 | sort -z)
}

cmd_check() {
	parse_options check "$@"
	no_args check
	if [[ -n ${OPT_randconfig:-} ]]; then
		[[ $OPT_randconfig =~ ^[1-9][0-9]*$ ]] ||
			usage_error "check: --randconfig needs a number of configurations, not '$OPT_randconfig'"
		[[ ${OPT_seed:-0} =~ ^[0-9]+$ ]] || usage_error "check: --seed needs a number, not '$OPT_seed'"
		check_randconfig "$OPT_randconfig" "${OPT_seed:-$((RANDOM * 32768 + RANDOM))}"
		return
	fi
	local rc=0 p
	local -a py
	need_cmd shellcheck check
	step shellcheck "bin/minitty lib/*.sh tests/run .ci/run"
	shellcheck -x "$MINITTY_ROOT/bin/minitty" "$MINITTY_ROOT"/lib/*.sh \
		"$MINITTY_ROOT/tests/run" "$MINITTY_ROOT/.ci/run" || rc=1
	mapfile -t py < <(python_files)
	step python "${#py[@]} files: compile, pyflakes"
	# (compile() rather than py_compile: no __pycache__ left behind)
	"$PYTHON" -c 'import sys
for f in sys.argv[1:]:
    compile(open(f, "rb").read(), f, "exec")' "${py[@]}" || rc=1
	"$PYTHON" -m pyflakes "${py[@]}" || rc=1
	if [[ -z ${OPT_lint:-} ]]; then
		for p in "$PATCHES"/[0-9]*.patch; do
			[[ -e $p && ${p##*/} != "$COVER" ]] || continue
			[[ -x $SANDBOX/linux/scripts/checkpatch.pl ]] || fetch_tree "$SANDBOX/linux"
			step checkpatch "${p##*/}"
			# (its spdxcheck.py runs "env python3": it needs Debian's, with ply and
			# git; run from the kernel tree: from the project's git tree it took
			# the tracked patch for a source file and flagged its context lines)
			(cd "$SANDBOX/linux" && PATH=/usr/bin:$PATH ./scripts/checkpatch.pl \
				--strict --quiet "$p") || rc=1
		done
		errexit_run check_kernel_tools || rc=1
	fi
	((rc == 0)) || die "check: findings above"
	step check "clean"
}

# The kernel's own checkers on the new code. serial_core.c keeps the
# sparse and kernel-doc warnings it had before the series: only what the
# series adds or moves is checked.
CHECK_OBJECTS=(drivers/tty/serial/minitty_serial.o drivers/tty/serial/serial_lib.o
	drivers/tty/tty_baudrate.o)
check_kernel_tools() {
	local tree=$SANDBOX/linux rc=0 log=$LOGS/check-sparse.log out
	need_cmd sparse check
	step kernel-doc "drivers/tty/serial/minitty_serial.c (-Wall)"
	out=$("$tree/scripts/kernel-doc" -Wall -none "$tree/drivers/tty/serial/minitty_serial.c" 2>&1)
	[[ -z $out ]] || { printf '%s\n' "$out"; rc=1; }
	step sparse "${CHECK_OBJECTS[*]##*/} (flavour minitty, C=2; log: ${log#"$MINITTY_ROOT"/})"
	ensure_current minitty >&2
	kmake minitty C=2 "${CHECK_OBJECTS[@]}" >"$log" 2>&1 || { tail -n 20 "$log"; return 1; }
	out=$(awk '/: (warning|error):/' "$log")
	[[ -z $out ]] || { printf '%s\n' "$out"; rc=1; }
	return "$rc"
}

test_options() { :; }
test_help() {
	cat <<EOF
usage: minitty test [SUITE...]
Run tests/run: every executable in tests/suites/ (or the SUITEs named),
each printing PASS/FAIL lines; the closing line is 'N passed, N failed'.
It tests what is current: it refuses a sandbox/linux that is not
patches/series (patch --check) and builds the stale flavours it tests
first (build --if-stale); make test also builds the missing ones.
EOF
	options_help test
}

cmd_test() {
	parse_options test "$@"
	exec "$MINITTY_ROOT/tests/run" "${ARGS[@]}"
}
