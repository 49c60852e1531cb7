"""roadtest.sweep.oracles: kernel reports in a console log become findings with stable
signatures. The samples are written here after the kernel's format strings (the files
oracles.py names), with made-up drivers, addresses and numbers."""

from __future__ import annotations

from collections.abc import Sequence

from roadtest.sweep.oracles import ModuleSymbols, distinct, findings, guest_died, leak_findings
from roadtest.sweep.outcome import Kind

MODULE = {"rtc-foo"}  # printed as [rtc_foo]


def console(text: str, start: float = 12.0) -> list[str]:
    """`text`'s lines as the console shows them: printk's timestamp before each."""
    return [f"[{start + i * 0.000131:12.6f}] {line}" for i, line in enumerate(text.splitlines())]


def uml_frame(func: str, module: str = "", addr: int = 0x60123456, unreliable: bool = False) -> str:
    """A frame as arch/um/kernel/sysrq.c prints it: " [<addr>] [? ]func+off/size [mod]"."""
    mod = f" [{module}]" if module else ""
    return f" [<{addr:08x}>] {'? ' if unreliable else ''}{func}{mod}"


def uml_dump_stack(frames: Sequence[str], pid: int = 57) -> str:
    """lib/dump_stack.c's header, then arch/um's show_stack()."""
    return "\n".join(
        [
            f"CPU: 0 UID: 0 PID: {pid} Comm: modprobe Not tainted 6.12.118 #1",
            "Stack:",
            " 60a1b2c0 00000000 60a1b2f8 6004d1e2",
            " 00000001 60a1b310 00000000 6001a2b4",
            "Call Trace:",
            *frames,
        ]
    )


def kasan(
    func: str = "foo_read_time",
    caller: str = "foo_get_time",
    addr: int = 0x61A2B3C4,
    off: int = 0x1A,
    pid: int = 57,
    bug: str = "slab-out-of-bounds",
) -> str:
    """A KASAN report after mm/kasan/report.c."""
    return "\n".join(
        [
            "==================================================================",
            f"BUG: KASAN: {bug} in {func}+0x{off:x}/0x80 [rtc_foo]",
            f"Read of size 1 at addr {addr:016x} by task modprobe/{pid}",
            "",
            uml_dump_stack(
                [
                    uml_frame("dump_stack_lvl+0x5c/0x80", addr=0x6004A000 + off),
                    uml_frame("print_report+0x171/0x4f0"),
                    uml_frame("kasan_report+0xd3/0x110"),
                    uml_frame("__asan_load1+0x3c/0x60"),
                    uml_frame(f"{func}+0x{off:x}/0x80", "rtc_foo", addr=0x70000000 + off),
                    uml_frame("i2c_transfer+0x44/0x90", unreliable=True),
                    uml_frame(f"{caller}+0x3e/0x120", "rtc_foo"),
                    uml_frame("__rtc_read_time+0x6a/0x140"),
                    uml_frame("rtc_read_time+0x5b/0x170"),
                    uml_frame("foo_probe+0x1d1/0x300", "rtc_foo"),
                    uml_frame("i2c_device_probe+0x2f0/0x5a0"),
                ],
                pid,
            ),
            "",
            f"Allocated by task {pid}:",
            " kasan_save_stack+0x1c/0x40",
            " __kmalloc_noprof+0x1b2/0x3c0",
            " foo_probe+0x90/0x300 [rtc_foo]",
            "",
            f"The buggy address belongs to the object at {addr - 8:016x}",
            " which belongs to the cache kmalloc-8 of size 8",
            "Memory state around the buggy address:",
            f" {addr & ~0xFF:016x}: fa fb fc fc 00 fc fc fc fc fc fc fc fc fc fc fc",
            "                                      ^",
            "==================================================================",
        ]
    )


def ubsan(check: str = "shift-out-of-bounds", func: str = "foo_set_alarm") -> str:
    """lib/ubsan.c: CUT_HERE, the headline, the details, dump_stack(), the end marker."""
    return "\n".join(
        [
            "------------[ cut here ]------------",
            f"UBSAN: {check} in drivers/rtc/rtc-foo.c:211:23",
            "shift exponent 40 is too large for 32-bit type 'unsigned int'",
            uml_dump_stack(
                [
                    uml_frame("dump_stack_lvl+0x5c/0x80"),
                    uml_frame("__ubsan_handle_shift_out_of_bounds+0x1f0/0x3a0"),
                    uml_frame(f"{func}+0x8a/0x1c0", "rtc_foo"),
                    uml_frame("rtc_set_alarm+0x10a/0x1e0"),
                ]
            ),
            "---[ end trace ]---",
        ]
    )


def x86_warn(func: str = "foo_remove", at: str = "devm_remove_action", rip_off: int = 0x55) -> str:
    """kernel/panic.c __warn() with regs (x86): show_regs(), its trace, the end marker."""
    return "\n".join(
        [
            "------------[ cut here ]------------",
            f"WARNING: CPU: 1 PID: 88 at drivers/base/devres.c:720 {at}+0x{rip_off:x}/0x90",
            "Modules linked in: rtc_foo(-)",
            "CPU: 1 UID: 0 PID: 88 Comm: rmmod Not tainted 6.12.118 #1",
            f"RIP: 0010:{at}+0x{rip_off:x}/0x90",
            "Code: 48 89 ef e8 5b ff ff ff 48 85 c0 74 0a",
            "RSP: 0018:ffffc90000123d48 EFLAGS: 00010246",
            "Call Trace:",
            " <TASK>",
            " ? __warn+0x89/0x150",
            " ? report_bug+0x164/0x190",
            f" {func}+0x2c/0x60 [rtc_foo]",
            " i2c_device_remove+0x25/0xa0",
            " device_release_driver_internal+0x19e/0x200",
            " </TASK>",
            "---[ end trace 0000000000000000 ]---",
        ]
    )


def lockdep_circular(pid: int = 91) -> str:
    """kernel/locking/lockdep.c print_circular_bug(): the chain's stacks, then dump_stack()."""
    return "\n".join(
        [
            "",
            "======================================================",
            "WARNING: possible circular locking dependency detected",
            "6.12.118 #1 Not tainted",
            "------------------------------------------------------",
            f"kworker/0:1/{pid} is trying to acquire lock:",
            "000000006a1b2c30 (&foo->lock){+.+.}-{3:3}, at: foo_irq_work+0x2a/0x90 [rtc_foo]",
            "",
            "but task is already holding lock:",
            "000000006a1b2d40 (&rtc->ops_lock){+.+.}-{3:3}, at: rtc_read_time+0x3c/0x170",
            "",
            "which lock already depends on the new lock.",
            "",
            "",
            "the existing dependency chain (in reverse order) is:",
            "",
            "-> #1 (&foo->lock){+.+.}-{3:3}:",
            "       lock_acquire+0x108/0x2d0",
            "       __mutex_lock+0x9c/0xa10",
            "       foo_set_time+0x31/0x140 [rtc_foo]",
            "",
            "stack backtrace:",
            uml_dump_stack(
                [
                    uml_frame("dump_stack_lvl+0x5c/0x80"),
                    uml_frame("print_circular_bug+0x2a1/0x2c0"),
                    uml_frame("check_noncircular+0x10e/0x130"),
                    uml_frame("__lock_acquire+0x1a38/0x2f90"),
                    uml_frame("lock_acquire+0x108/0x2d0"),
                    uml_frame("__mutex_lock+0x9c/0xa10"),
                    uml_frame("foo_irq_work+0x2a/0x90", "rtc_foo"),
                    uml_frame("process_one_work+0x230/0x550"),
                ],
                pid,
            ),
        ]
    )


def sleep_in_atomic(pid: int = 61) -> str:
    """kernel/sched/core.c __might_resched()."""
    return "\n".join(
        [
            "BUG: sleeping function called from invalid context at kernel/locking/mutex.c:283",
            f"in_atomic(): 1, irqs_disabled(): 0, non_block: 0, pid: {pid}, name: cat",
            "preempt_count: 1, expected: 0",
            "RCU nest depth: 0, expected: 0",
            "1 lock held by cat/61:",
            " #0: 000000006a1b2e50 (&foo->spin){+.+.}-{2:2}, at: foo_read_alarm+0x22/0x100",
            "Preemption disabled at:",
            "[<0000000070001234>] foo_read_alarm+0x22/0x100 [rtc_foo]",
            uml_dump_stack(
                [
                    uml_frame("dump_stack_lvl+0x5c/0x80"),
                    uml_frame("__might_resched+0x1b5/0x250"),
                    uml_frame("mutex_lock_nested+0x1a/0x30"),
                    uml_frame("foo_xfer+0x2e/0xc0", "rtc_foo"),
                    uml_frame("foo_read_alarm+0x4a/0x100", "rtc_foo"),
                    uml_frame("rtc_read_alarm+0x7e/0x120"),
                ],
                pid,
            ),
        ]
    )


def test_kasan_report_kind_title_and_signature() -> None:
    lines = ["roadtest: bind rtc-foo 0x51", *console(kasan()), "roadtest: unbind"]
    (found,) = findings(lines, MODULE)
    assert found.kind is Kind.KASAN
    assert found.title == "BUG: KASAN: slab-out-of-bounds in foo_read_time+0x1a/0x80 [rtc_foo]"
    # Only the module's frames, from the call trace (not the allocation stack's foo_probe
    # below it... which is in the call trace too, third), the unreliable i2c frame dropped.
    assert (
        found.signature == "kasan: slab-out-of-bounds in foo_read_time < foo_get_time < foo_probe"
    )
    # The report runs from the headline to the closing line, nothing of ours in it.
    assert "BUG: KASAN: slab-out-of-bounds" in found.report.splitlines()[0]
    assert found.report.splitlines()[-1].endswith("=" * 66)
    assert "Allocated by task 57:" in found.report
    assert "roadtest:" not in found.report


def test_the_same_bug_elsewhere_has_the_same_signature() -> None:
    first = findings(console(kasan()), MODULE)
    again = findings(console(kasan(addr=0x62FF0010, off=0x1E, pid=203), start=400.5), MODULE)
    assert first[0].signature == again[0].signature
    assert first[0].title != again[0].title  # the offset differs


def test_other_functions_or_kinds_have_other_signatures() -> None:
    base = findings(console(kasan()), MODULE)[0].signature
    assert findings(console(kasan(func="foo_read_alarm")), MODULE)[0].signature != base
    assert findings(console(kasan(caller="foo_irq")), MODULE)[0].signature != base
    assert findings(console(kasan(bug="use-after-free")), MODULE)[0].signature != base


def test_module_names_with_dashes_or_underscores_are_one() -> None:
    dashes = findings(console(kasan()), {"rtc-foo"})[0].signature
    assert findings(console(kasan()), {"rtc_foo"})[0].signature == dashes


def test_without_frames_in_the_module_the_top_non_generic_frames_sign() -> None:
    (found,) = findings(console(kasan()), {"other_driver"})
    # dump_stack_lvl, print_report, kasan_report, __asan_load1 are the report's own.
    assert (
        found.signature
        == "kasan: slab-out-of-bounds in foo_read_time < foo_get_time < __rtc_read_time"
    )


def test_ubsan() -> None:
    (found,) = findings(console(ubsan()), MODULE)
    assert found.kind is Kind.UBSAN
    assert found.title == "UBSAN: shift-out-of-bounds in drivers/rtc/rtc-foo.c:211:23"
    assert found.signature == "ubsan: shift-out-of-bounds in foo_set_alarm"
    assert found.report.splitlines()[-1].endswith("---[ end trace ]---")
    other = findings(console(ubsan("array-index-out-of-bounds")), MODULE)[0]
    assert other.signature == "ubsan: array-index-out-of-bounds in foo_set_alarm"


def test_warn_names_the_function_that_warned_and_the_drivers_frames() -> None:
    (found,) = findings(console(x86_warn()), MODULE)
    assert found.kind is Kind.WARNING
    assert found.title.startswith("WARNING: CPU: 1 PID: 88 at drivers/base/devres.c:720")
    assert found.signature == "warning: devm_remove_action in foo_remove"
    assert found.report.splitlines()[-1].endswith("---[ end trace 0000000000000000 ]---")
    moved = findings(console(x86_warn(rip_off=0x61)), MODULE)[0]
    assert moved.signature == found.signature
    assert findings(console(x86_warn(func="foo_shutdown")), MODULE)[0].signature != found.signature


def test_uml_warn_from_dump_stack() -> None:
    text = "\n".join(
        [
            "------------[ cut here ]------------",
            "WARNING: CPU: 0 PID: 40 at drivers/rtc/rtc-foo.c:99 foo_probe+0x1c0/0x300 [rtc_foo]",
            "Modules linked in: rtc_foo",
            uml_dump_stack(
                [
                    uml_frame("dump_stack_lvl+0x5c/0x80"),
                    uml_frame("__warn+0xd9/0x1a0"),
                    uml_frame("warn_slowpath_fmt+0x9c/0x190"),
                    uml_frame("foo_probe+0x1c0/0x300", "rtc_foo"),
                    uml_frame("i2c_device_probe+0x2f0/0x5a0"),
                ]
            ),
            "---[ end trace 0000000000000000 ]---",
        ]
    )
    (found,) = findings(console(text), MODULE)
    assert found.signature == "warning: foo_probe in foo_probe"


def test_lockdep_signs_with_the_backtrace_not_the_dependency_chain() -> None:
    lines = console(lockdep_circular() + "\nrtc rtc0: alarm read")
    (found,) = findings(lines, MODULE)
    assert found.kind is Kind.LOCKDEP
    assert found.title == "WARNING: possible circular locking dependency detected"
    assert (
        found.signature == "lockdep: possible circular locking dependency detected in foo_irq_work"
    )
    # It ends with its call trace: the line after is not part of it.
    assert "alarm read" not in found.report
    assert found.report.splitlines()[-1].endswith("process_one_work+0x230/0x550")
    assert findings(console(lockdep_circular(pid=4)), MODULE)[0].signature == found.signature


def test_lockdep_headlines_lose_their_task_and_pid() -> None:
    def held(task: str) -> str:
        return "\n".join(
            [
                "====================================",
                f"WARNING: {task} still has locks held!",
                "6.12.118 #1 Not tainted",
                "------------------------------------",
                "stack backtrace:",
                uml_dump_stack([uml_frame("foo_remove+0x40/0x90", "rtc_foo")]),
            ]
        )

    first = findings(console(held("rmmod/77")), MODULE)[0]
    second = findings(console(held("kworker/0:2/301")), MODULE)[0]
    assert first.kind is Kind.LOCKDEP
    assert (
        first.signature == second.signature == "lockdep: <task> still has locks held in foo_remove"
    )


def test_sleep_in_atomic() -> None:
    (found,) = findings(console(sleep_in_atomic()), MODULE)
    assert found.kind is Kind.ATOMIC_SLEEP
    assert found.title.startswith("BUG: sleeping function called from invalid context at ")
    assert found.signature == (
        "sleep-in-atomic: sleeping function called from invalid context"
        " in foo_xfer < foo_read_alarm"
    )
    assert findings(console(sleep_in_atomic(pid=999)), MODULE)[0].signature == found.signature


def test_scheduling_while_atomic_is_another_subject() -> None:
    text = "\n".join(
        [
            "BUG: scheduling while atomic: cat/61/0x00000002",
            "Modules linked in: rtc_foo",
            uml_dump_stack(
                [uml_frame("__schedule_bug+0x80/0xa0"), uml_frame("foo_xfer+0x2e/0xc0", "rtc_foo")]
            ),
        ]
    )
    (found,) = findings(console(text), MODULE)
    assert found.kind is Kind.ATOMIC_SLEEP
    assert found.signature == "sleep-in-atomic: scheduling while atomic in foo_xfer"


def test_hung_task() -> None:
    def hung(task: str, pid: int) -> str:
        return "\n".join(
            [
                f"INFO: task {task}:{pid} blocked for more than 120 seconds.",
                "      Not tainted 6.12.118 #1",
                '"echo 0 > /proc/sys/kernel/hung_task_timeout_secs" disables this message.',
                f"task:{task:<15} state:D stack:0     pid:{pid:<5} tgid:{pid:<5} ppid:1 "
                "flags:0x00000000",
                uml_dump_stack(
                    [
                        uml_frame("__schedule+0x3a1/0x9f0"),
                        uml_frame("schedule+0x4c/0x110"),
                        uml_frame("schedule_timeout+0x1a5/0x1f0"),
                        uml_frame("wait_for_completion_timeout+0xd0/0x180"),
                        uml_frame("foo_wait_ready+0x61/0xf0", "rtc_foo"),
                        uml_frame("foo_probe+0x120/0x300", "rtc_foo"),
                    ],
                    pid,
                ),
                "",
                "Showing all locks held in the system:",
            ]
        )

    (found,) = findings(console(hung("modprobe", 57)), MODULE)
    assert found.kind is Kind.HANG
    assert found.signature == "hang: blocked task in foo_wait_ready < foo_probe"
    assert "Showing all locks" not in found.report
    assert findings(console(hung("udevd", 812)), MODULE)[0].signature == found.signature


def test_two_reports_in_one_log_and_unrelated_lines_between() -> None:
    text = "\n".join(
        [
            "rtc-foo 0-0051: registered as rtc0",
            kasan(),
            "Disabling lock debugging due to kernel taint",
            "rtc-foo 0-0051: alarm irq 3",
            ubsan(),
            "i2c i2c-0: new_device: Instantiated device foo at 0x51",
        ]
    )
    found = findings(console(text), MODULE)
    assert [f.kind for f in found] == [Kind.KASAN, Kind.UBSAN]
    assert "Disabling lock debugging" not in found[0].report + found[1].report
    assert "new_device" not in found[1].report
    assert (
        findings(console("rtc-foo 0-0051: registered as rtc0\nEXT4-fs (ubda): mounted"), MODULE)
        == []
    )


def test_a_new_headline_ends_a_report_without_its_closing_line() -> None:
    cut = kasan().splitlines()[:12]  # the guest lost the rest
    found = findings(console("\n".join([*cut, sleep_in_atomic()])), MODULE)
    assert [f.kind for f in found] == [Kind.KASAN, Kind.ATOMIC_SLEEP]
    assert "sleeping function" not in found[0].report


def test_log_levels_and_caller_ids_are_tolerated() -> None:
    lines = [f"<3>[   12.000001][   T57] {line}" for line in kasan().splitlines()]
    (found,) = findings(lines, MODULE)
    assert found.title.startswith("BUG: KASAN: slab-out-of-bounds in foo_read_time")
    assert found.signature == findings(console(kasan()), MODULE)[0].signature


def test_x86_oops_is_one_report_with_the_faulting_function_first() -> None:
    text = "\n".join(
        [
            "BUG: kernel NULL pointer dereference, address: 0000000000000010",
            "#PF: supervisor read access in kernel mode",
            "#PF: error_code(0x0000) - not-present page",
            "Oops: Oops: 0000 [#1] PREEMPT SMP KASAN NOPTI",
            "CPU: 0 UID: 0 PID: 57 Comm: modprobe Not tainted 6.12.118 #1",
            "RIP: 0010:foo_parse_alarm+0x1d/0x70 [rtc_foo]",
            "RSP: 0018:ffffc90000177b10 EFLAGS: 00010246",
            "Call Trace:",
            " <TASK>",
            " ? __die+0x23/0x70",
            " ? page_fault_oops+0x9c/0x1f0",
            " foo_read_alarm+0x55/0x100 [rtc_foo]",
            " rtc_read_alarm+0x7e/0x120",
            " </TASK>",
            "Modules linked in: rtc_foo",
            "CR2: 0000000000000010",
            "---[ end trace 0000000000000000 ]---",
            "RIP: 0010:foo_parse_alarm+0x1d/0x70 [rtc_foo]",
            "Kernel panic - not syncing: Fatal exception",
            "---[ end Kernel panic - not syncing: Fatal exception ]---",
        ]
    )
    (found,) = findings(console(text), MODULE)
    assert found.kind is Kind.BUG
    assert found.title == "BUG: kernel NULL pointer dereference, address: 0000000000000010"
    assert (
        found.signature
        == "bug: kernel NULL pointer dereference in foo_parse_alarm < foo_read_alarm"
    )
    assert "Kernel panic - not syncing: Fatal exception" in found.report  # its consequence


def test_uml_bug_takes_its_frames_from_the_panic_it_causes() -> None:
    text = "\n".join(
        [
            "BUG: failure at drivers/rtc/rtc-foo.c:140/foo_set_time()!",
            "Kernel panic - not syncing: BUG!",
            uml_dump_stack(
                [
                    uml_frame("dump_stack_lvl+0x5c/0x80"),
                    uml_frame("panic+0x1c8/0x450"),
                    uml_frame("foo_set_time+0x1b0/0x1c0", "rtc_foo"),
                    uml_frame("rtc_set_time+0xb2/0x230"),
                ]
            ),
            "---[ end Kernel panic - not syncing: BUG! ]---",
        ]
    )
    (found,) = findings(console(text), MODULE)
    assert found.kind is Kind.BUG
    assert found.signature == "bug: kernel BUG at drivers/rtc/rtc-foo.c in foo_set_time"
    assert found.report.splitlines()[-1].endswith("---[ end Kernel panic - not syncing: BUG! ]---")


def test_panic_on_warn_is_part_of_the_warning() -> None:
    text = "\n".join([kasan(), "Kernel panic - not syncing: KASAN: panic_on_warn set ..."])
    (found,) = findings(console(text), MODULE)
    assert found.kind is Kind.KASAN
    assert "panic_on_warn" in found.report


def uml_kernel_fault(ip: int = 0x70001234, addr: int = 0x10) -> str:
    """arch/um/kernel/trap.c segv(): show_regs() (arch/x86/um/sysrq_64.c), then panic()."""
    return "\n".join(
        [
            "",
            "Modules linked in: rtc_foo",
            "Pid: 57, comm: modprobe Not tainted 6.12.118",
            "RIP: 0033:foo_parse_alarm+0x1d/0x70 [rtc_foo]",
            "RSP: 00000000a0c0fb40  EFLAGS: 00010246",
            f"Kernel panic - not syncing: Kernel mode fault at addr 0x{addr:x}, ip 0x{ip:x}",
            uml_dump_stack(
                [
                    uml_frame("dump_stack_lvl+0x5c/0x80"),
                    uml_frame("panic+0x1c8/0x450"),
                    uml_frame("segv+0x2f1/0x470"),
                    uml_frame("segv_handler+0x8a/0xb0"),
                ]
            ),
            f"---[ end Kernel panic - not syncing: Kernel mode fault at addr 0x{addr:x}, "
            f"ip 0x{ip:x} ]---",
        ]
    )


def test_uml_kernel_mode_fault_is_a_panic_signed_by_the_faulting_function() -> None:
    (found,) = findings(console(uml_kernel_fault()), MODULE)
    assert found.kind is Kind.PANIC
    assert (
        found.title == "Kernel panic - not syncing: Kernel mode fault at addr 0x10, ip 0x70001234"
    )
    assert found.signature == (
        "panic: Kernel mode fault at addr <addr>, ip <addr> in foo_parse_alarm"
    )
    again = findings(console(uml_kernel_fault(ip=0x70009999, addr=0x18)), MODULE)[0]
    assert again.signature == found.signature


def test_spinlock_debugging_and_other_bugs() -> None:
    text = "\n".join(
        [
            "BUG: spinlock already unlocked on CPU#0, cat/61",
            " lock: 0x6a1b2e50, .magic: dead4ead, .owner: <none>/-1, .owner_cpu: -1",
            uml_dump_stack(
                [uml_frame("spin_dump+0x7c/0xa0"), uml_frame("foo_irq+0x30/0x80", "rtc_foo")]
            ),
            "BUG: Bad rss-counter state mm:000000006a1b0000 type:MM_ANONPAGES val:1 "
            "Comm:cat Pid:61",
        ]
    )
    spin, other = findings(console(text), MODULE)
    assert spin.kind is Kind.LOCKDEP
    assert spin.signature == "lockdep: spinlock already unlocked in foo_irq"
    assert other.kind is Kind.BUG
    assert other.signature == "bug: Bad rss-counter state mm in [rtc_foo]"


def kmemleak(addr: int = 0x6A1B2C00, crc: int = 0x1F2E3D4C, alloc: str = "foo_probe") -> str:
    """mm/kmemleak.c print_unreferenced(), as roadtest.testing.kmemleak.reports() keeps it."""
    return "\n".join(
        [
            f"unreferenced object 0x{addr:08x} (size 64):",
            '  comm "modprobe", pid 57, jiffies 4294937611',
            "  hex dump (first 32 bytes):",
            "    00 00 00 00 00 00 00 00 01 00 00 00 00 00 00 00  ................",
            "    6b 6b 6b 6b 6b 6b 6b 6b 6b 6b 6b 6b 6b 6b 6b a5  kkkkkkkkkkkkkkk.",
            f"  backtrace (crc {crc:x}):",
            "    kmemleak_alloc+0x4e/0x90",
            "    __kmalloc_cache_noprof+0x2a3/0x3e0",
            f"    {alloc}+0x9e/0x300 [rtc_foo]",
            "    i2c_device_probe+0x2f0/0x5a0",
            "    really_probe+0x1c6/0x410",
        ]
    )


def test_kmemleak_leaks_are_signed_by_the_allocating_module_frames() -> None:
    (found,) = leak_findings([kmemleak()], MODULE)
    assert found.kind is Kind.LEAK
    assert found.title == "unreferenced object 0x6a1b2c00 (size 64):"
    assert found.signature == "leak in foo_probe"
    (again,) = leak_findings([kmemleak(addr=0x6A990000, crc=0x77)], MODULE)
    assert again.signature == found.signature
    (other,) = leak_findings([kmemleak(alloc="foo_setup_irq")], MODULE)
    assert other.signature != found.signature


def test_kmemleak_without_module_frames_skips_the_allocator() -> None:
    (found,) = leak_findings([kmemleak()], {"other"})
    assert found.signature == "leak in foo_probe < i2c_device_probe < really_probe"


def test_kmemleak_bookkeeping_frames_are_skipped_too() -> None:
    # With stack depot off, kmemleak records its own allocation's trace: its frames, and
    # SLUB debug's, come above the allocation it records (mm/kmemleak.c __create_object).
    bookkeeping = "\n".join(
        f"    {f}+0x10/0x20"
        for f in ("save_stack_trace", "stack_trace_save", "set_track_prepare", "__alloc_object")
    )
    report = kmemleak().replace("    kmemleak_alloc+", bookkeeping + "\n    kmemleak_alloc+")
    (found,) = leak_findings([report], {"other"})
    assert found.signature == "leak in foo_probe < i2c_device_probe < really_probe"


def test_a_report_without_any_trace_is_signed_by_the_driver_swept() -> None:
    # arch/um/kernel/trap.c relay_signal(): a kernel-mode SIGFPE panics with no trace.
    lines = console("Kernel panic - not syncing: Kernel mode signal 8\n")
    (one,) = findings(lines, {"rtc-foo"})
    (other,) = findings(lines, {"rtc-bar"})
    assert one.kind is Kind.PANIC
    assert one.signature != other.signature
    assert "[rtc_foo]" in one.signature


def test_distinct_keeps_the_first_of_each_signature() -> None:
    many = [
        *findings(console(kasan()), MODULE),
        *findings(console(ubsan()), MODULE),
        *findings(console(kasan(addr=0x62000000, pid=8)), MODULE),
    ]
    kept = distinct(many)
    assert [f.kind for f in kept] == [Kind.KASAN, Kind.UBSAN]
    assert kept[0] is many[0]


def test_guest_died_in_a_panic() -> None:
    lines = console("rtc-foo 0-0051: probing\n" + uml_kernel_fault())
    found = guest_died("the guest exited", lines, MODULE)
    assert found.kind is Kind.PANIC
    assert found.title.startswith("Kernel panic - not syncing: Kernel mode fault")
    assert found.signature == findings(lines, MODULE)[0].signature


def test_guest_died_of_a_panic_another_report_caused_takes_its_frames() -> None:
    lines = console(kasan() + "\nKernel panic - not syncing: KASAN: panic_on_warn set ...")
    found = guest_died("the guest exited", lines, MODULE)
    assert found.kind is Kind.PANIC
    assert found.signature == (
        "panic: KASAN: panic_on_warn set in foo_read_time < foo_get_time < foo_probe"
    )


def test_guest_that_stopped_answering_is_a_hang() -> None:
    found = guest_died(
        "no answer from the agent for 30 s", console("rtc-foo 0-0051: probing"), MODULE
    )
    assert found.kind is Kind.HANG
    assert found.title == "no answer from the agent for 30 s"
    assert found.signature == "hang: no answer from the agent for <n> s in [rtc_foo]"
    # A call trace among the last lines signs it.
    stuck = console(
        "\n".join(
            [
                "BUG: soft lockup - CPU#0 stuck for 26s! [modprobe:57]",
                uml_dump_stack([uml_frame("foo_wait_ready+0x61/0xf0", "rtc_foo")]),
            ]
        )
    )
    hang = guest_died("no answer from the agent for 30 s", stuck, MODULE)
    assert hang.signature == "hang: no answer from the agent for <n> s in foo_wait_ready"
    assert findings(stuck, MODULE)[0].signature == "hang: soft lockup in foo_wait_ready"


def test_a_request_that_outlived_its_limit_is_a_guest_that_stopped_answering() -> None:
    """A driver blocked in a call leaves the agent's request unanswered (AgentTimeout): a
    hang, not a death; a broken channel (the guest gone) is a death."""
    from roadtest.guest.client import AgentTimeout
    from roadtest.guest.protocol import ProtocolError
    from roadtest.sweep.runner import _reason

    assert _reason(AgentTimeout("agent did not answer within 30 s")) == (
        "the guest stopped answering"
    )
    assert _reason(ProtocolError("connection closed by peer")) == "the guest died"


KALLSYMS = "\n".join(
    [
        "0000000060001000 T _stext",
        "0000000070a01000 t foo_setup\t[rtc_foo]",
        "0000000070a01200 t foo_probe\t[rtc_foo]",
        "0000000070a01500 d foo_data\t[rtc_foo]",
        "0000000070b00000 t bar_probe\t[rtc_bar]",
    ]
)


def test_a_removed_modules_bare_frames_are_named_from_kallsyms_read_before() -> None:
    symbols = ModuleSymbols.parse(KALLSYMS, MODULE)
    # The kernel's own symbols and other modules' are not kept; data symbols neither.
    assert [entry[1] for entry in symbols.symbols] == ["foo_setup", "foo_probe"]
    assert symbols.name(0x70A0129E) == "foo_probe+0x9e/0x10000 [rtc_foo]"
    assert symbols.name(0x70A01010) == "foo_setup+0x10/0x200 [rtc_foo]"
    assert symbols.name(0x70B00010) is None  # past foo_probe's reach
    assert symbols.name(0x60001000) is None
    report = kmemleak().replace("    foo_probe+0x9e/0x300 [rtc_foo]", "    0x70a0129e")
    named = symbols.symbolise(report)
    assert "    foo_probe+0x9e/0x10000 [rtc_foo]" in named.splitlines()
    (found,) = leak_findings([named], MODULE)
    assert found.signature == leak_findings([kmemleak()], MODULE)[0].signature
    # Unnamed, the leak would be signed by the first frame past it.
    (unnamed,) = leak_findings([report], MODULE)
    assert unnamed.signature == "leak in i2c_device_probe < really_probe"
