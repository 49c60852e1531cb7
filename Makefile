# The README's commands. `make run` sets up and runs the driver suite in UML;
# `make test` sets up and runs lint, the framework's unit tests, the driver tests and
# their replay against the golden traces.
VENV   := .venv
PYTHON := $(VENV)/bin/python
STAMP  := $(VENV)/.roadtest-installed

.PHONY: all setup system venv kernel run test checks-um checks-x86_64 unit drivers variants \
	guest-lane2 hostile replay travel \
	x86_64 traces lint clean

# The CPU of the x86_64 checks (make test runs them beside UML's): the second one where
# there are two. (On CPU 0, beside the outer UML guest, make test took 13.5 min against
# 11.3 min here: UML's driver tests and the unit tests run there first.)
X86_CPU := $(shell [ "$$(nproc)" -gt 1 ] && echo 1 || echo 0)

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
	$(VENV)/bin/roadtest build

run: kernel
	$(VENV)/bin/roadtest run tests/drivers

unit: setup
	$(PYTHON) -m pytest -q tests/unit

# tests/guest/test_driver_coverage.py runs the gcov variant of the kernel, and
# tests/guest/test_sanitizers.py the sanitizer variant: build them here, where their
# progress shows, not inside those tests.
drivers: variants
	$(VENV)/bin/roadtest run tests/drivers tests/guest \
		--ignore=tests/guest/test_qemu_guest.py --ignore=tests/guest/test_vm.py \
		$(foreach f,$(GUEST_LANE2),--ignore=$(f))

variants: kernel
	$(VENV)/bin/roadtest build --coverage
	$(VENV)/bin/roadtest build --sanitizers

# UML's longest guest tests, run by make test's second lane once the x86_64 checks are
# done (on X86_CPU): the two lanes then take about as long as each other.
GUEST_LANE2 := tests/guest/test_bisect_proof.py tests/guest/test_fuzz_examples.py \
	tests/guest/test_fuzz_finds_real_bugs.py tests/guest/test_hostile_finds_leaks.py \
	tests/guest/test_sanitizers.py

guest-lane2: variants
	$(VENV)/bin/roadtest run --roadtest-cpu=$(X86_CPU) $(GUEST_LANE2)

# Every I2C device of the driver suite behind a hostile device, in the quick profile
# (`roadtest fuzz --hostile` is the long run).
hostile: kernel
	$(VENV)/bin/roadtest run --roadtest-hostile tests/drivers

# The driver suite against the golden traces in traces/: the drivers' register I/O
# must be what was recorded, exactly: under simulated time (the default) a run repeats
# event for event, whatever the host's load. `make traces` re-records them (after a
# passing run).
# The datasheet properties (test_*_properties.py) have no golden traces: a property's
# examples are not a fixed register sequence (see docs/internals.md).
replay: kernel
	$(VENV)/bin/roadtest replay --roadtest-time=sim --golden traces

# The driver suite under UML's basic time-travel, the mode before simulated time (the
# tests of the models' datasheet timing, marked roadtest_time("sim"), are skipped there).
travel: kernel
	$(VENV)/bin/roadtest run --roadtest-time=travel tests/drivers

# The drivers, our patches, the golden traces and the confinement again, in an x86_64
# kernel under QEMU (TCG where KVM is not usable), and a whole record inside a QEMU VM
# (test_vm.py). The properties pass there too, but take a minute and a half of real time
# under TCG: `roadtest run --machine x86_64 tests/drivers` runs them. (tests/guest comes
# first: its conftest's pytest_plugins must be an initial conftest's.)
x86_64: kernel
	$(VENV)/bin/roadtest build --machine x86_64
	$(VENV)/bin/roadtest run --machine x86_64 --roadtest-cpu=$(X86_CPU) \
		tests/guest/test_host_escape.py tests/guest/test_qemu_guest.py tests/guest/test_vm.py \
		tests/drivers --ignore-glob='*_properties.py'
	$(VENV)/bin/roadtest replay --machine=x86_64 --roadtest-cpu=$(X86_CPU) \
		--roadtest-replay-tolerate-repeats --golden traces

# Recorded under simulated time: every event carries the guest's time, and a second
# recording is the same event for event. Not the timing tests (test_*_timing.py): they
# run under sim only, and the x86_64 replay (real time) could not play them.
traces: kernel
	$(VENV)/bin/roadtest record --roadtest-time=sim tests/drivers \
		--ignore-glob='*_properties.py' --ignore-glob='*_timing.py'

lint: setup
	$(VENV)/bin/ruff check roadtest tests bench
	$(VENV)/bin/ruff format --check roadtest tests bench
	$(VENV)/bin/mypy

# The x86_64 checks (QEMU, CPU-bound under TCG), then UML's longest guest tests
# (GUEST_LANE2), run beside lint, the unit tests and UML's other checks (see X86_CPU).
# Each half prints when it is done. UML's replay runs under simulated time, exact, beside
# the other lane: host load cannot move a driver's timer work in its I/O there.
test:
	$(MAKE) --no-print-directory -j2 --output-sync=target checks-um checks-x86_64

checks-um: setup
	$(MAKE) --no-print-directory -j1 lint unit drivers hostile travel replay

checks-x86_64: kernel
	$(MAKE) --no-print-directory -j1 x86_64 guest-lane2

clean:
	rm -rf $(VENV) *.egg-info
