"""Storage capacity two ways on the root disk: fio's own latency_target search (the deepest
queue whose p99 completion latency meets the target) and virtbench's search of rate_iops with
p99 ≤ target. Both must finish and virtbench's trace must be consistent. They search
different knobs (fio: queue depth; virtbench: the rate at the configured depth), so the
cross-check is one-sided: fio's point meets the target too, so the highest rate that meets it
cannot be lower than fio's IOPS (10 % allowed for a busy shared disk)."""

from __future__ import annotations

from pathlib import Path

import pytest

from virtbench.runner import Runner, RunRecord, build_plan
from virtbench.runner.search import trace_from_trials
from virtbench.search import Search, SearchResult, trace_problems
from virtbench.spec import parse_experiment
from virtbench.store import Store

pytestmark = [pytest.mark.lab, pytest.mark.timeout(600)]

TARGET_MS = 20.0


def test_iops_at_a_p99_target_fio_and_virtbench_agree(tmp_path: Path) -> None:
    common = (f"patterns: [randread], rand_block_size: 4k, iodepth: 16, size_mib: 128, "
              f"directory: {tmp_path}")
    text = f"""\
name: storage-knee
workloads:
  - name: storage.fio-rate
    id: fio-latency-target
    params: {{{common}, runtime_s: 8, latency_target_ms: {TARGET_MS:g}, latency_window_s: 1}}
  - name: storage.fio-rate
    id: virtbench-search
    params: {{{common}, runtime_s: 2}}
    search:
      load: rate_iops
      duration: runtime_s
      unit: IO/s
      lower: 50
      upper: 200000
      precision: 0.05
      durations_s: [2, 4]
      integer: true
      offered: randread_iops
      offered_tolerance: 0.05
      pass_if: [{{metric: randread_clat_p99_us, max: {TARGET_MS * 1000:g}}}]
repetitions: 1
warmup: 0
"""
    exp = parse_experiment(text)
    store = Store(str(tmp_path / "s.db"))
    outcome = Runner(build_plan(exp), RunRecord.new(store, text), workdir=tmp_path).run()
    assert outcome.status == "complete", outcome.stop_reason
    values = {(s.workload_id, s.metric): s.value for s in store.samples(outcome.run_id)
              if s.t is None}
    fio_iops = values[("fio-latency-target", "randread_iops")]
    depth = values[("fio-latency-target", "latency_target_depth")]
    ours = values.get(("virtbench-search", "capacity"))
    assert exp.workloads[1].search is not None
    plan = exp.workloads[1].search.plan()
    trace = trace_from_trials(store.trials(outcome.run_id), "default", "virtbench-search")
    said = (f"fio latency_target: depth {depth:g}, {fio_iops:.0f} IOPS; virtbench: {ours} IOPS "
            f"in {len(trace)} trials: "
            + ", ".join(f"{t.load:g}@{t.duration_s:g}:{'P' if t.passed else 'F'}"
                        for t in trace))
    print(said)
    assert depth is not None and fio_iops is not None, said
    assert depth >= 1 and ours is not None, said
    search = Search(plan)
    search.replay(trace)
    result = search.next()
    assert isinstance(result, SearchResult) and trace_problems(plan, trace, result) == []
    assert ours >= 0.9 * fio_iops, said
