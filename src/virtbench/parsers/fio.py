"""fio ``--output-format=json`` → measurements, named by access pattern and direction.

Each fio job's ``rw`` option gives the pattern: ``read`` → ``seqread``, ``write`` → ``seqwrite``,
``randread``, ``randwrite``; mixed jobs (``randrw``, ``rw``/``readwrite``) give one series per
direction (``randrw_read``, ``seqrw_write`` ...). Directions that did no I/O are left out. With
several jobs of the same pattern (no ``group_reporting``) measurements carry a ``job`` label.

Units: bandwidth KiB/s (fio's ``bw``, 1024 bytes), IOPS, completion latency (clat) in
microseconds (fio reports ns), CPU in percent of one CPU (fio's usr_cpu / sys_cpu).
"""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

from virtbench.model import Better, Domain, Measurement, Metric
from virtbench.parsers.base import ParseError, Parser

__all__ = ["FIO_METRICS", "FIO_SERIES", "PARSERS", "fio_series", "parse_fio"]

_PATTERN = {
    "read": "seqread", "write": "seqwrite", "randread": "randread", "randwrite": "randwrite",
    "randrw": "randrw", "rw": "seqrw", "readwrite": "seqrw", "trim": "seqtrim",
    "randtrim": "randtrim",
}
_SINGLE = ("seqread", "seqwrite", "randread", "randwrite")
_MIXED = ("randrw", "seqrw")
FIO_SERIES: tuple[str, ...] = (
    *_SINGLE, *(f"{m}_{d}" for m in _MIXED for d in ("read", "write"))
)
_PERCENTILES = (("p50", "50.000000"), ("p99", "99.000000"), ("p99_9", "99.900000"))


def _metrics() -> tuple[Metric, ...]:
    out: list[Metric] = []
    for series in FIO_SERIES:
        what = f"fio {series.replace('_', ' ')}"
        out += [
            Metric(f"{series}_bandwidth_KiBps", "KiB/s", Better.HIGHER,
                   f"{what}: bytes transferred / job runtime, in KiB/s (fio 'bw')",
                   primary=series in _SINGLE),
            Metric(f"{series}_iops", "IO/s", Better.HIGHER,
                   f"{what}: I/O operations completed per second (fio 'iops')"),
            Metric(f"{series}_clat_mean_us", "us", Better.LOWER,
                   f"{what}: mean completion latency (submission to completion), microseconds"),
        ]
        for name, _key in _PERCENTILES:
            pct = name[1:].replace("_", ".")
            out.append(Metric(f"{series}_clat_{name}_us", "us", Better.LOWER,
                              f"{what}: {pct}th percentile of completion latency, "
                              "microseconds (fio's histogram bins, ~1-3 % resolution)"))
    for pattern in (*_SINGLE, *_MIXED):
        out += [
            Metric(f"{pattern}_cpu_usr_pct", "%", Better.LOWER,
                   f"fio {pattern}: user CPU time of the job / runtime, percent of one CPU",
                   domain=Domain.POSITIVE),
            Metric(f"{pattern}_cpu_sys_pct", "%", Better.LOWER,
                   f"fio {pattern}: system CPU time of the job / runtime, percent of one CPU",
                   domain=Domain.POSITIVE),
        ]
    return tuple(out)


FIO_METRICS: tuple[Metric, ...] = _metrics()


def fio_series(rw: str) -> str:
    """Pattern name for a fio ``rw`` value (``read`` → ``seqread``)."""
    base = rw.split(":", 1)[0]
    if base not in _PATTERN:
        raise ParseError(f"fio: unknown rw={rw!r}")
    return _PATTERN[base]


def _load(text: str) -> dict[str, Any]:
    # fio may print warnings before the JSON document on the same stream.
    start = text.find("{")
    if start < 0:
        raise ParseError("not a fio JSON output: no '{' found (run fio --output-format=json)")
    try:
        doc = json.loads(text[start:])
    except json.JSONDecodeError as exc:
        raise ParseError(f"fio JSON output is malformed: {exc}") from exc
    if not isinstance(doc, dict) or "jobs" not in doc:
        raise ParseError("fio JSON output has no 'jobs' list")
    return doc


def _direction(prefix: str, stats: dict[str, Any], labels: dict[str, str]) -> list[Measurement]:
    out = [
        Measurement(f"{prefix}_bandwidth_KiBps", float(stats["bw"]), labels=dict(labels)),
        Measurement(f"{prefix}_iops", float(stats["iops"]), labels=dict(labels)),
    ]
    clat = stats.get("clat_ns") or {}
    if "mean" in clat:
        out.append(Measurement(f"{prefix}_clat_mean_us", float(clat["mean"]) / 1e3,
                               labels=dict(labels)))
    percentiles = clat.get("percentile") or {}
    for name, key in _PERCENTILES:
        if key in percentiles:
            out.append(Measurement(f"{prefix}_clat_{name}_us", float(percentiles[key]) / 1e3,
                                   labels=dict(labels)))
    return out


def parse_fio(text: str) -> list[Measurement]:
    """Parse one fio JSON document (any number of jobs)."""
    doc = _load(text)
    jobs = doc["jobs"]
    patterns = []
    for job in jobs:
        rw = (job.get("job options") or {}).get("rw") or "read"
        patterns.append(fio_series(rw))
    repeated = {p for p, n in Counter(patterns).items() if n > 1}
    out: list[Measurement] = []
    for job, pattern in zip(jobs, patterns, strict=True):
        if job.get("error"):
            raise ParseError(f"fio job {job.get('jobname')!r} failed with error {job['error']}")
        labels = {"job": str(job.get("jobname"))} if pattern in repeated else {}
        if pattern in ("seqtrim", "randtrim"):
            continue  # trim is not part of the study; no metrics declared
        for direction in ("read", "write"):
            stats = job.get(direction) or {}
            if not stats.get("total_ios"):
                continue
            prefix = pattern if pattern in _SINGLE else f"{pattern}_{direction}"
            if pattern in _SINGLE and not pattern.endswith(direction):
                continue
            out += _direction(prefix, stats, labels)
        for kind in ("usr", "sys"):
            out.append(Measurement(f"{pattern}_cpu_{kind}_pct", float(job[f"{kind}_cpu"]),
                                   labels=dict(labels)))
    if not out:
        raise ParseError("fio JSON output contains no read or write I/O")
    return out


PARSERS = (Parser("fio", "fio --output-format=json (fio 3.x)", FIO_METRICS, parse_fio),)
