"""Study 001's lab: server/client and background sender/receiver namespaces on one switch.

Topology (all inside namespaces this lab creates; nothing touches the host's network)::

    vbnet-ID-srv (10.77.0.1, iperf3 + irtt servers) ─┐
    vbnet-ID-cli (10.77.0.2, receives, captures)   ─┤ switch in vbnet-ID-sw:
    vbnet-ID-bgs (10.77.0.3, background sender)    ─┤ linux-bridge | ovs | ovs-dpdk
    vbnet-ID-bgr (10.77.0.4, background receiver)  ─┘
"""

from __future__ import annotations

import re
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, Field, NonNegativeFloat, field_validator

from virtbench.contract import Knob, Params, Tool
from virtbench.labs.daemons import start_recorded
from virtbench.labs.lab_contract import LabState
from virtbench.labs.net.background import BACKGROUND_PORT, start_background
from virtbench.labs.net.hugepages import HugepageReservation
from virtbench.labs.net.net_leftovers import OUR_PREFIX
from virtbench.labs.net.netns_lab import NetnsLab
from virtbench.labs.net.netops import (
    disable_offloads,
    pin_neighbours,
)
from virtbench.labs.net.ovs import DpdkOptions
from virtbench.labs.net.switches import SWITCH_KINDS, Host, OvsDpdk, Switch, make_switch
from virtbench.model import VirtbenchError
from virtbench.services import ClientServerPath, PacketPath, Service, VirtualSwitch
from virtbench.targets.daemon import Daemon
from virtbench.targets.local import NetnsTarget
from virtbench.targets.target_contract import Target

__all__ = ["FOREGROUND_PORT", "IRTT_PORT", "LABS", "SUBNET", "VSwitchLab", "VSwitchParams"]

FOREGROUND_PORT = 5201
IRTT_PORT = 2112
SUBNET = "10.77.0"


class VSwitchParams(Params):
    background_settle_s: float = Field(
        1.0, ge=0, le=3600,
            description="seconds to let background traffic run before a variant's trials")
    offloads: bool = Field(
        True, description="keep TSO/GSO/GRO/checksum offloads on the hosts' interfaces; False "
        "puts MTU-sized packets on the wire (like the study's VMs; slower, but captures at "
        "sender and receiver then count the same packets)")
    dpdk_memory_mb: int = Field(512, ge=64, description="DPDK memory (MiB), -m")
    dpdk_hugepages: Literal["none", "system", "reserve"] = Field(
        "none", description="DPDK memory: none = --no-huge --legacy-mem (works anywhere); "
        "system = hugepages the host already reserved and mounted; reserve = the lab adds "
        "dpdk_memory_mb + 64 MiB of 2 MiB pages to the kernel pool, mounts a private hugetlbfs "
        "and gives both back when the switch goes (also via 'virtbench lab clean')")
    vhost_user_ports: list[str] = Field(
        default_factory=list, description="extra OVS-DPDK ports of type dpdkvhostuserclient, "
        "one per name, for VMs on this host (QEMU/libvirt as vhost-user server on the socket "
        "the lab reports in the variant's notes and the service 'vhost_user_sockets'); "
        "switch ovs-dpdk only")
    dpdk_physical_ports: dict[str, str] = Field(
        default_factory=dict, description="extra OVS-DPDK ports on physical NICs, name → DPDK "
        "devargs (a PCI address such as 0000:03:00.0, the NIC bound to vfio-pci beforehand); "
        "joins machines behind those NICs to the switch; switch ovs-dpdk only")
    dpdk_pmd_cpu_mask: str = Field("0x2", description="CPUs of the DPDK poll-mode thread")
    dpdk_lcore_mask: str = Field("0x1", description="CPUs of DPDK's other threads")
    dpdk_pmd_max_sleep_us: int = Field(
        0, ge=0, le=10_000, description="OVS's pmd-maxsleep (OVS >= 3.1): microseconds an idle "
        "poll-mode thread may sleep between polls, giving its CPU back at low load at the cost "
        "of latency for the first packets after a pause; 0 = OVS's default (poll without "
        "pause, a whole CPU busy)")

    @field_validator("vhost_user_ports", "dpdk_physical_ports")
    @classmethod
    def _port_names(cls, names: Any) -> Any:
        for name in names:
            if not re.fullmatch(r"[A-Za-z0-9_]{1,16}", name):
                raise ValueError(f"port name {name!r}: use 1-16 letters, digits, _")
        if len(set(names)) != len(list(names)):
            raise ValueError("port names must be unique")
        return names


class VSwitchLab(NetnsLab):
    name = "vswitch"
    description = ("namespaces for a sender, a receiver and a background pair joined by a "
                   "Linux bridge, Open vSwitch (netdev) or OVS-DPDK; background UDP at a rate")
    Params = VSwitchParams
    tools: ClassVar[tuple[Tool, ...]] = (
        Tool("ip", "iproute2"), Tool("ss", "iproute2"), Tool("ethtool", "ethtool"),
        Tool("iperf3", "iperf3"), Tool("irtt", "irtt"),
        Tool("ovs-vsctl", "openvswitch-switch"), Tool("ovsdb-server", "openvswitch-switch"),
        Tool("ovs-vswitchd", "openvswitch-switch"),
    )
    knobs: ClassVar[tuple[Knob, ...]] = (
        Knob("switch", "the virtual switch joining the namespaces (ovs: Open vSwitch with the "
             "userspace netdev datapath)", choices=SWITCH_KINDS),
        Knob("background_mbps", "background UDP payload rate in Mbit/s (10^6 bit/s) between the "
             "background pair; 0 = none", NonNegativeFloat),
    )
    switch_cost = "expensive"
    provides: ClassVar[tuple[type[Service], ...]] = (ClientServerPath, PacketPath,
                                                     VirtualSwitch)

    def __init__(self, params: BaseModel | None, workdir: Any, target: Target) -> None:
        super().__init__(params, workdir, target)
        self.sw_ns = self.prefix + "sw"
        self.hosts = {
            role: Host(role, self.prefix + role, f"{SUBNET}.{i}/24")
            for i, role in enumerate(("srv", "cli", "bgs", "bgr"), start=1)
        }
        self.switch: Switch | None = None
        self.servers: list[Daemon] = []
        self.background: Daemon | None = None
        self.background_mbps = 0.0
        self.hugepages: HugepageReservation | None = None

    # -- lifecycle ---------------------------------------------------------------------------
    def up(self) -> None:
        self._create_namespaces((self.sw_ns, *(h.namespace for h in self.hosts.values())))

    def _start_servers(self) -> None:
        assert self.manifest is not None
        srv, bgr = self.hosts["srv"].namespace, self.hosts["bgr"].namespace
        logs = self.rundir
        fg, irtt, bg = (
            start_recorded(self.manifest, NetnsTarget(srv),
                           ["iperf3", "-s", "-p", str(FOREGROUND_PORT)],
                           log=logs / "iperf3-foreground.log"),
            start_recorded(self.manifest, NetnsTarget(srv),
                           ["irtt", "server", "-b", f":{IRTT_PORT}"], log=logs / "irtt-server.log"),
            start_recorded(self.manifest, NetnsTarget(bgr),
                           ["iperf3", "-s", "-p", str(BACKGROUND_PORT)],
                           log=logs / "iperf3-background.log"),
        )
        self.servers = [fg, irtt, bg]
        fg.wait_for_port(FOREGROUND_PORT)
        irtt.wait_for_port(IRTT_PORT, udp=True)
        bg.wait_for_port(BACKGROUND_PORT)

    def serving_daemons(self) -> dict[str, int]:
        """The foreground iperf3 and irtt servers and the switch's daemons (OVS); never the
        background traffic's sender or receiver."""
        found = {}
        if len(self.servers) == 3:
            found = {"iperf3-server": self.servers[0].pid, "irtt-server": self.servers[1].pid}
        if self.switch is not None:
            found.update(self.switch.daemons())
        return found

    def _stop_servers(self) -> None:
        for proc in self.servers:
            proc.stop()
        self.servers = []

    def _dpdk(self) -> DpdkOptions:
        p = self.params
        huge_dir = None
        if p.dpdk_hugepages == "reserve":
            assert self.manifest is not None
            # DPDK needs a little beyond -m for its own structures.
            self.hugepages = HugepageReservation(self.target, self.manifest,
                                                 self.rundir / "hugepages", p.dpdk_memory_mb + 64)
            self.hugepages.acquire()
            huge_dir = str(self.hugepages.mount_dir)
        return DpdkOptions(file_prefix=f"{OUR_PREFIX}{self.lab_id}", memory_mb=p.dpdk_memory_mb,
                           hugepages=p.dpdk_hugepages != "none",
                           pmd_cpu_mask=p.dpdk_pmd_cpu_mask, lcore_mask=p.dpdk_lcore_mask,
                           pmd_max_sleep_us=p.dpdk_pmd_max_sleep_us,
                           huge_dir=huge_dir)

    def _release_hugepages(self) -> None:
        if self.hugepages is not None:
            self.hugepages.release()
            self.hugepages = None

    def _set_switch(self, kind: str) -> None:
        assert self.manifest is not None
        if self.switch is not None and self.switch.kind == kind:
            return
        self._stop_background()
        self._stop_servers()
        if self.switch is not None:
            self.switch.destroy(list(self.hosts.values()))
            self.switch = None
        self._release_hugepages()
        switch = make_switch(kind, self.target, self.sw_ns, self.manifest, self.rundir,
                             self._dpdk() if kind == "ovs-dpdk" else None,
                             vhost_user=self._vhost_user_ports(),
                             physical=self.params.dpdk_physical_ports,
                             vhost_dir=self._vhost_dir())
        self.switch = switch
        switch.build(list(self.hosts.values()))
        if not self.params.offloads and kind != "ovs-dpdk":  # DPDK turns them off itself
            for host in self.hosts.values():
                disable_offloads(self.target, host.namespace, host.role)
            switch.notes["offloads"] = "off on the hosts (tso gso gro tx)"
        pin_neighbours(self.target, [(h.namespace, h.role, h.address)
                                     for h in self.hosts.values()])
        switch.notes["neighbours"] = "permanent ARP entries between the hosts; IPv6 off"
        self._start_servers()

    def _vhost_user_ports(self) -> list[str]:
        """The OVS-DPDK vhost-user ports to add (the lab param; a subclass adds its guests')."""
        return list(self.params.vhost_user_ports)

    def _vhost_dir(self) -> Path | None:
        """Where their sockets go (None: OVS's run directory)."""
        return None

    def _stop_background(self) -> None:
        if self.background is not None:
            self.background.stop()
            self.background = None
        self.background_mbps = 0.0

    def _set_background(self, rate_mbps: float) -> None:
        assert self.manifest is not None
        self._stop_background()
        if rate_mbps > 0:
            # The server serves one test at a time and notices a stopped client only after a
            # moment: retry until the new flow is accepted.
            for _attempt in range(20):
                self.background = start_background(self.hosts["bgs"].namespace,
                                                   self.hosts["bgr"].address, rate_mbps,
                                                   self.manifest)
                time.sleep(0.5)
                if self.background.alive():
                    break
                self.background.stop()
            if self.background is None or not self.background.alive():
                raise VirtbenchError(f"lab vswitch: background iperf3 at {rate_mbps:g} Mbit/s "
                                     "keeps exiting (is the background server up?)")
            time.sleep(self.params.background_settle_s)
        self.background_mbps = rate_mbps

    def enter(self, variant: str, knobs: Mapping[str, Any]) -> LabState:
        kind, rate = self._enter_switch(variant, knobs)
        srv, cli = self.hosts["srv"], self.hosts["cli"]
        services = self.publish(
            ClientServerPath(server_ip=srv.address, server_iface=srv.role,
                             server_target=NetnsTarget(srv.namespace), client_ip=cli.address,
                             client_iface=cli.role, iperf3_port=FOREGROUND_PORT,
                             irtt_port=IRTT_PORT),
            PacketPath(sender_ns=cli.namespace, sender_iface=cli.role,
                       receiver_ns=srv.namespace, receiver_iface=srv.role,
                       receiver_ip=srv.address, next_hop_ns=srv.namespace,
                       next_hop_iface=srv.role),
            self._virtual_switch(kind, rate))
        return LabState(target=NetnsTarget(cli.namespace), services=services,
                        notes=self._switch_notes(rate))

    def _enter_switch(self, variant: str, knobs: Mapping[str, Any]) -> tuple[str, float]:
        """The variant's switch and background rate, checked and set up: (switch, Mbit/s)."""
        if self.manifest is None:
            self.up()
        kind = str(knobs.get("switch", "linux-bridge"))
        if kind not in SWITCH_KINDS:
            raise VirtbenchError(f"variant {variant}: knob 'switch' = {kind!r}; "
                                 f"use one of {', '.join(SWITCH_KINDS)}")
        try:
            rate = float(knobs.get("background_mbps", 0))
        except (TypeError, ValueError) as exc:
            raise VirtbenchError(f"variant {variant}: knob 'background_mbps' must be a number "
                                 f"(Mbit/s), got {knobs.get('background_mbps')!r}") from exc
        if rate < 0:
            raise VirtbenchError(f"variant {variant}: knob 'background_mbps' must be ≥ 0")
        for extra in ("vhost_user_ports", "dpdk_physical_ports"):
            if getattr(self.params, extra) and kind != "ovs-dpdk":
                raise VirtbenchError(f"variant {variant}: lab param '{extra}' needs switch "
                                     f"ovs-dpdk (this variant uses {kind})")
        self._set_switch(kind)
        self._set_background(rate)
        return kind, rate

    def _virtual_switch(self, kind: str, rate: float) -> VirtualSwitch:
        assert self.switch is not None
        return VirtualSwitch(switch=kind, background_mbps=rate,
                             background_receiver_ns=self.hosts["bgr"].namespace,
                             background_receiver_iface="bgr",
                             vhost_user_sockets=({name: str(self.switch.vhost_socket(name))
                                                  for name in self.params.vhost_user_ports}
                                                 if isinstance(self.switch, OvsDpdk) else {}))

    def _switch_notes(self, rate: float) -> dict[str, str]:
        assert self.switch is not None
        notes = dict(self.switch.notes)
        notes["background"] = (f"iperf3 UDP {rate:g} Mbit/s payload, 1400 B datagrams, "
                               f"{self.hosts['bgs'].address} → {self.hosts['bgr'].address}"
                               if rate else "none")
        return notes

    def leave(self, variant: str) -> None:
        self._stop_background()

    def down(self) -> None:
        self._stop_background()
        self._stop_servers()
        if self.switch is not None:
            try:
                self.switch.destroy(list(self.hosts.values()))
            finally:
                self.switch = None
        self._release_hugepages()
        self._remove_recorded()


LABS = (VSwitchLab,)
