# shellcheck shell=bash
# patch: apply patches/ onto the pristine tree; export: regenerate patches/.
#
# patches/series lists the numbered patches (not the cover letter) in order.
# patches/0000-cover-letter.patch carries the series' subject and blurb; they
# live in the tree as the description of branch minitty (git branch
# --edit-description), which `patch` sets and `export` uses.

COVER=0000-cover-letter.patch

patch_options() { :; }
patch_help() {
	cat <<EOF
usage: minitty patch
Apply patches/series onto sandbox/linux with git am (no 3-way). Does
nothing when the series is already applied (compared by git patch-id),
applies the rest when only a prefix is, and leaves alone a tree with
commits of its own (exit 0 if they come after the whole series, 1
otherwise). On a patch that does not apply: git am --abort, the patch is
named, exit 1, the tree stays as it was. Sets the branch description from
patches/$COVER. No patches/series: says so, does nothing.
EOF
	options_help patch
}

cmd_patch() {
	parse_options patch "$@"
	no_args patch
	local tree=$SANDBOX/linux
	tree_ready "$tree" || fetch_tree "$tree"
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

patch_tree() {
	local tree=$1 f i n
	local -a files=() want=() have=()
	mapfile -t files < <(series_files)
	if ((${#files[@]} == 0)); then
		step patch "no patches/series yet: nothing to apply"
		return 0
	fi
	for f in "${files[@]}"; do
		[[ -f $PATCHES/$f ]] || die "patch: $f is in patches/series but not in patches/"
		want+=("$(file_patch_id "$PATCHES/$f")")
	done
	if [[ -d $tree/.git/rebase-apply || -d $tree/.git/rebase-merge ]]; then
		die "patch: a rebase or git am is in progress in ${tree#"$MINITTY_ROOT"/}; nothing done"
	fi
	mapfile -t have < <(tree_patch_ids "$tree")
	n=${#have[@]}
	for ((i = 0; i < n && i < ${#want[@]}; i++)); do
		[[ ${have[i]} == "${want[i]}" ]] || break
	done
	if ((i == ${#want[@]})); then
		if ((n == i)); then
			step patch "series already applied (${#want[@]} patches)"
		else
			step patch "series applied, followed by $((n - i)) commit(s) of your own: nothing to do"
		fi
		return 0
	fi
	if ((i < n)); then
		warn "patch: sandbox/linux has commits that are not patches/series (commit $((i + 1)) of pristine..HEAD differs from ${files[i]}); nothing done (save them with: minitty export)"
		exit "$EX_FAIL"
	fi
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

# same_patch A B: equal but for the From <hash> and Date: lines.
same_patch() {
	cmp -s <(grep -Ev '^(From [0-9a-f]{40} |Date: )' "$1") \
		<(grep -Ev '^(From [0-9a-f]{40} |Date: )' "$2")
}
