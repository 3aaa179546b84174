"""What does one RFC 9971 multi-goal search cost against two RFC 2544-style binary searches?

NDR (loss ratio 0) and PDR (0.5 %) at 0.5 % width, loads 1000–200 000/s, on 1000 random
simulated devices of each kind (tests/unit/search/duts.py: a threshold, loss growing with load,
loss inversion, trials flipped with probability 1–10 %, a buffer of 100–20 000 frames that hides
loss from short trials; capacities log-uniform in 2000–150 000/s). The baseline: for each goal
its own binary search (one final-duration trial per load, linear bisection from the range's
ends, until (upper − lower) / upper ≤ width; the result its highest passing load). Two
multi-goal settings, each against the binary searches of its own final duration:
- "RFC 2544 goals": final trial 10 s, duration sum 10 s, exceed ratio 0 (RFC 9971's RFC 2544
  equivalence but 10 s trials), with initial trials of 10 s (only the sharing of trials between
  the goals differs from the binary searches) and of 1 s.
- "CSIT goals": final trial 1 s, duration sum 21 s, exceed ratio 0.5, initial trials 1 s.
Measured: total trial count and trial-seconds (the simulated trials' durations, so the machine's
load does not matter), and the share of searches whose lower bound / result lies within the
width of the true value: |found − true| ≤ width × true. The true value: the lowest load whose
full-length trial loses more than the goal's loss ratio (inversion: the first onset; flips: the
threshold before flipping). Run: `.venv/bin/python benchmarks/capacity_mlrsearch_cost.py`.
"""

from __future__ import annotations

import math
import random
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests" / "unit" / "search"))

from duts import Dut, buffer, flips, growing, inversion, run_ours, threshold  # noqa: E402

from benchmarks.record import record  # noqa: E402
from virtbench.search.goals import Goal  # noqa: E402
from virtbench.search.multi import MultiPlan  # noqa: E402

DEVICES = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
LOWER, UPPER, WIDTH = 1000.0, 200_000.0, 0.005
SETTINGS = {
    "RFC 2544 goals, 10 s trials only": (10.0, 10.0, 0.0, 10.0),
    "RFC 2544 goals, 1 s initial trials": (10.0, 10.0, 0.0, 1.0),
    "CSIT goals (1 s trials, 21 s sum, exceed 0.5)": (1.0, 21.0, 0.5, 1.0),
}
"""(final trial duration, duration sum, exceed ratio, initial trial duration) per setting."""


def _capacity(rng: random.Random) -> float:
    return math.exp(rng.uniform(math.log(2000.0), math.log(150_000.0)))


KINDS: dict[str, Callable[[random.Random], Dut]] = {
    "threshold": lambda r: threshold(_capacity(r)),
    "growing loss": lambda r: growing(_capacity(r), math.exp(r.uniform(math.log(0.01), 0.0))),
    "loss inversion": lambda r: inversion(_capacity(r)),
    "random flips": lambda r: flips(_capacity(r), r.uniform(0.01, 0.1), r.randrange(1 << 30)),
    "buffer": lambda r: buffer(_capacity(r), math.exp(r.uniform(math.log(100.0),
                                                                 math.log(20_000.0)))),
}


def truth(dut: Dut, goal: Goal) -> float:
    found = dut.truth(goal)
    if found is not None:
        return found
    return float(dut.name.split()[1])  # inversion: the first onset of loss


def binary(dut: Dut, goal: Goal) -> tuple[int, float, float | None]:
    """RFC 2544-style: (trials, trial-seconds, highest passing load or None)."""
    duration, trials = goal.final_trial_duration, 0

    def passes(load: float) -> bool:
        nonlocal trials
        trials += 1
        return dut.loss(load, duration, trials) <= goal.loss_ratio

    if passes(UPPER):
        return trials, trials * duration, UPPER
    lo, hi = LOWER, UPPER
    if not passes(lo):
        return trials, trials * duration, None
    while hi - lo > goal.width * hi:
        mid = (lo + hi) / 2
        if passes(mid):
            lo = mid
        else:
            hi = mid
    return trials, trials * duration, lo


def within(found: float | None, true: float) -> bool:
    return found is not None and abs(found - true) <= WIDTH * true


def main() -> None:
    lines = [f"{DEVICES} random devices per kind; per kind and setting: trials and trial-seconds "
             "summed over all devices (median per device in brackets), and the share of "
             "goal results within 0.5 % of the true value (NDR / PDR).", "",
             "| setting | devices | search | trials | trial-seconds | multi / binary "
             "trial-seconds | NDR within width | PDR within width |",
             "|---|---|---|---:|---:|---:|---:|---:|"]
    started = time.perf_counter()
    for setting, (final, dursum, exceed, initial) in SETTINGS.items():
        goals = (Goal("ndr", 0.0, exceed, final, dursum, WIDTH, initial),
                 Goal("pdr", 0.005, exceed, final, dursum, WIDTH, initial))
        plan = MultiPlan(LOWER, UPPER, goals)
        for kind, make in KINDS.items():
            multi_t: list[int] = []
            multi_s: list[float] = []
            bin_t: list[int] = []
            bin_s: list[float] = []
            hits_multi = [0, 0]
            hits_bin = [0, 0]
            rng = random.Random(f"{setting}/{kind}")
            for _ in range(DEVICES):
                seed = rng.randrange(1 << 30)
                search, results = run_ours(plan, make(random.Random(seed)))
                multi_t.append(len(search.trace))
                multi_s.append(sum(t.duration_s for t in search.trace))
                t_sum, s_sum = 0, 0.0
                for i, goal in enumerate(goals):
                    dut = make(random.Random(seed))  # the same device, its stream afresh
                    true = truth(dut, goal)
                    hits_multi[i] += within(results[i].lower, true)
                    trials, seconds, found = binary(dut, goal)
                    t_sum += trials
                    s_sum += seconds
                    hits_bin[i] += within(found, true)
                bin_t.append(t_sum)
                bin_s.append(s_sum)
            ratio = sum(multi_s) / sum(bin_s)
            for name, t, s, hits, shown in (("one multi-goal", multi_t, multi_s, hits_multi,
                                             f"{ratio:.2f}"),
                                            ("two binary", bin_t, bin_s, hits_bin, "")):
                lines.append(
                    f"| {setting} | {kind} | {name} | {sum(t)} ({statistics.median(t):g}) | "
                    f"{sum(s):g} ({statistics.median(s):g}) | {shown} | "
                    f"{hits[0] / DEVICES:.1%} | {hits[1] / DEVICES:.1%} |")
            print(lines[-2], lines[-1], sep="\n", flush=True)
    lines += ["", f"Simulation wall time: {time.perf_counter() - started:.0f} s (the figures "
              "above are simulated trial time, independent of the machine's load)."]
    record("capacity: RFC 9971 multi-goal search vs two binary searches (simulated devices)",
           "python benchmarks/capacity_mlrsearch_cost.py", "\n".join(lines))


if __name__ == "__main__":
    main()
