"""An NDR search through a real path of known capacity: a veth bridge shaped with tc tbf.

gen:g0 ─ veth ─ mid:m0 ┐ br0 ┌ m1 (tbf, RATE) ─ veth ─ sink:s0. 1004 B frames (1000 B without
the FCS, as tbf counts them) at 8 Mbit/s are 1000 frames/s: the search must find that rate
within ±3 % in at most the trials its plan budgets for the verdict shift the buffers
cause between a 1 s and a 4 s trial, with a consistent trace.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from tbf_path import shaped_bridge_path

from virtbench.runner import Runner, RunRecord, build_plan
from virtbench.runner.search import trace_from_trials
from virtbench.search import Search, SearchResult, trace_problems
from virtbench.spec import parse_experiment
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


def test_ndr_search_finds_the_tbf_rate(tmp_path: Path, shaped_path: dict[str, str]) -> None:
    text = f"""\
name: tbf-ndr
workloads:
  - name: net.packet-rate
    params:
      frame_size: {FRAME}
      sender_ns: {shaped_path["gen"]}
      sender_iface: g0
      receiver_ns: {shaped_path["sink"]}
      receiver_iface: s0
    search:
      load: rate_pps
      duration: duration_s
      unit: frames/s
      lower: 100
      upper: 10000
      precision: 0.01
      durations_s: [1, 4]
      integer: true
      pass_if:
        - {{metric: loss_ratio, max: 0}}
      offered: offered_pps
"""
    exp = parse_experiment(text)
    store = Store(str(tmp_path / "s.db"))
    outcome = Runner(build_plan(exp), RunRecord.new(store, text), workdir=tmp_path).run()
    assert outcome.status == "complete", outcome.stop_reason
    found = {s.metric: s.value for s in store.samples(outcome.run_id) if s.t is None}
    assert exp.workloads[0].search is not None
    plan = exp.workloads[0].search.plan()
    trace = trace_from_trials(store.trials(outcome.run_id), "default", "net.packet-rate")
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
