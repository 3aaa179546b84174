"""`virtbench serve` response times (floors: runs page of a 10,000-run store ≤ 300 ms, median
of 10; a 1,000,000-sample run's first view no slower than `virtbench report -f html` of it, its
second view ≤ 200 ms).

A real server (`virtbench serve`, a separate process) answers real HTTP requests on loopback,
timed by the client from request to last byte. The references are measured in the same run,
alternating with what they are compared with: a static file of the same server beside the runs
page, `virtbench report -f html` (a fresh process, as a user runs it) beside the first view of a
freshly started server.

Run: .venv/bin/python benchmarks/serve_speed.py
"""

from __future__ import annotations

import os
import socket
import statistics
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np
from _common import REPO, temp_dir
from engine_report_scale import fill as fill_million
from record import record

from virtbench.model import Better, Measurement, Metric
from virtbench.store import Store, TrialRecord

RUNS = 10_000
VIRTBENCH = str(REPO / ".venv" / "bin" / "virtbench")
METRICS = [Metric("time_s", "s", Better.LOWER, "t", primary=True)]


def fill_runs(db: str) -> None:
    """10,000 small runs from three hosts and four experiments, as a team's store grows."""
    st = Store(db)
    rng = np.random.default_rng(2)
    for i in range(RUNS):
        run_id = st.create_run(experiment=f"exp-{i % 4}", description=f"nightly {i}",
                               spec_yaml="name: x\n" * 40, spec_path="", seed=i,
                               host=f"host-{i % 3}", target="local", baseline="a",
                               version="b")
        st.add_variants(run_id, [("a", {}), ("b", {})], "a")
        st.add_workload(run_id, "w", "bench.w", 0, {}, METRICS)
        for rep, variant in enumerate(("a", "b")):
            st.record_trial(run_id, TrialRecord(variant, "w", rep, rep, False, "ok", "", 0.0,
                                                1.0, "local", None, {}),
                            [Measurement("time_s", float(v)) for v in rng.normal(1, .02, 3)],
                            {"time_s": "s"})
        st.set_run_status(run_id, "complete", "fixed repetitions (1)")
    st.close()


def _port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def server(db: str) -> Iterator[str]:
    port = _port()
    proc = subprocess.Popen([VIRTBENCH, "serve", "--store", db, "--port", str(port)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(300):
            try:
                get(f"{base}/static/live.js")
                break
            except OSError:
                time.sleep(0.1)
        yield base
    finally:
        proc.terminate()
        proc.wait(30)


def get(url: str) -> float:
    start = time.perf_counter()
    with urllib.request.urlopen(url, timeout=600) as answer:
        answer.read()
    return time.perf_counter() - start


def _ms(values: list[float]) -> str:
    return (f"{statistics.median(values) * 1000:.0f} ms (min {min(values) * 1000:.0f}, "
            f"max {max(values) * 1000:.0f})")


def runs_page(tmp: str) -> str:
    db = f"{tmp}/runs.db"
    fill_runs(db)
    pages: dict[str, list[float]] = {"runs page": [], "runs page, filtered + search": [],
                                     "static file (reference)": []}
    with server(db) as base:
        first = get(f"{base}/runs")
        for _ in range(10):  # alternating, so load on the shared machine hits all alike
            pages["static file (reference)"].append(get(f"{base}/static/live.js"))
            pages["runs page"].append(get(f"{base}/runs"))
            pages["runs page, filtered + search"].append(
                get(f"{base}/runs?experiment=exp-1&host=host-2&q=nightly+1"))
    rows = "\n".join(f"| {name} | {_ms(times)} |" for name, times in pages.items())
    median = statistics.median(pages["runs page"])
    return (f"### Runs page, {RUNS:,} runs in the store (SQLite)\n\n"
            "| request | server response, median of 10 (min, max) |\n|---|---|\n" + rows
            + f"\n\nFirst request after start (sample counts not yet cached): "
            f"{first * 1000:.0f} ms. Floor ≤ 300 ms: "
            f"{'met' if median <= 0.3 else 'NOT met'} ({median * 1000:.0f} ms).\n")


def million(tmp: str) -> str:
    db = f"{tmp}/million.db"
    count = fill_million(db)
    run_id = Store(db).runs()[0].id
    report: list[float] = []
    first: list[float] = []
    second: list[float] = []
    startup: list[float] = []
    for _ in range(3):  # alternating: start-up, report, then a freshly started server's views
        start = time.perf_counter()
        subprocess.run([VIRTBENCH, "--help"], check=True, stdout=subprocess.DEVNULL)
        startup.append(time.perf_counter() - start)
        start = time.perf_counter()
        subprocess.run([VIRTBENCH, "report", run_id, "--store", db, "-f", "html", "-o",
                        f"{tmp}/r.html"], check=True, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
        report.append(time.perf_counter() - start)
        with server(db) as base:
            first.append(get(f"{base}/runs/{run_id}"))
            second.extend(get(f"{base}/runs/{run_id}") for _ in range(10))
    ratio = [f / r for f, r in zip(first, report, strict=True)]
    return (f"### A run of {count:,} samples (SQLite)\n\n"
            "| | wall time, median (min, max) |\n|---|---|\n"
            f"| `virtbench report -f html` (fresh process, reference) | {_ms(report)} |\n"
            f"| first view, freshly started server | {_ms(first)} |\n"
            f"| second view (cached; 10 per round) | {_ms(second)} |\n"
            f"| `virtbench --help` (start-up of a fresh process) | {_ms(startup)} |\n\n"
            f"First view / report, per round: {', '.join(f'{r:.2f}' for r in ratio)} "
            f"(floor ≤ 1: {'met' if max(ratio) <= 1 else 'NOT met'}). Second view floor "
            f"≤ 200 ms: {'met' if statistics.median(second) <= 0.2 else 'NOT met'}. The report "
            "includes a fresh process's start-up (last row); the first view does not, the "
            "server being up.\n")


def main() -> None:
    tmp = str(temp_dir())
    before = os.getloadavg()[0]
    body = runs_page(tmp) + "\n" + million(tmp)
    body += (f"\nLoad average (1 min) on this shared {os.cpu_count()}-core machine: "
             f"{before:.1f} at the start, {os.getloadavg()[0]:.1f} at the end.\n")
    record("serve: response times", ".venv/bin/python benchmarks/serve_speed.py", body)
    print(body)


if __name__ == "__main__":
    sys.exit(main())
