"""Reaching a fleet host: its SSH target, and a first command that says why it failed."""

from __future__ import annotations

import subprocess
from pathlib import Path

from virtbench.fleet.inventory import FleetHost
from virtbench.targets.local import NetnsTarget
from virtbench.targets.ssh import SSHTarget

__all__ = ["connect", "default_known_hosts", "probe", "ssh_problem"]


def default_known_hosts() -> str:
    return str(Path.home() / ".ssh" / "known_hosts")


def connect(host: FleetHost, *, known_hosts: str | None = None, netns: str | None = None,
            connect_timeout_s: int = 5) -> SSHTarget:
    """An SSH target for ``host``: host key checked against ``known_hosts`` (the host's own
    inventory file first), the ssh client run inside ``netns`` when given."""
    return SSHTarget(host.address, user=host.user, port=host.port, identity_file=host.key_file,
                     known_hosts=host.known_hosts or known_hosts,
                     connect_timeout_s=connect_timeout_s, extra_options=host.ssh_args,
                     via=NetnsTarget(netns) if netns else None)


def ssh_problem(host: FleetHost, stderr: str, known_hosts: str | None) -> str:
    """One line saying why ssh failed and what to do, from the client's own stderr."""
    where = f"{host.address} port {host.port}"
    file = host.known_hosts or known_hosts or default_known_hosts()
    keyscan = (f"ssh-keyscan -p {host.port} {host.address}" if host.port != 22
               else f"ssh-keyscan {host.address}")
    if "REMOTE HOST IDENTIFICATION HAS CHANGED" in stderr:
        return (f"host key of {where} CHANGED since it was recorded in {file}: refusing to "
                "connect; if the host was reinstalled, check the new key's fingerprint on the "
                f"host and replace its line (ssh-keygen -R '[{host.address}]:{host.port}' "
                f"-f {file})")
    if "Host key verification failed" in stderr or "host key is known" in stderr:
        return (f"host key of {where} is unknown (not in {file}); virtbench never accepts a "
                f"key blindly: compare `{keyscan} | ssh-keygen -lf -` with the key on the host "
                f"(ssh-keygen -lf /etc/ssh/ssh_host_ed25519_key.pub), then add it: "
                f"{keyscan} >> {file}")
    if "Permission denied" in stderr:
        return (f"login refused by {where} (Permission denied): give the key with "
                "ansible_ssh_private_key_file or load it into ssh-agent")
    for marker in ("Connection refused", "timed out", "No route to host",
                   "Could not resolve hostname", "Network is unreachable", "Connection closed",
                   "Connection reset"):
        if marker in stderr:
            return f"unreachable: {where}: {marker}"
    last = stderr.strip().splitlines()[-1:] or ["no message"]
    return f"ssh to {where} failed: {last[0]}"


def probe(target: SSHTarget, host: FleetHost, known_hosts: str | None) -> str | None:
    """None when ``host`` runs a command, else the reason it cannot (see ssh_problem)."""
    for attempt in (1, 2):  # a second try: a master connection set up under load can stall
        try:
            result = target.run(["true"], check=False, timeout=20)
        except subprocess.TimeoutExpired:
            if attempt == 2:
                return f"unreachable: {host.address} port {host.port}: ssh timed out"
            continue
        if result.returncode == 0:
            return None
        return ssh_problem(host, result.stderr, known_hosts)
    return None  # not reached: the loop returns
