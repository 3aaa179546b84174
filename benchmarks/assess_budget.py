"""`virtbench assess --budget 2m` on this machine (floors: the whole command finishes within
its budget + 10 %; every measured CPU-flag speedup reaches a 95 % CI half-width ≤ 5 %).
Three assessments one after the other: the machine's load changes, and so does the spread.

Run: .venv/bin/python benchmarks/assess_budget.py
"""

from __future__ import annotations

import json
import os
import time

from _common import temp_dir, virtbench
from record import record

BUDGET_S = 120.0
ASSESSMENTS = 3


def _one(index: int) -> tuple[list[str], bool, bool]:
    db = temp_dir() / "assess.db"
    load_before = os.getloadavg()[0]
    started = time.monotonic()
    data = json.loads(virtbench("assess", "--budget", "2m", "--json", "--store",
                                str(db)).stdout)
    wall = time.monotonic() - started
    within = wall <= BUDGET_S * 1.1
    stop = json.loads(virtbench("report", data["run_id"], "--store", str(db), "-f",
                                "json").stdout)["runs"][0]["stop_reason"]
    rows, precise = [], True
    for effect in sorted(data["effects"], key=lambda e: e["workload"]):
        half = effect["ci_half_width_rel"]
        precise &= half <= 0.05
        rows.append(f"| {index} | {effect['workload']} · {effect['metric']} | {effect['n']} | "
                    f"{effect['speedup']:.3g}× [{effect['ci_low']:.3g}, "
                    f"{effect['ci_high']:.3g}] | {half:.1%} "
                    f"({'meets' if half <= 0.05 else 'misses'}) | {wall:.1f} s "
                    f"({'meets' if within else 'misses'}) | {load_before:.1f} | {stop} |")
    return rows, within, precise


def main() -> None:
    lines = ["| assessment | workload · metric | n per variant | speedup [95 % CI] | CI "
             "half-width / speedup (≤ 5 %) | whole command (≤ 132 s) | load (1 min) before | "
             "runner stop reason |", "|---|---|---|---|---|---|---|---|"]
    within_count = precise_count = 0
    for index in range(1, ASSESSMENTS + 1):
        rows, within, precise = _one(index)
        lines += rows
        within_count += within
        precise_count += precise
    body = "\n".join(lines) + (
        f"\n\nTime floor (whole command ≤ budget + 10 %): met in {within_count} of "
        f"{ASSESSMENTS} assessments.  \n"
        f"Precision floor (every speedup's CI half-width ≤ 5 %): met in {precise_count} of "
        f"{ASSESSMENTS} assessments.  \n"
        f"{os.cpu_count()} cores shared with other work. Within an assessment the two variants "
        "alternate, so each speedup is a ratio measured under the same load; the hardware "
        "paths vary little between trials, the software (table-driven) paths vary with what "
        "else runs, which decides whether the CI converges within the budget. The runner gets the budget less "
        "what the checks spent, 12 s, 5 % and one round; a what-if whose CI is within 4 % stops "
        "and the rest of the time goes to those still wide. x265 joins from --budget 4m "
        "(docs/assess.md).")
    record("assess: --budget 2m", ".venv/bin/python benchmarks/assess_budget.py", body)
    print(body)


if __name__ == "__main__":
    main()
