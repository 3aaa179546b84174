"""Study 001 with libvirt guests as the endpoints: a server guest and a client guest on the
vswitch lab's switch, the background pair as namespaces (docs/net.md, "Guests on the switch").

Topology (the switch and the background pair in namespaces this lab creates; each guest's data
NIC is a tap that libvirt creates and the lab moves into the switch namespace)::

    guest vbgsw-PID-srv (10.77.0.1 on its NIC "srv", iperf3 + irtt servers) ─┐
    guest vbgsw-PID-cli (10.77.0.2 on "cli", runs the workloads, captures) ─┤ switch in
    vbnet-ID-bgs (10.77.0.3, background sender)                           ─┤ vbnet-ID-sw
    vbnet-ID-bgr (10.77.0.4, background receiver)                         ─┘

Each guest also has a management NIC (QEMU user networking, SSH on a loopback port only), over
which the lab addresses the data NIC and runs the workloads. Guests are (re)booted when a
variant's guest knobs (vCPUs, NIC) change; a switch change only re-attaches the taps.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from pydantic import BaseModel, Field

from virtbench.contract import MAX_SECONDS, Knob, Tool
from virtbench.kvm.guest_domain import CONSOLE_CMDLINE, direct_boot_domain_xml
from virtbench.kvm.guest_host import qemu_argv
from virtbench.kvm.guest_knobs import GuestKnobs, with_vcpus
from virtbench.kvm.guest_nics import (
    NIC_DRIVERS,
    NIC_MODELS,
    GuestNicView,
    NicCaps,
    NicKnobs,
    interface_xml,
    memfd_shared_memory,
    nic_from_live_xml,
    nic_knobs_from,
    parse_ethtool,
    parse_qemu_nic,
    validate_nic,
    verify_nic,
    vhost_user_qemu_args,
)
from virtbench.kvm.sandbox import wait_ssh
from virtbench.kvm.sandbox_image import GuestInstance, build_debian_guest, make_instance
from virtbench.kvm.sandbox_libvirtd import PrivateLibvirtd, remove_domain
from virtbench.labs.daemons import start_recorded
from virtbench.labs.guest import RNG, user_network
from virtbench.labs.lab_contract import LabState, Manifest
from virtbench.labs.net.background import BACKGROUND_PORT
from virtbench.labs.net.netops import mac_address, pin_neighbours
from virtbench.labs.net.switches import BRIDGE, Host, LinuxBridge, OvsNetdev
from virtbench.labs.net.vswitch import FOREGROUND_PORT, IRTT_PORT, SUBNET, VSwitchLab, VSwitchParams
from virtbench.model import VirtbenchError
from virtbench.services import ClientServerPath, Service, VirtualSwitch
from virtbench.targets.libvirt_connection import libvirt_module, open_connection
from virtbench.targets.local import NetnsTarget
from virtbench.targets.ssh import SSHTarget
from virtbench.targets.target_contract import Target

__all__ = ["GUEST_NET_PACKAGES", "LABS", "VSwitchGuestsLab", "guest_nic_view", "remove_guests",
           "rename_nic", "start_guest_servers"]

GUEST_NET_PACKAGES = ("iperf3", "irtt", "tcpdump", "iproute2", "ethtool", "procps", "stress-ng")
"""What net.qos-transfer and the lab run inside the guests (servers, client, capture,
counters, ethtool -l/-k/-g), and the vnf-guests lab's router and neighbours (sysctl,
stress-ng): one image for both labs, built once."""
GUEST_SWITCHES = ("linux-bridge", "ovs", "ovs-dpdk")
EMULATED = ("emulated (TCG): the guests' packet processing is emulated, so throughput and "
            "delay measure the emulation as much as the switch; compare guests with the "
            "namespace pair through the same switch (BENCHMARKS.md, net_guest_tcp)")


class VSwitchGuestsParams(VSwitchParams):
    image_cache: str = Field(".cache/virtbench-guest/net-image",
                             description="where the guests' image is built and cached")
    vcpus: int = Field(1, ge=1, description="default vCPUs of each guest (knob vcpus overrides)")
    memory_mib: int = Field(640, ge=512, description="memory of each guest, MiB")
    boot_timeout_s: float = Field(300.0, ge=1, le=MAX_SECONDS,
                                  description="wait for each guest's sshd")


@dataclass
class _Guest:
    role: str
    domain: str
    tap: str
    mac: str
    cidr: str
    instance: GuestInstance
    target: SSHTarget | None = None

    @property
    def address(self) -> str:
        return self.cidr.split("/")[0]


@dataclass(frozen=True)
class _GuestSet:
    vcpus: int
    nic: NicKnobs
    backend: str = "tap"
    """tap (Linux bridge, OVS netdev) or vhost-user (OVS-DPDK): a change reboots the guests."""


class VSwitchGuestsLab(VSwitchLab):
    name = "vswitch-guests"
    description = ("study 001 with libvirt guests as client and server on a Linux bridge or "
                   "OVS (netdev) tap port; NIC knobs (model, vhost, queues, ring sizes) "
                   "verified; background pair in namespaces")
    Params = VSwitchGuestsParams
    tools: ClassVar[tuple[Tool, ...]] = (
        *VSwitchLab.tools, Tool("qemu-system-x86_64", "qemu-system-x86", "the guests"),
        Tool("mmdebstrap", "mmdebstrap", "the guests' image"))
    knobs: ClassVar[tuple[Knob, ...]] = (
        Knob("switch", "the virtual switch joining the guests' taps and the background "
             "namespaces (ovs: Open vSwitch, userspace netdev datapath)", choices=GUEST_SWITCHES),
        VSwitchLab.knobs[1],
        Knob("vcpus", "vCPUs of each guest", int),
        Knob("nic_model", "the guests' data NIC model", choices=NIC_MODELS),
        Knob("nic_driver", "virtio-net backend: qemu (userspace) or vhost (vhost-net)",
             choices=NIC_DRIVERS),
        Knob("nic_queues", "queue pairs of the data NIC (multiqueue; ethtool -L in the guest)",
             int),
        Knob("rx_queue_size", "virtio-net RX ring size (256, 512, 1024)", int),
        Knob("tx_queue_size", "virtio-net TX ring size (a tap backend keeps 256)", int),
    )
    provides: ClassVar[tuple[type[Service], ...]] = (ClientServerPath, VirtualSwitch)

    def __init__(self, params: BaseModel | None, workdir: Any, target: Target) -> None:
        super().__init__(params, workdir, target)
        # Only the background pair are namespaces; srv and cli are guests.
        self.hosts = {role: Host(role, self.prefix + role, f"{SUBNET}.{i}/24")
                      for i, role in ((3, "bgs"), (4, "bgr"))}
        self.session: Path | None = None
        self.daemon: PrivateLibvirtd | None = None
        self.conn: Any = None
        self.guests: dict[str, _Guest] = {}
        self.booted: _GuestSet | None = None
        self.guest_notes: dict[str, str] = {}

    # -- before anything starts ------------------------------------------------------------
    def _caps(self) -> NicCaps:
        return NicCaps(vhost_net=Path("/dev/vhost-net").exists(), virt_type="qemu")

    def _wanted(self, knobs: Mapping[str, Any]) -> tuple[_GuestSet, list[str]]:
        vcpus = knobs.get("vcpus", self.params.vcpus)
        problems = []
        if isinstance(vcpus, bool) or not isinstance(vcpus, int) or not \
                1 <= vcpus <= (os.cpu_count() or 1):
            problems.append(f"knob vcpus: {vcpus!r}; use 1..{os.cpu_count() or 1} (this host's "
                            "CPUs)")
            vcpus = 1
        nic = nic_knobs_from(knobs)
        switch = knobs.get("switch", "linux-bridge")
        if switch not in GUEST_SWITCHES:
            problems.append(f"knob switch: {switch!r}; guests attach to "
                            f"{', '.join(GUEST_SWITCHES)}")
        backend = "vhost-user" if switch == "ovs-dpdk" else "tap"
        problems += validate_nic(nic, vcpus, self._caps(), backend)
        return _GuestSet(vcpus, nic, backend), problems

    def check_variant(self, variant: str, knobs: Mapping[str, Any]) -> list[str]:
        try:
            _, problems = self._wanted(knobs)
        except TypeError as exc:
            return [f"variant {variant}: {exc}"]
        return [f"variant {variant}: {p}" for p in problems]

    # -- up / down -------------------------------------------------------------------------
    def up(self) -> None:
        super().up()
        assert self.manifest is not None
        self.session = Path(tempfile.mkdtemp(prefix="vbgsw-", dir="/tmp"))
        tag = f"vbg{self.lab_id}"
        self.guests = {
            role: _Guest(role, f"vbgsw-{os.getpid()}-{role}", f"{tag}{role}",
                         f"52:54:00:77:00:{i:02x}", f"{SUBNET}.{i}/24",
                         instance=None)  # type: ignore[arg-type]
            for i, role in ((1, "srv"), (2, "cli"))}
        # Recorded before anything of it exists: the private daemon (with every domain on it),
        # the session directory, the domain and tap names.
        self.manifest.add("guest", {"session": str(self.session),
                                    "domains": [g.domain for g in self.guests.values()],
                                    "taps": [g.tap for g in self.guests.values()]})
        cache = Path(self.params.image_cache).resolve()
        image = build_debian_guest(cache, GUEST_NET_PACKAGES)
        self.daemon = PrivateLibvirtd(self.session / "d", caps_cache=cache.parent / "qemu-caps")
        self.conn = open_connection(self.daemon.start())
        for guest in self.guests.values():
            guest.instance = make_instance(image, self.session / guest.role)
        # QEMU creates the vhost-user sockets here (below /tmp: the private libvirtd's QEMU has
        # a /run of its own); sticky and writable by all, as OVS's own directory.
        self.vhost_dir.mkdir()
        self.vhost_dir.chmod(0o1777)

    @property
    def vhost_dir(self) -> Path:
        assert self.session is not None
        return self.session / "vhu"

    def _vhost_user_ports(self) -> list[str]:
        return [*self.params.vhost_user_ports, *self.guests]

    def _vhost_dir(self) -> Path | None:
        return self.vhost_dir

    def down(self) -> None:
        self._stop_guests()
        super().down()

    def _stop_guests(self) -> None:
        for guest in self.guests.values():
            if guest.target is not None:
                guest.target.close()
                guest.target = None
        if self.manifest is not None:
            for item in self.manifest.items("guest"):
                remove_guests(item)
                self.manifest.remove("guest", item)
        self.conn, self.daemon, self.booted = None, None, None

    @classmethod
    def clean(cls, manifest: Manifest) -> list[str]:
        removed = []
        for item in manifest.items("guest"):
            remove_guests(item)
            manifest.remove("guest", item)
            removed.append(f"guests {', '.join(item['domains'])} and {item['session']}")
        return removed + super().clean(manifest)

    # -- guests ----------------------------------------------------------------------------
    def _boot(self, wanted: _GuestSet) -> None:
        """(Re)define and boot both guests with ``wanted``; address their data NICs."""
        assert self.session is not None
        self._stop_background()
        self._stop_servers()
        for guest in self.guests.values():
            if guest.target is not None:
                guest.target.close()
                guest.target = None
            remove_domain(self.conn, guest.domain)
        self.booted = None
        for guest in self.guests.values():
            if wanted.backend == "tap":
                self._refuse_existing_tap(guest)
        started = time.monotonic()
        for guest in self.guests.values():  # both boot at once
            self._define_and_start(guest, wanted)
        for guest in self.guests.values():
            wait_ssh(guest.instance, self.params.boot_timeout_s)
            guest.target = SSHTarget("127.0.0.1", user="root", port=guest.instance.port,
                                     known_hosts=str(guest.instance.known_hosts),
                                     identity_file=str(guest.instance.identity))
            # Each guest's clock from the host's (the boots' offsets reach a second under TCG);
            # still off by an SSH round trip, so one-way delays between guests are rough.
            guest.target.run(["date", "-u", "-s", f"@{time.time():.6f}"])
        boot_s = time.monotonic() - started
        self.guest_notes = {"guests": f"2 × {wanted.vcpus} vCPU, {self.params.memory_mib} MiB, "
                                      f"qemu (TCG), data NIC on {wanted.backend}, booted in "
                                      f"{boot_s:.1f} s",
                            "emulated": EMULATED}
        for guest in self.guests.values():
            self.guest_notes[f"verified_{guest.role}"] = self._configure(guest, wanted)
        self.booted = wanted

    def _refuse_existing_tap(self, guest: _Guest) -> None:
        found = self.target.run(["ip", "link", "show", "dev", guest.tap], check=False)
        if found.returncode == 0:
            raise VirtbenchError(
                    f"lab {self.name}: a network device {guest.tap} already exists on this "
                    "host; it is not this run's to take (remove it, or 'virtbench lab clean' "
                    "if a crashed run left it)")

    def _define_and_start(self, guest: _Guest, wanted: _GuestSet) -> None:
        assert self.session is not None
        console = self.session / f"{guest.role}-console.log"
        console.unlink(missing_ok=True)
        tap = wanted.backend == "tap"
        devices = [RNG, interface_xml(wanted.nic, guest.tap, guest.mac)] if tap else [RNG]
        qemu_args = user_network(guest.instance.port) + ([] if tap else vhost_user_qemu_args(
            wanted.nic, str(self.vhost_dir / f"vhu-{guest.role}.sock"), guest.mac))
        xml = with_vcpus(direct_boot_domain_xml(
            guest.domain, kernel=guest.instance.kernel, initrd=guest.instance.initrd,
            console_log=console, cmdline=f"{CONSOLE_CMDLINE} quiet", virt_type="qemu",
            memory_mib=self.params.memory_mib, devices=devices, qemu_args=qemu_args),
            GuestKnobs(vcpus=wanted.vcpus, memory_mib=self.params.memory_mib))
        if not tap:
            xml = memfd_shared_memory(xml)
        try:
            self.conn.defineXML(xml).create()
        except libvirt_module().libvirtError as exc:
            raise VirtbenchError(f"lab {self.name}: libvirt refused guest {guest.role} with "
                                 f"NIC {wanted.nic.as_dict()}: {exc}") from exc

    def _configure(self, guest: _Guest, wanted: _GuestSet) -> str:
        """Name the data NIC after the role, set queues, offloads and the address; verify."""
        assert guest.target is not None
        run = guest.target.run
        nic = guest.role
        rename_nic(guest.target, guest.mac, nic,
                   f"lab {self.name}: guest {guest.role} (nic_model {wanted.nic.nic_model})")
        if wanted.nic.nic_queues > 1:
            run(["ethtool", "-L", nic, "combined", str(wanted.nic.nic_queues)])
        if not self.params.offloads or wanted.backend == "vhost-user":
            # On OVS-DPDK as on its namespace hosts: MTU-sized frames, so that the client's
            # capture counts the packets the server's counter counts (GRO would merge them).
            run(["ethtool", "-K", nic, "tso", "off", "gso", "off", "gro", "off", "tx", "off"])
        else:
            # Offloads on, GRO off: the client's capture sees frames after GRO, its NIC's
            # counter before it, so GRO's merges showed as a study loss that was not loss
            # (0.05-0.08 % on the bridge, benchmarks/net_guest_count_agreement.py).
            run(["ethtool", "-K", nic, "gro", "off"])
        run(["sysctl", "-qw", f"net.ipv6.conf.{nic}.disable_ipv6=1"], check=False)
        run(["ip", "addr", "replace", guest.cidr, "dev", nic])
        run(["ip", "link", "set", nic, "up"])
        return self._verify(guest, wanted)

    def _verify(self, guest: _Guest, wanted: _GuestSet) -> str:
        assert guest.target is not None
        live = nic_from_live_xml(self.conn.lookupByName(guest.domain).XMLDesc(0), guest.mac)
        argv = qemu_argv(guest.domain)
        qemu = parse_qemu_nic(argv, guest.mac) if argv else {}
        view = guest_nic_view(guest.target, guest.role)
        wrong = verify_nic(wanted.nic, live, qemu, view, wanted.backend)
        if wrong:
            raise VirtbenchError(f"lab {self.name}: guest {guest.role}'s NIC is not what was "
                                 "asked (refused): " + "; ".join(wrong))
        shown = ("tcp-segmentation-offload", "generic-segmentation-offload",
                 "generic-receive-offload", "tx-checksumming")
        return json.dumps({"live_xml": live, "qemu": qemu, "guest": {
            "driver": view.driver, "combined": view.combined, "max_combined": view.max_combined,
            "rx_ring": view.rx_ring, "tx_ring": view.tx_ring,
            "offloads": {k: view.offloads.get(k) for k in shown}}}, sort_keys=True)

    # -- the switch ------------------------------------------------------------------------
    def _attach_taps(self) -> None:
        """Each guest's tap into the switch namespace (if not there yet) and onto the switch."""
        assert self.switch is not None
        if self.booted is None or self.booted.backend != "tap":
            return  # vhost-user: OVS-DPDK connects to the guests' sockets itself
        for guest in self.guests.values():
            if self.target.run(["ip", "-n", self.sw_ns, "link", "show", "dev", guest.tap],
                               check=False).returncode != 0:
                self.target.run(["ip", "link", "set", guest.tap, "netns", self.sw_ns])
            self.target.run(["ip", "-n", self.sw_ns, "link", "set", guest.tap, "up"])
            if isinstance(self.switch, LinuxBridge):
                self.target.run(["ip", "-n", self.sw_ns, "link", "set", guest.tap,
                                 "master", BRIDGE])
            elif isinstance(self.switch, OvsNetdev):
                self.switch.ovs.vsctl("--may-exist", "add-port", BRIDGE, guest.tap)

    def _pin_all_neighbours(self) -> None:
        """Permanent ARP entries among guests and namespaces, so no ARP crosses the switch
        during a measurement (as the namespace lab does)."""
        pin_neighbours(self.target, [(h.namespace, h.role, h.address)
                                     for h in self.hosts.values()])
        ends = [(g.address, g.mac) for g in self.guests.values()]
        ends += [(h.address, mac_address(self.target, h.namespace, h.role))
                 for h in self.hosts.values()]
        for guest in self.guests.values():
            assert guest.target is not None
            for address, mac in ends:
                if address != guest.address:
                    guest.target.run(["ip", "neigh", "replace", address, "lladdr", mac,
                                      "dev", guest.role, "nud", "permanent"])
        for host in self.hosts.values():
            for guest in self.guests.values():
                self.target.run(["ip", "-n", host.namespace, "neigh", "replace", guest.address,
                                 "lladdr", guest.mac, "dev", host.role, "nud", "permanent"])

    def _start_servers(self) -> None:
        """Called by the switch's (re)build and after a boot: taps on the switch, neighbours
        pinned, the background receiver in its namespace, iperf3 + irtt in the server guest."""
        if self.switch is None or self.booted is None:
            return
        assert self.manifest is not None
        self._attach_taps()
        self._pin_all_neighbours()
        if not self.servers:
            bg = start_recorded(self.manifest, NetnsTarget(self.hosts["bgr"].namespace),
                                ["iperf3", "-s", "-p", str(BACKGROUND_PORT)],
                                log=self.rundir / "iperf3-background.log")
            self.servers = [bg]
            bg.wait_for_port(BACKGROUND_PORT)
        self._start_guest_servers()

    def _start_guest_servers(self) -> None:
        srv = self.guests["srv"].target
        assert srv is not None
        # Detached inside the guest (which is destroyed with everything in it afterwards).
        start_guest_servers(srv, "", FOREGROUND_PORT, IRTT_PORT, f"lab {self.name}")

    def serving_daemons(self) -> dict[str, int]:
        """The switch's daemons; the servers run inside the guest (its QEMU is their host)."""
        return self.switch.daemons() if self.switch is not None else {}

    # -- variants --------------------------------------------------------------------------
    def enter(self, variant: str, knobs: Mapping[str, Any]) -> LabState:
        if self.manifest is None:
            self.up()
        wanted, problems = self._wanted(knobs)
        if problems:
            raise VirtbenchError(f"lab {self.name}, variant {variant}: " + "; ".join(problems))
        switch_knobs = {"switch": knobs.get("switch", "linux-bridge"),
                         "background_mbps": knobs.get("background_mbps", 0)}
        if wanted != self.booted:
            if wanted.backend == "vhost-user":
                # QEMU's vhost-user netdev waits at start until its client (OVS-DPDK) connects,
                # wait=off notwithstanding: the switch first.
                self._enter_switch(variant, switch_knobs)
            self._boot(wanted)
            self._start_servers()  # the taps on the current switch, if one is up
        self._check_address()
        kind, rate = self._enter_switch(variant, switch_knobs)
        srv, cli = self.guests["srv"], self.guests["cli"]
        assert srv.target is not None and cli.target is not None
        services = self.publish(
            ClientServerPath(server_ip=srv.address, server_iface=srv.role,
                             server_target=srv.target, client_ip=cli.address,
                             client_iface=cli.role, iperf3_port=FOREGROUND_PORT,
                             irtt_port=IRTT_PORT),
            self._virtual_switch(kind, rate))
        return LabState(target=cli.target, services=services,
                        notes={**self._switch_notes(rate), **self.guest_notes})

    def _check_address(self) -> None:
        """A guest that lost its data address (someone flushed it, a DHCP client in a user's
        image) is an error naming the guest, never a run against the wrong path."""
        for guest in self.guests.values():
            assert guest.target is not None
            out = guest.target.run(["ip", "-4", "-o", "addr", "show", "dev", guest.role],
                                   check=False).stdout
            if f" {guest.cidr} " not in out:
                raise VirtbenchError(f"lab {self.name}: guest {guest.role} lost its address "
                                     f"{guest.cidr} on {guest.role} (has: {out.strip() or 'none'})")


def start_guest_servers(target: Target, address: str, iperf3_port: int, irtt_port: int,
                        what: str) -> None:
    """iperf3 and irtt servers detached in a guest (destroyed with everything in it), bound to
    ``address`` ("" for all), unless they run already; waits until both listen."""
    bind = ["-B", address] if address else []
    target.run(["sh", "-c", shlex.join(["pgrep", "-x", "iperf3"]) + " >/dev/null || "
                + shlex.join(["iperf3", "-s", "-D", *bind, "-p", str(iperf3_port)])
                + "; pgrep -x irtt >/dev/null || (setsid "
                + shlex.join(["irtt", "server", "-b", f"{address}:{irtt_port}"])
                + " </dev/null >/tmp/irtt.log 2>&1 &)"])
    deadline = time.monotonic() + 30
    while True:  # ends: listening, or past the deadline
        out = target.run(["ss", "-Hlntu"], check=False).stdout
        if f":{iperf3_port} " in out and f":{irtt_port} " in out:
            return
        if time.monotonic() > deadline:
            raise VirtbenchError(f"{what}: iperf3/irtt servers in the server guest did not "
                                 f"listen within 30 s ({out.strip()[-200:]})")
        time.sleep(0.5)


def rename_nic(target: Target, mac: str, name: str, what: str) -> None:
    """Name the guest's NIC with ``mac`` ``name``; VirtbenchError naming ``what`` without one."""
    links = json.loads(target.run(["ip", "-j", "link", "show"]).stdout)
    found = [link["ifname"] for link in links if str(link.get("address", "")).lower() == mac]
    if not found:
        raise VirtbenchError(f"{what} has no NIC with MAC {mac}")
    target.run(["ip", "link", "set", found[0], "name", name])


def guest_nic_view(target: Target, nic: str) -> GuestNicView:
    """The data NIC ``nic`` as the guest sees it: its driver, ``ethtool -l/-g/-k``."""
    run = target.run
    numbers = parse_ethtool(run(["ethtool", "-l", nic], check=False).stdout,
                            run(["ethtool", "-g", nic], check=False).stdout)
    offloads = dict(line.split(": ", 1)[0:2] for line in run(
        ["ethtool", "-k", nic]).stdout.splitlines()[1:] if ": " in line)
    driver = run(["sh", "-c", f"basename $(readlink /sys/class/net/{nic}/device/driver)"],
                 check=False).stdout.strip()
    return GuestNicView(driver=driver, combined=numbers["combined"] or 1,
                        max_combined=numbers["max_combined"] or 1,
                        rx_ring=numbers["rx_ring"], tx_ring=numbers["tx_ring"],
                        offloads={k: v.split()[0] for k, v in offloads.items() if v})


def remove_guests(item: Mapping[str, Any]) -> None:
    """The private daemon with every domain on it (all are the lab's), then the session
    (the manifest item "guest" of the vswitch-guests and vnf-guests labs)."""
    session = Path(item["session"])
    PrivateLibvirtd(session / "d").stop()
    shutil.rmtree(session, ignore_errors=True)


LABS = (VSwitchGuestsLab,)
