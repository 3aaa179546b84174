"""Closed model maximum throughput on one cached 1 KB page: virtbench's generator vs
`wrk -t2 -c32` on the same URL (floor: ≥ 80 % of wrk).

Both run for the same time against the same Varnish; the cache is warm. virtbench's generator
runs as its own process with 32 users (`python -m virtbench.loadgen`).
Run: `.venv/bin/python benchmarks/web_closed_model.py`.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.record import record
from virtbench.labs.web import WebLab
from virtbench.loadgen import LoadConfig
from virtbench.loadgen.records import read_records, summarise
from virtbench.targets.local import LocalTarget

DURATION_S = 5


def wrk_rate(url: str) -> float:
    out = subprocess.run(["wrk", "-t2", "-c32", f"-d{DURATION_S}s", url], check=True,
                         capture_output=True, text=True).stdout
    match = re.search(r"Requests/sec:\s+([\d.]+)", out)
    assert match, out
    return float(match.group(1))


def main() -> None:
    root = Path(tempfile.mkdtemp(prefix="vbweb-bench-"))
    root.chmod(0o755)
    os.environ["VIRTBENCH_LAB_ROOT"] = str(root / "labs")
    lab = WebLab(WebLab.Params(sites=1, pages_per_site=1, page_bytes=1024), root, LocalTarget())
    try:
        lab.up()
        state = lab.enter("bench", {"cache_storage": "malloc", "cache_size": "64M"})
        url = state.services["urls"][0]
        subprocess.run(["wrk", "-t1", "-c1", "-d1s", url], check=True, capture_output=True)
        wrk = wrk_rate(url)
        cfg = LoadConfig(model="closed", users=32, duration_s=DURATION_S, urls=[url])
        (root / "closed.json").write_text(cfg.model_dump_json())
        subprocess.run([sys.executable, "-m", "virtbench.loadgen", str(root / "closed.json"),
                        str(root / "closed.jsonl")], check=True, capture_output=True)
        records, _ = read_records(root / "closed.jsonl")
        ours = summarise(records, DURATION_S)
    finally:
        lab.down()
    ratio = 100.0 * ours.achieved_rate / wrk
    load = os.getloadavg()[0]
    body = "\n".join([
        f"One cached 1 KB page through Varnish 7.1 on 127.0.0.1, {DURATION_S} s each; "
        f"load average at the end {load:.2f} (2 cores, shared).",
        "",
        "| generator | throughput | vs wrk | failures | floor (≥ 80 % of wrk) |",
        "|---|---|---|---|---|",
        f"| wrk -t2 -c32 | {wrk:.0f} req/s | 100 % | – | – |",
        f"| virtbench closed model, 32 users (python-asyncio-http1) | {ours.achieved_rate:.0f} "
        f"req/s | {ratio:.1f} % | {ours.failures} | {'met' if ratio >= 80 else 'NOT met'} |",
    ])
    print(body)
    record("web: closed-model throughput", ".venv/bin/python benchmarks/web_closed_model.py",
           body)


if __name__ == "__main__":
    main()
