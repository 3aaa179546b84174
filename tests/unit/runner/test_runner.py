"""Runner logic with in-process fake workloads (the real ones are tested end to end)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, ClassVar

import pytest

from virtbench.labs.lab_contract import Lab, LabState
from virtbench.model import Better, Measurement, Metric, RunFailed, VirtbenchError
from virtbench.runner import Runner, RunRecord, build_plan
from virtbench.spec import parse_experiment
from virtbench.store import Store, StoreFailed
from virtbench.targets.fake import FakeTarget
from virtbench.workloads.workload_contract import TrialContext, TrialResult, Workload

CALLS: list[tuple[str, str, int]] = []
LAB_EVENTS: list[str] = []


class FakeTime(Workload):
    """Time depends on the variant: 'fast' takes half as long as anything else."""

    name = "test.fake"
    description = "fake"
    metrics = (Metric("time_s", "s", Better.LOWER, "fake time", primary=True),)
    fail_on: ClassVar[set[int]] = set()
    interrupt_at: ClassVar[int | None] = None

    def run(self, ctx: TrialContext) -> TrialResult:
        CALLS.append((ctx.variant, "test.fake", ctx.repetition))
        if FakeTime.interrupt_at is not None and len(CALLS) == FakeTime.interrupt_at:
            raise KeyboardInterrupt
        if len(CALLS) in FakeTime.fail_on:
            raise RuntimeError("tool crashed")
        base = 1.0 if ctx.variant != "fast" else 0.5
        jitter = (ctx.seed % 1000) / 1e6  # tiny, deterministic noise
        return TrialResult([Measurement("time_s", base + jitter)])


class SetUpAndTornDown(Workload):
    """Keeps the context its setup and teardown were given."""

    name = "test.contexts"
    description = "records its setup's and teardown's contexts"
    metrics = (Metric("time_s", "s", Better.LOWER, "fake time", primary=True),)
    seen: ClassVar[dict[str, list[TrialContext]]] = {}

    def setup(self, ctx: TrialContext) -> None:
        SetUpAndTornDown.seen.setdefault("setup", []).append(ctx)

    def run(self, ctx: TrialContext) -> TrialResult:
        return TrialResult([Measurement("time_s", 1.0)])

    def teardown(self, ctx: TrialContext) -> None:
        SetUpAndTornDown.seen.setdefault("teardown", []).append(ctx)


class Undeclared(Workload):
    name = "test.undeclared"
    description = "returns a metric it never declared"
    metrics = (Metric("ok", "s", Better.LOWER, "ok", primary=True),)

    def run(self, ctx: TrialContext) -> TrialResult:
        return TrialResult([Measurement("surprise", 1.0)])


class RecordingLab(Lab):
    name = "test.lab"
    description = "records calls"
    switch_cost = "expensive"

    def up(self) -> None:
        LAB_EVENTS.append("up")

    def enter(self, variant: str, knobs: Mapping[str, Any]) -> LabState:
        LAB_EVENTS.append(f"enter:{variant}")
        return LabState(env={"VB_TEST": variant})

    def leave(self, variant: str) -> None:
        LAB_EVENTS.append(f"leave:{variant}")

    def down(self) -> None:
        LAB_EVENTS.append("down")


@pytest.fixture(autouse=True)
def fakes(fake_plugins: Callable[..., None]) -> None:
    CALLS.clear()
    LAB_EVENTS.clear()
    FakeTime.fail_on = set()
    FakeTime.interrupt_at = None
    SetUpAndTornDown.seen = {}
    fake_plugins(workloads=(FakeTime, Undeclared, SetUpAndTornDown), labs=(RecordingLab,))


def _exp(extra: str = "", reps: str = "3", lab: str = "host") -> tuple[Any, str]:
    text = f"""\
name: runner-test
seed: 7
lab: {{kind: {lab}}}
baseline: slow
variants:
  - {{name: slow}}
  - {{name: fast}}
  - {{name: other}}
workloads: [{{name: test.fake}}]
repetitions: {reps}
warmup: 1
{extra}"""
    return parse_experiment(text), text


def _runner(store: Store, tmp_path: Path, resume: str | None = None,
            calibration: str | None = None, **kw: Any) -> Runner:
    exp, text = _exp(**kw)
    record = (RunRecord.resume(store, resume, text, calibration=calibration) if resume
              else RunRecord.new(store, text, calibration=calibration))
    return Runner(build_plan(exp), record, workdir=tmp_path)


def test_interleaved_rounds_store_every_sample(tmp_path: Path) -> None:
    store = Store(str(tmp_path / "s.db"))
    outcome = _runner(store, tmp_path).run()
    assert outcome.status == "complete"
    measured = [c for c in CALLS if c[2] >= 0]
    # Each round holds every variant once before the next round starts (interleaving).
    for rnd in range(3):
        assert sorted(v for v, _w, r in measured[rnd * 3:(rnd + 1) * 3]) == [
            "fast", "other", "slow"]
        assert {r for _v, _w, r in measured[rnd * 3:(rnd + 1) * 3]} == {rnd}
    assert len(CALLS) == 3 + 9  # one warm-up per variant, then 3 rounds
    assert len(store.samples(outcome.run_id)) == 9
    assert store.run(outcome.run_id).status == "complete"


def test_order_is_randomised_but_reproducible(tmp_path: Path) -> None:
    orders = []
    for attempt in range(2):
        CALLS.clear()
        store = Store(str(tmp_path / f"s{attempt}.db"))
        _runner(store, tmp_path, reps="6").run()
        orders.append(list(CALLS))
    assert orders[0] == orders[1]
    rounds = {tuple(v for v, _w, _r in orders[0][3 + i * 3: 6 + i * 3]) for i in range(6)}
    assert len(rounds) > 1, "every round had the same order: not shuffled"


def test_blocked_order_for_expensive_lab(tmp_path: Path) -> None:
    store = Store(str(tmp_path / "s.db"))
    _runner(store, tmp_path, lab="test.lab").run()
    assert LAB_EVENTS[0] == "up" and LAB_EVENTS[-1] == "down"
    enters = [e for e in LAB_EVENTS if e.startswith("enter:")]
    assert sorted(enters) == ["enter:fast", "enter:other", "enter:slow"]  # one block each
    variants_in_order = [v for v, _w, _r in CALLS]
    blocks = [variants_in_order[i:i + 4] for i in range(0, 12, 4)]
    assert all(len(set(b)) == 1 for b in blocks)


def test_failures_are_recorded_and_run_continues(tmp_path: Path) -> None:
    FakeTime.fail_on = {5}
    store = Store(str(tmp_path / "s.db"))
    outcome = _runner(store, tmp_path).run()
    assert outcome.failures == 1
    failed = [t for t in store.trials(outcome.run_id) if t["status"] == "failed"]
    assert len(failed) == 1 and "tool crashed" in failed[0]["error"]


def test_too_many_failures_abort_and_lab_goes_down(tmp_path: Path) -> None:
    FakeTime.fail_on = {4, 5, 6}
    store = Store(str(tmp_path / "s.db"))
    with pytest.raises(VirtbenchError, match="3 trials failed in a row"):
        _runner(store, tmp_path, lab="test.lab").run()
    assert LAB_EVENTS[-1] == "down"
    assert store.run("latest").status == "failed"


def test_undeclared_metric_is_rejected(tmp_path: Path) -> None:
    text = """\
name: undeclared
workloads: [{name: test.undeclared}]
repetitions: 1
warmup: 0
"""
    store = Store(str(tmp_path / "s.db"))
    outcome = Runner(build_plan(parse_experiment(text)), RunRecord.new(store, text),
                     workdir=tmp_path).run()
    (trial,) = store.trials(outcome.run_id)
    assert trial["status"] == "failed" and "undeclared metrics: surprise" in trial["error"]
    assert store.samples(outcome.run_id) == []


def test_interrupt_keeps_samples_and_resume_completes(tmp_path: Path) -> None:
    store = Store(str(tmp_path / "s.db"))
    FakeTime.interrupt_at = 8  # blocked: (warm-up + 3) + (warm-up + 2), then Ctrl-C
    runner = _runner(store, tmp_path, lab="test.lab")
    with pytest.raises(KeyboardInterrupt):
        runner.run()
    assert LAB_EVENTS[-1] == "down"
    info = store.run("latest")
    assert info.status == "interrupted" and "--resume" in info.stop_reason
    kept = store.samples(info.id)
    assert len(kept) == 5
    FakeTime.interrupt_at = None
    CALLS.clear()
    outcome = _runner(store, tmp_path, lab="test.lab", resume=info.id).run()
    assert outcome.status == "complete"
    samples = store.samples(info.id)
    keys = [(s.variant, s.repetition) for s in samples]
    assert len(samples) == 9 and len(set(keys)) == 9  # nothing lost, nothing twice


def test_resume_refuses_a_different_spec(tmp_path: Path) -> None:
    store = Store(str(tmp_path / "s.db"))
    outcome = _runner(store, tmp_path).run()
    store.set_run_status(outcome.run_id, "interrupted")
    exp, text = _exp(reps="4")
    with pytest.raises(VirtbenchError, match="different experiment file"):
        Runner(build_plan(exp), RunRecord.resume(store, outcome.run_id, text),
               workdir=tmp_path).run()


def test_resume_refuses_an_older_stores_id_outside_the_grammar(tmp_path: Path) -> None:
    """Such an id can be read (report, serve), not resumed: it would name the work directory."""
    import sqlite3

    store = Store(str(tmp_path / "s.db"))
    outcome = _runner(store, tmp_path).run()
    store.set_run_status(outcome.run_id, "interrupted")
    legacy = "../escaped"
    with sqlite3.connect(tmp_path / "s.db") as conn:
        conn.execute("UPDATE runs SET id = ? WHERE id = ?", (legacy, outcome.run_id))
    assert store.run(legacy).id == legacy
    exp, text = _exp()
    work = tmp_path / "work"
    with pytest.raises(VirtbenchError, match="is not a run id"):
        Runner(build_plan(exp), RunRecord.resume(store, legacy, text), workdir=work).run()
    assert not (tmp_path / "escaped").exists() and not work.exists()


def test_adaptive_stops_when_precise(tmp_path: Path) -> None:
    store = Store(str(tmp_path / "s.db"))
    runner = _runner(store, tmp_path,
                     reps="{min: 3, max: 30, target_rel_ci: 0.02}")
    outcome = runner.run()
    assert outcome.stop_reason.startswith("converged")
    assert max(outcome.repetitions.values()) == 3  # noise is far below 2 %


def test_adaptive_budget_is_reported(tmp_path: Path) -> None:
    store = Store(str(tmp_path / "s.db"))
    runner = _runner(store, tmp_path, reps="{min: 2, max: 4, target_rel_ci: 0.0000001}")
    outcome = runner.run()
    assert outcome.stop_reason == "repetition budget (4) spent before convergence"
    assert store.run(outcome.run_id).stop_reason == outcome.stop_reason


@pytest.mark.usefixtures("no_processes")
def test_missing_tool_is_reported_before_anything_runs(tmp_path: Path) -> None:
    text = "name: x\nworkloads: [{name: media.x265}]\n"
    store = Store(str(tmp_path / "s.db"))
    target = FakeTarget(binaries={})  # nothing installed
    with pytest.raises(VirtbenchError, match="install the Debian package 'ffmpeg'"):
        Runner(build_plan(parse_experiment(text)), RunRecord.new(store, text), workdir=tmp_path,
               target=target).run()
    assert store.runs() == []
    assert [c for c in target.calls if c.kind != "run"] == []  # nothing was measured


@pytest.mark.usefixtures("no_processes")
def test_a_command_workload_runs_on_the_experiments_target(tmp_path: Path) -> None:
    """Each trial of exec.command is one timed run on the target (here a FakeTarget: the
    samples are its scripted durations, and no process is started)."""
    text = ("name: x\nseed: 3\nvariants: [{name: a}, {name: b}]\n"
            "workloads: [{name: exec.command, params: {argv: [my-bench, -n, '5']}}]\n"
            "repetitions: 2\nwarmup: 1\n")
    target = FakeTarget().add("my-bench", duration_s=0.125)
    store = Store(str(tmp_path / "s.db"))
    outcome = Runner(build_plan(parse_experiment(text)), RunRecord.new(store, text),
                     workdir=tmp_path, target=target).run()
    assert outcome.status == "complete"
    timed = [c for c in target.calls if c.kind == "run_timed"]
    assert len(timed) == 2 * (2 + 1)  # variants x (repetitions + warm-up)
    assert {c.argv for c in timed} == {("my-bench", "-n", "5")}
    samples = store.samples(outcome.run_id)
    assert len(samples) == 4 and {s.value for s in samples} == {0.125}


def _quiet_host(tmp_path: Path) -> Any:
    """A noise watch on a fake, idle /proc (a few CPU ticks, no processes)."""
    from virtbench.preflight import HostReader, NoiseWatch, RunRegistry

    (tmp_path / "host" / "proc").mkdir(parents=True)
    (tmp_path / "host" / "proc" / "stat").write_text("cpu  10 0 0 90 0 0 0 0 0 0\ncpu0 1\n")
    (tmp_path / "host" / "proc" / "vmstat").write_text("pswpin 0\npswpout 0\n")
    reader = HostReader(tmp_path / "host")
    return NoiseWatch(reader, registry=RunRegistry(tmp_path / "runs", reader), seconds=0.01,
                      between_seconds=0.01, rounds_every_s=0.0)


@pytest.mark.parametrize("lab", ["host", "test.lab"])
def test_noise_checks_before_the_run_between_blocks_and_per_trial(tmp_path: Path,
                                                                  lab: str) -> None:
    store = Store(str(tmp_path / "s.db"))
    exp, text = _exp(lab=lab)
    outcome = Runner(build_plan(exp), RunRecord.new(store, text), workdir=tmp_path,
                     noise=_quiet_host(tmp_path)).run()
    phases = [phase for _id, phase, _t, _d in store.facts(outcome.run_id)]
    preflights = [p for p in phases if p.startswith("preflight")]
    assert preflights[0] == "preflight start"
    # blocked (expensive lab): before each later block; interleaved: before each later round
    assert len(preflights) == 3 and all(
        p.startswith("preflight before " + ("block" if lab == "test.lab" else "round"))
        for p in preflights[1:])
    facts = {p: d for _id, p, _t, d in store.facts(outcome.run_id)}
    assert {c["name"] for c in facts["preflight start"]["checks"]} >= {"steal", "foreign_load"}
    measured = [t for t in store.trials(outcome.run_id) if not t["warmup"]]
    assert all(t["notes"]["noise.foreign_cpu_pct"] == "0.00" for t in measured)


def _interrupted_run(store: Store, tmp_path: Path) -> str:
    FakeTime.interrupt_at = 8
    with pytest.raises(KeyboardInterrupt):
        _runner(store, tmp_path, lab="test.lab").run()
    FakeTime.interrupt_at = None
    CALLS.clear()
    return store.run("latest").id


def _mark_running(store: Store, run_id: str, pid: int) -> None:
    """As the store reads a run whose process ``pid`` (on this host, this boot) runs it."""
    from sqlalchemy import update

    from virtbench.store import schema
    from virtbench.store.liveness import this_owner

    me = this_owner()
    with store.engine.begin() as conn:
        conn.execute(update(schema.runs).where(schema.runs.c.id == run_id).values(
            status="running", ended_at=None, owner_pid=pid, owner_host=me.host,
            owner_boot_id=me.boot_id))


def test_resume_refuses_a_run_whose_process_still_runs_it(tmp_path: Path) -> None:
    """Once `--resume latest` attached to a running run: 41 samples for 30 slots."""
    import subprocess

    store = Store(str(tmp_path / "s.db"))
    run_id = _interrupted_run(store, tmp_path)
    owner = subprocess.Popen(["sleep", "60"])  # the run's process, alive
    try:
        _mark_running(store, run_id, owner.pid)
        assert store.run(run_id).status == "running"
        with pytest.raises(VirtbenchError, match=rf"run {run_id} is still running \(process "
                                                 rf"{owner.pid} on host "):
            _runner(store, tmp_path, lab="test.lab", resume=run_id).run()
        assert CALLS == [] and len(store.samples(run_id)) == 5
    finally:
        owner.kill()
        owner.wait()
    # The process is gone: the run is abandoned, says how to resume, and resumes.
    info = store.run(run_id)
    assert info.status == "abandoned" and info.recorded_status == "running"
    assert info.stop_reason == (f"abandoned (process {owner.pid} on {info.owner_host} is gone)"
                                f" — resume with `virtbench run FILE --resume {run_id}`")
    outcome = _runner(store, tmp_path, lab="test.lab", resume=run_id).run()
    assert outcome.status == "complete"
    keys = [(s.variant, s.repetition) for s in store.samples(run_id)]
    assert len(keys) == 9 and len(set(keys)) == 9


def test_a_reboot_abandons_and_another_host_keeps_a_running_run(tmp_path: Path) -> None:
    import os

    from sqlalchemy import update

    from virtbench.store import schema

    store = Store(str(tmp_path / "s.db"))
    run_id = _interrupted_run(store, tmp_path)
    _mark_running(store, run_id, os.getpid())
    assert store.run(run_id).status == "running"  # this very process: alive
    with store.engine.begin() as conn:
        conn.execute(update(schema.runs).values(owner_boot_id="0-other-boot"))
    assert store.run(run_id).status == "abandoned"  # same pid number, but a reboot since
    with store.engine.begin() as conn:
        conn.execute(update(schema.runs).values(owner_host="elsewhere", owner_pid=1))
    assert store.run(run_id).status == "running"  # cannot be checked from here
    with pytest.raises(VirtbenchError, match="which this host cannot check"):
        _runner(store, tmp_path, lab="test.lab", resume=run_id).run()


def test_of_two_resumers_exactly_one_claims_the_run(store: Store, tmp_path: Path) -> None:
    import threading

    run_id = _interrupted_run(store, tmp_path)
    seen = store.run(run_id)  # both read the run before either claims it
    barrier = threading.Barrier(2)
    claimed: list[bool] = []

    def claim() -> None:
        barrier.wait()
        claimed.append(store.claim_run(seen))

    threads = [threading.Thread(target=claim) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(claimed) == [False, True]
    assert store.run(run_id).status == "running"  # claimed by this (live) process
    with pytest.raises(VirtbenchError, match="is still running"):
        _runner(store, tmp_path, lab="test.lab", resume=run_id).run()


def test_rounds_pause_the_run_resumably_and_the_last_block_completes_it(tmp_path: Path) -> None:
    """run(rounds=1): warm-ups and one round, then 'interrupted' (paused); each resume with
    rounds=1 measures the next round; the call that measures the last round completes it."""
    store = Store(str(tmp_path / "s.db"))
    first = _runner(store, tmp_path).run(rounds=1)
    assert first.paused and first.status == "interrupted"
    assert sorted(r for _v, _w, r in CALLS) == [-1, -1, -1, 0, 0, 0]  # warm-ups + round 1
    info = store.run(first.run_id)
    assert info.status == "interrupted" and info.stop_reason.startswith("paused after 1 ")
    for expected_round, last in ((1, False), (2, True)):
        CALLS.clear()
        outcome = _runner(store, tmp_path, resume=first.run_id).run(rounds=1)
        assert [r for _v, _w, r in CALLS] == [expected_round] * 3  # no warm-up again
        assert outcome.paused is not last
        assert store.run(first.run_id).status == ("complete" if last else "interrupted")
    samples = store.samples(first.run_id)
    assert sorted((s.variant, s.repetition) for s in samples) == sorted(
        (v, r) for v in ("slow", "fast", "other") for r in range(3))  # each once


def test_two_opened_runs_measured_in_alternating_blocks_interleave(tmp_path: Path) -> None:
    """open_run stores a run with nothing measured (interrupted, resumable); runs resumed
    one round at a time in turn have trials interleaved in time, every trial once."""
    store = Store(str(tmp_path / "s.db"))
    ids = [_runner(store, tmp_path, calibration="cal-test").open_run("opened")
           for _ in range(2)]
    for run_id in ids:
        info = store.run(run_id)
        assert info.status == "interrupted" and info.calibration == "cal-test"
        assert store.trials(run_id) == [] and store.variants(run_id)
    for _block in range(3):
        for run_id in ids:
            _runner(store, tmp_path, resume=run_id, calibration="cal-test").run(rounds=1)
    assert [store.run(r).status for r in ids] == ["complete", "complete"]
    timeline = sorted((t["started_at"], t["order_index"], run_id, t["repetition"])
                      for run_id in ids for t in store.trials(run_id) if not t["warmup"])
    by_block = [(run_id, rep) for _t, _o, run_id, rep in timeline]
    # round r of the first run, then round r of the second, for r = 0, 1, 2
    assert [key for key in by_block[::3]] == [(ids[0], 0), (ids[1], 0), (ids[0], 1),
                                              (ids[1], 1), (ids[0], 2), (ids[1], 2)]
    assert all(len(store.samples(r)) == 9 for r in ids)


def test_rounds_in_a_blocked_run_pause_inside_a_variants_block(tmp_path: Path) -> None:
    """An expensive lab runs variant by variant: the limit counts rounds over the variants'
    blocks, a pause ends the call inside the current block (no other variant entered), and
    resumes go on from there to the end."""
    store = Store(str(tmp_path / "s.db"))
    first = _runner(store, tmp_path, lab="test.lab").run(rounds=2)
    assert first.paused and [e for e in LAB_EVENTS if e.startswith("enter:")] == [
        f"enter:{CALLS[0][0]}"]
    assert len(CALLS) == 1 + 2 and LAB_EVENTS[-1] == "down"  # warm-up and 2 of 3 rounds
    calls = 1
    while store.run(first.run_id).status != "complete":
        CALLS.clear()
        _runner(store, tmp_path, lab="test.lab", resume=first.run_id).run(rounds=2)
        assert len([r for _v, _w, r in CALLS if r >= 0]) <= 2  # 2 rounds of one pair each
        calls += 1
        assert calls < 10, "resumes that never complete the run"
    assert calls == 5  # 9 rounds (3 variants x 3), 2 per call
    assert sorted((s.variant, s.repetition) for s in store.samples(first.run_id)) == sorted(
        (v, r) for v in ("slow", "fast", "other") for r in range(3))


class FullDiskStore(Store):
    """A store whose disk fills after ``trials_fit`` trials: every later write fails, the
    run's final status too (as on a disk that stays full)."""

    trials_fit = 4

    def record_trial(self, *args: Any, **kwargs: Any) -> int:
        if self.trials_fit <= 0:
            raise StoreFailed("s.db", "database or disk is full")
        self.trials_fit -= 1
        return super().record_trial(*args, **kwargs)

    def set_run_status(self, run_id: str, status: str, stop_reason: str = "") -> None:
        if status != "running":
            raise StoreFailed("s.db", "database or disk is full")
        super().set_run_status(run_id, status, stop_reason)


def test_a_status_the_full_disk_refuses_is_said_with_the_runs_own_error(
        tmp_path: Path) -> None:
    store = FullDiskStore(str(tmp_path / "s.db"))
    with pytest.raises(RunFailed) as raised:
        _runner(store, tmp_path, lab="test.lab").run()
    said = str(raised.value)
    assert said.startswith(f"run {store.run('latest').id} failed: result store 's.db': "
                           "database or disk is full")
    assert "its status (failed) was not stored either (database or disk is full)" in said
    assert LAB_EVENTS[-1] == "down"  # cleaned up all the same


def test_ctrl_c_stays_ctrl_c_when_the_status_cannot_be_stored(tmp_path: Path) -> None:
    store = FullDiskStore(str(tmp_path / "s.db"))
    store.trials_fit = 100
    FakeTime.interrupt_at = 2
    with pytest.raises(KeyboardInterrupt):
        _runner(store, tmp_path, lab="test.lab").run()
    assert LAB_EVENTS[-1] == "down"


def test_a_complete_run_whose_status_cannot_be_stored_fails_after_cleaning_up(
        tmp_path: Path) -> None:
    store = FullDiskStore(str(tmp_path / "s.db"))
    store.trials_fit = 100
    with pytest.raises(StoreFailed, match="disk is full"):
        _runner(store, tmp_path, lab="test.lab").run()
    assert LAB_EVENTS[-1] == "down"


def test_teardown_gets_the_context_its_setup_got(tmp_path: Path) -> None:
    """Same lab state (env, target), same repetition and seed: the very context object."""
    _exp_unused, text = _exp(lab="test.lab")
    text = text.replace("workloads: [{name: test.fake}]", "workloads: [{name: test.contexts}]")
    store = Store(str(tmp_path / "s.db"))
    Runner(build_plan(parse_experiment(text)), RunRecord.new(store, text),
           workdir=tmp_path).run()
    set_up, torn_down = SetUpAndTornDown.seen["setup"], SetUpAndTornDown.seen["teardown"]
    assert len(set_up) == 3 and len(torn_down) == 3  # one per variant
    by_variant = {ctx.variant: ctx for ctx in set_up}
    for ctx in torn_down:
        assert ctx is by_variant[ctx.variant]
        assert ctx.repetition == -1 and ctx.env["VB_TEST"] == ctx.variant  # its warm-up's


def test_the_lab_is_built_once_in_the_runs_own_work_directory(tmp_path: Path) -> None:
    store = Store(str(tmp_path / "s.db"))
    runner = _runner(store, tmp_path, lab="test.lab")
    lab = runner.lab
    outcome = runner.run()
    assert runner.lab is lab and lab.workdir == tmp_path / outcome.run_id
    assert lab.workdir.is_dir()


def test_resume_refuses_a_run_of_another_calibration(tmp_path: Path) -> None:
    store = Store(str(tmp_path / "s.db"))
    run_id = _runner(store, tmp_path, calibration="cal-one").open_run("opened")
    with pytest.raises(VirtbenchError, match=f"run {run_id} is not a run of calibration "
                                             "cal-two"):
        _runner(store, tmp_path, resume=run_id, calibration="cal-two")
    with pytest.raises(VirtbenchError, match=f"run {run_id} is a calibration run; "
                                             "`virtbench calibrate .* --resume cal-one`"):
        _runner(store, tmp_path, resume=run_id)
    assert store.run(run_id).status == "interrupted"  # validated, never claimed
