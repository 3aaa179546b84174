"""The tbf shaper that paces trafgen: its rate and bucket, the mid-run rate, and a lab's own
root qdisc left alone (a fake target answers tc; the real shaper is in tests/lab/capacity)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from virtbench.model import VirtbenchError
from virtbench.packetgen import frame_mix, shaper_qdisc
from virtbench.services import Services
from virtbench.targets.local import LocalTarget
from virtbench.targets.target_contract import ProcResult
from virtbench.workloads.net.packet_rate import PacketRate, PacketRateParams, lab_path
from virtbench.workloads.net.tx_sampler import (
    SAMPLER,
    parse_samples,
    sampler_args,
    until_last_rise,
    window_rate,
)


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


def test_the_offered_rate_is_the_fitted_slope_of_the_counter_reads() -> None:
    assert window_rate([(10.0, 1000), (10.5, 2000), (12.0, 5000)]) == pytest.approx(2000)
    # One read whose time is off by a late process moves the slope less than it moves a
    # rate from the first and last read alone.
    reads = [(10.0 + i / 10, 1000 + 200 * i) for i in range(11)]
    reads[-1] = (reads[-1][0] + 0.05, reads[-1][1])
    rate = window_rate(reads)
    assert rate is not None and abs(rate - 2000) < abs(2000 / 1.05 - 2000)
    assert window_rate([(10.0, 1000)]) is None  # trafgen ended before the second read
    assert window_rate([]) is None
    assert window_rate([(10.0, 1000), (10.0, 1200)]) is None


def test_reads_after_the_path_passed_every_frame_leave_the_slope() -> None:
    # 200 frames/s for 1 s: trafgen put all 200 in its socket's buffer at once and ended; the
    # shaper passed them at 200/s until t = 1.0, then the counter stood still.
    reads = [(0.2 + i * 0.05, round(200 * (0.2 + i * 0.05))) for i in range(15)]
    reads = [(t, min(c, 200)) for t, c in reads] + [(1.1, 200), (1.2, 200)]
    kept = until_last_rise(reads)
    assert kept[-1][1] < 200 and len(kept) == 15
    rate = window_rate(kept)
    assert rate == pytest.approx(200, rel=0.02)
    assert window_rate(reads) < 0.9 * 200  # type: ignore[operator]  # the flat tail pulls it down
    # still rising at the last read: every read is kept
    assert until_last_rise(reads[:10]) == reads[:10]
    assert until_last_rise([(1.0, 5), (1.1, 5)]) == []


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
    workload._shape(target, lab_path(workload.params, Services()), frame_mix(64))
    assert target.commands[-1][:8] == ["tc", "-n", "g", "qdisc", "replace", "dev", "g0",
                                       "root"]


def test_a_labs_own_root_qdisc_is_not_replaced() -> None:
    workload = PacketRate(PacketRateParams(rate_pps=1000, sender_ns="g", sender_iface="g0",
                                           receiver_ns="s", receiver_iface="s0"))
    target = _Tc({"kind": "htb", "handle": "1:"})
    with pytest.raises(VirtbenchError, match=r"root qdisc htb .* use pacing: gap"):
        workload._shape(target, lab_path(workload.params, Services()), frame_mix(64))
    assert not any("replace" in argv for argv in target.commands)


def test_the_sampler_pairs_each_read_with_its_time(tmp_path: Path) -> None:
    counter = tmp_path / "tx_packets"
    counter.write_text("1234\n")
    args = sampler_args("g0", 0.0, 0.01, 3)
    assert args[0] == "/sys/class/net/g0/statistics/tx_packets"
    out = subprocess.run([sys.executable, "-c", SAMPLER, str(counter), *args[1:]],
                         check=True, capture_output=True, text=True, timeout=300).stdout
    samples = parse_samples(out)
    assert [frames for _t, frames in samples] == [1234] * 3
    assert samples[0][0] < samples[1][0] < samples[2][0]
    with pytest.raises(VirtbenchError, match="line 2: expected 'time frames'"):
        parse_samples("1.0 5\noops\n")
