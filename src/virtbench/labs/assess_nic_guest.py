"""The scratch guest of ``virtbench assess``'s NIC what-ifs: ONE libvirt guest (a private
libvirtd, TCG, as ``kvm sandbox``) with several data NICs, each a tap that libvirt creates and
the lab moves into its own peer namespace, where one iperf3 server listens (docs/assess.md, "The
NIC what-ifs in a guest")::

    guest vbnicg-PID                            namespace vbnet-ID-nicpeer (iperf3 -s)
      nic0 virtio ×1   10.82.0.2/24 ── tap vbnID0 10.82.0.1/24
      nic1 e1000e      10.82.1.2/24 ── tap vbnID1 10.82.1.1/24
      nic2 virtio ×2   10.82.2.2/24 ── tap vbnID2 10.82.2.1/24

Each NIC has a subnet of its own, so a connection to a peer address goes through that NIC
alone; a workload picks the NIC by its model and queue pairs (:class:`GuestNics`), so one boot
serves every variant (switch cost "cheap"). Each NIC is verified from the live XML, QEMU's
command line and inside the guest (driver, ``ethtool -l``), as the guests of
``vswitch-guests`` are. The image is the sandbox's Debian guest with Debian's generic kernel
(its e1000e driver: the cloud kernel has none) and iperf3, ethtool and iproute2.

``up`` records the session directory, the domain and the namespace in the manifest before any
of them exists; ``down`` (also on Ctrl-C and SIGTERM, through the runner) and ``virtbench lab
clean`` (after a crash) remove the private libvirtd with the guest, its taps (they go with the
guest and the namespace), the namespace, the iperf3 server and the session directory.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar

from pydantic import BaseModel, Field

from virtbench.contract import MAX_SECONDS, Params, Tool
from virtbench.kvm.guest_domain import CONSOLE_CMDLINE, direct_boot_domain_xml
from virtbench.kvm.guest_host import qemu_argv
from virtbench.kvm.guest_knobs import GuestKnobs, with_vcpus
from virtbench.kvm.guest_nics import (
    NIC_PCI_SLOT,
    NicCaps,
    NicKnobs,
    interface_xml,
    nic_from_live_xml,
    parse_qemu_nic,
    validate_nic,
    verify_nic,
)
from virtbench.kvm.sandbox import wait_ssh
from virtbench.kvm.sandbox_image import GuestInstance, build_debian_guest, make_instance
from virtbench.kvm.sandbox_libvirtd import PrivateLibvirtd
from virtbench.labs.daemons import start_recorded
from virtbench.labs.guest import RNG, user_network
from virtbench.labs.lab_contract import Lab, LabState, Manifest, lab_root
from virtbench.labs.net.guest_switch import guest_nic_view
from virtbench.labs.net.net_leftovers import OUR_PREFIX, clean_manifest
from virtbench.labs.net.netops import add_namespace
from virtbench.model import VirtbenchError
from virtbench.services import GuestNic, GuestNics
from virtbench.targets.daemon import Daemon
from virtbench.targets.libvirt_connection import libvirt_module, open_connection
from virtbench.targets.local import LocalTarget, NetnsTarget
from virtbench.targets.ssh import SSHTarget
from virtbench.targets.target_contract import Target

__all__ = ["E1000E_MODULE", "IPERF3_PORT", "LABS", "NIC_GUEST_PACKAGES", "NicGuestLab",
           "NicGuestParams", "parse_nic"]

IPERF3_PORT = 5302
SUBNET = "10.82"
NIC_GUEST_PACKAGES = ("iperf3", "iproute2", "ethtool", "procps")
"""What the lab and the probe run inside the guest (the client, ip -j, ethtool -l/-L/-k)."""
E1000E_MODULE = "drivers/net/ethernet/intel/e1000e/e1000e.ko"
"""Debian's generic kernel builds PTP in, so e1000e needs no other module."""
KERNEL_FLAVOUR = "amd64"
EMULATED = ("emulated (TCG): the guest's CPU and its packet processing are emulated, and QEMU "
            "serves every NIC in userspace (no vhost-net without KVM), so the NICs' "
            "throughput measures the emulation as much as the NIC; what stays meaningful is "
            "which NIC costs QEMU more work per packet")


def parse_nic(text: str) -> NicKnobs:
    """``virtio``, ``virtio:2`` or ``e1000e`` → the NIC's knobs (userspace backend)."""
    model, _, queues = text.partition(":")
    if queues and not queues.isdigit():
        raise ValueError(f"{text!r}: queues must be a whole number (MODEL:QUEUES)")
    return NicKnobs(nic_model=model, nic_queues=int(queues or 1))


class NicGuestParams(Params):
    nics: list[str] = Field(["virtio", "e1000e"], min_length=1, max_length=4,
                            description="the guest's data NICs, each MODEL or MODEL:QUEUES "
                            "(virtio, virtio:2, e1000e); one tap and subnet each")
    vcpus: int = Field(2, ge=1, le=64, description="the guest's vCPUs (multiqueue needs a "
                       "queue pair per vCPU at most)")
    memory_mib: int = Field(512, ge=384, le=1 << 16, description="the guest's memory, MiB")
    image_cache: str = Field(".cache/virtbench-guest/nic-image",
                             description="where the guest image is built and cached")
    boot_timeout_s: float = Field(300.0, ge=1, le=MAX_SECONDS,
                                  description="wait for the guest's sshd")


class NicGuestLab(Lab):
    name = "assess-nic-guest"
    description = ("virtbench assess's NIC what-ifs: one scratch guest with several data NICs "
                   "(virtio, e1000e, multiqueue virtio), each a tap into a peer namespace with "
                   "an iperf3 server; NICs verified, workloads inside the guest")
    Params = NicGuestParams
    tools = (Tool("qemu-system-x86_64", "qemu-system-x86", "the guest"),
             Tool("mmdebstrap", "mmdebstrap", "the guest image"),
             Tool("ip", "iproute2", "the peer namespace and the taps"),
             Tool("iperf3", "iperf3", "the peer's server"))
    switch_cost: ClassVar[str] = "cheap"
    provides = (GuestNics,)

    def __init__(self, params: BaseModel | None, workdir: Path, target: Target) -> None:
        super().__init__(params, workdir, target)
        self.token = secrets.token_hex(2)
        self.manifest: Manifest | None = None
        self.domain = f"vbnicg-{os.getpid()}"
        self.peer_ns = f"{OUR_PREFIX}{self.token}-nicpeer"
        self.session: Path | None = None
        self.conn: Any = None
        self.guest: SSHTarget | None = None
        self.server: Daemon | None = None
        self.service: GuestNics | None = None
        self.notes: dict[str, str] = {}

    def _nics(self) -> list[NicKnobs]:
        return [parse_nic(text) for text in self.params.nics]

    def check(self) -> list[str]:
        problems = super().check()
        if os.geteuid() != 0:
            problems.append(f"lab {self.name}: a private libvirtd and namespaces need root")
        if not isinstance(self.target, LocalTarget) or isinstance(self.target, NetnsTarget):
            problems.append(f"lab {self.name}: runs on the local machine only (target kind "
                            "local)")
        caps = NicCaps(vhost_net=False, virt_type="qemu", image_models=("virtio", "e1000e"))
        for text in self.params.nics:
            try:
                nic = parse_nic(text)
            except ValueError as exc:
                problems.append(f"lab {self.name}, param nics: {exc}")
                continue
            problems += [f"lab {self.name}, param nics ({text}): {p}"
                         for p in validate_nic(nic, self.params.vcpus, caps)]
        if len(set(self.params.nics)) != len(self.params.nics):
            problems.append(f"lab {self.name}, param nics: a NIC is named twice "
                            f"({', '.join(self.params.nics)})")
        return problems

    @classmethod
    def plan_notes(cls, params: BaseModel, variants: Mapping[str, Mapping[str, Any]]
                   ) -> list[str]:
        """`run --check`: the guest is emulated, and what that makes of the NICs' figures."""
        return [f"the scratch guest is {EMULATED}"]

    # -- up / down -------------------------------------------------------------------------

    def up(self) -> None:
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.manifest = Manifest(lab_root() / f"{OUR_PREFIX}nicg-{self.token}.json", self.name)
        self.session = Path(tempfile.mkdtemp(prefix="vbnicg-", dir="/tmp"))
        # Recorded before anything of it exists: the private daemon (with the guest on it) and
        # the session directory; the namespace (add_namespace records it).
        self.manifest.add("guest", {"session": str(self.session), "domain": self.domain})
        try:
            self._up(self.manifest, self.session)
        except BaseException:
            self.down()
            raise

    def _up(self, manifest: Manifest, session: Path) -> None:
        cache = Path(self.params.image_cache).resolve()
        # One recipe whatever the NICs (a cached image serves every what-if): the driver is
        # always in the image, loaded only when the guest has an e1000e.
        image = build_debian_guest(cache, NIC_GUEST_PACKAGES, (E1000E_MODULE,), KERNEL_FLAVOUR)
        daemon = PrivateLibvirtd(session / "d", caps_cache=cache.parent / "qemu-caps")
        self.conn = open_connection(daemon.start())
        instance = make_instance(image, session / "guest")
        add_namespace(self.target, manifest, self.peer_ns)
        taps = [f"vbn{self.token}{i}" for i in range(len(self.params.nics))]
        for tap in taps:
            if self.target.run(["ip", "link", "show", "dev", tap], check=False).returncode == 0:
                raise VirtbenchError(f"lab {self.name}: a network device {tap} already exists "
                                     "on this host; it is not this run's to take")
        started = time.monotonic()
        self._boot(instance, session, taps)
        wait_ssh(instance, self.params.boot_timeout_s)
        boot_s = time.monotonic() - started
        self.guest = SSHTarget("127.0.0.1", user="root", port=instance.port,
                               known_hosts=str(instance.known_hosts),
                               identity_file=str(instance.identity))
        if any(n.nic_model == "e1000e" for n in self._nics()):
            self.guest.run(["busybox", "insmod", "/lib/modules/vbkvm/e1000e.ko"])
        nics = tuple(self._attach(i, nic, tap) for i, (nic, tap)
                     in enumerate(zip(self._nics(), taps, strict=True)))
        rundir = lab_root() / f"{OUR_PREFIX}nicg-{self.token}"
        manifest.add("dir", str(rundir))
        rundir.mkdir(parents=True, exist_ok=True)
        self.server = start_recorded(manifest, NetnsTarget(self.peer_ns),
                                     ["iperf3", "-s", "-p", str(IPERF3_PORT)],
                                     log=rundir / "iperf3.log")
        self.server.wait_for_port(IPERF3_PORT)
        self.service = GuestNics(nics=nics, peer_ns=self.peer_ns, port=IPERF3_PORT,
                                 vcpus=self.params.vcpus)
        self.notes = {"guest": f"{self.params.vcpus} vCPU, {self.params.memory_mib} MiB, qemu "
                               f"(TCG), Debian's {KERNEL_FLAVOUR} kernel, booted in "
                               f"{boot_s:.1f} s",
                      "emulated": EMULATED,
                      **{f"verified_{n.guest_iface}": n.verified for n in nics}}

    def _boot(self, instance: GuestInstance, session: Path, taps: list[str]) -> None:
        devices = [RNG, *(interface_xml(nic, tap, _mac(i), NIC_PCI_SLOT + i) for i, (nic, tap)
                          in enumerate(zip(self._nics(), taps, strict=True)))]
        xml = with_vcpus(direct_boot_domain_xml(
            self.domain, kernel=instance.kernel, initrd=instance.initrd,
            console_log=session / "console.log", cmdline=f"{CONSOLE_CMDLINE} quiet",
            virt_type="qemu", memory_mib=self.params.memory_mib, devices=devices,
            qemu_args=user_network(instance.port)),
            GuestKnobs(vcpus=self.params.vcpus, memory_mib=self.params.memory_mib))
        try:
            self.conn.defineXML(xml).create()
        except libvirt_module().libvirtError as exc:
            raise VirtbenchError(f"lab {self.name}: libvirt refused the guest with NICs "
                                 f"{', '.join(self.params.nics)} (param nics): {exc}") from exc

    def _attach(self, index: int, nic: NicKnobs, tap: str) -> GuestNic:
        """The tap into the peer namespace with the peer's address; the guest's NIC named,
        its queues set, addressed and verified (a NIC found otherwise than asked: refused)."""
        assert self.guest is not None
        run = self.guest.run
        mac, iface = _mac(index), f"nic{index}"
        peer, mine = f"{SUBNET}.{index}.1", f"{SUBNET}.{index}.2"
        self.target.run(["ip", "link", "set", tap, "netns", self.peer_ns])
        self.target.run(["ip", "-n", self.peer_ns, "addr", "add", f"{peer}/24", "dev", tap])
        self.target.run(["ip", "-n", self.peer_ns, "link", "set", tap, "up"])
        name = self._guest_iface(mac, nic)
        run(["ip", "link", "set", name, "name", iface])
        if nic.nic_queues > 1:
            run(["ethtool", "-L", iface, "combined", str(nic.nic_queues)])
        run(["sysctl", "-qw", f"net.ipv6.conf.{iface}.disable_ipv6=1"], check=False)
        run(["ip", "addr", "replace", f"{mine}/24", "dev", iface])
        run(["ip", "link", "set", iface, "up"])
        live = nic_from_live_xml(self.conn.lookupByName(self.domain).XMLDesc(0), mac)
        argv = qemu_argv(self.domain)
        qemu = parse_qemu_nic(argv, mac) if argv else {}
        view = guest_nic_view(self.guest, iface)
        wrong = verify_nic(nic, live, qemu, view)
        if wrong:
            raise VirtbenchError(f"lab {self.name}: the guest's NIC {index} "
                                 f"({self.params.nics[index]}) is not what was asked (param "
                                 "nics, refused): " + "; ".join(wrong))
        verified = json.dumps({"live_xml": live, "qemu": qemu, "guest": {
            "driver": view.driver, "combined": view.combined}}, sort_keys=True)
        return GuestNic(model=nic.nic_model, queues=nic.nic_queues, guest_iface=iface,
                        guest_ip=mine, peer_ip=peer, verified=verified)

    def _guest_iface(self, mac: str, nic: NicKnobs) -> str:
        """The guest's name of the NIC with ``mac`` (an e1000e appears once its driver has
        probed it: waited for, bounded)."""
        assert self.guest is not None
        deadline = time.monotonic() + 30
        while True:  # ends: found, or past the deadline
            links = json.loads(self.guest.run(["ip", "-j", "link", "show"]).stdout)
            names = [link["ifname"] for link in links
                     if str(link.get("address", "")).lower() == mac]
            if names:
                return str(names[0])
            if time.monotonic() > deadline:
                raise VirtbenchError(f"lab {self.name}: the guest has no NIC with MAC {mac} "
                                     f"(model {nic.nic_model}) within 30 s")
            time.sleep(0.5)

    def enter(self, variant: str, knobs: Mapping[str, Any]) -> LabState:
        if self.service is None or self.guest is None:
            raise VirtbenchError(f"lab {self.name}: enter() before up()")
        return LabState(target=self.guest, services=self.publish(self.service),
                        notes=dict(self.notes), caveats=(f"guest {EMULATED}",))

    def down(self) -> None:
        if self.guest is not None:
            guest, self.guest = self.guest, None
            with contextlib.suppress(Exception):
                guest.close()
        if self.server is not None:
            server, self.server = self.server, None
            with contextlib.suppress(Exception):
                server.stop()
        self.conn, self.service = None, None
        if self.manifest is not None:
            self.clean(self.manifest)
            if any(self.manifest.data["objects"].values()):
                raise VirtbenchError(f"lab {self.name}: cleanup incomplete, see "
                                     f"{self.manifest.path} (virtbench lab clean)")
            self.manifest.delete()
            self.manifest = None

    @classmethod
    def clean(cls, manifest: Manifest) -> list[str]:
        removed = []
        for item in manifest.items("guest"):  # the guest first: its taps go with it
            PrivateLibvirtd(Path(item["session"]) / "d").stop()
            shutil.rmtree(item["session"], ignore_errors=True)
            manifest.remove("guest", item)
            removed.append(f"guest {item['domain']} and {item['session']}")
        return removed + clean_manifest(LocalTarget(), manifest)


def _mac(index: int) -> str:
    return f"52:54:00:82:00:{index:02x}"


LABS = (NicGuestLab,)
