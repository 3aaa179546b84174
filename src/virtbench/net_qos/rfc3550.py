"""RFC 3550 §6.4.1 interarrival jitter from per-packet send and receive times."""

from __future__ import annotations

from collections.abc import Sequence
from itertools import pairwise
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

__all__ = ["rfc3550_jitter_ns"]


def rfc3550_jitter_ns(send_ns: Sequence[int] | npt.NDArray[np.int64],
                      recv_ns: Sequence[int] | npt.NDArray[np.int64]) -> float:
    """Final RFC 3550 jitter estimate J in ns.

    D(i−1, i) = (R_i − R_{i−1}) − (S_i − S_{i−1});  J ← J + (|D| − J) / 16, starting at J = 0,
    over received packets in sending order. Clock offsets cancel, so clocks need not agree.
    Plain Python integers (exact): a recurrence over the thousands of packets of a probe, which
    numpy would neither speed up nor need importing for (irtt's parser calls this per file).
    """
    if len(send_ns) != len(recv_ns):
        raise ValueError("send_ns and recv_ns differ in length")
    if len(send_ns) < 2:
        raise ValueError(f"need at least 2 received packets, got {len(send_ns)}")
    transit = [int(r) - int(s) for s, r in zip(send_ns, recv_ns, strict=True)]
    jitter = 0.0
    for before, after in pairwise(transit):
        jitter += (abs(after - before) - jitter) / 16.0
    return jitter
