"""The studies' capture-based QoS formulas (TIPHON-style), computed from received packets.

These reproduce what studies 001/002 computed from Wireshark captures, so results compare with
theirs. They are *not* standard one-way delay or RFC 3550 jitter: "delay" here is the mean time
between consecutive received packets, "jitter" the mean absolute change of that gap.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from virtbench.model import Metric, parse_better
from virtbench.net_qos.qos_figures import QOS_METRIC_SPECS, CaptureQos, capture_throughput_mbps

__all__ = ["CAPTURE_QOS_METRICS", "CaptureQos", "capture_qos", "study_loss_percent"]

CAPTURE_QOS_METRICS = tuple(Metric(m.name, m.unit, parse_better(m.better, m.name), m.description)
                            for m in QOS_METRIC_SPECS)
"""The metrics a :class:`CaptureQos` gives (:meth:`CaptureQos.by_metric`)."""


def capture_qos(ts_ns: npt.NDArray[np.int64], wire_len: npt.NDArray[np.int64]) -> CaptureQos:
    """Study formulas over packet timestamps (ns) and wire lengths (bytes), in arrival order."""
    n = int(ts_ns.size)
    if n != int(wire_len.size):
        raise ValueError(f"ts_ns and wire_len differ in length ({n} vs {wire_len.size})")
    if n < 3:
        raise ValueError(f"capture: need at least 3 received packets for jitter, got {n}")
    ts = ts_ns.astype(np.int64)
    gaps = np.diff(ts).astype(np.float64)
    if np.any(gaps < 0):  # captures are in arrival order; sort only if a clock stepped back
        ts = np.sort(ts)
        gaps = np.diff(ts).astype(np.float64)
    capture_s = float(ts[-1] - ts[0]) / 1e9
    total = int(wire_len.sum())
    return CaptureQos(
        delay_ms=float(gaps.mean()) / 1e6,
        jitter_ms=float(np.abs(np.diff(gaps)).mean()) / 1e6,
        throughput_mbps=capture_throughput_mbps(total, capture_s),
        packets=n,
        bytes=total,
        capture_s=capture_s,
    )


def study_loss_percent(sent: int, received: int) -> float:
    """Packet loss in percent: (sent − received) / sent × 100 (negative counts are errors)."""
    if sent <= 0:
        raise ValueError(f"sent: must be positive, got {sent}")
    if received < 0:
        raise ValueError(f"received: must be ≥ 0, got {received}")
    # Captures can see a few more packets than the sender's capture (retransmits seen late); clamp.
    return max(0.0, (sent - received) / sent * 100.0)
