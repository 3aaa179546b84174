"""LocalTarget.run_timed: real commands, timed spawn to exit, with run()'s error behaviour."""

from __future__ import annotations

import signal
import subprocess
import time
from pathlib import Path

import pytest

from virtbench.targets.local import LocalTarget
from virtbench.targets.target_contract import CommandFailed


def test_duration_covers_the_command_and_output_is_not_kept() -> None:
    result = LocalTarget().run_timed(["sh", "-c", "echo out; sleep 0.05"])
    assert result.returncode == 0 and result.stdout == "" and result.stderr == ""
    assert result.argv == ("sh", "-c", "echo out; sleep 0.05")
    assert result.duration_s >= 0.05


def test_failure_carries_status_and_stderr() -> None:
    with pytest.raises(CommandFailed, match="exited 3: bad thing") as caught:
        LocalTarget().run_timed(["sh", "-c", "echo bad thing >&2; exit 3"])
    assert caught.value.result.returncode == 3
    unchecked = LocalTarget().run_timed(["sh", "-c", "exit 4"], check=False)
    assert unchecked.returncode == 4


def test_env_is_set_and_unset_like_run() -> None:
    target = LocalTarget()
    target.run_timed(["sh", "-c", 'test "$VB_X" = y'], env={"VB_X": "y"})
    target.run_timed(["sh", "-c", 'test -z "${HOME+set}"'], env={"HOME": None})


def test_missing_program_is_status_127() -> None:
    with pytest.raises(CommandFailed) as caught:
        LocalTarget().run_timed(["vb-no-such-program"])
    assert caught.value.result.returncode == 127
    assert "vb-no-such-program" in str(caught.value)


def test_time_limit_kills_the_command() -> None:
    started = time.monotonic()
    with pytest.raises(subprocess.TimeoutExpired):
        LocalTarget().run_timed(["sleep", "30"], timeout=0.2)
    assert time.monotonic() - started < 20  # killed, not waited for


def test_command_gets_default_sigpipe_not_pythons_ignore() -> None:
    # SigIgn is a hex mask; SIGPIPE (13) is bit 12. Python itself ignores SIGPIPE.
    with pytest.raises(CommandFailed) as caught:
        LocalTarget().run_timed(["sh", "-c", "grep SigIgn /proc/$$/status >&2; exit 1"])
    mask = int(caught.value.result.stderr.split()[-1], 16)
    assert not mask & (1 << 12)


def test_time_limits_fire_only_for_commands_that_outlive_them() -> None:
    target = LocalTarget()
    for _ in range(20):  # finished long before their limit: never reported as timed out
        assert target.run_timed(["true"], timeout=60).returncode == 0
    # a later, shorter limit than the watchdog was sleeping for must still wake it
    with pytest.raises(subprocess.TimeoutExpired):
        target.run_timed(["sleep", "30"], timeout=0.2)
    assert target.run_timed(["true"], timeout=60).returncode == 0


def test_an_interrupted_wait_kills_the_command(tmp_path: Path) -> None:
    # SIGALRM stands in for Ctrl-C: the handler raises while run_timed waits for the command.
    marker = tmp_path / "survived"

    def interrupt(_signum: int, _frame: object) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGALRM, interrupt)
    try:
        signal.setitimer(signal.ITIMER_REAL, 0.2)
        with pytest.raises(KeyboardInterrupt):
            LocalTarget().run_timed(["sh", "-c", f"sleep 1; touch {marker}"], timeout=60)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    time.sleep(1.5)
    assert not marker.exists()  # the command was killed, not left running


def test_the_watchdog_sleeps_through_commands_that_end_before_its_wake_up() -> None:
    from virtbench.targets.timed import _Watchdog

    watchdog = _Watchdog()
    for i in range(50):  # a run of short commands: each deadline an hour away, later than the last
        watchdog.watch(1000 + i, 1, time.monotonic() + 3600)
        time.sleep(0.001)  # time for the thread to run, as while a command runs
        assert not watchdog.release(1000 + i)
    assert watchdog.notifies == 1  # woken once, for the first; not once per command
    watchdog.watch(2000, 1, time.monotonic() + 60)  # an earlier deadline still wakes it
    assert watchdog.notifies == 2
    assert not watchdog.release(2000)


def test_a_program_found_before_is_looked_up_again_once_it_is_gone(tmp_path: Path) -> None:
    program = tmp_path / "vb-prog"
    program.write_text("#!/bin/sh\necho gone-next-time >&2\nexit 5\n")
    program.chmod(0o755)
    target = LocalTarget()
    for _ in range(2):  # found by walking PATH, then remembered
        result = target.run_timed(["vb-prog"], env={"PATH": str(tmp_path)}, check=False)
        assert (result.returncode, result.stderr) == (5, "gone-next-time\n")
    program.unlink()
    with pytest.raises(CommandFailed) as caught:
        target.run_timed(["vb-prog"], env={"PATH": str(tmp_path)})
    assert caught.value.result.returncode == 127
