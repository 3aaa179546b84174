"""Namespace, veth and address operations, each recorded in the manifest before it happens."""

from __future__ import annotations

import json
import time
from collections.abc import Sequence

from virtbench.labs.lab_contract import Manifest
from virtbench.targets.target_contract import Target

__all__ = [
    "add_namespace",
    "add_veth",
    "delete_namespace",
    "disable_offloads",
    "mac_address",
    "namespace_exists",
    "pin_neighbours",
    "set_address",
]


def add_namespace(target: Target, manifest: Manifest, name: str) -> None:
    """Create namespace ``name`` with loopback up (recorded first, so clean finds it)."""
    manifest.add("netns", name)
    target.run(["ip", "netns", "add", name])
    target.run(["ip", "-n", name, "link", "set", "lo", "up"])
    # No IPv6: its neighbour discovery, MLD and router solicitations would add packets that no
    # workload asked for to the interface counters the QoS metrics read (IPv4-only labs).
    target.run(["ip", "netns", "exec", name, "sysctl", "-qw",
                "net.ipv6.conf.all.disable_ipv6=1", "net.ipv6.conf.default.disable_ipv6=1"],
               check=False)


def namespace_exists(target: Target, name: str) -> bool:
    out = target.run(["ip", "netns", "list"]).stdout
    return any(line.split()[0] == name for line in out.splitlines() if line.strip())


def delete_namespace(target: Target, name: str) -> list[str]:
    """Stop every process inside the namespace (all are ours: we made it), then delete it."""
    if not namespace_exists(target, name):
        return []
    removed = []
    pids = target.run(["ip", "netns", "pids", name], check=False).stdout.split()
    for sig in ("TERM", "KILL"):
        live = [p for p in pids if target.run(["kill", "-0", p], check=False).returncode == 0]
        if not live:
            break
        target.run(["kill", f"-{sig}", *live], check=False)
        removed += [f"process {p} in {name}" for p in live if sig == "TERM"]
        for _ in range(30):
            if all(target.run(["kill", "-0", p], check=False).returncode for p in live):
                break
            time.sleep(0.1)
    target.run(["ip", "netns", "del", name], check=False)
    removed.append(f"namespace {name}")
    return removed


def add_veth(target: Target, ns_a: str, name_a: str, ns_b: str, name_b: str) -> None:
    """A veth pair with one end in each namespace, both ends up (deleted with either namespace)."""
    target.run(["ip", "-n", ns_a, "link", "add", name_a, "type", "veth",
                "peer", "name", name_b, "netns", ns_b])
    target.run(["ip", "-n", ns_a, "link", "set", name_a, "up"])
    target.run(["ip", "-n", ns_b, "link", "set", name_b, "up"])


def set_address(target: Target, ns: str, iface: str, cidr: str) -> None:
    target.run(["ip", "-n", ns, "addr", "replace", cidr, "dev", iface])
    target.run(["ip", "-n", ns, "link", "set", iface, "up"])


def mac_address(target: Target, ns: str, iface: str) -> str:
    return str(json.loads(target.run(["ip", "-n", ns, "-j", "link", "show", "dev",
                                      iface]).stdout)[0]["address"])


def pin_neighbours(target: Target, hosts: Sequence[tuple[str, str, str]]) -> None:
    """Permanent ARP entries between ``hosts`` (namespace, interface, IPv4 address), so no ARP
    request or reply crosses the switch during a measurement."""
    macs = [mac_address(target, ns, iface) for ns, iface, _ in hosts]
    for ns, iface, _ in hosts:
        for (other_ns, _, address), mac in zip(hosts, macs, strict=True):
            if other_ns != ns:
                target.run(["ip", "-n", ns, "neigh", "replace", address, "lladdr", mac,
                            "dev", iface, "nud", "permanent"])


def disable_offloads(target: Target, ns: str, iface: str,
                     features: Sequence[str] = ("tso", "gso", "gro", "tx")) -> None:
    """Turn segmentation/checksum offloads off so packets on the wire are MTU-sized."""
    argv = ["ip", "netns", "exec", ns, "ethtool", "-K", iface]
    for feature in features:
        argv += [feature, "off"]
    target.run(argv)
