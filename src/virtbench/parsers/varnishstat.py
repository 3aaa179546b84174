"""``varnishstat -j`` output → cache counters and a hit-ratio timeline (pure functions).

A file may hold one snapshot or several (concatenated JSON objects or JSON lines, as written by
sampling ``varnishstat -n DIR -j`` every K seconds). The Varnish ≥ 6.5 layout
(``{"version": 1, "timestamp": ..., "counters": {...}}``), the older flat layout (4.x-6.4,
``MAIN.cache_hit``) and Varnish 3.x's (``cache_hit`` without the ``MAIN.`` prefix) are read.
A counter that a filtered output (``varnishstat -f PATTERN``) does not hold is not measured,
never 0.

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
from virtbench.parsers.jsontext import decoder_for, raw_decode
from virtbench.parsers.parser_contract import (
    NOT_MEASURED,
    Parsed,
    ParseError,
    Parser,
    check_figures,
    checked,
)

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
    Metric("storage_used_bytes", "bytes", None,
           "bytes allocated in the cache storage at t (SMA/SMF.<name>.g_bytes; label storage); "
           "Transient storage is reported with storage=Transient"),
    Metric("storage_free_bytes", "bytes", None,
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
        """The counter, 0 when the output does not hold it (the workloads' own unfiltered
        snapshots); the parser itself uses :meth:`value`."""
        return self.counters.get(name, 0)

    def value(self, name: str) -> int | None:
        """The counter, None when the output does not hold it (``varnishstat -f`` filtered it
        out): not measured, never 0."""
        return self.counters.get(name)

    def storages(self) -> dict[str, tuple[int | None, int | None]]:
        """{storage name: (g_bytes, g_space)} for malloc (SMA) and file (SMF) storages; None
        for a gauge the output does not hold."""
        found: dict[str, tuple[int | None, int | None]] = {}
        for key in self.counters:
            if not key.startswith(("SMA.", "SMF.")):  # most of a thousand counters: skip fast
                continue
            parts = key.split(".")
            if len(parts) == 3 and parts[2] in ("g_bytes", "g_space"):
                stem = f"{parts[0]}.{parts[1]}"
                found[parts[1]] = (self.value(f"{stem}.g_bytes"), self.value(f"{stem}.g_space"))
        return found


_READ = ("MAIN.cache_hit", "MAIN.cache_miss", "MAIN.n_lru_nuked", "MAIN.backend_req")
"""The main counters the metrics come from (besides the storages' g_bytes and g_space)."""


def _is_read(name: str) -> bool:
    return name in _READ or (name.startswith(("SMA.", "SMF.")) and name.endswith(("g_bytes",
                                                                                 "g_space")))


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
    if not out:
        raise ParseError("varnishstat: no counters (objects with a 'value'); is this "
                         "`varnishstat -j` output?")
    if not any(_is_read(name) for name in out):
        raise ParseError(f"varnishstat: none of the counters read ({', '.join(_READ)}, "
                         "SMA/SMF.*.g_bytes and g_space) is in the output; was it filtered "
                         "with -f to others?")
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


def _ratio(hits: int | None, misses: int | None) -> tuple[float | None, str]:
    """(hit ratio, status): ``no_requests`` when there were none, ``not_measured`` when a
    counter is not in the output."""
    if hits is None or misses is None:
        return None, NOT_MEASURED
    if hits + misses > 0:
        return 100.0 * hits / (hits + misses), "ok"
    return None, "no_requests"


def _row(metric: str, value: float | None, t: float | None = None,
         labels: dict[str, str] | None = None) -> Measurement:
    """A measurement of a counter (or of a difference of counters): not measured when the
    output does not hold it."""
    return Measurement(metric, None if value is None else float(value), t, labels or {},
                       status="ok" if value is not None else NOT_MEASURED)


def _storage(snap: VarnishSnapshot, t: float | None) -> list[Measurement]:
    out = []
    for name, (used, free) in sorted(snap.storages().items()):
        out.append(_row("storage_used_bytes", used, t, {"storage": name}))
        out.append(_row("storage_free_bytes", free, t, {"storage": name}))
    return out


def _minus(cur: int | None, prev: int | None) -> int | None:
    return None if cur is None or prev is None else cur - prev


def timeline(snapshots: Sequence[VarnishSnapshot], times: Sequence[float] | None = None
             ) -> list[Measurement]:
    """Time-series measurements; t = seconds since the first snapshot.

    ``times`` gives each snapshot's time explicitly (the workload's own clock); otherwise the
    snapshots' 1-second timestamps are used. A counter missing from a snapshot (a filtered
    output) gives not-measured rows, never 0.
    """
    if times is not None and len(times) != len(snapshots):
        raise ValueError("one time per snapshot is needed")
    first = snapshots[0]
    out: list[Measurement] = []
    for i in range(1, len(snapshots)):
        prev, cur = snapshots[i - 1], snapshots[i]
        if times is not None:
            t = float(times[i] - times[0])
        elif cur.timestamp is not None and first.timestamp is not None:
            t = (cur.timestamp - first.timestamp).total_seconds()
        else:
            t = float(i)
        hit, miss = cur.value("MAIN.cache_hit"), cur.value("MAIN.cache_miss")
        d_hit = _minus(hit, prev.value("MAIN.cache_hit"))
        d_miss = _minus(miss, prev.value("MAIN.cache_miss"))
        ratio, status = _ratio(d_hit, d_miss)
        out.append(Measurement("hit_ratio_interval", ratio, t, status=status))
        cum, status = _ratio(_minus(hit, first.value("MAIN.cache_hit")),
                             _minus(miss, first.value("MAIN.cache_miss")))
        out.append(Measurement("hit_ratio_cumulative", cum, t, status=status))
        out.append(_row("cache_hits_interval", d_hit, t))
        out.append(_row("cache_misses_interval", d_miss, t))
        nuked = cur.value("MAIN.n_lru_nuked")
        out.append(_row("lru_nuked_interval", _minus(nuked, prev.value("MAIN.n_lru_nuked")), t))
        out.append(_row("lru_nuked_total", nuked, t))
        out.append(_row("backend_fetches_interval", _minus(cur.value("MAIN.backend_req"),
                                                           prev.value("MAIN.backend_req")), t))
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
    hits, misses = snap.value("MAIN.cache_hit"), snap.value("MAIN.cache_miss")
    ratio, status = _ratio(hits, misses)
    return [
        Measurement("hit_ratio_cumulative", ratio, status=status),
        _row("cache_hits", hits),
        _row("cache_misses", misses),
        _row("lru_nuked_total", snap.value("MAIN.n_lru_nuked")),
        _row("backend_fetches", snap.value("MAIN.backend_req")),
        *_storage(snap, None),
    ]


def _layout(text: str) -> str:
    if '"counters"' in text:
        return "Varnish >= 6.5 layout"
    return "Varnish 4.x-6.4 layout" if '"MAIN.' in text else "Varnish 3.x layout"


def parse_varnishstat_full(text: str) -> Parsed:
    snapshots = parse_snapshots(text)
    unmapped = [name for name in snapshots[-1].counters if not _is_read(name)]
    warnings = [f"varnishstat: {len(unmapped)} counters not mapped (read: cache hits and "
                "misses, LRU nukes, backend requests, storage bytes)"] if unmapped else []
    absent = sorted({name for snap in snapshots for name in _READ if name not in snap.counters})
    if absent:
        warnings.append(f"varnishstat: {', '.join(absent)} not in the output (filtered with "
                        "-f?): what depends on them is reported as not_measured, not as 0")
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
