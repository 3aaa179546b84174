"""The switch variants joining the lab's hosts: Linux bridge, OVS netdev, OVS-DPDK.

Each host namespace gets one interface named after its role (``srv``, ``cli``, ...), whichever
switch carries it, so workloads need not know the variant.
"""

from __future__ import annotations

import abc
import contextlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from virtbench.labs.lab_contract import Manifest
from virtbench.labs.net.netops import add_veth, disable_offloads, set_address
from virtbench.labs.net.ovs import DpdkOptions, OvsDaemons
from virtbench.model import VirtbenchError
from virtbench.targets.target_contract import Target

__all__ = ["SWITCH_KINDS", "Host", "Switch", "make_switch"]

SWITCH_KINDS = ("linux-bridge", "ovs", "ovs-dpdk")
BRIDGE = "vbbr0"


@dataclass(frozen=True)
class Host:
    """A host namespace on the switch: its role (= interface name) and IPv4 address/prefix."""

    role: str
    namespace: str
    cidr: str

    @property
    def address(self) -> str:
        return self.cidr.split("/")[0]


class Switch(abc.ABC):
    kind: str

    def __init__(self, target: Target, ns: str, manifest: Manifest, rundir: Path) -> None:
        self.target = target
        self.ns = ns
        self.manifest = manifest
        self.rundir = rundir
        self.notes: dict[str, str] = {}

    @abc.abstractmethod
    def build(self, hosts: Sequence[Host]) -> None:
        """Create the switch and one port per host; the host ends get their addresses."""

    def daemons(self) -> dict[str, int]:
        """The switch's forwarding daemons (name → PID); none for a kernel switch, whose
        forwarding runs in softirqs of the processes that send."""
        return {}

    def destroy(self, hosts: Sequence[Host]) -> None:
        """Remove the switch and the hosts' interfaces (the namespaces stay)."""
        for host in hosts:
            self.target.run(["ip", "-n", host.namespace, "link", "del", host.role], check=False)
        self.target.run(["ip", "-n", self.ns, "link", "del", BRIDGE], check=False)


class LinuxBridge(Switch):
    kind = "linux-bridge"

    def build(self, hosts: Sequence[Host]) -> None:
        self.target.run(["ip", "-n", self.ns, "link", "add", BRIDGE, "type", "bridge"])
        self.target.run(["ip", "-n", self.ns, "link", "set", BRIDGE, "up"])
        for host in hosts:
            add_veth(self.target, self.ns, f"p{host.role}", host.namespace, host.role)
            self.target.run(["ip", "-n", self.ns, "link", "set", f"p{host.role}",
                             "master", BRIDGE])
            set_address(self.target, host.namespace, host.role, host.cidr)
        self.notes["switch"] = "Linux bridge (kernel), veth ports, offloads on"


class _OvsSwitch(Switch):
    """Open vSwitch's userspace datapath (netdev), run by this lab's own daemons."""

    ovs: OvsDaemons

    def daemons(self) -> dict[str, int]:
        """ovs-vswitchd (its PMD threads with DPDK), not ovsdb-server (configuration only)."""
        return {d.what: d.pid for d in self.ovs.procs if d.what != "ovsdb-server"}

    def _start_bridge(self) -> None:
        self.ovs.start()
        self.ovs.vsctl("add-br", BRIDGE, "--", "set", "bridge", BRIDGE, "datapath_type=netdev")

    def destroy(self, hosts: Sequence[Host]) -> None:
        with contextlib.suppress(Exception):
            self.ovs.vsctl("--if-exists", "del-br", BRIDGE, timeout_s=10)
        self.ovs.stop()
        super().destroy(hosts)


class OvsNetdev(_OvsSwitch):
    kind = "ovs"

    def __init__(self, target: Target, ns: str, manifest: Manifest, rundir: Path) -> None:
        super().__init__(target, ns, manifest, rundir)
        self.ovs = OvsDaemons(target, ns, rundir / "ovs", manifest)

    def build(self, hosts: Sequence[Host]) -> None:
        self._start_bridge()
        for host in hosts:
            # Internal ports moved into the hosts: veth ports with offloads stall TCP at 0 bit/s.
            self.ovs.vsctl("add-port", BRIDGE, host.role, "--",
                           "set", "interface", host.role, "type=internal")
            self.target.run(["ip", "-n", self.ns, "link", "set", host.role,
                             "netns", host.namespace])
            set_address(self.target, host.namespace, host.role, host.cidr)
        self.notes["switch"] = ("Open vSwitch userspace datapath (datapath_type=netdev), "
                                "internal ports, userspace-tso-enable=true")

class OvsDpdk(_OvsSwitch):
    kind = "ovs-dpdk"

    def __init__(self, target: Target, ns: str, manifest: Manifest, rundir: Path,
                 dpdk: DpdkOptions | None = None, n_rxq: int = 1,
                 vhost_user: Sequence[str] = (), physical: Mapping[str, str] | None = None,
                 vhost_dir: Path | None = None) -> None:
        super().__init__(target, ns, manifest, rundir)
        self.dpdk = dpdk or DpdkOptions(file_prefix=f"{ns}-dpdk")
        self.n_rxq = n_rxq
        self.ovs = OvsDaemons(target, ns, rundir / "ovs-dpdk", manifest, self.dpdk)
        self.vhost_user = tuple(vhost_user)
        self.physical = dict(physical or {})
        self.vhost_dir = vhost_dir or self.ovs.rundir / "vhost-user"
        """Where the sockets live: by default OVS's run directory; a private libvirtd's QEMU
        sees its own tmpfs /run, so guests of the vswitch-guests lab use their session's."""

    def vhost_socket(self, name: str) -> Path:
        """Where the VM's QEMU listens (server mode) for vhost-user port ``name``."""
        return self.vhost_dir / f"vhu-{name}.sock"

    def _add_vhost_user_ports(self) -> None:
        # OVS is the vhost-user client: a VM (QEMU, server mode) may start, stop and restart
        # at any time and OVS reconnects, as the OVS-DPDK documentation recommends.
        if self.vhost_user:
            # QEMU creates the socket; under libvirt it runs as an unprivileged user
            # (libvirt-qemu on Debian), so the directory is writable by all, sticky like /tmp.
            socket_dir = self.vhost_dir
            socket_dir.mkdir(parents=True, exist_ok=True)
            socket_dir.chmod(0o1777)
        for name in self.vhost_user:
            if len(str(self.vhost_socket(name)).encode()) > 107:  # sun_path holds 108 bytes
                raise VirtbenchError(
                    f"vhost-user socket path {self.vhost_socket(name)} is longer than a unix "
                    "socket allows (107 bytes); set VIRTBENCH_LAB_ROOT to a shorter directory")
            port = f"vhu-{name}"
            self.ovs.vsctl("add-port", BRIDGE, port, "--", "set", "interface", port,
                           "type=dpdkvhostuserclient",
                           f"options:vhost-server-path={self.vhost_socket(name)}")
        if self.vhost_user:
            self.notes["vhost-user"] = ", ".join(
                f"{name}: {self.vhost_socket(name)}" for name in self.vhost_user)

    def _add_physical_ports(self) -> None:
        for name, devargs in self.physical.items():
            port = f"dpdk-{name}"
            self.ovs.vsctl("add-port", BRIDGE, port, "--", "set", "interface", port, "type=dpdk",
                           f"options:dpdk-devargs={devargs}", f"options:n_rxq={self.n_rxq}")
            error = self.ovs.vsctl("get", "interface", port, "error").strip().strip('"')
            if error and error != "[]":
                raise VirtbenchError(
                    f"OVS-DPDK cannot open physical port {name} ({devargs}): {error}; bind the "
                    f"NIC to a DPDK driver first (dpdk-devbind.py -b vfio-pci {devargs}, package "
                    "dpdk) and check the PCI address (dpdk-devbind.py --status)")
        if self.physical:
            self.notes["physical ports"] = ", ".join(
                f"{name}: {devargs}" for name, devargs in self.physical.items())

    def build(self, hosts: Sequence[Host]) -> None:
        self._start_bridge()
        for index, host in enumerate(hosts):
            port = f"p{host.role}"
            add_veth(self.target, self.ns, port, host.namespace, host.role)
            # The af_packet PMD sees raw frames: no GSO super-frames, no partial checksums.
            disable_offloads(self.target, host.namespace, host.role)
            disable_offloads(self.target, self.ns, port)
            self.ovs.vsctl("add-port", BRIDGE, port, "--", "set", "interface", port, "type=dpdk",
                           f"options:dpdk-devargs=net_af_packet{index},iface={port}",
                           f"options:n_rxq={self.n_rxq}")
            set_address(self.target, host.namespace, host.role, host.cidr)
        self._add_vhost_user_ports()
        self._add_physical_ports()
        memory = (f"hugepages from {self.dpdk.huge_dir or 'the system mounts'}"
                  if self.dpdk.hugepages else f"--no-huge -m {self.dpdk.memory_mb}")
        self.notes["switch"] = (f"OVS-DPDK (ovs-vswitchd-dpdk), af_packet virtual devices on "
                                f"veth, {memory}, pmd-cpu-mask={self.dpdk.pmd_cpu_mask}, "
                                f"offloads off on the hosts")


def make_switch(kind: str, target: Target, ns: str, manifest: Manifest, rundir: Path,
                dpdk: DpdkOptions | None = None, vhost_user: Sequence[str] = (),
                physical: Mapping[str, str] | None = None,
                vhost_dir: Path | None = None) -> Switch:
    if kind == "linux-bridge":
        return LinuxBridge(target, ns, manifest, rundir)
    if kind == "ovs":
        return OvsNetdev(target, ns, manifest, rundir)
    if kind == "ovs-dpdk":
        return OvsDpdk(target, ns, manifest, rundir, dpdk, vhost_user=vhost_user,
                       physical=physical, vhost_dir=vhost_dir)
    known = ', '.join(SWITCH_KINDS)
    raise ValueError(f"knob 'switch': unknown switch '{kind}'; use one of {known}")
