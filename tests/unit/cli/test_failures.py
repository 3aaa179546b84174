"""How each kind of failure is classified: its exit code and message (docs/cli.md)."""

from __future__ import annotations

import errno
import subprocess

from virtbench.cli.failures import EXIT_BAD_INPUT, EXIT_FAILED, Failure, classify
from virtbench.model import RunFailed, VirtbenchError
from virtbench.targets.target_contract import CommandFailed, ProcResult


def test_virtbench_errors_carry_their_exit_code() -> None:
    assert classify(VirtbenchError("bad file")) == Failure("bad file", EXIT_BAD_INPUT)
    assert classify(RunFailed("lab did not start")) == Failure("lab did not start", EXIT_FAILED)


def test_a_failed_command_or_timeout_is_a_failed_run() -> None:
    failed = CommandFailed(ProcResult(("iperf3", "-c", "x"), 1, "", "unable to connect", 0.1))
    assert classify(failed) == Failure("iperf3 -c x exited 1: unable to connect", EXIT_FAILED)
    timeout = subprocess.TimeoutExpired(["fio", "job"], 30)
    assert classify(timeout) == Failure("fio job did not finish within 30 s", EXIT_FAILED)


def test_os_errors_of_a_named_file_are_bad_input_and_of_the_disk_a_failure() -> None:
    missing = FileNotFoundError(errno.ENOENT, "No such file or directory", "out/r.html")
    assert classify(missing) == Failure("out/r.html: No such file or directory", EXIT_BAD_INPUT)
    full = OSError(errno.ENOSPC, "No space left on device", "/var/tmp/x")
    assert classify(full) == Failure("/var/tmp/x: No space left on device", EXIT_FAILED)
    refused = ConnectionRefusedError(errno.ECONNREFUSED, "Connection refused")
    assert classify(refused) == Failure("Connection refused", EXIT_FAILED)


def test_anything_else_is_a_bug() -> None:
    assert classify(KeyError("x")) is None
    assert classify(TypeError("unsupported operand")) is None
