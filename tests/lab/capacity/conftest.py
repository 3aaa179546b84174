"""Capacity searches on real paths: need root, iproute2 (tc tbf), trafgen (netsniff-ng)."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

NEEDED = ("ip", "tc", "trafgen", "time")


@pytest.fixture(autouse=True)
def _needs_root_and_tools(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    if os.geteuid() != 0:
        pytest.skip("capacity labs need root")
    missing = [b for b in NEEDED if shutil.which(b) is None]
    if missing:
        pytest.skip(f"missing tools: {', '.join(missing)} (apt-get install iproute2 "
                    "netsniff-ng time)")
    monkeypatch.setenv("VIRTBENCH_LAB_ROOT", str(tmp_path / "labs"))
    yield
