"""An NDR search through a real path of known capacity: a veth bridge shaped with tc tbf.

gen:g0 ─ veth ─ mid:m0 ┐ br0 ┌ m1 (tbf, RATE) ─ veth ─ sink:s0. 1004 B frames (1000 B without
the FCS, as tbf counts them) at 8 Mbit/s are 1000 frames/s: the search must find that rate
within ±3 % in at most the trials its plan budgets for the verdict shift the buffers
cause between a 1 s and a 4 s trial, with a consistent trace. On the same path, one RFC 9971
multi-goal search finds NDR and PDR together (1 s trials: both near the 1 s trial's 1050
frames/s), with regular results, the stored metrics and a trace that replays to them.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from tbf_path import shaped_bridge_path

from virtbench.runner import Runner, RunRecord, build_plan
from virtbench.runner.search import goal_trace_from_trials, trace_from_trials
from virtbench.search import Search, SearchResult, trace_problems
from virtbench.search.multi import MultiSearch
from virtbench.spec import Experiment, parse_experiment
from virtbench.store import Store

pytestmark = [pytest.mark.lab, pytest.mark.timeout(600)]

FRAME = 1004
RATE_BITS = 8_000_000
NDR_PPS = RATE_BITS / ((FRAME - 4) * 8)  # 1000 frames/s
BURST_B, LIMIT_B = 10_000, 40_000
BUFFERED_FRAMES = (BURST_B + LIMIT_B) / (FRAME - 4)  # 50 frames hide an excess for a while


@pytest.fixture
def shaped_path() -> Iterator[dict[str, str]]:
    # The known capacity: 8 Mbit/s with a bucket of 10 frames and a queue of 40 (a switch
    # port's few), so an excess of 1.25 % overflows them within a final trial, while the
    # jitter of a generator on a busy machine does not.
    with shaped_bridge_path("8mbit", burst=BURST_B, limit=LIMIT_B) as ns:
        yield ns


def _searched(tmp_path: Path, shaped_path: dict[str, str], name: str, search: str
              ) -> tuple[Experiment, Store, str, dict[str, float | None]]:
    """Runs net.packet-rate through the path with the ``search:`` block ``search`` (its lines
    below ``search:``); (experiment, store, run id, the stored scalar values by metric)."""
    text = f"""\
name: {name}
workloads:
  - name: net.packet-rate
    params:
      frame_size: {FRAME}
      sender_ns: {shaped_path["gen"]}
      sender_iface: g0
      receiver_ns: {shaped_path["sink"]}
      receiver_iface: s0
    search:
""" + search
    exp = parse_experiment(text)
    store = Store(str(tmp_path / "s.db"))
    outcome = Runner(build_plan(exp), RunRecord.new(store, text), workdir=tmp_path).run()
    assert outcome.status == "complete", outcome.stop_reason
    found = {s.metric: s.value for s in store.samples(outcome.run_id) if s.t is None}
    return exp, store, outcome.run_id, found


def test_ndr_search_finds_the_tbf_rate(tmp_path: Path, shaped_path: dict[str, str]) -> None:
    exp, store, run_id, found = _searched(tmp_path, shaped_path, "tbf-ndr", """\
      load: rate_pps
      duration: duration_s
      unit: frames/s
      lower: 100
      upper: 10000
      precision: 0.01
      durations_s: [1, 4]
      integer: true
      pass_if:
        - {metric: loss_ratio, max: 0}
      offered: offered_pps
""")
    assert exp.workloads[0].search is not None
    plan = exp.workloads[0].search.plan()
    trace = trace_from_trials(store.trials(run_id), "default", "net.packet-rate")
    # A trial of d seconds passes up to NDR + BUFFERED_FRAMES / d: 1050 frames/s in the 1 s
    # phase, 1012.5 in the 4 s one, so the verdict moves by at most 1050 / 1000 between phases.
    shift = (NDR_PPS + BUFFERED_FRAMES / plan.durations_s[0]) / NDR_PPS
    print(f"NDR {found['capacity']:g} frames/s (upper {found.get('capacity_upper')}), "
          f"{len(trace)} trials, predicted ≤ {plan.predicted_trials()} "
          f"(budget {plan.trial_budget(shift)}): "
          + ", ".join(f"{t.load:g}@{t.duration_s:g}s:{'P' if t.passed else 'F'}" for t in trace))
    capacity = found["capacity"]
    assert capacity is not None and abs(capacity - NDR_PPS) <= 0.03 * NDR_PPS
    assert found["search_trials"] == len(trace) <= plan.trial_budget(shift)
    search = Search(plan)
    search.replay(trace)
    result = search.next()
    assert isinstance(result, SearchResult)
    assert trace_problems(plan, trace, result) == []


def test_ndr_and_pdr_in_one_multi_goal_search(tmp_path: Path,
                                              shaped_path: dict[str, str]) -> None:
    """One RFC 9971 search for NDR (0 %) and PDR (0.5 %) through the same path, 1 s trials.

    A 1 s trial passes the 50 buffered frames beyond the rate: nothing is lost up to 1050
    frames/s, 0.5 % from 1050 / 0.995 = 1055 (benchmarks/capacity_mlrsearch_real.py found
    both within 0.6 % of that model). Duration sum 3 s at exceed ratio 0.5: a load is a bound
    once two of its 1 s trials agree, so the sum and the exceed ratio decide, not one trial.
    """
    goals = [("ndr", 0.0), ("pdr", 0.005)]
    exp, store, run_id, found = _searched(tmp_path, shaped_path, "tbf-ndr-pdr", """\
      load: rate_pps
      duration: duration_s
      unit: frames/s
      lower: 100
      upper: 10000
      integer: true
      offered: offered_pps
      loss: loss_ratio
      goals:
""" + "".join(f"""\
        - {{name: {name}, loss_ratio: {ratio}, exceed_ratio: 0.5, final_trial_duration: 1,
           duration_sum: 3, width: 0.005, initial_trial_duration: 1}}
""" for name, ratio in goals))
    spec = exp.workloads[0].search
    assert spec is not None
    rows = store.trials(run_id)
    trace = goal_trace_from_trials(rows, "default", "net.packet-rate")
    print(", ".join(f"{t.load:g}@{t.duration_s:g}s:{t.loss_ratio:.4f}" for t in trace))
    print({k: v for k, v in found.items() if k.startswith(("ndr", "pdr", "search", "cap"))})
    edge = NDR_PPS + BUFFERED_FRAMES / 1.0  # the last lossless load of a 1 s trial
    for name, ratio in goals:
        lower, upper = found[f"{name}_lower"], found[f"{name}_upper"]
        assert lower is not None and upper is not None and found[f"{name}_regular"] == 1
        assert (upper - lower) / upper <= 0.005 + 1e-9
        assert abs(lower - edge / (1 - ratio)) <= 0.03 * edge, (name, lower)
        throughput = found[f"{name}_throughput"]
        assert throughput is not None and lower * (1 - ratio) <= throughput <= lower
    # The same trials inform both goals, and a load PDR allows more loss at is never lower.
    ndr_lower, pdr_lower = found["ndr_lower"], found["pdr_lower"]
    assert ndr_lower is not None and pdr_lower is not None and pdr_lower >= ndr_lower
    assert found["capacity"] == ndr_lower
    assert all(r["notes"]["search.informs"] == "ndr,pdr" for r in rows)
    assert found["search_trials"] == len(trace) > 0
    assert found["search_seconds"] == pytest.approx(sum(t.duration_s for t in trace))
    # The stored trace replays to the same results (what a resumed run continues from).
    search = MultiSearch(spec.multi_plan())
    search.replay(trace)
    assert search.next() is None
    assert [(r.lower, r.upper) for r in search.results()] == [
        (found[f"{n}_lower"], found[f"{n}_upper"]) for n, _ in goals]
