"""Study 002 with libvirt guests: a router guest forwarding between a sender and a receiver
namespace, and 0..N neighbour guests running stress-ng beside it (docs/net.md, "Lab
vnf-guests").

    vbnet-ID-snd (10.78.1.2 on tap vbrIDl) ── guest vbvnf-PID-rtr (left 10.78.1.1 | right
    10.78.2.1, ip_forward=1) ── vbnet-ID-rcv (10.78.2.2 on tap vbrIDr, iperf3 server)
    guests vbvnf-PID-nb0, nb1, ...: stress-ng --cpu 1 --cpu-load LOAD, 1 vCPU each

Each of the router's two data NICs is a tap that libvirt creates; the lab moves it into its
endpoint's namespace and addresses it there (one point-to-point link per side, no bridge). The
endpoints are namespaces because an emulated guest could not offer the load: the router guest
must be the bottleneck, not its sender (docs/net.md). Neighbours boot once, when a variant
first asks for them; a variant with fewer pauses the extra ones (a paused TCG guest uses no
CPU) and a later one resumes them. The router boots once per run.
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, Field, NonNegativeInt

from virtbench.contract import MAX_SECONDS, Knob, Params, Tool
from virtbench.kvm.guest_domain import CONSOLE_CMDLINE, direct_boot_domain_xml
from virtbench.kvm.guest_knobs import GuestKnobs, with_vcpus
from virtbench.kvm.guest_nics import NIC_PCI_SLOT, NicKnobs, interface_xml
from virtbench.kvm.sandbox import wait_ssh
from virtbench.kvm.sandbox_image import GuestInstance, build_debian_guest, make_instance
from virtbench.kvm.sandbox_libvirtd import PrivateLibvirtd
from virtbench.labs.daemons import start_recorded
from virtbench.labs.guest import RNG, user_network
from virtbench.labs.lab_contract import LabState, Manifest
from virtbench.labs.net.guest_switch import GUEST_NET_PACKAGES, remove_guests
from virtbench.labs.net.netns_lab import NetnsLab
from virtbench.labs.net.netops import mac_address
from virtbench.model import VirtbenchError
from virtbench.services import PacketPath, RouterPath
from virtbench.targets.daemon import Daemon
from virtbench.targets.libvirt_connection import libvirt_module, open_connection
from virtbench.targets.local import NetnsTarget
from virtbench.targets.ssh import SSHTarget
from virtbench.targets.target_contract import Target

__all__ = ["LABS", "SIDES", "VnfGuestsLab", "forwarding_problem", "neighbour_problems"]

ROUTER_PORT = 5201
NEIGHBOUR_ARGV = "stress-ng --cpu 1 --cpu-load {load} --timeout 86400s --quiet"
EMULATED = ("emulated (TCG): the router guest forwards in an emulated CPU, so its throughput "
            "measures the emulation as much as the router; compare it with the namespace "
            "router of lab vnf-router (BENCHMARKS.md, net_router_guest)")


@dataclass(frozen=True)
class Side:
    """One side of the router: its NIC in the guest and the endpoint namespace facing it."""

    nic: str
    router_cidr: str
    end: str
    end_cidr: str
    mac: str

    @property
    def router_ip(self) -> str:
        return self.router_cidr.split("/")[0]

    @property
    def end_ip(self) -> str:
        return self.end_cidr.split("/")[0]


SIDES = (Side("left", "10.78.1.1/24", "snd", "10.78.1.2/24", "52:54:00:78:01:01"),
         Side("right", "10.78.2.1/24", "rcv", "10.78.2.2/24", "52:54:00:78:02:01"))


class VnfGuestsParams(Params):
    image_cache: str = Field(".cache/virtbench-guest/net-image",
                             description="where the guests' image is built and cached (the "
                                         "vswitch-guests lab's image: the same build)")
    router_vcpus: int = Field(1, ge=1, le=64, description="vCPUs of the router guest")
    memory_mib: int = Field(640, ge=512, le=1 << 20,
                            description="memory of each guest (router and neighbours), MiB")
    neighbour_load_pct: int = Field(99, ge=1, le=100,
                                    description="stress-ng --cpu-load in each neighbour (%)")
    max_neighbours: int = Field(4, ge=0, le=32,
                                description="refuse larger 'neighbours' knobs (each neighbour "
                                            "guest takes a host core under TCG)")
    router_forwarding: Literal["set", "image"] = Field(
        "set", description="set: the lab sets net.ipv4.ip_forward=1 in the router guest; "
        "image: the router image must forward by itself (a user's router image). Either way "
        "the value is read back and a router that does not forward is refused")
    boot_timeout_s: float = Field(300.0, ge=1, le=MAX_SECONDS,
                                  description="wait for each guest's sshd")


@dataclass
class _Vm:
    role: str
    domain: str
    instance: GuestInstance
    target: SSHTarget | None = None


def neighbour_problems(count: object, max_neighbours: int, memory_mib: int,
                       available_mib: int, booted: int = 0) -> list[str]:
    """What is wrong with a ``neighbours`` knob value: not a count, above ``max_neighbours``,
    or more guests to boot (the router and ``count`` neighbours, less the ``booted`` ones
    already running) than the host's available memory holds."""
    if isinstance(count, bool) or not isinstance(count, int) or count < 0:
        return [f"knob neighbours must be an integer ≥ 0, got {count!r}"]
    if count > max_neighbours:
        return [f"knob neighbours = {count} exceeds the lab param max_neighbours = "
                f"{max_neighbours}"]
    to_boot = max(0, count + 1 - booted)
    needed = to_boot * memory_mib
    if needed > available_mib:
        return [f"knob neighbours = {count}: {to_boot} more guest(s) × {memory_mib} MiB "
                f"(param memory_mib) = {needed} MiB, more than this host's {available_mib} "
                "MiB available"]
    return []


def forwarding_problem(value: str, mode: str) -> str | None:
    """None when ``value`` (``sysctl -n net.ipv4.ip_forward`` in the router guest) is 1, else
    why the router is refused."""
    if value.strip() == "1":
        return None
    how = ("the lab set it to 1, yet it reads back" if mode == "set" else
           "param router_forwarding: image, so the image must enable it itself; it reads")
    return (f"the router guest does not forward IPv4: net.ipv4.ip_forward ({how} "
            f"{value.strip() or 'nothing'}); a router image must forward between its NICs")


def _available_mib() -> int:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemAvailable:"):
            return int(line.split()[1]) // 1024
    return 0


class VnfGuestsLab(NetnsLab):
    name = "vnf-guests"
    description = ("study 002 with guests: a router guest (ip_forward) between a sender and a "
                   "receiver namespace, with N neighbour guests running stress-ng")
    Params = VnfGuestsParams
    tools = (Tool("ip", "iproute2"), Tool("iperf3", "iperf3"), Tool("ping", "iputils-ping"),
             Tool("qemu-system-x86_64", "qemu-system-x86", "the guests"),
             Tool("mmdebstrap", "mmdebstrap", "the guests' image"))
    knobs: ClassVar[tuple[Knob, ...]] = (
        Knob("neighbours", "number of neighbour guests running stress-ng beside the router "
             "guest (at most the lab param max_neighbours)", NonNegativeInt),
    )
    switch_cost = "cheap"
    provides = (RouterPath, PacketPath)

    def __init__(self, params: BaseModel | None, workdir: Any, target: Target) -> None:
        super().__init__(params, workdir, target)
        self.ns = {side.end: self.prefix + side.end for side in SIDES}
        self.taps = {side.nic: f"vbr{self.lab_id}{side.nic[0]}" for side in SIDES}
        self.session: Path | None = None
        self.daemon: PrivateLibvirtd | None = None
        self.conn: Any = None
        self.image: Any = None
        self.router: _Vm | None = None
        self.neighbours: list[_Vm] = []
        self.server: Daemon | None = None
        self.router_notes: dict[str, str] = {}

    # -- before anything starts ------------------------------------------------------------
    @classmethod
    def plan_notes(cls, params: BaseModel, variants: Mapping[str, Mapping[str, Any]]
                   ) -> list[str]:
        """`run --check`: the guests are emulated, and how many vCPUs compete for the host's."""
        counts = [v.get("neighbours", 0) for v in variants.values()]
        most = max((c for c in counts if isinstance(c, int) and not isinstance(c, bool)),
                   default=0)
        notes = [f"the guests run on a private libvirtd, {EMULATED}"]
        cores = os.cpu_count() or 1
        if most + 1 > cores:
            notes.append(f"up to {most} neighbour guest(s) beside the router: {most + 1} busy "
                         f"vCPUs on {cores} host CPUs; under TCG each takes a core, so above "
                         f"{cores - 1} neighbour(s) the host's time-slicing, not the "
                         "neighbours' load, sets the router's share")
        return notes

    def check_variant(self, variant: str, knobs: Mapping[str, Any]) -> list[str]:
        p = self.params
        booted = len(self.neighbours) + (self.router is not None)
        return [f"variant {variant}: {problem}" for problem in neighbour_problems(
            knobs.get("neighbours", 0), p.max_neighbours, p.memory_mib, _available_mib(),
            booted)]

    # -- up / down -------------------------------------------------------------------------
    def up(self) -> None:
        manifest = self._create_namespaces(self.ns.values())
        self.session = Path(tempfile.mkdtemp(prefix="vbvnf-", dir="/tmp"))
        # Recorded before anything of it exists: the private daemon (with every domain on it,
        # neighbours included), the session directory, the router's taps.
        manifest.add("guest", {"session": str(self.session),
                               "domains": [self.domain("rtr")],
                               "taps": list(self.taps.values())})
        for tap in self.taps.values():
            self._refuse_existing_device(tap)
        cache = Path(self.params.image_cache).resolve()
        self.image = build_debian_guest(cache, GUEST_NET_PACKAGES)
        self.daemon = PrivateLibvirtd(self.session / "d", caps_cache=cache.parent / "qemu-caps")
        self.conn = open_connection(self.daemon.start())
        started = time.monotonic()
        router = self._define_and_start("rtr", self.params.router_vcpus, [
            interface_xml(NicKnobs(), self.taps[side.nic], side.mac, NIC_PCI_SLOT + i)
            for i, side in enumerate(SIDES)])
        self._connect(router)
        self.router = router
        self._wire_endpoints()
        self._configure_router()
        self.router_notes["router"] += f"; booted in {time.monotonic() - started:.1f} s"
        self.server = start_recorded(manifest, NetnsTarget(self.ns["rcv"]),
                                     ["iperf3", "-s", "-p", str(ROUTER_PORT)],
                                     log=self.rundir / "iperf3.log")
        self.server.wait_for_port(ROUTER_PORT)
        self._ping_through()

    def domain(self, role: str) -> str:
        return f"vbvnf-{os.getpid()}-{self.lab_id}-{role}"

    def _refuse_existing_device(self, name: str) -> None:
        if self.target.run(["ip", "link", "show", "dev", name], check=False).returncode == 0:
            raise VirtbenchError(f"lab {self.name}: a network device {name} already exists on "
                                 "this host; it is not this run's to take (remove it, or "
                                 "'virtbench lab clean' if a crashed run left it)")

    def down(self) -> None:
        try:
            for vm in (self.router, *self.neighbours):
                if vm is not None and vm.target is not None:
                    vm.target.close()
            if self.manifest is not None:
                for item in self.manifest.items("guest"):
                    remove_guests(item)
                    self.manifest.remove("guest", item)
        finally:
            self.router, self.neighbours, self.conn, self.daemon = None, [], None, None
            if self.server is not None:
                self.server.stop()
                self.server = None
            self._remove_recorded()

    @classmethod
    def clean(cls, manifest: Manifest) -> list[str]:
        removed = []
        for item in manifest.items("guest"):
            remove_guests(item)
            manifest.remove("guest", item)
            removed.append(f"guests {', '.join(item['domains'])} (and their neighbours) and "
                           f"{item['session']}")
        return removed + super().clean(manifest)

    # -- guests ----------------------------------------------------------------------------
    def _define_and_start(self, role: str, vcpus: int, devices: list[str]) -> _Vm:
        assert self.session is not None
        vm = _Vm(role, self.domain(role), make_instance(self.image, self.session / role))
        console = self.session / f"{role}-console.log"
        memory = self.params.memory_mib
        xml = with_vcpus(direct_boot_domain_xml(
            vm.domain, kernel=vm.instance.kernel, initrd=vm.instance.initrd,
            console_log=console, cmdline=f"{CONSOLE_CMDLINE} quiet", virt_type="qemu",
            memory_mib=memory, devices=[RNG, *devices],
            qemu_args=user_network(vm.instance.port)), GuestKnobs(vcpus=vcpus, memory_mib=memory))
        try:
            self.conn.defineXML(xml).create()
        except libvirt_module().libvirtError as exc:
            raise VirtbenchError(f"lab {self.name}: libvirt refused guest {role}: {exc}") from exc
        return vm

    def _connect(self, vm: _Vm) -> None:
        wait_ssh(vm.instance, self.params.boot_timeout_s)
        vm.target = SSHTarget("127.0.0.1", user="root", port=vm.instance.port,
                              known_hosts=str(vm.instance.known_hosts),
                              identity_file=str(vm.instance.identity))

    def _wire_endpoints(self) -> None:
        """Each router tap into its endpoint's namespace, addressed there, its route via the
        router; permanent ARP entries both ways (no ARP during a trial: net.packet-rate counts
        frames on these interfaces)."""
        t = self.target
        for side in SIDES:
            ns, tap = self.ns[side.end], self.taps[side.nic]
            t.run(["ip", "link", "set", tap, "netns", ns])
            t.run(["ip", "netns", "exec", ns, "sysctl", "-qw",
                   f"net.ipv6.conf.{tap}.disable_ipv6=1"], check=False)
            t.run(["ip", "-n", ns, "addr", "replace", side.end_cidr, "dev", tap])
            t.run(["ip", "-n", ns, "link", "set", tap, "up"])
            t.run(["ip", "-n", ns, "route", "replace", "default", "via", side.router_ip])
            t.run(["ip", "-n", ns, "neigh", "replace", side.router_ip, "lladdr", side.mac,
                   "dev", tap, "nud", "permanent"])

    def _configure_router(self) -> None:
        """Inside the router guest: find each data NIC by its MAC, name it after its side,
        address it, pin the endpoint's MAC, IPv6 off; forwarding set (or the image's) and read
        back."""
        assert self.router is not None and self.router.target is not None
        run = self.router.target.run
        links = json.loads(run(["ip", "-j", "link", "show"]).stdout)
        by_mac = {str(link.get("address", "")).lower(): link["ifname"] for link in links}
        for side in SIDES:
            if side.mac not in by_mac:
                raise VirtbenchError(f"lab {self.name}: the router guest has no NIC with MAC "
                                     f"{side.mac} (its {side.nic} side)")
            end_mac = mac_address(self.target, self.ns[side.end], self.taps[side.nic])
            run(["ip", "link", "set", by_mac[side.mac], "name", side.nic])
            run(["sysctl", "-qw", f"net.ipv6.conf.{side.nic}.disable_ipv6=1"], check=False)
            run(["ip", "addr", "replace", side.router_cidr, "dev", side.nic])
            run(["ip", "link", "set", side.nic, "up"])
            run(["ip", "neigh", "replace", side.end_ip, "lladdr", end_mac, "dev", side.nic,
                 "nud", "permanent"])
        if self.params.router_forwarding == "set":
            run(["sysctl", "-qw", "net.ipv4.ip_forward=1"])
        self._check_router()
        self.router_notes = {
            "router": f"guest {self.router.domain}: {self.params.router_vcpus} vCPU, "
                      f"{self.params.memory_mib} MiB, qemu (TCG), virtio-net taps left "
                      f"{SIDES[0].router_cidr} (in {self.ns['snd']}) | right "
                      f"{SIDES[1].router_cidr} (in {self.ns['rcv']}), net.ipv4.ip_forward=1 "
                      f"read back ({self.params.router_forwarding}), permanent ARP, IPv6 off",
            "emulated": EMULATED}

    def _check_router(self) -> None:
        """Forwarding on and both addresses present, else an error naming what is missing
        (a user image that turned forwarding off, a DHCP client that took an address)."""
        assert self.router is not None and self.router.target is not None
        run = self.router.target.run
        problem = forwarding_problem(
            run(["sysctl", "-n", "net.ipv4.ip_forward"], check=False).stdout,
            self.params.router_forwarding)
        if problem:
            raise VirtbenchError(f"lab {self.name}: {problem}")
        for side in SIDES:
            out = run(["ip", "-4", "-o", "addr", "show", "dev", side.nic], check=False).stdout
            if f" {side.router_cidr} " not in out:
                raise VirtbenchError(
                    f"lab {self.name}: the router guest lost its address {side.router_cidr} "
                    f"on {side.nic} (has: {out.strip() or 'none'})")

    def _ping_through(self) -> None:
        """One ping sender → receiver: the router really forwards (a firewall in a user's
        image, a wrong route) before any trial counts on it."""
        rcv = SIDES[1].end_ip
        res = self.target.run(["ip", "netns", "exec", self.ns["snd"], "ping", "-c", "3", "-W",
                               "5", rcv], check=False, timeout=60)
        if res.returncode != 0:
            raise VirtbenchError(f"lab {self.name}: {SIDES[0].end_ip} cannot reach {rcv} "
                                 f"through the router guest: {res.stdout.strip()[-200:]}")

    # -- neighbours ------------------------------------------------------------------------
    def _set_neighbours(self, count: int) -> list[str]:
        """``count`` neighbours running: pause the extra ones, resume paused ones, boot the
        missing ones (all at once); returns the domains paused."""
        paused_state = libvirt_module().VIR_DOMAIN_PAUSED
        for vm in self.neighbours[count:]:
            dom = self.conn.lookupByName(vm.domain)
            if dom.state()[0] != paused_state:
                dom.suspend()
        for vm in self.neighbours[:count]:
            dom = self.conn.lookupByName(vm.domain)
            if dom.state()[0] == paused_state:
                dom.resume()
        new = [self._define_and_start(f"nb{i}", 1, [])
               for i in range(len(self.neighbours), count)]
        for vm in new:
            self._connect(vm)
            self._start_stress(vm)
        self.neighbours += new
        for vm in self.neighbours[:count]:
            self._check_stress(vm)
        return [vm.domain for vm in self.neighbours[count:]]

    def _start_stress(self, vm: _Vm) -> None:
        assert vm.target is not None
        argv = NEIGHBOUR_ARGV.format(load=self.params.neighbour_load_pct)
        # Detached inside the guest (destroyed with everything in it at the end).
        vm.target.run(["sh", "-c", f"setsid {argv} </dev/null >/tmp/stress.log 2>&1 &"])

    def _check_stress(self, vm: _Vm) -> None:
        assert vm.target is not None
        deadline = time.monotonic() + 30
        while True:  # ends: running, or past the deadline
            out = vm.target.run(["pgrep", "-c", "stress-ng"], check=False).stdout.strip()
            if out.isdigit() and int(out) >= 2:  # stress-ng and its --cpu worker
                return
            if time.monotonic() > deadline:
                log = vm.target.run(["cat", "/tmp/stress.log"], check=False).stdout
                raise VirtbenchError(f"lab {self.name}: stress-ng is not running in neighbour "
                                     f"guest {vm.role} ({log.strip()[-200:] or 'no output'})")
            time.sleep(0.5)

    # -- variants --------------------------------------------------------------------------
    def enter(self, variant: str, knobs: Mapping[str, Any]) -> LabState:
        count = knobs.get("neighbours", 0)
        problems = self.check_variant(variant, knobs)
        if problems:
            raise VirtbenchError(f"lab {self.name}, " + "; ".join(problems))
        if self.manifest is None:
            self.up()
        self._check_router()
        paused = self._set_neighbours(count)
        snd, rcv = SIDES
        services = self.publish(
            RouterPath(sender_ns=self.ns["snd"], router_ns="", receiver_ns=self.ns["rcv"],
                       receiver_ip=rcv.end_ip, iperf3_port=ROUTER_PORT, neighbours=count),
            PacketPath(sender_ns=self.ns["snd"], sender_iface=self.taps[snd.nic],
                       receiver_ns=self.ns["rcv"], receiver_iface=self.taps[rcv.nic],
                       receiver_ip=rcv.end_ip, next_hop_ns="", next_hop_iface="",
                       next_hop_mac=snd.mac))
        stress = NEIGHBOUR_ARGV.format(load=self.params.neighbour_load_pct)
        notes = {**self.router_notes,
                 "neighbours": f"{count} guest(s) running {stress} (1 vCPU, "
                               f"{self.params.memory_mib} MiB each); paused: "
                               f"{', '.join(paused) or 'none'}",
                 "endpoints": f"namespaces {self.ns['snd']} (iperf3 client, trafgen) and "
                              f"{self.ns['rcv']} (iperf3 server)"}
        return LabState(target=NetnsTarget(self.ns["snd"]), services=services, notes=notes)

    def leave(self, variant: str) -> None:
        """Neighbours stay for the next variant (paused or resumed to its count)."""


LABS = (VnfGuestsLab,)
