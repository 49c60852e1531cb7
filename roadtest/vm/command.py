"""`roadtest run|record|replay --vm qemu`: the pytest run, backend and UML guests
included, inside an x86_64 QEMU VM instead of on the host.

`run_in_vm` stands in for the pytest run of `run`, `record` and `replay`: those commands
do on the host what they always do around it (record's staging and the switch of the
golden traces, replay's summary), and only the test run goes into the VM. The host
builds both kernels first (UML's, which the run boots inside the VM, and the x86_64 one
the VM boots: a build inside the VM would land in its memory). The VM's root is the
host's, read-only over 9p, under a tmpfs: the run can write anywhere, and its writes
stay in the VM. What must come back is shared writable at its own path: the run's work
directory (guest logs, under the cache's runs/) and the outputs its options name
(--roadtest-record's staging, --roadtest-replay-results, --roadtest-ktap's and
--junitxml's directories). Its output comes back on a virtio-serial port as it is
written, and its exit status is the run's.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable
from pathlib import Path

from roadtest.errors import UsageError

VMS = ("qemu",)
MEMORY = "1G"  # the run's Python, UML's 128M (in the VM's /dev/shm), the root's tmpfs
BOOT_TIMEOUT = 120.0  # TCG; an x86_64 guest was at its agent in 7.4-9 s (AMD EPYC)
GUEST_BOOT_TIMEOUT = 180.0  # a UML guest's, in the VM
POLL = 0.2  # s between asks whether the command ended

# Options whose value is a directory the run writes into, or a file it writes (into the
# file's directory).
_OUTPUT_DIRS = ("--roadtest-record", "--roadtest-replay-results")
_OUTPUT_FILES = ("--roadtest-ktap", "--junitxml", "--junit-xml")


def take_vm(argv: list[str]) -> tuple[list[str], str | None]:
    """`--vm NAME` (or --vm=NAME) taken out of a command's arguments, and NAME."""
    rest: list[str] = []
    vm = None
    it = iter(argv)
    for arg in it:
        if arg == "--vm":
            vm = next(it, "")
        elif arg.startswith("--vm="):
            vm = arg.split("=", 1)[1]
        else:
            rest.append(arg)
            continue
        if vm not in VMS:
            raise UsageError(f"--vm: {vm or '(no value)'!r} is not one of: {', '.join(VMS)}")
    return rest, vm


def _option_values(args: list[str], name: str) -> list[str]:
    values = []
    for i, arg in enumerate(args):
        if arg == name and i + 1 < len(args):
            values.append(args[i + 1])
        elif arg.startswith(name + "="):
            values.append(arg.split("=", 1)[1])
    return values


def outputs(args: list[str]) -> list[Path]:
    """The host directories a pytest run with `args` writes besides its work directory."""
    dirs: list[Path] = []
    for name in _OUTPUT_DIRS:
        for value in _option_values(args, name):
            path = Path(value).absolute()
            path.mkdir(parents=True, exist_ok=True)
            dirs.append(path)
    for name in _OUTPUT_FILES:
        for value in _option_values(args, name):
            parent = Path(value).absolute().parent
            parent.mkdir(parents=True, exist_ok=True)
            dirs.append(parent)
    return list(dict.fromkeys(dirs))


def check_supported(args: list[str]) -> None:
    """What the VM cannot run, as a usage error: it boots the main UML kernel, and UML's
    basic time-travel panics there."""
    from roadtest.arch.um import UM
    from roadtest.machine.base import TimeMode
    from roadtest.run_options import RunOptions, take

    values, _ = take(args)
    options = RunOptions.parse(values)
    if not options.variant.is_main:
        raise UsageError(f"--vm qemu runs the main UML kernel: not the {options.variant.name} one")
    if options.machine.target is not UM:
        raise UsageError(
            f"--vm qemu runs the main UML kernel: not the {options.machine.name} machine"
        )
    if options.time is TimeMode.TRAVEL:
        # A real alarm handled inside time_travel_update_time_rel: "time-travel: time goes
        # backwards". Simulated time (the default) has no real alarm, and real time none
        # of basic time-travel's bookkeeping.
        raise UsageError(
            "--vm qemu: UML's basic time-travel panics in the VM: use --roadtest-time=sim "
            "(the default) or real"
        )


def run_in_vm(
    args: list[str],
    *,
    cache: Path,
    workdir: Path,
    build_kernels: Callable[[], Path],
) -> int:
    """`roadtest run ARGS` (pytest's arguments) in a QEMU VM; its exit status.
    `build_kernels` builds (or confirms) both kernels and returns the image the VM boots."""
    from roadtest.machine.base import BootConfig, GuestError
    from roadtest.machine.qemu import OUTPUT_PORT, QEMUGuest

    check_supported(args)
    shares = outputs(args)
    image = build_kernels()
    run_dir = workdir / "run"
    # The console script, as on the host (`python -m roadtest.cli` imports roadtest before
    # pytest can rewrite its asserts, and pytest warns).
    script = Path(sys.executable).with_name("roadtest")
    program = [str(script)] if script.is_file() else [sys.executable, "-m", "roadtest.cli"]
    # The guests keep the run's time mode: simulated by default (check_supported refuses
    # basic time-travel, which panics here). UML boots in about 7 s under TCG, and several
    # times that on a busy host.
    options = [
        f"--roadtest-workdir={run_dir}",
        f"--roadtest-boot-timeout={GUEST_BOOT_TIMEOUT:g}",
    ]
    inner = [*program, "run", *options, *args]
    env = {**os.environ, "ROADTEST_CACHE": str(cache)}
    env.setdefault("COLUMNS", str(_columns()))
    config = BootConfig(
        image=image,
        workdir=workdir,
        cpu=None,
        mem=MEMORY,
        boot_timeout=BOOT_TIMEOUT,
        call_timeout=60.0,
    )
    vm = QEMUGuest(config, shares=shares, overlay=True, output=sys.stdout.buffer)
    sys.stdout.flush()
    where = f"{vm.qemu.describe}, {vm.accel.describe}"
    print(f"roadtest: in a VM: {where}; logs: {workdir}", flush=True)
    try:
        vm.start()
        pid = vm.agent.spawn(inner, tty=OUTPUT_PORT, cwd=os.getcwd(), env=env)
        while (status := vm.agent.reap(pid)) is None:
            time.sleep(POLL)
        vm.stop()
    except GuestError as err:
        raise UsageError(f"--vm qemu: {err}") from None
    finally:
        vm.kill()
    # A signal's death in the VM reads as the shell's 128 + N, as on the host.
    return status if status >= 0 else 128 - status


def _columns() -> int:
    try:
        return os.get_terminal_size(sys.stdout.fileno()).columns
    except OSError:
        return 80
