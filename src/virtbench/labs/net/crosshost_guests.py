"""The cross-host lab's endpoints as libvirt guests (``endpoints: guests``).

On each role's host: a bridge ``vbxhID{s,c}br`` that takes over the host's interface (its
addresses, its routes and its MAC move to the bridge, in one ``ip -batch``, so the host's own
ssh connection survives), a private libvirtd started through the host's target, and one TCG
guest of the net image whose data NIC is a tap on that bridge, with the address the lab's
parameters give the role (on the hosts' network; never DHCP). The controller reaches each
host's libvirtd through a unix socket forwarded over the host's ssh connection, and each
guest's sshd (QEMU user networking, the host's loopback) through the host (``ssh -W``).
Everything is recorded in the manifest (kind ``xhost-guest``, with how to reach the host again)
before it exists; ``down`` and ``virtbench lab clean`` give the host its interface back.

What the host keeps (the daemon's state, the guest's initramfs and console log) is in a folder
made on the host (``mktemp``) and written through its target (``HostFiles``); what the
controller keeps (the forwarded socket, the guest's client key and pinned host key, the
launcher's output) in a folder here. The image is the one thing expected at the same path on
the host: in the test both hosts share this machine's file system; a host of its own builds it
there (docs/fleet.md, "Cross-host guests").
"""

from __future__ import annotations

import ipaddress
import json
import secrets
import shutil
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from virtbench.kvm.guest_domain import CONSOLE_CMDLINE, direct_boot_domain_xml
from virtbench.kvm.guest_nics import interface_xml, nic_knobs_from
from virtbench.kvm.sandbox_image import (
    DebianGuestImage,
    GuestInstance,
    build_debian_guest,
    make_keys_archive,
)
from virtbench.kvm.sandbox_libvirtd import PrivateLibvirtd
from virtbench.labs.guest import RNG, user_network
from virtbench.labs.lab_contract import Manifest
from virtbench.labs.net.guest_switch import (
    GUEST_NET_PACKAGES,
    rename_nic,
    start_guest_servers,
)
from virtbench.model import VirtbenchError
from virtbench.targets.daemon import free_port
from virtbench.targets.host_files import HostFiles
from virtbench.targets.libvirt_connection import libvirt_module, open_connection
from virtbench.targets.ssh import SSHTarget
from virtbench.targets.target_contract import Target

__all__ = ["DATA_NIC", "KIND", "RoleGuest", "address_problems", "build_image", "iface_of",
           "new_session", "new_tag", "remove_role"]

KIND = "xhost-guest"
DATA_NIC = "data"
"""The guest's NIC on its host's bridge, renamed so in the guest."""


def address_problems(addresses: Mapping[str, str], roles: tuple[str, ...]) -> list[str]:
    """What is wrong with the ``guest_addresses`` parameter (one address/prefix per role)."""
    if sorted(addresses) != sorted(roles):
        return [f"guest_addresses must give each of {', '.join(roles)} an address/prefix "
                f"on the hosts' network (got {dict(addresses)})"]
    problems = []
    for role, text in addresses.items():
        try:
            ipaddress.IPv4Interface(text)
        except ValueError:
            problems.append(f"guest_addresses.{role}: {text!r} is not an IPv4 address/prefix")
            continue
        if "/" not in text:
            problems.append(f"guest_addresses.{role}: {text!r} needs its prefix length "
                            "(10.0.0.20/24)")
    if len(set(addresses.values())) < len(addresses):
        problems.append(f"guest_addresses: the roles need different addresses "
                        f"(got {dict(addresses)})")
    return problems


@dataclass
class RoleGuest:
    """One role's guest and what it takes on its host."""

    role: str
    host_name: str
    host: SSHTarget
    host_address: str
    cidr: str
    tag: str
    session: Path
    """This machine's folder for the guest (socket, keys, launcher output)."""
    host_session: Path = Path()
    """The host's folder for the guest (daemon state, initramfs, console), made by ``up``."""
    iface: str = ""
    record: dict[str, Any] = field(default_factory=dict)
    daemon: PrivateLibvirtd | None = None
    conn: Any = None
    instance: GuestInstance | None = None
    target: SSHTarget | None = None

    @property
    def address(self) -> str:
        return self.cidr.split("/")[0]

    @property
    def bridge(self) -> str:
        return f"{self.tag}br"

    @property
    def tap(self) -> str:
        return f"{self.tag}t"

    @property
    def domain(self) -> str:
        return self.tag

    def describe(self) -> str:
        return (f"{self.host_name} ({self.host.describe()}, bridge {self.bridge} on "
                f"{self.iface}) / guest {self.domain} {self.address} on {DATA_NIC}")

    # -- the bridge ------------------------------------------------------------------------
    def take_interface(self, manifest: Manifest) -> None:
        """Record, then make the bridge holding the host's interface (addresses, routes,
        MAC moved to it in one ``ip -batch``: the host's ssh session never loses its path)."""
        self.iface = iface_of(self.host, self.host_address)
        link = json.loads(self.host.run(["ip", "-j", "addr", "show", "dev", self.iface]).stdout)[0]
        addresses = [f"{a['local']}/{a['prefixlen']}" for a in link.get("addr_info", [])
                     if a.get("family") == "inet"]
        prefix = _prefix(addresses, self.host_address)
        network = ipaddress.IPv4Interface(f"{self.host_address}/{prefix}").network
        if ipaddress.IPv4Interface(self.cidr).ip not in network:
            raise VirtbenchError(f"lab cross-host: guest_addresses.{self.role} {self.cidr} is "
                                 f"not on {self.host_name}'s network {network} ({self.iface})")
        routes = [_route_line(r) for r in json.loads(self.host.run(
            ["ip", "-4", "-j", "route", "show", "dev", self.iface]).stdout)
            if r.get("protocol") != "kernel"]
        if self.host.run(["ip", "link", "show", "dev", self.bridge], check=False).returncode == 0:
            raise VirtbenchError(f"lab cross-host: {self.host_name} already has a device "
                                 f"{self.bridge}; it is not this run's to take ('virtbench lab "
                                 "clean' if a crashed run left it)")
        self.record = {"role": self.role, "host": self.host.spec, "host_name": self.host_name,
                       "iface": self.iface, "bridge": self.bridge, "addresses": addresses,
                       "routes": routes, "session": str(self.session), "domain": self.domain,
                       "host_session": f"/tmp/{self.tag}-{secrets.token_hex(4)}"}
        self.host_session = Path(self.record["host_session"])  # made by the daemon's start
        manifest.add(KIND, self.record)
        batch = [f"link add {self.bridge} type bridge",
                 f"link set {self.bridge} address {link['address']}",
                 f"link set {self.bridge} up", f"link set {self.iface} master {self.bridge}"]
        batch += [f"addr del {a} dev {self.iface}" for a in addresses]
        batch += [f"addr add {a} dev {self.bridge}" for a in addresses]
        batch += [f"route replace {r} dev {self.bridge}" for r in routes]
        _batch(self.host, batch, f"the bridge {self.bridge} on {self.host_name}")

    # -- the daemon and the guest ------------------------------------------------------------
    def start_libvirtd(self, caps_cache: Path) -> None:
        local = self.session / "libvirt.sock"
        daemon = PrivateLibvirtd(self.host_session / "d", caps_cache=caps_cache,
                                 target=self.host, uri=f"qemu+unix:///system?socket={local}",
                                 log_dir=self.session / "d")
        self.host.forward_socket(str(local), str(daemon.socket))
        self.daemon = daemon
        try:
            self.conn = open_connection(daemon.start())
        except VirtbenchError as exc:
            raise VirtbenchError(f"lab cross-host: the private libvirtd on {self.host_name} "
                                 f"did not start: {exc}") from exc

    def define(self, image: DebianGuestImage, memory_mib: int) -> None:
        self.instance = self._instance(image)
        console = self.host_session / "console.log"
        xml = direct_boot_domain_xml(
            self.domain, kernel=self.instance.kernel, initrd=self.instance.initrd,
            console_log=console, cmdline=f"{CONSOLE_CMDLINE} quiet", virt_type="qemu",
            memory_mib=memory_mib, devices=[RNG, interface_xml(nic_knobs_from({}), self.tap,
                                                                self.guest_mac)],
            qemu_args=user_network(self.instance.port))
        try:
            self.conn.defineXML(xml).create()
        except libvirt_module().libvirtError as exc:
            raise VirtbenchError(f"lab cross-host: libvirt on {self.host_name} refused guest "
                                 f"{self.domain}: {exc} ({self.console_tail()})") from exc
        self.host.run(["ip", "link", "set", self.tap, "master", self.bridge, "up"])

    def _instance(self, image: DebianGuestImage) -> GuestInstance:
        """Fresh keys here; on the host, the image's initramfs with the keys' archive appended
        (the image itself is not sent: the host has it at the same path)."""
        files = HostFiles(self.host)
        if not files.exists(image.rootfs) or not files.exists(image.kernel):
            raise VirtbenchError(
                f"lab cross-host: the net image is not on {self.host_name} at {image.rootfs} "
                f"(guest_image_cache): build it there as here ({_BUILT_BY})")
        port = free_port()
        archive, keys = make_keys_archive(self.session / "guest", port)
        on_host = self.host_session / "guest"
        files.mkdir(on_host)
        files.write_bytes(on_host / "keys.cpio", archive.read_bytes())
        archive.unlink()
        files.concatenate([image.rootfs, on_host / "keys.cpio"], on_host / "initrd.cpio")
        return GuestInstance(image.kernel, on_host / "initrd.cpio", port, keys.known_hosts,
                             keys.identity, self.session / "guest")

    @property
    def guest_mac(self) -> str:
        digits = self.tag[4:10]
        return f"52:54:00:{digits[0:2]}:{digits[2:4]}:{'01' if self.role == 'server' else '02'}"

    def console_tail(self) -> str:
        console, files = self.host_session / "console.log", HostFiles(self.host)
        lines = files.read_text(console).splitlines()[-5:] if files.exists(console) else []
        return "console: " + (" | ".join(lines) or "empty")

    def wait_guest(self, timeout_s: float) -> None:
        """The guest's sshd answering through the host, then its data NIC addressed."""
        assert self.instance is not None
        self.target = self.host.behind(self.instance.port, user="root",
                                       identity_file=str(self.instance.identity),
                                       known_hosts=str(self.instance.known_hosts))
        deadline = time.monotonic() + timeout_s
        while True:  # ends: answered, the domain ended, or past the deadline
            answer = self.target.run(["true"], check=False, timeout=60)
            if answer.returncode == 0:
                break
            if not self.conn.lookupByName(self.domain).isActive() or \
                    time.monotonic() > deadline:
                raise VirtbenchError(
                    f"lab cross-host: guest {self.domain} on {self.host_name} did not answer "
                    f"ssh within {timeout_s:g} s: {answer.stderr.strip()[-200:]} "
                    f"({self.console_tail()})")
            time.sleep(1)
        self.configure()

    def configure(self) -> None:
        assert self.target is not None
        run = self.target.run
        rename_nic(self.target, self.guest_mac, DATA_NIC, f"lab cross-host: guest {self.domain}")
        run(["sysctl", "-qw", f"net.ipv6.conf.{DATA_NIC}.disable_ipv6=1"], check=False)
        run(["ip", "addr", "replace", self.cidr, "dev", DATA_NIC])
        run(["ip", "link", "set", DATA_NIC, "up"])
        # The guest's clock from the controller's (a TCG boot's offset reaches a second).
        run(["date", "-u", "-s", f"@{time.time():.6f}"])

    def start_servers(self, iperf3_port: int, irtt_port: int) -> None:
        assert self.target is not None
        start_guest_servers(self.target, self.address, iperf3_port, irtt_port,
                            "lab cross-host")


_BUILT_BY = "kvm/sandbox_image.py's build_debian_guest with the net image's packages"


def build_image(cache: Path) -> DebianGuestImage:
    """The net image (iperf3, irtt, tcpdump, ...), built here once and cached by content.
    Found by the hosts at the same path (a shared file system); a host of its own builds it."""
    return build_debian_guest(cache, GUEST_NET_PACKAGES)


def new_tag(role: str) -> str:
    """``vbxh`` + 6 hex digits + s/c: short enough for the bridge's and tap's names."""
    return f"vbxh{secrets.token_hex(3)}{role[0]}"


def new_session(tag: str) -> Path:
    # Below /tmp: the private libvirtd's namespace covers /run and /var, and a unix socket's
    # path must stay short.
    return Path(tempfile.mkdtemp(prefix=f"{tag}-", dir="/tmp"))


def remove_role(item: Mapping[str, Any], host: SSHTarget | None = None) -> str:
    """Everything of one manifest item (``xhost-guest``): the guest and its daemon, the bridge
    (the host's interface, addresses and routes given back), the session; ``host`` connected
    again from the item when not given. VirtbenchError, naming the host, when it cannot be
    reached (the item then stays in the manifest)."""
    own = host is None
    target = host or SSHTarget.from_spec(item["host"])
    session = Path(item["session"])
    try:
        reached = target.run(["true"], check=False)
        if reached.returncode != 0:
            raise VirtbenchError(f"lab cross-host: cannot reach {item['host_name']} to remove "
                                 f"guest {item['domain']} and bridge {item['bridge']}: "
                                 f"{reached.stderr.strip()[-200:]}")
        _remove_daemon(target, session, Path(item["host_session"]))
        if target.run(["ip", "link", "show", "dev", item["bridge"]],
                      check=False).returncode == 0:
            restore = [f"link set {item['iface']} nomaster"]
            restore += [f"addr add {a} dev {item['iface']}" for a in item["addresses"]]
            restore += [f"link del {item['bridge']}"]
            restore += [f"route replace {r} dev {item['iface']}" for r in item["routes"]]
            # -force: every line is tried (an address already back is no reason to stop)
            target.run(["ip", "-force", "-batch", "-"], input="\n".join(restore) + "\n",
                       check=False)
    finally:
        if own:
            target.close()
    shutil.rmtree(session, ignore_errors=True)
    return (f"guest {item['domain']} and bridge {item['bridge']} on {item['host_name']} "
            f"({item['iface']} given back)")


def _remove_daemon(target: SSHTarget, session: Path, host_session: Path) -> None:
    """Every domain on the private libvirtd (all are ours), the daemon by its PID on the
    host, the forward, then the host's folder."""
    local = session / "libvirt.sock"
    daemon = PrivateLibvirtd(host_session / "d", target=target,
                             uri=f"qemu+unix:///system?socket={local}", log_dir=session / "d")
    target.forward_socket(str(local), str(daemon.socket))
    daemon.stop()
    target.forward_socket(str(local), str(daemon.socket), cancel=True)
    HostFiles(target).remove_tree(host_session)


def _batch(host: Target, lines: list[str], what: str) -> None:
    result = host.run(["ip", "-batch", "-"], input="\n".join(lines) + "\n", check=False)
    if result.returncode != 0:
        raise VirtbenchError(f"lab cross-host: {what}: ip -batch failed: "
                             f"{result.stderr.strip()[-300:]}")


def _prefix(addresses: list[str], address: str) -> str:
    for cidr in addresses:
        if cidr.split("/")[0] == address:
            return cidr.split("/")[1]
    raise VirtbenchError(f"no IPv4 address {address} among {addresses}")


def _route_line(route: Mapping[str, Any]) -> str:
    """An ``ip route`` line from ``ip -j route`` output, without its device."""
    words = [str(route["dst"])]
    if route.get("gateway"):
        words += ["via", str(route["gateway"])]
    for key, word in (("protocol", "proto"), ("scope", "scope"), ("metric", "metric"),
                      ("prefsrc", "src")):
        if route.get(key) not in (None, ""):
            words += [word, str(route[key])]
    return " ".join(words)


def iface_of(target: Target, address: str) -> str:
    out = target.run(["ip", "-o", "addr", "show"]).stdout
    for line in out.splitlines():
        fields = line.split()
        if len(fields) > 3 and fields[3].split("/")[0] == address:
            return fields[1].split("@")[0]
    raise VirtbenchError(f"{target.describe()} has no interface with address {address}")
