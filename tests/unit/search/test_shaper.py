"""The tbf shaper that paces trafgen: its rate and bucket, the mid-run rate, and a lab's own
root qdisc left alone (a fake target answers tc; the real shaper is in tests/lab/capacity)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import pytest

from virtbench.model import VirtbenchError
from virtbench.packetgen import frame_mix, shaper_qdisc
from virtbench.targets.base import ProcResult
from virtbench.targets.local import LocalTarget
from virtbench.workloads.net.packet_rate import PacketRate, PacketRateParams, lab_path, window_rate


def _args(argv: list[str]) -> dict[str, str]:
    return dict(zip(argv[1::2], argv[2::2], strict=True))


def test_the_rate_counts_frames_as_the_kernel_sees_them() -> None:
    # 64 B with FCS is 60 B on the wire of a veth: 100 k frames/s = 48 Mbit/s.
    args = _args(shaper_qdisc(frame_mix(64), 100_000, 2e-4))
    assert shaper_qdisc(frame_mix(64), 1, 1)[0] == "tbf"
    assert args["rate"] == "48000000bit"
    assert int(args["burst"]) == 1200  # 0.2 ms of frames = 20 frames of 60 B
    # IMIX: the mean of 7 × 60, 4 × 590, 1 × 1514 bytes per frame.
    imix = _args(shaper_qdisc(frame_mix("imix"), 12_000, 2e-4))
    assert imix["rate"] == f"{(7 * 60 + 4 * 590 + 1514) * 1000 * 8}bit"


def test_the_bucket_holds_two_of_the_largest_frames_at_low_rates() -> None:
    args = _args(shaper_qdisc(frame_mix("imix"), 100, 2e-4))
    assert int(args["burst"]) == 2 * 1514
    assert int(args["limit"]) >= 4 * int(args["burst"])
    with pytest.raises(VirtbenchError, match="must be > 0"):
        shaper_qdisc(frame_mix(64), 0, 1e-3)


def test_the_offered_rate_is_counted_between_the_first_and_last_sample() -> None:
    assert window_rate([(10.0, 1000), (10.5, 2000), (12.0, 5000)]) == pytest.approx(2000)
    assert window_rate([(10.0, 1000)]) is None  # trafgen ended before the second read
    assert window_rate([]) is None


class _Tc(LocalTarget):
    """Answers ``tc qdisc show`` with a given root qdisc and records every command."""

    def __init__(self, root: dict[str, Any]) -> None:
        self.root = root
        self.commands: list[list[str]] = []

    def run(self, argv: Sequence[str], **_kwargs: Any) -> ProcResult:
        self.commands.append(list(argv))
        out = json.dumps([{**self.root, "root": True}]) if "show" in argv else ""
        return ProcResult(tuple(argv), 0, out, "", 0.0)


@pytest.mark.parametrize("root", [{"kind": "noqueue", "handle": "0:"},
                                  {"kind": "tbf", "handle": "7662:"}])
def test_the_shaper_replaces_a_default_or_its_own_root_qdisc(root: dict[str, Any]) -> None:
    workload = PacketRate(PacketRateParams(rate_pps=1000, sender_ns="g", sender_iface="g0",
                                           receiver_ns="s", receiver_iface="s0"))
    target = _Tc(root)
    workload._shape(target, lab_path(workload.params, {}), frame_mix(64))
    assert target.commands[-1][:8] == ["tc", "-n", "g", "qdisc", "replace", "dev", "g0",
                                       "root"]


def test_a_labs_own_root_qdisc_is_not_replaced() -> None:
    workload = PacketRate(PacketRateParams(rate_pps=1000, sender_ns="g", sender_iface="g0",
                                           receiver_ns="s", receiver_iface="s0"))
    target = _Tc({"kind": "htb", "handle": "1:"})
    with pytest.raises(VirtbenchError, match=r"root qdisc htb .* use pacing: gap"):
        workload._shape(target, lab_path(workload.params, {}), frame_mix(64))
    assert not any("replace" in argv for argv in target.commands)
