"""Background traffic at a configured rate: an iperf3 UDP flow between a second pair of hosts."""

from __future__ import annotations

from virtbench.labs.daemons import start_recorded
from virtbench.labs.lab_contract import Manifest
from virtbench.targets.daemon import Daemon
from virtbench.targets.local import NetnsTarget

__all__ = ["BACKGROUND_DATAGRAM_BYTES", "BACKGROUND_PORT", "UDP_IP_ETH_OVERHEAD", "background_argv",
           "start_background"]

BACKGROUND_PORT = 5202
BACKGROUND_DATAGRAM_BYTES = 1400
UDP_IP_ETH_OVERHEAD = 42
"""Ethernet (14) + IPv4 (20) + UDP (8) header bytes around every datagram's payload."""


def background_argv(receiver_ip: str, rate_mbps: float, duration_s: int = 86_400) -> list[str]:
    """iperf3 UDP client sending ``rate_mbps`` Mbit/s of payload (10^6 bit/s) to the receiver."""
    return ["iperf3", "-c", receiver_ip, "-p", str(BACKGROUND_PORT), "-u",
            "-b", f"{rate_mbps:g}M", "-l", str(BACKGROUND_DATAGRAM_BYTES),
            "-t", str(duration_s), "--pacing-timer", "1000"]


def start_background(sender_ns: str, receiver_ip: str, rate_mbps: float,
                     manifest: Manifest) -> Daemon:
    return start_recorded(manifest, NetnsTarget(sender_ns),
                          background_argv(receiver_ip, rate_mbps), what="background iperf3")
