"""Real SQLite stores filled through the Store API with runs of chosen values (decide tests)."""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from virtbench.model import Better, Measurement, Metric
from virtbench.store import Store, TrialRecord

METRICS = [
    Metric("time_s", "s", Better.LOWER, "wall time of one operation", True),
    Metric("rate", "B/s", Better.HIGHER, "bytes per second"),
]
SPEC = "name: exp\nlab: {kind: host}\nworkloads: [{name: cpu.crc32c}]\n"


def facts(model: str = "Test CPU 3000", flags: Sequence[str] = ("sse4.2", "aes"),
          kernel: str = "Linux 6.1.0") -> dict[str, Any]:
    return {"cpu": {"model": model, "logical_cpus": 2, "flags": list(flags)},
            "hypervisor": {"in_vm": False}, "kernel": kernel,
            "memory": {"MemTotal": 4 << 30}, "tools": {"openssl": "OpenSSL 3.0.11"}}


def add_run(store: Store, values: Mapping[str, Iterable[float]], *, experiment: str = "exp",
            host: str = "host-a", spec_yaml: str = SPEC, params: Mapping[str, Any] | None = None,
            run_facts: Mapping[str, Any] | None = None, metrics: Sequence[Metric] = METRICS,
            knobs: Mapping[str, Mapping[str, Any]] | None = None, wid: str = "w",
            calibration: str | None = None) -> str:
    """One run; ``values`` maps 'variant' to the time_s values (rate = 1/time_s) of its trials
    (the first and second of ``metrics``, whatever their names)."""
    run_id = store.create_run(experiment=experiment, description="", spec_yaml=spec_yaml,
                              spec_path="", seed=1, host=host, target="local",
                              baseline=next(iter(values)), version="0.1.0",
                              calibration=calibration)
    store.add_variants(run_id, [(v, dict((knobs or {}).get(v, {}))) for v in values],
                       next(iter(values)))
    store.add_workload(run_id, wid, "cpu.crc32c", 0, dict(params or {"size_mib": 1}), metrics)
    store.add_facts(run_id, "before", dict(run_facts or facts()))
    units = {m.name: m.unit for m in metrics}
    order = 0
    for variant, series in values.items():
        for rep, value in enumerate(series):
            now = time.time()
            store.record_trial(run_id, TrialRecord(
                variant=variant, workload_id=wid, repetition=rep, order_index=order,
                warmup=False, status="ok", error="", started_at=now, ended_at=now,
                target="local", facts_id=None, notes={}),
                [Measurement(metric.name, v) for metric, v in zip(metrics, (value, 1.0 / value),
                                                      strict=False)],
                units)
            order += 1
    store.set_run_status(run_id, "complete")
    return run_id


def column_cells(text: str, column: str, next_column: str) -> list[str]:
    """The full text of one column per table row, rejoining the lines a cell wrapped onto (a
    row starts where the first column is not blank)."""
    lines = text.splitlines()
    header = next(i for i, line in enumerate(lines) if column in line and next_column in line)
    start, end = lines[header].index(column), lines[header].index(next_column)
    cells: list[str] = []
    for line in lines[header + 2:]:
        if not line.strip() or not line.startswith(" "):
            break
        piece = line[start:end].strip()
        if line[:start].strip():
            cells.append(piece)
        elif cells:
            cells[-1] += piece
    return cells
