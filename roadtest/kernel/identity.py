"""Whether two builds of a module (.ko) or of a kernel image (vmlinux) are the same code.

A bisect step whose modules are identical to an already-decided step's can take that step's
verdict without booting. The rule: two modules are identical when their code and data
sections, their relocations and their `.modinfo` match; what changes with every build of the
same source does not count. Concretely the identity is a sha256 over

- the ELF header fields that say what the file is for (class, byte order, machine, type);
- every allocated section, by name (sorted, so section order and numbering don't matter):
  its contents, or only its size for a NOBITS section (`.bss`). Notes are hashed note by
  note, leaving out the GNU build id (a hash over the whole file, debug info included);
- every relocation that applies to an allocated section, as (offset, type, addend) and the
  symbol it refers to described by name and place, never by its index in the symbol table
  (the table's order may differ between builds of the same code);
- the `.modinfo` key=value strings, without `srcversion` (a checksum of the module's source
  text, which edits that generate no different code change too) and any build id.

Not hashed: debug sections (the build directory and line numbers live there), `.comment`,
`.note.GNU-stack`, the symbol table and its strings (not allocated; a linked image's dynamic
ones are, and count), section groups, and relocations of anything not allocated. In a linked
image (vmlinux) only the dynamic relocations (allocated ones) count: the linker has already
resolved the others into the section bytes.
"""

from __future__ import annotations

import hashlib
import os
import struct
from pathlib import Path

from elftools.common.exceptions import ELFError
from elftools.elf.elffile import ELFFile
from elftools.elf.relocation import RelocationSection
from elftools.elf.sections import Section, SymbolTableSection

from roadtest.errors import RoadtestError

SHF_ALLOC = 0x2
NT_GNU_BUILD_ID = 3
# Never hashed as contents, whatever their flags: handled apart, or different in every build.
# (Debug sections, .comment, the symbol table and its strings are not allocated: left out too.)
_SKIPPED_SECTIONS = frozenset({".modinfo", ".note.gnu.build-id", ".comment", ".note.GNU-stack"})
# Relocations are hashed entry by entry, with symbols by name instead of by index.
_RELOCATION_TYPES = frozenset({"SHT_REL", "SHT_RELA"})


def module_identity(path: Path) -> str:
    """Hex sha256 of what makes a module (.ko, ELF ET_REL) the code it is."""
    return _identity(path, ("ET_REL",), "a module")


def image_identity(path: Path) -> str:
    """Hex sha256 of what makes a kernel image (UML vmlinux, ELF ET_EXEC) the code it is."""
    return _identity(path, ("ET_EXEC", "ET_DYN"), "a kernel image")


def _identity(path: Path, types: tuple[str, ...], what: str) -> str:
    try:
        with path.open("rb") as f:
            elf = ELFFile(f)
            if elf["e_type"] not in types:
                raise RoadtestError(f"{path}: not {what} (ELF type {elf['e_type']})")
            return _hash_elf(elf, os.fstat(f.fileno()).st_size)
    except (ELFError, OSError, struct.error) as err:
        raise RoadtestError(f"{path}: not a readable ELF file ({err})") from err


class _Hasher:
    """sha256 over length-prefixed records, so no two sequences of records hash alike."""

    def __init__(self) -> None:
        self._h = hashlib.sha256()

    def record(self, *fields: object) -> None:
        self.blob(repr(fields).encode())

    def blob(self, data: bytes) -> None:
        self._h.update(len(data).to_bytes(8, "little"))
        self._h.update(data)

    def hexdigest(self) -> str:
        return self._h.hexdigest()


def _hash_elf(elf: ELFFile, file_size: int) -> str:
    h = _Hasher()
    linked = elf["e_type"] != "ET_REL"
    h.record("elf", elf.elfclass, elf.little_endian, elf["e_machine"], elf["e_type"])
    if linked:
        h.record("entry", elf["e_entry"])

    sections = [elf.get_section(i) for i in range(elf.num_sections())]
    for section in sections:
        end = section["sh_offset"] + section["sh_size"]
        if section["sh_type"] != "SHT_NOBITS" and end > file_size:
            raise ELFError(f"section {section.name} runs past the end of the file")
    # Sorted by name; sections sharing a name (COMDAT groups) keep their file order.
    for section in sorted(sections, key=lambda s: str(s.name)):
        if _hashed_as_contents(section):
            _hash_section(h, elf, section)
    for section in sorted(sections, key=lambda s: str(s.name)):
        if section["sh_type"] in _RELOCATION_TYPES:
            _hash_relocations(h, elf, section, linked)
    modinfo = elf.get_section_by_name(".modinfo")
    if modinfo is not None:
        _hash_modinfo(h, modinfo.data())
    return h.hexdigest()


def _hashed_as_contents(section: Section) -> bool:
    return bool(
        section["sh_flags"] & SHF_ALLOC
        and section.name not in _SKIPPED_SECTIONS
        and section["sh_type"] not in _RELOCATION_TYPES
    )


def _hash_section(h: _Hasher, elf: ELFFile, section: Section) -> None:
    header = (
        "section",
        section.name,
        section["sh_type"],
        section["sh_flags"],
        section["sh_addr"],
        section["sh_addralign"],
        section["sh_size"],
    )
    h.record(*header)
    if section["sh_type"] == "SHT_NOBITS":
        return
    data: bytes = section.data()
    if section["sh_type"] == "SHT_NOTE":
        notes = _notes(data, elf.little_endian)
        if notes is not None:
            for name, note_type, desc in notes:
                if not (name == b"GNU\0" and note_type == NT_GNU_BUILD_ID):
                    h.record("note", name, note_type)
                    h.blob(desc)
            return
    h.blob(data)


def _notes(data: bytes, little_endian: bool) -> list[tuple[bytes, int, bytes]] | None:
    """(name, type, descriptor) of each note, or None if `data` is not a well-formed list."""
    header = struct.Struct("<III" if little_endian else ">III")
    notes = []
    offset = 0
    while offset + header.size <= len(data):
        namesz, descsz, note_type = header.unpack_from(data, offset)
        name_at = offset + header.size
        desc_at = name_at + (namesz + 3) // 4 * 4
        offset = desc_at + (descsz + 3) // 4 * 4
        if offset > len(data):
            return None
        notes.append(
            (data[name_at : name_at + namesz], note_type, data[desc_at : desc_at + descsz])
        )
    return notes if not data[offset:].strip(b"\0") else None


def _hash_relocations(h: _Hasher, elf: ELFFile, section: Section, linked: bool) -> None:
    target = elf.get_section(section["sh_info"]) if section["sh_info"] else None
    if linked:
        # The loader applies only the allocated (dynamic) relocations of a linked image.
        if not section["sh_flags"] & SHF_ALLOC:
            return
    elif target is None or not target["sh_flags"] & SHF_ALLOC:
        return
    if not isinstance(section, RelocationSection):
        raise ELFError(f"relocation section {section.name} could not be parsed")
    symtab = elf.get_section(section["sh_link"]) if section["sh_link"] else None
    described: dict[int, str] = {}

    def describe(index: int) -> str:
        if index not in described:
            described[index] = _describe_symbol(elf, symtab, index)
        return described[index]

    is_rela = section.is_RELA()
    entries = sorted(
        (
            entry["r_offset"],
            entry["r_info_type"],
            entry["r_addend"] if is_rela else 0,
            describe(entry["r_info_sym"]),
        )
        for entry in section.iter_relocations()
    )
    h.record("relocations", section.name, target.name if target is not None else "", len(entries))
    for entry in entries:
        h.record(*entry)


def _describe_symbol(elf: ELFFile, symtab: Section | None, index: int) -> str:
    """A symbol by what it is (name, or the section and offset it marks), not by its index."""
    if not isinstance(symtab, SymbolTableSection) or index == 0:
        return ""
    symbol = symtab.get_symbol(index)
    name = str(symbol.name)
    shndx = symbol["st_shndx"]
    if symbol["st_info"]["type"] == "STT_SECTION" and isinstance(shndx, int):
        return f"section {elf.get_section(shndx).name}"
    if shndx == "SHN_UNDEF":
        return name
    if isinstance(shndx, int):
        where = str(elf.get_section(shndx).name)
    else:  # SHN_ABS, SHN_COMMON
        where = str(shndx)
    return f"{name} in {where} at {symbol['st_value']:#x} size {symbol['st_size']:#x}"


def _hash_modinfo(h: _Hasher, data: bytes) -> None:
    kept = []
    for entry in data.split(b"\0"):
        if not entry:
            continue
        key = entry.partition(b"=")[0].decode("utf-8", "replace")
        # Built-in modules' fields (in vmlinux) are "module.key".
        field = key.rsplit(".", 1)[-1].lower()
        if field == "srcversion" or "build_id" in field or "buildid" in field:
            continue
        kept.append(entry)
    # Sorted: the order of MODULE_INFO() lines is not what makes the module behave differently.
    for entry in sorted(kept):
        h.record("modinfo", entry)
