# The README's commands. `make run` sets up and runs the driver suite in UML;
# `make test` sets up and runs lint, the framework's unit tests, the driver tests and
# their replay against the golden traces, and ends with a table of its phases.
VENV   := .venv
PYTHON := $(VENV)/bin/python
STAMP  := $(VENV)/.roadtest-installed

.PHONY: all setup system venv kernel run test checks-um checks-x86_64 unit drivers variants \
	um-chain1 um-chain2 x86_64-chain1 x86_64-chain2 kernel-coverage kernel-sanitizers \
	kernel-x86_64 guest-lane2 guest-sanitizer guest-bisect-fuzz tree-6.1 hostile replay travel \
	x86_64 x86_64-run x86_64-replay traces lint patches-check clean

# Python's compiled bytecode, under build/ (PYTHONPYCACHEPREFIX, unless set): make test
# starts Python some hundreds of times (pytester's runs, each reproducer, each oracle),
# and without its .pyc files each start compiled roadtest and pytest's assertion rewrite
# of it again: 0.92 s to start `roadtest run` against 0.42 s, the unit tests 93 s against
# 67 s (docs/design.md). So a PYTHONDONTWRITEBYTECODE in the environment (which keeps
# __pycache__ out of source trees) is lifted here: nothing is written beside the sources.
# Guests never write there: the sandbox leaves them only their work directory.
PYTHONPYCACHEPREFIX ?= $(abspath build/pycache)
export PYTHONPYCACHEPREFIX
export PYTHONDONTWRITEBYTECODE :=

# Each step of make test is a phase: PHASE runs it (scripts/phases.py, plain python3)
# and, under make test, appends its lane, name, status and wall time to PHASES_FILE;
# make test prints the table at its end. Run alone (PHASES_FILE empty), a target
# records nothing. LANE names the lane of make test that runs the step. phases.py echoes
# the command, as make would.
PHASES_FILE :=
LANE        :=
PHASE        = @python3 scripts/phases.py run --file='$(PHASES_FILE)' --lane='$(LANE)' $@ --

# The CPU of make test's second lane (the x86_64 checks, UML's longest guest tests and the
# hostile run): the second one where there are two. (On CPU 0, beside the outer
# UML guest, make test took 13.5 min against 11.3 min here: UML's driver tests and the
# unit tests run there first.)
LANE2_CPU := $(shell [ "$$(nproc)" -gt 1 ] && echo 1 || echo 0)

all: run

setup: system venv

system:
	@scripts/setup-system.sh

# Reinstall only when the packaging changes: a second `make` does no network work.
$(STAMP): setup.cfg pyproject.toml
	@test -x $(PYTHON) || /usr/bin/python3 -m venv $(VENV)
	$(PYTHON) -m pip install -q --disable-pip-version-check -e '.[dev]'
	@touch $@

venv: system $(STAMP)

kernel: setup
	$(PHASE) $(VENV)/bin/roadtest build

run: kernel
	$(VENV)/bin/roadtest run tests/drivers

unit: setup
	$(PHASE) $(PYTHON) -m pytest -q tests/unit

# tests/guest/test_driver_coverage.py runs the gcov variant of the kernel, and
# tests/guest/test_sanitizers.py the sanitizer variant: build them here, where their
# progress shows, not inside those tests.
drivers: variants
	$(PHASE) $(VENV)/bin/roadtest run tests/drivers tests/guest \
		--ignore=tests/guest/test_qemu_guest.py --ignore=tests/guest/test_vm.py \
		$(foreach f,$(GUEST_LANE2),--ignore=$(f))

variants: kernel-coverage kernel-sanitizers

kernel-coverage: kernel
	$(PHASE) $(VENV)/bin/roadtest build --coverage

kernel-sanitizers: kernel
	$(PHASE) $(VENV)/bin/roadtest build --sanitizers

# UML's longest guest tests, run by make test's second lane (on LANE2_CPU) in two groups,
# each beside other work: the sanitizer kernel's (its KASAN and kmemleak proofs, the driver
# suite on it, the mini-sweep, hostile mode's leak) and the bisect and fuzz proofs.
GUEST_SANITIZER   := tests/guest/test_sanitizers.py tests/guest/test_mini_sweep.py \
	tests/guest/test_hostile_finds_leaks.py
GUEST_BISECT_FUZZ := tests/guest/test_bisect_proof.py tests/guest/test_fuzz_examples.py \
	tests/guest/test_fuzz_finds_real_bugs.py
GUEST_LANE2 := $(GUEST_SANITIZER) $(GUEST_BISECT_FUZZ)

guest-lane2: guest-sanitizer guest-bisect-fuzz

guest-sanitizer: variants
	$(PHASE) $(VENV)/bin/roadtest run --roadtest-cpu=$(LANE2_CPU) $(GUEST_SANITIZER)

guest-bisect-fuzz: variants
	$(PHASE) $(VENV)/bin/roadtest run --roadtest-cpu=$(LANE2_CPU) $(GUEST_BISECT_FUZZ)

# --tree on another kernel, as a developer names one: Debian's linux-source-6.1 (make
# setup installs it), unpacked into the cache and built there like any tree (cached like
# every kernel), and one driver test file on it, live and against its golden traces
# (traces/pcf8563/*@6.1.rtrace where 6.1's I/O differs from 6.12's); its alarm test that
# needs 6.2's interrupt check is skipped by its kernel range.
TREE_61 := tests/drivers/rtc/test_pcf8563.py
tree-6.1: setup
	$(PHASE) sh -c '$(VENV)/bin/roadtest run --tree linux-source-6.1 $(TREE_61) && \
		$(VENV)/bin/roadtest replay --tree linux-source-6.1 --golden traces $(TREE_61)'

# Every I2C device of the driver suite behind a hostile device, in the quick profile
# (`roadtest fuzz --hostile` is the long run).
hostile: kernel
	$(PHASE) $(VENV)/bin/roadtest run --roadtest-cpu=$(LANE2_CPU) --roadtest-hostile tests/drivers

# The driver suite against the golden traces in traces/: the drivers' register I/O
# must be what was recorded, exactly: under simulated time (the default) a run repeats
# event for event, whatever the host's load. `make traces` re-records them (after a
# passing run).
# The datasheet properties (test_*_properties.py) have no golden traces: a property's
# examples are not a fixed register sequence (see docs/internals.md).
replay: kernel
	$(PHASE) $(VENV)/bin/roadtest replay --roadtest-time=sim --golden traces

# The driver suite under UML's basic time-travel, the mode before simulated time (the
# tests of the models' datasheet timing, marked roadtest_time("sim"), are skipped there).
travel: kernel
	$(PHASE) $(VENV)/bin/roadtest run --roadtest-time=travel tests/drivers

# The drivers, our patches, the golden traces and the confinement again, in an x86_64
# kernel under QEMU (TCG where KVM is not usable), and a whole record inside a QEMU VM
# (test_vm.py). A driver test with a golden trace runs once there, in the replay, which
# checks its driver's I/O against the trace as well as the test's own assertions; the run
# takes the others (--roadtest-leave-replayed). The properties pass there too, but take a
# minute and a half of real time under TCG: `roadtest run --machine x86_64 tests/drivers`
# runs them, and every test live. (tests/guest comes first: its conftest's pytest_plugins
# must be an initial conftest's.) The checks and the replay are two targets: one failing,
# the other still runs under make -k (make test).
x86_64: x86_64-run x86_64-replay

kernel-x86_64: kernel
	$(PHASE) $(VENV)/bin/roadtest build --machine x86_64

x86_64-run: kernel-x86_64
	$(PHASE) $(VENV)/bin/roadtest run --machine x86_64 --roadtest-cpu=$(LANE2_CPU) \
		tests/guest/test_host_escape.py tests/guest/test_qemu_guest.py tests/guest/test_vm.py \
		tests/drivers --ignore-glob='*_properties.py' --roadtest-leave-replayed=traces

x86_64-replay: kernel-x86_64
	$(PHASE) $(VENV)/bin/roadtest replay --machine=x86_64 --roadtest-cpu=$(LANE2_CPU) \
		--roadtest-replay-tolerate-repeats --golden traces

# Recorded under simulated time: every event carries the guest's time, and a second
# recording is the same event for event. Tests marked roadtest_time("sim") (a model's
# datasheet timing) run live and get no trace: the x86_64 replay (real time) could not
# play them.
traces: kernel
	$(VENV)/bin/roadtest record --roadtest-time=sim tests/drivers --ignore-glob='*_properties.py'

# Every patch of kernel-patches/ fit to send and proven by its test: checkpatch --strict,
# the series apply in order, the modules each patch changes build right after it, and each
# fix's reproducer (the `roadtest run` in its message) fails with the fix taken back out of
# its module (built out of tree against the cached kernel: seconds, not a kernel build) and
# passes with it. roadtest/kernel/patches_check.py; docs/commands.md. In make test the
# half with the patch is the driver suite's own run (its `drivers` step, on the same
# kernel) for every reproducer under tests/drivers: PATCHES_CHECK_ARGS.
# The sanitizer kernel too: a reproducer that asks for it boots it (a test's own pytest run
# with --roadtest-sanitizers would build it inside the test's time limit).
PATCHES_CHECK_ARGS :=
patches-check: kernel kernel-sanitizers
	$(PHASE) $(PYTHON) -m roadtest.kernel.patches_check $(PATCHES_CHECK_ARGS)

lint: setup
	$(PHASE) sh -c '$(VENV)/bin/ruff check roadtest tests bench scripts && \
		$(VENV)/bin/ruff format --check roadtest tests bench scripts && $(VENV)/bin/mypy'

# Two lanes side by side, each on a CPU of its own (LANE2_CPU): lint, the unit tests and
# UML's checks on one; on the other the x86_64 checks, UML's longest guest tests
# (GUEST_LANE2) and the hostile run. Each lane is two chains of steps side by side on its
# CPU: a lane's steps wait on a clock or a timeout for about a third of their time (the
# table's CPU column against its wall time: 6:16 of CPU in 9:44 and 7:55 in 10:29 with one
# chain a lane, docs/design.md), which the other chain fills. On the second CPU the x86_64
# replay's QEMU (TCG, a real clock) waits half its time. A chain's steps run one after
# the other, each whatever the one before it did (-k; none needs another's result; the
# table says which failed). Each step's output shows, in one piece, when the step ends
# (scripts/phases.py keeps it until then).
# UML's replay runs under simulated time, exact, beside the rest: host load cannot move a
# driver's timer work in its I/O there. Each chain builds the kernels its steps need; a
# kernel is built once (builds take a lock in the kernel cache): the chain that comes
# second waits for the lock and finds it built. Then the table of phases (scripts/phases.py:
# lane, start, wall and CPU time, status; a step that did not run) is printed, pass or
# fail, and make test fails if any step failed or did not run.
RUN_DIR   := build/make-test
UM_CHAIN1  := lint unit drivers tree-6.1
UM_CHAIN2  := travel replay patches-check
X86_CHAIN1 := x86_64-replay guest-sanitizer
X86_CHAIN2 := x86_64-run guest-bisect-fuzz hostile
UM_STEPS  := $(UM_CHAIN1) $(UM_CHAIN2)
X86_STEPS := $(X86_CHAIN1) $(X86_CHAIN2)

test:
	@mkdir -p $(RUN_DIR) && echo "# started $$(date +%s)" >$(RUN_DIR)/phases
	@status=0; \
	$(MAKE) --no-print-directory -k -j2 --output-sync=target checks-um checks-x86_64 \
		PHASES_FILE=$(abspath $(RUN_DIR))/phases || status=$$?; \
	python3 scripts/phases.py table $(RUN_DIR)/phases \
		--expect $(addprefix um:,$(UM_STEPS)) $(addprefix x86_64:,$(X86_STEPS)) || status=1; \
	exit $$status

checks-um: setup
	$(MAKE) --no-print-directory -k -j2 --output-sync=target um-chain1 um-chain2 LANE=um \
		PATCHES_CHECK_ARGS=--suite-ran=tests/drivers

checks-x86_64: setup
	$(MAKE) --no-print-directory -k -j2 --output-sync=target x86_64-chain1 x86_64-chain2 \
		LANE=x86_64

um-chain1:
	$(MAKE) --no-print-directory -k -j1 $(UM_CHAIN1)
um-chain2:
	$(MAKE) --no-print-directory -k -j1 $(UM_CHAIN2)
x86_64-chain1:
	$(MAKE) --no-print-directory -k -j1 $(X86_CHAIN1)
x86_64-chain2:
	$(MAKE) --no-print-directory -k -j1 $(X86_CHAIN2)

clean:
	rm -rf $(VENV) *.egg-info
