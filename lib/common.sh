# shellcheck shell=bash disable=SC2034 # the globals are used by the other modules
# Shared by every command: paths, messages, the logged step runner, the
# flavour table and option parsing helpers. Sourced by bin/minitty.

MINITTY_ROOT=${MINITTY_ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}
# MINITTY_SANDBOX moves all generated state (used by the tests to try
# fetch/patch/export from scratch without touching the developer's tree).
SANDBOX=${MINITTY_SANDBOX:-$MINITTY_ROOT/sandbox}
PATCHES=${MINITTY_PATCHES:-$MINITTY_ROOT/patches}
CONFIGS=$MINITTY_ROOT/configs
LOGS=$SANDBOX/logs
# MINITTY_RUN_DIR moves the files of the guest of `boot` (the tests use it
# so as not to disturb a developer's running guest).
RUN_DIR=${MINITTY_RUN_DIR:-$SANDBOX/run}
SRC_TARBALL=${MINITTY_TARBALL:-/usr/src/linux-source-6.12.tar.xz}
# make -j: MINITTY_JOBS, or one job per CPU.
JOBS=${MINITTY_JOBS:-$(nproc)}
# The project's Python is Debian's (python3-pexpect, python3-ply...), not
# whatever python3 comes first on PATH.
PYTHON=/usr/bin/python3
export CCACHE_DIR=${CCACHE_DIR:-$SANDBOX/ccache}

# Exit codes.
EX_FAIL=1  # a step failed
EX_USAGE=2 # bad command line

say() { printf '%s\n' "$*"; }
# One line per step on the terminal.
step() { printf '  %-8s %s\n' "$1" "$2"; }
warn() { printf 'minitty: %s\n' "$*" >&2; }
die() { warn "$*"; exit "$EX_FAIL"; }
usage_error() { warn "$*"; exit "$EX_USAGE"; }

# The modules of bin/minitty, in load order (lib/NAME.sh).
MINITTY_MODULES=(common arch setup patch build rootfs guest tools bench stress)

# errexit_run CMD...: run CMD (a program or any function of this shell)
# in a new bash with errexit on. Bash ignores `set -e` inside a function
# run from `if !`, `||`, `&&` or `!` and in every subshell of it, so a
# step's failing inner command would go unnoticed; only a new process
# gets errexit back. The new bash loads the modules (their globals) and
# then this shell's functions as they are now.
errexit_run() {
	# shellcheck disable=SC2016 # expanded by the new bash
	MINITTY_ROOT=$MINITTY_ROOT MODULES="${MINITTY_MODULES[*]}" "$BASH" -c '
		set -euo pipefail
		shopt -s inherit_errexit
		for m in $MODULES; do
			source "$MINITTY_ROOT/lib/$m.sh"
		done
		source "$1"
		shift
		"$@"' errexit_run <(declare -f) "$@"
}

# run_logged NAME LOG CMD...: run CMD (with errexit_run) with all its
# output in LOG, one line on the terminal; on failure show the log's tail
# and path, and exit 1.
run_logged() {
	local name=$1 log=$2
	shift 2
	mkdir -p "$(dirname "$log")"
	step "$name" "(log: ${log#"$MINITTY_ROOT"/})"
	if ! errexit_run "$@" >"$log" 2>&1; then
		tail -n 25 "$log" | sed 's/^/    /' >&2
		die "$name failed; full log: $log"
	fi
}

# Flavour table: configs/flavours, columns name tree fragments shell meaning.
flavour_names() {
	awk '!/^#/ && NF { print $1 }' "$CONFIGS/flavours"
}

# Option flavours (size --options): BASE+OPTION[+OPTION...] is flavour
# BASE with those Kconfig options on, through a fragment in its build
# directory (options.config, written by whoever builds it). Not listed
# by flavour_names; built and sized like the others.

# flavour_field FLAVOUR COLUMN (2=tree, 3=fragments, 4=shell, 5=arch,
# 6=meaning)
flavour_field() {
	if [[ $1 == *+* ]]; then
		if (($2 == 6)); then
			printf '%s, with %s\n' "$(flavour_field "${1%%+*}" 6)" "${1#*+}"
			return
		fi
		set -- "${1%%+*}" "$2"
	fi
	awk -v f="$1" -v c="$2" '!/^#/ && $1 == f {
		if (c == 6) { $1 = $2 = $3 = $4 = $5 = ""; sub(/^ +/, ""); print; }
		else print $c; exit }' "$CONFIGS/flavours"
}

check_flavour() {
	flavour_names | grep -qx -- "$1" ||
		usage_error "unknown flavour '$1' (known: $(flavour_names | paste -sd' '))"
}

flavour_tree() { printf '%s/%s\n' "$SANDBOX" "$(flavour_field "$1" 2)"; }
# flavour_build FLAVOUR: F's build directory, sandbox/build/F: a link to
# flavour_objdir, where make builds.
flavour_build() { printf '%s/build/%s\n' "$SANDBOX" "$1"; }
# flavour_objdir FLAVOUR: a directory of F's tree (TREE/.build-F), so that
# kbuild names the sources ../kernel/fork.c, not by their absolute paths:
# a file that is the same in the pristine tree and in the series' is then
# the same compilation to ccache, and the oracle builds from the cache.
flavour_objdir() { printf '%s/.build-%s\n' "$(flavour_tree "$1")" "$1"; }
# flavour_image FLAVOUR: the kernel image its guests boot (configs/arches).
flavour_image() {
	printf '%s/%s\n' "$(flavour_build "$1")" "$(flavour_arch_field "$1" image)"
}

# flavour_fragments FLAVOUR: the fragment files, one per line, merge order.
flavour_fragments() {
	local f
	for f in $(flavour_field "$1" 3 | tr ',' ' '); do
		printf '%s/%s.config\n' "$CONFIGS" "$f"
	done
	[[ $1 != *+* ]] || printf '%s/options.config\n' "$(flavour_build "$1")"
}

# Option parsing. Every command declares its options as a table of lines
# "long|short|ARG-or-empty|help" in <cmd>_options; the parser and the help
# text both read it, so they cannot drift apart.
# parse_options CMD ARGS...: sets OPT_<long with - as _>=value (or 1), and
# ARGS (the rest, after a `--` too).
declare -a ARGS=()
parse_options() {
	local cmd=$1 long short arg found var
	shift
	ARGS=()
	while (($#)); do
		case $1 in
		--)
			shift
			ARGS+=("$@")
			break
			;;
		-h | --help)
			"${cmd}_help"
			exit 0
			;;
		-*)
			found=
			while IFS='|' read -r long short arg _; do
				[[ -n $long ]] || continue
				if [[ $1 == "--$long" || (-n $short && $1 == "-$short") ]]; then
					found=1
					var=OPT_${long//-/_}
					if [[ -n $arg ]]; then
						(($# >= 2)) || usage_error "$cmd: option $1 needs an argument ($arg)"
						printf -v "$var" '%s' "$2"
						shift
					else
						printf -v "$var" '%s' 1
					fi
					break
				elif [[ -n $arg && $1 == "--$long="* ]]; then
					found=1
					printf -v "OPT_${long//-/_}" '%s' "${1#*=}"
					break
				fi
			done < <("${cmd}_options")
			[[ -n $found ]] || usage_error "$cmd: unknown option '$1' (see: minitty $cmd --help)"
			;;
		*) ARGS+=("$1") ;;
		esac
		shift
	done
}

# options_help CMD: the option lines of CMD's help, from its table.
options_help() {
	local long short arg help left
	"${1}_options" | while IFS='|' read -r long short arg help; do
		[[ -n $long ]] || continue
		left="--$long${arg:+ $arg}"
		[[ -n $short ]] && left="-$short, $left"
		printf '  %-22s %s\n' "$left" "$help"
	done
	printf '  %-22s %s\n' "-h, --help" "this help"
}

no_args() {
	((${#ARGS[@]} == 0)) || usage_error "$1: unexpected argument '${ARGS[0]}'"
}

# The flavour option shared by several commands.
FLAVOUR_OPTION="flavour|f|F|kernel flavour (default fulltty; see configs/flavours; or minitty-tiny+OPTION[+OPTION...])"
# An option flavour (minitty-tiny+MINITTY_X, lib/tools.sh) names its
# options in configs/tiny.config's order, its fragment written.
flavour_opt() {
	local f=${OPT_flavour:-fulltty} o
	if [[ $f == minitty-tiny+* ]]; then
		for o in ${f//+/ }; do
			[[ $o == minitty-tiny ]] || tiny_options | grep -qx -- "$o" ||
				usage_error "unknown minitty option '$o' in flavour '$f' (known: $(tiny_options | paste -sd' '))"
		done
		local -a opts
		IFS=+ read -ra opts <<<"${f#minitty-tiny+}"
		option_flavour "${opts[@]}"
		return
	fi
	check_flavour "$f"
	printf '%s\n' "$f"
}

# lock FILE: hold an exclusive lock on FILE (waiting for it, saying so)
# until unlock or the end of the process; sets LOCK_FD.
LOCK_FD=
lock() {
	mkdir -p "$(dirname "$1")"
	exec {LOCK_FD}>"$1"
	if ! flock -n "$LOCK_FD"; then
		step wait "for another minitty using ${1#"$MINITTY_ROOT"/}" >&2
		flock "$LOCK_FD"
	fi
}
unlock() {
	[[ -z $LOCK_FD ]] || exec {LOCK_FD}>&-
	LOCK_FD=
}

need_cmd() {
	command -v "$1" >/dev/null || die "$2: '$1' not found (run: minitty setup)"
}
