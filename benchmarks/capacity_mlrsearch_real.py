"""One RFC 9971 multi-goal search against two RFC 2544-style binary searches on REAL paths.

NDR (loss ratio 0) and PDR (0.5 %) at 0.5 % width, the same comparison as
benchmarks/capacity_mlrsearch_cost.py makes on simulated devices, here with net.packet-rate's
real trials (trafgen, tbf-shaped sender, loss from both ends' interface counters) on two paths:
- shaped: the capacity lab's tbf path (tests/lab/capacity/tbf_path.py: a bridge between
  namespaces, tbf 8 Mbit/s with a 10-frame bucket and a 40-frame queue), 1004 B frames, loads
  100–10 000 frames/s. Reference: the shaper's model for a trial of d seconds, which passes the
  buffered 50 frames beyond the rate: NDR = R + 50 / d, PDR = (R + 50 / d) / (1 − 0.005), with
  R = 1000 frames/s (the shaped rate); beside it the shaped rate itself.
- OVS-DPDK: the vswitch lab's ovs-dpdk switch (af_packet ports, PMD on CPU 1), 64 B frames,
  loads 1000–200 000 frames/s. No model: the reference is a long fine search, a binary search
  of each goal to 0.1 % width at the same final duration, run right after the compared ones.
Two goal settings, each against the binary searches of its own final duration (shorter than the
RFC's 60 s to keep each path short: ~4 minutes on the shaped path, 16 on OVS-DPDK beside five
other sessions, where its noisy trials left CSIT's goals undecided for 181 trials):
- "RFC 2544 goals": final trial 2 s, duration sum 2 s, exceed ratio 0, initial trials 1 s.
- "CSIT goals": final trial 1 s, duration sum 21 s, exceed ratio 0.5, initial trials 1 s.
The binary search: one final-duration trial per load, linear bisection from the range's ends
until (upper − lower) / upper ≤ width, the result its highest passing load. Both searches judge
a trial the way the runner does (runner/search.py): a low-loss trial counts only if the load
was really offered (offered_pps within 1 % below the asked load), a high-loss one only if not
overshot; an inconclusive trial is repeated once, then counts as high loss and as a trial the
generator limited (reported per search). Measured: trials, trial-seconds (the durations the
searches asked for), wall time, and whether each result lies within the width of the
reference: |found − reference| ≤ 0.005 × reference.
Run as root: `sudo .venv/bin/python benchmarks/capacity_mlrsearch_real.py [shaped|ovs-dpdk]...`
(both paths when none is named; each records its own section).
"""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests" / "lab" / "capacity"))

from tbf_path import shaped_bridge_path  # noqa: E402

from benchmarks.record import record  # noqa: E402
from virtbench.labs.net.vswitch import VSwitchLab  # noqa: E402
from virtbench.search.goals import Goal  # noqa: E402
from virtbench.search.multi import MultiPlan, MultiSearch  # noqa: E402
from virtbench.search.spec import SearchSpec  # noqa: E402
from virtbench.services import Services  # noqa: E402
from virtbench.targets.local import LocalTarget  # noqa: E402
from virtbench.workloads.net.packet_rate import PacketRate  # noqa: E402
from virtbench.workloads.workload_contract import TrialContext  # noqa: E402

WIDTH, FINE_WIDTH, PDR_LOSS = 0.005, 0.001, 0.005
SETTINGS = {
    "RFC 2544 goals (2 s trials, 2 s sum, exceed 0), 1 s initial trials": (2.0, 2.0, 0.0, 1.0),
    "CSIT goals (1 s trials, 21 s sum, exceed 0.5)": (1.0, 21.0, 0.5, 1.0),
}
"""(final trial duration, duration sum, exceed ratio, initial trial duration) per setting."""
SHAPED_PPS, SHAPED_BUFFER = 1000.0, 50.0
"""The tbf path's rate (8 Mbit/s of 1000 B frames as tbf counts them) and the frames its
bucket (10) and queue (40) pass beyond it in a trial."""
PMD_SLEEP_US = 500
"""OVS-DPDK's pmd-maxsleep, as the lab tests use (tests/lab/net/dpdk.py): an idle PMD sleeps."""


@dataclass
class Tally:
    """What one search cost: trials, asked trial-seconds, wall time, generator-limited trials."""

    trials: int = 0
    seconds: float = 0.0
    wall_s: float = 0.0
    limited: int = 0
    shortfalls: list[float] = field(default_factory=list)


@dataclass
class RealPath:
    """Runs one trial of net.packet-rate at a load and duration on a real path."""

    params: dict[str, object]
    services: Services
    workdir: Path
    spec: SearchSpec
    workload: PacketRate = field(init=False)
    count: int = 0

    def __post_init__(self) -> None:
        self.workload = PacketRate(PacketRate.Params.model_validate(self.params))

    def loss(self, load: float, duration: float, ratios: list[float], tally: Tally) -> float:
        """The trial's loss ratio, judged as the runner judges a goal search's trial."""
        self.workload.params = PacketRate.Params.model_validate(
            {**self.params, "rate_pps": int(load), "duration_s": duration})
        tally.trials += 1
        tally.seconds += duration
        for _attempt in range(self.spec.retries + 1):
            self.count += 1
            ctx = TrialContext(target=LocalTarget(), variant="v", knobs={},
                               workdir=self.workdir, repetition=self.count, seed=1,
                               services=self.services)
            result = self.workload.run(ctx)
            values = {m.metric: m.value for m in result.measurements
                      if m.t is None and m.value is not None}
            loss = min(1.0, max(0.0, values.get("loss_ratio", 1.0)))
            low, high = loss <= max(ratios), loss > min(ratios)
            if (not low or self.spec.conclusive(True, load, values)) \
                    and (not high or self.spec.conclusive(False, load, values)):
                return loss
        tally.limited += 1
        tally.shortfalls.append(values.get("generator_shortfall", 1.0))
        return 1.0


def multi(path: RealPath, plan: MultiPlan) -> tuple[list[float | None], Tally]:
    tally, search = Tally(), MultiSearch(plan)
    ratios = [g.loss_ratio for g in plan.goals]
    started = time.monotonic()
    while (step := search.next()) is not None:
        search.record(path.loss(step.load, step.duration_s, ratios, tally))
    tally.wall_s = time.monotonic() - started
    return [r.lower for r in search.results()], tally


def binary(path: RealPath, goal: Goal, lower: float, upper: float, width: float
           ) -> tuple[float | None, Tally]:
    """RFC 2544-style: the highest passing load of a linear bisection to ``width``."""
    tally, started = Tally(), time.monotonic()

    def passes(load: float) -> bool:
        loss = path.loss(load, goal.final_trial_duration, [goal.loss_ratio], tally)
        return loss <= goal.loss_ratio

    found: float | None
    if passes(upper):
        found = upper
    elif not passes(lower):
        found = None
    else:
        lo, hi = lower, upper
        while hi - lo > max(width * hi, 1.0):
            mid = float(round((lo + hi) / 2))
            if passes(mid):
                lo = mid
            else:
                hi = mid
        found = lo
    tally.wall_s = time.monotonic() - started
    return found, tally


def shaped_reference(goal: Goal) -> float:
    edge = SHAPED_PPS + SHAPED_BUFFER / goal.final_trial_duration
    return edge / (1.0 - goal.loss_ratio)


def within(found: float | None, reference: float) -> str:
    if found is None:
        return "none found"
    ok = abs(found - reference) <= WIDTH * reference
    return f"{'yes' if ok else 'no'} ({found / reference - 1:+.2%})"


def _cell(found: float | None, reference: float | None) -> str:
    if found is None:
        return "none"
    if reference is None:
        return f"{found:g} (no reference)"
    return f"{found:g} / {within(found, reference)}"


def _limited(t: Tally) -> str:
    if not t.limited:
        return "0"
    return f"{t.limited} (shortfall up to {max(t.shortfalls):.1%})"


def compare(path: RealPath, lower: float, upper: float,
            reference: Callable[[Goal, RealPath], tuple[float | None, str]]) -> list[str]:
    """The table rows of every setting on one path."""
    rows = []
    for setting, (final, dursum, exceed, initial) in SETTINGS.items():
        goals = (Goal("ndr", 0.0, exceed, final, dursum, WIDTH, initial),
                 Goal("pdr", PDR_LOSS, exceed, final, dursum, WIDTH, initial))
        lowers, mt = multi(path, MultiPlan(lower, upper, goals, integer=True))
        found = [binary(path, g, lower, upper, WIDTH) for g in goals]
        refs = [reference(g, path) for g in goals]
        bt = Tally(sum(t.trials for _, t in found), sum(t.seconds for _, t in found),
                   sum(t.wall_s for _, t in found), sum(t.limited for _, t in found),
                   [s for _, t in found for s in t.shortfalls])
        for name, t, results, ratio in (
                ("one multi-goal", mt, lowers, f"{mt.seconds / bt.seconds:.2f}"),
                ("two binary", bt, [f for f, _ in found], "")):
            cells = " | ".join(_cell(r, ref) for r, (ref, _) in zip(results, refs, strict=True))
            rows.append(f"| {setting} | {name} | {t.trials} | {t.seconds:g} | {ratio} | "
                        f"{t.wall_s:.0f} s | {_limited(t)} | {cells} |")
            print(rows[-1], flush=True)
        rows.append(f"| {setting} | reference | | | | | | "
                    + " | ".join(f"{ref:g} ({how})" if ref is not None else f"none ({how})"
                                 for ref, how in refs) + " |")
        print(rows[-1], flush=True)
    return rows


def _header(what: str) -> list[str]:
    return [what, "",
            "| setting | search | trials | trial-seconds | multi / binary trial-seconds | wall "
            "time | trials the generator limited | NDR found / within width of the reference "
            "| PDR found / within width of the reference |",
            "|---|---|---:|---:|---:|---:|---:|---|---|"]


def _spec(lower: float, upper: float) -> SearchSpec:
    return SearchSpec(load="rate_pps", duration="duration_s", lower=lower, upper=upper,
                      integer=True, offered="offered_pps", pass_if=[{"metric": "loss_ratio",
                                                                      "max": 0}])


def shaped(workdir: Path) -> None:
    lower, upper = 100.0, 10_000.0
    with shaped_bridge_path("8mbit", burst=10_000, limit=40_000, tag="mr") as ns:
        path = RealPath({"frame_size": 1004, "sender_ns": ns["gen"], "sender_iface": "g0",
                         "receiver_ns": ns["sink"], "receiver_iface": "s0"}, Services(),
                        workdir, _spec(lower, upper))
        rows = compare(path, lower, upper, lambda g, _p: (
            shaped_reference(g), f"tbf model; shaped rate {SHAPED_PPS / (1 - g.loss_ratio):g}"))
    _finish("shaped", "a tbf-shaped bridge path between namespaces (1004 B frames, 8 Mbit/s = "
            "1000 frames/s, 50 frames of bucket and queue), loads 100–10 000 frames/s", rows)


def ovs_dpdk(workdir: Path) -> None:
    lower, upper = 1000.0, 200_000.0
    lab = VSwitchLab(VSwitchLab.Params(dpdk_pmd_max_sleep_us=PMD_SLEEP_US), workdir,
                     LocalTarget())
    try:
        lab.up()
        state = lab.enter("dpdk", {"switch": "ovs-dpdk", "background_mbps": 0})
        path = RealPath({"frame_size": 64}, state.services, workdir, _spec(lower, upper))

        def fine(goal: Goal, p: RealPath) -> tuple[float | None, str]:
            found, t = binary(p, goal, lower, upper, FINE_WIDTH)
            return found, (f"binary search to {FINE_WIDTH:.1%}, {t.trials} trials, "
                           f"{t.limited} generator-limited")
        rows = compare(path, lower, upper, fine)
    finally:
        lab.down()
    _finish("ovs-dpdk", "OVS-DPDK (the vswitch lab, af_packet ports, PMD on CPU 1 sleeping "
            f"up to {PMD_SLEEP_US} µs when idle), 64 B frames, loads 1000–200 000 frames/s",
            rows)


def _finish(name: str, what: str, rows: list[str]) -> None:
    load = os.getloadavg()
    body = "\n".join([*_header(f"Path: {what}. Machine load average at the end: "
                               f"{load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f}."), *rows])
    record(f"capacity: RFC 9971 multi-goal search vs two binary searches ({name} path)",
           f"sudo .venv/bin/python benchmarks/capacity_mlrsearch_real.py {name}", body)


@contextlib.contextmanager
def _workdir() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="vb-mlr-") as name:
        os.environ.setdefault("VIRTBENCH_LAB_ROOT", str(Path(name) / "labs"))
        yield Path(name)


def main() -> None:
    chosen = sys.argv[1:] or ["shaped", "ovs-dpdk"]
    runs = {"shaped": shaped, "ovs-dpdk": ovs_dpdk}
    unknown = [c for c in chosen if c not in runs]
    if unknown:
        raise SystemExit(f"unknown path {', '.join(unknown)} (paths: {', '.join(runs)})")
    for name in chosen:
        with _workdir() as workdir:
            runs[name](workdir)


if __name__ == "__main__":
    main()
