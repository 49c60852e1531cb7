"""virtio-spi (device id 45): requests grouped into messages, each handed to the handler on
its chip select.

Written from the virtio specification's "SPI Controller Device" section (virtio 1.4 draft,
oasis-tcs/virtio-spec device-types/spi/description.tex). One queue, requestq. Config space:

    struct virtio_spi_config {
        u8 cs_max_number; u8 cs_change_supported; u8 tx_nbits_supported;
        u8 rx_nbits_supported; le32 bits_per_word_mask; le32 mode_func_supported;
        le32 max_freq_hz; le32 max_word_delay_ns; le32 max_cs_setup_ns;
        le32 max_cs_hold_ns; le32 max_cs_inactive_ns;
    };

A request is one SPI transfer, a descriptor chain: the transfer head (device-readable)

    struct virtio_spi_transfer_head {
        u8 chip_select_id; u8 bits_per_word; u8 cs_change; u8 tx_nbits; u8 rx_nbits;
        u8 reserved[3]; le32 mode; le32 freq; le32 word_delay_ns; le32 cs_setup_ns;
        le32 cs_delay_hold_ns; le32 cs_change_delay_inactive_ns;
    };

then tx_buf (device-readable, absent for a half-duplex read), rx_buf (device-writable,
absent for a half-duplex write) and the one-byte result (OK, PARAM_ERR, TRANS_ERR).

What this device decides where the specification leaves it open:

- Messages. The spec's `cs_change` says whether the chip select is released "before
  starting the next SPI transfer", and its config note speaks of a message as "a sequence
  of SPI transfers", but no field marks a message's end. So the requests of one kick are
  grouped: consecutive transfers to one chip select form a message, which ends after a
  transfer with cs_change = 1, at a transfer to another chip select, and at the last
  transfer of the kick (a driver queues a whole message and then kicks, as i2c-virtio
  does for a transfer; an idle bus has its chip selects released). The last transfer's
  cs_change therefore changes nothing, whichever way a driver reads it.
- A message longer than the queue. A driver whose message has more transfers than the
  ring has room for sends it in turns: it queues what fits, kicks, waits for the answers
  (the device must answer to free the ring), and queues the rest. What the device can
  know at a kick's end: how many ring descriptors the kick's requests held (`descs`: 1
  for an indirect table), and so whether the ring could have taken another request; the
  last transfer's cs_change. What it cannot know: whether a driver that filled the ring
  stopped for room or because its message ended there, nor, at the next kick, whether the
  first transfer continues the old message or starts a new one (no field says either).
  The choice: a kick that left the ring without room for another request (fewer free
  descriptors than the largest request takes: 1 if every chain of the kick was indirect,
  else 4, head, tx_buf, rx_buf and result) and ended in a transfer without cs_change
  keeps its last message open, the chip select held; the next kick's first transfer, if
  it is to the same chip select, continues it; anything else (another chip select, a
  malformed request, a transfer refused or failed, detaching the chip) releases it
  first. The cost is a message of exactly a full ring followed by another message to the
  same chip select: the chip sees the two as one (no release between them). Ending every
  message at a kick's end instead cuts every message longer than the ring in two, which
  a chip sees as two commands; the choice errs on the rarer case. A driver that adds
  requests before it takes the old ones' answers off the ring has fewer free descriptors
  than the device counts; the device then ends the message at the kick, as before.
  Handlers see a message in parts (`SPIMessage.continues`, `SPIMessage.held`); the model
  adapter selects a chip at a message's first part and releases it after its last.
- Checks. Each transfer is checked as the spec asks (PARAM_ERR: a head field out of
  range, a feature the config does not offer, TX and RX of different lengths) before
  its message runs, as a controller checks a message before it asserts the chip select
  (the Linux SPI core's __spi_validate does the same): one refused transfer refuses its
  whole message, the refused ones with PARAM_ERR and the others with TRANS_ERR (their
  parameters were valid, the transfer did not happen). The same holds for a transfer's
  length that is not a whole number of its words. `reserved` is not checked (the spec
  keeps it for extensions), nor is a freq of 0 refused (the spec bounds only its top).
- Nothing attached. SPI has no acknowledge: a controller cannot tell an empty chip
  select from a device that answers. The spec keeps TRANS_ERR for "the parameters are
  all valid but the transfer process failed", and clocking a transfer out to nobody
  does not fail, so it is TRANS_OK, and RX is what the idle MISO line reads: 0xff, a
  line pulled up (the value TI's SPI sensors document for their released SO pin).
- Word order. A word wider than 8 bits sits in the buffers as the guest's memory holds
  it (little-endian: UML and x86_64) in 2 bytes (9-16 bits) or 4 (17-32), as Linux's
  spi_transfer has it; a controller shifts each word out most significant bit first, so
  handlers get and give bytes in wire order (each word's bytes most significant first).

A `SPIHandler` attached on a chip select answers each message; a chip model answers
through one adapter, `roadtest.backend.spi_model.SPIModelHandler`. Whatever a handler
raises is caught (BaseExceptions too) and logged, its transfer and the rest of its
message get TRANS_ERR, and the backend's thread, which every later test needs, lives on.
"""

from __future__ import annotations

import logging
import struct
import threading
from collections.abc import Sequence
from typing import Any, Final

from roadtest.backend.device import VirtioDevice
from roadtest.backend.spi_model import SPIModelHandler
from roadtest.backend.spi_transfer import (
    SPIHandler,
    SPIMessage,
    SPIObserver,
    SPITransfer,
)
from roadtest.backend.virtqueue import Request, Virtqueue
from roadtest.models.base import SPIModel
from roadtest.text import count

# The results, the head's mode bits and the word size are the trace's too.
from roadtest.trace.spi import (
    MODE_BITS,
    VIRTIO_SPI_CPHA,
    VIRTIO_SPI_CPOL,
    VIRTIO_SPI_CS_HIGH,
    VIRTIO_SPI_MODE_LOOP,
    VIRTIO_SPI_MODE_LSB_FIRST,
    VIRTIO_SPI_PARAM_ERR,
    VIRTIO_SPI_TRANS_ERR,
    VIRTIO_SPI_TRANS_OK,
    word_bytes,
)

log = logging.getLogger("roadtest.backend.spi")

VIRTIO_ID_SPI: Final = 45

CONFIG: Final = struct.Struct("<BBBBIIIIIII")
HEAD: Final = struct.Struct("<BBBBB3xIIIIII")
HEAD_SIZE: Final = HEAD.size  # 32
# The most descriptors a request's chain takes without an indirect table: the head,
# tx_buf, rx_buf and the result (the spec's driver requirements, each buffer one
# descriptor as a driver lays them out).
MAX_REQUEST_DESCS: Final = 4


# mode_func_supported, in the config.
VIRTIO_SPI_MF_SUPPORT_CPHA_0: Final = 1 << 0
VIRTIO_SPI_MF_SUPPORT_CPHA_1: Final = 1 << 1
VIRTIO_SPI_MF_SUPPORT_CPOL_0: Final = 1 << 2
VIRTIO_SPI_MF_SUPPORT_CPOL_1: Final = 1 << 3
VIRTIO_SPI_MF_SUPPORT_CS_HIGH: Final = 1 << 4
VIRTIO_SPI_MF_SUPPORT_LSB_FIRST: Final = 1 << 5
VIRTIO_SPI_MF_SUPPORT_LOOPBACK: Final = 1 << 6
MODE_FUNC_ALL: Final = 0x7F

# tx_nbits_supported / rx_nbits_supported: SINGLE always; these bits for the others.
VIRTIO_SPI_RX_TX_SUPPORT_DUAL: Final = 1 << 0
VIRTIO_SPI_RX_TX_SUPPORT_QUAD: Final = 1 << 1
VIRTIO_SPI_RX_TX_SUPPORT_OCTAL: Final = 1 << 2
NBITS_ALL: Final = 0x7
# tx_nbits / rx_nbits in a head: 0 and 1 SINGLE; the others need their support bit.
_NBITS_NEEDS: Final = {
    0: 0,
    1: 0,
    2: VIRTIO_SPI_RX_TX_SUPPORT_DUAL,
    4: VIRTIO_SPI_RX_TX_SUPPORT_QUAD,
    8: VIRTIO_SPI_RX_TX_SUPPORT_OCTAL,
}

# What this controller offers unless told otherwise: 8 chip selects, every mode, lane
# count and word size, 50 MHz, delays up to 1 s. Models answer bytes; none of this costs.
DEFAULT_CS_MAX: Final = 8
DEFAULT_MAX_FREQ_HZ: Final = 50_000_000
DEFAULT_MAX_DELAY_NS: Final = 1_000_000_000
IDLE_MISO: Final = 0xFF  # what a chip select with nothing attached reads

_BYTES: Final = (bytes, bytearray)


def swap_words(data: bytes, size: int) -> bytes:
    """Reverse the byte order of each `size`-byte word (guest memory <-> wire order)."""
    if size == 1:
        return bytes(data)
    out = bytearray(data)
    for i in range(0, len(data) - size + 1, size):
        out[i : i + size] = data[i : i + size][::-1]
    return bytes(out)


def bus_time_ns(messages: Sequence[SPIMessage], max_freq_hz: int) -> int:
    """How long `messages` take on the wire: each transfer's words of `bits_per_word` bits
    at its `freq` (the controller's maximum when 0), its word delays, and the chip-select
    delays around each assertion (setup after, hold before the release, inactive after)."""
    total = 0
    for message in messages:
        last = len(message.transfers) - 1
        starting = not message.continues
        for i, t in enumerate(message.transfers):
            hz = t.freq or max_freq_hz or DEFAULT_MAX_FREQ_HZ
            words = t.length // word_bytes(t.bits_per_word) if t.bits_per_word else 0
            total += words * t.bits_per_word * 1_000_000_000 // hz
            total += max(words - 1, 0) * t.word_delay_ns
            if starting:
                total += t.cs_setup_ns
            starting = bool(t.cs_change) or (i == last and not message.held)
            if starting:
                total += t.cs_hold_ns + t.cs_inactive_ns
    return total


class _Target:
    __slots__ = ("handler", "observer", "attached")

    def __init__(
        self,
        handler: SPIHandler,
        observer: SPIObserver | None,
        attached: SPIModel | SPIHandler,
    ) -> None:
        self.handler = handler
        self.observer = observer
        self.attached = attached


class SPIBus:
    """The handlers on one bus, by chip select. Attach and detach from any thread."""

    def __init__(self, cs_max_number: int = DEFAULT_CS_MAX) -> None:
        self.cs_max_number = cs_max_number
        self.targets: dict[int, _Target] = {}
        self._lock = threading.Lock()
        # The chip select held after a message's part (None: all are released).
        self.held: int | None = None

    def attach(
        self, cs: int, target: SPIModel | SPIHandler, observer: SPIObserver | None = None
    ) -> None:
        """Put `target` on chip select `cs`: a chip model (behind the model adapter) or a
        handler, and `observer` to see its messages (the recorder)."""
        if not 0 <= cs < self.cs_max_number:
            raise ValueError(f"SPI chip select {cs} is not in 0-{self.cs_max_number - 1}")
        if isinstance(target, SPIModel):
            handler: SPIHandler = SPIModelHandler(target)
        else:
            handler = target
        with self._lock:
            other = self.targets.get(cs)
            if other is not None and other.attached is not target:
                raise ValueError(
                    f"SPI chip select {cs} already has {type(other.attached).__name__} attached"
                )
            self.targets[cs] = _Target(handler, observer, target)

    def detach(self, cs: int) -> SPIModel | SPIHandler | None:
        """Remove and return what was attached on `cs` (None if there was nothing), its
        chip select released first if a message held it."""
        if self.held == cs:
            self.release()
        with self._lock:
            target = self.targets.pop(cs, None)
        return None if target is None else target.attached

    def release(self) -> None:
        """Release the chip select a message's part held (see `SPIMessage.held`), telling
        its handler if it has a `release()`."""
        cs, self.held = self.held, None
        target = None if cs is None else self.targets.get(cs)
        if target is None:
            return
        release = getattr(target.handler, "release", None)
        if release is not None:
            try:
                release()
            except BaseException as exc:
                log.error("spi cs %d: %s.release() raised %r", cs, target.handler.name, exc)

    def get(self, cs: int) -> SPIModel | SPIHandler | None:
        target = self.targets.get(cs)
        return None if target is None else target.attached

    def clear(self) -> None:
        self.release()
        with self._lock:
            self.targets.clear()

    def serve(self, message: SPIMessage) -> None:
        """Have `message` answered by the handler on its chip select (0xff bytes when there
        is none); afterwards each transfer holds its result and RX. A held chip select
        other than a continued message's is released first; `message`'s is held after it
        when it says so and every transfer succeeded."""
        if self.held is not None and not (message.continues and self.held == message.cs):
            self.release()
        self.held = None
        target = self.targets.get(message.cs)
        if target is None:
            for t in message.transfers:
                t.rx = bytes([IDLE_MISO]) * t.length
                t.result = VIRTIO_SPI_TRANS_OK
            if message.held:
                self.held = message.cs
            return
        handler, observer = target.handler, target.observer
        if observer is not None:
            try:
                observer.begin(message)
            except BaseException as exc:
                message.fault("observer.begin()", exc)
        try:
            handler.message(message)
        except BaseException as exc:
            message.fault(f"{handler.name}.message()", exc)
        failed = False
        for t in message.transfers:
            if not failed and t.result == VIRTIO_SPI_TRANS_OK:
                if type(t.rx) in _BYTES and len(t.rx) == t.length:
                    continue
                message.fault(f"{handler.name}.transfer({t.length})", _bad_rx(t))
            failed = True
            t.result = VIRTIO_SPI_TRANS_ERR
            t.rx = b""
        if message.held:
            self.held = message.cs
            if failed:
                self.release()  # the driver fails the message and sends no more of it
        if observer is not None:
            try:
                observer.end(message)
            except BaseException as exc:
                message.fault("observer.end()", exc)


def _bad_rx(t: SPITransfer) -> Exception:
    if type(t.rx) not in _BYTES:
        return TypeError(f"transfer({t.length}) returned {type(t.rx).__name__}, not bytes")
    return ValueError(f"transfer({t.length}) returned {count(len(t.rx), 'byte')}")


class VirtioSpi(VirtioDevice):
    device_id = VIRTIO_ID_SPI
    name = "spi"
    num_queues = 1
    device_features = 0  # the spec defines none

    def __init__(
        self,
        bus: SPIBus | None = None,
        *,
        cs_max_number: int = DEFAULT_CS_MAX,
        cs_change_supported: bool = True,
        tx_nbits_supported: int = NBITS_ALL,
        rx_nbits_supported: int = NBITS_ALL,
        bits_per_word_mask: int = 0,
        mode_func_supported: int = MODE_FUNC_ALL,
        max_freq_hz: int = DEFAULT_MAX_FREQ_HZ,
        max_word_delay_ns: int = DEFAULT_MAX_DELAY_NS,
        max_cs_setup_ns: int = DEFAULT_MAX_DELAY_NS,
        max_cs_hold_ns: int = DEFAULT_MAX_DELAY_NS,
        max_cs_inactive_ns: int = DEFAULT_MAX_DELAY_NS,
    ) -> None:
        super().__init__()
        if not 1 <= cs_max_number <= 0xFF:
            raise ValueError(f"cs_max_number {cs_max_number} does not fit the config's u8")
        self.bus = bus if bus is not None else SPIBus(cs_max_number)
        self.bus.cs_max_number = cs_max_number
        self.cs_max_number = cs_max_number
        self.cs_change_supported = cs_change_supported
        self.tx_nbits_supported = tx_nbits_supported
        self.rx_nbits_supported = rx_nbits_supported
        self.bits_per_word_mask = bits_per_word_mask
        self.mode_func_supported = mode_func_supported
        self.max_freq_hz = max_freq_hz
        self.max_word_delay_ns = max_word_delay_ns
        self.max_cs_setup_ns = max_cs_setup_ns
        self.max_cs_hold_ns = max_cs_hold_ns
        self.max_cs_inactive_ns = max_cs_inactive_ns
        self.transfers = 0  # requests handled, for tests and benchmarks
        # Test fragments are its children: reg = <chip select>, no size.
        self.dt_properties = "#address-cells = <1>;\n#size-cells = <0>;"

    def attach(
        self, cs: int, target: SPIModel | SPIHandler, observer: SPIObserver | None = None
    ) -> None:
        self.bus.attach(cs, target, observer)

    def detach(self, cs: int) -> SPIModel | SPIHandler | None:
        return self.bus.detach(cs)

    def get_config(self) -> bytes:
        return CONFIG.pack(
            self.cs_max_number,
            int(self.cs_change_supported),
            self.tx_nbits_supported,
            self.rx_nbits_supported,
            self.bits_per_word_mask,
            self.mode_func_supported,
            self.max_freq_hz,
            self.max_word_delay_ns,
            self.max_cs_setup_ns,
            self.max_cs_hold_ns,
            self.max_cs_inactive_ns,
        )

    # Checks

    def refusal(self, t: SPITransfer, tx_len: int, rx_len: int) -> str | None:
        """Why the controller refuses `t` with PARAM_ERR (None: it takes it)."""
        if t.cs >= self.cs_max_number:
            return f"chip select {t.cs} is not below cs_max_number {self.cs_max_number}"
        bpw = t.bits_per_word
        if not 1 <= bpw <= 32:
            return f"bits_per_word {bpw} is not 1-32"
        if self.bits_per_word_mask and not self.bits_per_word_mask >> (bpw - 1) & 1:
            return f"bits_per_word {bpw} is not in bits_per_word_mask {self.bits_per_word_mask:#x}"
        if t.cs_change > 1:
            return f"cs_change {t.cs_change} is neither 0 nor 1"
        if t.cs_change and not self.cs_change_supported:
            return "cs_change is set, and cs_change_supported is 0"
        for what, nbits, supported in (
            ("tx_nbits", t.tx_nbits, self.tx_nbits_supported),
            ("rx_nbits", t.rx_nbits, self.rx_nbits_supported),
        ):
            needs = _NBITS_NEEDS.get(nbits)
            if needs is None:
                return f"{what} {nbits} is not 0, 1, 2, 4 or 8"
            if needs & ~supported:
                return f"{what} {nbits} is not offered ({what}_supported {supported:#x})"
        mode = t.mode
        if mode & ~MODE_BITS:
            return f"mode {mode:#x} sets reserved bits"
        mf = self.mode_func_supported
        for bit, off, on, name in (
            (VIRTIO_SPI_CPHA, VIRTIO_SPI_MF_SUPPORT_CPHA_0, VIRTIO_SPI_MF_SUPPORT_CPHA_1, "CPHA"),
            (VIRTIO_SPI_CPOL, VIRTIO_SPI_MF_SUPPORT_CPOL_0, VIRTIO_SPI_MF_SUPPORT_CPOL_1, "CPOL"),
        ):
            value = 1 if mode & bit else 0
            if not mf & (on if value else off):
                return f"{name}={value} is not offered (mode_func_supported {mf:#x})"
        for bit, support, name in (
            (VIRTIO_SPI_CS_HIGH, VIRTIO_SPI_MF_SUPPORT_CS_HIGH, "CS_HIGH"),
            (VIRTIO_SPI_MODE_LSB_FIRST, VIRTIO_SPI_MF_SUPPORT_LSB_FIRST, "LSB_FIRST"),
            (VIRTIO_SPI_MODE_LOOP, VIRTIO_SPI_MF_SUPPORT_LOOPBACK, "LOOP"),
        ):
            if mode & bit and not mf & support:
                return f"{name} is not offered (mode_func_supported {mf:#x})"
        if self.max_freq_hz and t.freq > self.max_freq_hz:
            return f"freq {t.freq} Hz is above max_freq_hz {self.max_freq_hz}"
        for what, value, limit, field in (
            ("word_delay_ns", t.word_delay_ns, self.max_word_delay_ns, "max_word_delay_ns"),
            ("cs_setup_ns", t.cs_setup_ns, self.max_cs_setup_ns, "max_cs_setup_ns"),
            ("cs_delay_hold_ns", t.cs_hold_ns, self.max_cs_hold_ns, "max_cs_hold_ns"),
            (
                "cs_change_delay_inactive_ns",
                t.cs_inactive_ns,
                self.max_cs_inactive_ns,
                "max_cs_inactive_ns",
            ),
        ):
            if value > limit:
                return f"{what} {value} is above {field} {limit}"
        if tx_len and rx_len and tx_len != rx_len:
            return f"tx_buf has {count(tx_len, 'byte')} and rx_buf {rx_len}"
        if t.length % word_bytes(bpw):
            return (
                f"{count(t.length, 'byte')} are not a whole number of "
                f"{word_bytes(bpw)}-byte words ({bpw} bits per word)"
            )
        return None

    # The queue

    def queue_kicked(self, vq: Virtqueue) -> None:
        # A message is the transfers of one kick to one chip select up to one with
        # cs_change; one that fills the ring stays open into the next kick (see the
        # module's docstring).
        message: list[tuple[Request, SPITransfer, str | None]] = []
        done: list[SPIMessage] = []
        continues = True  # the kick's first message may continue one a full ring held
        descs = 0
        indirect = True
        while (req := vq.pop()) is not None:
            self.transfers += 1
            descs += req.descs
            indirect = indirect and req.descs == 1
            parsed = self._parse(vq, req)
            if parsed is None:
                if message:
                    done.append(self._run(vq, message, continues))
                    message = []
                continues = False
                self.bus.release()
                continue
            t, why = parsed
            if message and message[-1][1].cs != t.cs:
                done.append(self._run(vq, message, continues))
                message = []
                continues = False
            message.append((req, t, why))
            if t.cs_change:
                done.append(self._run(vq, message, continues))
                message = []
                continues = False
        if message:
            # No room for another request: the driver may have more of this message.
            full = vq.num - descs < (1 if indirect else MAX_REQUEST_DESCS)
            done.append(self._run(vq, message, continues, held=full))
        timed = vq.signal is not None and done
        vq.notify(after=bus_time_ns(done, self.max_freq_hz) if timed else 0)

    def _parse(self, vq: Virtqueue, req: Request) -> tuple[SPITransfer, str | None] | None:
        """The transfer a request asks for, and why it is refused (None: it is not); None
        for a chain too malformed to be a transfer, answered here."""
        out = req.out
        in_len = req.in_len
        if len(out) < HEAD_SIZE or in_len < 1:
            self.record_error(
                "device",
                "spi request",
                ValueError(
                    f"malformed request: {count(len(out), 'readable byte')} (the transfer head "
                    f"is {HEAD_SIZE}) and {count(in_len, 'writable byte')} (the result needs 1)"
                ),
            )
            if in_len:
                req.write_last(VIRTIO_SPI_PARAM_ERR)
            vq.push(req, in_len, notify=False)
            return None
        cs, bpw, cs_change, tx_nbits, rx_nbits, mode, freq, wd, setup, hold, inactive = (
            HEAD.unpack_from(out)
        )
        tx_len = len(out) - HEAD_SIZE
        rx_len = in_len - 1
        t = SPITransfer(
            cs,
            bpw,
            cs_change,
            tx_nbits,
            rx_nbits,
            mode,
            freq,
            wd,
            setup,
            hold,
            inactive,
            None,
            rx_len > 0,
            max(tx_len, rx_len),
        )
        why = self.refusal(t, tx_len, rx_len)
        if why is None and tx_len:
            t.tx = swap_words(out[HEAD_SIZE:], word_bytes(bpw))
        return t, why

    def _run(
        self,
        vq: Virtqueue,
        items: list[tuple[Request, SPITransfer, str | None]],
        continues: bool = False,
        held: bool = False,
    ) -> SPIMessage:
        """Check, serve and answer one message (or a part of one: `continues` the part a
        full ring held open, if on the same chip select; `held` open after it)."""
        cs = items[0][1].cs
        message = SPIMessage(cs, [t for _, t, _ in items], continues and self.bus.held == cs, held)
        refused = [(t, why) for _, t, why in items if why is not None]
        if refused or any(t.mode & VIRTIO_SPI_MODE_LOOP for t in message.transfers):
            # Not served by the chip: a chip select a message held is released.
            self.bus.release()
        if refused:
            for t, why in refused:
                self.record_error("device", f"spi cs {t.cs} transfer", ValueError(why))
                t.result = VIRTIO_SPI_PARAM_ERR
            for t in message.transfers:
                if t.result != VIRTIO_SPI_PARAM_ERR:
                    t.result = VIRTIO_SPI_TRANS_ERR
        elif any(t.mode & VIRTIO_SPI_MODE_LOOP for t in message.transfers):
            # Loopback: the controller reads back what it sends; no device takes part.
            for t in message.transfers:
                t.rx = t.tx if t.tx is not None else bytes(t.length)
                t.result = VIRTIO_SPI_TRANS_OK
        else:
            self.bus.serve(message)
            if message.faults is not None:
                for where, exc in message.faults:
                    self.record_error("model", f"spi cs {message.cs} {where}", exc)
        debug = log.isEnabledFor(logging.DEBUG)
        for req, t, _ in items:
            if debug:
                log.debug("spi %r", t)
            if t.result == VIRTIO_SPI_TRANS_OK and t.rx_wanted:
                req.write(swap_words(t.rx, word_bytes(t.bits_per_word)))
                req.write_last(VIRTIO_SPI_TRANS_OK)
                vq.push(req, req.in_len, notify=False)
            else:
                # Only the result is written (rx_buf is the driver's to ignore).
                req.write_last(t.result)
                vq.push(req, 1, notify=False)
        return message


def spi_xfers(transfers: Sequence[SPITransfer], answered: bool = True) -> list[dict[str, Any]]:
    """The transfers of a message as an `spi` event holds them (SCHEMA.md): each head's
    fields, its TX, and, when `answered`, the RX and result that went back to the driver
    (else an RX of b"" and OK: the question alone, as replay compares it)."""
    return [
        {
            "bits_per_word": t.bits_per_word,
            "cs_change": t.cs_change,
            "tx_nbits": t.tx_nbits,
            "rx_nbits": t.rx_nbits,
            "mode": t.mode,
            "freq": t.freq,
            "word_delay_ns": t.word_delay_ns,
            "cs_setup_ns": t.cs_setup_ns,
            "cs_delay_hold_ns": t.cs_hold_ns,
            "cs_change_delay_inactive_ns": t.cs_inactive_ns,
            "len": t.length,
            "tx": None if t.tx is None else bytes(t.tx),
            "rx": (bytes(t.rx) if answered else b"") if t.rx_wanted else None,
            "result": t.result if answered else VIRTIO_SPI_TRANS_OK,
        }
        for t in transfers
    ]
