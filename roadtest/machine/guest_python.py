"""What the guest's Python needs from the host before its init runs, found by the host.

The guest's init is the host's Python, started with `-I -S` on a read-only root. A host
Python started the same way (the guest's own interpreter, no environment) imports what
init imports, once per host process, and so:

- compiles their bytecode into `<cache>/guest-pycache`, which the guest reads with
  `-X pycache_prefix=` (without it, the guest compiled roadtest's guest modules at every
  boot whenever the host keeps no `__pycache__` beside them);
- lists every file that start read: the interpreter and the libraries the dynamic loader
  opened (by the names it opened them under, symbolic links and all), the modules'
  sources and bytecode, and the loader's cache. The x86_64 guest gets them in its
  initramfs (roadtest/machine/initramfs.py).

Python checks each module against its source: an edited module is compiled again here.
"""

from __future__ import annotations

import functools
import json
import subprocess
from dataclasses import dataclass
from pathlib import Path

import msgpack

import roadtest
from roadtest.kernel import default_cache_dir

# What the guest's Python imports: its init, and what the agent imports when asked.
GUEST_IMPORTS = "roadtest.guest.init, subprocess, termios, traceback"

# Run by the host's Python as the guest's runs: prints, as JSON, the files it read.
_WARM_UP = """
import sys
sys.path[0:0] = {paths!r}
import {imports}
import ctypes, importlib.util, json

class _Info(ctypes.Structure):
    _fields_ = [("addr", ctypes.c_void_p), ("name", ctypes.c_char_p)]

opened = []
_each = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(_Info), ctypes.c_size_t, ctypes.c_void_p)

def _note(info, size, data):
    name = info.contents.name
    if name and name.startswith(b"/"):
        opened.append(name.decode())
    return 0

ctypes.CDLL(None).dl_iterate_phdr(_each(_note), None)
files = [sys.executable, "/etc/ld.so.cache", *opened]
for module in list(sys.modules.values()):
    source = getattr(module, "__file__", None)
    if not source:
        continue
    files.append(source)
    if source.endswith(".py"):
        files.append(importlib.util.cache_from_source(source))
print(json.dumps(files))
"""


@dataclass(frozen=True)
class GuestPython:
    pycache: Path  # the -X pycache_prefix the guest's Python reads
    files: tuple[str, ...]  # what its start read (absolute paths; some may not exist)


def python_path() -> str:
    """Where the guest's Python finds roadtest and msgpack: the same files the host uses."""
    dirs = [Path(roadtest.__file__).parents[1], Path(msgpack.__file__).parents[1]]
    return ":".join(dict.fromkeys(str(d) for d in dirs))


@functools.cache
def guest_python(python: str) -> GuestPython | None:
    """The guest's Python as the host's `python` found it, or None if that could not run
    (the guest then compiles its modules itself, and QEMU boots without an initramfs)."""
    pycache = default_cache_dir() / "guest-pycache"
    code = _WARM_UP.format(paths=python_path().split(":"), imports=GUEST_IMPORTS)
    try:
        out = subprocess.run(
            [python, "-I", "-S", "-X", f"pycache_prefix={pycache}", "-c", code],
            check=True,
            capture_output=True,
            text=True,
            timeout=120,
            env={},  # the guest's init has no locale either
        ).stdout
        files = json.loads(out)
    except (OSError, subprocess.SubprocessError, ValueError):
        return None
    return GuestPython(pycache, tuple(dict.fromkeys(str(f) for f in files)))
