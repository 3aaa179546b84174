"""virtbench's SSH agent, run here without ssh: the same program and protocol over a pipe."""

from __future__ import annotations

import contextlib
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from virtbench.targets.local import LocalTarget
from virtbench.targets.ssh_agent import (
    AgentSession,
    AgentUnavailable,
    SessionLost,
    agent_command,
)


@pytest.fixture
def agent() -> Iterator[AgentSession]:
    session = AgentSession(LocalTarget(), agent_command(sys.executable), hello_timeout_s=30)
    try:
        yield session
    finally:
        session.close()


def test_run_returns_output_exit_code_and_applies_env_cwd_input(
        agent: AgentSession, tmp_path: Path) -> None:
    reply = agent.request("run", 30, argv=["sh", "-c", 'echo "$A/$PWD"; cat; echo e >&2; exit 3'],
                          env={"A": "x", "HOME": None}, cwd=str(tmp_path), input="in\n")
    assert (reply["rc"], reply["stdout"], reply["stderr"]) == (3, f"x/{tmp_path}\nin\n", "e\n")
    unset = agent.request("run", 30, argv=["sh", "-c", 'echo "${HOME-unset}"'],
                          env={"HOME": None})
    assert unset["stdout"] == "unset\n"
    assert agent.python == sys.executable


def test_timed_run_measures_the_command_on_the_host(agent: AgentSession) -> None:
    reply = agent.request("run", 30, argv=["sleep", "0.2"], timed=True)
    assert reply["rc"] == 0 and reply["stdout"] == ""
    assert 0.2 <= reply["duration"] < 25  # measured, and not the 30 s limit: a busy host
    missing = agent.request("run", 30, argv=["no-such-binary-vb"], timed=True)
    assert missing["rc"] == 127 and "not found" in missing["stderr"]
    failed = agent.request("run", 30, argv=["sh", "-c", "echo why >&2; exit 2"], timed=True)
    assert (failed["rc"], failed["stderr"]) == (2, "why\n")


@pytest.mark.parametrize("timed", [False, True])
def test_a_command_past_its_time_limit_is_killed_with_its_children(
        agent: AgentSession, tmp_path: Path, timed: bool) -> None:
    marker = tmp_path / "child-lived"
    started = time.monotonic()
    reply = agent.request("run", 30, argv=["sh", "-c", f"(sleep 1; touch {marker}) & sleep 30"],
                          timeout=0.3, timed=timed)
    assert reply["timed_out"] and time.monotonic() - started < 25  # not the sleep's 30 s
    time.sleep(1.3)
    assert not marker.exists()  # the whole process group went


def test_batch_which_and_concurrent_requests(agent: AgentSession) -> None:
    batch = agent.request("batch", 30, argvs=[["echo", "one two"], ["no-such-binary-vb"],
                                              ["sleep", "5"]], timeout=0.2)
    assert [r["rc"] for r in batch["results"]] == [0, 127, 124]
    assert batch["results"][0]["stdout"] == "one two\n"
    assert agent.request("which", 30, binary="sh")["path"].endswith("/sh")
    assert agent.request("which", 30, binary="no-such-binary-vb")["path"] is None
    # a slow command does not hold up a quick one sent after it
    replies: dict[str, float] = {}

    def run(name: str, seconds: str) -> None:
        agent.request("run", 30, argv=["sleep", seconds])
        replies[name] = time.monotonic()

    slow = threading.Thread(target=run, args=("slow", "1"))
    slow.start()
    time.sleep(0.1)
    run("quick", "0")
    slow.join(30)
    assert not slow.is_alive(), "the slow request got no reply within 30 s"
    assert replies["quick"] < replies["slow"]


def test_closing_the_session_kills_what_still_runs(agent: AgentSession, tmp_path: Path) -> None:
    marker = tmp_path / "outlived"
    errors: list[BaseException] = []

    def run() -> None:
        try:
            agent.request("run", 30, argv=["sh", "-c", f"sleep 1; touch {marker}"])
        except BaseException as exc:
            errors.append(exc)

    thread = threading.Thread(target=run)
    thread.start()
    time.sleep(0.3)
    agent.close()
    thread.join(10)
    assert not thread.is_alive(), "a request still waited 10 s after the session closed"
    assert errors and isinstance(errors[0], SessionLost)
    time.sleep(1.2)
    assert not marker.exists()
    with pytest.raises(SessionLost):
        agent.request("which", 5, binary="sh")


def test_a_session_that_ends_before_hello_says_why() -> None:
    with pytest.raises(SessionLost, match="refused here"):
        AgentSession(LocalTarget(), ["sh", "-c", "echo refused here >&2; exit 255"], 30)
    with pytest.raises(AgentUnavailable, match="exit 127"):
        AgentSession(LocalTarget(), ["sh", "-c", "exec no-such-python-vb"], 30)


def test_a_started_process_is_signalled_waited_for_and_ends_with_the_session(
        agent: AgentSession, tmp_path: Path) -> None:
    from virtbench.targets.ssh import RemoteProcess

    log = tmp_path / "log"
    # a capture's pattern: report on SIGUSR1, flush and exit 0 on SIGINT
    script = ("trap 'echo usr1 >&2' USR1; trap 'echo int >&2; exit 0' INT; echo ready >&2; "
              "while :; do sleep 0.05; done")
    pid = agent.request("start", 30, argv=["sh", "-c", script], stderr=str(log))["pid"]
    proc = RemoteProcess(agent, int(pid), ["sh"])
    deadline = time.monotonic() + 10
    while "ready" not in (log.read_text() if log.exists() else ""):
        assert time.monotonic() < deadline
        time.sleep(0.02)
    assert proc.poll() is None
    with pytest.raises(subprocess.TimeoutExpired):
        proc.wait(0.1)
    proc.send_signal(signal.SIGUSR1)
    while "usr1" not in log.read_text():  # sh runs pending traps by signal number, INT first
        assert time.monotonic() < deadline
        time.sleep(0.02)
    proc.send_signal(signal.SIGINT)
    assert proc.wait(10) == 0
    assert log.read_text().split() == ["ready", "usr1", "int"]
    with pytest.raises(RuntimeError, match="no process 1 started by this agent"):
        agent.request("signal", 30, pid=1, signal=int(signal.SIGKILL))  # never another's
    marker = tmp_path / "outlived"
    agent.request("start", 30, argv=["sh", "-c", f"sleep 1; touch {marker}"])
    agent.close()
    time.sleep(1.5)
    assert not marker.exists()


def test_a_target_without_multiplexing_starts_no_agent(tmp_path: Path) -> None:
    # A stand-in for ssh that logs its arguments and runs the remote command here.
    from virtbench.targets.ssh import SSHTarget

    log = tmp_path / "ssh.log"
    fake = tmp_path / "ssh"
    fake.write_text(f'#!/bin/sh\necho "$@" >> {log}\n'
                    'while [ "$1" != "--" ]; do shift; done\nshift 2\nexec sh -c "$*"\n')
    fake.chmod(0o755)
    target = SSHTarget("127.0.0.1", multiplex=False, ssh_binary=str(fake))
    assert target.run(["echo", "hi"]).stdout == "hi\n"
    assert target.run(["echo", "again"]).stdout == "again\n"
    calls = log.read_text().splitlines()
    assert len(calls) == 2 and all("echo" in c and "python" not in c for c in calls)


def test_gather_reads_and_probes_as_the_commands_do(agent: AgentSession, tmp_path: Path) -> None:
    """The agent's own file reads, binary probes and stats answer exactly what `cat`, the `sh`
    probe and `stat` (Target.gather's default, on this machine) answer, without a process."""
    text = tmp_path / "text"
    text.write_text("a: 1\nb\n")
    files = [str(text), "/proc/meminfo", str(tmp_path / "missing")]
    binaries = ["sh", "no-such-binary-vb"]
    paths = [str(tmp_path), str(text), str(tmp_path / "missing")]
    reply = agent.request("gather", 30, files=files, binaries=binaries, paths=paths,
                          argvs=[["echo", "x"], ["false"]], timeout=10)
    expected = LocalTarget().gather(files, binaries, [["echo", "x"], ["false"]], paths=paths)
    assert reply["stats"] == expected.stats and expected.stats[2] is None
    assert expected.stats[0] is not None and expected.stats[0].count(".") == 2  # ns times
    assert reply["files"][0] == "a: 1\nb\n" and reply["files"][2] is None
    assert "MemTotal:" in reply["files"][1]
    assert reply["binaries"] == expected.binaries
    assert expected.binaries[0] is not None
    assert reply["binaries"][0].startswith(f"{expected.binaries[0].splitlines()[0]}\n")
    assert reply["binaries"][1] is None
    assert [(r["rc"], r["stdout"]) for r in reply["results"]] == [
        (r.returncode, r.stdout) for r in expected.results] == [(0, "x\n"), (1, "")]


def test_a_killed_command_whose_escaped_child_holds_its_pipes_still_gets_a_reply(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """After the time limit's kill the agent reads what is left for a bounded time: a process
    that left the group (setsid) and keeps stdout open no longer holds the reply forever."""
    import os

    from virtbench.targets import ssh_agent_program as program

    monkeypatch.setattr(program, "_KILLED_READ_S", 0.3)
    pidfile = tmp_path / "escaped.pid"
    script = (f'setsid sh -c "echo \\$\\$ > {pidfile}; exec sleep 60" & '
              f"while [ ! -s {pidfile} ]; do sleep 0.01; done; echo started; sleep 60")
    try:
        reply = program._captured(1, ["sh", "-c", script], dict(os.environ), None, 2.0, None)
        assert reply["timed_out"]
        assert reply["stdout"] == "started\n"
        assert "output cut" in reply["stderr"]
    finally:
        if pidfile.exists() and pidfile.read_text().strip():
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(pidfile.read_text()), signal.SIGKILL)
