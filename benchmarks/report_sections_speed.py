"""Study report sections over 1,000,000 per-request samples (share of the ≤ 10 s report floor).

Fills a SQLite store with a web.load run the way the runner stores study 004: 2 variants × 3
runs × 166,667 requests, each request a `response_time` sample (t set, labels), plus the
per-run summary metrics. Times `analyse` (the engine's part) and `build_sections` (the study
sections: the web per-run table computes distribution-free CIs of the median, p90 and p99 from
every run's request times) separately, best of 3 in this process; then the whole
`virtbench report` in every format (fresh processes) against the reference, the sqlite3
command reading every sample, alternating (_common.report_formats_table).

Run: .venv/bin/python benchmarks/report_sections_speed.py
"""

from __future__ import annotations

import shutil
import time

import numpy as np
from _common import report_formats_table, temp_dir
from record import record

from virtbench.analysis import analyse
from virtbench.model import Measurement
from virtbench.plugins import build_sections
from virtbench.store import Store, TrialRecord
from virtbench.workloads.web.load import WebLoad

TOTAL = 1_000_000
VARIANTS = ("memory", "disk-file")
RUNS = 3


def fill(db: str) -> int:
    st = Store(db)
    run_id = st.create_run(experiment="sections-scale", description="", spec_yaml="",
                           spec_path="", seed=1, host="h", target="local", baseline="memory",
                           version="b")
    st.add_variants(run_id, [(v, {"cache_storage": v}) for v in VARIANTS], "memory")
    st.add_workload(run_id, "web.load", "web.load", 0, {}, WebLoad.metrics)
    units = {m.name: m.unit for m in WebLoad.metrics}
    per_trial = TOTAL // (len(VARIANTS) * RUNS) + 1
    rng = np.random.default_rng(1)
    count = order = 0
    for variant in VARIANTS:
        for rep in range(RUNS):
            times = rng.lognormal(np.log(20.0), 0.4, per_trial)
            summary = {"samples": float(per_trial), "failures": 0.0, "success_rate": 100.0,
                       "response_time_mean": float(times.mean()),
                       "response_time_median": float(np.quantile(times, 0.5)),
                       "response_time_p90": float(np.quantile(times, 0.9)),
                       "response_time_p99": float(np.quantile(times, 0.99)),
                       "hit_ratio_run": 90.0, "hit_ratio_client": 90.0}
            ms = [Measurement(k, v) for k, v in summary.items()]
            ms += [Measurement("response_time", float(t), t=i / 8.0,
                               labels={"url": f"/site1/page{i % 300}.html", "cache": "hit"})
                   for i, t in enumerate(times)]
            st.record_trial(run_id, TrialRecord(variant, "web.load", rep, order, False, "ok",
                                                "", 0.0, 1.0, "local", None, {}), ms, units)
            order += 1
            count += len(ms)
    st.close()
    return count


def main() -> None:
    tmp = temp_dir()
    try:
        db = str(tmp / "sections.db")
        count = fill(db)
        store = Store(db)
        analyse_s, sections_s = [], []
        for _ in range(3):
            start = time.perf_counter()
            analysis = analyse(store, ["latest"])
            analyse_s.append(time.perf_counter() - start)
            start = time.perf_counter()
            sections = build_sections(analysis)
            sections_s.append(time.perf_counter() - start)
        store.close()
        table = report_formats_table(db, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)  # the store is about 280 MB
    keys = ", ".join(s.key for s in sections)
    body = (f"{count:,} samples in one web.load run (2 variants × 3 runs × "
            f"{TOTAL // 6 + 1:,} requests, per-request `response_time` samples).\n\n"
            "| step | best of 3 |\n|---|---|\n"
            f"| `analyse` (engine) | {min(analyse_s):.2f} s |\n"
            f"| `build_sections` (study sections: {len(sections)}) | {min(sections_s):.3f} s |\n"
            f"\nSections built: {keys}.\n\nThe whole report:\n\n{table}"
            "\nFloor: the whole report ≤ 2 s in every format.\n")
    record("report: study sections over 1,000,000 samples",
           ".venv/bin/python benchmarks/report_sections_speed.py", body)
    print(body)


if __name__ == "__main__":
    main()
