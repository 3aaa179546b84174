"""Samples ``varnishstat -n DIR -j`` every K seconds in a thread while the load runs."""

from __future__ import annotations

import json
import threading
import time

from virtbench.parsers.varnishstat import VarnishSnapshot, parse_snapshots
from virtbench.targets.target_contract import Target

__all__ = ["VarnishSampler", "keep_counter"]


def keep_counter(name: str) -> bool:
    """Counters worth keeping in the artifact (MAIN, storage, the child's starts and deaths);
    the rest is noise here."""
    return name.startswith(("MAIN.", "SMA.", "SMF.", "MGT.uptime", "MGT.child_"))


class VarnishSampler:
    """Snapshots with their CLOCK_MONOTONIC time (the clock the load generator uses too)."""

    def __init__(self, target: Target, workdir: str, interval_s: float) -> None:
        self.target = target
        self.workdir = workdir
        self.interval_s = interval_s
        self.snapshots: list[VarnishSnapshot] = []
        self.times: list[float] = []
        self.raw: list[str] = []
        self.errors: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="varnishstat", daemon=True)

    def sample(self) -> None:
        when = time.monotonic()
        result = self.target.run(["varnishstat", "-n", self.workdir, "-j"], check=False,
                                 timeout=20)
        if result.returncode != 0:
            self.errors.append(result.stderr.strip()[:200] or f"exit {result.returncode}")
            return
        try:
            snap = parse_snapshots(result.stdout)[0]
        except ValueError as exc:
            self.errors.append(str(exc))
            return
        # Halfway through the command is closer to when the counters were read.
        self.times.append((when + time.monotonic()) / 2)
        self.snapshots.append(snap)
        obj = json.loads(result.stdout)
        counters = obj.get("counters", obj)
        self.raw.append(json.dumps({
            "timestamp": obj.get("timestamp"), "monotonic": self.times[-1],
            "counters": {k: {"value": v["value"]} for k, v in counters.items()
                         if isinstance(v, dict) and "value" in v and keep_counter(k)},
        }))

    def start(self) -> None:
        self.sample()
        self._thread.start()

    def _loop(self) -> None:
        next_at = time.monotonic() + self.interval_s
        while not self._stop.wait(max(0.0, next_at - time.monotonic())):
            self.sample()
            next_at += self.interval_s

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=30)  # a sample's command has 20 s at most
        if self._thread.is_alive():  # said with the samples' other errors, not ignored
            self.errors.append("varnishstat sampler still running 30 s after its stop")
        self.sample()
