"""Commands on a remote machine over the system OpenSSH client, host key always checked.

Chose the system ``ssh`` over a Python library: it honours the user's ssh_config, agent, jump
hosts and known_hosts exactly as an interactive login does, needs no extra dependency, and
connection multiplexing (ControlMaster) shares one connection between sessions.

Commands go to a small agent on the host (ssh_agent_program.py, run by the host's ``python3``
in one ssh session, started on first use and again after the session is lost): a command then
costs one process on the host, not an ssh session, a login shell and an ssh client each. A
host without Python 3.8 gets one ssh session per command: the command line is quoted with
``shlex`` and run through ``env`` (``-u`` unsets, ``-C`` changes directory) and ``timeout``,
never through shell syntax of ours. Long-running processes (``spawn``) always get their own
session.
"""

from __future__ import annotations

import atexit
import contextlib
import math
import re
import secrets
import shlex
import shutil
import signal
import subprocess
import tempfile
import threading
import time
import weakref
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from virtbench.model import VirtbenchError
from virtbench.targets.local import LocalTarget, NetnsTarget
from virtbench.targets.process import Process
from virtbench.targets.ssh_agent import (
    AgentSession,
    AgentUnavailable,
    SessionLost,
    agent_command,
)
from virtbench.targets.target_contract import (
    CommandFailed,
    Gathered,
    ProcResult,
    Target,
    cannot_run_true,
    command_timeout,
)

__all__ = ["RemoteProcess", "SSHTarget", "remote_argv"]


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

    ``agent_python``: the host's interpreter for virtbench's agent (None: one ssh session per
    command, as on a host without Python).
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
        agent_python: str | None = "python3",
    ) -> None:
        self.host = host
        self.user = user
        self.port = port
        self.spec: dict[str, Any] = {
            "host": host, "user": user, "port": port, "identity_file": identity_file,
            "known_hosts": known_hosts, "extra_options": list(extra_options),
            "netns": getattr(via, "namespace", None)}
        """How to reach this host again (a lab's manifest, for ``lab clean``): no secret,
        the key file's path only."""
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
        self._connect_timeout_s = connect_timeout_s
        # Without multiplexing nothing stays connected between commands: no agent session
        # either (a throwaway target must not leave an ssh client behind).
        self._agent_python = agent_python if multiplex else None
        self._agent: AgentSession | None = None
        self._agent_lock = threading.Lock()
        self.agent_problem = ""
        """Why this host runs one ssh session per command ("" while the agent serves it)."""

    @classmethod
    def from_spec(cls, spec: Mapping[str, Any]) -> SSHTarget:
        """The target ``spec`` (an earlier target's :attr:`spec`) describes."""
        return cls(spec["host"], user=spec["user"], port=spec["port"],
                   identity_file=spec["identity_file"], known_hosts=spec["known_hosts"],
                   extra_options=spec["extra_options"],
                   via=NetnsTarget(spec["netns"]) if spec["netns"] else None)

    def behind(self, port: int, *, user: str, identity_file: str, known_hosts: str
               ) -> SSHTarget:
        """The sshd listening on the host's own loopback at ``port`` (a guest's forwarded
        port), reached through this host's connection (``ssh -W`` over its master)."""
        # ssh expands %-tokens in ProxyCommand: the ControlPath's own %C must reach the
        # inner ssh as it is.
        proxy = shlex.join([*self._base, "-W", f"127.0.0.1:{port}", "--", self.host])
        return SSHTarget("127.0.0.1", user=user, port=port, identity_file=identity_file,
                         known_hosts=known_hosts, connect_timeout_s=self._connect_timeout_s,
                         extra_options=["-o", "ProxyCommand=" + proxy.replace("%", "%%")],
                         via=self._local)

    def forward_socket(self, local: str, remote: str, *, cancel: bool = False) -> None:
        """Forward (or stop forwarding) the unix socket ``local`` here to ``remote`` on the
        host, over this target's multiplexed connection (a private libvirtd's socket)."""
        if self._control_dir is None:
            raise VirtbenchError(f"{self.name}: forwarding a socket needs a multiplexed "
                                 "connection")
        self.run(["true"])  # the master is up
        self._local.run([*self._base, "-o", "StreamLocalBindUnlink=yes", "-O",
                         "cancel" if cancel else "forward", "-L", f"{local}:{remote}", "--",
                         self.host], timeout=30, check=not cancel)

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
        agent = self._session(argv)
        if isinstance(agent, ProcResult):
            return _checked(agent, check)
        if agent is None:
            return self._run_session(argv, env=env, cwd=cwd, timeout=timeout, input=input,
                                     check=check)
        return _checked(self._agent_run(agent, argv, timeout, env=env, cwd=cwd, input=input),
                        check)

    def run_timed(
        self,
        argv: Sequence[str],
        *,
        env: Mapping[str, str | None] | None = None,
        timeout: float | None = None,
        check: bool = True,
    ) -> ProcResult:
        """Timed on the host by the agent (spawn to exit, as ``hyperfine -N``): the ssh round
        trip is not in ``duration_s``. Without the agent: ``run``'s time, round trip included."""
        agent = self._session(argv)
        if isinstance(agent, ProcResult):
            return _checked(agent, check)
        if agent is None:
            return self._run_session(argv, env=env, timeout=timeout, check=check)
        return _checked(self._agent_run(agent, argv, timeout, env=env, timed=True), check)

    def _run_session(self, argv: Sequence[str], *, env: Mapping[str, str | None] | None = None,
                     cwd: str | None = None, timeout: float | None = None,
                     input: str | None = None, check: bool = True) -> ProcResult:
        """One ssh session for one command (a host without the agent)."""
        remote = remote_argv(argv, env=env, cwd=cwd, timeout=timeout)
        local_timeout = None if timeout is None else timeout + 30
        return self._local.run(self.ssh_argv(remote), timeout=local_timeout, input=input,
                               check=check)

    # ---- the agent -------------------------------------------------------------------------
    def _session(self, argv: Sequence[str]) -> AgentSession | ProcResult | None:
        """The running agent (started if need be); None: use one session per command; a
        ProcResult: the host cannot be reached (ssh's exit 255 and its reason, as ``argv``
        would have failed)."""
        if self._agent_python is None:
            return None
        with self._agent_lock:
            if self._agent is not None and self._agent.alive:
                return self._agent
            if self._agent is not None:
                self._agent.close()
                self._agent = None
            command = self.ssh_argv(agent_command(self._agent_python))
            try:
                # a host under load can take long to start Python after the connection
                self._agent = AgentSession(self._local, command,
                                           hello_timeout_s=self._connect_timeout_s + 60)
            except SessionLost as lost:
                return self._lost(argv, lost)
            except AgentUnavailable as exc:
                self.agent_problem = f"no virtbench agent ({self._agent_python}: {exc})"
                self._agent_python = None
                return None
            return self._agent

    def _lost(self, argv: Sequence[str], lost: SessionLost) -> ProcResult:
        """What a command gets when the session is gone: ssh's exit 255 and its message, with
        the ssh command line (host and port) in argv for the error text."""
        return ProcResult(tuple(self.ssh_argv(list(argv))), 255, "",
                          lost.stderr or f"ssh session to {self.host} ended", 0.0)

    def _agent_run(self, agent: AgentSession, argv: Sequence[str], timeout: float | None,
                   **fields: Any) -> ProcResult:
        if not argv:
            raise VirtbenchError("empty command")
        timeout = command_timeout(timeout)  # the agent kills the command then
        try:
            reply = agent.request("run", timeout + 30, argv=list(argv), timeout=timeout,
                                  **fields)
        except SessionLost as lost:
            return self._lost(argv, lost)
        except TimeoutError as exc:
            raise subprocess.TimeoutExpired(list(argv), timeout) from exc
        code, stderr = int(reply["rc"]), reply["stderr"]
        if reply["timed_out"]:  # exit 124 as timeout(1) reports it, as without the agent
            code, stderr = 124, stderr + f"killed at its time limit of {timeout:g} s\n"
        return ProcResult(tuple(argv), code, reply["stdout"], stderr, float(reply["duration"]))

    def spawn(
        self,
        argv: Sequence[str],
        *,
        env: Mapping[str, str | None] | None = None,
        cwd: str | None = None,
        stdout: int | None = subprocess.DEVNULL,
        stderr: int | None = subprocess.DEVNULL,
    ) -> Process:
        # -tt gives the remote command a terminal, so it gets SIGHUP when the local client
        # is stopped and does not outlive the caller.
        remote = remote_argv(argv, env=env, cwd=cwd)
        full = [*self._base, "-tt", "--", self.host, shlex.join(remote)]
        return self._local.spawn(full, stdout=stdout, stderr=stderr)

    def start(self, argv: Sequence[str], *, stdout_path: str | None = None,
              stderr_path: str | None = None, env: Mapping[str, str | None] | None = None,
              cwd: str | None = None) -> Process:
        """A background process that the agent starts on the host, its output into files on
        the host: unlike ``spawn``'s ssh session it can be signalled (SIGUSR1, SIGINT) and
        waited for, and it ends with the agent's session at the latest."""
        agent = self._session(argv)
        if isinstance(agent, ProcResult):
            raise CommandFailed(agent)
        if agent is None:
            raise VirtbenchError(f"{self.name}: a process to signal on the host needs "
                                 f"virtbench's agent ({self.agent_problem or 'not started'})")
        try:
            reply = agent.request("start", 60, argv=list(argv), env=dict(env or {}), cwd=cwd,
                                  stdout=stdout_path, stderr=stderr_path)
        except SessionLost as lost:
            raise CommandFailed(self._lost(argv, lost)) from None
        except RuntimeError as exc:  # the agent could not start it (no such program, ...)
            raise VirtbenchError(f"{self.name}: cannot start {argv[0]}: {exc}") from None
        return Process(RemoteProcess(agent, int(reply["pid"]), list(argv)), list(argv))

    def fetch(self, remote_path: str, local_path: Path, *, timeout_s: float = 600.0) -> None:
        """Copy a file of the host here, byte for byte (``cat`` in an ssh session of its own:
        a pcap can be large and is not text); VirtbenchError when it takes over ``timeout_s``."""
        with open(local_path, "wb") as out:
            proc = self._local.spawn(self.ssh_argv(["cat", "--", remote_path]), stdout=out.fileno(),
                                     stderr=subprocess.PIPE)
            try:
                err = proc.wait(timeout_s).stderr or b""  # read to its end
            except BaseException as exc:  # our bound, Ctrl-C: the copy ends with its ssh
                proc.kill_group()
                local_path.unlink(missing_ok=True)
                if isinstance(exc, subprocess.TimeoutExpired):
                    raise VirtbenchError(f"{self.name}: copying {remote_path} took over "
                                         f"{timeout_s:g} s; stopped") from None
                raise
        if proc.returncode != 0:
            local_path.unlink(missing_ok=True)
            raise VirtbenchError(f"{self.name}: cannot copy {remote_path}: "
                                 f"{err.decode(errors='replace').strip()}")

    def check(self) -> list[str]:
        return cannot_run_true(self, "reach")

    batches = True
    cheap_probes = True

    def run_batch(self, argvs: Sequence[Sequence[str]], *,
                  timeout: float | None = None) -> list[ProcResult]:
        """All commands in one request to the agent (or, without it, one ``sh`` on the host):
        one round trip, not one per command."""
        if not argvs:
            return []
        agent = self._session(argvs[0])
        if agent is None:
            return self._batch_session(argvs, timeout=timeout)
        if isinstance(agent, ProcResult):
            return [ProcResult(tuple(argv), 255, "", agent.stderr, 0.0) for argv in argvs]
        timeout = command_timeout(timeout)
        total = timeout * len(argvs) + 30
        try:
            reply = agent.request("batch", total, argvs=[list(a) for a in argvs],
                                  timeout=timeout)
        except SessionLost as lost:
            return [self._lost(argv, lost) for argv in argvs]
        return _results(argvs, reply["results"])

    def gather(self, files: Sequence[str], binaries: Sequence[str],
               argvs: Sequence[Sequence[str]], *, paths: Sequence[str] = (),
               timeout: float | None = None) -> Gathered:
        """One request to the agent, which reads the files, probes the binaries and stats the
        paths without starting a process (each ``cat`` or probe costs ~3-5 ms of the host's
        CPU, and facts are gathered twice per run); without the agent, one ``sh`` as
        ``run_batch``."""
        agent = self._session(["cat", *files])
        if not isinstance(agent, AgentSession):
            return super().gather(files, binaries, argvs, paths=paths, timeout=timeout)
        timeout = command_timeout(timeout)
        total = timeout * (len(argvs) + 1) + 30
        try:
            reply = agent.request("gather", total, files=list(files), binaries=list(binaries),
                                  paths=list(paths), argvs=[list(a) for a in argvs],
                                  timeout=timeout)
        except SessionLost as lost:
            return Gathered([None] * len(files), [None] * len(binaries),
                            [self._lost(argv, lost) for argv in argvs], [None] * len(paths))
        return Gathered(reply["files"], reply["binaries"], _results(argvs, reply["results"]),
                        reply["stats"])

    def _batch_session(self, argvs: Sequence[Sequence[str]], *,
                       timeout: float | None = None) -> list[ProcResult]:
        """One ``sh`` on the host runs every command: each one's stdout, stderr and exit code
        come back between markers of a random token."""
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
        result = self._run_session(["sh", "-c", "\n".join(lines)], timeout=total, check=False)
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
        agent = self._session(["which", binary])
        if isinstance(agent, AgentSession):
            try:
                path = agent.request("which", 60, binary=binary)["path"]
            except SessionLost:
                return None
            return str(path) if path else None
        result = self._run_session(["sh", "-c", 'command -v -- "$1"', "sh", binary],
                                   check=False)
        path = result.stdout.strip()
        return path if result.returncode == 0 and path.startswith("/") else None

    def python(self) -> list[str]:
        """The interpreter ``python3`` on the host's PATH resolves to (the agent's own, found
        once: no wrapper such as a pyenv shim runs per use); ``python3`` without the agent."""
        agent = self._session(["python3"])
        if isinstance(agent, AgentSession) and agent.python:
            return [agent.python]
        return ["python3"]

    def close(self) -> None:
        """End the agent's session, stop the multiplexing master (if any) and remove its
        socket directory."""
        with self._agent_lock:
            if self._agent is not None:
                self._agent.close()
                self._agent = None
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


def _results(argvs: Sequence[Sequence[str]], replies: list[dict[str, Any]]) -> list[ProcResult]:
    """The agent's replies to a batch, as ProcResults."""
    return [ProcResult(tuple(argv), int(r["rc"]), r["stdout"], r["stderr"], float(r["duration"]))
            for argv, r in zip(argvs, replies, strict=True)]


class RemoteProcess:
    """A process the agent started on the host, driven as a ``Popen`` is (poll, wait,
    send_signal, kill). A lost session ends it (the agent kills what it started): exit 255."""

    def __init__(self, agent: AgentSession, pid: int, argv: list[str]) -> None:
        self.agent, self.pid, self.args = agent, pid, argv
        self.returncode: int | None = None

    def _ask(self, op: str, wait_s: float | None, **fields: Any) -> int | None:
        if self.returncode is not None:
            return self.returncode
        try:
            rc = self.agent.request(op, wait_s, pid=self.pid, **fields)["rc"]
        except SessionLost:
            rc = 255
        self.returncode = None if rc is None else int(rc)
        return self.returncode

    def poll(self) -> int | None:
        return self._ask("wait", 30, timeout=0)

    def wait(self, timeout: float | None = None) -> int:
        rc = self._ask("wait", None if timeout is None else timeout + 30, timeout=timeout)
        if rc is None:
            raise subprocess.TimeoutExpired(self.args, timeout or 0.0)
        return rc

    def send_signal(self, sig: int) -> None:
        self._ask("signal", 30, signal=int(sig))

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)


def _checked(result: ProcResult, check: bool) -> ProcResult:
    if check and result.returncode != 0:
        raise CommandFailed(result)
    return result


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
