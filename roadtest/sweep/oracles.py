"""What the guest kernel printed during one driver's sweep, turned into findings.

Recognised reports, by the headline each starts with (the format strings are those of the
kernel tree's files named here):

- KASAN: "BUG: KASAN: <bug type> in <function>" (mm/kasan/report.c), to its closing
  "=====" line;
- UBSAN: "UBSAN: <check> in <file>:<line>:<column>" (lib/ubsan.c), to "---[ end trace ]---"
  (or the "=====" line of older kernels);
- WARN: "WARNING: CPU: <n> PID: <n> at [<file>:<line> ]<function>" (kernel/panic.c
  __warn()), to "---[ end trace <n> ]---";
- oopses: "BUG: unable to handle page fault", "BUG: kernel NULL pointer dereference"
  (arch/x86/mm/fault.c), "kernel BUG at <file>:<line>!" (lib/bug.c), "Oops: <what>: ..."
  and "general protection fault" (arch/x86/kernel/dumpstack.c, traps.c), to "---[ end
  trace"; UML's BUG(), "BUG: failure at <file>:<line>/<function>()!"
  (include/asm-generic/bug.h), which panics ("BUG!") right after;
- lockdep: the "WARNING: <what>" headlines of kernel/locking/lockdep.c that name a lock,
  locking or RCU ("possible circular locking dependency detected", "inconsistent lock
  state", "suspicious RCU usage", ...) and "[ BUG: Invalid wait context ]"; spinlock
  debugging's "BUG: spinlock <what> on CPU#<n>" and "BUG: rwlock ..."
  (kernel/locking/spinlock_debug.c) count as lockdep too: a locking bug;
- sleeping in atomic context: "BUG: sleeping function called from invalid context at"
  (kernel/sched/core.c __might_resched()), "BUG: scheduling while atomic",
  "BUG: scheduling in a non-blocking section" (__schedule_bug() and friends);
- hangs: "INFO: task <comm>:<pid> blocked for more than <n> seconds." (kernel/hung_task.c),
  "BUG: soft lockup - CPU#<n> stuck" (kernel/watchdog.c), "rcu: INFO: <rcu> detected stalls"
  and "self-detected stall" (kernel/rcu/tree_stall.h), "BUG: workqueue lockup"
  (kernel/workqueue.c);
- "Kernel panic - not syncing: <reason>" (kernel/panic.c), to "---[ end Kernel panic";
  a panic another report caused (panic_on_warn, "Fatal exception", UML's "BUG!", the
  hung-task panic) is part of that report, not a finding of its own;
- any other "BUG: <what>" line, as a BUG.
Reports without a closing line (lockdep, sleeping in atomic, hangs, spinlock, other BUGs)
end with their call trace: the first line after its frames that is not one.
kmemleak's reports (mm/kmemleak.c print_unreferenced()) come separately, as
roadtest/testing/kmemleak.py returns them.

A finding's signature is its kind, its subject (the bug type, the check, the function that
warned, ...) and the top frames of its call trace that are in the driver's module: the
same bug seen twice (other addresses, offsets, pids, times) has one signature.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass, field

from roadtest.sweep.outcome import Finding, Kind

TOP_FRAMES = 3  # frames in a signature
# A report that never reaches its end (the guest died mid-report, a trace lost) stops
# swallowing lines here; lockdep's longest reports are about 100 lines.
_MAX_REPORT_LINES = 400
# guest_died() looks at this many last lines for a panic or a call trace.
_LAST_LINES = 200
_HANG_LAST_LINES = 50

# A console line's prefixes: a log level ("<4>"), printk's timestamp ("[    1.234567]"),
# and CONFIG_PRINTK_CALLER's "[    T1]" / "[     C0]", in whichever order and number.
_PREFIX = re.compile(r"^(?:<\d>|\[\s*\d+\.\d+\]\s?|\[\s*[TC]\d+\]\s?)+")
_OURS = "roadtest:"  # roadtest's own marker lines: never part of a report

# A stack frame as dump_stack() prints it: UML's " [<6004a1b2>] ? foo+0x1a/0x2c [mod]"
# (arch/um/kernel/sysrq.c), x86's " ? foo+0x1a/0x2c [mod]" (%pBb: "[mod <build id>]"), and
# the bare "foo+0x1a/0x2c" of stack_trace_print() and kmemleak.
_FRAME = re.compile(
    r"^(?:\[<[0-9a-f]+>\]\s*)?(?P<unreliable>\?\s+)?(?P<func>[A-Za-z_$][\w.$]*)"
    r"\+0x[0-9a-f]+/0x[0-9a-f]+(?:\s+\[(?P<module>[\w-]+)(?:\s+[0-9a-f]+)?\])?$"
)
# show_regs()' instruction pointer, x86 ("RIP: 0010:foo+0x1/0x2 [mod]") and UML x86_64.
_RIP = re.compile(
    r"^RIP: [0-9a-f]{4}:(?P<func>[A-Za-z_$][\w.$]*)\+0x[0-9a-f]+/0x[0-9a-f]+"
    r"(?:\s+\[(?P<module>[\w-]+)(?:\s+[0-9a-f]+)?\])?"
)
_CALL_TRACE = re.compile(r"^Call Trace:")
# Lines a call trace may hold besides frames: x86's context brackets.
_TRACE_BRACKET = re.compile(r"^</?(?:TASK|IRQ|NMI|SOFTIRQ|#\w+)>$")

# Frames that say where the report was printed from, not where the bug is: reporting,
# sanitizer and lockdep internals, the lock and scheduler primitives a hang or a lockdep
# report stops in, panic(). Used only when no frame is in the driver's module.
_GENERIC_FRAME = re.compile(
    r"^(?:dump_stack\w*|show_stack|show_regs|sched_show_task|__warn\w*|warn_slowpath\w*"
    r"|report_bug|handle_bug|\w*exc_invalid_op|_*kasan\w*|__asan\w*|print_report"
    r"|end_report|check_region_inline|_*ubsan\w*|check_panic_on_warn|lock_acquire\w*|lock_release|lock_contended"
    r"|lock_acquired|__lock_acquire|lockdep_\w+|validate_chain|check_prevs?_add"
    r"|check_noncircular|check_deadlock|print_\w+|debug_\w+|__might_\w+|___might_sleep"
    r"|might_\w+|spin_dump|spin_bug|do_raw_\w+|_raw_\w+|__?mutex_lock\w*|mutex_lock\w*"
    r"|down\w*|__schedule\w*|schedule\w*|__switch_to|context_switch|panic|vpanic"
    r"|_?printk\w*|vprintk\w*|__pfx_\w+)$"
)
# The allocator's own frames in a kmemleak backtrace (mm/slub.c, mm/util.c, mm/vmalloc.c).
_ALLOCATOR_FRAME = re.compile(
    r"^(?:kmemleak_\w+|__?kmalloc\w*|kmalloc\w*|__?kmem_cache\w*|kmem_cache\w*|_*slab_\w+"
    r"|kzalloc\w*|__?kvmalloc\w*|kvzalloc\w*|krealloc\w*|kmemdup\w*|kstrdup\w*"
    r"|devm_kmalloc|devm_kzalloc|devm_krealloc|__?vmalloc\w*|vzalloc\w*|__?alloc_pages\w*"
    r"|mempool_\w+|__do_kmalloc\w*|alloc_slab_obj_exts"
    # kmemleak's and SLUB debug's own bookkeeping, under the allocation it records.
    r"|save_stack_trace\w*|stack_trace_save\w*|set_track_\w+|_*alloc_object|_*create_object\w*)$"
)


def _same(match: re.Match[str]) -> str:
    return match.group("subject")


def _fixed(subject: str) -> Callable[[re.Match[str]], str]:
    return lambda _match: subject


def _normalised(match: re.Match[str]) -> str:
    return _normalise(match.group("subject"))


def _function(match: re.Match[str]) -> str:
    return _bare(match.group("subject"))


@dataclass(frozen=True)
class _Headline:
    pattern: re.Pattern[str]
    kind: Kind
    subject: Callable[[re.Match[str]], str]
    # The line that closes the report (kept in it); None: the report ends with its trace.
    end: re.Pattern[str] | None = None
    # An oops' own headline inside an oops already open continues it (the "Oops:" line
    # after "BUG: unable to handle page fault").
    oops: bool = False


_END_TRACE = re.compile(r"^---\[ end trace")
_END_PANIC = re.compile(r"^---\[ end Kernel panic")
_PANIC = re.compile(r"^Kernel panic - not syncing: (?P<subject>.*)$")
# Panics that only finish another report (kernel/panic.c check_panic_on_warn(), x86
# oops_end()'s "Fatal exception", asm-generic BUG(), kernel/hung_task.c, kernel/watchdog.c,
# mm/kasan/report.c).
_CONSEQUENCE = re.compile(
    r"panic_on_warn set|^Fatal exception|^BUG!$|^hung_task: blocked tasks"
    r"|^softlockup: hung tasks|kasan\.fault=panic|^RCU Stall"
)

# First match wins: the specific "BUG: ..." headlines before the generic one.
_HEADLINES: tuple[_Headline, ...] = (
    _Headline(
        re.compile(r"^BUG: KASAN: (?P<subject>[\w-]+)"), Kind.KASAN, _same, re.compile("^={10,}")
    ),
    _Headline(
        re.compile(r"^UBSAN: (?P<subject>[\w-]+) in "),
        Kind.UBSAN,
        _same,
        re.compile(r"^(?:---\[ end trace|={10,})"),
    ),
    _Headline(
        re.compile(
            r"^BUG: (?P<subject>sleeping function called from invalid context"
            r"|scheduling while atomic|scheduling in a non-blocking section)"
        ),
        Kind.ATOMIC_SLEEP,
        _same,
    ),
    _Headline(
        re.compile(r"^BUG: (?P<subject>(?:spinlock|rwlock) .+?) on CPU#"), Kind.LOCKDEP, _same
    ),
    _Headline(re.compile(r"^BUG: soft lockup - CPU#"), Kind.HANG, _fixed("soft lockup")),
    _Headline(re.compile(r"^BUG: workqueue lockup"), Kind.HANG, _fixed("workqueue lockup")),
    _Headline(
        re.compile(r"^BUG: failure at (?P<subject>\S+?):\d+/\w+\(\)!"),
        Kind.BUG,
        lambda m: f"kernel BUG at {m.group('subject')}",
    ),
    _Headline(
        re.compile(
            r"^BUG: (?P<subject>unable to handle page fault|kernel NULL pointer dereference)"
        ),
        Kind.BUG,
        _same,
        _END_TRACE,
        oops=True,
    ),
    _Headline(
        re.compile(r"^kernel BUG at (?P<subject>\S+?):\d+!"),
        Kind.BUG,
        lambda m: f"kernel BUG at {m.group('subject')}",
        _END_TRACE,
        oops=True,
    ),
    _Headline(
        re.compile(r"^(?:Oops: )?(?P<subject>general protection fault)"),
        Kind.BUG,
        _same,
        _END_TRACE,
        oops=True,
    ),
    _Headline(
        re.compile(r"^Oops: (?P<subject>.+?)(?:: [0-9a-f]{4} \[#\d+\].*|: \d+)?$"),
        Kind.BUG,
        _normalised,
        _END_TRACE,
        oops=True,
    ),
    _Headline(
        re.compile(r"^WARNING: CPU: \d+ PID: \d+ at (?:\S+:\d+ )?(?P<subject>\S+)"),
        Kind.WARNING,
        _function,
        _END_TRACE,
    ),
    _Headline(
        re.compile(r"^WARNING: (?P<subject>.*(?:lock|RCU|chain_key|contention).*)$"),
        Kind.LOCKDEP,
        _normalised,
    ),
    _Headline(re.compile(r"^\[ BUG: (?P<subject>.+?) \]$"), Kind.LOCKDEP, _normalised),
    _Headline(
        re.compile(r"^INFO: task .+:\d+ blocked for more than"), Kind.HANG, _fixed("blocked task")
    ),
    _Headline(
        re.compile(r"^(?:rcu: )?INFO: \S+ (?:detected stalls|self-detected stall)"),
        Kind.HANG,
        _fixed("rcu stall"),
    ),
    _Headline(_PANIC, Kind.PANIC, _normalised, _END_PANIC),
    _Headline(re.compile(r"^BUG: (?P<subject>.+?)(?::.*)?$"), Kind.BUG, _normalised),
)


@dataclass(frozen=True)
class _Frame:
    func: str
    module: str  # "" for built-in code
    reliable: bool


@dataclass
class _Report:
    headline: _Headline
    kind: Kind
    subject: str
    title: str
    lines: list[str] = field(default_factory=list)  # as printed
    text: list[str] = field(default_factory=list)  # without the console's prefixes
    seed: list[_Frame] = field(default_factory=list)  # show_regs()' RIP, before the trace
    trace: list[_Frame] = field(default_factory=list)  # the first call trace's frames
    in_trace: bool = False  # inside the first call trace
    trace_done: bool = False

    def add(self, line: str, text: str) -> None:
        self.lines.append(line)
        self.text.append(text)
        if self.trace_done:
            return
        if self.in_trace:
            frame = _frame(text)
            if frame is not None:
                self.trace.append(frame)
            elif not _TRACE_BRACKET.match(text) and self.trace:
                self.trace_done = True
        elif _CALL_TRACE.match(text):
            self.in_trace = True
        elif (rip := _rip(text)) is not None:
            self.seed.append(rip)

    def ends_before(self, text: str) -> bool:
        """Whether `text` is past the report: the first line after the frames of a report
        that ends with its call trace, or one too many."""
        if len(self.lines) >= _MAX_REPORT_LINES:
            return True
        past_trace = self.in_trace and bool(self.trace) and not self.trace_done
        return (
            self.headline.end is None
            and past_trace
            and _frame(text) is None
            and not _TRACE_BRACKET.match(text)
        )

    def frames(self) -> list[_Frame]:
        if self.trace:
            return self.seed + self.trace
        # No "Call Trace:" (kmemleak, a trace cut short): whatever frames it printed.
        found = [f for t in self.text if (f := _frame(t)) is not None]
        return self.seed + found

    def finding(self, modules: Collection[str]) -> Finding:
        return Finding(
            kind=self.kind,
            signature=_signature(self.kind, self.subject, _top(self.frames(), modules)),
            title=self.title,
            report="\n".join(self.lines),
        )


def findings(lines: Sequence[str], modules: Collection[str]) -> list[Finding]:
    """Every kernel report among the console `lines`, in order; `modules` are the driver's
    (their frames make the signatures)."""
    return [report.finding(modules) for report in _reports(lines)]


def _reports(lines: Iterable[str]) -> list[_Report]:
    done: list[_Report] = []
    current: _Report | None = None
    rip: _Frame | None = None  # the last show_regs() outside a report (UML's, before panic)

    def close() -> None:
        nonlocal current, rip
        if current is None:
            return
        report, current = current, None
        panic_match = _PANIC.match(report.title)
        if panic_match and _CONSEQUENCE.search(panic_match.group("subject")) and done:
            # The panic finishes the report before it: one finding, its frames if it
            # had none (UML's BUG() prints no trace before panicking).
            cause = done[-1]
            cause.lines.extend(report.lines)
            cause.text.extend(report.text)
            if not cause.trace:
                cause.trace = report.trace
        else:
            if report.kind is Kind.PANIC and rip is not None and not report.seed:
                report.seed.append(rip)
            done.append(report)
        rip = None

    for raw in lines:
        line = raw.rstrip("\r\n")
        text = _strip(line)
        if text.startswith(_OURS):
            continue
        if current is not None and current.ends_before(text):
            close()
        headline, match = _headline(text)
        if headline is not None and match is not None:
            continuing = current is not None and current.headline.oops and headline.oops
            if not continuing:
                close()
                current = _Report(headline, headline.kind, headline.subject(match), text)
        if current is None:
            if (found := _rip(text)) is not None:
                rip = found
            continue
        current.add(line, text)
        if current.headline.end is not None and current.headline.end.match(text):
            close()
    close()
    return done


# A module's text symbol in /proc/kallsyms: "ffffffffc0a01000 t foo_probe\t[rtc_foo]".
_KALLSYMS_TEXT = re.compile(r"^(?P<addr>[0-9a-f]+) [tT] (?P<name>\S+)\s+\[(?P<module>[\w-]+)\]$")
# A backtrace frame that %pS could not name: the address alone (its module was removed).
_BARE_FRAME = re.compile(r"^(?P<indent>\s*)0x(?P<addr>[0-9a-f]+)$")
_MAX_FUNCTION = 0x10000  # past a module's last symbol, an address this far off is not its


@dataclass(frozen=True)
class ModuleSymbols:
    """The text symbols of modules about to be removed, read from /proc/kallsyms while they
    are loaded: a report read after their removal names their frames by address alone."""

    symbols: tuple[tuple[int, str, str], ...]  # (address, function, module), by address

    @classmethod
    def parse(cls, kallsyms: str, modules: Collection[str]) -> ModuleSymbols:
        wanted = {m.replace("-", "_") for m in modules}  # as the kernel names them
        found = []
        for line in kallsyms.splitlines():
            match = _KALLSYMS_TEXT.match(line.strip())
            if match is not None and match.group("module") in wanted:
                found.append((int(match.group("addr"), 16), match.group("name"), match["module"]))
        return cls(tuple(sorted(found)))

    def name(self, addr: int) -> str | None:
        """`addr` as %pS would print it while its module was loaded ("foo+0x1a/0x0 [mod]":
        the function's size is not in kallsyms), or None if no module here holds it."""
        below = [entry for entry in self.symbols if entry[0] <= addr]
        if not below:
            return None
        start, function, module = below[-1]
        after = [entry[0] for entry in self.symbols if entry[0] > start and entry[2] == module]
        end = after[0] if after else start + _MAX_FUNCTION
        if addr >= end:
            return None
        return f"{function}+0x{addr - start:x}/0x{end - start:x} [{module}]"

    def symbolise(self, report: str) -> str:
        """`report` with each bare-address frame of these modules named."""
        lines = []
        for line in report.splitlines():
            match = _BARE_FRAME.match(line)
            named = self.name(int(match.group("addr"), 16)) if match is not None else None
            lines.append(line if named is None or match is None else match["indent"] + named)
        return "\n".join(lines)


def leak_findings(reports: Sequence[str], modules: Collection[str]) -> list[Finding]:
    """kmemleak's reports (roadtest.testing.kmemleak.reports()) as LEAK findings, signed
    by the allocation's frames in the driver's module, or else the first frames past the
    allocator's."""
    found = []
    for report in reports:
        lines = report.splitlines()
        frames: list[_Frame] = []
        in_backtrace = False
        for line in lines:
            text = _strip(line)
            if text.startswith("backtrace"):
                in_backtrace = True
            elif in_backtrace and (frame := _frame(text)) is not None:
                if not _ALLOCATOR_FRAME.match(frame.func):
                    frames.append(frame)
        found.append(
            Finding(
                kind=Kind.LEAK,
                signature=_signature(Kind.LEAK, "", _top(frames, modules)),
                title=_strip(lines[0]) if lines else "",
                report=report,
            )
        )
    return found


def distinct(found: Iterable[Finding]) -> list[Finding]:
    """One finding per signature, the first seen."""
    seen: dict[str, Finding] = {}
    for finding in found:
        seen.setdefault(finding.signature, finding)
    return list(seen.values())


def guest_died(reason: str, lines: Sequence[str], modules: Collection[str]) -> Finding:
    """The finding for a guest that died (a PANIC, when its last lines say "Kernel panic")
    or stopped answering (a HANG, `reason` saying how), signed by the panic's reason or
    `reason`, and the frames of the panic's trace (or of the last trace printed)."""
    last = list(lines[-_LAST_LINES:])
    texts = [_strip(line) for line in last]
    panics = [i for i, text in enumerate(texts) if _PANIC.match(text)]
    if panics:
        start = panics[-1]
        title = texts[start]
        match = _PANIC.match(title)
        assert match is not None
        subject = _normalise(match.group("subject"))
        reports = _reports(last)
        # The panic's own frames; for a panic another report caused, that report's.
        report = next((r for r in reversed(reports) if title in r.text), None)
        frames = report.frames() if report is not None else []
        text = "\n".join(report.lines if report is not None else last[start:])
        return Finding(
            Kind.PANIC, _signature(Kind.PANIC, subject, _top(frames, modules)), title, text
        )
    tail = last[-_HANG_LAST_LINES:]
    frames = _last_trace([_strip(line) for line in tail])
    subject = _normalise(reason)
    return Finding(
        Kind.HANG, _signature(Kind.HANG, subject, _top(frames, modules)), reason, "\n".join(tail)
    )


def _last_trace(texts: Sequence[str]) -> list[_Frame]:
    starts = [i for i, text in enumerate(texts) if _CALL_TRACE.match(text)]
    if not starts:
        return []
    frames = []
    for text in texts[starts[-1] + 1 :]:
        frame = _frame(text)
        if frame is not None:
            frames.append(frame)
        elif not _TRACE_BRACKET.match(text) and frames:
            break
    return frames


def _headline(text: str) -> tuple[_Headline | None, re.Match[str] | None]:
    for headline in _HEADLINES:
        match = headline.pattern.match(text)
        if match:
            return headline, match
    return None, None


def _strip(line: str) -> str:
    return _PREFIX.sub("", line.rstrip()).strip()


def _frame(text: str) -> _Frame | None:
    match = _FRAME.match(text)
    if match is None:
        return None
    return _Frame(
        _bare(match.group("func")), _module(match.group("module")), not match.group("unreliable")
    )


def _rip(text: str) -> _Frame | None:
    match = _RIP.match(text)
    if match is None:
        return None
    return _Frame(_bare(match.group("func")), _module(match.group("module")), True)


def _bare(func: str) -> str:
    """The function's name: no offset, no compiler suffix (.isra.0, .constprop.0, .cold)."""
    return func.split("+", 1)[0].split(".", 1)[0]


def _module(name: str | None) -> str:
    # Module names are printed with underscores; file names may have dashes.
    return (name or "").replace("-", "_")


def _top(frames: Sequence[_Frame], modules: Collection[str]) -> list[str]:
    """The signature's frames: the top ones in `modules`, else the top non-generic ones."""
    # A trace with reliable frames marks stale stack words "?"; UML without frame
    # pointers marks every frame so, and then they are all there is.
    if any(f.reliable for f in frames):
        frames = [f for f in frames if f.reliable]
    wanted = {_module(m) for m in modules}
    chosen = [f for f in frames if f.module in wanted]
    if not chosen:
        chosen = [f for f in frames if not _GENERIC_FRAME.match(f.func)]
    names: list[str] = []
    for frame in chosen:
        if frame.func not in names:
            names.append(frame.func)
        if len(names) == TOP_FRAMES:
            break
    if not names and wanted:
        # No trace at all (UML's "Kernel mode signal 8" panics without one): the report
        # is the driver's own, not one bug of every driver that hits it.
        names.append(f"[{sorted(wanted)[0]}]")
    return names


def _signature(kind: Kind, subject: str, frames: Sequence[str]) -> str:
    """ "kasan: slab-out-of-bounds in foo_read < foo_probe" (outcome.Finding.signature)."""
    head = f"{kind}: {subject}" if subject else str(kind)
    return f"{head} in {' < '.join(frames)}" if frames else head


def _normalise(text: str) -> str:
    """A headline's words without what changes from one occurrence to the next: tasks and
    pids ("kworker/0:1/23"), addresses, numbers."""
    text = re.sub(r"\S+/\d+\b", "<task>", text)
    text = re.sub(r"\b0x[0-9a-fA-F]+\b|\b[0-9a-f]{8,}\b", "<addr>", text)
    text = re.sub(r"\b\d+\b", "<n>", text)
    return text.strip().rstrip("!.:").strip()
