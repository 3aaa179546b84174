"""The SSH target against a real sshd in a network namespace of this test (loopback only)."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from virtbench.runner.deadline import TimeLimitExceeded, run_with_time_limit
from virtbench.targets.local import NetnsTarget
from virtbench.targets.ssh import SSHTarget
from virtbench.targets.target_contract import CommandFailed
from virtbench.workloads.workload_contract import TrialContext, TrialResult

pytestmark = [pytest.mark.lab, pytest.mark.timeout(1500)]

PORT = 2222


@dataclass
class Sshd:
    namespace: str
    known_hosts: Path
    identity: Path
    tmp: Path


def _run(*argv: str) -> None:
    subprocess.run(list(argv), check=True, capture_output=True, timeout=300)


@pytest.fixture(scope="module")
def sshd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sshd]:
    if os.geteuid() != 0 or shutil.which("/usr/sbin/sshd") is None:
        pytest.skip("needs root and openssh-server")
    tmp = tmp_path_factory.mktemp("vbkvm-ssh")
    ns = f"vbkvmssh-{uuid.uuid4().hex[:6]}"
    _run("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(tmp / "host_key"))
    _run("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(tmp / "client_key"))
    shutil.copy(tmp / "client_key.pub", tmp / "authorized_keys")
    (tmp / "sshd_config").write_text(
        f"Port {PORT}\nListenAddress 127.0.0.1\nHostKey {tmp / 'host_key'}\n"
        f"PidFile {tmp / 'sshd.pid'}\nAuthorizedKeysFile {tmp / 'authorized_keys'}\n"
        # Keys under /tmp fail sshd's ownership checks; PAM is not configured for this sshd.
        "StrictModes no\nUsePAM no\nPasswordAuthentication no\n"
        "KbdInteractiveAuthentication no\nPermitRootLogin prohibit-password\n"
        "AcceptEnv none\n"
    )
    host_pub = (tmp / "host_key.pub").read_text().split()
    (tmp / "known_hosts").write_text(f"[127.0.0.1]:{PORT} {host_pub[0]} {host_pub[1]}\n")
    # sshd's privilege-separation directory (standard, empty; left in place for others).
    Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)
    _run("ip", "netns", "add", ns)
    proc = None
    try:
        _run("ip", "-n", ns, "link", "set", "lo", "up")
        proc = subprocess.Popen(
            ["ip", "netns", "exec", ns, "/usr/sbin/sshd", "-D", "-e", "-f",
             str(tmp / "sshd_config")],
            stdout=subprocess.DEVNULL, stderr=(tmp / "sshd.log").open("wb"),
            start_new_session=True,
        )
        yield Sshd(ns, tmp / "known_hosts", tmp / "client_key", tmp)
    finally:
        if proc is not None:
            proc.terminate()
            proc.wait(timeout=10)
        subprocess.run(["ip", "netns", "del", ns], check=False, timeout=60)


def target(sshd: Sshd, known_hosts: Path | None = None) -> SSHTarget:
    return SSHTarget("127.0.0.1", user="root", port=PORT,
                     known_hosts=str(known_hosts or sshd.known_hosts),
                     identity_file=str(sshd.identity), via=NetnsTarget(sshd.namespace))


def wait_up(t: SSHTarget) -> None:
    deadline = time.monotonic() + 20
    while True:  # ends: done, or past the deadline below
        try:
            t.run(["true"], timeout=30)
            return
        except CommandFailed:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def test_run_env_cwd_input_which_python(sshd: Sshd) -> None:
    t = target(sshd)
    try:
        wait_up(t)
        assert t.run(["echo", "a b", "$HOME;x"]).stdout == "a b $HOME;x\n"
        out = t.run(["sh", "-c", 'echo "$VB_SET|${VB_UNSET-unset}|$(pwd)"'],
                    env={"VB_SET": "it's set", "VB_UNSET": None}, cwd="/tmp").stdout
        assert out == "it's set|unset|/tmp\n"
        # Workload probes are sent as `python3 - < script`.
        probe = "import sys; print(sys.version_info[0], sys.stdin.read() == '')"
        py = t.run([*t.python(), "-c", probe], input="").stdout
        assert py.strip() == "3 True"
        script = t.run([*t.python(), "-"], input="print(6 * 7)\n").stdout
        assert script.strip() == "42"
        assert t.which("sh") is not None and t.which("vb-no-such-binary") is None
        failed = t.run(["sh", "-c", "exit 3"], check=False)
        assert failed.returncode == 3
        with pytest.raises(CommandFailed):
            t.run(["false"])
        # The remote side enforces the limit itself (coreutils timeout exits 124).
        with pytest.raises(CommandFailed) as excinfo:
            t.run(["sleep", "30"], timeout=1)
        assert excinfo.value.result.returncode == 124
    finally:
        t.close()


def test_unknown_host_key_is_refused(sshd: Sshd, tmp_path: Path) -> None:
    empty = tmp_path / "known_hosts"
    empty.write_text("")
    t = target(sshd, known_hosts=empty)
    try:
        wait_up(target(sshd))
        result = t.run(["true"], check=False)
        assert result.returncode == 255
        assert "Host key verification failed" in result.stderr
    finally:
        t.close()


def test_time_limit_ends_the_remote_process_group(sshd: Sshd, tmp_path: Path) -> None:
    """A trial past its limit on an SSH target: the remote command and its children end."""
    pids = tmp_path / "pids"
    t = target(sshd)

    def hangs(ctx: TrialContext) -> TrialResult:
        ctx.target.run(["sh", "-c", f"echo $$ >> {pids}; sleep 1000 & echo $! >> {pids}; "
                                    "sleep 1000"])
        return TrialResult([])

    try:
        wait_up(t)
        ctx = TrialContext(target=t, variant="a", knobs={}, workdir=tmp_path, repetition=0,
                           seed=1)
        started = time.monotonic()
        with pytest.raises(TimeLimitExceeded, match=r"time limit 2 s exceeded"):
            run_with_time_limit(hangs, ctx, 2)
        assert time.monotonic() - started < 30
    finally:
        t.close()
    remote = [int(p) for p in pids.read_text().split()]
    assert len(remote) == 2
    # the remote `timeout` sends SIGTERM: the sleeps go soon, later on a busy machine
    deadline = time.monotonic() + 10
    while (left := [p for p in remote if _a_running_sleep(p)]) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert left == []


def _a_running_sleep(pid: int) -> bool:
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return "sleep" in cmdline and state != "Z"
