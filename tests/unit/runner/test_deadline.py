"""The per-trial time limit: real hung processes are killed with their process groups, the trial
is recorded as failed with the reason, and the run goes on."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import pytest

from virtbench.plugins import get_workload
from virtbench.runner import Runner, RunRecord, build_plan
from virtbench.runner import deadline as deadline_module
from virtbench.runner.deadline import TimeLimitExceeded, run_with_time_limit, time_limits
from virtbench.spec import parse_experiment
from virtbench.store import Store
from virtbench.targets.local import LocalTarget
from virtbench.targets.process import Process
from virtbench.targets.target_contract import ProcResult, Target
from virtbench.workloads.workload_contract import TrialContext, TrialResult


def _alive(pid: int, what: str) -> bool:
    """``pid`` still runs ``what`` (a reused PID running something else does not count)."""
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return what in cmdline and state != "Z"


def test_hung_command_is_killed_with_its_children_and_the_run_goes_on(tmp_path: Path) -> None:
    pids = tmp_path / "pids"
    # The shell and a background child both hang; both write their PIDs first.
    script = f'echo $$ >> {pids}; sleep 1000 & echo $! >> {pids}; sleep 1000'
    text = f"""\
name: hung
variants: [{{name: a}}]
workloads:
  - {{name: exec.command, id: hung, timeout_s: 1, params: {{argv: [sh, -c, "{script}"]}}}}
  - {{name: exec.command, id: quick, params: {{argv: ["true"]}}}}
repetitions: 2
warmup: 0
"""
    store = Store(str(tmp_path / "s.db"))
    started = time.monotonic()
    outcome = Runner(build_plan(parse_experiment(text)), RunRecord.new(store, text),
                     workdir=tmp_path).run()
    assert time.monotonic() - started < 60  # not 1000 s
    assert outcome.status == "complete" and outcome.failures == 2
    trials = store.trials(outcome.run_id)
    hung = [t for t in trials if t["workload_id"] == "hung"]
    assert [t["status"] for t in hung] == ["failed", "failed"]
    assert all("time limit 1 s exceeded" in t["error"] for t in hung), hung
    quick = [t for t in trials if t["workload_id"] == "quick"]
    assert [t["status"] for t in quick] == ["ok", "ok"]
    assert len([s for s in store.samples(outcome.run_id) if s.workload_id == "quick"]) == 2
    started_pids = [int(line) for line in pids.read_text().split()]
    assert len(started_pids) == 4  # two trials × (shell + background sleep)
    assert _gone(lambda: [p for p in started_pids if _alive(p, "sleep") or _alive(p, "sh -c")])


def _ctx(tmp_path: Path, target: Target) -> TrialContext:
    return TrialContext(target=target, variant="a", knobs={}, workdir=tmp_path, repetition=0,
                        seed=1)


def test_spawned_process_group_is_killed_at_the_limit(tmp_path: Path) -> None:
    spawned: list[Process] = []

    def waits_forever(ctx: TrialContext) -> TrialResult:
        spawned.append(ctx.target.spawn(["sh", "-c", "sleep 1000 & sleep 1000"]))
        # returns when the watchdog kills the group (the bound: a watchdog that failed; the
        # returncode check below then says so)
        spawned[0].wait(60)
        return TrialResult([])

    with pytest.raises(TimeLimitExceeded, match=r"time limit 0\.5 s exceeded"):
        run_with_time_limit(waits_forever, _ctx(tmp_path, LocalTarget()), 0.5)
    assert spawned[0].returncode == -9
    assert _gone(lambda: _running_in_group(spawned[0].pid))  # the background sleep went too


def _gone(still_running: Callable[[], list[int]]) -> bool:
    """SIGKILL is delivered asynchronously: allow a loaded machine a moment to finish it."""
    deadline = time.monotonic() + 10
    while still_running():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def test_spawned_process_is_killed_outside_the_main_thread(tmp_path: Path) -> None:
    """No SIGALRM off the main thread: a timer thread kills the group instead."""
    outcome: list[BaseException] = []

    def waits_forever(ctx: TrialContext) -> TrialResult:
        ctx.target.spawn(["sleep", "1000"]).wait(60)  # killed by the timer well before
        return TrialResult([])

    def trial() -> None:
        try:
            run_with_time_limit(waits_forever, _ctx(tmp_path, LocalTarget()), 0.5)
        except TimeLimitExceeded as exc:
            outcome.append(exc)

    thread = threading.Thread(target=trial)
    thread.start()
    thread.join(timeout=60)
    assert not thread.is_alive() and len(outcome) == 1


def _running_in_group(pgid: int) -> list[int]:
    """Processes of group ``pgid`` that still run (killed orphans may linger as zombies
    until init reaps them)."""
    running = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (FileNotFoundError, ProcessLookupError):
            continue
        if int(fields[2]) == pgid and fields[0] != "Z":
            running.append(int(stat.parent.name))
    return running


def test_trial_stuck_in_python_is_interrupted(tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(deadline_module, "GRACE_S", 0.1)

    def sleeps(ctx: TrialContext) -> TrialResult:
        time.sleep(1000)
        return TrialResult([])

    started = time.monotonic()
    with pytest.raises(TimeLimitExceeded, match=r"time limit 0\.3 s exceeded"):
        run_with_time_limit(sleeps, _ctx(tmp_path, LocalTarget()), 0.3)
    assert time.monotonic() - started < 30


class _RecordingTarget(LocalTarget):
    def __init__(self) -> None:
        self.timeouts: list[float | None] = []

    def run(self, argv: Sequence[str], *, env: Mapping[str, str | None] | None = None,
            cwd: str | None = None, timeout: float | None = None, input: str | None = None,
            check: bool = True) -> ProcResult:
        self.timeouts.append(timeout)
        return ProcResult(tuple(argv), 0, "", "", 0.0)


def test_commands_get_at_most_the_time_left(tmp_path: Path) -> None:
    target = _RecordingTarget()

    def two_commands(ctx: TrialContext) -> TrialResult:
        ctx.target.run(["a"])  # no timeout of its own: the time left
        ctx.target.run(["b"], timeout=0.01)  # a shorter one of its own is kept
        return TrialResult([])

    run_with_time_limit(two_commands, _ctx(tmp_path, target), 30)
    first, second = target.timeouts
    assert first is not None and 29 < first <= 30
    assert second == 0.01


def test_a_failure_within_the_limit_is_the_workloads_own(tmp_path: Path) -> None:
    def crashes(ctx: TrialContext) -> TrialResult:
        raise RuntimeError("tool crashed")

    with pytest.raises(RuntimeError, match="tool crashed"):
        run_with_time_limit(crashes, _ctx(tmp_path, LocalTarget()), 30)


def test_limits_come_from_the_spec_else_the_workload() -> None:
    exp = parse_experiment("""\
name: limits
workloads:
  - {name: exec.noop, id: a, timeout_s: 30}
  - {name: exec.noop, id: b}
  - {name: net.qos-probe, params: {duration_s: 20}}
""")
    noop = get_workload("exec.noop")
    probe = get_workload("net.qos-probe")
    workloads = {"a": noop(), "b": noop(),
                 "net.qos-probe": probe(probe.Params.model_validate({"duration_s": 20}))}
    assert time_limits(exp.workloads, workloads) == {
        "a": 30, "b": noop.timeout_s, "net.qos-probe": probe.timeout_s + 20}
