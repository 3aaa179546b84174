"""Helpers shared by benchmark scripts."""

from __future__ import annotations

import contextlib
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from virtbench.labs.lab_contract import LabState

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "benchmarks"))


def virtbench(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(REPO / ".venv" / "bin" / "virtbench"), *args], check=True,
                          capture_output=True, text=True)


def temp_dir() -> Path:
    return Path(tempfile.mkdtemp(prefix="vb-bench-"))


@contextlib.contextmanager
def linux_bridge_lab(workdir: Path) -> Iterator[LabState]:
    """The vswitch lab on the Linux bridge without background traffic, torn down on exit."""
    from virtbench.labs.net.vswitch import VSwitchLab
    from virtbench.targets.local import LocalTarget

    lab = VSwitchLab(None, workdir, LocalTarget())
    try:
        lab.up()
        yield lab.enter("bench", {"switch": "linux-bridge", "background_mbps": 0})
    finally:
        lab.down()
