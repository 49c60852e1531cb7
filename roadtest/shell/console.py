"""The host's side of `roadtest shell`: a Python prompt holding the models, and the guest's
shell on the same terminal.

The prompt is `code.InteractiveConsole` with each bound I2C device's model
under its declaration's name in lower case (`sensor` for SENSOR), `devices`
(name -> its BoundDevice: sysfs path, GPIO lines, bind/unbind), `guest` (the
session), `shell()` (the guest's shell on this terminal until Ctrl-]) and
`sh(cmd)` (one guest command, its output printed).
"""

from __future__ import annotations

import code
import os
import signal
import struct
import sys
import termios
from collections.abc import Sequence

from roadtest import signals
from roadtest.errors import RoadtestError
from roadtest.guest.protocol import ProtocolError
from roadtest.pytest_plugin import verdicts
from roadtest.shell.terminal import ESCAPE_NAME, Terminal, bridge, hung_up, raw_mode
from roadtest.testing.devices import Device, I2CDevice
from roadtest.testing.session import Bound, BoundDevice, RoadtestSession

PROMPT_PS1 = r"guest \W# "  # not the host's prompt: the two take turns on one terminal


def python_names(devices: Sequence[Device]) -> list[str]:
    """Each device's name at the prompt: its declaration's variable, in lower case, prefixed
    with its module's name where two modules use the same."""
    plain = [d.origin.rsplit(".", 1)[-1].lower() for d in devices]
    return [
        name if plain.count(name) == 1 else d.origin.replace(".", "_").lower()
        for name, d in zip(plain, devices, strict=True)
    ]


def bind_all(session: RoadtestSession, devices: Sequence[Device]) -> list[Bound]:
    """Attach and bind each device in order (suppliers are declared first); one whose driver
    does not bind stays attached, with a warning: its model still answers."""
    bound: list[Bound] = []
    for device in devices:
        dev = session.attach(device) if isinstance(device, I2CDevice) else session.attach(device)
        bound.append(dev)
        try:
            dev.bind()
        except RoadtestError as err:
            print(f"roadtest shell: warning: {dev.name} not bound: {err}", file=sys.stderr)
        except (OSError, ProtocolError) as err:  # the probe crashed the guest, say
            guest = session.machine
            death = verdicts.guest_death(guest, 0) if guest is not None else None
            print(f"roadtest shell: binding {dev.name} failed: {death or err}", file=sys.stderr)
            if death is not None:
                break  # attaching more would boot a new guest behind the user's back
    return bound


class GuestConsole:
    """The prompt, and the guest's shell it switches to."""

    def __init__(
        self,
        session: RoadtestSession,
        terminal: Terminal,
        bound: Sequence[Bound],
        keys: int = 0,
        screen: int = 1,
    ) -> None:
        self.session = session
        self.terminal = terminal
        self.devices = dict(zip(python_names([b.device for b in bound]), bound, strict=True))
        self.keys, self.screen = keys, screen
        self.shell_pid: int | None = None
        self._faults_seen = len(session.backend.errors)

    def namespace(self) -> dict[str, object]:
        names: dict[str, object] = {
            "guest": self.session,
            "devices": dict(self.devices),
            "shell": self.shell,
            "sh": self.sh,
            "restart": self.restart,
            "exit": _leave,
            "quit": _leave,
        }
        for name, dev in self.devices.items():
            if isinstance(dev, BoundDevice):
                names[name] = dev.model
        return names

    def banner(self) -> str:
        guest = self.session.machine
        lines = [
            f"roadtest shell: a {guest.name if guest else 'guest'} guest, kernel "
            f"{guest.release if guest else '?'}; its console log is "
            f"{guest.console_log if guest else '?'}"
        ]
        width = max((len(name) for name in self.devices), default=0)
        for name, dev in self.devices.items():
            state = "driver bound" if dev.bound else "NOT bound: see the console log"
            model = (
                f"{type(dev.model).__name__} model at {dev.addr:#04x}, "
                if isinstance(dev, BoundDevice)
                else ""
            )
            lines.append(f"  {name:<{width}} {dev.device.compatible}: {model}{dev.path} ({state})")
        lines += [
            "Python: each model by its name above, devices[name] (sysfs path, lines, "
            "bind/unbind), guest (the session)",
            f"  shell()      the guest's shell here ($NAME is a device's sysfs directory); "
            f"{ESCAPE_NAME} comes back",
            '  sh("cmd")    run one command in the guest and print its output',
            "  restart()    a new guest, the devices bound again (after a crash)",
            "  exit() or Ctrl-D  power the guest off and leave",
        ]
        return "\n".join(lines)

    # The guest's shell
    def _why_unusable(self) -> str:
        """Why the guest cannot be used ("" if it can)."""
        guest = self.session.machine
        death = "the guest is not running" if guest is None else verdicts.guest_death(guest, 0)
        if death is None:
            return ""
        return f"{death}\nrestart() boots a new guest and binds the devices again"

    def restart(self) -> None:
        """A new guest (the last one died, or you want a clean one) with the devices bound
        again; the models stay as they are."""
        self.session.boot()
        self.shell_pid = None
        self.terminal.last_line.clear()
        for dev in self.devices.values():
            dev.bound = False
            try:
                dev.bind()
            except RoadtestError as err:
                print(f"roadtest shell: warning: {dev.name} not bound: {err}")
        print("a new guest is running")

    def _start_shell(self) -> int:
        guest = self.session.ensure_guest()
        agent = guest.agent
        argv = ["/bin/bash", "--norc", "--noprofile", "-i"]
        if not agent.exists(argv[0]):
            argv = ["/bin/sh", "-i"]
        first = next(iter(self.devices.values()), None)
        cwd = str(first.path) if first is not None and agent.exists(str(first.path)) else "/"
        env = {**self._environment(), "TERM": os.environ.get("TERM", "linux"), "PS1": PROMPT_PS1}
        return agent.spawn(argv, guest.terminal_tty, cwd, env)

    def _environment(self) -> dict[str, str]:
        """The guest commands' environment: $NAME is each device's sysfs directory."""
        work = self.session.ensure_guest().workdir
        return {
            "PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
            "HOME": str(work),
            "TMPDIR": f"{work}/tmp",
            **{name.upper(): str(dev.path) for name, dev in self.devices.items()},
        }

    def _set_size(self) -> None:
        """The guest's terminal gets the user's terminal's size (its programs then wrap
        where this terminal does)."""
        try:
            columns, rows = os.get_terminal_size(self.keys)
        except OSError:
            return  # not a terminal
        guest = self.session.ensure_guest()
        agent = guest.agent
        fd = agent.open(guest.terminal_tty, os.O_RDWR | os.O_NOCTTY)
        try:
            agent.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows, columns, 0, 0))
        finally:
            agent.close(fd)

    def _shell_gone(self) -> str:
        why = self._why_unusable()
        if why:
            return why
        if self.shell_pid is not None and self.session.agent.reap(self.shell_pid) is not None:
            self.shell_pid = None
            return "the guest's shell exited; shell() starts a new one"
        return ""

    def shell(self) -> None:
        """The guest's shell on this terminal, until you type Ctrl-] (or it exits)."""
        why = self._why_unusable()
        if why:
            print(why)
            return
        try:
            if self.shell_pid is None:
                self.shell_pid = self._start_shell()
            self._set_size()
        except (OSError, ProtocolError) as err:
            print(f"roadtest shell: cannot start the guest's shell: {err}")
            return
        print(f"[the guest's shell: {ESCAPE_NAME} comes back to Python]", flush=True)
        with raw_mode(self.keys):
            why = bridge(self.keys, self.screen, self.terminal, self._shell_gone)
        print(f"\n[{why}]" if why else "\n[back in Python]")
        self._report_faults()

    def sh(self, command: str, timeout: float = 60.0) -> None:
        """Run `command` with the guest's /bin/sh, print what it printed and a non-zero status."""
        why = self._why_unusable()
        if why:
            print(why)
            return
        variables = [f"{name}={value}" for name, value in self._environment().items()]
        argv = ["/usr/bin/env", "-i", *variables, "/bin/sh", "-c", command]
        try:
            rc, out, err = self.session.agent.run(argv, timeout=timeout)
        except ProtocolError as lost:  # the guest died or hung under the command
            print(self._why_unusable() or f"the guest did not answer: {lost}")
            return
        sys.stdout.write(out.decode(errors="replace"))
        sys.stderr.write(err.decode(errors="replace"))
        if rc:
            print(f"[exit status {rc}]")
        self._report_faults()

    def _report_faults(self) -> None:
        """What the models raised while serving the driver since the last look."""
        errors = self.session.backend.errors[self._faults_seen :]
        self._faults_seen += len(errors)
        for error in errors:
            print(f"roadtest shell: a model raised: {error}")

    # The prompt
    def interact(self) -> int:
        """The prompt until Ctrl-D or exit(); the exit status. SIGTERM and SIGHUP end it too
        (signals.interactive), and are remembered for the command's status."""
        namespace = self.namespace()
        console = code.InteractiveConsole(namespace, filename="<roadtest shell>")
        try:
            import readline
            import rlcompleter

            readline.set_completer(rlcompleter.Completer(namespace).complete)
            readline.parse_and_bind("tab: complete")
        except ImportError:
            pass
        with signals.interactive():
            try:
                console.interact(banner=self.banner(), exitmsg="powering the guest off")
            except signals.Ended:
                if signals.received() == signal.SIGHUP:
                    hung_up()
                return signals.exit_status()
            except SystemExit as leave:
                code_ = leave.code
                return code_ if isinstance(code_, int) else (0 if code_ is None else 1)
        return 0


def _leave(status: int | None = None) -> None:
    """Power the guest off and leave (as Ctrl-D)."""
    raise SystemExit(status)
