"""PostgreSQL store under 50 concurrent writers, as a fleet writes: samples/s, none lost or
duplicated.

Each writer is a thread with its own Store (its own connection), its own run, recording trials
of 20 per-request samples (each with a distinct t) in one transaction per trial, as a fleet
host's runner does. 50 writers × 100 trials × 20 samples = 100,000 samples; the reference is
one writer recording the same 100,000 samples. Order: 1, 50, 50, 1 writers, alternating, on a
private PostgreSQL server (scripts/postgres.sh, fsync off as in the tests). After each run every
run's samples are counted and checked for duplicates in the database itself.

Run: .venv/bin/python benchmarks/fleet_pg_writers.py
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import tempfile
import threading
import time

from _common import REPO
from record import record
from sqlalchemy import text

from virtbench.model import Measurement
from virtbench.store import Store, TrialRecord

WRITERS = 50
TRIALS = 100
PER_TRIAL = 20
TOTAL = WRITERS * TRIALS * PER_TRIAL


def write(url: str, trials: int, runs: list[str], barrier: threading.Barrier) -> None:
    store = Store(url)
    try:
        run_id = store.create_run(experiment="pg-writers", description="", spec_yaml="",
                                  spec_path="", seed=1, host=threading.current_thread().name,
                                  target="bench", baseline="a", version="bench")
        runs.append(run_id)
        barrier.wait()
        for rep in range(trials):
            now = time.time()
            store.record_trial(run_id, TrialRecord(
                variant="a", workload_id="w", repetition=rep, order_index=rep, warmup=False,
                status="ok", error="", started_at=now, ended_at=now, target="bench",
                facts_id=None, notes={}),
                [Measurement("latency_s", 0.001 * i, t=float(rep * PER_TRIAL + i))
                 for i in range(PER_TRIAL)], {"latency_s": "s"})
    finally:
        store.close()


def one_round(url: str, writers: int) -> tuple[float, int, int]:
    """(seconds, samples stored, duplicates) with ``writers`` concurrent writers."""
    runs: list[str] = []
    barrier = threading.Barrier(writers + 1)
    trials = TOTAL // PER_TRIAL // writers
    threads = [threading.Thread(target=write, args=(url, trials, runs, barrier),
                                name=f"w{i}") for i in range(writers)]
    for thread in threads:
        thread.start()
    barrier.wait()
    started = time.monotonic()
    for thread in threads:
        thread.join()
    seconds = time.monotonic() - started
    store = Store(url)
    with store.engine.connect() as conn:
        stored, distinct = conn.execute(text(
            "SELECT count(*), count(DISTINCT (run_id, t)) FROM samples WHERE run_id = ANY(:r)"),
            {"r": runs}).one()
    for run in runs:
        store.delete_run(run)
    store.close()
    return seconds, int(stored), int(stored) - int(distinct)


def main() -> None:
    workdir = tempfile.mkdtemp(prefix="vb-bench-pg.")
    script = str(REPO / "scripts" / "postgres.sh")
    url = subprocess.run(["bash", script, "start", workdir], check=True, capture_output=True,
                         text=True).stdout.strip()
    rows = []
    try:
        Store(url).close()  # schema created once, before the writers race
        for writers in (1, WRITERS, WRITERS, 1):
            seconds, stored, dups = one_round(url, writers)
            rows.append((writers, seconds, stored, dups))
            print(f"{writers} writers: {stored} samples in {seconds:.2f} s, {dups} duplicated",
                  flush=True)
    finally:
        subprocess.run(["bash", script, "stop", workdir], check=False)
        shutil.rmtree(workdir, ignore_errors=True)
    rate = {n: statistics.median(TOTAL / s for w, s, _, _ in rows if w == n)
            for n in (1, WRITERS)}
    lost = sum(TOTAL - stored for _, _, stored, _ in rows)
    dups = sum(d for *_, d in rows)
    body = (
        f"{WRITERS} writer threads, each with its own store connection and run, one transaction "
        f"per trial of {PER_TRIAL} per-request samples; {TOTAL:,} samples per round; reference: "
        f"one writer, same samples. Order 1, {WRITERS}, {WRITERS}, 1; private PostgreSQL "
        f"(unix socket, fsync off); load average at the end: {os.getloadavg()[0]:.1f} on "
        f"{os.cpu_count()} CPUs.\n\n"
        "| writers | seconds | samples stored | lost | duplicated | samples/s |\n"
        "|---:|---:|---:|---:|---:|---:|\n"
        + "".join(f"| {w} | {s:.2f} | {st:,} | {TOTAL - st} | {d} | {TOTAL / s:,.0f} |\n"
                  for w, s, st, d in rows)
        + f"\n{WRITERS} writers / 1 writer, samples/s (medians): "
        f"{rate[WRITERS] / rate[1]:.2f}. Lost over all rounds: {lost}; duplicated: {dups} "
        f"(floor: zero of each over ≥ 100,000).\n")
    print(body)
    record("fleet: PostgreSQL under 50 concurrent writers",
           ".venv/bin/python benchmarks/fleet_pg_writers.py", body)


if __name__ == "__main__":
    main()
