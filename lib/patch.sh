# shellcheck shell=bash
# patch: apply patches/ onto the pristine tree; export: regenerate patches/.
#
# patches/series lists the numbered patches (not the cover letter) in order.
# patches/0000-cover-letter.patch carries the series' subject and blurb; they
# live in the tree as the description of branch minitty (git branch
# --edit-description), which `patch` sets and `export` uses.

COVER=0000-cover-letter.patch

patch_options() {
	echo "check|||only compare the tree with patches/series; exit 1 when they differ"
	echo "reset|||keep the commits on a backup branch, then apply patches/series"
}
patch_help() {
	cat <<EOF
usage: minitty patch [--check | --reset]
Apply patches/series onto sandbox/linux with git am (no 3-way). Does
nothing when the series is already applied (compared by git patch-id),
applies the rest when only a prefix is, and leaves alone a tree with
commits of its own (exit 0 if they come after the whole series, 1
otherwise, naming the way out that fits: --reset when they are an older
patches/, as after a git pull; export when they are work of your own).
On a patch that does not apply: git am --abort, the patch is named,
exit 1, the tree stays as it was. Sets the branch description from
patches/$COVER. No patches/series: says so, does nothing.
--reset first keeps HEAD on a new branch minitty-backup-DATE and moves
the branch back to the last commit that matches the series (refused with
uncommitted changes): no commit is ever discarded.
EOF
	options_help patch
}

cmd_patch() {
	parse_options patch "$@"
	no_args patch
	local tree=$SANDBOX/linux
	[[ -z ${OPT_check:-} || -z ${OPT_reset:-} ]] ||
		usage_error "patch: --check and --reset do not go together"
	if [[ -n ${OPT_check:-} ]]; then
		tree_ready "$tree" || die "patch: no sandbox tree (run: minitty fetch)"
		series_check "$tree"
		return 0
	fi
	tree_ready "$tree" || fetch_tree "$tree"
	[[ -z ${OPT_reset:-} ]] || reset_tree "$tree"
	patch_tree "$tree"
}

series_files() {
	[[ -f $PATCHES/series ]] || return 0
	sed -e 's/#.*//' -e 's/[[:space:]]*$//' "$PATCHES/series" | awk 'NF'
}

# tree_patch_ids TREE: the patch-ids of pristine..HEAD, oldest first.
tree_patch_ids() {
	local c
	for c in $(git -C "$1" rev-list --reverse pristine..HEAD); do
		git -C "$1" show "$c" | git patch-id --stable | cut -d' ' -f1
		# a commit without a diff has no patch-id: keep the count right
		[[ -n $(git -C "$1" show --format= "$c" | head -c1) ]] || echo "empty-$c"
	done
}

file_patch_id() { git patch-id --stable <"$1" | cut -d' ' -f1; }

git_id() {
	git -C "$1" config user.email >/dev/null ||
		export GIT_COMMITTER_NAME=minitty GIT_COMMITTER_EMAIL=minitty@localhost
}

# series_compare TREE: compare pristine..HEAD with patches/series by
# patch-id. Sets SERIES_FILES, SERIES_HAVE (the tree's patch-ids),
# SERIES_SAME (how many leading commits match) and SERIES_STATE: none (no
# series), applied, ahead (series, then commits of its own), behind (a
# prefix of the series), diverged (a commit differs from the series).
SERIES_FILES=() SERIES_HAVE=() SERIES_SAME=0 SERIES_STATE=
series_compare() {
	local tree=$1 f i n
	local -a want=()
	SERIES_FILES=() SERIES_HAVE=() SERIES_SAME=0
	mapfile -t SERIES_FILES < <(series_files)
	if ((${#SERIES_FILES[@]} == 0)); then
		SERIES_STATE=none
		return 0
	fi
	for f in "${SERIES_FILES[@]}"; do
		[[ -f $PATCHES/$f ]] || die "patch: $f is in patches/series but not in patches/"
		want+=("$(file_patch_id "$PATCHES/$f")")
	done
	if [[ -d $tree/.git/rebase-apply || -d $tree/.git/rebase-merge ]]; then
		die "patch: a rebase or git am is in progress in ${tree#"$MINITTY_ROOT"/}; nothing done"
	fi
	mapfile -t SERIES_HAVE < <(tree_patch_ids "$tree")
	n=${#SERIES_HAVE[@]}
	for ((i = 0; i < n && i < ${#want[@]}; i++)); do
		[[ ${SERIES_HAVE[i]} == "${want[i]}" ]] || break
	done
	SERIES_SAME=$i
	if ((i == ${#want[@]})); then
		SERIES_STATE=applied
		((n == i)) || SERIES_STATE=ahead
	elif ((i == n)); then
		SERIES_STATE=behind
	else
		SERIES_STATE=diverged
	fi
}

# old_patch_ids: the patch-id of every patch file patches/ had in its git
# history (the project's repository; nothing when patches/ is in none).
old_patch_ids() {
	local top rel
	top=$(git -C "$PATCHES" rev-parse --show-toplevel 2>/dev/null) || return 0
	rel=$(realpath --relative-to="$top" "$PATCHES")
	git -C "$top" log --format=%H -n 100 -- "$rel" | while read -r c; do
		git -C "$top" ls-tree "$c" -- "$rel/" | awk '$4 ~ /\.patch$/ { print $3 }'
	done | sort -u | while read -r blob; do
		git -C "$top" cat-file blob "$blob" | git patch-id --stable | cut -d' ' -f1
	done
}

# diverged_hint: the way out for a tree whose commits differ from the
# series (after series_compare): --reset when they all are an older
# patches/ (as after a git pull), export when some are work of your own.
diverged_hint() {
	local id own=0
	local -A old=()
	for id in $(old_patch_ids); do old[$id]=1; done
	for id in "${SERIES_HAVE[@]:SERIES_SAME}"; do
		[[ -n ${old[$id]:-} ]] || own=$((own + 1))
	done
	if ((own == 0)); then
		echo "they are an older version of patches/ (changed since, e.g. by git pull): re-apply with: minitty patch --reset (keeps them on a backup branch; minitty export would overwrite the new patches/)"
	else
		echo "$own of them are in no version of patches/ (work of your own): save them with: minitty export (or set them aside with: minitty patch --reset, which keeps them on a backup branch)"
	fi
}

# series_check TREE: one line saying whether TREE is patches/series; exit
# 1 when it lacks some of it or differs (make test, tests/run).
series_check() {
	local tree=$1
	series_compare "$tree"
	case $SERIES_STATE in
	none) step patch "no patches/series: nothing to compare" ;;
	applied) step patch "sandbox/linux is patches/series (${#SERIES_FILES[@]} patches)" ;;
	ahead) step patch "sandbox/linux is patches/series plus $((${#SERIES_HAVE[@]} - SERIES_SAME)) commit(s) of your own" ;;
	behind) die "patch: sandbox/linux lacks patches/series from ${SERIES_FILES[SERIES_SAME]} on: apply them with: minitty patch" ;;
	diverged) die "patch: sandbox/linux differs from patches/series: its commits from $((SERIES_SAME + 1)) of pristine..HEAD on are not ${SERIES_FILES[SERIES_SAME]} and the rest; $(diverged_hint)" ;;
	esac
}

# reset_tree TREE: set the commits that differ from the series aside on a
# backup branch and move the branch back to the last commit that matches
# (patch_tree then applies the rest). Never discards a commit.
reset_tree() {
	local tree=$1 backup base
	series_compare "$tree"
	case $SERIES_STATE in
	none | applied | behind)
		step reset "nothing to set aside"
		return 0
		;;
	esac
	git -C "$tree" diff --quiet HEAD -- ||
		die "patch: sandbox/linux has uncommitted changes; nothing done (commit or stash them first)"
	backup=minitty-backup-$(date +%Y%m%d-%H%M%S)
	git -C "$tree" branch "$backup" HEAD
	if ((SERIES_SAME == 0)); then
		base=pristine
	else
		base=$(git -C "$tree" rev-list --reverse pristine..HEAD | sed -n "${SERIES_SAME}p")
	fi
	git -C "$tree" reset -q --keep "$base"
	step reset "$((${#SERIES_HAVE[@]} - SERIES_SAME)) commit(s) kept on branch $backup; back at: $(git -C "$tree" log -1 --format=%s "$base")"
}

patch_tree() {
	local tree=$1 i n
	local -a files=()
	series_compare "$tree"
	files=("${SERIES_FILES[@]}")
	i=$SERIES_SAME n=${#SERIES_HAVE[@]}
	case $SERIES_STATE in
	none)
		step patch "no patches/series yet: nothing to apply"
		return 0
		;;
	applied)
		step patch "series already applied (${#files[@]} patches)"
		return 0
		;;
	ahead)
		step patch "series applied, followed by $((n - i)) commit(s) of your own: nothing to do"
		return 0
		;;
	diverged)
		warn "patch: sandbox/linux has commits that are not patches/series (commit $((i + 1)) of pristine..HEAD differs from ${files[i]}); nothing done; $(diverged_hint)"
		exit "$EX_FAIL"
		;;
	esac
	if ! git -C "$tree" diff --quiet HEAD --; then
		die "patch: sandbox/linux has uncommitted changes; nothing done"
	fi
	local rest=("${files[@]:i}")
	step patch "applying ${#rest[@]} patch(es) onto $(git -C "$tree" describe --tags --always)"
	git_id "$tree"
	mkdir -p "$LOGS"
	if ! git -C "$tree" am --no-3way -q "${rest[@]/#/$PATCHES/}" >"$LOGS/patch.log" 2>&1; then
		local next
		next=$(cat "$tree/.git/rebase-apply/next" 2>/dev/null || echo 1)
		git -C "$tree" am --abort >>"$LOGS/patch.log" 2>&1 || true
		sed 's/^/    /' "$LOGS/patch.log" | tail -n 15 >&2
		die "patch: ${rest[next - 1]} does not apply; tree left as it was (log: $LOGS/patch.log)"
	fi
	set_description "$tree"
	step patch "applied ${#rest[@]} patch(es): now at '$(git -C "$tree" log -1 --format=%s)'"
}

# cover_description FILE: subject, blank line, blurb of a cover letter.
cover_description() {
	awk '
	hdr && /^Subject: / { s = $0; sub(/^Subject: (\[[^]]*\] )?/, "", s); insub = 1; next }
	hdr && insub && /^[ \t]/ { t = $0; sub(/^[ \t]+/, " ", t); s = s t; next }
	hdr { insub = 0 }
	hdr && /^$/ { hdr = 0; print s; print ""; next }
	NR == 1 { hdr = 1; next }
	!hdr { body[n++] = $0 }
	END {
		# the blurb ends where the shortlog starts ("Author (N):")
		for (e = 0; e < n; e++)
			if (body[e] ~ /^[^ ].* \([0-9]+\):$/ && (e == 0 || body[e-1] == ""))
				break
		while (e > 0 && body[e-1] == "") e--
		for (i = 0; i < e; i++) print body[i]
	}' "$1"
}

set_description() {
	local tree=$1
	[[ -f $PATCHES/$COVER ]] || return 0
	git -C "$tree" config branch.minitty.description "$(cover_description "$PATCHES/$COVER")"
}

export_options() { :; }
export_help() {
	cat <<EOF
usage: minitty export
Regenerate patches/ from the commits pristine..HEAD of sandbox/linux:
git format-patch --numbered --cover-letter --cover-from-description=subject
(the cover letter comes from the description of branch minitty: first
paragraph = subject), patches/series in order, stale patch files removed.
Files that changed only in their Date: or From <hash> lines are kept.

The cover letter's figures are measured, never typed: each region of the
description between a line <!-- minitty:NAME --> and a line
<!-- /minitty:NAME --> is written again (lib/py/cover.py) before
format-patch, and the description set to the result; the marker lines
stay, so patch and the next export keep them. The regions:
  headline  the TTY layer before the series, and minitty's (size)
  sizes     size's tables of fulltty, minitty and minitty-tiny, what the
            patches before minitty cost the full layer, size --options
  totals    the layer totals, vmlinux and zImage of fulltty, minitty,
            minitty-tiny and notty, and what the console costs
  memory    runtime memory per open port, from sandbox/bench/results.json
            when bench ran on this HEAD; else a line saying not measured
  tests     the differential suite's scenarios (tests/diff/scenarios) and
            the scenarios tests/deviations lists for minitty and
            minitty-tiny; the long stress runs of sandbox/stress, if any
  arches    on each arch but arm, the full layer against minitty (size,
            bloat-o-meter, image) of its fulltty-* and minitty-* flavours
headline, sizes and totals run size on pristine, fulltty, minitty,
minitty-tiny and notty, and size --options, arches on the flavours of
the other arches: each builds what is stale,
so the figures are those of the tree exported. A description without
regions builds nothing. An unknown or unclosed region: exit 1, patches/
untouched.
EOF
	options_help export
}

cmd_export() {
	parse_options export "$@"
	no_args export
	export_tree "$SANDBOX/linux"
}

export_tree() {
	local tree=$1 tmp f count
	tree_ready "$tree" || die "export: no sandbox tree (run: minitty fetch)"
	count=$(git -C "$tree" rev-list --count pristine..HEAD)
	if ((count == 0)); then
		step export "no commits on top of pristine: patches/ left as it is"
		return 0
	fi
	[[ -n $(git -C "$tree" config branch.minitty.description || true) ]] ||
		warn "export: branch minitty has no description: the cover letter keeps placeholders (git -C sandbox/linux branch --edit-description)"
	tmp=$(mktemp -d)
	# shellcheck disable=SC2064 # expand now: tmp is local
	trap "rm -rf '$tmp'" RETURN
	cover_numbers "$tree" "$tmp/data"
	git -C "$tree" format-patch -q --numbered --cover-letter \
		--cover-from-description=subject --zero-commit --no-signature \
		-o "$tmp" pristine..HEAD ||
		die "export: git format-patch failed"
	mkdir -p "$PATCHES"
	for f in "$PATCHES"/*.patch; do
		[[ -e $f && ! -e $tmp/${f##*/} ]] && rm -f "$f" && step export "removed ${f##*/}"
	done
	for f in "$tmp"/*.patch; do
		if [[ -f $PATCHES/${f##*/} ]] && same_patch "$f" "$PATCHES/${f##*/}"; then
			continue
		fi
		cp "$f" "$PATCHES/"
		step export "wrote ${f##*/}"
	done
	for f in "$tmp"/[0-9]*.patch; do
		[[ ${f##*/} == "$COVER" ]] || echo "${f##*/}"
	done >"$PATCHES/series"
	step export "$count patch(es) in patches/series"
}

# The measured parts of the cover letter: the regions of the branch
# description between <!-- minitty:NAME --> and <!-- /minitty:NAME -->
# lines, which lib/py/cover.py writes from the measurements (its
# docstring lists the regions).
COVER_PY=$MINITTY_ROOT/lib/py/cover.py
COVER_FLAVOURS=(pristine fulltty minitty minitty-tiny notty)

# cover_numbers TREE DATA: measure what the description's regions need
# into DATA, then set the description with the regions filled. A
# description without regions is left alone (and nothing is built).
cover_numbers() {
	local tree=$1 data=$2 desc regions f new
	desc=$(git -C "$tree" config branch.minitty.description) || return 0
	regions=$("$PYTHON" "$COVER_PY" regions <<<"$desc") || exit "$EX_FAIL"
	[[ -n $regions ]] || return 0
	mkdir -p "$data"
	step cover "regions: $(awk '{ print $1 }' <<<"$regions" | paste -sd' ')"
	{
		echo "head=$(git -C "$tree" log -1 --format=%h)"
		echo "tree=$(git -C "$tree" rev-parse "HEAD^{tree}")"
		echo "gcc=$("$(arch_field arm cross)gcc" -dumpfullversion | cut -d. -f1,2)"
		echo "size=$(arch_field arm cross)size"
	} >"$data/meta"
	if grep -q ' build$' <<<"$regions"; then
		for f in "${COVER_FLAVOURS[@]}"; do
			step cover "size --flavour $f (builds it when stale)"
			"$MINITTY_ROOT/bin/minitty" size --flavour "$f" >"$data/size-$f.txt"
			stat -c %s "$(flavour_build "$f")/arch/arm/boot/zImage" >"$data/zimage-$f"
		done
		step cover "size --options (builds the option flavours when stale)"
		"$MINITTY_ROOT/bin/minitty" size --options >"$data/options.txt"
	fi
	if grep -q '^arches ' <<<"$regions"; then
		cover_arches "$data"
	fi
	new=$("$PYTHON" "$COVER_PY" fill "$data" <<<"$desc") || exit "$EX_FAIL"
	if [[ $new != "$desc" ]]; then
		git -C "$tree" config branch.minitty.description "$new"
		step cover "the description's regions filled with the new figures"
	else
		step cover "the description's figures are unchanged"
	fi
}

# cover_arches DATA: for each arch but arm with a full-layer and a
# minitty flavour that boot a shell (fulltty-*, minitty-*), their sizes,
# images and bloat-o-meter's difference.
cover_arches() {
	local data=$1 a full mini f shell
	: >"$data/arches"
	for a in $(arch_names); do
		[[ $a != arm ]] || continue
		shell=$("$MINITTY_ROOT/bin/minitty" flavours --shell --arch "$a")
		full=$(grep -m 1 '^fulltty-' <<<"$shell" || :)
		mini=$(grep -m 1 '^minitty-' <<<"$shell" || :)
		[[ -n $full && -n $mini ]] || continue
		for f in "$full" "$mini"; do
			step cover "size --flavour $f (builds it when stale)"
			"$MINITTY_ROOT/bin/minitty" size --flavour "$f" >"$data/size-$f.txt"
			stat -c %s "$(flavour_image "$f")" >"$data/image-$f"
		done
		bloat_total "$full" "$mini" >"$data/bloat-$full-$mini"
		echo "$a $(arch_field "$a" console) $full $mini" >>"$data/arches"
	done
}

# same_patch A B: equal but for the From <hash> and Date: lines.
same_patch() {
	cmp -s <(grep -Ev '^(From [0-9a-f]{40} |Date: )' "$1") \
		<(grep -Ev '^(From [0-9a-f]{40} |Date: )' "$2")
}
