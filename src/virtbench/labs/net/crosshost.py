"""cross-host: network workloads between two machines of a fleet, over their real network.

The experiment names the roles (``lab: {kind: cross-host, params: {roles: {server: h2,
client: h1}}}``); a fleet run (``virtbench run --hosts``) resolves them in its inventory, runs
the workloads on the client's host and hands this lab the server's target and address
(``connect_peer``). ``up`` starts iperf3 and irtt servers on the server host; each variant
gets the ``ClientServerPath`` net.qos-transfer reads (the server's address, target and ports,
the interfaces on both sides).

``endpoints: guests`` puts a libvirt guest on each role's host instead, bridged onto the hosts'
network with the addresses of ``guest_addresses``: the servers run in the server guest, the
workloads in the client guest (labs/net/crosshost_guests.py; docs/fleet.md, "Cross-host
guests"). A parameter of this lab, not a lab of its own: the roles, the fleet's one run on the
client's host and its peer are the same, and only the endpoints differ.
"""

from __future__ import annotations

import contextlib
import re
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field

from virtbench.contract import Params, Tool, missing_tools
from virtbench.labs.lab_contract import Lab, LabState, Manifest, lab_root
from virtbench.labs.net.crosshost_guests import (
    DATA_NIC,
    KIND,
    RoleGuest,
    address_problems,
    build_image,
    iface_of,
    new_session,
    new_tag,
    remove_role,
)
from virtbench.model import VirtbenchError
from virtbench.services import ClientServerPath
from virtbench.targets.daemon import Daemon, start_daemon
from virtbench.targets.ssh import SSHTarget
from virtbench.targets.target_contract import Target

__all__ = ["LABS", "CrossHostLab", "CrossHostParams"]

ROLES = ("server", "client")
GUEST_TOOLS = (Tool("libvirtd", "libvirt-daemon-system"),
               Tool("qemu-system-x86_64", "qemu-system-x86"), Tool("unshare", "util-linux"))
GUEST_CAVEAT = ("emulated (TCG) guests: their packet processing is emulated, so throughput and "
                "delay measure the emulation as much as the hosts' network")


class CrossHostParams(Params):
    roles: dict[str, str] = Field(
        description="inventory host of each role: {server: HOST, client: HOST}")
    iperf3_port: int = Field(5201, ge=1, le=65535, description="iperf3 server port")
    irtt_port: int = Field(2112, ge=1, le=65535, description="irtt server port (UDP)")
    endpoints: Literal["hosts", "guests"] = Field(
        "hosts", description="where the servers and the workloads run: on the roles' hosts, "
        "or in a libvirt guest on each (bridged onto the hosts' network; TCG)")
    guest_addresses: dict[str, str] = Field(
        default_factory=dict, description="endpoints guests: each role's guest address/prefix "
        "on its host's network, {server: 10.0.0.20/24, client: 10.0.0.21/24}")
    guest_image_cache: str = Field(".cache/virtbench-guest/net-image",
                                   description="endpoints guests: where the net image is built "
                                   "and cached (found at the same path on the hosts)")
    guest_memory_mib: int = Field(640, ge=512, description="endpoints guests: memory of each "
                                  "guest, MiB")
    guest_boot_timeout_s: float = Field(300.0, ge=1, le=3600, description="endpoints guests: "
                                        "wait for each guest's sshd, s")


class CrossHostLab(Lab):
    name = "cross-host"
    description = ("two fleet hosts: iperf3 and irtt servers on the server role's host, "
                   "workloads on the client role's host (run with --hosts)")
    Params = CrossHostParams
    tools = (Tool("ip", "iproute2"), Tool("ss", "iproute2"))
    provides = (ClientServerPath,)

    def __init__(self, params: BaseModel | None, workdir: Any, target: Target) -> None:
        super().__init__(params, workdir, target)
        missing = [r for r in ROLES if r not in self.params.roles]
        if missing or set(self.params.roles) - set(ROLES):
            raise VirtbenchError("lab cross-host: roles must name exactly a server and a "
                                 f"client host (got {dict(self.params.roles)})")
        if self.params.endpoints == "guests":
            problems = address_problems(self.params.guest_addresses, ROLES)
            if problems:
                raise VirtbenchError("lab cross-host: " + "; ".join(problems))
        self.server: Target | None = None
        self.server_address = ""
        self._daemons: list[Daemon] = []
        self.manifest: Manifest | None = None
        self.guests: dict[str, RoleGuest] = {}

    def connect_peer(self, server: Target, address: str) -> None:
        """The fleet gives the server role's target and the address the client reaches."""
        self.server, self.server_address = server, address

    def _server(self) -> Target:
        if self.server is None:
            raise VirtbenchError("lab cross-host needs two hosts: run the experiment with "
                                 "--hosts INVENTORY naming the roles' hosts")
        return self.server

    def check(self) -> list[str]:
        problems = super().check()
        if self.params.endpoints == "guests":
            for host, tools in ((self.target, GUEST_TOOLS),
                                (self.server, (*self.tools, *GUEST_TOOLS))):
                if host is not None:
                    problems += missing_tools(f"lab {self.name}", host.which, tools,
                                              f" on {host.describe()} (endpoints: guests)")
        elif self.server is not None:
            problems += missing_tools(f"lab {self.name}", self.server.which,
                                      (Tool("iperf3", "iperf3"), Tool("irtt", "irtt"),
                                       *self.tools), f" on the server host {self.server_address}")
        return problems

    def workloads_in_own_guests(self) -> bool:
        return bool(self.params.endpoints == "guests")  # the net image holds their tools

    def up(self) -> None:
        if self.params.endpoints == "guests":
            self._guests_up()
            return
        server, p = self._server(), self.params
        iperf3 = start_daemon(server, ["iperf3", "-s", "-p", str(p.iperf3_port), "-B",
                                       self.server_address], what="iperf3 server")
        self._daemons.append(iperf3)
        iperf3.wait_for_port(p.iperf3_port)
        irtt = start_daemon(server, ["irtt", "server", "-b",
                                     f"{self.server_address}:{p.irtt_port}"], what="irtt server")
        self._daemons.append(irtt)
        irtt.wait_for_port(p.irtt_port, udp=True)

    def _guests_up(self) -> None:
        """A guest per role on its host (crosshost_guests.py): bridges first, then the
        daemons, both guests booting at once, the servers in the server guest."""
        server, p = self._server(), self.params
        client_address = _route(self.target, self.server_address)[1]
        hosts = {"server": (server, self.server_address), "client": (self.target, client_address)}
        if not all(isinstance(host, SSHTarget) for host, _ in hosts.values()):
            raise VirtbenchError("lab cross-host, endpoints guests: both roles' hosts must be "
                                 "SSH hosts (run --hosts INVENTORY)")
        tags = {role: new_tag(role) for role in ROLES}
        self.manifest = Manifest(lab_root() / f"{tags['client']}.json", self.name)
        for role in ROLES:
            host, address = hosts[role]
            assert isinstance(host, SSHTarget)
            self.guests[role] = RoleGuest(role, p.roles[role], host, address,
                                          p.guest_addresses[role], tags[role],
                                          new_session(tags[role]))
        for guest in self.guests.values():
            guest.take_interface(self.manifest)
        cache = Path(p.guest_image_cache).resolve()
        image = build_image(cache)
        for guest in self.guests.values():
            guest.start_libvirtd(cache.parent / "qemu-caps")
            guest.define(image, p.guest_memory_mib)
        for guest in self.guests.values():
            guest.wait_guest(p.guest_boot_timeout_s)
        self.guests["server"].start_servers(p.iperf3_port, p.irtt_port)

    def _guests_enter(self) -> LabState:
        srv, cli, p = self.guests["server"], self.guests["client"], self.params
        assert srv.target is not None and cli.target is not None
        services = self.publish(ClientServerPath(
            server_ip=srv.address, server_iface=DATA_NIC, server_target=srv.target,
            client_ip=cli.address, client_iface=DATA_NIC, iperf3_port=p.iperf3_port,
            irtt_port=p.irtt_port))
        return LabState(target=cli.target, services=services,
                        notes={"server": srv.describe(), "client": cli.describe(),
                               "guests": f"2 × 1 vCPU, {p.guest_memory_mib} MiB, qemu (TCG)"},
                        caveats=(GUEST_CAVEAT,))

    def enter(self, variant: str, knobs: Mapping[str, Any]) -> LabState:
        if self.params.endpoints == "guests":
            if not self.guests:
                self.up()
            return self._guests_enter()
        server, p = self._server(), self.params
        client_iface, client_ip = _route(self.target, self.server_address)
        server_iface = iface_of(server, self.server_address)
        services = self.publish(ClientServerPath(
            server_ip=self.server_address, server_iface=server_iface, server_target=server,
            client_ip=client_ip, client_iface=client_iface, iperf3_port=p.iperf3_port,
            irtt_port=p.irtt_port))
        notes = {"server": f"{p.roles['server']} ({server.describe()}, {server_iface})",
                 "client": f"{p.roles['client']} ({self.target.describe()}, {client_iface})"}
        return LabState(services=services, notes=notes)

    def down(self) -> None:
        while self._daemons:
            self._daemons.pop().stop()
        problems = []
        for guest in reversed(list(self.guests.values())):
            if guest.target is not None:
                guest.target.close()
                guest.target = None
            if guest.conn is not None:
                with contextlib.suppress(Exception):  # a broken connection has nothing to close
                    guest.conn.close()
                guest.conn = None
            if self.manifest is None or not guest.record:  # nothing of it on the host yet
                shutil.rmtree(guest.session, ignore_errors=True)
                continue
            try:
                remove_role(guest.record, guest.host)
            except VirtbenchError as exc:  # kept in the manifest for `virtbench lab clean`
                problems.append(str(exc))
                continue
            finally:
                if guest.daemon is not None:  # its ssh client, ended with the daemon: reaped
                    guest.daemon.stop()
            self.manifest.remove(KIND, guest.record)
        self.guests = {}
        if self.manifest is not None and not problems:
            self.manifest.delete()
            self.manifest = None
        if problems:
            raise VirtbenchError("; ".join(problems))

    @classmethod
    def clean(cls, manifest: Manifest) -> list[str]:
        removed = []
        for item in manifest.items(KIND):
            try:
                removed.append(remove_role(item))
            except VirtbenchError:
                continue  # unreachable now: `lab clean` keeps the manifest and says so
            manifest.remove(KIND, item)
        return removed


def _route(target: Target, address: str) -> tuple[str, str]:
    """(interface, source address) the client uses to reach ``address``."""
    out = target.run(["ip", "-o", "route", "get", address]).stdout
    dev, src = re.search(r"\bdev (\S+)", out), re.search(r"\bsrc (\S+)", out)
    if dev is None or src is None:
        raise VirtbenchError(f"no route from {target.describe()} to {address}: {out.strip()}")
    return dev.group(1), src.group(1)


LABS = (CrossHostLab,)
