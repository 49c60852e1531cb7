"""A base for chips driven by commands (opcodes) instead of registers, and CRC helpers.

Such a chip takes a write as an opcode of `opcode_bytes` bytes (most significant first)
and the command's arguments after it; a read returns what the last command left to be
read (a measurement, a status word), and is NACKed when it left nothing. The model says
what each opcode does in `command()`, and names its opcodes in `opcode_names` so that
errors and `commands` read as the datasheet's names.
"""

from __future__ import annotations

from collections.abc import Mapping

from roadtest.models.base import I2CModel, ModelError


def crc8(data: bytes, polynomial: int, init: int, final_xor: int = 0) -> int:
    """The CRC-8 of `data`, MSB first, not reflected (the form sensor datasheets give)."""
    crc = init
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = ((crc << 1) ^ polynomial) & 0xFF if crc & 0x80 else (crc << 1) & 0xFF
    return crc ^ final_xor


class CommandI2CModel(I2CModel):
    """An I2C chip with commands: `command(opcode, args)` per write, `answer` per read.

    A command that leaves something to read calls `self.respond(data)`; a read takes
    bytes from the start of it (the master may stop early, as on a wire) and ends it. A
    read with nothing to read, a write shorter than an opcode, or an opcode `command`
    does not know (ModelError) are NACKed; a read longer than the answer gets `idle`
    bytes after it (SDA released: 0xFF).
    """

    opcode_bytes: int = 2
    opcode_names: Mapping[int, str] = {}
    idle: int = 0xFF

    def __init__(self) -> None:
        self.commands: list[tuple[int, bytes]] = []  # every command accepted, in order
        self._answer: bytes | None = None

    def opcode_name(self, opcode: int) -> str:
        hexa = f"0x{opcode:0{2 * self.opcode_bytes}X}"
        name = self.opcode_names.get(opcode)
        return f"{name} ({hexa})" if name else hexa

    def command(self, opcode: int, args: bytes) -> None:
        raise ModelError(f"{type(self).__name__}: unknown command {self.opcode_name(opcode)}")

    def respond(self, data: bytes | None) -> None:
        """What the next read returns (None: nothing, it is NACKed)."""
        self._answer = data

    def pending(self) -> bytes | None:
        """What a read would return now; a model may compute it when it is read."""
        return self._answer

    def write(self, data: bytes) -> None:
        if not data:
            return  # an address probe: the chip acknowledges its address
        if len(data) < self.opcode_bytes:
            raise ModelError(f"{type(self).__name__}: {data.hex()} is shorter than an opcode")
        opcode = int.from_bytes(data[: self.opcode_bytes], "big")
        self._answer = None  # a new command ends what was left to read
        self.command(opcode, data[self.opcode_bytes :])
        self.commands.append((opcode, data[self.opcode_bytes :]))

    def read(self, length: int) -> bytes:
        if length == 0:
            return b""
        answer = self.pending()
        if answer is None:
            raise ModelError(f"{type(self).__name__}: nothing to read (NACK)")
        self._answer = None
        # Past its answer the chip leaves SDA alone: the pull-up reads as 1s.
        return answer[:length] + bytes([self.idle]) * max(0, length - len(answer))

    def opcodes(self) -> list[int]:
        """The opcodes of the commands accepted so far."""
        return [opcode for opcode, _ in self.commands]
