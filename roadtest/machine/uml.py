"""A User-Mode Linux guest: boot, the agent channel, console logs, clean shutdown.

`UML` is the machine type (--roadtest-machine um): a kernel for roadtest.arch.um,
virtio devices over virtio_uml, and `UMLGuest`s.

UML runs in its own session so that one killpg() ends it and every host
process it forked; PR_SET_PDEATHSIG ends it if the test process dies first.
It is started through sandbox.py, which confines it on the host.
"""

from __future__ import annotations

import ctypes
import os
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path

import msgpack

import roadtest
import roadtest.guest
from roadtest.arch.um import UM
from roadtest.guest.client import AgentClient
from roadtest.guest.protocol import Channel, ProtocolError
from roadtest.machine import gdb, sandbox
from roadtest.machine.base import (
    BootConfig,
    GuestError,
    Machine,
    MachineType,
    VirtioNode,
    device_node,
)
from roadtest.machine.console import PANIC, Console

_PR_SET_PDEATHSIG = 1


def guest_python_path() -> str:
    """Where the guest's Python finds roadtest and msgpack: the same files the host uses."""
    dirs = [Path(roadtest.__file__).parents[1], Path(msgpack.__file__).parents[1]]
    return ":".join(dict.fromkeys(str(d) for d in dirs))


def _die_with_parent() -> None:
    ctypes.CDLL(None).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)


class UMLGuest(Machine):
    """One UML guest, confined on the host by sandbox.py."""

    name = "UML"

    def __init__(self, config: BootConfig) -> None:
        self.config = config
        self.workdir = config.workdir.resolve()
        self.console_log = self.workdir / "console.log"
        self.kernel_log = self.workdir / "kernel.log"
        self.umid = "guest"
        self.proc: subprocess.Popen[bytes] | None = None
        self.console: Console | None = None
        self._agent: AgentClient | None = None
        self.release = ""
        self.boot_seconds = 0.0
        self.terminal_tty = "/dev/tty2" if config.terminal is not None else ""

    @property
    def agent(self) -> AgentClient:
        if self._agent is None:
            raise GuestError("the guest is not running")
        return self._agent

    def command(self, channel_fd: int) -> list[str]:
        """UML's command line; `channel_fd` is the host fd that becomes the guest's tty1,
        and the config's terminal (if any) its tty2."""
        cfg = self.config
        args = [
            str(cfg.image),
            f"mem={cfg.mem}",
            "rootfstype=hostfs",
            "ro",
            f"init={cfg.python}",
            "con=null",
            "con0=null,fd:1",
            f"con1=fd:{channel_fd}",
            *([f"con2=fd:{cfg.terminal}"] if cfg.terminal is not None else []),
            "ssl=null",
            f"uml_dir={self.workdir}",
            f"umid={self.umid}",
            # The RFC's strictness: any WARN or oops ends the guest, and the test with it.
            "panic_on_warn=1",
            "oops=panic",
            # Sanity checks, red zones and poisoning; not U (alloc/free stack traces),
            # which doubled the cost of every I2C transfer (measured: 224 vs 105 us).
            "slub_debug=FZP",
            "no_hash_pointers",
            # The regulator core turns off unused regulators 30 s after boot, which
            # time-travel reaches within a few tests: a CONTROL write no test made.
            "regulator_ignore_unused",
            "quiet",
        ]
        if cfg.dtb is not None:
            args.append(f"dtb={cfg.dtb}")
        if cfg.time_travel:
            # The guest clock jumps over idle time: driver delays cost nothing.
            args.append("time-travel")
        args += cfg.extra_args
        args += [
            f"ROADTEST_WORK={self.workdir}",
            "ROADTEST_AGENT_TTY=/dev/tty1",
            f"ROADTEST_PYTHONPATH={guest_python_path()}",
            "--",
            "-I",
            "-S",
            str(Path(roadtest.guest.__file__).with_name("init.py")),
        ]
        # The guest is untrusted: confine UML on the host (sandbox.py says how).
        launcher = [cfg.python, "-I", "-S", str(Path(sandbox.__file__)), "--writable"]
        launcher.append(str(self.workdir))
        if cfg.cpu is not None:
            launcher += ["--cpu", str(cfg.cpu)]
        return [*launcher, "--", *args]

    def gdb_command(self, module_dirs: Sequence[Path]) -> str:
        if self.proc is None:
            raise GuestError("the guest is not running")
        if not (self.config.image.parent / gdb.SCRIPTS).exists():
            raise GuestError(
                f"the kernel has no gdb scripts ({self.config.image.parent / gdb.SCRIPTS}): "
                "build it with CONFIG_GDB_SCRIPTS=y and debug info"
            )
        # The sandbox execs UML in place: the process roadtest started is UML's kernel.
        return gdb.shell_line(gdb.command(self.config.image, self.proc.pid, module_dirs))

    def debugger_attached(self) -> bool:
        return self.proc is not None and gdb.tracer(self.proc.pid) != 0

    def start(self) -> None:
        self.workdir.mkdir(parents=True, exist_ok=True)
        self._remove_uml_dir()
        host_end, guest_end = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        console_r, console_w = os.pipe()
        started = time.monotonic()
        try:
            self.proc = subprocess.Popen(
                self.command(guest_end.fileno()),
                stdin=subprocess.DEVNULL,
                stdout=console_w,
                stderr=subprocess.STDOUT,
                pass_fds=(guest_end.fileno(), *self._terminal_fds()),
                start_new_session=True,
                preexec_fn=_die_with_parent,
                cwd=self.workdir,
            )
        finally:
            os.close(console_w)
            guest_end.close()
        self._host_end = host_end
        self.console = Console(console_r, self.console_log, self.kernel_log)
        self._agent = AgentClient(Channel(host_end.fileno()), timeout=self.config.call_timeout)
        try:
            ready = self._agent.wait_ready(self.config.boot_timeout)
        except ProtocolError as err:
            self.kill()
            lines = self.console.lines_since(0)
            why = [line for line in lines if "roadtest sandbox:" in line]
            # A kernel that panics at boot (a bad init=, say) says why; the channel does not.
            panic = next((m.group(0) for line in lines if (m := PANIC.search(line))), None)
            reason = why[-1].strip() if why else panic or str(err)
            raise GuestError(f"guest did not boot ({reason}); console: {self.console_log}") from err
        self.boot_seconds = time.monotonic() - started
        self.release = str(ready.get("release", ""))

    def _terminal_fds(self) -> tuple[int, ...]:
        return () if self.config.terminal is None else (self.config.terminal,)

    @property
    def alive(self) -> bool:
        """Running and answering: a guest whose agent timed out counts as dead (it hangs)."""
        return (
            self.proc is not None
            and self.proc.poll() is None
            and self._agent is not None
            and not self._agent.broken
        )

    def stop(self, timeout: float = 10.0) -> None:
        """Power the guest off; kill it if it does not go within `timeout`."""
        if self.proc is None:
            return
        if self.alive and self._agent is not None:  # (alive implies an agent; mypy can't see it)
            try:
                self._agent.call("poweroff", timeout=timeout)
            except (ProtocolError, OSError):
                pass
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                pass
        self.kill()

    def abort(self) -> None:
        """Stop the guest from another thread (a time limit): its processes are killed,
        the call in flight fails, and the owner cleans up (kill()) as for a crash."""
        proc = self.proc
        if proc is not None:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass

    def kill(self) -> None:
        """End the guest and every process in its session, now."""
        proc = self.proc
        if proc is None:
            return
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait()
        if self.console is not None:
            self.console.wait_closed(5.0)
        self._host_end.close()
        self._agent = None
        self.proc = None
        self._remove_uml_dir()

    def exit_status(self, wait: float) -> int | None:
        proc = self.proc
        if proc is None:
            return None
        try:
            status = proc.wait(wait)
        except subprocess.TimeoutExpired:
            return None
        if self.console is not None:
            self.console.wait_closed(wait)  # every line it printed is in
        return status

    def _remove_uml_dir(self) -> None:
        shutil.rmtree(self.workdir / self.umid, ignore_errors=True)


class UMLMachine(MachineType):
    name = "um"
    target = UM
    gdb = True

    def devicetree_root(self, virtio: Sequence[VirtioNode]) -> str:
        # virtio_uml: one "virtio,uml" platform node per device, holding its socket.
        transports = "".join(
            f"    virtio@{i} {{\n"
            f'        compatible = "virtio,uml";\n'
            f'        socket-path = "{node.socket}";\n'
            f"        virtio-device-id = <{node.device_id:#x}>;\n"
            f"{device_node(node, '        ')}"
            "    };\n"
            for i, node in enumerate(virtio)
        )
        # A root without a compatible makes of_have_populated_dt() false, and the regulator
        # core then refuses dummy supplies: drivers with an unnamed supply fail probe.
        return (
            "/ {\n"
            '    compatible = "roadtest,uml";\n'
            "    #address-cells = <2>;\n"
            "    #size-cells = <2>;\n"
            f"{transports}"
            "};\n"
        )

    def machine(self, config: BootConfig) -> UMLGuest:
        return UMLGuest(config)


UML = UMLMachine()
