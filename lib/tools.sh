# shellcheck shell=bash
# size, flavours, check, test.

# Not counted by size: the UART driver and earlycon (see the cover letter):
# the PL011 on arm and arm64, the 8250 (drivers/tty/serial/8250/) on
# x86_64.
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
		rows+=("$(printf '%-22s %-20s %+9d %+9d %+9d' "$o" \
			"$(IFS=,; echo "${deps[*]:--}")" \
			"$(($(layer_bytes "$flavour") - $(layer_bytes "$base")))" \
			"$(($(vmlinux_bytes "$flavour") - $(vmlinux_bytes "$base")))" \
			"$(bloat_total "$base" "$flavour")")")
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

# check_record NAME TREE KEY=VALUE...: the outcome of check --NAME on the
# series whose last commit has the tree object TREE, in
# sandbox/logs/check-NAME.result (the cover letter's checks region reads
# it: lib/py/cover.py). A run writes passed=0 when it starts and
# passed=1 when it passed: a run that failed or was stopped says so.
check_record() {
	local name=$1 tree=$2
	shift 2
	mkdir -p "$LOGS"
	printf '%s\n' "tree=$tree" "date=$(date -u +%F)" "cores=$(nproc)" "$@" \
		>"$LOGS/check-$name.result"
}

# check_randconfig N SEED: build N random serial configurations (seeds
# SEED, SEED+1, ...); die at the first that fails.
check_randconfig() {
	local n=$1 seed=$2 i f=minitty-x86+randconfig out log tree start=$SECONDS
	out=$(flavour_build "$f")
	ensure_tree minitty-x86
	# (what is built is the work tree: a tree with changes is no commit's)
	tree=dirty
	git -C "$SANDBOX/linux" diff --quiet HEAD -- &&
		tree=$(git -C "$SANDBOX/linux" rev-parse "HEAD^{tree}")
	check_record randconfig "$tree" "configs=$n" "seed=$seed" passed=0
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
	check_record randconfig "$tree" "configs=$n" "seed=$seed" "seconds=$((SECONDS - start))" passed=1
	step check "$n random serial configuration(s) build (seeds $seed to $((seed + n - 1)))"
}

flavours_options() {
	echo "buildable|||only the flavours whose requested options all exist in the tree"
	echo "shell|||only the flavours that boot to a shell (that run and the tests use)"
	echo "oracle|||only the oracle flavours (the differential suite's reference)"
	echo "arch||ARCH|only the flavours of ARCH (configs/arches)"
	echo "smp|||only the SMP debug flavours (make test-smp runs the stress and system suspend on them, and the differential suite on minitty-smp)"
}
flavours_help() {
	cat <<EOF
usage: minitty flavours [--buildable] [--shell] [--oracle] [--smp] [--arch ARCH]
The flavours of configs/flavours with their fragments and meaning; with
an option, only their names. --buildable configures each flavour as
build does, but aside (sandbox/build/F/.minitty-query.config, again only
when configs/ or a Kconfig changed; F's .config and build are left
alone), and keeps those whose config check passes; a flavour whose
arch's compiler is not installed (an opt-in arch of configs/arches that
is not set up: setup --arch ARCH) is not buildable, and installs nothing.
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
	echo "bisect|||instead: build every commit of the series in both layers (see above)"
	echo "randconfig||N|instead: build N random configurations of the serial area (see above)"
	echo "seed||S|the first random configuration's seed (default: random; each next one S+1)"
}
check_help() {
	cat <<EOF
usage: minitty check [--lint | --bisect | --randconfig N [--seed S]]
shellcheck bin/minitty, lib/*.sh, tests/run, tests/make-test and
.ci/run; every Python file of the project (*.py, and scripts whose
first line names python) compiled, and checked with pyflakes (python3-pyflakes); the tree's
scripts/checkpatch.pl --strict on patches/*.patch (not the cover letter;
not a patch whose message says "This is a pure move" and whose commit
is one: git diff --color-moved=blocks finds no added line that is not
blank after the first moved one of its file, and its code is then
checked in the patch after it);
scripts/kernel-doc -Wall on the files the series adds (minitty_serial.c,
serial_lib.c); sparse (C=2) on the objects
of the minitty flavour that the series adds or moves (minitty_serial.o,
serial_lib.o, tty_baudrate.o). Exit 1 on findings.

--bisect: build every commit of pristine..HEAD, oldest first, in a
worktree of its own (sandbox/bisect/linux, detached) with two configs,
each in a build directory of its own (sandbox/build/bisect-fulltty:
configs base+arm+pl011+fulltty, CONFIG_TTY=y; sandbox/build/bisect-minitty:
base+arm+pl011+minitty, CONFIG_TTY=n with every minitty option, once the series
offers MINITTY_SERIAL; before that, the same config is a TTY=n build),
with ccache: make vmlinux must pass; the C files the commit touches that
the config builds (and, when the commit changed the config, every C file
the series has added so far that it builds) are compiled again with W=1
(and sparse, C=1, those the series adds), and must give no warning; the commit itself must pass
checkpatch.pl --strict, and the files the series adds kernel-doc -Wall
(but for a pure move, whose next commit is checked for it).
One line per commit and config, then the time it took: 22 min for 49
commits on 2 idle cores, with the ccache of the flavours' builds (37 min
for 17 commits with a cold one, on cores shared with other builds); not
part of make test. Logs:
sandbox/logs/bisect-*.log.
b4: Debian 12 ships b4 0.12, whose \`b4 prep\` has no --check (0.13 added
it, and it only runs checkpatch, which check runs already); enrolling
the branch would rewrite it (b4 adds a cover commit), so check does not
run b4.
--randconfig N: instead, N random configurations of the serial area
with CONFIG_TTY=n and CONFIG_MINITTY_SERIAL=y, each built (vmlinux and
modules) on x86_64 in sandbox/build/minitty-x86+randconfig: minitty-x86's
fragments plus CONFIG_MODULES, CONFIG_COMPILE_TEST, a random choice of
PCI, OF and GPIOLIB, and each bool or tristate option of
drivers/tty/serial/Kconfig and 8250/Kconfig at random (y, m or n), then
olddefconfig. Exit 1 at the first that does not configure with minitty,
or does not build or link; its seed and fragment are named (--seed S
builds it again).
--bisect and --randconfig record their outcome in
sandbox/logs/check-bisect.result and check-randconfig.result: the tree
of the series' last commit, and passed=1 once the run passed (0 while
it runs, or after it failed); export's cover letter says what they
record for the series it exports.
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
	local rc=0 p c
	local -a py
	if [[ -n ${OPT_bisect:-} ]]; then
		[[ -z ${OPT_lint:-} ]] || usage_error "check: --bisect and --lint do not go together"
		check_bisect
		return
	fi
	need_cmd shellcheck check
	step shellcheck "bin/minitty lib/*.sh tests/run tests/make-test .ci/run"
	shellcheck -x "$MINITTY_ROOT/bin/minitty" "$MINITTY_ROOT"/lib/*.sh \
		"$MINITTY_ROOT/tests/run" "$MINITTY_ROOT/tests/make-test" "$MINITTY_ROOT/.ci/run" || rc=1
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
			c=$(patch_commit "$p")
			if [[ -n $c ]] && pure_move "$SANDBOX/linux" "$c"; then
				step checkpatch "${p##*/}: a pure move (git diff --color-moved), left to the next patch"
				continue
			fi
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
# The files the series adds (serial_lib.c gets the helpers serial_core.c
# documented: their comments move with them and must pass -Wall).
CHECK_DOC=(drivers/tty/serial/minitty_serial.c drivers/tty/serial/serial_lib.c)
check_kernel_tools() {
	local tree=$SANDBOX/linux rc=0 log=$LOGS/check-sparse.log out
	need_cmd sparse check
	step kernel-doc "${CHECK_DOC[*]} (-Wall)"
	out=$(cd "$tree" && ./scripts/kernel-doc -Wall -none "${CHECK_DOC[@]}" 2>&1)
	[[ -z $out ]] || { printf '%s\n' "$out"; rc=1; }
	step sparse "${CHECK_OBJECTS[*]##*/} (flavour minitty, C=2; log: ${log#"$MINITTY_ROOT"/})"
	ensure_current minitty >&2
	kmake minitty C=2 "${CHECK_OBJECTS[@]}" >"$log" 2>&1 || { tail -n 20 "$log"; return 1; }
	out=$(awk '/: (warning|error):/' "$log")
	[[ -z $out ]] || { printf '%s\n' "$out"; rc=1; }
	return "$rc"
}

# patch_commit PATCH: the commit of sandbox/linux (pristine..HEAD) whose
# patch-id is PATCH's, or nothing.
patch_commit() {
	local id c
	tree_ready "$SANDBOX/linux" || return 0
	id=$(file_patch_id "$1")
	for c in $(git -C "$SANDBOX/linux" rev-list pristine..HEAD); do
		if [[ $(git -C "$SANDBOX/linux" show "$c" | git patch-id --stable | cut -d' ' -f1) == "$id" ]]; then
			echo "$c"
			return 0
		fi
	done
}

# pure_move TREE COMMIT: COMMIT says it is a pure move ("This is a pure
# move" in its message) and is one: git diff --color-moved finds moved
# lines, and every other added line that is not blank comes before the
# first moved line of its file (a new file's header and includes).
# checkpatch then judges the code it moves, not the patch: the commit
# after it fixes what checkpatch asks for.
pure_move() {
	local tree=$1 c=$2
	git -C "$tree" log -1 --format=%B "$c" | grep -q 'This is a pure move' || return 1
	git -C "$tree" -c color.diff.new=green -c color.diff.newMoved=blue \
		-c color.diff.newMovedAlternative=blue show --format= --color=always \
		--color-moved=blocks --color-moved-ws=no "$c" |
		sed -e 's/^\x1b\[34m+/M+/' -e 's/^\x1b\[32m+/A+/' -e 's/\x1b\[[0-9;]*m//g' |
		awk '
		/^diff --git/ { moved = 0; next }
		/^M\+/ { moved = 1; any = 1; next }
		/^A\+/ && !/^A\+\+\+ / && !/^A\+[ \t]*$/ && moved { bad = 1 }
		END { exit !(any && !bad) }'
}

# check --bisect: every commit of the series, both layers (check_help).
BISECT_CONFIGS=(fulltty:base+arm+pl011+fulltty minitty:base+arm+pl011+minitty)
check_bisect() {
	local linux=$SANDBOX/linux tree=$SANDBOX/bisect/linux start c n=0 rc=0 cfg id
	local -a commits
	tree_ready "$linux" || die "check: no sandbox tree (run: minitty patch)"
	mapfile -t commits < <(git -C "$linux" rev-list --reverse pristine..HEAD)
	((${#commits[@]})) || die "check: no commits on top of pristine"
	start=$SECONDS
	id=$(git -C "$linux" rev-parse "${commits[-1]}^{tree}")
	check_record bisect "$id" "commits=${#commits[@]}" passed=0
	if [[ ! -e $tree ]]; then
		mkdir -p "${tree%/*}"
		git -C "$linux" worktree add -q --detach "$tree" pristine
	fi
	lock "$tree.lock"
	git -C "$tree" diff --quiet HEAD -- ||
		die "check: ${tree#"$MINITTY_ROOT"/} has changes of its own; move it away"
	for c in "${commits[@]}"; do
		n=$((n + 1))
		git -C "$tree" checkout -q --detach "$c"
		for cfg in "${BISECT_CONFIGS[@]}"; do
			errexit_run bisect_one "$tree" "$c" "$n" "${cfg%%:*}" "${cfg#*:}" || rc=1
		done
		errexit_run bisect_static "$tree" "$c" "$n" || rc=1
	done
	unlock
	check_record bisect "$id" "commits=${#commits[@]}" "seconds=$((SECONDS - start))" "passed=$((rc == 0))"
	step time "$(((SECONDS - start) / 60)) min $(((SECONDS - start) % 60)) s for ${#commits[@]} commits"
	((rc == 0)) || die "check --bisect: findings above"
	step check "every commit builds in both layers, W=1, checkpatch, kernel-doc and sparse clean"
}

# bisect_make TREE OUT ARGS...: make in TREE with O=OUT, as kmake.
bisect_make() {
	local tree=$1 out=$2 cross cc
	cross=$(arch_field arm cross)
	cc=${cross}gcc
	shift 2
	command -v ccache >/dev/null && cc="ccache ${cross}gcc"
	CCACHE_NOHASHDIR=true make -C "$tree" O="$out" ARCH=arm \
		CROSS_COMPILE="$cross" CC="$cc" -j"$JOBS" "$@"
}

# bisect_one TREE COMMIT N NAME FRAGMENTS: configure (when the Kconfig
# files or fragments changed), make vmlinux, then W=1 (C=1 on the files
# the series adds) on the C files COMMIT touches that this config builds.
bisect_one() {
	local tree=$1 c=$2 n=$3 name=$4 frags=$5 out key log f o new rc=0 warn configured=
	local -a fr files=() objs=() sparse=()
	local -A seen=()
	out=$SANDBOX/build/bisect-$name
	log=$LOGS/bisect-$(printf %02d "$n")-$name.log
	mkdir -p "$out" "$LOGS"
	for f in ${frags//+/ }; do fr+=("$CONFIGS/$f.config"); done
	key=$({ cat "${fr[@]}"; (cd "$tree" && git ls-files -s -- '*Kconfig*'); } | sha256sum)
	{
		if [[ ! -f $out/.config || $(cat "$out/.bisect-key" 2>/dev/null) != "$key" ]]; then
			rm -f "$out/.bisect-key"
			KCONFIG_CONFIG=$out/.config bisect_make "$tree" "$out" tinyconfig
			ARCH=arm CROSS_COMPILE=$(arch_field arm cross) "$tree/scripts/kconfig/merge_config.sh" \
				-m -O "$out" "$out/.config" "${fr[@]}"
			bisect_make "$tree" "$out" olddefconfig
			echo "$key" >"$out/.bisect-key"
			configured=1
		fi
		bisect_make "$tree" "$out" vmlinux
	} >"$log" 2>&1 || {
		tail -n 15 "$log" | sed 's/^/    /'
		step FAIL "$n $name: make vmlinux (log: ${log#"$MINITTY_ROOT"/})"
		return 1
	}
	mapfile -t files < <(git -C "$tree" diff-tree --no-commit-id --name-only -r "$c" -- '*.c')
	# a new config may build a file of the series for the first time
	# (minitty_serial.c once the Kconfig offers it): check them all then
	[[ -z $configured ]] ||
		mapfile -t -O "${#files[@]}" files < <(git -C "$tree" diff --name-only \
			--diff-filter=A pristine "$c" -- '*.c')
	for f in "${files[@]}"; do
		o=${f%.c}.o
		[[ -f $out/$o && -z ${seen[$f]:-} ]] || continue
		seen[$f]=1
		git -C "$tree" cat-file -e "pristine:$f" 2>/dev/null && new= || new=1
		if [[ -n $new ]]; then sparse+=("$o"); else objs+=("$o"); fi
	done
	{
		((${#objs[@]} == 0)) || bisect_make "$tree" "$out" W=1 "${objs[@]}"
		((${#sparse[@]} == 0)) || bisect_make "$tree" "$out" W=1 C=1 "${sparse[@]}"
	} >>"$log" 2>&1 || rc=1
	warn=$(awk '/: (warning|error):/' "$log")
	[[ -z $warn ]] || { printf '%s\n' "$warn"; rc=1; }
	# back to the objects of a plain build, so that the next commit's
	# W=1 pass compiles only what it touches
	((${#objs[@]} + ${#sparse[@]} == 0)) || bisect_make "$tree" "$out" vmlinux >>"$log" 2>&1 || rc=1
	if ((rc)); then
		step FAIL "$n $name: $(git -C "$tree" log -1 --format=%s "$c") (log: ${log#"$MINITTY_ROOT"/})"
		return 1
	fi
	step "ok" "$n $name: vmlinux; W=1: ${objs[*]:-none}${sparse:+; W=1 C=1: ${sparse[*]}}"
}

# bisect_static TREE COMMIT N: checkpatch --strict on the commit, and
# kernel-doc -Wall on the files the series adds that the commit touches.
bisect_static() {
	local tree=$1 c=$2 n=$3 f out rc=0
	local -a files
	if pure_move "$tree" "$c"; then
		step "ok" "$n a pure move (git diff --color-moved): checkpatch and kernel-doc left to the next commit"
		return 0
	elif ! out=$(cd "$tree" && git format-patch -1 --stdout "$c" |
		PATH=/usr/bin:$PATH ./scripts/checkpatch.pl --strict --quiet -); then
		printf '%s\n' "$out"
		step FAIL "$n checkpatch --strict"
		rc=1
	fi
	mapfile -t files < <(git -C "$tree" diff-tree --no-commit-id --name-only -r "$c" -- '*.c' '*.h')
	for f in "${files[@]}"; do
		[[ -f $tree/$f ]] || continue
		! git -C "$tree" cat-file -e "pristine:$f" 2>/dev/null || continue
		out=$("$tree/scripts/kernel-doc" -Wall -none "$tree/$f" 2>&1)
		[[ -z $out ]] || { printf '%s\n' "$out"; step FAIL "$n kernel-doc -Wall $f"; rc=1; }
	done
	((rc)) || step "ok" "$n checkpatch --strict; kernel-doc -Wall on the new files it touches"
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
