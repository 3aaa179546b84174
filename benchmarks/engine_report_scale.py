"""`virtbench report` over 1,000,000 stored samples (floor: ≤ 2 s in every format).

Fills a SQLite store with 1,000,000 per-trial samples (32 factorial variants × 3 workloads ×
2 metrics, many repetitions), then times the terminal table, JSON, CSV and HTML reports as a
user runs them (`virtbench report`, a fresh process each) against the reference, the sqlite3
command reading every sample (Debian package sqlite3), alternating (_common.report_formats_table).

Run: .venv/bin/python benchmarks/engine_report_scale.py
"""

from __future__ import annotations

import itertools
import shutil

import numpy as np
from _common import report_formats_table, temp_dir
from record import record

from virtbench.model import Better, Measurement, Metric
from virtbench.store import Store, TrialRecord

TOTAL = 1_000_000
FLAGS = ["ssse3", "sse4.1", "sse4.2", "sse4a", "aes"]
METRICS = [Metric("time_s", "s", Better.LOWER, "t", primary=True),
           Metric("rate_Bps", "B/s", Better.HIGHER, "r")]


def fill(db: str) -> int:
    st = Store(db)
    run_id = st.create_run(experiment="scale", description="", spec_yaml="", spec_path="",
                           seed=1, host="h", target="local", baseline="default", version="b")
    variants = []
    for size in range(len(FLAGS) + 1):
        for subset in itertools.combinations(FLAGS, size):
            variants.append(("+".join(subset) or "default", {"cpu_features": list(subset)}))
    st.add_variants(run_id, variants, "default")
    workloads = ["w1", "w2", "w3"]
    for i, w in enumerate(workloads):
        st.add_workload(run_id, w, "bench." + w, i, {}, METRICS)
    per_trial = 200  # samples per trial, to keep the fill fast; analysis is per sample anyway
    rng = np.random.default_rng(1)
    count = 0
    rep = 0
    while count < TOTAL:
        for (variant, knobs), w in itertools.product(variants, workloads):
            speed = 1 + len(knobs["cpu_features"])
            values = rng.normal(1 / speed, 0.02 / speed, per_trial // 2)
            ms = [Measurement("time_s", float(v)) for v in values]
            ms += [Measurement("rate_Bps", float(1e9 / v)) for v in values]
            st.record_trial(run_id, TrialRecord(variant, w, rep, count, False, "ok", "", 0.0,
                                                1.0, "local", None, {}), ms,
                            {"time_s": "s", "rate_Bps": "B/s"})
            count += len(ms)
            if count >= TOTAL:
                break
        rep += 1
    return count


def main() -> None:
    tmp = temp_dir()
    try:
        db = str(tmp / "scale.db")
        count = fill(db)
        table = report_formats_table(db, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)  # the store is about 190 MB
    body = (f"{count:,} samples in one run (32 variants × 3 workloads × 2 metrics, per-trial "
            "samples).\n\n" + table + "\nFloor: ≤ 2 s in every format.\n")
    record("engine: report over 1,000,000 samples",
           ".venv/bin/python benchmarks/engine_report_scale.py", body)
    print(body)


if __name__ == "__main__":
    main()
