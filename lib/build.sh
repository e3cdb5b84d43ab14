# shellcheck shell=bash
# build: configure (tinyconfig + fragments, then checked) and make one flavour.

build_options() {
	echo "$FLAVOUR_OPTION"
	echo "config-only|||configure and check the config, do not compile"
}
build_help() {
	cat <<EOF
usage: minitty build [--flavour F] [--config-only]
Configure sandbox/build/F from tinyconfig plus the fragments that
configs/flavours lists for F (scripts/kconfig/merge_config.sh, then
olddefconfig), fail if any requested option did not end up as requested,
then make zImage, vmlinux (with debug info) and scripts_gdb, with ccache.
Runs fetch and patch first when needed. Logs: sandbox/logs/build-F-*.log.
EOF
	options_help build
}

kmake() {
	local flavour=$1 cc=${CROSS}gcc
	shift
	command -v ccache >/dev/null && cc="ccache ${CROSS}gcc"
	# Let the flavours share cached objects: they differ in few files, but
	# by default ccache keys -g objects on the build directory. The sources
	# are named by absolute paths (O= is not below the tree), so only
	# DW_AT_comp_dir may name another flavour's directory. (No
	# CCACHE_BASEDIR: rewritten paths would change __FILE__ and the sizes.)
	export CCACHE_NOHASHDIR=${CCACHE_NOHASHDIR:-true}
	make -C "$(flavour_tree "$flavour")" O="$(flavour_build "$flavour")" \
		ARCH=arm CROSS_COMPILE="$CROSS" CC="$cc" -j"$JOBS" "$@"
}

# The tree and the fragments decide the config: hash them.
config_key() {
	local flavour=$1 tree
	local -a frags
	tree=$(flavour_tree "$flavour")
	mapfile -t frags < <(flavour_fragments "$flavour")
	{
		cat "${frags[@]}"
		(cd "$tree" && find . -name 'Kconfig*' -type f -print0 | sort -z |
			xargs -0 cat)
	} | sha256sum | cut -d' ' -f1
}

configure() {
	local flavour=$1 out tree frags
	out=$(flavour_build "$flavour")
	tree=$(flavour_tree "$flavour")
	mapfile -t frags < <(flavour_fragments "$flavour")
	kmake "$flavour" tinyconfig
	ARCH=arm CROSS_COMPILE=$CROSS "$tree/scripts/kconfig/merge_config.sh" \
		-m -O "$out" "$out/.config" "${frags[@]}"
	kmake "$flavour" olddefconfig
}

# config_mismatches FLAVOUR: print each requested option that the .config
# does not have as requested (the last fragment to mention it wins).
config_mismatches() {
	local flavour=$1
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
	}' "$(flavour_build "$flavour")/.config" "${frags[@]}"
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
		run_logged config "$LOGS/build-$flavour-config.log" configure "$flavour"
		echo "$key" >"$out/.minitty-config-key"
	else
		step config "unchanged ($(flavour_field "$flavour" 3))"
	fi
	bad=$(config_mismatches "$flavour")
	[[ -z $bad ]] ||
		die "build: config check failed for $flavour: $(paste -sd' ' <<<"$bad" | sed 's/ CONFIG_/, CONFIG_/g')"
}

# flavour_buildable FLAVOUR: the requested options exist in the tree.
flavour_buildable() {
	local rc=0
	lock "$(flavour_build "$1").lock"
	errexit_run build_config "$1" >/dev/null 2>&1 || rc=$?
	unlock
	return "$rc"
}

cmd_build() {
	parse_options build "$@"
	no_args build
	local flavour
	flavour=$(flavour_opt)
	build_flavour "$flavour" "${OPT_config_only:-}"
}

build_flavour() {
	local flavour=$1 config_only=${2:-}
	setup_host quiet
	ensure_tree "$flavour"
	say "build $flavour"
	# Two builds in one output directory would spoil it.
	lock "$(flavour_build "$flavour").lock"
	build_config "$flavour"
	if [[ -z $config_only ]]; then
		run_logged make "$LOGS/build-$flavour.log" kmake "$flavour" zImage vmlinux scripts_gdb
		step "done" "$(flavour_build "$flavour")/arch/arm/boot/zImage"
	fi
	unlock
}

# ensure_tree FLAVOUR: fetch and patch when the tree is not there yet.
# The tree `pristine` is a worktree of sandbox/linux at tag pristine (n_tty
# as Debian ships it: the oracle of the differential suite).
ensure_tree() {
	local tree linux=$SANDBOX/linux
	tree=$(flavour_tree "$1")
	if [[ $tree == "$SANDBOX/pristine" ]]; then
		tree_ready "$linux" || { fetch_tree "$linux" && patch_tree "$linux"; }
		if [[ ! -e $tree ]]; then
			step fetch "pristine worktree: ${tree#"$MINITTY_ROOT"/}"
			git -C "$linux" worktree add -q --detach "$tree" pristine
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

# ensure_built FLAVOUR: build unless zImage is there (boot and run use
# what is built; `build` is how a developer rebuilds after an edit).
ensure_built() {
	local out
	out=$(flavour_build "$1")
	[[ -f $out/arch/arm/boot/zImage && -f $out/vmlinux ]] || build_flavour "$1"
}
