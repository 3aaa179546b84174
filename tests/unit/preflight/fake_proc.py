"""A fake /proc and /sys tree for the noise checks' logic tests."""

from __future__ import annotations

import shutil
from pathlib import Path


class FakeHost:
    """A /proc and /sys tree in a temporary directory, changed between snapshots by tests."""

    def __init__(self, root: Path) -> None:
        self.root = root
        (root / "proc").mkdir(parents=True)
        self.cpu(total=1000, steal=0)
        (root / "proc" / "vmstat").write_text("pswpin 10\npswpout 20\nnr_free_pages 5\n")

    def cpu(self, total: int, steal: int, idle: int = 0) -> None:
        """The aggregate line in ticks: ``total`` = user (the busy rest) + idle + steal."""
        user = total - steal - idle
        (self.root / "proc" / "stat").write_text(
            f"cpu  {user} 0 0 {idle} 0 0 0 {steal} 0 0\ncpu0 1 0 0 0 0 0 0 0 0 0\n"
            "cpu1 1 0 0 0 0 0 0 0 0 0\nintr 0\n")

    def process(self, pid: int, ppid: int, comm: str, ticks: int, env: str = "",
                starttime: int = 777) -> None:
        d = self.root / "proc" / str(pid)
        d.mkdir(exist_ok=True)
        rest = ["S", str(ppid)] + ["0"] * 9 + [str(ticks), "0"] + ["0"] * 6 + [str(starttime)]
        (d / "stat").write_text(f"{pid} ({comm}) {' '.join(rest)}\n")
        (d / "environ").write_bytes(env.encode() + b"\0PATH=/bin\0")

    def end(self, pid: int) -> None:
        shutil.rmtree(self.root / "proc" / str(pid))

    def sys(self, relative: str, value: str) -> None:
        path = self.root / "sys" / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(value + "\n")


class FakeClock:
    """A monotonic clock (s) and a CPU-time counter (s) that move only when a test says so."""

    def __init__(self) -> None:
        self.now = 0.0
        self.own_cpu_s = 0.0

    def __call__(self) -> float:
        return self.now

    def own(self) -> float:
        return self.own_cpu_s
