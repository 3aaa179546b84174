"""``varnishstat -j`` output → cache counters and a hit-ratio timeline (pure functions).

A file may hold one snapshot or several (concatenated JSON objects or JSON lines, as written by
sampling ``varnishstat -n DIR -j`` every K seconds). The Varnish ≥ 6.5 layout
(``{"version": 1, "timestamp": ..., "counters": {...}}``), the older flat layout (4.x-6.4,
``MAIN.cache_hit``) and Varnish 3.x's (``cache_hit`` without the ``MAIN.`` prefix) are read.

Definitions (the issue's): hit ratio = MAIN.cache_hit / (MAIN.cache_hit + MAIN.cache_miss),
per interval between two snapshots and cumulative since the first snapshot.
"""

from __future__ import annotations

import datetime as _dt
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

from virtbench.model import Better, Measurement, Metric
from virtbench.parsers.base import Parsed, ParseError, Parser, check_figures, checked
from virtbench.parsers.jsontext import decoder_for, raw_decode

__all__ = [
    "PARSERS",
    "VARNISHSTAT_METRICS",
    "VarnishSnapshot",
    "parse_snapshots",
    "parse_varnishstat",
    "parse_varnishstat_full",
    "timeline",
]

VARNISHSTAT_METRICS = (
    Metric("hit_ratio_interval", "%", Better.HIGHER,
           "Varnish hits / (hits + misses) during the interval ending at t "
           "(MAIN.cache_hit and MAIN.cache_miss deltas); no value when there were no lookups"),
    Metric("hit_ratio_cumulative", "%", Better.HIGHER,
           "Varnish hits / (hits + misses) from the first snapshot (the start of the run) to t; "
           "for a single snapshot, since Varnish started"),
    Metric("cache_hits_interval", "requests", Better.HIGHER,
           "MAIN.cache_hit delta over the interval ending at t"),
    Metric("cache_misses_interval", "requests", Better.LOWER,
           "MAIN.cache_miss delta over the interval ending at t"),
    Metric("lru_nuked_interval", "objects", Better.LOWER,
           "objects evicted to make room (MAIN.n_lru_nuked delta) in the interval ending at t"),
    Metric("lru_nuked_total", "objects", Better.LOWER,
           "objects evicted since Varnish started (MAIN.n_lru_nuked) at t"),
    Metric("backend_fetches_interval", "requests", Better.LOWER,
           "requests Varnish sent to the origin (MAIN.backend_req delta) in the interval"),
    Metric("storage_used_bytes", "bytes", Better.LOWER,
           "bytes allocated in the cache storage at t (SMA/SMF.<name>.g_bytes; label storage); "
           "Transient storage is reported with storage=Transient"),
    Metric("storage_free_bytes", "bytes", Better.HIGHER,
           "bytes still free in the cache storage at t (SMA/SMF.<name>.g_space)"),
    Metric("cache_hits", "requests", Better.HIGHER,
           "MAIN.cache_hit in a single snapshot (since Varnish started)"),
    Metric("cache_misses", "requests", Better.LOWER,
           "MAIN.cache_miss in a single snapshot (since Varnish started)"),
    Metric("backend_fetches", "requests", Better.LOWER,
           "MAIN.backend_req in a single snapshot (since Varnish started)"),
)


@dataclass(frozen=True)
class VarnishSnapshot:
    timestamp: _dt.datetime | None
    counters: dict[str, int]

    def get(self, name: str) -> int:
        return self.counters.get(name, 0)

    def storages(self) -> dict[str, tuple[int, int]]:
        """{storage name: (g_bytes, g_space)} for malloc (SMA) and file (SMF) storages."""
        found: dict[str, tuple[int, int]] = {}
        for key, value in self.counters.items():
            if not key.startswith(("SMA.", "SMF.")):  # most of a thousand counters: skip fast
                continue
            parts = key.split(".")
            if len(parts) == 3 and parts[2] == "g_bytes":
                space = self.counters.get(f"{parts[0]}.{parts[1]}.g_space", 0)
                found[parts[1]] = (value, space)
        return found


def _counters(obj: dict[str, object]) -> dict[str, int]:
    raw = obj.get("counters", obj)
    if not isinstance(raw, dict):
        raise ParseError("varnishstat: 'counters' is not an object")
    out: dict[str, int] = {}
    for name, entry in raw.items():
        if isinstance(entry, dict) and "value" in entry:
            value = entry["value"]
            if type(value) is not int and (  # counters are ints: check the rest only then
                    isinstance(value, bool) or not isinstance(value, (int, float))
                    or not math.isfinite(value)):
                raise ParseError(f"varnishstat: counter {name} is {value!r}, not a number")
            # Varnish 3.x names the main section's counters without the MAIN. prefix.
            out[name if "." in name else f"MAIN.{name}"] = int(value)
    if "MAIN.cache_hit" not in out:
        raise ParseError(
            "varnishstat: no MAIN.cache_hit counter (is this `varnishstat -j` output?)")
    return out


def _timestamp(obj: dict[str, object]) -> _dt.datetime | None:
    stamp = obj.get("timestamp")
    if not isinstance(stamp, str):
        return None
    try:
        return _dt.datetime.fromisoformat(stamp)
    except ValueError:
        return None


_NOT_SPACE = re.compile(r"\S")


def parse_snapshots(text: str) -> list[VarnishSnapshot]:
    """Every ``varnishstat -j`` object in ``text``, in file order."""
    decoder = decoder_for(text)
    pos = 0
    snapshots = []
    while True:
        next_value = _NOT_SPACE.search(text, pos)
        if next_value is None:
            break
        pos = next_value.start()
        obj, pos = raw_decode(decoder, text, pos, "varnishstat")
        if not isinstance(obj, dict):
            raise ParseError("varnishstat: expected a JSON object per snapshot")
        snapshots.append(VarnishSnapshot(_timestamp(obj), _counters(obj)))
    if not snapshots:
        raise ParseError("varnishstat: no snapshot in the input")
    return snapshots


def _ratio(hits: int, misses: int) -> float | None:
    return 100.0 * hits / (hits + misses) if hits + misses > 0 else None


def _storage(snap: VarnishSnapshot, t: float | None) -> list[Measurement]:
    out = []
    for name, (used, free) in sorted(snap.storages().items()):
        out.append(Measurement("storage_used_bytes", float(used), t, {"storage": name}))
        out.append(Measurement("storage_free_bytes", float(free), t, {"storage": name}))
    return out


def timeline(snapshots: Sequence[VarnishSnapshot], times: Sequence[float] | None = None
             ) -> list[Measurement]:
    """Time-series measurements; t = seconds since the first snapshot.

    ``times`` gives each snapshot's time explicitly (the workload's own clock); otherwise the
    snapshots' 1-second timestamps are used.
    """
    if times is not None and len(times) != len(snapshots):
        raise ValueError("one time per snapshot is needed")
    first = snapshots[0]
    out: list[Measurement] = []
    for i in range(1, len(snapshots)):
        prev, cur = snapshots[i - 1], snapshots[i]

        def delta(name: str, prev: VarnishSnapshot = prev, cur: VarnishSnapshot = cur) -> float:
            return float(cur.get(name) - prev.get(name))

        if times is not None:
            t = float(times[i] - times[0])
        elif cur.timestamp is not None and first.timestamp is not None:
            t = (cur.timestamp - first.timestamp).total_seconds()
        else:
            t = float(i)
        d_hit = cur.get("MAIN.cache_hit") - prev.get("MAIN.cache_hit")
        d_miss = cur.get("MAIN.cache_miss") - prev.get("MAIN.cache_miss")
        ratio = _ratio(d_hit, d_miss)
        out.append(Measurement("hit_ratio_interval", ratio, t,
                               status="ok" if ratio is not None else "no_requests"))
        cum = _ratio(cur.get("MAIN.cache_hit") - first.get("MAIN.cache_hit"),
                     cur.get("MAIN.cache_miss") - first.get("MAIN.cache_miss"))
        out.append(Measurement("hit_ratio_cumulative", cum, t,
                               status="ok" if cum is not None else "no_requests"))
        out.append(Measurement("cache_hits_interval", float(d_hit), t))
        out.append(Measurement("cache_misses_interval", float(d_miss), t))
        out.append(Measurement("lru_nuked_interval", delta("MAIN.n_lru_nuked"), t))
        out.append(Measurement("lru_nuked_total", float(cur.get("MAIN.n_lru_nuked")), t))
        out.append(Measurement("backend_fetches_interval", delta("MAIN.backend_req"), t))
        out.extend(_storage(cur, t))
    # A counter that went down (varnishd restarted) gives negative deltas: invalid, not data.
    return check_figures(out, VARNISHSTAT_METRICS, "varnishstat")[0]


def parse_varnishstat(text: str) -> list[Measurement]:
    """One snapshot → its cumulative counters; several → the timeline between them."""
    return check_figures(_measurements(parse_snapshots(text)), VARNISHSTAT_METRICS,
                         "varnishstat")[0]


def _measurements(snapshots: list[VarnishSnapshot]) -> list[Measurement]:
    if len(snapshots) > 1:
        return timeline(snapshots)
    snap = snapshots[0]
    hits, misses = snap.get("MAIN.cache_hit"), snap.get("MAIN.cache_miss")
    ratio = _ratio(hits, misses)
    return [
        Measurement("hit_ratio_cumulative", ratio,
                    status="ok" if ratio is not None else "no_requests"),
        Measurement("cache_hits", float(hits)),
        Measurement("cache_misses", float(misses)),
        Measurement("lru_nuked_total", float(snap.get("MAIN.n_lru_nuked"))),
        Measurement("backend_fetches", float(snap.get("MAIN.backend_req"))),
        *_storage(snap, None),
    ]


def _layout(text: str) -> str:
    if '"counters"' in text:
        return "Varnish >= 6.5 layout"
    return "Varnish 4.x-6.4 layout" if '"MAIN.' in text else "Varnish 3.x layout"


def parse_varnishstat_full(text: str) -> Parsed:
    snapshots = parse_snapshots(text)
    mapped = {"MAIN.cache_hit", "MAIN.cache_miss", "MAIN.n_lru_nuked", "MAIN.backend_req"}
    unmapped = [name for name in snapshots[-1].counters if name not in mapped
                and not (name.startswith(("SMA.", "SMF.")) and name.endswith(("g_bytes",
                                                                              "g_space")))]
    warnings = [f"varnishstat: {len(unmapped)} counters not mapped (read: cache hits and "
                "misses, LRU nukes, backend requests, storage bytes)"] if unmapped else []
    return checked(Parsed(_measurements(snapshots),
                          f"varnishstat -j, {_layout(text)}, {len(snapshots)} snapshot(s)",
                          warnings), VARNISHSTAT_METRICS, "varnishstat")


PARSERS = (
    Parser(
        tool="varnishstat",
        description="varnishstat -j (Varnish 3.x-7.x; one snapshot, or several for a timeline)",
        metrics=VARNISHSTAT_METRICS,
        parse=parse_varnishstat,
        parse_full=parse_varnishstat_full,
    ),
)
