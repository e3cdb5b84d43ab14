# shellcheck shell=bash
# build: configure (tinyconfig + fragments, then checked) and make one flavour.

build_options() {
	echo "$FLAVOUR_OPTION"
	echo "config-only|||configure and check the config, do not compile"
	echo "if-stale|||only when not built, or stale (what boot, run, size, bench do first)"
}
build_help() {
	cat <<EOF
usage: minitty build [--flavour F] [--config-only]
Configure sandbox/build/F (a link to F's directory in its tree,
TREE/.build-F, where ccache can share objects between the trees) from
tinyconfig plus the fragments that configs/flavours lists for F (scripts/kconfig/merge_config.sh, then
olddefconfig), fail if any requested option did not end up as requested,
then make the arch's image (configs/arches: zImage on arm, bzImage on
x86_64), vmlinux (with debug info) and scripts_gdb, with ccache.
Runs fetch and patch first when needed. Logs: sandbox/logs/build-F-*.log.
Stale: a file of the tree or of configs/, or F's .config (menuconfig), is
newer than F's last successful build; boot, run, size and bench build a
stale flavour first (their --no-build uses it as it is).
EOF
	options_help build
}

kmake() {
	local flavour=$1 cross karch cc=gcc hostcc=gcc
	shift
	cross=$(flavour_arch_field "$flavour" cross)
	karch=$(flavour_arch_field "$flavour" karch)
	cc=${cross}gcc
	if command -v ccache >/dev/null; then
		cc="ccache ${cross}gcc"
		# dtc, kconfig and fixdep again for each flavour otherwise
		hostcc="ccache gcc"
	fi
	# Let the flavours share cached objects: they differ in few files, but
	# by default ccache keys -g objects on the build directory. The sources
	# are named relative to it (../kernel/fork.c: flavour_objdir), so only
	# DW_AT_comp_dir may name another flavour's directory, where the same
	# file is. (No CCACHE_BASEDIR: it would rewrite the -I paths and
	# change __FILE__, and the sizes, of builds outside a tree.)
	export CCACHE_NOHASHDIR=${CCACHE_NOHASHDIR:-true}
	# Build #1 however often the directory was built (or copied:
	# seed_build), so that the banner, and the sizes, do not depend on it.
	export KBUILD_BUILD_VERSION=${KBUILD_BUILD_VERSION:-1}
	make -C "$(flavour_tree "$flavour")" O="$(flavour_objdir "$flavour")" \
		ARCH="$karch" CROSS_COMPILE="$cross" CC="$cc" HOSTCC="$hostcc" \
		-j"$JOBS" "$@"
}

# build_dir FLAVOUR: make sandbox/build/F the link to F's objdir (moving
# there a build directory of the older layout, which then rebuilds once).
build_dir() {
	local out obj
	out=$(flavour_build "$1")
	obj=$(flavour_objdir "$1")
	[[ -L $out && $(readlink "$out") == "$obj" && -d $obj ]] && return 0
	mkdir -p "${out%/*}"
	if [[ -d $out && ! -L $out && ! -e $obj ]]; then
		mv "$out" "$obj"
	else
		rm -rf "$out"
		mkdir -p "$obj"
	fi
	ln -sfn "$obj" "$out"
}

# The tree and the fragments decide the config: hash them.
config_key() {
	local flavour=$1 tree
	local -a frags
	tree=$(flavour_tree "$flavour")
	mapfile -t frags < <(flavour_fragments "$flavour")
	{
		cat "${frags[@]}"
		(cd "$tree" && find . \( -name .git -o -path './.build-*' \) -prune -o \
			-name 'Kconfig*' -type f -print0 | sort -z | xargs -0 cat)
	} | sha256sum | cut -d' ' -f1
}

# configure FLAVOUR [CONFIG]: tinyconfig plus the fragments, olddefconfig,
# into F's .config, or into file CONFIG (absolute; KCONFIG_CONFIG) in F's
# build directory, leaving its .config alone.
configure() {
	local flavour=$1 out tree frags
	out=$(flavour_build "$flavour")
	tree=$(flavour_tree "$flavour")
	export KCONFIG_CONFIG=${2:-$out/.config}
	mapfile -t frags < <(flavour_fragments "$flavour")
	kmake "$flavour" tinyconfig
	ARCH=$(flavour_arch_field "$flavour" karch) \
		CROSS_COMPILE=$(flavour_arch_field "$flavour" cross) \
		"$tree/scripts/kconfig/merge_config.sh" \
		-m -O "$out" "$KCONFIG_CONFIG" "${frags[@]}"
	kmake "$flavour" olddefconfig
}

# config_mismatches FLAVOUR [CONFIG]: print each requested option that
# F's .config (or file CONFIG) does not have as requested (the last
# fragment to mention it wins).
config_mismatches() {
	local flavour=$1 config=${2:-$(flavour_build "$1")/.config}
	local -a frags
	mapfile -t frags < <(flavour_fragments "$flavour")
	awk '
	FNR == NR && /^CONFIG_[A-Za-z0-9_]+=/ {
		split($0, a, "="); have[a[1]] = substr($0, length(a[1]) + 2); next }
	FNR == NR { next }
	/^CONFIG_[A-Za-z0-9_]+=/ {
		split($0, a, "="); v = substr($0, length(a[1]) + 2)
		want[a[1]] = (v == "n" ? "" : v); if (!(a[1] in seen)) order[n++] = a[1]
		seen[a[1]] = 1; next }
	/^# CONFIG_[A-Za-z0-9_]+ is not set/ {
		want[$2] = ""; if (!($2 in seen)) order[n++] = $2; seen[$2] = 1 }
	END {
		for (i = 0; i < n; i++) {
			o = order[i]; w = want[o]; h = (o in have) ? have[o] : ""
			if (w != h)
				printf "%s=%s (got %s)\n", o, (w == "" ? "n" : w),
					(h == "" ? "not set" : h)
		}
	}' "$config" "${frags[@]}"
}

# build_config FLAVOUR: configure when the key changed, then check (exit 1
# when a requested option is not as requested).
build_config() {
	local flavour=$1 out key bad
	out=$(flavour_build "$flavour")
	mkdir -p "$out"
	key=$(config_key "$flavour")
	if [[ ! -f $out/.config || $(cat "$out/.minitty-config-key" 2>/dev/null) != "$key" ]]; then
		rm -f "$out/.minitty-config-key"
		if [[ -f $out/.minitty-query.config &&
			$(cat "$out/.minitty-query.config.key" 2>/dev/null) == "$key" ]]; then
			# configured by flavours --buildable with this key: the same
			cp "$out/.minitty-query.config" "$out/.config"
			step config "as flavours --buildable configured it"
		else
			run_logged config "$LOGS/build-$flavour-config.log" configure "$flavour"
		fi
		echo "$key" >"$out/.minitty-config-key"
	else
		step config "unchanged ($(flavour_field "$flavour" 3))"
	fi
	bad=$(config_mismatches "$flavour")
	[[ -z $bad ]] ||
		die "build: config check failed for $flavour: $(paste -sd' ' <<<"$bad" | sed 's/ CONFIG_/, CONFIG_/g')"
}

# query_config FLAVOUR: configure F into its build directory's
# .minitty-query.config (not its .config: a query must not change the
# build nor undo a menuconfig), again only when the key changed; print
# its path.
query_config() {
	local flavour=$1 out key q
	out=$(flavour_build "$flavour")
	q=$out/.minitty-query.config
	key=$(config_key "$flavour")
	build_dir "$flavour"
	mkdir -p "$LOGS"
	if [[ ! -f $q || $(cat "$q.key" 2>/dev/null) != "$key" ]]; then
		rm -f "$q.key"
		errexit_run configure "$flavour" "$q" >"$LOGS/query-$flavour-config.log" 2>&1 ||
			return 1
		echo "$key" >"$q.key"
	fi
	echo "$q"
}

# flavour_buildable FLAVOUR: the requested options exist in the tree (F's
# fragments configured from tinyconfig give every option as requested).
# Not without the arch's compiler: an opt-in arch (configs/arches) that
# is not set up has none, and a query does not install it.
flavour_buildable() {
	local rc=0 q
	command -v "$(flavour_arch_field "$1" cross)gcc" >/dev/null || return 1
	lock "$(flavour_build "$1").lock"
	if q=$(query_config "$1"); then
		[[ -z $(config_mismatches "$1" "$q") ]] || rc=1
	else
		rc=1
	fi
	unlock
	return "$rc"
}

cmd_build() {
	parse_options build "$@"
	no_args build
	local flavour
	flavour=$(flavour_opt)
	if [[ -n ${OPT_if_stale:-} ]]; then
		[[ -z ${OPT_config_only:-} ]] || usage_error "build: --if-stale and --config-only do not go together"
		ensure_current "$flavour"
		return 0
	fi
	build_flavour "$flavour" "${OPT_config_only:-}"
}

build_flavour() {
	local flavour=$1 config_only=${2:-} why=${3:-} out
	out=$(flavour_build "$flavour")
	setup_host quiet "$(flavour_arch "$flavour")"
	ensure_tree "$flavour"
	say "build $flavour${why:+ ($why)}"
	# Two builds in one output directory would spoil it.
	lock "$out.lock"
	# Stamped before configure and make start: an edit made during the
	# build is newer than the stamp, so the build stays stale.
	build_dir "$flavour"
	: >"$out/.minitty-building"
	build_config "$flavour"
	if [[ -z $config_only ]]; then
		seed_build "$flavour"
		run_logged make "$LOGS/build-$flavour.log" kmake "$flavour" \
			"$(basename "$(flavour_image "$flavour")")" vmlinux scripts_gdb
		# (the .config make ended with: a later change makes it stale)
		sha256sum <"$out/.config" >"$out/.minitty-building"
		mv -f "$out/.minitty-building" "$out/.minitty-built"
		step "done" "$(flavour_image "$flavour")"
	fi
	unlock
}

# seed_build FLAVOUR: a flavour that was never compiled starts from a copy
# of the build directory of a flavour of the same tree and arch that was,
# the one whose .config is nearest to F's. Kbuild then recompiles only
# the objects that an option which differs reaches (fixdep's
# include/config/ dependencies), the way it rebuilds after a menuconfig:
# minitty-tiny and the option flavours recompile a few files instead of
# the kernel. ccache cannot share those objects: each depends on
# autoconf.h, which differs. Objects of another tree are not taken: their
# times say nothing about that tree's sources.
seed_build() {
	local flavour=$1 out tree arch link f n from to best='' min=''
	local -a cmds
	out=$(flavour_build "$flavour")
	# (configure makes include/config/ too: vmlinux and init/main.o tell)
	[[ ! -e $out/vmlinux && ! -e $out/init/main.o ]] || return 0
	tree=$(flavour_tree "$flavour")
	arch=$(flavour_arch "$flavour")
	for link in "$SANDBOX"/build/*; do
		f=${link##*/}
		[[ -L $link && -f $link/.minitty-built && $f != "$flavour" ]] || continue
		[[ $(flavour_field "$f" 2) != "" && $(flavour_tree "$f") == "$tree" &&
			$(flavour_arch "$f") == "$arch" ]] || continue
		n=$(comm -3 <(grep CONFIG_ "$link/.config" | sort) \
			<(grep CONFIG_ "$out/.config" | sort) | wc -l)
		if [[ -z $min ]] || ((n < min)); then
			min=$n best=$f
		fi
	done
	[[ -n $best ]] || return 0
	step seed "from $best's build ($min config lines differ)"
	from=$(flavour_objdir "$best")
	to=$(flavour_objdir "$flavour")
	# (under the seed's lock: not while it builds)
	(
		flock 8
		tar -C "$from" --exclude=./.config --exclude='./.minitty-*' -cf - . |
			tar -C "$to" -xf -
	) 8>"$(flavour_build "$best").lock"
	# The tools' build (objtool on x86_64) names its files by absolute
	# path in its .cmd files: renamed, it finds them current. Rebuilt,
	# objtool would be newer than every object, which depends on it.
	if [[ -d $to/tools ]]; then
		mapfile -d '' -t cmds < <(find "$to/tools" -name '.*.cmd' -print0)
		((${#cmds[@]} == 0)) || sed -i "s|$from/|$to/|g" "${cmds[@]}"
	fi
}

# ensure_tree FLAVOUR: fetch and patch when the tree is not there yet.
# The tree `pristine` is a worktree of sandbox/linux at tag pristine (n_tty
# as Debian ships it: the oracle of the differential suite).
ensure_tree() {
	local tree linux=$SANDBOX/linux
	tree=$(flavour_tree "$1")
	if [[ $tree == "$SANDBOX/pristine" ]]; then
		if ! tree_ready "$linux"; then
			fetch_tree "$linux"
			patch_tree "$linux"
		fi
		if [[ ! -e $tree ]]; then
			# (one of two builds at once adds it: make test's lanes)
			(
				flock 9
				if [[ ! -e $tree ]]; then
					step fetch "pristine worktree: ${tree#"$MINITTY_ROOT"/}"
					git -C "$linux" worktree add -q --detach "$tree" pristine
				fi
			) 9>"$SANDBOX/pristine.lock"
		fi
		if [[ $(git -C "$tree" rev-parse HEAD) != "$(git -C "$tree" rev-parse 'pristine^{commit}')" ]] ||
			! git -C "$tree" diff --quiet HEAD --; then
			die "build: ${tree#"$MINITTY_ROOT"/} is not the pristine tree (commits or changes there); move it away"
		fi
	elif ! tree_ready "$tree"; then
		fetch_tree "$tree"
		patch_tree "$tree"
	fi
}

# flavour_stale FLAVOUR: why FLAVOUR's build is not current, on one line
# (nothing when it is): not built, or a file of its tree (.git aside) or of
# configs/, or its .config, newer than its last successful build. (Kbuild
# goes by modification times too; `build` always runs make.)
flavour_stale() {
	local flavour=$1 out stamp newer
	out=$(flavour_build "$flavour")
	stamp=$out/.minitty-built
	if [[ ! -f $(flavour_image "$flavour") || ! -f $out/vmlinux ]]; then
		echo "not built"
	elif [[ ! -f $stamp ]]; then
		echo "no record of its last build"
	elif [[ $(sha256sum <"$out/.config") != "$(cat "$stamp")" ]]; then
		echo "its .config changed"
	else
		newer=$(find "$(flavour_tree "$flavour")" "$CONFIGS" -name .git -prune -o \
			-name '.build-*' -prune -o -type f -newer "$stamp" -print -quit)
		[[ -z $newer ]] || echo "${newer#"$MINITTY_ROOT"/} changed since its last build"
	fi
}

# NO_BUILD: set by the --no-build option of boot, run, size and bench.
NO_BUILD=
no_build_opt() { echo "no-build|||use F as built, even when stale (see: minitty build --help)"; }
no_build_set() { NO_BUILD=${OPT_no_build:-}; }

# ensure_current FLAVOUR [NO_BUILD]: build FLAVOUR when it is stale, so
# that nothing runs an old kernel after an edit. With NO_BUILD (default:
# the global), only say that it is stale. Either way the host gets what
# FLAVOUR's arch needs first (setup, quiet): its cross binutils size and
# debug the build with, even when the build is current (an opt-in arch's
# tools may have gone since it was built).
ensure_current() {
	local flavour=$1 no_build=${2:-$NO_BUILD} why
	# shellcheck disable=SC2046 # one word an arch
	setup_host quiet $(guest_arches "$(flavour_arch "$flavour")")
	why=$(flavour_stale "$flavour")
	[[ -n $why ]] || return 0
	if [[ -n $no_build ]]; then
		[[ $why != "not built" ]] ||
			die "$flavour is not built (--no-build; run: minitty build --flavour $flavour)"
		warn "$flavour is stale ($why); --no-build: using it as it is"
		return 0
	fi
	build_flavour "$flavour" "" "$why"
}

config-save_options() { echo "$FLAVOUR_OPTION"; }
config-save_help() {
	cat <<EOF
usage: minitty config-save [--flavour F] NAME
Keep what a developer changed in F's .config (make menuconfig O=...):
the difference between the savedefconfig of F's .config and that of F's
fragments on tinyconfig (configured aside, as flavours --buildable does)
becomes configs/NAME.config, a fragment to add to a flavour's line in
configs/flavours. Refuses an existing configs/NAME.config.
EOF
	options_help config-save
}

cmd_config-save() {
	parse_options config-save "$@"
	((${#ARGS[@]} == 1)) || usage_error "config-save: one NAME needed (usage: minitty config-save [--flavour F] NAME)"
	local flavour name=${ARGS[0]} out q dest tmp
	flavour=$(flavour_opt)
	[[ $name =~ ^[a-z0-9][a-z0-9_-]*$ ]] || usage_error "config-save: NAME is letters, digits, - and _, not '$name'"
	dest=$CONFIGS/$name.config
	[[ ! -e $dest ]] || die "config-save: ${dest#"$MINITTY_ROOT"/} exists; nothing written"
	out=$(flavour_build "$flavour")
	[[ -f $out/.config ]] || die "config-save: $flavour has no .config (run: minitty build --flavour $flavour)"
	lock "$out.lock"
	q=$(query_config "$flavour") || die "config-save: configuring $flavour's fragments failed (log: $LOGS/query-$flavour-config.log)"
	tmp=$(mktemp -d)
	# shellcheck disable=SC2064 # expand now: tmp is local
	trap "rm -rf '$tmp'" RETURN
	if ! savedefconfig "$flavour" "$out/.config" "$tmp/edited" ||
		! savedefconfig "$flavour" "$q" "$tmp/base"; then
		die "config-save: make savedefconfig failed"
	fi
	unlock
	config_difference "$tmp/base" "$tmp/edited" "$out/.config" >"$tmp/fragment"
	if [[ ! -s $tmp/fragment ]]; then
		step config-save "$flavour's .config is what its fragments give: nothing written"
		return 0
	fi
	{
		echo "# Saved from sandbox/build/$flavour/.config by minitty config-save"
		echo "# (the difference from $(flavour_field "$flavour" 3) on tinyconfig)."
		cat "$tmp/fragment"
	} >"$dest"
	step config-save "${dest#"$MINITTY_ROOT"/}: $(wc -l <"$tmp/fragment") option(s); add $name to a flavour's fragments in configs/flavours"
}

# savedefconfig FLAVOUR CONFIG DEST: the minimal form of file CONFIG.
savedefconfig() {
	local out
	out=$(flavour_build "$1")
	KCONFIG_CONFIG=$2 kmake "$1" savedefconfig >/dev/null 2>&1 &&
		mv "$out/defconfig" "$3"
}

# config_difference BASE EDITED CONFIG: the lines of savedefconfig EDITED
# that BASE lacks, and for each option of BASE that EDITED lacks (it went
# back to its default), its value in the full CONFIG.
config_difference() {
	awk '
	function opt(line) {
		if (match(line, /^CONFIG_[A-Za-z0-9_]+=/)) return substr(line, 1, RLENGTH - 1)
		if (match(line, /^# CONFIG_[A-Za-z0-9_]+ is not set/)) { split(line, a, " "); return a[2] }
		return ""
	}
	FILENAME == ARGV[1] { base[$0] = 1; bopt[opt($0)] = $0; next }
	FILENAME == ARGV[2] { if (!($0 in base) && opt($0) != "") print; eopt[opt($0)] = 1; next }
	{ o = opt($0); if (o != "") full[o] = $0 }
	END {
		for (o in bopt)
			if (o != "" && !(o in eopt))
				print (o in full ? full[o] : "# " o " is not set")
	}' "$1" "$2" "$3"
}
