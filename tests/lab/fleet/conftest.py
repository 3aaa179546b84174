"""Real SSH test hosts: network namespaces with their own sshd (needs root, openssh-server)."""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from sshhosts import SshFleet, start_fleet


@pytest.fixture(autouse=True)
def _needs_root_and_tools(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    if os.geteuid() != 0:
        pytest.skip("SSH test hosts need root (network namespaces)")
    missing = [b for b in ("ip", "ssh", "ssh-keygen", "/usr/sbin/sshd") if shutil.which(b) is None]
    if missing:
        pytest.skip(f"missing tools: {', '.join(missing)} (openssh-server, openssh-client)")
    monkeypatch.setenv("VIRTBENCH_LAB_ROOT", str(tmp_path / "labs"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    yield


def _fleet(count: int) -> Iterator[SshFleet]:
    fleet = start_fleet(count)
    try:
        yield fleet
    finally:
        fleet.stop()


@pytest.fixture
def three_hosts() -> Iterator[SshFleet]:
    yield from _fleet(3)


@pytest.fixture
def two_hosts() -> Iterator[SshFleet]:
    yield from _fleet(2)
