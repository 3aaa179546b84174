"""A path of known capacity: gen:g0 ─ veth ─ mid:m0 ┐ br0 ┌ m1 (tc tbf) ─ veth ─ sink:s0.

Used by the tbf validation test and by benchmarks/capacity_ndr_search.py.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
from collections.abc import Iterator


def _ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, timeout=60)


@contextlib.contextmanager
def shaped_bridge_path(rate: str = "8mbit", burst: int = 10000, limit: int = 40000,
                       tag: str = "") -> Iterator[dict[str, str]]:
    """Namespaces gen, mid and sink (names returned by role); tbf on the bridge's way out."""
    prefix = f"vbcap{tag}{os.getpid() % 100000}"
    ns = {role: f"{prefix}{role}" for role in ("gen", "mid", "sink")}
    try:
        for name in ns.values():
            _ip("netns", "add", name)
            # No router solicitations or MLD reports: the counters see only the test frames.
            subprocess.run(["ip", "netns", "exec", name, "sysctl", "-qw",
                            "net.ipv6.conf.default.disable_ipv6=1"], check=True, timeout=60)
        _ip("link", "add", "g0", "netns", ns["gen"], "type", "veth", "peer", "name", "m0",
            "netns", ns["mid"])
        _ip("link", "add", "m1", "netns", ns["mid"], "type", "veth", "peer", "name", "s0",
            "netns", ns["sink"])
        _ip("-n", ns["mid"], "link", "add", "br0", "type", "bridge")
        for port in ("m0", "m1"):
            _ip("-n", ns["mid"], "link", "set", port, "master", "br0")
        for name, iface in ((ns["gen"], "g0"), (ns["mid"], "m0"), (ns["mid"], "m1"),
                            (ns["mid"], "br0"), (ns["sink"], "s0")):
            _ip("-n", name, "link", "set", iface, "up")
        subprocess.run(["tc", "-n", ns["mid"], "qdisc", "add", "dev", "m1", "root", "tbf",
                        "rate", rate, "burst", str(burst), "limit", str(limit)], check=True,
                       timeout=60)
        yield ns
    finally:
        for name in ns.values():
            subprocess.run(["ip", "netns", "del", name], check=False, timeout=60)
