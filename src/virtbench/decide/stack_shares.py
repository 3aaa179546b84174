"""Folded stacks (`profile.folded` artifacts): parsing, frame kinds, per-trial shares.

One line per distinct stack: ``frame;frame;...;leaf COUNT``, root first, the first frame the
process name, COUNT the number of samples with that stack (docs/explain.md). The text is stored
and never trusted: bytes that are not UTF-8 are replaced, lines without a count, with a count
that is not a whole number in [0, MAX_COUNT] or with no frame are skipped and counted, empty
frames (``a;;b``) are dropped, and frames and stacks are cut to bounded lengths. Nothing here
escapes: every output escapes stored text by its own rule.
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass, field
from enum import Enum

from virtbench.inputs.ascii_numbers import is_digits

__all__ = [
    "MAX_COUNT",
    "MAX_DEPTH",
    "MAX_FRAME_CHARS",
    "MAX_STACKS",
    "Frame",
    "FrameKind",
    "Profile",
    "frame",
    "parse_folded",
]

MAX_COUNT = 10 ** 12
"""Largest sample count of one line: a million seconds at a million samples per second; above it
the line is refused as damaged (a count that large cannot come from one trial)."""
MAX_DEPTH = 1024
"""Deepest stack kept; the frames nearest the root are kept, the rest cut (noted)."""
MAX_FRAME_CHARS = 300
"""Longest frame name kept (C++ templates run to thousands of characters); longer ones are cut
and end in '…'."""
MAX_STACKS = 200_000
"""Most distinct stacks read from one artifact; the rest are skipped (noted)."""


class FrameKind(Enum):
    """Where a frame ran, from the collapser's annotation (docs/explain.md, "Labels")."""

    USER = "user"
    KERNEL = "kernel"
    GUEST = "guest"
    JIT = "jit"
    UNRESOLVED = "unresolved"
    PROCESS = "process"


_SUFFIX = {"_[k]": FrameKind.KERNEL, "_[g]": FrameKind.GUEST, "_[j]": FrameKind.JIT}
_UNRESOLVED = re.compile(r"^\[[^\[\]]*\]$")  # [unknown], [libc.so.6], [vdso]


@dataclass(frozen=True)
class Frame:
    """A function as the analysis names it: its name without the kind suffix, and its kind."""

    name: str
    kind: FrameKind

    @property
    def label(self) -> str:
        """The name with its kind when it is not a user frame: 'ksys_read [kernel]' (an
        unresolved frame's name, '[unknown]', says so itself)."""
        if self.kind in (FrameKind.USER, FrameKind.PROCESS, FrameKind.UNRESOLVED):
            return self.name
        return f"{self.name} [{self.kind.value}]"


def frame(raw: str, *, root: bool = False) -> Frame:
    """The frame of one folded field (``root``: the process name)."""
    if root:
        return Frame(raw, FrameKind.PROCESS)
    for suffix, kind in _SUFFIX.items():
        if raw.endswith(suffix) and len(raw) > len(suffix):
            return Frame(raw[:-len(suffix)], kind)
    if _UNRESOLVED.match(raw):
        return Frame(raw, FrameKind.UNRESOLVED)
    return Frame(raw, FrameKind.USER)


Stack = tuple[Frame, ...]


@dataclass
class Profile:
    """One trial's folded stacks: samples per distinct stack, and what was refused."""

    stacks: dict[Stack, int]
    skipped_lines: int = 0
    """lines refused: no count, a count out of range, no frame"""
    notes: list[str] = field(default_factory=list)
    """what the parser changed or refused, in words (bytes replaced, stacks cut, lines skipped)"""

    @property
    def samples(self) -> int:
        return sum(self.stacks.values())

    def unresolved_samples(self) -> int:
        """Samples whose leaf (the code running when the sample was taken) is unresolved: an
        unresolved frame further up (an interpreter's or JIT's code between resolved ones) still
        leaves the sample attributed to a named function."""
        return sum(count for stack, count in self.stacks.items()
                   if stack[-1].kind is FrameKind.UNRESOLVED)


def _cut(name: str) -> str:
    return name if len(name) <= MAX_FRAME_CHARS else name[:MAX_FRAME_CHARS - 1] + "…"


def parse_folded(data: bytes | str) -> Profile:
    """The folded stacks of ``data`` (one artifact's content), merged by stack."""
    notes: list[str] = []
    if isinstance(data, bytes):
        text = data.decode("utf-8", errors="replace")
        if "\ufffd" in text and b"\xef\xbf\xbd" not in data:
            notes.append("bytes that are not UTF-8 were replaced by U+FFFD")
    else:
        text = data
    stacks: dict[Stack, int] = defaultdict(int)
    skipped = cut_deep = 0
    for line in text.splitlines():
        line = line.strip()
        if not line:
            continue
        body, _, count_text = line.rpartition(" ")
        count = int(count_text) if is_digits(count_text) else -1
        names = [_cut(name) for name in body.split(";") if name.strip()]
        if not body or count < 0 or count > MAX_COUNT or not names:
            skipped += 1
            continue
        if len(names) > MAX_DEPTH:
            names, cut_deep = names[:MAX_DEPTH], cut_deep + 1
        stack = (frame(names[0], root=True), *(frame(n) for n in names[1:]))
        if stack not in stacks and len(stacks) >= MAX_STACKS:
            skipped += 1
            continue
        stacks[stack] += count
    if skipped:
        notes.append(f"{skipped} line(s) skipped: no sample count, a count that is not a whole "
                     f"number from 0 to {MAX_COUNT:,}, no frame, or more than {MAX_STACKS:,} "
                     "stacks")
    if cut_deep:
        notes.append(f"{cut_deep} stack(s) deeper than {MAX_DEPTH} frames cut at the leaf end")
    return Profile({s: c for s, c in stacks.items() if c > 0}, skipped, notes)
