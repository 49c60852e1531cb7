"""`roadtest trace export --vcd`: the dump read back as signals and held against the I2C-bus
specification (NXP UM10204 Rev. 7: 3.1.4 START and STOP, 3.1.3 data validity, 3.1.6
acknowledge, Table 10's times), and SPI through sigrok-cli's own SPI decoder."""

from __future__ import annotations

import io
import subprocess
from pathlib import Path
from typing import Any

import pytest
from helpers import Roadtest, cli_runner
from vcd.reader import TokenKind, tokenize

from roadtest.trace.format import Header, write_trace_atomic
from roadtest.trace.waves import export_vcd

W, R, FAIL_NEXT = 0, 2, 1  # virtio-i2c message flags


@pytest.fixture
def roadtest(capsys: pytest.CaptureFixture[str]) -> Roadtest:
    return cli_runner(capsys)


def signals(path: Path) -> dict[str, list[tuple[int, str]]]:
    """Each signal's changes (ns, value), its first value at time 0."""
    names: dict[str, str] = {}
    out: dict[str, list[tuple[int, str]]] = {}
    now = 0
    for token in tokenize(io.BytesIO(path.read_bytes())):
        if token.kind is TokenKind.VAR:
            names[token.var.id_code] = token.var.reference
        elif token.kind is TokenKind.CHANGE_TIME:
            now = token.time_change
        elif token.kind is TokenKind.CHANGE_SCALAR:
            change = token.scalar_change
            out.setdefault(names[change.id_code], []).append((now, change.value))
        elif token.kind is TokenKind.CHANGE_STRING:
            change_s = token.string_change
            out.setdefault(names[change_s.id_code], []).append((now, change_s.value))
    return out


def i2c_trace(path: Path, *events: dict[str, Any], address: int = 0x48) -> Path:
    header = Header(kernel="6.12", test="tests/x.py::test_x", address=address, compatible="x,y")
    write_trace_atomic(path, header, events)
    return path


def xfer(sim: int, *msgs: tuple[int, bytes, int]) -> dict[str, Any]:
    last = len(msgs) - 1
    return {
        "kind": "i2c",
        "t": sim,
        "sim": sim,
        "msgs": [
            {
                "flags": flags | (FAIL_NEXT if i < last else 0),
                "len": len(data),
                "data": data,
                "status": status,
            }
            for i, (flags, data, status) in enumerate(msgs)
        ],
    }


class Bus:
    """SCL and SDA of a dump as a list of (ns, scl, sda) after each change."""

    def __init__(self, dump: Path) -> None:
        sig = signals(dump)
        times = sorted({t for t, _ in sig["scl"]} | {t for t, _ in sig["sda"]})
        scl = dict(sig["scl"])
        sda = dict(sig["sda"])
        self.states: list[tuple[int, int, int]] = []
        level = [1, 1]
        for t in times:
            level = [int(scl.get(t, level[0])), int(sda.get(t, level[1]))]
            self.states.append((t, level[0], level[1]))

    def events(self) -> list[tuple[int, str]]:
        """(ns, what): S and P (SDA falling and rising while SCL is high), the bits (SDA at
        each SCL rise), the SCL rises and falls, and every SDA change while SCL is low."""
        out: list[tuple[int, str]] = []
        prev = (0, 1, 1)
        for state in self.states:
            t, scl, sda = state
            if scl and prev[1] and sda != prev[2]:
                out.append((t, "S" if not sda else "P"))
            elif scl != prev[1]:
                out.append((t, f"bit{sda}" if scl else "fall"))
            elif sda != prev[2]:
                out.append((t, "sda"))
            prev = state
        return out

    def symbols(self) -> list[str]:
        """The conditions and bytes as sampled: "S", "P", "48w", "a" (ACK), "n" (NACK), "01"."""
        out: list[str] = []
        bits: list[int] = []
        first = True
        for _, what in self.events():
            if what in ("S", "P"):
                # A repeated START or a STOP has SCL rise first: that clock carries no bit.
                assert len(bits) in (0, 1), f"a condition inside a byte: {out}, bits {bits}"
                bits = []
                out.append(what)
                first = True
            elif what.startswith("bit"):
                bits.append(int(what[3]))
                if len(bits) == 9:
                    value = int("".join(map(str, bits[:8])), 2)
                    if first:
                        out.append(f"{value >> 1:02x}{'r' if value & 1 else 'w'}")
                    else:
                        out.append(f"{value:02x}")
                    out.append("n" if bits[8] else "a")
                    bits, first = [], False
        return ["Sr" if s == "S" and i and out[i - 1] != "P" else s for i, s in enumerate(out)]


def test_a_transfer_is_drawn_as_the_specification_samples_it(tmp_path: Path) -> None:
    trace = i2c_trace(
        tmp_path / "t.rtrace",
        xfer(1_000_000, (W, b"\x01", 0), (R, b"\x60\xa0", 0)),
        xfer(3_000_000, (W, b"\x01\x62\xb0", 0)),
    )
    export_vcd(trace, tmp_path / "d.vcd")
    assert Bus(tmp_path / "d.vcd").symbols() == [
        *("S", "48w", "a", "01", "a", "Sr", "48r", "a", "60", "a", "a0", "n", "P"),
        *("S", "48w", "a", "01", "a", "62", "a", "b0", "a", "P"),
    ]


@pytest.mark.parametrize(
    # clock, UM10204 Table 10's minimums: tLOW, tHIGH, tHD;STA, tSU;STA, tSU;DAT, tSU;STO, tBUF
    ("clock", "low", "high", "hd_sta", "su_sta", "su_dat", "su_sto", "buf"),
    [
        (100_000, 4700, 4000, 4000, 4700, 250, 4000, 4700),  # Standard-mode
        (400_000, 1300, 600, 600, 600, 100, 600, 1300),  # Fast-mode
        (1_000_000, 500, 260, 260, 260, 50, 260, 500),  # Fast-mode Plus
    ],
)
def test_the_timing_keeps_the_minimums_of_the_clocks_mode(
    tmp_path: Path,
    clock: int,
    low: int,
    high: int,
    hd_sta: int,
    su_sta: int,
    su_dat: int,
    su_sto: int,
    buf: int,
) -> None:
    trace = i2c_trace(
        tmp_path / "t.rtrace",
        xfer(0, (W, b"\x00", 0), (R, b"\xff\x00\x55", 0)),
        xfer(1, (W, b"\xaa\x0f", 0)),  # at once: it waits for the bus to be free
    )
    export_vcd(trace, tmp_path / "d.vcd", clock=clock)
    events = Bus(tmp_path / "d.vcd").events()
    rises = [t for t, what in events if what.startswith("bit")]
    last: dict[str, int] = {}
    for t, what in events:
        kind = "rise" if what.startswith("bit") else what
        if kind == "rise" and "fall" in last:
            assert t - last["fall"] >= low, f"tLOW at {t}"
        if kind == "fall" and "rise" in last:
            assert t - last["rise"] >= high, f"tHIGH at {t}"
            if last.get("S", -1) > last["rise"]:
                assert t - last["S"] >= hd_sta, f"tHD;STA at {t}"
        if kind == "S" and "P" in last and last["P"] > last.get("rise", -1) - 1:
            assert t - last["P"] >= buf, f"tBUF at {t}"
        if kind == "S" and "rise" in last and last["rise"] > last.get("P", -1):
            assert t - last["rise"] >= su_sta, f"tSU;STA at {t}"
        if kind == "P":
            assert t - last["rise"] >= su_sto, f"tSU;STO at {t}"
        if kind == "rise" and "sda" in last:
            assert t - last["sda"] >= su_dat, f"tSU;DAT at {t}"
        last[kind] = t
    # The clock's period within a byte is the bus clock's, and no clock is faster.
    periods = [b - a for a, b in zip(rises, rises[1:], strict=False)]
    assert max(set(periods), key=periods.count) == round(10**9 / clock)
    assert min(periods) == round(10**9 / clock)


def test_a_failed_message_fails_on_the_wire_and_what_follows_it_is_not_sent(
    tmp_path: Path,
) -> None:
    trace = i2c_trace(
        tmp_path / "t.rtrace",
        xfer(0, (W, b"\x10", 0), (R, b"", 1), (W, b"\x20", 1)),  # the read refused
        xfer(1, (W, b"\x05\x06", 1)),  # a write refused: its bytes, the last NACKed
        xfer(2, (R, b"", 1)),  # a read refused at its address
    )
    export_vcd(trace, tmp_path / "d.vcd")
    assert Bus(tmp_path / "d.vcd").symbols() == [
        *("S", "48w", "a", "10", "a", "Sr", "48r", "n", "P"),
        *("S", "48w", "a", "05", "a", "06", "n", "P"),
        *("S", "48r", "n", "P"),
    ]


def test_a_ten_bit_address(tmp_path: Path) -> None:
    # UM10204 3.1.11: 11110, the two top bits and W, then the low byte; a read repeats the
    # first byte with R after a repeated START.
    trace = i2c_trace(
        tmp_path / "t.rtrace", xfer(0, (W, b"\x07", 0), (R, b"\x99", 0)), address=0x234
    )
    export_vcd(trace, tmp_path / "d.vcd")
    assert Bus(tmp_path / "d.vcd").symbols() == [
        *("S", "7aw", "a", "34", "a", "07", "a"),
        *("Sr", "7aw", "a", "34", "a", "Sr", "7ar", "a", "99", "n", "P"),
    ]


def test_times_are_the_traces_and_gpio_lines_are_signals(tmp_path: Path) -> None:
    trace = i2c_trace(
        tmp_path / "t.rtrace",
        {"kind": "marker", "t": 0, "sim": 10_000, "what": "bind", "detail": None},
        xfer(20_000, (W, b"\x01", 0)),
        {
            "kind": "gpio",
            "t": 0,
            "sim": 500_000,
            "line": 3,
            "name": "irq",
            "op": "unmask",
            "value": 0,
            "status": 0,
        },
        {"kind": "irq", "t": 0, "sim": 1_000_000, "line": 3, "name": "irq", "level": 0},
        xfer(1_000_000, (W, b"\x02", 0)),  # the driver answers the interrupt at once
        {"kind": "irq", "t": 0, "sim": 1_010_000, "line": 3, "name": "irq", "level": 1},
    )
    export_vcd(trace, tmp_path / "d.vcd")
    sig = signals(tmp_path / "d.vcd")
    sda_falls = [t for t, v in sig["sda"] if v == "0"]
    start = sda_falls[0]
    irq = [t - start for t, v in sig["irq"] if v in "01"]
    assert irq[0] == 980_000
    # The model raised the line again after the second transfer, which on this wire takes
    # longer than the guest's 10 us: it rises once that transfer's STOP is done.
    stops = [t - start for t, what in Bus(tmp_path / "d.vcd").events() if what == "P"]
    assert irq[1] > stops[1] > 990_000
    assert [(t - start, v) for t, v in sig["test"] if v != "_"] == [(-10_000, "bind")]
    assert [(t - start, v) for t, v in sig["gpio_requests"] if v != "_"] == [
        (480_000, "irq:unmask=0")
    ]
    # The second transfer comes after the interrupt it answers, not before it.
    second = Bus(tmp_path / "d.vcd").events()
    starts = [t for t, what in second if what == "S"]
    assert starts[1] - start >= 980_000
    assert sig["irq"][0] == (0, "x")  # no level known before the model drove one


def spi_trace(path: Path, mode: int, bits: int, tx: bytes, rx: bytes, cs: int = 2) -> Path:
    header = Header(
        kernel="6.12", test="tests/x.py::test_x", bus="spi", address=cs, compatible="x,y"
    )
    x = {
        "bits_per_word": bits,
        "cs_change": 0,
        "tx_nbits": 1,
        "rx_nbits": 1,
        "mode": mode,
        "freq": 1_000_000,
        "word_delay_ns": 0,
        "cs_setup_ns": 0,
        "cs_delay_hold_ns": 0,
        "cs_change_delay_inactive_ns": 0,
        "len": len(tx),
        "tx": tx,
        "rx": rx,
        "result": 0,
    }
    write_trace_atomic(path, header, [{"kind": "spi", "t": 5, "sim": 5, "cs": cs, "xfers": [x]}])
    return path


def sigrok_spi(dump: Path, cls: str, **options: str) -> list[str]:
    opts = "".join(f":{k}={v}" for k, v in options.items())
    out = subprocess.run(
        [
            "sigrok-cli",
            "-I",
            "vcd",
            "-i",
            str(dump),
            "-P",
            f"spi:clk=sclk:mosi=mosi:miso=miso:cs=cs2{opts}",
            "-A",
            f"spi={cls}",
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return [line.split(": ", 1)[1] for line in out.splitlines() if line.startswith("spi-")]


@pytest.mark.parametrize("mode", [0, 1, 2, 3])
def test_spi_in_each_mode_as_sigroks_decoder_reads_it(tmp_path: Path, mode: int) -> None:
    dump = tmp_path / "d.vcd"
    export_vcd(spi_trace(tmp_path / "t.rtrace", mode, 8, b"\x0b\x80\x01", b"\x00\x0c\xfe"), dump)
    cpol, cpha = str(mode >> 1), str(mode & 1)
    assert sigrok_spi(dump, "mosi-data", cpol=cpol, cpha=cpha) == ["0B", "80", "01"]
    assert sigrok_spi(dump, "miso-data", cpol=cpol, cpha=cpha) == ["00", "0C", "FE"]


def test_spi_words_of_12_bits_lsb_first_and_chip_select_high(tmp_path: Path) -> None:
    # mode 0 with LSB_FIRST (bit 3) and CS_HIGH (bit 2); a 12-bit word in two bytes, the
    # most significant byte first (the trace's wire order)
    dump = tmp_path / "d.vcd"
    trace = spi_trace(tmp_path / "t.rtrace", 0b1100, 12, b"\x0a\xbc\x01\x23", b"\x0f\xed\x00\x01")
    export_vcd(trace, dump)
    opts = {"wordsize": "12", "bitorder": "lsb-first", "cs_polarity": "active-high"}
    assert [int(w, 16) for w in sigrok_spi(dump, "mosi-data", **opts)] == [0xABC, 0x123]
    assert [int(w, 16) for w in sigrok_spi(dump, "miso-data", **opts)] == [0xFED, 0x001]


def test_the_command(tmp_path: Path, roadtest: Roadtest) -> None:
    trace = i2c_trace(tmp_path / "t.rtrace", xfer(0, (W, b"\x01", 0)))
    result = roadtest("trace", "export", "--vcd", tmp_path / "d.vcd", "--clock", "400k", trace)
    assert result.returncode == 0, result.stderr
    assert result.stdout == f"wrote {tmp_path / 'd.vcd'}: 1 events of {trace}\n"
    rises = [t for t, what in Bus(tmp_path / "d.vcd").events() if what.startswith("bit")]
    assert rises[1] - rises[0] == 2500  # 400 kHz
    result = roadtest("trace", "export", "--vcd", tmp_path / "e.vcd", "--clock", "3.4e6", trace)
    assert result.returncode == 2
    assert "an I2C clock is 1 Hz..1 MHz" in result.stderr
    assert not (tmp_path / "e.vcd").exists()
