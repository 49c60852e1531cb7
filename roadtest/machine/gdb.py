"""gdb on a guest kernel that is a host process (UML): the command that attaches it, and
whether a debugger is attached.

UML's kernel runs as the guest's host process, so gdb attaches to it by pid
(Documentation/virt/uml/user_mode_linux_howto_v2.rst, "Kernel debugging"),
with vmlinux's symbols and the kernel's own gdb scripts (CONFIG_GDB_SCRIPTS
links vmlinux-gdb.py into the build directory) for the lx- commands. Attaching
stops the kernel; it runs again on `continue`.

The command is all on its command line, in no file: the only host directory
the guest can write is its work directory, and a gdb script there would be the
guest's to rewrite before the developer runs it.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from pathlib import Path

# Signals the UML kernel takes in its normal work (arch/um/os-Linux/signal.c), which gdb
# must hand on without stopping: SIGSEGV for page faults, SIGIO for interrupts, SIGALRM
# for its timer, SIGUSR1 to wake from suspend, SIGWINCH for console sizes, SIGCHLD from
# the user processes it ptraces. (gdb's default for SIGSEGV and SIGUSR1 is to stop.)
PASSED_SIGNALS = ("SIGSEGV", "SIGIO", "SIGALRM", "SIGVTALRM", "SIGUSR1", "SIGWINCH", "SIGCHLD")

SCRIPTS = "vmlinux-gdb.py"  # what CONFIG_GDB_SCRIPTS puts next to vmlinux


def command(vmlinux: Path, pid: int, module_dirs: Sequence[Path]) -> list[str]:
    """gdb's arguments to attach to the kernel `vmlinux` running as process `pid`, with its
    lx- commands, and the symbols of the modules loaded now (lx-symbols finds their files in
    `module_dirs`; the first match wins)."""
    build = vmlinux.parent
    commands = [
        f"handle {' '.join(PASSED_SIGNALS)} nostop noprint pass",
        f"attach {pid}",
        # lx-symbols also searches gdb's working directory, all of it: make it the last
        # of the modules' directories.
        f"cd {module_dirs[-1]}" if module_dirs else "",
        " ".join(["lx-symbols", *(str(d) for d in module_dirs[:-1])]),
        # lx-symbols also sets a breakpoint that loads each module's symbols as the kernel
        # loads it; under UML (gdb 13) the kernel then stops there again and again, so it
        # is switched off: run lx-symbols again after a module is loaded.
        'python [setattr(b, "enabled", False) for b in gdb.breakpoints() '
        'if type(b).__name__ == "LoadModuleBreakpoint"]',
        "set pagination on",  # gdb's default, off for the output above
    ]
    # The commands' output is longer than a terminal: no "--Type <RET> for more" in it.
    args = ["gdb", "-q", "-iex", "set pagination off"]
    args += ["-iex", f"add-auto-load-safe-path {build / SCRIPTS}"]
    for line in filter(None, commands):
        args += ["-ex", line]
    return [*args, str(vmlinux)]


def shell_line(args: Sequence[str]) -> str:
    """`args` as one line to paste into a shell."""
    return " ".join(shlex.quote(a) for a in args)


def tracer(pid: int) -> int:
    """The pid of the process that ptraces process `pid` (a debugger): 0 for none, or when
    `pid` ended."""
    try:
        with open(f"/proc/{pid}/status") as status:
            for line in status:
                if line.startswith("TracerPid:"):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return 0
