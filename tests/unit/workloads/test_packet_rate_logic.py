"""net.packet-rate's logic without a network: where frames go, and the pacing correction."""

from __future__ import annotations

import pytest

from virtbench.model import VirtbenchError
from virtbench.workloads.net.packet_rate import PacketRate, PacketRateParams, lab_path


def test_the_path_comes_from_the_vswitch_or_router_lab_or_params() -> None:
    vswitch = {"client_ns": "c", "client_iface": "cli", "server_ns": "s",
               "server_iface": "srv", "server_ip": "10.0.0.2"}
    path = lab_path(PacketRateParams(), vswitch)
    assert (path.sender_ns, path.receiver_iface, path.next_hop_iface) == ("c", "srv", "srv")
    router = {"sender_ns": "a", "receiver_ns": "b", "router_ns": "r",
              "receiver_ip": "10.78.2.2"}
    path = lab_path(PacketRateParams(), router)
    # Frames are addressed to the router's ingress, then routed to the receiver.
    assert (path.next_hop_ns, path.next_hop_iface, path.receiver_ip) == ("r", "left",
                                                                         "10.78.2.2")
    given = PacketRateParams(sender_ns="g", sender_iface="g0", receiver_ns="k",
                             receiver_iface="k0")
    assert lab_path(given, {}).next_hop_ns == "k"
    with pytest.raises(VirtbenchError, match="no sender_ns"):
        lab_path(PacketRateParams(), {})


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
