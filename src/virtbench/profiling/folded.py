"""``perf script`` output to folded stacks: one line ``comm;frame;...;leaf COUNT`` per stack.

Root first, as FlameGraph's ``stackcollapse-perf.pl`` writes them: the first frame is the
process name (comm), then the outermost caller down to the sampled function. Annotations the
analysis side relies on (docs/explain.md, "Capturing profiles"):

- a kernel frame (perf's DSO ``[kernel.kallsyms]`` or a kernel module ``[name]`` at a kernel
  address) ends with ``_[k]``;
- a guest frame (a DSO perf names ``[guest.kernel.kallsyms]``, ``[guest.kernel]``, ... for a
  sample taken while a virtual CPU ran guest code) ends with ``_[g]``;
- a frame perf could not resolve is ``[unknown]``, or the name of its module in brackets
  (``[libfoo.so]``) when perf knew the module but not the function; code in a JIT's anonymous
  memory (perf's DSO ``/tmp/perf-PID.map``: QEMU's TCG translation blocks, that is an emulated
  guest's code, or LuaJIT's traces) is ``[jit]``, without the process id, so that profiles of
  two processes (two runs' QEMUs) name it alike.

With ``perf script --show-task-events``, the process tree comes along: the FORK records perf
synthesised for the processes alive when it started (header ``0/0``) and those of the processes
forked while it recorded. :meth:`Folded.workload` picks the stacks of the processes forked, in
the recording, by a given process and by their descendants: a trial's workload.

Pure functions on text: the capture (``capture.py``) runs ``perf script``.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Collection, Iterable
from dataclasses import dataclass, field

__all__ = ["GUEST_LEAF_FIELDS", "PERF_SCRIPT_FIELDS", "Folded", "WorkloadStacks",
           "fold_perf_script", "folded_comm", "guest_leaves"]

PERF_SCRIPT_FIELDS = "comm,pid,tid,time,event,ip,sym,dso"
"""The ``perf script -F`` fields the capture asks for (header: ``comm pid/tid time: event:``;
no ``cpu``: a recording of some processes, not the whole machine, has none to print)."""
GUEST_LEAF_FIELDS = "comm,pid,tid,time,ip,sym,dso"
"""The fields of the second ``perf script`` pass over a KVM recording, with ``-G`` (no call
graph): each sample's own instruction pointer on its header line. The kernel records no call
chain for a sample taken in guest mode (its unwinders stop at once there: "We don't support
guest os callchain now"), so the first pass prints no frame for it; :func:`guest_leaves` gives
those samples their one frame, the guest function that ran."""

# "comm  pid/tid [cpu] [time:] event:" ([cpu], time only when asked for) -- comm may hold
# spaces and slashes ("CPU 0/KVM", "kworker/0:1"): it is everything before the first
# whitespace-led "pid/tid".
_HEADER = re.compile(r"^(?P<comm>.*?)\s+(?P<pid>-?\d+)/(?P<tid>-?\d+)\s"
                     r"(?:\s*(?:\[\d+\]\s+)?(?P<time>\d+\.\d+):)?")
# "\tADDR SYMBOL (DSO)": the symbol may itself hold spaces and parentheses (C++), the DSO is the
# last parenthesised group.
_FRAME = re.compile(r"^\s+(?P<addr>[0-9a-fA-F]+)\s+(?P<sym>.*?)\s+\((?P<dso>[^()]*)\)\s*$")
# "comm  pid/tid PERF_RECORD_FORK(child_pid:child_tid):(parent_pid:parent_tid)" (a time field,
# when asked for, before the record's name)
_TASK = re.compile(r"^(?P<comm>.*?)\s+(?P<pid>-?\d+)/(?P<tid>-?\d+)\s+(?:[\d.]+:\s+)?"
                   r"PERF_RECORD_(?P<kind>[A-Z_]+)(?P<rest>.*)$")
# "comm  pid/tid time:  ADDR SYMBOL (DSO)": a -G line of the second pass
_LEAF = re.compile(r"^(?P<comm>.*?)\s+(?P<pid>-?\d+)/(?P<tid>-?\d+)\s+(?P<time>\d+\.\d+):\s+"
                   r"(?P<addr>[0-9a-fA-F]+)\s+(?P<sym>.*?)\s+\((?P<dso>[^()]*)\)\s*$")
_FORK = re.compile(r"^\((?P<pid>\d+):(?P<tid>\d+)\):\((?P<ppid>\d+):(?P<ptid>\d+)\)")
_KERNEL_DSO = "[kernel.kallsyms]"
_PERF_MAP = re.compile(r"^/tmp/perf-\d+\.map$")
_KERNEL_ADDRESS = 0xFFFF_8000_0000_0000  # x86-64 and arm64: the upper half is the kernel's


@dataclass
class Folded:
    """Stacks counted, plus what the counting found about symbols."""

    stacks: Counter[str] = field(default_factory=Counter)
    samples: int = 0
    frames: int = 0
    unresolved_frames: int = 0
    unresolved_by_dso: Counter[str] = field(default_factory=Counter)
    """Unresolved frames per DSO (``[unknown]``: perf knew neither function nor module)."""
    pid_stacks: Counter[tuple[int, str]] = field(default_factory=Counter)
    """Samples per (process id, stack)."""
    forks: list[tuple[int, int]] = field(default_factory=list)
    """(parent, child) process ids of the processes forked while perf recorded (new threads
    and the records perf synthesised for processes alive at its start are left out)."""
    outside_window: int = 0
    """Samples left out because they were taken outside the window asked for."""
    guest_samples: int = 0
    """Samples whose leaf is a guest frame (``_[g]``): taken while a vCPU ran guest code."""

    def workload(self, root: int, exclude: Collection[int] = (),
                 serving: Collection[int] = ()) -> WorkloadStacks:
        """The stacks of the processes that ``root`` forked while perf recorded, and of their
        descendants (``exclude``: processes left out with their descendants; pid 0, the idle
        task, never counts). ``serving``: processes that count too, with what they forked
        while perf recorded (a lab's daemons, started before the trial)."""
        children: dict[int, list[int]] = {}
        for parent, child in self.forks:
            children.setdefault(parent, []).append(child)
        pids: set[int] = set()
        todo = [c for c in [*children.get(root, []), *serving] if c not in exclude]
        while todo:
            pid = todo.pop()
            if pid in pids or pid in exclude or pid in (0, root):
                continue
            pids.add(pid)
            todo.extend(children.get(pid, []))
        picked = WorkloadStacks(pids=pids)
        for (pid, stack), count in self.pid_stacks.items():
            if pid in pids:
                picked.stacks[stack] += count
                picked.comms.add(stack.split(";", 1)[0])
        return picked

    @property
    def unresolved_frames_pct(self) -> float:
        """Unresolved frames as a percentage of all frames (0 when there were none)."""
        return 100.0 * self.unresolved_frames / self.frames if self.frames else 0.0

    def text(self) -> str:
        """The folded lines, most frequent stack first (ties by name), newline-terminated."""
        ordered = sorted(self.stacks.items(), key=lambda item: (-item[1], item[0]))
        return "".join(f"{stack} {count}\n" for stack, count in ordered)


@dataclass
class WorkloadStacks:
    """A trial's workload in a recording: its processes, their names and stacks."""

    pids: set[int] = field(default_factory=set)
    comms: set[str] = field(default_factory=set)
    """the folded process names (first frames) of its samples"""
    stacks: Counter[str] = field(default_factory=Counter)

    @property
    def samples(self) -> int:
        return sum(self.stacks.values())

    def text(self) -> str:
        """Its folded lines, as :meth:`Folded.text` writes them."""
        ordered = sorted(self.stacks.items(), key=lambda item: (-item[1], item[0]))
        return "".join(f"{stack} {count}\n" for stack, count in ordered)


def folded_comm(comm: str) -> str:
    """A process or thread name as the first frame of a folded stack (``CPU 0/TCG`` →
    ``CPU_0/TCG``: no spaces or semicolons)."""
    return comm.replace(";", ":").replace(" ", "_")


def _frame_name(sym: str, dso: str, addr: int) -> tuple[str, bool]:
    """The folded name of one frame and whether perf resolved it."""
    unresolved = sym in ("", "[unknown]")
    guest = dso.startswith("[guest")
    kernel = not guest and (dso == _KERNEL_DSO or (dso.startswith("[") and addr >= _KERNEL_ADDRESS
                                                    and dso != "[unknown]"))
    if unresolved:
        if dso in ("", "[unknown]"):
            name = "[unknown]"
        elif dso.startswith("["):  # perf's own names: [kernel.kallsyms], [vdso], [guest.kernel]
            name = dso
        elif _PERF_MAP.match(dso):
            name = "[jit]"
        else:
            name = f"[{dso.rsplit('/', 1)[-1]}]"
    else:
        # ';' separates frames and ' ' ends the stack in the folded format
        name = sym.replace(";", ":").replace(" ", "_")
    if guest:
        name += "_[g]"
    elif kernel:
        name += "_[k]"
    return name, not unresolved


Leaf = tuple[str, str, int]
"""A sample's own frame: (symbol, DSO, address), as perf script prints it."""


def guest_leaves(lines: Iterable[str]) -> dict[tuple[int, str], Leaf]:
    """From ``perf script -G -F GUEST_LEAF_FIELDS`` output: (thread id, time as printed) →
    the sample's own frame, for the samples perf attributes to a guest (DSO ``[guest...]``)."""
    leaves: dict[tuple[int, str], Leaf] = {}
    for line in lines:
        found = _LEAF.match(line.rstrip("\n"))
        if found is not None and found["dso"].startswith("[guest"):
            leaves[(int(found["tid"]), found["time"])] = (found["sym"], found["dso"],
                                                          int(found["addr"], 16))
    return leaves


def fold_perf_script(lines: Iterable[str], window: tuple[float, float] | None = None,
                     leaves: dict[tuple[int, str], Leaf] | None = None) -> Folded:
    """Fold ``perf script -F PERF_SCRIPT_FIELDS`` output (samples separated by blank lines;
    within a sample the leaf frame first, as perf prints it). ``window``: keep only the
    samples whose time (perf's clock, seconds) is within it; a sample without a time is kept.
    Task events are read whatever their time: the process tree needs every fork.
    ``leaves``: :func:`guest_leaves` of the same recording, the one frame of each sample taken
    in guest mode, which the call-graph output prints none for."""
    reader = _ScriptReader(window, leaves or {})
    for raw in lines:
        line = raw.rstrip("\n")
        if not line.strip():
            reader.end_sample()
        elif not line.startswith("#"):
            reader.read_line(line)
    reader.end_sample()
    return reader.folded


class _ScriptReader:
    """The sample being read from perf script's output, added to ``folded`` when it ends."""

    def __init__(self, window: tuple[float, float] | None,
                 leaves: dict[tuple[int, str], Leaf]) -> None:
        self.folded = Folded()
        self.window = window
        self.leaves = leaves
        self.comm: str | None = None
        self.pid = -1
        self.tid = -1
        self.when: float | None = None
        self.when_text = ""
        # (folded name, DSO when perf did not resolve it)
        self.frames: list[tuple[str, str | None]] = []

    def read_line(self, line: str) -> None:
        """A frame of the current sample, a task event or a sample's header line."""
        frame = _FRAME.match(line) if line[0] in " \t" else None
        if frame is not None and self.comm is not None:
            addr = int(frame["addr"], 16)
            name, resolved = _frame_name(frame["sym"], frame["dso"], addr)
            self.frames.append((name, None if resolved else frame["dso"] or "[unknown]"))
            return
        task = _TASK.match(line)
        if task is not None:  # --show-task-events: one line, no call chain
            self.end_sample()
            fork = _FORK.match(task["rest"]) if task["kind"] == "FORK" else None
            # header 0/0: a record perf synthesised from /proc at its start, not a fork
            if fork is not None and int(task["pid"]) != 0 and fork["pid"] != fork["ppid"]:
                self.folded.forks.append((int(fork["ppid"]), int(fork["pid"])))
            return
        header = _HEADER.match(line)
        if header is not None:
            self.end_sample()  # a sample without call chain ends where the next header starts
            self.comm = header["comm"].strip() or "[unknown]"
            self.pid, self.tid = int(header["pid"]), int(header["tid"])
            self.when = float(header["time"]) if header["time"] else None
            self.when_text = header["time"] or ""

    def end_sample(self) -> None:
        """Add the sample read so far (unless outside the window) and start none."""
        comm, frames, when, window = self.comm, self.frames, self.when, self.window
        self.comm, self.frames = None, []
        if comm is None:
            return
        leaf = self.leaves.get((self.tid, self.when_text)) if not frames else None
        if leaf is not None:  # a guest-mode sample: no call chain, its own frame
            name, resolved = _frame_name(leaf[0], leaf[1], leaf[2])
            frames = [(name, None if resolved else leaf[1] or "[unknown]")]
        folded = self.folded
        if window is not None and when is not None and not window[0] <= when <= window[1]:
            folded.outside_window += 1
            return
        folded.samples += 1
        folded.frames += len(frames)
        if frames and frames[0][0].endswith("_[g]"):
            folded.guest_samples += 1
        for _, unresolved_dso in frames:
            if unresolved_dso is not None:
                folded.unresolved_frames += 1
                folded.unresolved_by_dso[unresolved_dso] += 1
        stack = ";".join([folded_comm(comm),
                          *(name for name, _ in reversed(frames))])
        folded.stacks[stack] += 1
        folded.pid_stacks[(self.pid, stack)] += 1
