"""The sender's tx counter read in the middle of a run, each read paired with its time.

A helper process inside the sender's namespace reads ``/sys/class/net/IFACE/statistics/
tx_packets`` and the monotonic clock together: one ``ip`` process per read would time the read
only to within its own start-up, which on a busy machine is tens of ms.
"""

from __future__ import annotations

import statistics

from virtbench.model import VirtbenchError

__all__ = ["SAMPLER", "parse_samples", "sampler_args", "until_last_rise", "window_rate"]

SAMPLER = """
import sys, time
path, delay, period, count = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4])
start = time.monotonic()
for i in range(count):
    time.sleep(max(0.0, start + delay + i * period - time.monotonic()))
    with open(path) as counter:
        frames = counter.read().strip()
    print(time.monotonic(), frames, flush=True)
"""
"""Prints ``time frames`` lines: ``count`` reads ``period`` s apart after ``delay`` s."""


def sampler_args(iface: str, delay_s: float, period_s: float, count: int) -> list[str]:
    """The sampler's arguments after ``python -c SAMPLER``."""
    return [f"/sys/class/net/{iface}/statistics/tx_packets", f"{delay_s:.6f}",
            f"{period_s:.6f}", str(count)]


def parse_samples(text: str) -> list[tuple[float, int]]:
    """(time, frames) pairs from the sampler's output."""
    samples = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            when, frames = line.split()
            samples.append((float(when), int(frames)))
        except ValueError as exc:
            raise VirtbenchError(f"tx counter sampler line {number}: expected 'time frames', "
                                 f"got {line!r}") from exc
    return samples


def until_last_rise(samples: list[tuple[float, int]]) -> list[tuple[float, int]]:
    """The reads before the counter stopped rising for good: once the path has passed every
    frame the counter stands still, and reads of it would pull the slope down. Reads after the
    generator's end are kept while it rises: a short trial at a low rate fits whole in the
    socket's buffer, so trafgen ends at once and the shaper passes its frames afterwards, at the
    shaped rate (those frames are the offered load)."""
    end = len(samples)
    while end >= 2 and samples[end - 1][1] == samples[end - 2][1]:
        end -= 1
    if end < len(samples):
        end -= 1  # the first read at the final count came some time after the last frame
    return samples[:end]


def window_rate(samples: list[tuple[float, int]]) -> float | None:
    """Frames per second: the least-squares slope of the (time, tx counter) samples; None with
    fewer than two distinct times."""
    if len({t for t, _count in samples}) < 2:
        return None
    slope, _intercept = statistics.linear_regression([t for t, _count in samples],
                                                     [float(c) for _t, c in samples])
    return slope
