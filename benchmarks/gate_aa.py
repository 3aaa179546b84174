"""The regression gate on real runs of this machine (gate issue): A/A false alarms, A/B detection.

    .venv/bin/python benchmarks/gate_aa.py collect STORE [--minutes 32] [--rounds 20]
    .venv/bin/python benchmarks/gate_aa.py analyse STORE

`collect` runs, round after round for at least ``--minutes``, real `virtbench run`s into STORE:
each round one run of each A configuration (`cpu.crc32c` with SSE4.2; `exec.command` running a
fixed CPU loop) and of each planted slowdown (crc32c with SSE4.2 masked: its software path; the
loop 5 % and 10 % longer), in a shuffled order, with a `stress-ng --cpu 1` burst beside some
rounds (other load coming and going) and a pause so the runs spread over the whole time.
`analyse` compares every pair of A runs of one configuration with `--fail-if-worse 2` (the
false-alarm rate: A/A pairs are the same configuration) and every A run against every planted
run (the detection rate), each both ways: today's model (every trial an independent draw) and
with a noise profile (`virtbench calibrate`'s between-run variance) built from the other A runs
of the configuration (never from the two runs compared), and records the figures in
BENCHMARKS.md.
"""

from __future__ import annotations

import argparse
import dataclasses
import random
import re
import subprocess
import sys
import tempfile
import time
from itertools import combinations
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from record import record

REPO = Path(__file__).resolve().parent.parent
VIRTBENCH = str(REPO / ".venv/bin/virtbench")
LOOP = 3_000_000  # iterations of the fixed CPU loop: about 0.1-0.2 s here
GATE_PCT = 2.0
RUNS_PER_SIDE = (3, 5, 10)
DRAWS = 200

CRC = """name: {name}
seed: {seed}
baseline: cpu
variants:
  - {{name: cpu, knobs: {{cpu_features: {features}}}}}
workloads:
  - {{name: cpu.crc32c, params: {{size_mib: 4, loops: 21}}}}
repetitions: 10
warmup: 1
"""
COMMAND = """name: {name}
seed: {seed}
baseline: cpu
variants:
  - {{name: cpu, knobs: {{}}}}
workloads:
  - name: exec.command
    params: {{argv: [python3, -c, "for _ in range({loop}): pass"]}}
repetitions: 10
warmup: 1
"""
CONFIGURATIONS = {  # experiment name -> (A configuration it is measured against, spec)
    "aa-crc32c": ("aa-crc32c", lambda seed: CRC.format(
        name="aa-crc32c", seed=seed, features="[ssse3, sse4.1, sse4.2]")),
    "ab-crc32c-no-sse42": ("aa-crc32c", lambda seed: CRC.format(
        name="ab-crc32c-no-sse42", seed=seed, features="[ssse3, sse4.1]")),
    "aa-loop": ("aa-loop", lambda seed: COMMAND.format(name="aa-loop", seed=seed, loop=LOOP)),
    "ab-loop-5pct": ("aa-loop", lambda seed: COMMAND.format(
        name="ab-loop-5pct", seed=seed, loop=int(LOOP * 1.05))),
    "ab-loop-10pct": ("aa-loop", lambda seed: COMMAND.format(
        name="ab-loop-10pct", seed=seed, loop=int(LOOP * 1.10))),
}


def collect(store: Path, minutes: float, least_rounds: int) -> None:
    rng = random.Random(1)
    work = Path(tempfile.mkdtemp(prefix="vb-gate-aa-"))
    deadline = time.monotonic() + minutes * 60
    rounds = 0
    while time.monotonic() < deadline or rounds < least_rounds:
        started = time.monotonic()
        hog = None
        if rng.random() < 0.4:  # other load comes and goes
            hog = subprocess.Popen(["stress-ng", "--cpu", "1", "--timeout",
                                    f"{rng.randint(10, 40)}s", "--quiet"],
                                   stdin=subprocess.DEVNULL)
        names = list(CONFIGURATIONS)
        rng.shuffle(names)
        for name in names:
            spec = work / f"{name}.yaml"
            spec.write_text(CONFIGURATIONS[name][1](1))  # one file per configuration
            subprocess.run([VIRTBENCH, "run", str(spec), "--store", str(store), "--quiet"],
                           check=True, stdout=subprocess.DEVNULL, timeout=900)
        if hog is not None:
            hog.wait(timeout=120)
        rounds += 1
        print(f"round {rounds}: {time.monotonic() - started:.0f} s", flush=True)
        # Spread the rounds over the whole time.
        time.sleep(max(0.0, minutes * 60 / least_rounds - (time.monotonic() - started)))


def _run_ids(store: Path) -> dict[str, list[str]]:
    from virtbench.store import Store

    st = Store(str(store), create=False)
    try:
        by_experiment: dict[str, list[tuple[float, str]]] = {}
        for run in st.runs():
            if run.status == "complete":
                by_experiment.setdefault(run.experiment, []).append((run.started_at, run.id))
    finally:
        st.close()
    return {name: [i for _, i in sorted(runs)] for name, runs in by_experiment.items()}


def _one_file(run: Any) -> Any:
    return dataclasses.replace(run, spec_yaml=re.sub(r"(?m)^seed: .*$", "seed: 1", run.spec_yaml))


def analyse(store: Path) -> None:
    from virtbench.decide.calibration import build_profile, plan_rows
    from virtbench.decide.compare import compare_runs
    from virtbench.decide.runs import load_run
    from virtbench.store import Store

    st = Store(str(store), create=False)
    ids = _run_ids(store)
    # A profile describes one experiment file; runs of one configuration differ at most in the
    # seed line (collected by an earlier version of this script), which a one-variant
    # experiment does not use: read them as the one file they are.
    loaded = {i: _one_file(load_run(i, lambda: st)) for runs in ids.values() for i in runs}

    def fails(base: str, new: str, a: str, with_profile: bool) -> bool:
        profile = None
        if with_profile:  # from the other A runs: never from the two compared
            others = [loaded[i] for i in ids[a] if i not in (base, new)]
            profile = build_profile(others)
        return bool(compare_runs(loaded[base], loaded[new], fail_pct=GATE_PCT,
                                 profile=profile).regressions)

    def rates(pairs: list[tuple[str, str]], a: str) -> str:
        plain = sum(fails(b, n, a, False) for b, n in pairs)
        profiled = sum(fails(b, n, a, True) for b, n in pairs)
        share = max(1, len(pairs))
        return (f"{plain} ({100 * plain / share:.1f} %) | "
                f"{profiled} ({100 * profiled / share:.1f} %)")

    rows = []
    for a in ("aa-crc32c", "aa-loop"):
        runs = ids.get(a, [])
        pairs = list(combinations(runs, 2))  # the earlier run as BASE, as a pipeline would
        rows.append(f"| {a} (A/A: false alarms) | {len(runs)} | {len(pairs)} | "
                    f"{rates(pairs, a)} |")
    for planted, (a, _spec) in CONFIGURATIONS.items():
        if planted.startswith("aa-"):
            continue
        pairs = [(b, n) for b in ids.get(a, []) for n in ids.get(planted, [])]
        rows.append(f"| {planted} vs {a} (A/B: detections) | {len(ids.get(planted, []))} | "
                    f"{len(pairs)} | {rates(pairs, a)} |")
    # Several runs per side (`compare B1..BR -- N1..NR`: Welch on the run means, the drift
    # measured by the runs themselves): R runs drawn at random per side, disjoint within a
    # draw, DRAWS draws per comparison.
    from virtbench.decide.compare import compare_run_sets

    draw = random.Random(2026)
    per_side = []
    for r in RUNS_PER_SIDE:
        for a, planted in (("aa-crc32c", None), ("aa-loop", None),
                           *[(spec[0], name) for name, spec in CONFIGURATIONS.items()
                             if not name.startswith("aa-")]):
            a_runs, b_runs = ids.get(a, []), ids.get(planted or "", [])
            if len(a_runs) < (r if planted else 2 * r) or (planted and len(b_runs) < r):
                continue
            failed = 0
            for _ in range(DRAWS):
                if planted:
                    base, new = draw.sample(a_runs, r), draw.sample(b_runs, r)
                else:
                    both = draw.sample(a_runs, 2 * r)
                    base, new = both[:r], both[r:]
                failed += bool(compare_run_sets([loaded[i] for i in base],
                                                [loaded[i] for i in new],
                                                fail_pct=GATE_PCT).regressions)
            what = (f"{planted} vs {a} (A/B: detections)" if planted
                    else f"{a} (A/A: false alarms)")
            per_side.append(f"| {what} | {r} | {DRAWS} | {failed} ({100 * failed / DRAWS:.1f} %)"
                            " |")
    plans = []
    for a in ("aa-crc32c", "aa-loop"):
        if len(ids.get(a, [])) < 2:
            continue
        for row in plan_rows(build_profile([loaded[i] for i in ids[a]]), 10, 5.0):
            if "between_sd_pct" not in row:
                continue
            mde = ", ".join(f"R = {d['runs_per_side']}: {d['pct']:.1f} %"
                            for d in row["detectable_pct"])
            detect = row["detect"]
            plans.append(f"| {a} · {row['metric']} | {row['within_sd_pct']:.2f} % | "
                         f"{row['between_sd_pct']:.2f} % | {mde} | "
                         f"{detect['runs_per_side_at_n']} |")
    st.close()
    body = ("Real runs on this machine (`collect`: rounds of every configuration in shuffled "
            "order, a `stress-ng --cpu 1` burst beside about 4 rounds in 10, spread over at "
            "least 30 minutes); each run 10 repetitions + 1 warm-up. Gate: `compare --fail-if-"
            f"worse {GATE_PCT:g}` (one-sided α = 5 %, Holm over the workload's metrics), the "
            "earlier run as BASE; each pair judged with today's model (every trial an "
            "independent draw) and with a noise profile built from the configuration's other A "
            "runs (the between-run variance `virtbench calibrate` estimates).\n\n"
            "| comparison | runs | pairs | gate failed, today's model | gate failed, with the "
            "profile |\n|---|---|---|---|---|\n"
            + "\n".join(rows) + "\n\nA/A rows: false alarms (the goal with the profile: "
            "≤ 5 %); A/B rows: detections.\n\n"
            "What the profile of all A runs says (`virtbench calibrate`'s table: within- and "
            "between-run SD, the minimum detectable effect at n = 10 per run for R runs per "
            "side, and the R needed to detect 5 %; α = 5 % one-sided, power 80 %):\n\n"
            "| configuration · metric | within-run SD | between-run SD | detectable | R for 5 % "
            "|\n|---|---|---|---|---|\n" + "\n".join(plans) + "\n\n"
            f"Several runs per side (`compare B1 … BR -- N1 … NR`, the gate at {GATE_PCT:g} %: "
            "Welch on the run means, so the drift between runs is measured by the runs "
            f"themselves): R runs drawn at random for each side (disjoint), {DRAWS} draws per "
            "row, from the same stored runs:\n\n"
            "| comparison | R per side | draws | gate failed |\n|---|---|---|---|\n"
            + "\n".join(per_side) + "\n")
    print(body)
    record("decide: the gate on real A/A and A/B runs",
           ".venv/bin/python benchmarks/gate_aa.py collect STORE && "
           ".venv/bin/python benchmarks/gate_aa.py analyse STORE", body)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("step", choices=("collect", "analyse"))
    parser.add_argument("store", type=Path)
    parser.add_argument("--minutes", type=float, default=32.0)
    parser.add_argument("--rounds", type=int, default=20, help="at least this many rounds")
    args = parser.parse_args()
    if args.step == "collect":
        collect(args.store, args.minutes, args.rounds)
    else:
        analyse(args.store)


if __name__ == "__main__":
    main()
