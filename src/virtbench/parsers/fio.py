"""fio JSON output → measurements, named by access pattern and direction.

Accepts ``--output-format=json`` (also ``json+``) and ``json,normal`` (the JSON with fio's human
text around it), fio 2.x (latencies in µs under ``clat``/``lat``, no ``total_ios``, no options)
and 3.x (ns under ``clat_ns``/``lat_ns``).

Each job's ``rw`` comes from its ``job options`` over the ``global options`` (a ``[global]``
section or options given on the command line before ``--name``); without any fio's default
``read`` applies. Patterns: ``read`` → ``seqread``, ``write`` → ``seqwrite``, ``randread``,
``randwrite``, ``trim`` → ``seqtrim``, ``randtrim``; mixed jobs (``randrw``, ``rw``/``readwrite``,
``trimwrite``) give one series per direction (``randrw_read``, ``seqrw_write`` ...). fio 2.x
JSON carries no options, so its series are named by direction only (``read``, ``write``,
``trim``), with a warning.

Several jobs of the same pattern (``numjobs`` without ``group_reporting``, or several job
sections) carry a ``job`` label (``name#k`` for clones of one name) and a ``job=total`` row per
reporting group: bandwidth and IOPS summed, mean completion latency weighted by I/O count.

Units: bandwidth KiB/s (fio's ``bw``, 1024 bytes), IOPS, latencies in microseconds, CPU in
percent of one CPU. Latencies fio did not measure (``gtod_reduce=1``) have value None and status
"not_measured". Total-latency percentiles (``lat_percentiles=1``) are ``*_lat_p*_us``.
"""

from __future__ import annotations

import os
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from virtbench.model import Better, Domain, Measurement, Metric
from virtbench.parsers.jsontext import find_json
from virtbench.parsers.parser_contract import NOT_MEASURED, Parsed, ParseError, Parser, checked

__all__ = ["FIO_METRICS", "FIO_SERIES", "PARSERS", "fio_series", "parse_fio", "parse_fio_full"]

_PATTERN = {
    "read": "seqread", "write": "seqwrite", "randread": "randread", "randwrite": "randwrite",
    "randrw": "randrw", "rw": "seqrw", "readwrite": "seqrw", "trim": "seqtrim",
    "randtrim": "randtrim", "trimwrite": "trimwrite",
}
_DIRECTIONS = {
    "seqread": ("read",), "seqwrite": ("write",), "randread": ("read",),
    "randwrite": ("write",), "seqtrim": ("trim",), "randtrim": ("trim",),
    "randrw": ("read", "write"), "seqrw": ("read", "write"), "trimwrite": ("trim", "write"),
}
_SINGLE = ("seqread", "seqwrite", "randread", "randwrite", "seqtrim", "randtrim")
_MIXED = ("randrw", "seqrw", "trimwrite")
_BY_DIRECTION = ("read", "write", "trim")
"""Series of fio 2.x outputs, whose JSON does not say the access pattern."""
FIO_SERIES: tuple[str, ...] = (
    *_SINGLE, *(f"{m}_{d}" for m in _MIXED for d in _DIRECTIONS[m]), *_BY_DIRECTION
)
_PERCENTILES = (("p50", "50.000000"), ("p99", "99.000000"), ("p99_9", "99.900000"))
_MAPPED_TOP = {"fio version", "timestamp", "timestamp_ms", "time", "global options", "jobs"}


def _metrics() -> tuple[Metric, ...]:
    out: list[Metric] = []
    for series in FIO_SERIES:
        what = f"fio {series.replace('_', ' ')}"
        out += [
            Metric(f"{series}_bandwidth_KiBps", "KiB/s", Better.HIGHER,
                   f"{what}: bytes transferred / job runtime, in KiB/s (fio 'bw')",
                   primary=series in _SINGLE[:4]),
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
        out.append(Metric(f"{series}_lat_mean_us", "us", Better.LOWER,
                          f"{what}: mean total latency (issue to completion), microseconds; "
                          "reported with lat_percentiles=1"))
        for name, _key in _PERCENTILES:
            pct = name[1:].replace("_", ".")
            out.append(Metric(f"{series}_lat_{name}_us", "us", Better.LOWER,
                              f"{what}: {pct}th percentile of total latency (lat_percentiles=1),"
                              " microseconds"))
    for pattern in (*_SINGLE, *_MIXED):
        out += [
            Metric(f"{pattern}_cpu_usr_pct", "%", Better.LOWER,
                   f"fio {pattern}: user CPU time of the job / runtime, percent of one CPU",
                   domain=Domain.POSITIVE),
            Metric(f"{pattern}_cpu_sys_pct", "%", Better.LOWER,
                   f"fio {pattern}: system CPU time of the job / runtime, percent of one CPU",
                   domain=Domain.POSITIVE),
        ]
    out += [
        Metric("cpu_usr_pct", "%", Better.LOWER,
               "fio 2.x job (pattern unknown): user CPU time / runtime, percent of one CPU",
               domain=Domain.POSITIVE),
        Metric("cpu_sys_pct", "%", Better.LOWER,
               "fio 2.x job (pattern unknown): system CPU time / runtime, percent of one CPU",
               domain=Domain.POSITIVE),
    ]
    return tuple(out)


FIO_METRICS: tuple[Metric, ...] = _metrics()


def fio_series(rw: str) -> str:
    """Pattern name for a fio ``rw`` value (``read`` → ``seqread``)."""
    base = rw.split(":", 1)[0]
    if base not in _PATTERN:
        raise ParseError(f"fio: unknown rw={rw!r}; expected one of {', '.join(_PATTERN)}")
    return _PATTERN[base]


def _is_fio(doc: dict[str, Any]) -> bool:
    return "jobs" in doc or "fio version" in doc


def _float(value: Any, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise ParseError(f"fio JSON: {what} is {value!r}, not a number")
    try:
        return float(value)
    except ValueError:
        raise ParseError(f"fio JSON: {what} is {value!r}, not a number") from None


@dataclass
class _Job:
    name: str
    group: str
    pattern: str | None
    """None: fio 2.x, the pattern is unknown."""
    doc: dict[str, Any]
    error: int = 0
    """fio's errno for the job (0: it ended without error)."""


def _error_number(value: Any) -> int:
    try:
        return int(value)
    except (TypeError, ValueError, OverflowError):
        return -1


def _error_text(error: int) -> str:
    """``84 (Invalid or incomplete multibyte or wide character)``: fio's errno and its name."""
    return f"{error} ({os.strerror(error)})" if 0 < error < 4096 else str(error)


def _jobs(doc: dict[str, Any], version: str, warnings: list[str]) -> list[_Job]:
    jobs = doc.get("jobs")
    if not isinstance(jobs, list) or not jobs:
        raise ParseError(f"{version} JSON: 'jobs' is missing or empty")
    global_opts = doc.get("global options")
    global_opts = global_opts if isinstance(global_opts, dict) else {}
    # fio 3.x lists the options it was given; 2.x JSON has no options at all.
    options_listed = "global options" in doc or not version.startswith(("fio-1.", "fio-2."))
    out: list[_Job] = []
    for job in jobs:
        if not isinstance(job, dict):
            raise ParseError(f"{version} JSON: a job entry is {type(job).__name__}, not an object")
        name = str(job.get("jobname", "?"))
        error = _error_number(job.get("error")) if job.get("error") else 0
        job_opts = job.get("job options")
        job_opts = job_opts if isinstance(job_opts, dict) else None
        if job_opts is not None or options_listed:
            opts = job_opts or {}
            # fio lists only options that were given; none given means fio's default, read.
            rw = opts.get("rw") or opts.get("readwrite") or global_opts.get("rw") \
                or global_opts.get("readwrite") or "read"
            pattern: str | None = fio_series(str(rw))
        else:
            pattern = None
        out.append(_Job(name, str(job.get("groupid", 0)), pattern, job, error))
    if any(j.pattern is None for j in out):
        warnings.append(f"{version} JSON has no job options: the access pattern (rw) is "
                        "unknown, so series are named by direction (read, write, trim)")
    return out


def _latency(stats: dict[str, Any], kind: str) -> tuple[dict[str, Any], float] | None:
    """(latency stats, factor to µs) for kind ``clat``/``lat``: 3.x ns or 2.x µs."""
    if isinstance(stats.get(f"{kind}_ns"), dict):
        return stats[f"{kind}_ns"], 1e-3
    if isinstance(stats.get(kind), dict):
        return stats[kind], 1.0
    return None


def _measured(lat: dict[str, Any]) -> bool:
    # gtod_reduce=1: fio keeps no per-I/O times; 3.x says N=0, 2.x leaves min=max=mean=0.
    if "N" in lat:
        return bool(lat["N"])
    return any(lat.get(k) for k in ("min", "max", "mean"))


def _ios(stats: dict[str, Any], what: str) -> float:
    if "total_ios" in stats:
        return _float(stats["total_ios"], f"{what}.total_ios")
    return _float(stats.get("io_bytes", 0), f"{what}.io_bytes")  # fio 2.x: any I/O at all


def _direction(prefix: str, stats: dict[str, Any], labels: dict[str, str], what: str
               ) -> list[Measurement]:
    runtime = stats.get("runtime")
    if runtime == 0 and not isinstance(runtime, bool):
        # I/O counted but no time (verify_only's skipped writes): a rate fio did not measure
        out = [Measurement(f"{prefix}_{kind}", None, labels=dict(labels), status=NOT_MEASURED)
               for kind in ("bandwidth_KiBps", "iops")]
    else:
        out = [
            Measurement(f"{prefix}_bandwidth_KiBps", _float(stats.get("bw"), f"{what}.bw"),
                        labels=dict(labels)),
            Measurement(f"{prefix}_iops", _float(stats.get("iops"), f"{what}.iops"),
                        labels=dict(labels)),
        ]
    clat = _latency(stats, "clat")
    if clat is not None:
        lat_stats, factor = clat
        if not _measured(lat_stats):
            out.append(Measurement(f"{prefix}_clat_mean_us", None, labels=dict(labels),
                                   status=NOT_MEASURED))
        else:
            out.append(Measurement(f"{prefix}_clat_mean_us",
                                   _float(lat_stats.get("mean"), f"{what}.clat.mean") * factor,
                                   labels=dict(labels)))
            out += _percentiles(f"{prefix}_clat", lat_stats, factor, labels, what)
    lat = _latency(stats, "lat")
    if lat is not None and isinstance(lat[0].get("percentile"), dict) and _measured(lat[0]):
        lat_stats, factor = lat
        out.append(Measurement(f"{prefix}_lat_mean_us",
                               _float(lat_stats.get("mean"), f"{what}.lat.mean") * factor,
                               labels=dict(labels)))
        out += _percentiles(f"{prefix}_lat", lat_stats, factor, labels, what)
    return out


def _percentiles(stem: str, lat: dict[str, Any], factor: float, labels: dict[str, str],
                 what: str) -> list[Measurement]:
    percentiles = lat.get("percentile")
    if not isinstance(percentiles, dict):
        return []
    return [Measurement(f"{stem}_{name}_us", _float(percentiles[key], f"{what} p{key}") * factor,
                        labels=dict(labels))
            for name, key in _PERCENTILES if key in percentiles]


def _job_labels(jobs: list[_Job]) -> list[dict[str, str]]:
    """A ``job`` label where a pattern has several jobs; clones of one name get ``#k``."""
    repeated = {p for p, n in Counter(j.pattern for j in jobs).items() if n > 1}
    names = Counter((j.name, j.pattern) for j in jobs)
    seen: Counter[tuple[str, str | None]] = Counter()
    out: list[dict[str, str]] = []
    for job in jobs:
        if job.pattern not in repeated:
            out.append({})
            continue
        key = (job.name, job.pattern)
        label = f"{job.name}#{seen[key]}" if names[key] > 1 else job.name
        seen[key] += 1
        out.append({"job": label})
    return out


def _totals(rows: list[tuple[_Job, str, dict[str, Any]]]) -> list[Measurement]:
    """job=total rows per (series, group) over jobs that carry a ``job`` label."""
    groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for job, prefix, stats in rows:
        groups.setdefault((prefix, job.group), []).append(stats)
    multi_group = {p for p, g in groups if sum(1 for q, _ in groups if q == p) > 1}
    out: list[Measurement] = []
    for (prefix, group), members in groups.items():
        if len(members) < 2:
            continue
        labels = {"job": "total", **({"group": group} if prefix in multi_group else {})}
        out.append(Measurement(f"{prefix}_bandwidth_KiBps",
                               sum(_float(s.get("bw"), "bw") for s in members), labels=labels))
        out.append(Measurement(f"{prefix}_iops",
                               sum(_float(s.get("iops"), "iops") for s in members),
                               labels=dict(labels)))
        lats = [_latency(s, "clat") for s in members]
        if all(lat is not None and _measured(lat[0]) for lat in lats):
            weights = [_ios(s, "total") for s in members]
            total = sum(weights)
            if total > 0:
                mean = sum(w * _float(lat[0].get("mean"), "clat.mean") * lat[1]
                           for w, lat in zip(weights, lats, strict=True) if lat is not None)
                out.append(Measurement(f"{prefix}_clat_mean_us", mean / total,
                                       labels=dict(labels)))
        else:
            out.append(Measurement(f"{prefix}_clat_mean_us", None, labels=dict(labels),
                                   status=NOT_MEASURED))
    return out


@dataclass
class _Rows:
    """What the jobs gave: measurements, the rows behind job=total, and what was noticed."""

    out: list[Measurement] = field(default_factory=list)
    labelled: list[tuple[_Job, str, dict[str, Any]]] = field(default_factory=list)
    not_measured: bool = False
    no_rate: bool = False


def _prefix(job: _Job, direction: str) -> str:
    if job.pattern is None:
        return direction
    return job.pattern if job.pattern in _SINGLE else f"{job.pattern}_{direction}"


def _job_rows(job: _Job, labels: dict[str, str], version: str, rows: _Rows,
              warnings: list[str]) -> int:
    """Add one job's measurements to ``rows``; returns how many directions did I/O."""
    expected = _DIRECTIONS[job.pattern] if job.pattern else _BY_DIRECTION
    directions = 0
    for direction in ("read", "write", "trim"):
        stats = job.doc.get(direction)
        if not isinstance(stats, dict):
            continue
        what = f"job {job.name!r} {direction}"
        if not _ios(stats, what):
            continue
        if direction not in expected:
            warnings.append(f"{version}: job {job.name!r} (rw {job.pattern}) also did "
                            f"{direction} I/O (verify?); not mapped")
            continue
        directions += 1
        prefix = _prefix(job, direction)
        measured = _direction(prefix, stats, labels, what)
        rows.not_measured |= any(m.status == NOT_MEASURED for m in measured
                                 if "_clat_" in m.metric)
        rows.no_rate |= any(m.status == NOT_MEASURED for m in measured
                            if m.metric.endswith("_iops"))
        rows.out += measured
        if labels:
            rows.labelled.append((job, prefix, stats))
    cpu_stem = f"{job.pattern}_cpu" if job.pattern else "cpu"
    for kind in ("usr", "sys"):
        if f"{kind}_cpu" in job.doc and (directions or not job.error):
            rows.out.append(Measurement(f"{cpu_stem}_{kind}_pct",
                                        _float(job.doc[f"{kind}_cpu"], f"job {job.name!r} cpu"),
                                        labels=dict(labels)))
    sync = job.doc.get("sync")
    if isinstance(sync, dict) and sync.get("total_ios"):
        warnings.append(f"{version}: job {job.name!r} fsync/fdatasync latencies ('sync') "
                        "are not mapped")
    return directions


def _failed_jobs(jobs: list[_Job], did_io: list[int], version: str, printed: list[str],
                 warnings: list[str]) -> bool:
    """Warnings for the jobs that ended with an error; a ParseError naming the error when no
    job did any I/O. Returns whether some job's figures cover only part of its run."""
    failed = [(job, io) for job, io in zip(jobs, did_io, strict=True) if job.error]
    if failed and not any(did_io):
        job = failed[0][0]
        said = f"; fio said: {printed[0]}" if printed else ""
        raise ParseError(f"{version}: job {job.name!r} failed with error "
                         f"{_error_text(job.error)} before doing any I/O, so there are no "
                         f"statistics{said}")
    for job, io in failed:
        warnings.append(
            f"{version}: job {job.name!r} ended with error {_error_text(job.error)}: "
            + ("its statistics cover the I/O before the error (partial)" if io
               else "it did no I/O; no figures for it"))
    return bool(failed)


def parse_fio_full(text: str) -> Parsed:
    """Every job of one fio JSON document, per direction, with totals of repeated patterns. A
    job that ended with an error keeps the statistics it has, and the result is partial."""
    found = find_json(text, "fio", "the JSON of fio --output-format=json (or json,normal)",
                      _is_fio)
    doc = found.doc
    version = str(doc.get("fio version", "fio"))
    fmt = f"{version} JSON" + ("+normal" if found.after.strip() else "")
    printed = [line.strip()[:120] for line in found.before.splitlines()
               if line.startswith(("fio:", "verify:")) or "error" in line.lower()
               or "warn" in line.lower()]
    warnings = [f"fio printed: {line}" for line in printed]
    jobs = _jobs(doc, version, warnings)
    rows = _Rows()
    did_io = [_job_rows(job, labels, version, rows, warnings)
              for job, labels in zip(jobs, _job_labels(jobs), strict=True)]
    partial = _failed_jobs(jobs, did_io, version, printed, warnings)
    out = rows.out + _totals(rows.labelled)
    if rows.not_measured:
        warnings.append(f"{version}: completion latencies were not measured (gtod_reduce=1 or "
                        "disable_clat): reported as not_measured, not as 0")
    if rows.no_rate:
        warnings.append(f"{version}: I/O counted over a run time of 0 (verify_only): its "
                        "bandwidth and IOPS are reported as not_measured, not as 0")
    for key in sorted(set(doc) - _MAPPED_TOP):
        warnings.append(f"{version} JSON section '{key}' is not mapped")
    if not out:
        raise ParseError(f"{fmt} contains no read, write or trim I/O; expected at least one job "
                         "that did I/O")
    return checked(Parsed(out, fmt, warnings, partial=partial), FIO_METRICS, version)


def parse_fio(text: str) -> list[Measurement]:
    """Parse one fio JSON document (any number of jobs)."""
    return parse_fio_full(text).measurements


PARSERS = (Parser("fio", "fio JSON (2.x, 3.x; json, json+, json,normal)", FIO_METRICS,
                  parse_fio, parse_fio_full),)
