"""When requests are sent and which URL each one asks for. Pure functions, seeded.

Times are seconds from the start of the run. URL choices are per worker: each worker draws from
its own random stream derived from (seed, worker), so workers never request the same sequence
(a shared stream would make every worker ask for the same pages and fake a high hit ratio).
"""

from __future__ import annotations

import numpy as np

__all__ = ["arrival_times", "url_stream"]


def arrival_times(rate_per_s: float, duration_s: float, arrival: str, seed: int) -> list[float]:
    """Intended send times (s) of an open-model run.

    ``constant``: i / rate for i = 0 .. floor(rate * duration) - 1 (8 req/s for 600 s = 4800).
    ``poisson``: exponential gaps with mean 1 / rate, first arrival at 0, all before ``duration``.
    """
    if rate_per_s <= 0:
        raise ValueError("rate_per_s must be > 0")
    if duration_s <= 0:
        raise ValueError("duration_s must be > 0")
    if arrival == "constant":
        count = int(round(rate_per_s * duration_s, 9))
        return [i / rate_per_s for i in range(count)]
    if arrival == "poisson":
        rng = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(0xA221,)))
        expected = int(rate_per_s * duration_s)
        times: list[float] = [0.0]
        while True:
            gaps = rng.exponential(1.0 / rate_per_s, size=max(16, expected // 4))
            for gap in gaps:
                nxt = times[-1] + float(gap)
                if nxt >= duration_s:
                    return times
                times.append(nxt)
    raise ValueError(f"arrival must be 'constant' or 'poisson', not {arrival!r}")


class url_stream:
    """Indices into the URL list for one worker: ``uniform`` (seeded) or ``sequential``.

    ``sequential`` starts each worker at a different offset so workers spread over the list.
    """

    def __init__(self, seed: int, worker: int, n_urls: int, choice: str, workers: int = 1) -> None:
        if n_urls <= 0:
            raise ValueError("the URL list is empty")
        if choice not in ("uniform", "sequential"):
            raise ValueError(f"url_choice must be 'uniform' or 'sequential', not {choice!r}")
        self.n_urls = n_urls
        self.choice = choice
        self._rng = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(worker,)))
        self._buf: list[int] = []
        self._pos = 0
        self._next_seq = (worker * n_urls) // max(1, workers)

    def next(self) -> int:
        if self.choice == "sequential":
            value = self._next_seq % self.n_urls
            self._next_seq += 1
            return value
        if self._pos >= len(self._buf):
            self._buf = [int(v) for v in self._rng.integers(0, self.n_urls, size=1024)]
            self._pos = 0
        value = self._buf[self._pos]
        self._pos += 1
        return value

    def take(self, count: int) -> list[int]:
        return [self.next() for _ in range(count)]
