"""Commands on a remote machine over the system OpenSSH client, host key always checked.

Chose the system ``ssh`` over a Python library: it honours the user's ssh_config, agent, jump
hosts and known_hosts exactly as an interactive login does, needs no extra dependency, and
connection multiplexing (ControlMaster) makes repeated short commands cheap.

The remote side receives one command line, so every argument is quoted with ``shlex``; the
command is run through ``env`` (``-u`` unsets, ``-C`` changes directory) and ``timeout``, never
through shell syntax of ours.
"""

from __future__ import annotations

import atexit
import contextlib
import math
import re
import secrets
import shlex
import shutil
import subprocess
import tempfile
import time
import weakref
from collections.abc import Mapping, Sequence
from pathlib import Path

from virtbench.model import VirtbenchError
from virtbench.targets.base import ProcResult, Target, cannot_run_true
from virtbench.targets.local import LocalTarget

__all__ = ["SSHTarget", "remote_argv"]


def remote_argv(
    argv: Sequence[str],
    *,
    env: Mapping[str, str | None] | None = None,
    cwd: str | None = None,
    timeout: float | None = None,
) -> list[str]:
    """``argv`` wrapped so the remote side applies env changes, cwd and a time limit itself."""
    if not argv:
        raise VirtbenchError("empty command")
    full = list(argv)
    if env or cwd:
        prefix = ["env"]
        if cwd:
            prefix += ["-C", cwd]
        for key, value in (env or {}).items():
            if value is None:
                prefix += ["-u", key]
        prefix.append("--")
        prefix += [f"{k}={v}" for k, v in (env or {}).items() if v is not None]
        full = [*prefix, *full]
    if timeout is not None:
        # The remote process must end too, not only our local ssh client.
        # Rounded up: never before the caller's limit (busybox's timeout takes whole seconds).
        full = ["timeout", "--kill-after=5", f"{max(1, math.ceil(timeout))}", *full]
    return full


class SSHTarget(Target):
    """A machine reached with ``ssh [user@]host``; ``StrictHostKeyChecking=yes`` always.

    ``via`` is where the ssh client runs (default: this machine; a NetnsTarget reaches hosts
    inside a network namespace).

    ``known_hosts`` defaults to the user's own file; an unknown or changed host key is an
    error, never silently accepted.
    """

    def __init__(
        self,
        host: str,
        *,
        user: str | None = None,
        port: int = 22,
        identity_file: str | None = None,
        known_hosts: str | None = None,
        connect_timeout_s: int = 10,
        multiplex: bool = True,
        extra_options: Sequence[str] = (),
        ssh_binary: str = "ssh",
        via: LocalTarget | None = None,
    ) -> None:
        self.host = host
        self.user = user
        self.port = port
        self.name = f"ssh:{user + '@' if user else ''}{host}:{port}"
        if shutil.which(ssh_binary) is None:
            raise VirtbenchError(f"'{ssh_binary}' not found; install the Debian package "
                                 "'openssh-client'")
        # The ssh client itself runs here: this machine, or e.g. a NetnsTarget.
        self._local = via or LocalTarget()
        self._control_dir: str | None = None
        opts = [
            "-o", "BatchMode=yes",
            "-o", "StrictHostKeyChecking=yes",
            "-o", f"ConnectTimeout={connect_timeout_s}",
            "-o", "ServerAliveInterval=15",
            "-p", str(port),
        ]
        if known_hosts:
            opts += ["-o", f"UserKnownHostsFile={known_hosts}"]
        if identity_file:
            opts += ["-i", identity_file, "-o", "IdentitiesOnly=yes"]
        if user:
            opts += ["-l", user]
        if multiplex:
            self._control_dir = tempfile.mkdtemp(prefix="vbssh-")
            opts += ["-o", "ControlMaster=auto", "-o", f"ControlPath={self._control_dir}/%C",
                     "-o", "ControlPersist=60"]
            # The master runs detached; make sure it ends with this process at the latest.
            _MULTIPLEXED.add(self)
        self._base = [ssh_binary, *opts, *extra_options]

    def ssh_argv(self, remote: Sequence[str]) -> list[str]:
        """The local argv that runs ``remote`` (already wrapped) on the host."""
        return [*self._base, "--", self.host, shlex.join(remote)]

    def run(
        self,
        argv: Sequence[str],
        *,
        env: Mapping[str, str | None] | None = None,
        cwd: str | None = None,
        timeout: float | None = None,
        input: str | None = None,
        check: bool = True,
    ) -> ProcResult:
        remote = remote_argv(argv, env=env, cwd=cwd, timeout=timeout)
        local_timeout = None if timeout is None else timeout + 30
        return self._local.run(self.ssh_argv(remote), timeout=local_timeout, input=input,
                               check=check)

    def spawn(
        self,
        argv: Sequence[str],
        *,
        env: Mapping[str, str | None] | None = None,
        cwd: str | None = None,
        stdout: int | None = subprocess.DEVNULL,
        stderr: int | None = subprocess.DEVNULL,
    ) -> subprocess.Popen[bytes]:
        # -tt gives the remote command a terminal, so it gets SIGHUP when the local client
        # is stopped and does not outlive the caller.
        remote = remote_argv(argv, env=env, cwd=cwd)
        full = [*self._base, "-tt", "--", self.host, shlex.join(remote)]
        return self._local.spawn(full, stdout=stdout, stderr=stderr)

    def check(self) -> list[str]:
        return cannot_run_true(self, "reach")

    batches = True

    def run_batch(self, argvs: Sequence[Sequence[str]], *,
                  timeout: float | None = None) -> list[ProcResult]:
        """All commands in one ``sh`` on the host (one round trip, not one per command): each
        one's stdout, stderr and exit code come back between markers of a random token."""
        if not argvs:
            return []
        token = secrets.token_hex(8)
        lines = ['d=$(mktemp -d) || exit 1']
        for index, argv in enumerate(argvs):
            command = shlex.join(remote_argv(argv, timeout=timeout))
            lines.append(f'{command} >"$d/o" 2>"$d/e" </dev/null; rc=$?; '
                         f"printf '%s O {index}\\n' {token}; cat \"$d/o\"; "
                         f"printf '\\n%s E {index} %d\\n' {token} $rc; cat \"$d/e\"; "
                         "printf '\\n'")
        lines.append('rm -rf "$d"')
        total = None if timeout is None else timeout * len(argvs) + 30
        started = time.monotonic()
        result = self.run(["sh", "-c", "\n".join(lines)], timeout=total, check=False)
        if result.returncode != 0 and token not in result.stdout:
            # the batch never ran (host unreachable): every command failed the same way
            return [ProcResult(tuple(argv), result.returncode, "", result.stderr,
                               result.duration_s) for argv in argvs]
        parts = re.compile(rf"{token} O (\d+)\n(.*?)\n{token} E \1 (-?\d+)\n(.*?)\n"
                           rf"(?={token} O |\Z)", re.S)
        found = {int(m.group(1)): m for m in parts.finditer(result.stdout)}
        elapsed = time.monotonic() - started
        out = []
        for index, argv in enumerate(argvs):
            match = found.get(index)
            if match is None:  # cut short (time limit, connection lost)
                out.append(ProcResult(tuple(argv), 255, "", result.stderr, elapsed))
            else:
                out.append(ProcResult(tuple(argv), int(match.group(3)), match.group(2),
                                      match.group(4), elapsed / len(argvs)))
        return out

    def which(self, binary: str) -> str | None:
        result = self.run(["sh", "-c", 'command -v -- "$1"', "sh", binary], check=False)
        path = result.stdout.strip()
        return path if result.returncode == 0 and path.startswith("/") else None

    def python(self) -> list[str]:
        return ["python3"]

    def close(self) -> None:
        """Stop the multiplexing master (if any) and remove its socket directory."""
        if self._control_dir is None:
            return
        self._local.run([*self._base, "-O", "exit", "--", self.host], check=False, timeout=15)
        shutil.rmtree(self._control_dir, ignore_errors=True)
        self._control_dir = None

    def __del__(self) -> None:  # best effort; close() is the real cleanup
        if self._control_dir is not None and Path(self._control_dir).exists():
            with contextlib.suppress(Exception):
                self.close()


_MULTIPLEXED: weakref.WeakSet[SSHTarget] = weakref.WeakSet()


@atexit.register
def _close_masters() -> None:
    """Stop every multiplexing master still open when the interpreter exits (a caller that
    never called close(), e.g. the runner's experiment target)."""
    for target in list(_MULTIPLEXED):
        with contextlib.suppress(Exception):
            target.close()


def from_params(host: str, user: str | None = None, port: int = 22,
                identity_file: str | None = None, known_hosts: str | None = None,
                connect_timeout_s: int = 10) -> SSHTarget:
    """Build the target of an experiment's ``target: {kind: ssh, params: {...}}``."""
    return SSHTarget(host, user=user, port=port, identity_file=identity_file,
                     known_hosts=known_hosts, connect_timeout_s=connect_timeout_s)
