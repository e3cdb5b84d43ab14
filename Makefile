# The project's entry points; bin/minitty does the work.
MINITTY := bin/minitty

.PHONY: test check build rootfs setup

# Cold: setup, fetch, patch, build of every flavour of arm and x86_64
# that can be built and boots a shell, and of arm's oracle (n_tty from the
# pristine tree: the differential suite compares the others with it),
# rootfs, then the suites, in four lanes at once (tests/make-test: arm,
# arm-diff, x86_64 and x86_64-diff, where minitty-x86 is compared with
# fulltty-x86; MINITTY_TEST_X86=0 leaves x86_64 out). Warm: only what
# changed. A tree whose commits differ from patches/ (after a git pull,
# say) fails here.
# The SMP debug flavours (minitty-smp, fulltty-smp: KASAN, lockdep, ...)
# take 8 minutes each to build cold, which a cold make test has no room
# for (30 minutes): `make test-smp` builds them and runs the stress, the
# differential suite and system suspend on them; `make test` runs those
# suites on them too when they are built (tests/run).
test: setup
	@tests/make-test

# make test with x86_64's own oracle: pristine-x86 (n_tty from the
# pristine tree) is built too, and both x86_64 flavours are compared with
# it. Its cold build (450 s idle) is what keeps it out of make test.
.PHONY: test-all
test-all: setup
	@MINITTY_TEST_X86=full tests/make-test

# The x86_64 flavours alone (make test runs them in lanes of their own,
# beside arm's): fulltty-x86, minitty-x86 with the 8250, and their
# oracle pristine-x86; the cli, differential (against pristine-x86), gdb, port,
# programs and shell suites.
.PHONY: test-x86
test-x86: setup
	@set -e; $(MINITTY) patch; \
	flavours=$$($(MINITTY) flavours --buildable --shell --arch x86_64); \
	oracle=$$($(MINITTY) flavours --oracle --arch x86_64); \
	for f in $$flavours $$oracle; do $(MINITTY) build --flavour $$f; done; \
	$(MINITTY) rootfs --arch x86_64; \
	MINITTY_FLAVOURS="$$(echo $$flavours)" MINITTY_ORACLE="$$(echo $$oracle)" \
		MINITTY_SMP_FLAVOURS= tests/run cli diff gdb port programs shell

# The arm64 flavours (issue 16: fulltty-arm64, minitty-arm64 with the
# PL011 on QEMU's virt, and their oracle pristine-arm64). arm64 is opt-in
# (configs/arches, column setup): `setup --arch arm64` installs its cross
# compiler and busybox, which plain setup, and so make test, leave out.
# Builds the three and runs the cli, differential (against
# pristine-arm64), gdb, port, programs and shell suites on them; the
# differential suite twice, the second time with mtt32, arm's build of the
# guest program, through the kernels' 32-bit compat path (CONFIG_COMPAT).
.PHONY: test-arm64
test-arm64:
	@set -e; $(MINITTY) setup --arch arm64; $(MINITTY) patch; \
	flavours=$$($(MINITTY) flavours --buildable --shell --arch arm64); \
	oracle=$$($(MINITTY) flavours --oracle --arch arm64); \
	for f in $$flavours $$oracle; do $(MINITTY) build --flavour $$f; done; \
	$(MINITTY) rootfs --arch arm64; \
	MINITTY_FLAVOURS="$$(echo $$flavours)" MINITTY_ORACLE="$$(echo $$oracle)" \
		MINITTY_SMP_FLAVOURS= tests/run cli diff gdb port programs shell

# The bench's own flavours (notty, bench-fulltty, bench-minitty) and
# `bench --quick` (tests/suites/bench), which a cold make test has no room
# for either; make test runs that suite too once they are built.
.PHONY: test-bench
test-bench: setup
	@set -e; $(MINITTY) patch; \
	for f in fulltty minitty notty bench-fulltty bench-minitty; do $(MINITTY) build --flavour $$f; done; \
	$(MINITTY) rootfs; \
	MINITTY_FLAVOURS="fulltty minitty" MINITTY_BENCH=1 tests/run bench

# The SMP debug flavours under the differential suite, the stress and
# system suspend (tests/suites/suspend).
.PHONY: test-smp
test-smp: setup
	@set -e; $(MINITTY) patch; \
	oracle=$$($(MINITTY) flavours --oracle --arch arm); \
	for f in $$oracle; do $(MINITTY) build --flavour $$f; done; \
	smp=$$($(MINITTY) flavours --buildable --smp); \
	for f in $$smp; do $(MINITTY) build --flavour $$f; done; \
	$(MINITTY) rootfs; \
	MINITTY_FLAVOURS= MINITTY_ORACLE="$$(echo $$oracle)" \
		MINITTY_SMP_FLAVOURS="$$(echo $$smp)" tests/run diff stress suspend

setup:
	@$(MINITTY) setup

build:
	@$(MINITTY) build

rootfs:
	@$(MINITTY) rootfs

check:
	@$(MINITTY) check

# The README's command reference, from the help text.
.PHONY: readme
readme:
	@tests/lib/readme.py
