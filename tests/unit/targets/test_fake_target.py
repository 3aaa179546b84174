"""FakeTarget: scripted results, recorded calls, a spawn handle with no process under it."""

from __future__ import annotations

import signal
import subprocess

import pytest

from virtbench.targets.fake import FakeTarget, Scripted
from virtbench.targets.target_contract import CommandFailed

pytestmark = pytest.mark.usefixtures("no_processes")  # tests/conftest.py


def test_run_answers_from_the_first_matching_pattern_and_records_the_call() -> None:
    target = (FakeTarget([Scripted(("tool", "--version"), stdout="tool 1.2\n")])
              .add("tool", "*", "x*", returncode=3, stderr="bad x\n", duration_s=0.5))
    assert target.run(["tool", "--version"]).stdout == "tool 1.2\n"
    failed = target.run(["tool", "-q", "xyz"], check=False, env={"A": "1"}, timeout=9)
    assert (failed.returncode, failed.stderr, failed.duration_s) == (3, "bad x\n", 0.5)
    with pytest.raises(CommandFailed, match="tool -q xyz exited 3: bad x"):
        target.run(["tool", "-q", "xyz"])
    assert target.calls[1].argv == ("tool", "-q", "xyz")
    assert (target.calls[1].env, target.calls[1].timeout) == ({"A": "1"}, 9)


def test_an_unscripted_command_exits_127_and_a_slow_one_times_out() -> None:
    target = FakeTarget().add("slow", duration_s=5)
    result = target.run(["other"], check=False)
    assert result.returncode == 127 and "no scripted result" in result.stderr
    with pytest.raises(subprocess.TimeoutExpired):
        target.run_timed(["slow"], timeout=1)
    assert [c.kind for c in target.calls] == ["run", "run_timed"]


def test_which_and_python() -> None:
    assert FakeTarget().which("fio") == "/usr/bin/fio"
    assert FakeTarget(binaries={"fio": "/opt/fio"}).which("iperf3") is None
    assert FakeTarget(python=["/venv/python"]).python() == ["/venv/python"]


def test_a_spawned_server_runs_until_stopped() -> None:
    target = FakeTarget().add("server", duration_s=None)
    server = target.spawn(["server", "-p", "80"])
    assert server.poll() is None and server.pid >= 1 << 22
    with pytest.raises(subprocess.TimeoutExpired):
        server.wait(1)
    server.signal(signal.SIGUSR1)
    assert server.poll() is None
    assert server.stop(5) == -signal.SIGTERM
    assert server.signals == [signal.SIGUSR1, signal.SIGTERM]
    assert target.calls[0].process is server


def test_a_spawned_command_gives_its_scripted_output_when_captured() -> None:
    target = FakeTarget().add("gen", returncode=2, stdout="sent 10\n", duration_s=3)
    captured = target.spawn(["gen"], stdout=subprocess.PIPE)
    assert captured.poll() is None  # ends when waited for: no time passes
    finished = captured.wait(10)
    assert (finished.returncode, finished.stdout) == (2, b"sent 10\n")
    assert target.spawn(["gen"]).wait().stdout is None
    with pytest.raises(subprocess.TimeoutExpired):
        target.spawn(["gen"]).wait(1)  # scripted to take 3 s
