"""The tbf-shaped generator on a real veth pair and real trafgen: the kernel's shaper sets the
offered rate (trafgen itself sends unpaced, several times faster), the sender's tx counter
measures it, the receiver's counts every frame, and the interface gets its qdisc back."""

from __future__ import annotations

import json
import os
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from virtbench.model import VirtbenchError
from virtbench.targets.local import LocalTarget
from virtbench.workloads.net.packet_rate import PacketRate, PacketRateParams
from virtbench.workloads.workload_contract import TrialContext

pytestmark = [pytest.mark.lab, pytest.mark.timeout(600)]

RATE = 20_000  # frames/s: far below trafgen's unpaced rate, so the shaper must hold it back


@pytest.fixture
def veth() -> Iterator[tuple[str, str]]:
    gen, sink = f"vbshg{os.getpid()}", f"vbshs{os.getpid()}"
    try:
        for ns in (gen, sink):
            subprocess.run(["ip", "netns", "add", ns], check=True, timeout=60)
            # No router solicitations or MLD reports: the counters see only the test frames.
            subprocess.run(["ip", "netns", "exec", ns, "sysctl", "-qw",
                            "net.ipv6.conf.all.disable_ipv6=1"], check=True, timeout=60)
        subprocess.run(["ip", "link", "add", "g0", "netns", gen, "type", "veth", "peer", "name",
                        "s0", "netns", sink], check=True, timeout=60)
        for ns, iface in ((gen, "g0"), (sink, "s0")):
            subprocess.run(["ip", "-n", ns, "link", "set", iface, "up"], check=True, timeout=60)
        yield gen, sink
    finally:
        for ns in (gen, sink):
            subprocess.run(["ip", "netns", "del", ns], check=False, timeout=60)


def _trial(gen: str, sink: str, workdir: Path, frame_size: int | str
           ) -> tuple[dict[str, float], dict[str, str]]:
    workload = PacketRate(PacketRateParams(
        rate_pps=RATE, duration_s=1.5, frame_size=frame_size, sender_ns=gen, sender_iface="g0",
        receiver_ns=sink, receiver_iface="s0", attempts=1))
    assert workload.params.pacing == "shaper"  # the default
    result = workload.run(TrialContext(LocalTarget(), "v", {}, workdir, 0, 1))
    return {m.metric: m.value or 0.0 for m in result.measurements}, result.notes


def _root_qdisc(ns: str) -> str:
    out = subprocess.run(["tc", "-n", ns, "-j", "qdisc", "show", "dev", "g0"], check=True,
                         capture_output=True, text=True, timeout=60).stdout
    return str(next(q["kind"] for q in json.loads(out) if q.get("root")))


@pytest.mark.parametrize("frame_size", [64, "imix"])
def test_the_shaper_sets_the_offered_rate(veth: tuple[str, str], tmp_path: Path,
                                          frame_size: int | str) -> None:
    gen, sink = veth
    values, notes = _trial(gen, sink, tmp_path, frame_size)
    assert "tbf shaper" in notes["generator"]
    # The shaper caps the offered rate (the sender's interface counts what it let through),
    # although trafgen sends unpaced.
    assert values["generator_excess"] <= 0.02
    if values["generator_shortfall"] <= 0.02:
        # The usual case: trafgen outruns the token bucket, which holds the rate.
        assert values["offered_pps"] == pytest.approx(RATE, rel=0.02)
    else:
        # A machine too busy for trafgen to offer even the rate (the full suite's load once
        # gave 2.1 % short): the trial says the generator limited it, as the metric documents,
        # and trafgen's own count (over its whole run) shows it sent no more than the rate:
        # the frames were never sent, not lost between trafgen and the interface's counter.
        sent = re.match(r"trafgen (\d+) frames of .*? in ([0-9.]+) s,", notes["generator"])
        assert sent is not None, notes["generator"]
        assert int(sent[1]) / float(sent[2]) < RATE * 1.01, notes["generator"]
    assert values["lost_frames"] == 0
    assert values["received_pps"] == pytest.approx(values["offered_pps"])
    assert 0 <= values["generator_cpu_pct"] <= 100
    assert _root_qdisc(gen) == "noqueue"  # the interface's own qdisc is back


def test_a_paths_own_shaper_on_the_sender_is_left_alone(veth: tuple[str, str],
                                                        tmp_path: Path) -> None:
    gen, sink = veth
    subprocess.run(["tc", "-n", gen, "qdisc", "add", "dev", "g0", "root", "tbf", "rate",
                    "8mbit", "burst", "10000", "limit", "40000"], check=True, timeout=60)
    with pytest.raises(VirtbenchError, match="root qdisc tbf"):
        _trial(gen, sink, tmp_path, 64)
    assert _root_qdisc(gen) == "tbf"
