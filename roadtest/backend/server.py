"""The backend: one listening socket per device, served by one thread.

    backend = Backend(workdir)              # sockets workdir/<name>.sock: gpio.sock, i2c.sock
    backend.i2c.attach(0x48, model)         # models by 7-bit address
    line = backend.gpio.line(3)             # a GPIO line models drive: line.set(True)
    with backend:                           # start() ... stop()
        ...boot a guest whose devicetree points at backend.socket(name) for each device...
    backend.errors                          # what models raised (BackendError), in order

It serves one device of each type in registry.py (a test may pass its own
instances in their place). The thread runs an epoll loop over the
listening sockets, the connected frontends, their kick fds and a wake-up
pipe. A frontend that disconnects (guest poweroff or crash) leaves the device
in its power-on state, and the next guest connects to the same socket.

The backend chooses time for its connections here, and only here: a
`Scheduler` (roadtest.simtime.notify), the host's clock by default. Under
simulated time (`simulated_time=True`) the same loop runs the guest's calendar
(roadtest.simtime.controller, on `time.sock`), the devices notify the guest
in-band on it, and a virtio console carries the agent's channel (`console`), so
that its input reaches the guest at a defined instant too.
"""

from __future__ import annotations

import logging
import os
import select
import socket
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from types import TracebackType
from typing import TypeVar

from roadtest.backend import registry
from roadtest.backend.console import VirtioConsole
from roadtest.backend.device import BackendError, VirtioDevice
from roadtest.backend.gpio import VirtioGpio
from roadtest.backend.i2c import VirtioI2C
from roadtest.backend.vhost_user import VhostUserConnection
from roadtest.simtime.controller import Controller
from roadtest.simtime.notify import RealTime, Scheduler, SimulatedTime
from roadtest.sockets import listen_unix

log = logging.getLogger("roadtest.backend.server")

# sun_path is 108 bytes, NUL included.
MAX_SOCKET_PATH = 107


D = TypeVar("D", bound=VirtioDevice)


# What a backend under simulated time listens on besides its devices' sockets.
SIMULATED_TIME_SOCKETS = (VirtioConsole.name, "time")


def socket_paths(workdir: Path) -> dict[str, Path]:
    """The backend's listening sockets in `workdir`, by device name (and "time")."""
    base = Path(workdir).absolute()
    names = [*(t.name for t in registry.device_types()), *SIMULATED_TIME_SOCKETS]
    return {name: base / f"{name}.sock" for name in names}


class BackendStartError(Exception):
    pass


class EventLoop:
    """An epoll loop on its own thread; callbacks run on that thread. (Plain epoll, not
    `selectors`: under simulated time every turn of the guest's clock is a round of this
    loop, and the wrapper's bookkeeping cost more than the system call.)"""

    def __init__(self) -> None:
        self._epoll = select.epoll()
        self._readers: dict[int, Callable[[], None]] = {}
        self._wake_r, self._wake_w = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
        self.add_reader(self._wake_r, self._woken)
        self._stopping = False
        self._pending: list[Callable[[], None]] = []
        self._pending_lock = threading.Lock()
        self._thread_id: int | None = None

    def on_loop_thread(self) -> bool:
        return threading.get_ident() == self._thread_id

    def add_reader(self, fd: int, callback: Callable[[], None]) -> None:
        if fd in self._readers:
            raise KeyError(f"fd {fd} is already registered")
        self._epoll.register(fd, select.EPOLLIN)
        self._readers[fd] = callback

    def remove_reader(self, fd: int) -> None:
        if self._readers.pop(fd, None) is not None:
            try:
                self._epoll.unregister(fd)
            except (OSError, ValueError):
                pass  # already closed: the kernel dropped it

    def call_soon(self, callback: Callable[[], None]) -> None:
        """Run `callback` on the loop's thread (callable from any thread)."""
        with self._pending_lock:
            self._pending.append(callback)
        self.wake()

    def wake(self) -> None:
        try:
            os.write(self._wake_w, b"x")
        except BlockingIOError:
            pass

    def stop(self) -> None:
        self._stopping = True
        self.wake()

    def _woken(self) -> None:
        try:
            os.read(self._wake_r, 4096)
        except BlockingIOError:
            pass
        with self._pending_lock:
            pending, self._pending = self._pending, []
        for callback in pending:
            callback()

    def run(self) -> None:
        self._thread_id = threading.get_ident()
        poll = self._epoll.poll
        readers = self._readers
        while not self._stopping:
            events = poll()
            callbacks = [readers.get(fd) for fd, _ in events]
            for (fd, _), callback in zip(events, callbacks, strict=True):
                if callback is None or (len(events) > 1 and readers.get(fd) is not callback):
                    # Unregistered (its fd maybe reused) by an earlier callback of this round.
                    continue
                try:
                    callback()
                except BaseException:  # even SystemExit from a model: every later test needs us
                    log.exception("backend event handler failed")
                if self._stopping:
                    break

    def close(self) -> None:
        self._epoll.close()
        os.close(self._wake_r)
        os.close(self._wake_w)


class DeviceServer:
    """A device's listening socket and its (at most one) frontend connection."""

    def __init__(
        self,
        device: VirtioDevice,
        path: Path,
        loop: EventLoop,
        scheduler: Scheduler | None = None,
    ) -> None:
        self.device = device
        self.path = path
        self.loop = loop
        self.scheduler: Scheduler = RealTime() if scheduler is None else scheduler
        self.listener: socket.socket | None = None
        self.connection: VhostUserConnection | None = None

    def listen(self) -> None:
        if len(os.fsencode(self.path)) > MAX_SOCKET_PATH:
            raise BackendStartError(
                f"socket path {self.path} is longer than {MAX_SOCKET_PATH} bytes: "
                "use a shorter work directory"
            )
        try:
            sock = listen_unix(self.path, 4)
        except OSError as err:
            raise BackendStartError(f"cannot listen on {self.path}: {err}") from err
        self.listener = sock
        self.loop.add_reader(sock.fileno(), self._accept)

    def _accept(self) -> None:
        assert self.listener is not None
        try:
            sock, _ = self.listener.accept()
        except BlockingIOError:
            return
        if self.connection is not None:
            log.warning(
                "%s: a new frontend connected while one was connected; dropping the old one",
                self.device.name,
            )
            self._drop()
        log.info("%s: frontend connected", self.device.name)
        sock.setblocking(True)
        conn = VhostUserConnection(sock, self.device, self.loop, self.device.name, self.scheduler)
        self.connection = conn
        self.loop.add_reader(sock.fileno(), lambda: self._readable(conn))

    def _readable(self, conn: VhostUserConnection) -> None:
        if conn is not self.connection:
            return
        if not conn.on_readable():
            self._drop()

    def _drop(self) -> None:
        conn = self.connection
        if conn is None:
            return
        self.connection = None
        self.loop.remove_reader(conn.sock.fileno())
        conn.close()

    def close(self) -> None:
        self._drop()
        if self.listener is not None:
            self.loop.remove_reader(self.listener.fileno())
            self.listener.close()
            self.listener = None
            try:
                self.path.unlink()
            except FileNotFoundError:
                pass


class Backend:
    """The vhost-user backend of one guest: one device of each registered type.

    `devices` replaces the registered types' default instances by name (a test's
    VirtioGpio with 16 named lines, say)."""

    def __init__(
        self,
        workdir: Path,
        *,
        devices: Sequence[VirtioDevice] = (),
        on_error: Callable[[BackendError], None] | None = None,
        simulated_time: bool = False,
    ) -> None:
        self.workdir = Path(workdir)
        given = {d.name: d for d in devices}
        #: by name, in devicetree order
        self.devices: dict[str, VirtioDevice] = {
            t.name: given.pop(t.name) if t.name in given else t() for t in registry.device_types()
        }
        if given:
            raise ValueError(f"no registered virtio device type for {sorted(given)}")
        #: the guest's calendar, under simulated time
        self.controller: Controller | None = None
        #: what the connections ask of time
        self.scheduler: Scheduler = RealTime()
        self.console: VirtioConsole | None = None
        if simulated_time:
            self.controller = Controller(self.socket("time"))
            self.scheduler = SimulatedTime(self.controller)
            self.console = VirtioConsole(self.controller)
            self.devices[self.console.name] = self.console
        self.errors: list[BackendError] = []
        self.on_error = on_error
        self._errors_lock = threading.Lock()
        for device in self.devices.values():
            device.report = self._record
        self._loop: EventLoop | None = None
        self._thread: threading.Thread | None = None
        self._servers: dict[str, DeviceServer] = {}

    def device(self, device_type: type[D]) -> D:
        """The backend's device of that type."""
        device = self.devices[device_type.name]
        assert isinstance(device, device_type)
        return device

    def socket(self, name: str) -> Path:
        """The listening socket of device `name`."""
        return socket_paths(self.workdir)[name]

    # The two devices every test uses, by name.
    @property
    def i2c(self) -> VirtioI2C:
        return self.device(VirtioI2C)

    @property
    def gpio(self) -> VirtioGpio:
        return self.device(VirtioGpio)

    @property
    def i2c_socket(self) -> Path:
        return self.socket(VirtioI2C.name)

    @property
    def gpio_socket(self) -> Path:
        return self.socket(VirtioGpio.name)

    def _record(self, error: BackendError) -> None:
        with self._errors_lock:
            self.errors.append(error)
        if self.on_error is not None:
            self.on_error(error)

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def start(self) -> None:
        if self._thread is not None:
            raise BackendStartError("the backend is already running")
        self.workdir.mkdir(parents=True, exist_ok=True)
        loop = EventLoop()
        servers = {
            name: DeviceServer(device, self.socket(name), loop, self.scheduler)
            for name, device in self.devices.items()
        }
        try:
            for server in servers.values():
                server.listen()
            self.scheduler.listen(loop)
        except BaseException:
            for server in servers.values():
                server.close()
            loop.close()
            raise
        self._loop = loop
        self._servers = servers
        self._thread = threading.Thread(target=self._run, name="roadtest-backend", daemon=True)
        self._thread.start()
        log.debug("backend listening on %s", ", ".join(str(s.path) for s in servers.values()))

    def _run(self) -> None:
        assert self._loop is not None
        try:
            self._loop.run()
        finally:
            for server in self._servers.values():
                try:
                    server.close()
                except Exception:
                    log.exception("closing %s", server.device.name)
            self.scheduler.close()
            if self.console is not None:
                self.console.close()

    def stop(self, timeout: float = 5.0) -> None:
        """Stop the thread, drop connections, close every fd and remove the socket files."""
        thread, loop = self._thread, self._loop
        if thread is None or loop is None:
            return
        loop.stop()
        thread.join(timeout)
        if thread.is_alive():
            log.error("backend thread did not stop within %.1f s", timeout)
            return
        loop.close()
        self._thread = None
        self._loop = None
        self._servers = {}

    def call_soon(self, callback: Callable[[], None]) -> None:
        """Run `callback` on the backend thread."""
        if self._loop is None:
            raise BackendStartError("the backend is not running")
        self._loop.call_soon(callback)

    def __enter__(self) -> Backend:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()
