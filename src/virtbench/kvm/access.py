"""How virtbench reaches inside a guest: SSH, the QEMU guest agent, or a serial log file."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from virtbench.inputs.ascii_numbers import parse_integer
from virtbench.kvm.apply import GuestProbe
from virtbench.kvm.flag_probes import ConsoleLogProbe, TargetProbe
from virtbench.model import VirtbenchError
from virtbench.targets.libvirt_guest import LibvirtGuestTarget
from virtbench.targets.ssh import SSHTarget

__all__ = ["GuestAccess", "parse_ssh_spec"]


def parse_ssh_spec(spec: str) -> tuple[str | None, str, int]:
    """``[user@]host[:port]`` -> (user, host, port)."""
    user, _, rest = spec.rpartition("@")
    host, port = rest, 22
    if rest.count(":") == 1:
        host, _, port_text = rest.partition(":")
        try:
            port = parse_integer(port_text)
        except ValueError as exc:
            raise VirtbenchError(f"ssh: port '{port_text}' in '{spec}' is not a number") from exc
    if not host:
        raise VirtbenchError(f"ssh: no host in '{spec}' (expected [user@]host[:port])")
    return (user or None), host, port


@dataclass
class GuestAccess:
    """Options for reaching the guest; at most one of ssh / agent / console_log is used
    (in that order of preference)."""

    ssh: str | None = None
    """``[user@]host[:port]`` of the guest."""
    known_hosts: str | None = None
    identity_file: str | None = None
    agent: bool = False
    console_log: Path | None = None

    def describe(self) -> str:
        if self.ssh:
            return f"ssh {self.ssh}"
        if self.agent:
            return "QEMU guest agent"
        if self.console_log:
            return f"serial log {self.console_log}"
        return "none"

    def target(self, conn: Any, domain: str) -> LibvirtGuestTarget | None:
        """The guest as a Target (None when only a serial log is available)."""
        if self.ssh:
            user, host, port = parse_ssh_spec(self.ssh)
            ssh = SSHTarget(host, user=user, port=port, known_hosts=self.known_hosts,
                            identity_file=self.identity_file)
            return LibvirtGuestTarget(conn, domain, ssh=ssh)
        if self.agent:
            return LibvirtGuestTarget(conn, domain)
        return None

    def probe(self, conn: Any, domain: str) -> GuestProbe | None:
        target = self.target(conn, domain)
        if target is not None:
            return TargetProbe(target)
        if self.console_log is not None:
            return ConsoleLogProbe(self.console_log)
        return None
