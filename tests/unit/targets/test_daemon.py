"""targets.daemon: the one way labs start, wait for and stop long-running processes. Real
processes (sh, sleep, a Python listener), real ports on 127.0.0.1 and real process groups."""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path

import pytest

from virtbench.model import VirtbenchError
from virtbench.targets.daemon import (
    free_port,
    is_ours,
    listening,
    start_daemon,
    stop_pid,
    wait_until,
)
from virtbench.targets.local import LocalTarget

LISTENER = ("import socket, sys, time; s = socket.socket(); "
            "s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); "
            "time.sleep(float(sys.argv[2])); s.bind(('127.0.0.1', int(sys.argv[1]))); "
            "s.listen(); time.sleep(300)")


def _group_members(pgid: int) -> list[int]:
    members = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[-1].split()
        except OSError:
            continue
        if int(fields[2]) == pgid and fields[0] != "Z":
            members.append(int(stat.parent.name))
    return members


def _until_the_group_is_gone(pgid: int) -> None:
    """Stopping returns once the leader is reaped; the group's other members got the same
    signal and end when next scheduled (later on a busy machine). Not signalled, the tests'
    sleeps would live 300 s, and this fails."""
    wait_until(lambda: _group_members(pgid) == [], "end of the group", timeout_s=20)


def test_wait_for_port_then_stop_frees_it(tmp_path: Path) -> None:
    port = free_port()
    target = LocalTarget()
    daemon = start_daemon(target, [sys.executable, "-c", LISTENER, str(port), "0.3"],
                          what="listener", log=tmp_path / "listener.log")
    try:
        waited = daemon.wait_for_port(port, timeout_s=20)
        assert waited >= 0.3  # it bound only after its own delay
        assert listening(target, port)
    finally:
        code = daemon.stop()
    assert code == -signal.SIGTERM
    assert not listening(target, port)


def test_a_daemon_that_exits_while_starting_names_itself_and_its_log(tmp_path: Path) -> None:
    daemon = start_daemon(LocalTarget(), ["sh", "-c", "echo 'bad config line 3' >&2; exit 3"],
                          what="fakeserver", log=tmp_path / "fake.log")
    with pytest.raises(VirtbenchError, match=r"fakeserver exited with code 3 while starting: "
                                             r"bad config line 3"):
        daemon.wait_for_port(free_port(), timeout_s=20)


def test_wait_gives_up_after_its_time_limit(tmp_path: Path) -> None:
    daemon = start_daemon(LocalTarget(), ["sleep", "30"], log=tmp_path / "sleep.log")
    try:
        with pytest.raises(VirtbenchError, match=r"no sleep creating .*never within 0.2 s"):
            daemon.wait_for_file(tmp_path / "never", timeout_s=0.2)
    finally:
        daemon.stop()


def test_wait_for_file(tmp_path: Path) -> None:
    sock = tmp_path / "server.sock"
    daemon = start_daemon(LocalTarget(), ["sh", "-c", f"sleep 0.2; touch {sock}; sleep 30"])
    try:
        # It waited until the file was there (no timed bound: the child's 0.2 s starts before
        # the wait's clock does, and once came out at 0.198 s).
        assert daemon.wait_for_file(sock, timeout_s=20) > 0 and sock.exists()
    finally:
        daemon.stop()


def test_stop_ends_the_whole_process_group(tmp_path: Path) -> None:
    # Like nginx or varnishd: a parent with children that would outlive a plain kill.
    daemon = start_daemon(LocalTarget(), ["sh", "-c", "sleep 300 & sleep 300 & wait"])
    group = daemon.pid
    wait_until(lambda: len(_group_members(group)) == 3, "three group members", timeout_s=20)
    daemon.stop()
    _until_the_group_is_gone(group)


def test_stop_kills_what_ignores_sigterm_after_the_grace() -> None:
    daemon = start_daemon(LocalTarget(), ["sh", "-c", "trap '' TERM; echo up; sleep 300"])
    pid = daemon.pid
    wait_until(lambda: "sleep" in " ".join(
        Path(f"/proc/{p}/cmdline").read_text() for p in _group_members(pid)),
        "the child", timeout_s=20)
    assert daemon.stop(grace_s=0.3) == -signal.SIGKILL
    _until_the_group_is_gone(pid)


def test_on_stop_runs_once() -> None:
    calls: list[int] = []
    daemon = start_daemon(LocalTarget(), ["sleep", "30"])
    daemon.on_stop = lambda: calls.append(1)
    daemon.stop()
    daemon.stop()
    assert calls == [1]


def test_stop_pid_touches_only_a_process_whose_command_line_matches(tmp_path: Path) -> None:
    marker = str(tmp_path / "private-dir")
    # The marker is the shell's $0, so it stays in the command line while the shell waits.
    ours = start_daemon(LocalTarget(), ["sh", "-c", "sleep 300; :", marker])
    stranger = start_daemon(LocalTarget(), ["sh", "-c", "sleep 300; :", "someone-else"])
    try:
        # Until a child has exec'd sh, its command line is still this Python's (a busy machine).
        wait_until(lambda: is_ours(ours.pid, marker), "our shell", timeout_s=20)
        wait_until(lambda: is_ours(stranger.pid, "someone-else"), "the stranger", timeout_s=20)
        assert not is_ours(stranger.pid, marker)
        assert stop_pid(stranger.pid, marker) is False
        assert stranger.alive()
        assert stop_pid(ours.pid, marker, grace_s=5) is True
        ours.process.wait(5)
        _until_the_group_is_gone(ours.pid)  # the shell and its sleep
    finally:
        stranger.stop()
        ours.stop()
    assert not is_ours(os.getpid(), marker)


# On SIGTERM the main thread (the group leader) exits at once and turns zombie, while another
# thread keeps the process (and its memory) for one more second: like ovs-vswitchd-dpdk, whose
# lcore threads still hold their hugepages after the leader has gone.
LEADER_FIRST = (
    "import ctypes, os, signal, threading, time\n"
    "def on_term(*_):\n"
    "    threading.Thread(target=lambda: (time.sleep(1.0), os._exit(0)), daemon=True).start()\n"
    "    ctypes.CDLL(None).pthread_exit(None)\n"
    "signal.signal(signal.SIGTERM, on_term)\n"
    "print('ready', flush=True)\n"
    "time.sleep(300)\n"
)


def test_stop_pid_returns_only_when_every_thread_has_ended(tmp_path: Path) -> None:
    marker = str(tmp_path / "leader-first")
    daemon = start_daemon(LocalTarget(), [sys.executable, "-c", LEADER_FIRST, marker],
                          log=tmp_path / "log")
    try:
        wait_until(lambda: "ready" in (tmp_path / "log").read_text(), what="ready",
                   timeout_s=30)
        assert stop_pid(daemon.pid, marker, grace_s=10) is True
        tasks = Path(f"/proc/{daemon.pid}/task")
        assert not tasks.exists() or len(list(tasks.iterdir())) <= 1
    finally:
        daemon.stop()


def test_missing_ss_names_the_debian_package(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", "/nonexistent")
    with pytest.raises(VirtbenchError, match="`ss` not found; install the Debian package "
                                             "iproute2"):
        listening(LocalTarget(), free_port())
