"""The handle Target.spawn returns: wait (exit code, output, resource use), signal, stop."""

from __future__ import annotations

import signal
import subprocess
import sys

import pytest

from virtbench.targets.local import LocalTarget


@pytest.mark.parametrize("timeout", [None, 60.0])
def test_wait_gives_the_exit_code_and_the_resource_use(timeout: float | None) -> None:
    proc = LocalTarget().spawn([sys.executable, "-c", "sum(range(3_000_000)); raise SystemExit(3)"])
    finished = proc.wait(timeout)
    assert finished.returncode == 3 == proc.returncode
    assert finished.rusage is not None and finished.rusage.ru_utime > 0
    assert finished.stdout is None


def test_wait_reads_captured_output_and_a_timeout_leaves_it_running() -> None:
    proc = LocalTarget().spawn(["sh", "-c", "echo out; echo err >&2; sleep 1"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    with pytest.raises(subprocess.TimeoutExpired):
        proc.wait(0.1)
    assert proc.poll() is None
    finished = proc.wait(60)  # what was read before the timeout is kept
    assert (finished.returncode, finished.stdout, finished.stderr) == (0, b"out\n", b"err\n")


def test_stop_escalates_to_sigkill_of_the_group() -> None:
    # The shell ignores SIGTERM (once it set the trap: it says so on stdout).
    script = "trap '' TERM; echo ready; while :; do sleep 0.05; done"
    proc = LocalTarget().spawn(["sh", "-c", script], stdout=subprocess.PIPE)
    assert proc.stdout is not None and proc.stdout.readline() == b"ready\n"
    assert proc.stop(0.3) == -signal.SIGKILL
    assert proc.poll() == -signal.SIGKILL
    assert proc.stop(0.3) == -signal.SIGKILL  # stopped once: nothing more happens


def test_signal_reaches_the_process_alone() -> None:
    proc = LocalTarget().spawn(["sh", "-c", "trap 'exit 7' USR1; while :; do sleep 0.05; done"])
    try:
        deadline_s = 10.0
        proc.signal(signal.SIGUSR1)
        assert proc.wait(deadline_s).returncode in (7, -signal.SIGUSR1)  # before the trap is set
    finally:
        proc.kill_group()
    proc.signal(signal.SIGUSR1)  # reaped: nothing is sent
