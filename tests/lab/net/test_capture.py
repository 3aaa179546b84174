"""Captures and interface counters on a real veth pair between two namespaces this test makes."""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from pathlib import Path

import pytest

from virtbench.labs.lab_contract import Manifest
from virtbench.labs.net.netops import add_namespace, add_veth, delete_namespace, set_address
from virtbench.model import VirtbenchError
from virtbench.net_qos.pcap import read_pcap
from virtbench.targets.local import LocalTarget, NetnsTarget
from virtbench.workloads.net.capture import Capture
from virtbench.workloads.net.counters import link_counter, tx_packets

pytestmark = [pytest.mark.lab, pytest.mark.timeout(600)]


@pytest.fixture
def pair(tmp_path: Path) -> Iterator[tuple[NetnsTarget, NetnsTarget]]:
    host = LocalTarget()
    tag = secrets.token_hex(2)
    a, b = f"vbnet-t{tag}-a", f"vbnet-t{tag}-b"
    manifest = Manifest(tmp_path / "manifest.json", "capture-test")
    try:
        add_namespace(host, manifest, a)
        add_namespace(host, manifest, b)
        add_veth(host, a, "va", b, "vb")
        set_address(host, a, "va", "10.78.0.1/24")
        set_address(host, b, "vb", "10.78.0.2/24")
        yield NetnsTarget(a), NetnsTarget(b)
    finally:
        delete_namespace(host, a)
        delete_namespace(host, b)


@pytest.mark.parametrize("tool", ["tcpdump", "dumpcap"])
def test_capture_keeps_the_last_packets_and_matches_the_counter(
        tool: str, pair: tuple[NetnsTarget, NetnsTarget], tmp_path: Path) -> None:
    sender, receiver = pair
    capture = Capture(receiver, "vb", tmp_path / "rx.pcap", 96, "icmp and src host 10.78.0.1",
                      tool)  # type: ignore[arg-type]
    capture.start()
    before = tx_packets(sender, "va")
    rx_before = link_counter(receiver, "vb", "rx")
    # Stopping right after the last ping: the ring's unfinished block must still reach the file.
    sender.run(["ping", "-c", "40", "-i", "0.002", "-q", "10.78.0.2"], timeout=30)
    after = tx_packets(sender, "va")
    rx_after = link_counter(receiver, "vb", "rx")
    stats = capture.stop()
    assert not capture.path.is_relative_to(Path.home())  # AppArmor: tcpdump may not write ~/.*
    assert read_pcap(capture.path).packets == 40
    assert stats.dropped == 0
    assert 40 <= after - before <= 42  # the pings, and at most an ARP exchange
    assert rx_after - rx_before == after - before  # a veth's peer receives what it sent
    kept = capture.keep()
    assert kept == tmp_path / "rx.pcap" and read_pcap(kept).packets == 40
    assert not capture.spool.exists()


def test_counters_name_the_interface_and_the_counter(pair: tuple[NetnsTarget, NetnsTarget]
                                                     ) -> None:
    sender, _ = pair
    with pytest.raises(VirtbenchError, match="interface vbnosuch"):
        link_counter(sender, "vbnosuch", "rx")
    with pytest.raises(VirtbenchError, match=r"stats64\.rx\.nosuch"):
        link_counter(sender, "va", "rx", "nosuch")
