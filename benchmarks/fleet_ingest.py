"""A fleet controller's ingestion of per-request samples, per second: all hosts in one process
(threads, the fleet's former design) against one process per host (forked, its design now).

Each simulated host records TRIALS trials of what web.load hands the runner after a trial of
the python engine: a load generator's records file of REQUESTS requests, read
(`read_records`), turned into per-request measurements (`request_measurements`: response time
and time to first byte, with url/status/cache/worker labels) and stored in one transaction
(`Store.record_trial`) on the host's own store connection — the controller's whole per-sample
work. The records file is written once beforehand (in a real run the host writes it). Stores:
a SQLite file and a private PostgreSQL server (scripts/postgres.sh, fsync off); order per
store: threads, processes, processes, threads. Every round's samples are counted afterwards.

Run: .venv/bin/python benchmarks/fleet_ingest.py
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from _common import REPO
from record import record

from virtbench.loadgen.records import RequestRecord, read_records, write_records
from virtbench.store import Store, TrialRecord
from virtbench.store.store import StoreFailed
from virtbench.targets.forked import ForkedCall, Send
from virtbench.workloads.web.load import request_measurements

HOSTS = 4
TRIALS = 2
REQUESTS = 20_000  # 3.5 s of the python engine at its measured 5,638 req/s (see below)
PATHS = [f"/page/{i}" for i in range(100)]
UNITS = {"response_time": "ms", "time_to_first_byte": "ms"}
# The fastest per-request workload measured on this machine: web.load, python engine, closed
# model, 2 processes (BENCHMARKS.md, "web: closed-model throughput"); two samples per request.
PRODUCER_REQ_S = 5638


def records_file(path: Path) -> None:
    step = 1 / PRODUCER_REQ_S
    write_records(path, (RequestRecord(i, i % 2, i % len(PATHS), i * step, i * step + 1e-5,
                                       i * step + 2e-4, i * step + 3e-4, 200, 1024,
                                       "hit" if i % 10 else "miss", 1)
                         for i in range(REQUESTS)), {"engine": "python"})


def ingest(location: str, records: Path, host: str) -> str:
    """One host's trials, exactly as its runner stores them; returns the run id."""
    store = Store(location)
    try:
        run_id = store.create_run(experiment="ingest", description="", spec_yaml="",
                                  spec_path="", seed=1, host=host, target="bench",
                                  baseline="a", version="bench")
        for rep in range(TRIALS):
            loaded, _ = read_records(records)
            samples = request_measurements(loaded, PATHS)
            now = time.time()
            try:
                store.record_trial(run_id, TrialRecord(
                    variant="a", workload_id="w", repetition=rep, order_index=rep,
                    warmup=False, status="ok", error="", started_at=now, ended_at=now,
                    target="bench", facts_id=None, notes={}), samples, UNITS)
            except StoreFailed as exc:  # counted as lost in the table, not hidden
                print(f"  {host} trial {rep}: {exc}", flush=True)
        return run_id
    finally:
        store.close()


def in_threads(location: str, records: Path) -> list[str]:
    runs: list[str] = []
    threads = [threading.Thread(target=lambda h=h: runs.append(ingest(location, records, h)))
               for h in (f"h{i}" for i in range(HOSTS))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return runs


def in_processes(location: str, records: Path) -> list[str]:
    runs: list[str] = []

    def host(name: str) -> Callable[[Send], None]:
        return lambda send: send({"run": ingest(location, records, name)})

    def got(message: dict[str, Any]) -> None:
        runs.append(str(message["run"]))

    workers = [ForkedCall(host(f"h{i}")) for i in range(HOSTS)]
    for worker in workers:
        worker.listen(got)
    for worker in workers:
        worker.wait()
    return runs


def one_round(location: str, records: Path, mode: str) -> tuple[float, float, int]:
    """(wall s, CPU s of this process and its children, samples stored)."""
    before, started = os.times(), time.monotonic()
    runs = (in_threads if mode == "threads" else in_processes)(location, records)
    wall, after = time.monotonic() - started, os.times()
    store = Store(location)
    stored = sum(store.sample_count(run) for run in runs)
    for run in runs:
        store.delete_run(run)
    store.close()
    return wall, sum(after[:4]) - sum(before[:4]), stored


def main() -> None:
    workdir = Path(tempfile.mkdtemp(prefix="vb-bench-ingest."))
    records = workdir / "records.jsonl"
    records_file(records)
    expected = HOSTS * TRIALS * REQUESTS * 2
    pg_dir = tempfile.mkdtemp(prefix="vb-bench-ingest-pg.")  # postgres must own it
    script = str(REPO / "scripts" / "postgres.sh")
    pg_url = subprocess.run(["bash", script, "start", pg_dir], check=True,
                            capture_output=True, text=True).stdout.strip()
    rows: list[tuple[str, str, float, float, int]] = []
    try:
        for name, location in (("SQLite", str(workdir / "ingest.db")), ("PostgreSQL", pg_url)):
            Store(location).close()  # the schema exists before the writers race
            for mode in ("threads", "processes", "processes", "threads"):
                wall, cpu, stored = one_round(location, records, mode)
                rows.append((name, mode, wall, cpu, stored))
                print(f"{name} {mode}: {stored:,} samples in {wall:.2f} s ({cpu:.2f} s CPU), "
                      f"{stored / wall:,.0f} samples/s", flush=True)
    finally:
        subprocess.run(["bash", script, "stop", pg_dir], check=False)
        shutil.rmtree(pg_dir, ignore_errors=True)
        shutil.rmtree(workdir, ignore_errors=True)
    producer = PRODUCER_REQ_S * 2
    summary = []
    for name in ("SQLite", "PostgreSQL"):
        rate = {mode: statistics.median(expected / w for n, m, w, _, _ in rows
                                        if n == name and m == mode)
                for mode in ("threads", "processes")}
        per_cpu = statistics.median(expected / c for n, m, _, c, _ in rows
                                    if n == name and m == "threads")
        summary.append(
            f"- {name}: one process for all hosts {rate['threads']:,.0f} samples/s "
            f"({rate['threads'] / producer:.1f} × one host's production, "
            f"{per_cpu:,.0f} samples per CPU second); one process per host "
            f"{rate['processes']:,.0f} samples/s ({rate['processes'] / rate['threads']:.2f} × "
            "one process).")
    lost = sum(expected - stored for *_, stored in rows)
    body = (
        f"{HOSTS} hosts × {TRIALS} trials × {REQUESTS:,} requests (2 samples each: "
        f"{expected:,} samples per round), each host on its own store connection; read, "
        "measured and stored as web.load's runner does. Order per store: threads, processes, "
        f"processes, threads; load average at the end: {os.getloadavg()[0]:.1f} on "
        f"{os.cpu_count()} CPUs.\n\n"
        "| store | hosts in | seconds | CPU (s) | samples stored | samples/s |\n"
        "|---|---|---:|---:|---:|---:|\n"
        + "".join(f"| {n} | {'one process' if m == 'threads' else 'a process each'} | "
                  f"{w:.2f} | {c:.2f} | {s:,} | {s / w:,.0f} |\n" for n, m, w, c, s in rows)
        + f"\nFastest per-request producer on this machine: web.load's python engine, "
        f"{PRODUCER_REQ_S:,} req/s = {producer:,} samples/s per host (BENCHMARKS.md, "
        "\"web: closed-model throughput\").\n"
        + "\n".join(summary)
        + f"\n\nSamples lost or extra over all rounds: {lost} (a SQLite writer that waits "
        "longer than the store's 10 s busy timeout for another's transaction loses its "
        "trial: with per-request samples a fleet wants PostgreSQL).\n")
    print(body)
    record("fleet: per-request sample ingestion", ".venv/bin/python benchmarks/fleet_ingest.py",
           body)


if __name__ == "__main__":
    main()
