"""`virtbench assess --budget 2m` on this machine (floors: the whole command finishes within
its budget + 10 %; every measured CPU-flag speedup reaches a 95 % CI half-width ≤ 5 %).

Run: .venv/bin/python benchmarks/assess_budget.py
"""

from __future__ import annotations

import json
import os
import time

from _common import temp_dir, virtbench
from record import record

BUDGET_S = 120.0


def main() -> None:
    db = temp_dir() / "assess.db"
    load_before = os.getloadavg()[0]
    started = time.monotonic()
    out = virtbench("assess", "--budget", "2m", "--json", "--store", str(db)).stdout
    wall = time.monotonic() - started
    load_after = os.getloadavg()[0]
    data = json.loads(out)
    lines = ["| workload · metric | n per variant | speedup | 95 % CI | CI half-width / speedup "
             "| ≤ 5 % |", "|---|---|---|---|---|---|"]
    precise = True
    for effect in sorted(data["effects"], key=lambda e: e["workload"]):
        half = effect["ci_half_width_rel"]
        precise &= half <= 0.05
        lines.append(f"| {effect['workload']} · {effect['metric']} | {effect['n']} | "
                     f"{effect['speedup']:.3g}× | [{effect['ci_low']:.3g}, "
                     f"{effect['ci_high']:.3g}] | {half:.1%} | "
                     f"{'meets' if half <= 0.05 else 'misses'} |")
    within = wall <= BUDGET_S * 1.1
    report = json.loads(virtbench("report", data["run_id"], "--store", str(db), "-f",
                                  "json").stdout)
    body = "\n".join(lines) + (
        f"\n\nWhole command: {wall:.1f} s for a {BUDGET_S:.0f} s budget "
        f"({wall / BUDGET_S:.0%} of it; floor ≤ 110 %: {'meets' if within else 'misses'}).  \n"
        f"CI half-width floor (≤ 5 % for every speedup): {'meets' if precise else 'misses'}.  \n"
        f"Runner stop reason: {report['runs'][0]['stop_reason']}.  \n"
        f"Load average (1 min) before/after: {load_before:.1f} / {load_after:.1f} on "
        f"{os.cpu_count()} cores shared with other work; the what-if variants alternate in "
        "one run, so each speedup is a ratio measured under the same load.")
    record("assess: --budget 2m", ".venv/bin/python benchmarks/assess_budget.py", body)
    print(body)


if __name__ == "__main__":
    main()
