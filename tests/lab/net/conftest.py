"""Real network labs: need root, iproute2, iperf3, irtt, tcpdump, dumpcap, Open vSwitch,
stress-ng."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

NEEDED = ("ip", "iperf3", "irtt", "dumpcap", "tcpdump", "ovs-vsctl", "ovsdb-server", "stress-ng",
          "ethtool")


@pytest.fixture(autouse=True)
def _needs_root_and_tools(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    if os.geteuid() != 0:
        pytest.skip("network labs need root")
    missing = [b for b in NEEDED if shutil.which(b) is None]
    if missing:
        pytest.skip(f"missing tools: {', '.join(missing)}")
    monkeypatch.setenv("VIRTBENCH_LAB_ROOT", str(tmp_path / "labs"))
    yield
