"""The knee of an HTTP origin of known capacity: the highest open-model arrival rate with
p99 ≤ SLO and no failures, found by a capacity search of web.load within ±10 %.

The origin is slow on purpose (10 workers × 200 ms: 50 req/s) and the SLO leaves 400 ms of
slack: a few tens of milliseconds of scheduling delay on a busy 2-core machine (the suite runs
four lines at once) are small against both, so the knee is the origin's, not the machine's load.
(At 200 req/s with 100 ms of slack, a loaded run of the suite found 165 req/s.)"""

from __future__ import annotations

import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from waits import finish, readline

from virtbench.runner import Runner, RunRecord, build_plan
from virtbench.spec import parse_experiment
from virtbench.store import Store

pytestmark = [pytest.mark.lab, pytest.mark.timeout(600)]

WORKERS = 10
SERVICE_S = 0.2
CAPACITY = WORKERS / SERVICE_S  # 50 requests/s
SLO_S = 3 * SERVICE_S


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def origin() -> Iterator[int]:
    port = _free_port()
    proc = subprocess.Popen([sys.executable, str(Path(__file__).with_name(
        "fixed_capacity_origin.py")), str(port), str(WORKERS), str(SERVICE_S)],
        stdout=subprocess.PIPE)
    try:
        assert readline(proc, 60).strip() == b"ready"
        yield port
    finally:
        proc.terminate()
        finish(proc, 10)


def test_knee_of_a_fixed_capacity_origin(tmp_path: Path, origin: int) -> None:
    text = f"""\
name: web-knee
workloads:
  - name: web.load
    params:
      urls: ["http://127.0.0.1:{origin}/"]
      per_request_samples: false
      timeout_s: 5
      connections: 32
    search:
      load: rate_per_s
      duration: duration_s
      unit: req/s
      lower: 5
      upper: 150
      precision: 0.02
      durations_s: [2, 8]
      pass_if:
        - {{metric: response_time_p99, max: {SLO_S * 1000:g}}}
        - {{metric: failures, max: 0}}
"""
    exp = parse_experiment(text)
    store = Store(str(tmp_path / "s.db"))
    outcome = Runner(build_plan(exp), RunRecord.new(store, text), workdir=tmp_path).run()
    assert outcome.status == "complete", outcome.stop_reason
    found = {s.metric: s.value for s in store.samples(outcome.run_id) if s.t is None}
    trace = [(t["notes"]["search.load"], t["notes"]["search.duration_s"],
              t["notes"]["search.passed"]) for t in store.trials(outcome.run_id)]
    print(f"knee {found.get('capacity')} req/s (capacity {CAPACITY:g}); trace {trace}")
    capacity = found["capacity"]
    assert capacity is not None and abs(capacity - CAPACITY) <= 0.10 * CAPACITY
    # Above capacity a queue grows by (rate - CAPACITY) per second; a d-second trial keeps its
    # p99 under the SLO's 400 ms of slack up to CAPACITY * (1 + 0.4 / d): 20 % over in the 2 s
    # phase, 5 % in the 8 s one. The knee is accepted within 10 %, so the verdict may move by
    # 1.20 * 1.10 between phases on a busy machine.
    assert exp.workloads[0].search is not None
    plan = exp.workloads[0].search.plan()
    shift = (1 + (SLO_S - SERVICE_S) / plan.durations_s[0]) * 1.10
    trials = found["search_trials"]
    assert trials is not None and trials <= plan.trial_budget(shift)
