"""Adaptive stopping on study 000's CRC32C and AES comparisons (floor: CI half-width ≤ 2 % of
the speedup within ≤ 20 repetitions per variant; the study used a fixed 100).

Run: .venv/bin/python benchmarks/engine_adaptive_stopping.py
"""

from __future__ import annotations

import json

from _common import temp_dir, virtbench
from record import record

SPEC = """\
name: bench-adaptive
seed: 11
baseline: default
variants:
  - {name: default, knobs: {cpu_features: []}}
  - {name: tuned, knobs: {cpu_features: [ssse3, sse4.1, sse4.2, aes]}}
workloads:
  - {name: cpu.crc32c, params: {size_mib: 10, loops: 10}}
  - {name: cpu.aes, params: {mode: both, ops: 1000, bulk_mib: 64}}
repetitions: {min: 5, max: 20, target_rel_ci: 0.02, criterion: speedup}
warmup: 1
"""


def main() -> None:
    tmp = temp_dir()
    spec = tmp / "adaptive.yaml"
    spec.write_text(SPEC)
    db = tmp / "adaptive.db"
    virtbench("run", str(spec), "--store", str(db), "--quiet")
    doc = json.loads(virtbench("report", "--store", str(db), "-f", "json").stdout)
    lines = ["| workload · metric | repetitions (default / tuned) | speedup | 95 % CI | "
             "CI half-width / speedup |", "|---|---|---|---|---|"]
    ok = True
    results = {(r["variant"], r["workload"], r["metric"]): r for r in doc["results"]}
    for (variant, workload, metric), row in sorted(results.items()):
        if variant != "tuned":
            continue
        base = results[("default", workload, metric)]
        half = (row["speedup_ci_high"] - row["speedup_ci_low"]) / 2 / row["speedup"]
        ok &= half <= 0.02 and row["n"] <= 20
        lines.append(f"| {workload} · {metric} | {base['n']} / {row['n']} | "
                     f"{row['speedup']:.3g}× | [{row['speedup_ci_low']:.3g}, "
                     f"{row['speedup_ci_high']:.3g}] | {half:.2%} |")
    body = "\n".join(lines) + (
        f"\n\nStop reason: {doc['runs'][0]['stop_reason']}.  \n"
        f"Every speedup within ±2 % in ≤ 20 repetitions: {'yes' if ok else 'NO'}.\n"
        "Spec: min 5, max 20 repetitions, criterion speedup, target 2 % (see the script).\n")
    record("engine: adaptive stopping (study 000 CRC32C and AES)",
           ".venv/bin/python benchmarks/engine_adaptive_stopping.py", body)
    print(body)


if __name__ == "__main__":
    main()
