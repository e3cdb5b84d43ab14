# The project's entry points; bin/minitty does the work.
MINITTY := bin/minitty

.PHONY: test check build rootfs setup

# Cold: setup, fetch, patch, build of every flavour that can be built and
# boots a shell, rootfs, then the suites. Warm: only what changed. A tree
# whose commits differ from patches/ (after a git pull, say) fails here.
# The oracle (n_tty from the pristine tree) is built too: the differential
# suite compares the others with it. So are the SMP debug flavours, on
# which the stress and the differential suite run (MINITTY_SMP_FLAVOURS).
test: setup
	@set -e; $(MINITTY) patch; \
	flavours=$$($(MINITTY) flavours --buildable --shell); \
	for f in $$($(MINITTY) flavours --shell); do \
		case " $$(echo $$flavours) " in \
		*" $$f "*) $(MINITTY) build --flavour $$f ;; \
		*) echo "make test: $$f cannot be built from this tree (its config options are missing): not tested" ;; \
		esac; \
	done; \
	oracle=$$($(MINITTY) flavours --oracle); \
	for f in $$oracle; do $(MINITTY) build --flavour $$f; done; \
	smp=$$($(MINITTY) flavours --buildable --smp); \
	for f in $$smp; do $(MINITTY) build --flavour $$f; done; \
	$(MINITTY) rootfs; \
	MINITTY_FLAVOURS="$$(echo $$flavours)" MINITTY_ORACLE="$$(echo $$oracle)" \
		MINITTY_SMP_FLAVOURS="$$(echo $$smp)" tests/run

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
