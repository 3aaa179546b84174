"""Commands inside a libvirt guest: over SSH to its address, or through the QEMU guest agent.

The guest agent path needs no network: ``guest-exec`` runs the argv (wrapped in ``env`` and
``timeout`` like the SSH target) and ``guest-exec-status`` collects exit code and output.
It cannot run long-lived background processes (``spawn``); give the guest an SSH address for
workloads that need servers.
"""

from __future__ import annotations

import base64
import contextlib
import importlib
import json
import subprocess
import time
import xml.etree.ElementTree as ET
from collections.abc import Mapping, Sequence
from typing import Any

from virtbench.model import VirtbenchError
from virtbench.targets.libvirt_connection import open_connection
from virtbench.targets.process import Process
from virtbench.targets.ssh import SSHTarget, remote_argv
from virtbench.targets.target_contract import (
    CommandFailed,
    Gathered,
    ProcResult,
    Target,
    command_timeout,
)

__all__ = ["LibvirtGuestTarget", "agent_channel_connected", "guest_address"]

AGENT_CHANNEL = "org.qemu.guest_agent.0"


def agent_channel_connected(domain_xml: str) -> bool:
    """True when the domain has a guest-agent channel and the agent in it is connected."""
    root = ET.fromstring(domain_xml)
    for target in root.findall("devices/channel/target"):
        if target.get("name") == AGENT_CHANNEL:
            return target.get("state") == "connected"
    return False


def guest_address(dom: Any) -> str | None:
    """The guest's first IPv4 address from DHCP leases, the agent or the ARP table."""
    import libvirt

    for source in (
        libvirt.VIR_DOMAIN_INTERFACE_ADDRESSES_SRC_LEASE,
        libvirt.VIR_DOMAIN_INTERFACE_ADDRESSES_SRC_AGENT,
        libvirt.VIR_DOMAIN_INTERFACE_ADDRESSES_SRC_ARP,
    ):
        try:
            interfaces = dom.interfaceAddresses(source, 0)
        except libvirt.libvirtError:
            continue
        for name, info in (interfaces or {}).items():
            if name == "lo":
                continue
            for addr in info.get("addrs") or []:
                if addr.get("type") == libvirt.VIR_IP_ADDR_TYPE_IPV4:
                    return str(addr["addr"])
    return None


class LibvirtGuestTarget(Target):
    """A libvirt domain's guest. With ``ssh`` every call goes over SSH; otherwise through
    the QEMU guest agent of domain ``domain`` on connection ``conn``."""

    def __init__(self, conn: Any | None, domain: str, *, ssh: SSHTarget | None = None,
                 agent_timeout_s: int = 10, connect: str | None = None) -> None:
        """``conn`` is an open libvirt connection (the caller's; never closed here) or None:
        then one to ``connect`` is opened when the guest agent is first used (the SSH path
        needs no libvirt at all) and closed by :meth:`close`."""
        self.conn = conn
        self.connect = connect
        self._own_conn: Any = None
        self.domain = domain
        self.ssh = ssh
        self.agent_timeout_s = agent_timeout_s
        via = ssh.describe() if ssh else "guest agent"
        self.name = f"guest:{domain} via {via}"
        # Over SSH a batch is one round trip, as on any SSH host (facts: a dozen commands, each
        # ~0.1 CPU-s of a TCG guest as a session of its own).
        self.batches = ssh is not None and ssh.batches

    def _connection(self) -> Any:
        if self.conn is not None:
            return self.conn
        if self._own_conn is None:
            self._own_conn = open_connection(self.connect)
        return self._own_conn

    # -- guest agent -----------------------------------------------------------------------
    def _agent(self, command: dict[str, Any]) -> Any:
        import libvirt

        # Imported by name: the module ships no type information.
        libvirt_qemu: Any = importlib.import_module("libvirt_qemu")
        try:
            dom = self._connection().lookupByName(self.domain)
            reply = libvirt_qemu.qemuAgentCommand(dom, json.dumps(command),
                                                  self.agent_timeout_s, 0)
        except libvirt.libvirtError as exc:
            raise VirtbenchError(f"guest agent of {self.domain}: {exc}") from exc
        return json.loads(reply)["return"]

    def _agent_run(self, argv: list[str], input: str | None, timeout: float | None
                   ) -> tuple[int, str, str]:
        args: dict[str, Any] = {"path": argv[0], "arg": argv[1:], "capture-output": True}
        if input is not None:
            args["input-data"] = base64.b64encode(input.encode()).decode()
        pid = self._agent({"execute": "guest-exec", "arguments": args})["pid"]
        limit = command_timeout(timeout)
        deadline = time.monotonic() + limit + 30
        delay = 0.05
        while True:  # ends: done, or past the deadline below
            status = self._agent({"execute": "guest-exec-status", "arguments": {"pid": pid}})
            if status.get("exited"):
                out = base64.b64decode(status.get("out-data", "")).decode(errors="replace")
                err = base64.b64decode(status.get("err-data", "")).decode(errors="replace")
                code = status.get("exitcode", 128 + int(status.get("signal", 0)))
                return int(code), out, err
            if time.monotonic() > deadline:
                raise VirtbenchError(f"guest agent: {argv[0]} still running after {limit:g} s")
            time.sleep(delay)
            delay = min(delay * 2, 1.0)

    # -- Target ----------------------------------------------------------------------------
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
        if self.ssh is not None:
            return self.ssh.run(argv, env=env, cwd=cwd, timeout=timeout, input=input,
                                check=check)
        full = remote_argv(argv, env=env, cwd=cwd, timeout=timeout)
        started = time.perf_counter()
        code, out, err = self._agent_run(full, input, timeout)
        result = ProcResult(tuple(full), code, out, err, time.perf_counter() - started)
        if check and code != 0:
            raise CommandFailed(result)
        return result

    def run_batch(self, argvs: Sequence[Sequence[str]], *,
                  timeout: float | None = None) -> list[ProcResult]:
        if self.ssh is not None:
            return self.ssh.run_batch(argvs, timeout=timeout)
        return super().run_batch(argvs, timeout=timeout)

    def gather(self, files: Sequence[str], binaries: Sequence[str],
               argvs: Sequence[Sequence[str]], *, paths: Sequence[str] = (),
               timeout: float | None = None) -> Gathered:
        if self.ssh is not None:
            return self.ssh.gather(files, binaries, argvs, paths=paths, timeout=timeout)
        return super().gather(files, binaries, argvs, paths=paths, timeout=timeout)

    def spawn(
        self,
        argv: Sequence[str],
        *,
        env: Mapping[str, str | None] | None = None,
        cwd: str | None = None,
        stdout: int | None = subprocess.DEVNULL,
        stderr: int | None = subprocess.DEVNULL,
    ) -> Process:
        if self.ssh is None:
            raise VirtbenchError(
                f"{self.name}: background processes need SSH access to the guest "
                "(the guest agent can only run commands to completion)"
            )
        return self.ssh.spawn(argv, env=env, cwd=cwd, stdout=stdout, stderr=stderr)

    def check(self) -> list[str]:
        if self.ssh is not None:
            return self.ssh.check()
        try:
            self._agent({"execute": "guest-ping"})
        except (VirtbenchError, ImportError) as exc:
            return [f"cannot reach {self.name}: {exc}"]
        return []

    def which(self, binary: str) -> str | None:
        if self.ssh is not None:
            return self.ssh.which(binary)
        result = self.run(["sh", "-c", 'command -v -- "$1"', "sh", binary], check=False)
        path = result.stdout.strip()
        return path if result.returncode == 0 and path.startswith("/") else None

    def python(self) -> list[str]:
        return ["python3"]

    def close(self) -> None:
        if self.ssh is not None:
            self.ssh.close()
        if self._own_conn is not None:
            with contextlib.suppress(Exception):
                self._own_conn.close()
            self._own_conn = None


def from_params(domain: str, connect: str | None = None, ssh_host: str | None = None,
                ssh_user: str | None = None, ssh_port: int = 22,
                identity_file: str | None = None,
                known_hosts: str | None = None) -> LibvirtGuestTarget:
    """``target: {kind: libvirt-guest, params: {domain: D, ssh_host: ADDR, ...}}``.

    Without ``ssh_host`` commands go through the QEMU guest agent (libvirt at ``connect``,
    default ``$LIBVIRT_DEFAULT_URI``, else ``qemu:///system``); with it libvirt is not needed.
    """
    ssh = (SSHTarget(ssh_host, user=ssh_user, port=ssh_port, identity_file=identity_file,
                     known_hosts=known_hosts) if ssh_host else None)
    return LibvirtGuestTarget(None, domain, ssh=ssh, connect=connect)
