"""The sender-side shaper that paces trafgen: a tc tbf qdisc at a frame rate (pure argv).

trafgen sends unpaced through the qdisc path (``--qdisc-path --gap 0``: blocking sendto(2));
the token bucket releases the frames at the asked rate and holds the rest back, so the sender
sleeps on its full socket buffer instead of timing every frame itself. The rate is exact to the
token bucket's accounting (bytes as the kernel sees a frame: without its 4-byte FCS).
"""

from __future__ import annotations

import math

from virtbench.model import VirtbenchError
from virtbench.packetgen.frames import FCS_BYTES, FrameMix

__all__ = ["SHAPER_LIMIT_BYTES", "shaper_qdisc"]

SHAPER_LIMIT_BYTES = 4 * 1024 * 1024
"""tbf's queue: more than the frames trafgen's socket buffer lets it have in flight, so the
shaper holds them back rather than dropping them (a drop would make trafgen retry, spinning)."""


def shaper_qdisc(mix: FrameMix, rate_pps: float, burst_s: float) -> list[str]:
    """``tc qdisc ... root`` arguments: tbf releasing ``rate_pps`` frames of ``mix`` per second.

    The bucket holds ``burst_s`` seconds of frames (at least two of the largest): after a late
    timer the shaper catches up by that much at once, and never sends a longer burst.
    """
    if rate_pps <= 0 or burst_s <= 0:
        raise VirtbenchError(f"shaper: rate ({rate_pps}) and burst ({burst_s} s) must be > 0")
    mean_len = mix.mean_size - FCS_BYTES
    largest = max(size for size, _count in mix.sizes) - FCS_BYTES
    bytes_per_s = rate_pps * mean_len
    burst = max(2 * largest, math.ceil(bytes_per_s * burst_s))
    return ["tbf", "rate", f"{round(bytes_per_s * 8)}bit", "burst", str(burst),
            "limit", str(max(SHAPER_LIMIT_BYTES, 4 * burst))]
