"""exec.command's time of `true` against hyperfine's, and the runner's overhead per trial.

Floors (issue 10): exec.command's mean wall time of `true` within 10 % of `hyperfine -N true`'s
mean; runner overhead per trial ≤ 1 ms against hyperfine's time of the same command.

The machine is shared, so hyperfine and virtbench run in alternating rounds and every figure is
a per-round ratio or difference, shown as the median over rounds with its quartiles.
1. Timing method: hyperfine -N (50 runs) and LocalTarget.run_timed(["true"], timeout=3600)
   (50 runs, the call exec.command makes, its time limit included) in this process, which goes
   first alternating; many short rounds, so both see the same load.
2. End to end: hyperfine -N (100 runs), `virtbench run` of exec.command `true` (200
   trials), hyperfine -N (100 runs) again, both making the reference: the stored
   wall_time_s against hyperfine (the floor), and the runner overhead =
   the median interval between consecutive trial starts (all the runner does per trial, the
   command included) minus hyperfine's median of the same round; it does not subtract
   virtbench's own figure, so an inflated measurement cannot hide overhead. exec.noop (in
   process, nothing spawned): its start-to-start interval is pure runner overhead.
3. One way end to end can differ from 1 on a busy machine: the same call in this process, with
   and without 1 ms of CPU work between spawns, alternating.

Run: .venv/bin/python benchmarks/engine_runner_overhead.py
"""

from __future__ import annotations

import itertools
import json
import os
import statistics
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from _common import temp_dir, virtbench
from record import record

from virtbench.store import Store
from virtbench.targets.local import LocalTarget
from virtbench.workloads.command import CommandParams

COMMAND = "true"
METHOD_ROUNDS, METHOD_RUNS = 30, 50
RUN_ROUNDS, RUN_TRIALS = 9, 200
NOOP_ROUNDS = 2
BUSY_ROUNDS, BUSY_S = 10, 0.001
T = TypeVar("T")
U = TypeVar("U")
LIMIT_S = CommandParams.model_fields["timeout_s"].default  # exec.command's default limit


def timed(target: LocalTarget) -> float:
    """One `true` timed as exec.command times it (s)."""
    return target.run_timed([COMMAND], timeout=LIMIT_S).duration_s


def in_turn(first: Callable[[], T], second: Callable[[], U], swap: bool) -> tuple[T, U]:
    """``(first(), second())``, run in the other order when ``swap``."""
    if swap:
        b = second()
        return first(), b
    a = first()
    return a, second()


def hyperfine(tmp: Path, runs: int) -> list[float]:
    out = tmp / "hyperfine.json"
    subprocess.run(["hyperfine", "-N", "--runs", str(runs), "--warmup", "3", "--export-json",
                    str(out), COMMAND], check=True, capture_output=True)
    return [float(t) for t in json.loads(out.read_text())["results"][0]["times"]]


def virtbench_round(tmp: Path, workload: str, params: str, tag: str) -> tuple[list[float],
                                                                               list[float]]:
    """(start-to-start intervals, stored wall times) of one fresh `virtbench run`."""
    spec = tmp / f"{tag}.yaml"
    spec.write_text(f"name: overhead-{tag}\n"
                    f"workloads: [{{name: {workload}, params: {params}}}]\n"
                    f"repetitions: {RUN_TRIALS}\nwarmup: 5\n")
    db = tmp / f"{tag}.db"
    virtbench("run", str(spec), "--store", str(db), "--quiet")
    store = Store(str(db))
    run = store.run("latest")
    starts = [t["started_at"] for t in store.trials(run.id) if not t["warmup"]]
    walls = [s.value or 0.0 for s in store.samples(run.id, metric="wall_time_s")]
    store.close()
    return [b - a for a, b in itertools.pairwise(starts)], walls


def spread(values: list[float], fmt: str) -> str:
    """Median [first quartile – third quartile] over rounds."""
    q1, q2, q3 = statistics.quantiles(values, n=4, method="inclusive")
    return f"{fmt.format(q2)} [{fmt.format(q1)} – {fmt.format(q3)}]"


def ratios(ours: list[float], theirs: list[float]) -> tuple[float, float, float]:
    return (statistics.mean(ours) / statistics.mean(theirs),
            statistics.median(ours) / statistics.median(theirs), min(ours) / min(theirs))


def spawn_medians(target: LocalTarget, busy_s: float) -> float:
    """Median time of `true` when the caller computes ``busy_s`` between spawns."""
    times = []
    for _ in range(METHOD_RUNS):
        times.append(timed(target))
        until = time.perf_counter() + busy_s
        while time.perf_counter() < until:
            pass
    return statistics.median(times)


def main() -> None:
    tmp = temp_dir()
    target = LocalTarget()
    method: list[tuple[float, float, float]] = []
    def ours_round() -> list[float]:
        for _ in range(3):
            timed(target)
        return [timed(target) for _ in range(METHOD_RUNS)]

    for m in range(METHOD_ROUNDS):
        theirs, ours = in_turn(lambda: hyperfine(tmp, METHOD_RUNS), ours_round, m % 2 == 1)
        method.append(ratios(ours, theirs))
    print("method rounds done", flush=True)
    end_to_end: list[tuple[float, float, float]] = []
    hyper_mean_ms, vb_mean_ms, hyper_median_ms, interval_ms, overhead_ms, noop_ms = (
        [], [], [], [], [], [])
    for r in range(RUN_ROUNDS):
        # hyperfine just before and just after: virtbench's trials come after seconds of
        # start-up, and the load may drift meanwhile; both halves make the reference.
        before = hyperfine(tmp, RUN_TRIALS // 2)
        intervals, walls = virtbench_round(tmp, "exec.command", f'{{argv: ["{COMMAND}"]}}',
                                           f"command-{r}")
        theirs = before + hyperfine(tmp, RUN_TRIALS // 2)
        if r < NOOP_ROUNDS:
            noop_intervals, _ = virtbench_round(tmp, "exec.noop", "{}", f"noop-{r}")
            noop_ms.append(statistics.median(noop_intervals) * 1e3)
        end_to_end.append(ratios(walls, theirs))
        hyper_mean_ms.append(statistics.mean(theirs) * 1e3)
        hyper_median_ms.append(statistics.median(theirs) * 1e3)
        vb_mean_ms.append(statistics.mean(walls) * 1e3)
        interval_ms.append(statistics.median(intervals) * 1e3)
        overhead_ms.append((statistics.median(intervals) - statistics.median(theirs)) * 1e3)
        print(f"round {r + 1}: ratio of means {end_to_end[-1][0]:.3f}, "
              f"overhead {overhead_ms[-1]:.3f} ms", flush=True)
    idle_ms, busy_ms = [], []
    for _ in range(BUSY_ROUNDS):
        idle_ms.append(spawn_medians(target, 0.0) * 1e3)
        busy_ms.append(spawn_medians(target, BUSY_S) * 1e3)
    wall_ok = abs(statistics.median(e[0] for e in end_to_end) - 1) <= 0.10
    overhead_ok = statistics.median(overhead_ms) <= 1.0
    load = os.getloadavg()[0]

    def column(rows: list[tuple[float, float, float]], i: int) -> list[float]:
        return [row[i] for row in rows]

    body = f"""
Figures: median over rounds [quartiles] of per-round ratios or differences. Load
average at the end: {load:.1f} on {os.cpu_count()} CPUs, shared with other jobs (the spread is
theirs as much as ours).

1. Timing method, {METHOD_ROUNDS} rounds of `hyperfine -N --runs {METHOD_RUNS} --warmup 3 {COMMAND}` and
{METHOD_RUNS} × `LocalTarget.run_timed(["{COMMAND}"], timeout={LIMIT_S:g})` (exec.command's call) in the benchmark's process, which goes first alternating:

| virtbench / hyperfine (same round) | ratio |
|---|---|
| of the means | {spread(column(method, 0), "{:.3f}")} |
| of the medians | {spread(column(method, 1), "{:.3f}")} |
| of the minima | {spread(column(method, 2), "{:.3f}")} |

2. End to end, {RUN_ROUNDS} rounds of `hyperfine -N --runs {RUN_TRIALS // 2}`, `virtbench run` of exec.command
`{COMMAND}` ({RUN_TRIALS} trials, 5 warm-up; SQLite store, every trial committed before the next
starts) and `hyperfine -N --runs {RUN_TRIALS // 2}` again; exec.noop ({RUN_TRIALS} trials) in the first {NOOP_ROUNDS} rounds:

| measurement | median over rounds [quartiles] | floor |
|---|---|---|
| `{COMMAND}` mean wall time, hyperfine -N | {spread(hyper_mean_ms, "{:.3f}")} ms | |
| `{COMMAND}` mean wall time stored by exec.command | {spread(vb_mean_ms, "{:.3f}")} ms | |
| exec.command / hyperfine, means | {spread(column(end_to_end, 0), "{:.3f}")} | within 10 %: {"meets" if wall_ok else "NOT met"} |
| exec.command / hyperfine, medians | {spread(column(end_to_end, 1), "{:.3f}")} | |
| exec.command / hyperfine, minima | {spread(column(end_to_end, 2), "{:.3f}")} | |
| `{COMMAND}` median wall time, hyperfine -N | {spread(hyper_median_ms, "{:.3f}")} ms | |
| trial start-to-start interval, exec.command `{COMMAND}` (median) | {spread(interval_ms, "{:.3f}")} ms | |
| runner overhead per trial = interval − hyperfine's median | {spread(overhead_ms, "{:.3f}")} ms | ≤ 1 ms: {"meets" if overhead_ok else "NOT met"} |
| runner overhead per trial, exec.noop (start-to-start interval) | {", ".join(f"{x:.3f}" for x in noop_ms)} ms | |

3. `LocalTarget.run_timed(["{COMMAND}"], timeout={LIMIT_S:g})` in this process, {BUSY_ROUNDS} alternating rounds of {METHOD_RUNS} spawns:
median time of `{COMMAND}` with nothing between spawns {spread(idle_ms, "{:.3f}")} ms; with
{BUSY_S * 1e3:.0f} ms of CPU work between spawns {spread(busy_ms, "{:.3f}")} ms. hyperfine does nothing
between runs; the runner stores each trial. On a loaded machine the scheduler may make a process
that has just computed wait longer before it runs again, inside the spawn-to-exit time; this
part shows how much that was in this run.
"""
    record("engine: runner overhead per trial", ".venv/bin/python benchmarks/engine_runner_overhead.py",
           body)
    print(body)


if __name__ == "__main__":
    main()
