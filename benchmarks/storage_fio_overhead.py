"""Floor: fio through virtbench reports bandwidth and IOPS within 5 % of fio run directly.

On a fresh ext4 image from the fs lab (no vm_size limits), runs the same fio command
alternately directly (subprocess + json) and through ``storage.fio`` (lab target, workload,
parser), PAIRS times each, and compares the medians of every pattern's bandwidth and IOPS.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.record import record
from virtbench.labs.storage_lab import StorageLab, StorageParams
from virtbench.targets.local import LocalTarget
from virtbench.workloads.storage.fio import FioWorkload
from virtbench.workloads.workload_contract import TrialContext

PAIRS = int(sys.argv[1]) if len(sys.argv) > 1 else 6
FLOOR = 0.05
PATTERNS = ["seqread", "randread"]


def main() -> None:
    work = Path(tempfile.mkdtemp(prefix="vbfs-bench-"))
    lab = StorageLab(StorageParams(image_size_mib=512), work, LocalTarget())
    lab.up()
    try:
        state = lab.enter("bench", {"filesystem": "ext4"})
        assert state.target is not None
        ctx = TrialContext(target=state.target, variant="bench", knobs={}, workdir=work,
                           repetition=0, seed=1, services=state.services)
        fio = FioWorkload(FioWorkload.Params(patterns=PATTERNS, runtime_s=2, size_mib=128))
        fio.setup(ctx)
        argv = fio.argv(ctx)
        direct: dict[str, list[float]] = {}
        via: dict[str, list[float]] = {}
        def run_direct() -> None:
            out = subprocess.run(argv, capture_output=True, text=True, check=True).stdout
            for job in json.loads(out)["jobs"]:
                stats = job["read"]
                direct.setdefault(f"{job['jobname']}_bandwidth_KiBps", []).append(stats["bw"])
                direct.setdefault(f"{job['jobname']}_iops", []).append(stats["iops"])

        def run_via() -> None:
            for m in fio.run(ctx).measurements:
                if m.metric.endswith(("_bandwidth_KiBps", "_iops")) and m.value is not None:
                    via.setdefault(m.metric, []).append(m.value)

        run_direct()  # warm-up: lays out the file and warms the loop device; not counted
        direct.clear()
        for i in range(PAIRS):
            # ABBA order so a drift in the machine's load hits both sides alike.
            first, second = (run_direct, run_via) if i % 2 == 0 else (run_via, run_direct)
            first()
            second()
        fio.teardown(ctx)
        lab.leave("bench")
    finally:
        lab.down()
        work.rmdir()
    rows = ["| metric | fio direct (median) | via virtbench (median) | difference | floor |",
            "|---|---:|---:|---:|---|"]
    for metric in sorted(direct):
        d, v = statistics.median(direct[metric]), statistics.median(via[metric])
        diff = (v - d) / d
        verdict = "meets" if abs(diff) <= FLOOR else "MISSES"
        rows.append(f"| {metric} | {d:,.0f} | {v:,.0f} | {diff:+.1%} | ±5 %: {verdict} |")
    body = (f"fio {' + '.join(PATTERNS)}, 2 s each, libaio iodepth 16, O_DIRECT, on a fresh "
            f"ext4 image (loop device, direct I/O); {PAIRS} alternating pairs (ABBA order) "
            "after one uncounted warm-up run; "
            f"load average at the end: {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs.\n\n"
            + "\n".join(rows) + "\n")
    body += "\nRaw values in run order (direct | via virtbench):\n\n"
    for metric in sorted(direct):
        body += (f"- {metric}: {', '.join(f'{x:.0f}' for x in direct[metric])} | "
                 f"{', '.join(f'{x:.0f}' for x in via[metric])}\n")
    print(body)
    record("storage: fio overhead", ".venv/bin/python benchmarks/storage_fio_overhead.py", body)


if __name__ == "__main__":
    main()
