"""Runner overhead per trial beyond the workload's own time (floor: median ≤ 1 ms).

Two measurements:
1. exec.noop (in-process, does nothing): the time between consecutive trial starts is pure
   runner overhead (context, realisation, SQLite commit of the trial and its sample, progress).
2. exec.command running `true`: overhead = start-to-start interval − the command's own wall time;
   the command's wall time is compared with hyperfine's on the same command (`hyperfine -N`).

Run: .venv/bin/python benchmarks/engine_runner_overhead.py
"""

from __future__ import annotations

import itertools
import json
import statistics
import subprocess

from _common import temp_dir, virtbench
from record import record

from virtbench.store import Store

TRIALS = 300


def interval_overheads(store: Store, workload_id: str, own_metric: str | None) -> list[float]:
    run = store.run("latest")
    trials = [t for t in store.trials(run.id) if t["workload_id"] == workload_id
              and not t["warmup"]]
    own = {}
    if own_metric:
        for s in store.samples(run.id, metric=own_metric):
            own[s.trial_id] = s.value or 0.0
    out = []
    for this, following in itertools.pairwise(trials):
        out.append(following["started_at"] - this["started_at"] - own.get(this["id"], 0.0))
    return out


def main() -> None:
    tmp = temp_dir()
    results = {}
    for workload, params, metric in (("exec.noop", "{}", None),
                                     ("exec.command", "{argv: [\"true\"]}", "wall_time_s")):
        spec = tmp / f"{workload}.yaml"
        spec.write_text(f"name: overhead-{workload.replace('.', '-')}\n"
                        f"workloads: [{{name: {workload}, params: {params}}}]\n"
                        f"repetitions: {TRIALS}\nwarmup: 5\n")
        db = tmp / f"{workload}.db"
        virtbench("run", str(spec), "--store", str(db), "--quiet")
        store = Store(str(db))
        overheads = interval_overheads(store, workload, metric)
        results[workload] = overheads
        if metric:
            run = store.run("latest")
            walls = [s.value or 0.0 for s in store.samples(run.id, metric=metric)]
            results["command_wall"] = walls
    hyper = tmp / "hyperfine.json"
    subprocess.run(["hyperfine", "-N", "--runs", str(TRIALS), "--warmup", "5", "--export-json",
                    str(hyper), "true"], check=True, capture_output=True)
    hyper_times = json.loads(hyper.read_text())["results"][0]["times"]

    def ms(values: list[float]) -> str:
        return f"{statistics.median(values) * 1e3:.3f} ms"

    body = f"""
| measurement | median | p90 |
|---|---|---|
| runner overhead per trial, exec.noop (in-process) | {ms(results['exec.noop'])} | {statistics.quantiles(results['exec.noop'], n=10)[-1] * 1e3:.3f} ms |
| runner overhead per trial, exec.command `true` (beyond the command's own time) | {ms(results['exec.command'])} | {statistics.quantiles(results['exec.command'], n=10)[-1] * 1e3:.3f} ms |
| `true` wall time measured by virtbench | {ms(results['command_wall'])} | |
| `true` wall time measured by hyperfine -N | {ms(hyper_times)} | |

{TRIALS} trials each, SQLite store (WAL), every trial committed before the next starts.
Floor: median runner overhead ≤ 1 ms.
"""
    record("engine: runner overhead per trial", ".venv/bin/python benchmarks/engine_runner_overhead.py",
           body)
    print(body)


if __name__ == "__main__":
    main()
