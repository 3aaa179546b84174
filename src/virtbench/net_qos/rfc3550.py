"""RFC 3550 §6.4.1 interarrival jitter from per-packet send and receive times."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

__all__ = ["rfc3550_jitter_ns"]


def rfc3550_jitter_ns(send_ns: npt.NDArray[np.int64], recv_ns: npt.NDArray[np.int64]) -> float:
    """Final RFC 3550 jitter estimate J in ns.

    D(i−1, i) = (R_i − R_{i−1}) − (S_i − S_{i−1});  J ← J + (|D| − J) / 16, starting at J = 0,
    over received packets in sending order. Clock offsets cancel, so clocks need not agree.
    """
    if send_ns.size != recv_ns.size:
        raise ValueError("send_ns and recv_ns differ in length")
    if send_ns.size < 2:
        raise ValueError(f"need at least 2 received packets, got {send_ns.size}")
    transit = recv_ns.astype(np.int64) - send_ns.astype(np.int64)
    d = np.abs(np.diff(transit)).astype(np.float64)
    jitter = 0.0
    for value in d:  # a recurrence; packet counts per probe are small (thousands)
        jitter += (value - jitter) / 16.0
    return float(jitter)
