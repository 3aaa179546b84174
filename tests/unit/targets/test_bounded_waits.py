"""No wait on a command is without a bound: a command given no time limit gets
COMMAND_TIMEOUT_S, and reaping after SIGKILL is bounded (a process stuck in the kernel is named
in a warning and left behind, never waited for forever)."""

from __future__ import annotations

import logging
import os
import subprocess
from typing import Any

import pytest

from virtbench.targets import process, target_contract
from virtbench.targets.local import LocalTarget, kill_process_group


class _Unkillable:
    """A Popen stand-in for a process in uninterruptible sleep: wait() always times out."""

    pid = 4242
    returncode = None

    def __init__(self) -> None:
        self.args = ["mount.nfs", "server:/x", "/mnt"]
        self.waited: list[float | None] = []

    def wait(self, timeout: float | None = None) -> int:
        self.waited.append(timeout)
        raise subprocess.TimeoutExpired(self.args, timeout or 0.0)


def test_a_process_that_survives_sigkill_is_reported_not_waited_for(
        monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.setattr(process, "KILL_WAIT_S", 0.01)
    signalled: list[tuple[int, int]] = []
    monkeypatch.setattr(os, "killpg", lambda pid, sig: signalled.append((pid, sig)))
    stuck: Any = _Unkillable()
    with caplog.at_level(logging.WARNING, logger="virtbench.targets.process"):
        kill_process_group(stuck)
    assert signalled == [(4242, 9)] and stuck.waited == [0.01]
    assert (f"process {stuck.pid} (mount.nfs server:/x /mnt) did not end within 0.01 s of "
            "SIGKILL; left behind") in caplog.text


def test_a_killed_group_is_reaped() -> None:
    proc = LocalTarget().spawn(["sh", "-c", "sleep 60 & sleep 60"])
    kill_process_group(proc)
    assert proc.returncode == -9


@pytest.mark.parametrize("timed", [False, True])
def test_a_command_given_no_time_limit_gets_the_default_one(
        monkeypatch: pytest.MonkeyPatch, timed: bool) -> None:
    monkeypatch.setattr(target_contract, "COMMAND_TIMEOUT_S", 0.3)
    target = LocalTarget()
    run = target.run_timed if timed else target.run
    with pytest.raises(subprocess.TimeoutExpired):
        run(["sleep", "30"])
    assert run(["true"]).returncode == 0
