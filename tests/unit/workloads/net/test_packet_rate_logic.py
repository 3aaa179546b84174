"""net.packet-rate's logic without a network: where frames go, and the pacing correction."""

from __future__ import annotations

import pytest

from virtbench.model import VirtbenchError
from virtbench.services import PacketPath, Services
from virtbench.workloads.net.packet_rate import PacketRate, PacketRateParams, lab_path


def test_the_path_comes_from_the_labs_packet_path_or_params() -> None:
    router = PacketPath(sender_ns="a", sender_iface="eth0", receiver_ns="b",
                        receiver_iface="eth0", receiver_ip="10.78.2.2", next_hop_ns="r",
                        next_hop_iface="left")
    path = lab_path(PacketRateParams(), Services("vnf-router", (router,)))
    # Frames are addressed to the router's ingress, then routed to the receiver.
    assert (path.sender_ns, path.receiver_ns, path.next_hop_ns, path.next_hop_iface,
            path.receiver_ip) == ("a", "b", "r", "left", "10.78.2.2")
    # Params override the lab's sender and receiver; the lab's next hop stays.
    path = lab_path(PacketRateParams(sender_ns="g", receiver_ip="10.9.9.9"),
                    Services("vnf-router", (router,)))
    assert (path.sender_ns, path.sender_iface, path.receiver_ip, path.next_hop_ns) == (
        "g", "eth0", "10.9.9.9", "r")
    given = PacketRateParams(sender_ns="g", sender_iface="g0", receiver_ns="k",
                             receiver_iface="k0")
    assert lab_path(given, Services()).next_hop_ns == "k"
    with pytest.raises(VirtbenchError, match="no sender_ns"):
        lab_path(PacketRateParams(), Services())


def test_a_path_given_in_full_needs_no_lab() -> None:
    assert PacketRate(PacketRateParams()).needed_services() == (PacketPath,)
    assert PacketRate(PacketRateParams(sender_ns="g", sender_iface="g0", receiver_ns="k",
                                       receiver_iface="k0")).needed_services() == ()


def test_the_gap_is_corrected_by_the_fitted_overhead() -> None:
    workload = PacketRate(PacketRateParams(rate_pps=1000))
    assert workload._gap_s("64") == pytest.approx(1e-3)  # nothing learnt: the nominal gap
    # trafgen's interval = 1.03 × gap + 70 µs, as measured on a busy machine.
    for gap in (0.8e-3, 0.9e-3, 1.0e-3):
        workload._learn_pacing("64", gap, 1.03 * gap + 70e-6)
    gap = workload._gap_s("64")
    assert 1.03 * gap + 70e-6 == pytest.approx(1e-3, rel=1e-6)


def test_stalls_are_not_learnt_and_the_gap_never_halves() -> None:
    workload = PacketRate(PacketRateParams(rate_pps=1000))
    workload._learn_pacing("64", 1e-3, 5e-3)  # the generator was descheduled: ignored
    assert workload._gap_s("64") == pytest.approx(1e-3)
    workload._learn_pacing("64", 1e-3, 1.9e-3)  # one run: scale the gap by gap / interval
    assert workload._gap_s("64") == pytest.approx(1e-3 / 1.9)
    # A fit through two noisy runs would ask for almost no gap: clamped at half the nominal.
    workload._learn_pacing("64", 0.8e-3, 1.8e-3)
    assert workload._gap_s("64") == pytest.approx(0.5e-3)
