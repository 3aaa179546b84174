"""Helpers shared by benchmark scripts."""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "benchmarks"))


def virtbench(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(REPO / ".venv" / "bin" / "virtbench"), *args], check=True,
                          capture_output=True, text=True)


def temp_dir() -> Path:
    return Path(tempfile.mkdtemp(prefix="vb-bench-"))
