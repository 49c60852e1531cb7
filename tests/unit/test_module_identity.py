"""Module and image identity: same code in, same digest out; build noise doesn't count.

The objects are compiled here from small module-shaped C sources (a call to an external
function, a static string, a global variable, .modinfo strings): no kernel build, no guest.
"""

from __future__ import annotations

import shutil
import struct
import subprocess
from pathlib import Path

import pytest
from elftools.elf.elffile import ELFFile
from elftools.elf.relocation import RelocationSection

from roadtest.errors import RoadtestError
from roadtest.kernel.identity import image_identity, module_identity

GCC = shutil.which("gcc")
OBJCOPY = shutil.which("objcopy")
if GCC is None:
    pytest.skip("gcc not found: these tests compile small ELF objects", allow_module_level=True)

MODULE = """\
extern int ext_a(int);
extern int ext_b(int);

int counter = 3; /* COMMENT */
static const char greeting[] = "hello from a module";

const char *name(void) { return greeting; }

int step(int x)
{
    counter++;
    return CALL(x) + INCREMENT;
}

static const char __modinfo_license[] __attribute__((section(".modinfo"), used, aligned(1)))
    = "license=LICENSE";
static const char __modinfo_srcversion[] __attribute__((section(".modinfo"), used, aligned(1)))
    = "srcversion=SRCVERSION";
EXTRA_MODINFO
"""

PROGRAM = """\
#include <stdio.h>

static int step(int x) { return x * 3 + INCREMENT; }

int main(int argc, char **argv)
{
    (void)argv;
    printf("%d\\n", step(argc));
    return 0;
}
"""


def module_source(
    *,
    call: str = "ext_a",
    increment: int = 1,
    license: str = "GPL",
    srcversion: str = "ABCDEF0123",
    comment: str = "a counter",
    extra_modinfo: str = "",
) -> str:
    return (
        MODULE.replace("CALL", call)
        .replace("INCREMENT", str(increment))
        .replace("LICENSE", license)
        .replace("SRCVERSION", srcversion)
        .replace("COMMENT", comment)
        .replace("EXTRA_MODINFO", extra_modinfo)
    )


def modinfo_string(variable: str, text: str) -> str:
    """A C definition putting `text` into .modinfo, as the kernel's MODULE_INFO() does."""
    return (
        f"static const char __modinfo_{variable}[]"
        f' __attribute__((section(".modinfo"), used, aligned(1))) = "{text}";'
    )


def compile_object(directory: Path, source: str, *flags: str, link: bool = False) -> Path:
    """Compile `source` in `directory` (created) with gcc -O2: an object, or linked if `link`."""
    assert GCC is not None
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "mod.c").write_text(source)
    output = directory / ("prog" if link else "mod.o")
    command = [GCC, "-O2", *flags, "mod.c", "-o", output.name]
    if not link:
        command.insert(1, "-c")
    subprocess.run(command, cwd=directory, check=True, capture_output=True)
    return output


def section_data(path: Path, name: str) -> bytes:
    with path.open("rb") as f:
        section = ELFFile(f).get_section_by_name(name)
        assert section is not None, f"{path} has no {name}"
        return section.data()


def relocation_symbols(path: Path) -> list[int]:
    """The raw symbol indices of the relocations against .text."""
    with path.open("rb") as f:
        section = ELFFile(f).get_section_by_name(".rela.text")
        assert isinstance(section, RelocationSection)
        return [entry["r_info_sym"] for entry in section.iter_relocations()]


def note(name: bytes, note_type: int, desc: bytes) -> bytes:
    """One ELF note (4-byte aligned name and descriptor), little-endian as on x86."""

    def padded(data: bytes) -> bytes:
        return data + b"\0" * (-len(data) % 4)

    return struct.pack("<III", len(name), len(desc), note_type) + padded(name) + padded(desc)


def add_note_section(obj: Path, section: str, contents: bytes) -> Path:
    """A copy of `obj` with an allocated note section `section` holding `contents`."""
    if OBJCOPY is None:
        pytest.skip("objcopy not found: needed to add a note section")
    blob = obj.with_name(f"{obj.stem}{section}.bin")
    blob.write_bytes(contents)
    out = obj.with_name(f"{obj.stem}{section}.o")
    subprocess.run(
        [
            OBJCOPY,
            f"--add-section={section}={blob}",
            f"--set-section-flags={section}=alloc,readonly",
            str(obj),
            str(out),
        ],
        check=True,
        capture_output=True,
    )
    return out


NT_GNU_ABI_TAG = 1
NT_GNU_BUILD_ID = 3


# --- the same code --------------------------------------------------------------------------


def test_same_source_compiled_twice_is_identical(tmp_path: Path) -> None:
    first = compile_object(tmp_path / "one", module_source())
    second = compile_object(tmp_path / "one-again", module_source())
    identity = module_identity(first)
    assert len(identity) == 64 and int(identity, 16) >= 0
    assert module_identity(second) == identity
    assert module_identity(first) == identity  # and stable on a second look


def test_same_source_built_in_two_directories_is_identical(tmp_path: Path) -> None:
    # With -g the build directory is written into the debug info: the files differ.
    first = compile_object(tmp_path / "tree-a" / "drivers", module_source(), "-g")
    second = compile_object(tmp_path / "elsewhere" / "b", module_source(), "-g")
    assert first.read_bytes() != second.read_bytes()
    assert module_identity(first) == module_identity(second)


def test_debug_info_paths_do_not_count(tmp_path: Path) -> None:
    directory = tmp_path / "src"
    first = compile_object(directory, module_source(), "-g", f"-fdebug-prefix-map={directory}=/x")
    first = first.rename(directory / "first.o")
    second = compile_object(
        directory, module_source(), "-g", f"-fdebug-prefix-map={directory}=/somewhere/else"
    )
    assert first.read_bytes() != second.read_bytes()
    assert module_identity(first) == module_identity(second)


def test_comment_reworded_on_the_same_line_does_not_count(tmp_path: Path) -> None:
    first = compile_object(tmp_path / "a", module_source(comment="a counter"), "-g")
    second = compile_object(tmp_path / "b", module_source(comment="counts the steps"), "-g")
    assert module_identity(first) == module_identity(second)


def test_srcversion_does_not_count(tmp_path: Path) -> None:
    first = compile_object(tmp_path / "a", module_source(srcversion="ABCDEF0123"))
    second = compile_object(tmp_path / "b", module_source(srcversion="0123456789ABCDEF"))
    assert section_data(first, ".modinfo") != section_data(second, ".modinfo")
    assert module_identity(first) == module_identity(second)


def test_build_id_field_in_modinfo_does_not_count(tmp_path: Path) -> None:
    first = compile_object(
        tmp_path / "a", module_source(extra_modinfo=modinfo_string("build_id", "build_id=01"))
    )
    second = compile_object(
        tmp_path / "b", module_source(extra_modinfo=modinfo_string("build_id", "build_id=02"))
    )
    assert section_data(first, ".modinfo") != section_data(second, ".modinfo")
    assert module_identity(first) == module_identity(second)


def test_gnu_build_id_note_does_not_count(tmp_path: Path) -> None:
    obj = compile_object(tmp_path, module_source())
    first = add_note_section(
        obj, ".note.gnu.build-id", note(b"GNU\0", NT_GNU_BUILD_ID, bytes(range(20)))
    )
    first = first.rename(tmp_path / "first.o")
    second = add_note_section(
        obj, ".note.gnu.build-id", note(b"GNU\0", NT_GNU_BUILD_ID, bytes(range(20, 40)))
    )
    assert first.read_bytes() != second.read_bytes()
    assert module_identity(first) == module_identity(second) == module_identity(obj)


def test_build_id_among_other_notes_does_not_count(tmp_path: Path) -> None:
    # As in vmlinux, whose .notes section holds the build id next to notes that do count.
    obj = compile_object(tmp_path, module_source())
    abi_tag = note(b"GNU\0", NT_GNU_ABI_TAG, struct.pack("<IIII", 0, 3, 2, 0))

    def with_notes(build_id: bytes, abi: bytes, name: str) -> Path:
        return add_note_section(
            obj, ".notes", abi + note(b"GNU\0", NT_GNU_BUILD_ID, build_id)
        ).rename(tmp_path / name)

    first = with_notes(bytes(20), abi_tag, "first.o")
    second = with_notes(b"\xff" * 20, abi_tag, "second.o")
    other_abi = with_notes(
        bytes(20), note(b"GNU\0", NT_GNU_ABI_TAG, struct.pack("<IIII", 0, 4, 0, 0)), "third.o"
    )
    assert module_identity(first) == module_identity(second)
    assert module_identity(other_abi) != module_identity(first)


def test_symbol_table_order_does_not_count(tmp_path: Path) -> None:
    if OBJCOPY is None:
        pytest.skip("objcopy not found: needed to renumber the symbol table")
    obj = compile_object(tmp_path, module_source())
    renumbered = tmp_path / "renumbered.o"
    # A new local symbol goes before the globals: every global's index moves up by one.
    subprocess.run(
        [OBJCOPY, "--add-symbol", "marker=.text:0,local", str(obj), str(renumbered)],
        check=True,
        capture_output=True,
    )
    assert relocation_symbols(obj) != relocation_symbols(renumbered)
    assert module_identity(obj) == module_identity(renumbered)


# --- different code -------------------------------------------------------------------------


def test_one_instruction_changed_alters_it(tmp_path: Path) -> None:
    first = compile_object(tmp_path / "a", module_source(increment=1))
    second = compile_object(tmp_path / "b", module_source(increment=2))
    assert module_identity(first) != module_identity(second)


def test_relocation_target_changed_alters_it(tmp_path: Path) -> None:
    first = compile_object(tmp_path / "a", module_source(call="ext_a"))
    second = compile_object(tmp_path / "b", module_source(call="ext_b"))
    # The instructions are the same bytes: only the relocation says which function is called.
    assert section_data(first, ".text") == section_data(second, ".text")
    assert module_identity(first) != module_identity(second)


@pytest.mark.parametrize(
    "changed",
    [
        module_source(license="GPL v2"),
        module_source(extra_modinfo=modinfo_string("alias", "alias=i2c:opt3001")),
    ],
    ids=["license", "alias"],
)
def test_modinfo_field_that_counts_alters_it(tmp_path: Path, changed: str) -> None:
    first = compile_object(tmp_path / "a", module_source())
    second = compile_object(tmp_path / "b", changed)
    assert module_identity(first) != module_identity(second)


# --- not a module ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "contents", [b"obj-m += opt3001.o\n", b"", b"\x7fELF\x02\x01\x01"], ids=["text", "empty", "cut"]
)
def test_not_an_elf_file_is_a_one_line_error(tmp_path: Path, contents: bytes) -> None:
    path = tmp_path / "opt3001.ko"
    path.write_bytes(contents)
    with pytest.raises(RoadtestError) as raised:
        module_identity(path)
    assert str(path) in str(raised.value)
    assert "\n" not in str(raised.value)
    with pytest.raises(RoadtestError):
        image_identity(path)


def test_section_running_past_the_end_is_a_one_line_error(tmp_path: Path) -> None:
    obj = compile_object(tmp_path, module_source())
    with obj.open("rb") as f:
        elf = ELFFile(f)
        index = elf.get_section_index(".text")
        header_at = elf["e_shoff"] + index * elf["e_shentsize"]
    contents = bytearray(obj.read_bytes())
    # Elf64_Shdr.sh_size, at byte 32 of the section header: a terabyte of .text.
    contents[header_at + 32 : header_at + 40] = (1 << 40).to_bytes(8, "little")
    damaged = tmp_path / "damaged.ko"
    damaged.write_bytes(bytes(contents))
    with pytest.raises(RoadtestError, match="damaged.ko.*past the end"):
        module_identity(damaged)


def test_missing_file_is_a_one_line_error(tmp_path: Path) -> None:
    path = tmp_path / "gone.ko"
    with pytest.raises(RoadtestError, match="gone.ko"):
        module_identity(path)


def test_module_and_image_are_not_mistaken_for_each_other(tmp_path: Path) -> None:
    obj = compile_object(tmp_path / "obj", module_source())
    program = compile_object(tmp_path / "prog", PROGRAM.replace("INCREMENT", "1"), link=True)
    with pytest.raises(RoadtestError, match="mod.o"):
        image_identity(obj)
    with pytest.raises(RoadtestError, match="prog"):
        module_identity(program)


# --- linked images --------------------------------------------------------------------------


@pytest.mark.parametrize("pie", ["-no-pie", "-pie"])
def test_image_same_source_linked_twice_is_identical(tmp_path: Path, pie: str) -> None:
    source = PROGRAM.replace("INCREMENT", "1")
    # Built in two directories with -g: the debug info, and so the build id, differ.
    first = compile_object(tmp_path / "a", source, "-g", pie, link=True)
    second = compile_object(tmp_path / "bb", source, "-g", pie, link=True)
    assert first.read_bytes() != second.read_bytes()
    assert image_identity(first) == image_identity(second)


@pytest.mark.parametrize("pie", ["-no-pie", "-pie"])
def test_image_one_instruction_changed_alters_it(tmp_path: Path, pie: str) -> None:
    first = compile_object(tmp_path / "a", PROGRAM.replace("INCREMENT", "1"), pie, link=True)
    second = compile_object(tmp_path / "b", PROGRAM.replace("INCREMENT", "2"), pie, link=True)
    assert image_identity(first) != image_identity(second)
