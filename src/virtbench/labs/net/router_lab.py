"""Study 002's lab: a virtual router (a forwarding namespace) between two subnets, plus 0..N
stressed neighbours (stress-ng, each in its own cgroup with a CPU quota).

The router's traffic (the iperf3 sender and receiver, which also carry the forwarding work in
their softirq context) runs in a cgroup of its own, a sibling of the neighbours' groups: the CPU
scheduler weighs groups, not processes, so each neighbour then weighs as much as the router —
as VNF guests on one hypervisor do. Were the router's processes left outside, all neighbours
together would weigh as one group, and adding neighbours would add no CPU contention.

    vbnet-ID-snd (10.78.1.2) ── vbnet-ID-rtr (10.78.1.1 | 10.78.2.1, ip_forward) ── vbnet-ID-rcv
                                                                                     (10.78.2.2)
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any, ClassVar

from pydantic import BaseModel, Field, NonNegativeInt

from virtbench.contract import Knob, Params, Tool
from virtbench.labs.cgroups import Cgroup, CgroupLimits
from virtbench.labs.daemons import start_recorded
from virtbench.labs.lab_contract import LabState
from virtbench.labs.net.neighbours import Neighbour, start_neighbour
from virtbench.labs.net.netns_lab import NetnsLab
from virtbench.labs.net.netops import add_veth, pin_neighbours, set_address
from virtbench.model import VirtbenchError
from virtbench.services import PacketPath, RouterPath
from virtbench.targets.cgroup import CgroupTarget
from virtbench.targets.daemon import Daemon
from virtbench.targets.local import NetnsTarget
from virtbench.targets.target_contract import Target

__all__ = ["LABS", "VnfRouterLab"]

ROUTER_PORT = 5201
RECEIVER_IP = "10.78.2.2"


class VnfRouterParams(Params):
    neighbour_cpu_cores: float = Field(
        1.0, ge=0.01, le=4096,
            description="CPU quota of each neighbour's cgroup, in cores (CFS quota)")
    neighbour_load_pct: int = Field(99, ge=1, le=100,
                                    description="stress-ng --cpu-load of each neighbour (%)")
    neighbour_cpus: list[int] | None = Field(
        None, description="CPUs the neighbours may use (cpuset); None: all")
    max_neighbours: int = Field(16, ge=0, description="refuse larger 'neighbours' knobs")
    router_cpu_cores: float | None = Field(
        None, ge=0.01, le=4096,
            description="CPU quota of the router's cgroup (router traffic: iperf3 "
                                "sender and receiver), in cores; None: all CPUs (no cap)")


class VnfRouterLab(NetnsLab):
    name = "vnf-router"
    description = ("a router namespace forwarding between a sender and a receiver namespace, "
                   "with N CPU-stressed neighbours held to their cgroup CPU quota")
    Params = VnfRouterParams
    tools = (Tool("ip", "iproute2"), Tool("ss", "iproute2"), Tool("iperf3", "iperf3"),
             Tool("stress-ng", "stress-ng"))
    knobs: ClassVar[tuple[Knob, ...]] = (
        Knob("neighbours", "number of CPU-stressed neighbours running beside the router "
             "(at most the lab param max_neighbours)", NonNegativeInt),
    )
    switch_cost = "cheap"
    provides = (RouterPath, PacketPath)

    def __init__(self, params: BaseModel | None, workdir: Any, target: Target) -> None:
        super().__init__(params, workdir, target)
        self.ns = {role: self.prefix + role for role in ("snd", "rtr", "rcv")}
        self.server: Daemon | None = None
        self.neighbours: list[Neighbour] = []
        self.router_group: Cgroup | None = None

    def up(self) -> None:
        manifest = self._create_namespaces(self.ns.values())
        t, ns = self.target, self.ns
        add_veth(t, ns["snd"], "eth0", ns["rtr"], "left")
        add_veth(t, ns["rtr"], "right", ns["rcv"], "eth0")
        set_address(t, ns["snd"], "eth0", "10.78.1.2/24")
        set_address(t, ns["rtr"], "left", "10.78.1.1/24")
        set_address(t, ns["rtr"], "right", "10.78.2.1/24")
        set_address(t, ns["rcv"], "eth0", "10.78.2.2/24")
        # No ARP on either link during a trial: net.packet-rate counts frames with the
        # sender's tx and the receiver's rx counters, and a router's ARP probe of the
        # receiver counted one frame received that nobody offered (CI: lost_frames -1).
        pin_neighbours(t, [(ns["snd"], "eth0", "10.78.1.2"), (ns["rtr"], "left", "10.78.1.1")])
        pin_neighbours(t, [(ns["rtr"], "right", "10.78.2.1"), (ns["rcv"], "eth0", "10.78.2.2")])
        t.run(["ip", "-n", ns["snd"], "route", "add", "default", "via", "10.78.1.1"])
        t.run(["ip", "-n", ns["rcv"], "route", "add", "default", "via", "10.78.2.1"])
        t.run(["ip", "netns", "exec", ns["rtr"], "sysctl", "-qw", "net.ipv4.ip_forward=1"])
        cores = self.params.router_cpu_cores or float(os.cpu_count() or 1)
        self.router_group = Cgroup(f"{self.prefix}router",
                                   CgroupLimits(cpu_quota_cores=cores), manifest)
        self.router_group.create()
        self.server = start_recorded(
            manifest, CgroupTarget(NetnsTarget(ns["rcv"]), self.router_group),
            ["iperf3", "-s", "-p", str(ROUTER_PORT)], log=self.rundir / "iperf3.log")
        self.server.wait_for_port(ROUTER_PORT)

    def _set_neighbours(self, count: int) -> None:
        assert self.manifest is not None
        p = self.params
        while len(self.neighbours) > count:
            self.neighbours.pop().stop()
        while len(self.neighbours) < count:
            i = len(self.neighbours)
            self.neighbours.append(start_neighbour(
                self.host, self.manifest, f"{self.prefix}nb{i}", i,
                p.neighbour_cpu_cores, p.neighbour_load_pct, p.neighbour_cpus))

    def enter(self, variant: str, knobs: Mapping[str, Any]) -> LabState:
        if self.manifest is None:
            self.up()
        raw = knobs.get("neighbours", 0)
        if isinstance(raw, bool) or not isinstance(raw, int) or raw < 0:
            raise VirtbenchError(f"variant {variant}: knob 'neighbours' must be an integer ≥ 0, "
                                 f"got {raw!r}")
        if raw > self.params.max_neighbours:
            raise VirtbenchError(f"variant {variant}: knob 'neighbours' = {raw} exceeds the lab "
                                 f"param max_neighbours = {self.params.max_neighbours}")
        self._set_neighbours(raw)
        services = self.publish(
            RouterPath(sender_ns=self.ns["snd"], router_ns=self.ns["rtr"],
                       receiver_ns=self.ns["rcv"], receiver_ip=RECEIVER_IP,
                       iperf3_port=ROUTER_PORT, neighbours=raw),
            # The packet generator (net.packet-rate) runs outside the router's cgroup: inside
            # it, SCHED_FIFO is refused (no real-time budget) and the generator would share
            # the quota with the forwarding work it measures.
            PacketPath(sender_ns=self.ns["snd"], sender_iface="eth0",
                       receiver_ns=self.ns["rcv"], receiver_iface="eth0",
                       receiver_ip=RECEIVER_IP, next_hop_ns=self.ns["rtr"],
                       next_hop_iface="left", generator_target=NetnsTarget(self.ns["snd"])))
        cap = self.params.router_cpu_cores
        notes = {"router": "namespace with ip_forward=1 between 10.78.1.0/24 and 10.78.2.0/24; "
                           "iperf3 sender and receiver in the router's own cgroup ("
                           + (f"{cap:g} cores" if cap else "no CPU cap")
                           + "), a sibling of the neighbours' groups; trafgen (packet-rate) "
                             "outside both; permanent ARP entries on both links, IPv6 off",
                 "neighbours": f"{raw} × stress-ng --cpu 1 --cpu-load "
                               f"{self.params.neighbour_load_pct}, each cgroup-limited to "
                               f"{self.params.neighbour_cpu_cores:g} cores"}
        assert self.router_group is not None
        return LabState(target=CgroupTarget(NetnsTarget(self.ns["snd"]), self.router_group),
                        services=services, notes=notes)

    def leave(self, variant: str) -> None:
        """Neighbours stay for the next variant (adding/removing only the difference)."""

    def down(self) -> None:
        try:
            if self.manifest is not None:
                self._set_neighbours(0)
        finally:
            if self.server is not None:
                self.server.stop()
                self.server = None
            try:
                if self.router_group is not None:
                    self.router_group.remove()  # kills what the workload left in it
                    self.router_group = None
            finally:
                self._remove_recorded()


LABS = (VnfRouterLab,)
