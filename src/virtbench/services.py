"""Typed lab services: what a lab hands the workloads for one variant, one frozen dataclass per
kind of thing (a filesystem, a network path, a web stack, ...).

A lab declares the kinds it provides (``Lab.provides``) and publishes instances in its
``LabState.services``; a workload declares the kinds it cannot run without (``Workload.needs``)
and reads them with ``ctx.services.get(Kind)`` (or ``find(Kind)`` for one it can do without).
``runner.service_check`` refuses a workload whose lab lacks what it needs before anything runs.
This module sits below both labs and workloads (docs/architecture.md), so both import it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from virtbench.model import VirtbenchError
from virtbench.service_base import Service, Services, kind_names
from virtbench.targets.target_contract import Target

__all__ = [
    "ClientServerPath",
    "FilesystemService",
    "GuestMachine",
    "GuestNic",
    "GuestNics",
    "PacketPath",
    "ResourceLimits",
    "RouterPath",
    "ScratchDisk",
    "Service",
    "Services",
    "VethPair",
    "VirtualSwitch",
    "WebStack",
    "kind_names",
]


# -- storage -------------------------------------------------------------------------------------

@dataclass(frozen=True)
class FilesystemService(Service):
    """The filesystem the storage lab prepared for the variant (``filesystem`` knob)."""

    path: str
    """Where workloads write (a scratch directory on it)."""
    kind: str
    """dir, ext4, xfs or tmpfs."""
    spec: str
    """The knob's value as written (``ext4:512``)."""
    mount: Mapping[str, str]
    """findmnt's target, source, fstype and options of the filesystem."""
    size_mib: int
    """Size of the image or tmpfs, MiB (0 for a directory of an existing filesystem)."""
    free_mib: int
    """Space available at ``path`` when the variant was entered, MiB."""
    cache_policy: str
    """What the page cache does to results on it, in words (also the variant's note)."""
    drop_caches: bool
    """Whether dropping the page cache before a trial means anything (not on tmpfs)."""


@dataclass(frozen=True)
class ResourceLimits(Service):
    """The CPUs and memory the variant's workloads are limited to (the storage lab's
    ``vm_size``: a cgroup standing in for a VM); None = the machine's own."""

    vcpus: int | None
    memory_mib: int | None
    """Memory limit, MiB (the page cache included)."""
    cgroup: str | None
    """The cgroup the workloads run in, if any."""


@dataclass(frozen=True)
class GuestMachine(Service):
    """The libvirt guest the workloads run in, for what looks at it from the host (the
    profiler: docs/explain.md, "Guest kernel frames")."""

    domain: str
    """The libvirt domain's name (QEMU's ``-name guest=DOMAIN``)."""
    virt_type: str
    """Its accelerator: ``kvm`` (the guest's code runs on the host's CPUs in guest mode) or
    ``qemu`` (TCG: QEMU translates the guest's code and runs it in its vCPU threads)."""


# -- network -------------------------------------------------------------------------------------

@dataclass(frozen=True)
class ClientServerPath(Service):
    """A client and a server across the lab's network, the server running iperf3 and irtt
    servers. Workloads run on the client (the variant's target)."""

    server_ip: str
    server_iface: str
    """The server's interface on the path."""
    server_target: Target
    """Where commands on the server side run (its namespace, or another fleet host)."""
    client_ip: str
    client_iface: str
    iperf3_port: int
    irtt_port: int
    """UDP."""


@dataclass(frozen=True)
class VirtualSwitch(Service):
    """The vswitch lab's switch and background traffic for the variant."""

    switch: str
    """linux-bridge, ovs or ovs-dpdk."""
    background_mbps: float
    """Background UDP payload rate, Mbit/s (0: none)."""
    background_receiver_ns: str
    background_receiver_iface: str
    vhost_user_sockets: Mapping[str, str] = field(default_factory=dict)
    """Port name → vhost-user socket path (ovs-dpdk with lab param vhost_user_ports)."""


@dataclass(frozen=True)
class PacketPath(Service):
    """Where generated frames go: sent from one namespace's interface to a receiver's, the
    first hop (a router's ingress, or the receiver itself) giving the destination MAC."""

    sender_ns: str
    sender_iface: str
    receiver_ns: str
    receiver_iface: str
    receiver_ip: str
    next_hop_ns: str
    next_hop_iface: str
    generator_target: Target | None = None
    """Where the generator runs, when not the variant's target (the router lab: outside the
    router's CPU cgroup)."""
    next_hop_mac: str = ""
    """The first hop's MAC when no namespace of the host holds it (a router guest's ingress
    NIC); empty: read from ``next_hop_iface`` in ``next_hop_ns``."""


@dataclass(frozen=True)
class RouterPath(Service):
    """The vnf-router lab: sender → router namespace → receiver, an iperf3 server on the
    receiver, ``neighbours`` CPU-hungry neighbours beside the router (vnf-guests: the router
    and the neighbours are guests, the sender and receiver namespaces)."""

    sender_ns: str
    router_ns: str
    """The router's namespace; empty when the router is a guest (lab vnf-guests)."""
    receiver_ns: str
    receiver_ip: str
    iperf3_port: int
    neighbours: int


# -- web -----------------------------------------------------------------------------------------

@dataclass(frozen=True)
class WebStack(Service):
    """The web lab: an origin (nginx or WordPress) behind Varnish, restarted per variant."""

    base_url: str
    """Varnish's address, ``http://127.0.0.1:PORT``."""
    urls: tuple[str, ...]
    """The site's pages through Varnish."""
    origin_url: str
    origin_urls: tuple[str, ...]
    """The same pages from the origin directly."""
    host_header: str | None
    """The Host header requests must carry (WordPress's site name), or None."""
    cache_storage: str
    """Varnish's storage kind for the variant (malloc, file, ...)."""
    varnish_workdir: str
    """varnishd's -n directory (for varnishstat)."""
    varnish_pid: int
    empty_cache: Callable[[], dict[str, str]]
    """Restarts Varnish with empty storage (a cold cache); returns notes on what it did."""


# -- assess probes -------------------------------------------------------------------------------

@dataclass(frozen=True)
class ScratchDisk(Service):
    """The assess-probes lab's scratch loop device."""

    device: str
    image: str
    """The image file behind it (already unlinked: freed when the device goes)."""
    size_mib: int
    direct_io: bool
    """Whether the loop device does direct I/O to its image."""
    backing: str
    """The filesystem holding the image, in words."""
    scheduler_file: str
    """/sys/block/DEV/queue/scheduler."""
    schedulers: tuple[str, ...]
    """The I/O schedulers this kernel offers for it."""


@dataclass(frozen=True)
class VethPair(Service):
    """The assess-probes lab's two namespaces joined by a veth pair, iperf3 server at one end."""

    server_ns: str
    server_iface: str
    client_ns: str
    client_iface: str
    address: str
    """The server end's IPv4 address."""
    port: int
    """The iperf3 server's port."""


@dataclass(frozen=True)
class GuestNic:
    """One data NIC of a scratch guest: its model and queue pairs, its name and address in the
    guest, and the peer address across its own tap (in the lab's peer namespace)."""

    model: str
    """virtio or e1000e."""
    queues: int
    guest_iface: str
    guest_ip: str
    peer_ip: str
    verified: str
    """What the live XML, QEMU's command line and the guest itself said about it (JSON)."""


@dataclass(frozen=True)
class GuestNics(Service):
    """The assess-nic-guest lab's scratch guest with several data NICs, each a tap into one
    peer namespace where an iperf3 server listens on every NIC's peer address. Workloads run
    in the guest (the variant's target) and pick their NIC by (model, queues)."""

    nics: tuple[GuestNic, ...]
    peer_ns: str
    port: int
    """The iperf3 server's port."""
    vcpus: int

    def nic(self, model: str, queues: int) -> GuestNic:
        for nic in self.nics:
            if nic.model == model and nic.queues == queues:
                return nic
        have = ", ".join(f"{n.model} ×{n.queues}" for n in self.nics) or "none"
        raise VirtbenchError(f"the scratch guest has no {model} NIC with {queues} queue "
                             f"pair(s) (it has {have}): lab param nics")
