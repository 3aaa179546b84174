"""How long until the static web lab is ready (pages generated, nginx and Varnish answering)?
Floor: ≤ 10 s with the study's default origin (3 sites × 100 pages of 2 MB).
Run: `.venv/bin/python benchmarks/web_lab_start.py`.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.record import record
from virtbench.labs.web import WebLab
from virtbench.targets.local import LocalTarget


def main() -> None:
    root = Path(tempfile.mkdtemp(prefix="vbweb-bench-"))
    root.chmod(0o755)
    os.environ["VIRTBENCH_LAB_ROOT"] = str(root / "labs")
    rows = []
    for storage in ("malloc", "file-disk"):
        lab = WebLab(WebLab.Params(disk_dir=root), root, LocalTarget())  # study defaults
        started = time.monotonic()
        try:
            lab.up()
            state = lab.enter(storage, {"cache_storage": storage, "cache_size": "1G"})
            with urllib.request.urlopen(state.services["urls"][0], timeout=30) as resp:
                assert resp.status == 200 and len(resp.read()) == 2_000_000
            ready = time.monotonic() - started
            rows.append((storage, ready, dict(lab.startup_s)))
        finally:
            lab.down()
    shutil.rmtree(root, ignore_errors=True)
    lines = ["Static multisite, study defaults: 3 sites × 100 pages of 2 MB (600 MB generated), "
             "Varnish 1G; ready = first page answered through Varnish.", "",
             "| storage | ready | generate pages | origin up | varnishd up | floor (≤ 10 s) |",
             "|---|---|---|---|---|---|"]
    for storage, ready, parts in rows:
        lines.append(f"| {storage} | {ready:.2f} s | {parts.get('generate', 0):.2f} s | "
                     f"{parts.get('origin', 0):.2f} s | {parts.get('varnish', 0):.2f} s | "
                     f"{'met' if ready <= 10 else 'NOT met'} |")
    body = "\n".join(lines)
    print(body)
    record("web: lab start", ".venv/bin/python benchmarks/web_lab_start.py", body)


if __name__ == "__main__":
    main()
