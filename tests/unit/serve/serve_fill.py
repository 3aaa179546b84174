"""Runs written through the Store API the way the runner writes them (one trial a transaction)."""

from __future__ import annotations

import itertools
import time

from virtbench.model import Better, Measurement, Metric
from virtbench.store import Store, TrialRecord

HOSTILE = "<script>alert(1)</script>"
METRICS = [Metric("time", "s", Better.LOWER, "Wall time of one checksum.", True)]


def make_run(store: Store, experiment: str = "exp", *, host: str = "hostA",
             variants: tuple[str, ...] = ("base", "fast"), reps: int = 4,
             workload: str = "cpu.demo", label: str = "", description: str = "",
             scale: float = 1.0) -> str:
    run_id = store.create_run(experiment=experiment, description=description, spec_yaml="",
                              spec_path="", seed=1, host=host, target="local",
                              baseline=variants[0], version="0.1.0")
    store.add_variants(run_id, [(v, {"knob": i}) for i, v in enumerate(variants)], variants[0])
    store.add_workload(run_id, workload, workload, 0, {"size": 1}, METRICS)
    for rep in range(reps):
        for i, variant in enumerate(variants):
            add_trial(store, run_id, variant, workload, rep,
                      scale * (1.0 / (1 + i) + 0.01 * rep), label)
    store.set_run_status(run_id, "complete", "fixed repetitions done")
    return run_id


_order = itertools.count()


def add_trial(store: Store, run_id: str, variant: str, workload: str, rep: int, value: float,
              label: str = "") -> None:
    now = time.time()
    store.record_trial(run_id, TrialRecord(
        variant=variant, workload_id=workload, repetition=rep, order_index=next(_order),
        warmup=False, status="ok", error="", started_at=now, ended_at=now + 0.01,
        target="local", facts_id=None, notes={}),
        [Measurement("time", value, labels={"series": label} if label else {})],
        {"time": "s"})
