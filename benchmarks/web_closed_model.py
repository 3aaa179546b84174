"""Closed model maximum throughput on one cached 1 KB page: virtbench's generator vs
`wrk -t2 -c32` on the same URL (floor: ≥ 80 % of wrk).

Three generators, run in alternating rounds against the same warm Varnish (the machine is
shared, so the median of the rounds is reported): plain `wrk -t2 -c32`, virtbench's wrk engine
(32 users, 2 threads, its Lua script: per-thread seeded URL choice, hit counting, latency
percentiles) and virtbench's own Python engine (32 users). Both virtbench engines run as
`python -m virtbench.loadgen`, as the web.load workload runs them.
Run: `.venv/bin/python benchmarks/web_closed_model.py`.
"""

from __future__ import annotations

import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.record import record
from virtbench.labs.web import WebLab
from virtbench.loadgen import LoadConfig
from virtbench.loadgen.records import Summary, read_records, summarise
from virtbench.targets.local import LocalTarget

DURATION_S = 3
ROUNDS = 5


def wrk_rate(url: str) -> float:
    out = subprocess.run(["wrk", "-t2", "-c32", f"-d{DURATION_S}s", url], check=True,
                         capture_output=True, text=True).stdout
    match = re.search(r"Requests/sec:\s+([\d.]+)", out)
    assert match, out
    return float(match.group(1))


def ours(root: Path, cfg: LoadConfig, name: str) -> Summary:
    (root / f"{name}.json").write_text(cfg.model_dump_json())
    subprocess.run([sys.executable, "-m", "virtbench.loadgen", str(root / f"{name}.json"),
                    str(root / f"{name}.jsonl")], check=True, capture_output=True)
    records, meta = read_records(root / f"{name}.jsonl")
    summary = meta.get("summary")
    return Summary(**summary) if isinstance(summary, dict) else summarise(records, DURATION_S)


def main() -> None:
    root = Path(tempfile.mkdtemp(prefix="vbweb-bench-"))
    root.chmod(0o755)
    os.environ["VIRTBENCH_LAB_ROOT"] = str(root / "labs")
    lab = WebLab(WebLab.Params(sites=1, pages_per_site=1, page_bytes=1024), root, LocalTarget())
    rates: dict[str, list[float]] = {"wrk": [], "vb-wrk": [], "vb-python": []}
    failures = {"vb-wrk": 0, "vb-python": 0}
    loads = []
    try:
        lab.up()
        state = lab.enter("bench", {"cache_storage": "malloc", "cache_size": "64M"})
        url = state.services["urls"][0]
        subprocess.run(["wrk", "-t1", "-c1", "-d1s", url], check=True, capture_output=True)
        engine_wrk = LoadConfig(engine="wrk", model="closed", users=32, wrk_threads=2,
                                duration_s=DURATION_S, urls=[url])
        engine_py = LoadConfig(model="closed", users=32, duration_s=DURATION_S, urls=[url])
        for _ in range(ROUNDS):
            loads.append(os.getloadavg()[0])
            rates["wrk"].append(wrk_rate(url))
            s = ours(root, engine_wrk, "vb-wrk")
            rates["vb-wrk"].append(s.achieved_rate)
            failures["vb-wrk"] += s.failures
            s = ours(root, engine_py, "vb-python")
            rates["vb-python"].append(s.achieved_rate)
            failures["vb-python"] += s.failures
    finally:
        lab.down()
        shutil.rmtree(root, ignore_errors=True)
    med = {k: statistics.median(v) for k, v in rates.items()}

    def row(name: str, key: str) -> str:
        ratio = 100.0 * med[key] / med["wrk"]
        raw = ", ".join(f"{r:.0f}" for r in rates[key])
        floor = "–" if key == "wrk" else ("met" if ratio >= 80 else "NOT met")
        fails = "–" if key == "wrk" else str(failures[key])
        return f"| {name} | {med[key]:.0f} req/s | {raw} | {ratio:.1f} % | {fails} | {floor} |"

    body = "\n".join([
        f"One cached 1 KB page through Varnish 7.1 on 127.0.0.1; {ROUNDS} alternating rounds of "
        f"{DURATION_S} s per generator, median shown; load average at the start of each round "
        f"{', '.join(f'{x:.2f}' for x in loads)} (2 cores shared with other developers' jobs, "
        "so absolute rates vary; the ratio is what the floor is about).",
        "",
        "| generator | throughput (median) | rounds (req/s) | vs wrk | failures "
        "| floor (≥ 80 % of wrk) |",
        "|---|---|---|---|---|---|",
        row("wrk -t2 -c32", "wrk"),
        row("virtbench web.load engine wrk, 32 users, 2 threads", "vb-wrk"),
        row("virtbench web.load engine python, 32 users", "vb-python"),
        "",
        "The floor is for the generator's highest-rate path (engine wrk); the Python engine "
        "records every request and is shown for reference.",
    ])
    print(body)
    record("web: closed-model throughput", ".venv/bin/python benchmarks/web_closed_model.py",
           body)


if __name__ == "__main__":
    main()
