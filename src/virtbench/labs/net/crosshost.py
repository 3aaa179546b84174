"""cross-host: network workloads between two machines of a fleet, over their real network.

The experiment names the roles (``lab: {kind: cross-host, params: {roles: {server: h2,
client: h1}}}``); a fleet run (``virtbench run --hosts``) resolves them in its inventory, runs
the workloads on the client's host and hands this lab the server's target and address
(``connect_peer``). ``up`` starts iperf3 and irtt servers on the server host; each variant
gets the ``ClientServerPath`` net.qos-transfer reads (the server's address, target and ports,
the interfaces on both sides).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, Field

from virtbench.contract import Params, Tool, missing_tools
from virtbench.labs.lab_contract import Lab, LabState
from virtbench.model import VirtbenchError
from virtbench.services import ClientServerPath
from virtbench.targets.daemon import Daemon, start_daemon
from virtbench.targets.target_contract import Target

__all__ = ["LABS", "CrossHostLab", "CrossHostParams"]

ROLES = ("server", "client")


class CrossHostParams(Params):
    roles: dict[str, str] = Field(
        description="inventory host of each role: {server: HOST, client: HOST}")
    iperf3_port: int = Field(5201, ge=1, le=65535, description="iperf3 server port")
    irtt_port: int = Field(2112, ge=1, le=65535, description="irtt server port (UDP)")


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
        self.server: Target | None = None
        self.server_address = ""
        self._daemons: list[Daemon] = []

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
        if self.server is not None:
            problems += missing_tools(f"lab {self.name}", self.server.which,
                                      (Tool("iperf3", "iperf3"), Tool("irtt", "irtt"),
                                       *self.tools), f" on the server host {self.server_address}")
        return problems

    def up(self) -> None:
        server, p = self._server(), self.params
        iperf3 = start_daemon(server, ["iperf3", "-s", "-p", str(p.iperf3_port), "-B",
                                       self.server_address], what="iperf3 server")
        self._daemons.append(iperf3)
        iperf3.wait_for_port(p.iperf3_port)
        irtt = start_daemon(server, ["irtt", "server", "-b",
                                     f"{self.server_address}:{p.irtt_port}"], what="irtt server")
        self._daemons.append(irtt)
        irtt.wait_for_port(p.irtt_port, udp=True)

    def enter(self, variant: str, knobs: Mapping[str, Any]) -> LabState:
        server, p = self._server(), self.params
        client_iface, client_ip = _route(self.target, self.server_address)
        server_iface = _iface_of(server, self.server_address)
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


def _route(target: Target, address: str) -> tuple[str, str]:
    """(interface, source address) the client uses to reach ``address``."""
    out = target.run(["ip", "-o", "route", "get", address]).stdout
    dev, src = re.search(r"\bdev (\S+)", out), re.search(r"\bsrc (\S+)", out)
    if dev is None or src is None:
        raise VirtbenchError(f"no route from {target.describe()} to {address}: {out.strip()}")
    return dev.group(1), src.group(1)


def _iface_of(target: Target, address: str) -> str:
    out = target.run(["ip", "-o", "addr", "show"]).stdout
    for line in out.splitlines():
        fields = line.split()
        if len(fields) > 3 and fields[3].split("/")[0] == address:
            return fields[1].split("@")[0]
    raise VirtbenchError(f"{target.describe()} has no interface with address {address}")


LABS = (CrossHostLab,)
