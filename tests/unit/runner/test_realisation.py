"""The runner realises each (variant, workload) once, hands it whole to the trial and stores it;
a lab gets only the knobs it declares. Fake plugins: this is the runner's logic only."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, ClassVar

import pytest
from pydantic import NonNegativeInt

from virtbench.contract import Knob, Realisation
from virtbench.labs.lab_contract import Lab, LabState
from virtbench.model import Better, Measurement, Metric
from virtbench.runner import Runner, RunRecord, build_plan
from virtbench.spec import parse_experiment
from virtbench.store import Store
from virtbench.workloads.workload_contract import TrialContext, TrialResult, Workload


class Masked(Workload):
    name = "test.masked"
    description = "realises a 'level' knob as an environment variable"
    metrics = (Metric("time_s", "s", Better.LOWER, "fake", primary=True),)
    knobs = (Knob("level", "a level", NonNegativeInt),)
    seen: ClassVar[list[tuple[str, Realisation, dict[str, str | None]]]] = []
    realised: ClassVar[list[str]] = []

    def realise(self, knobs: Mapping[str, Any]) -> Realisation:
        Masked.realised.append(str(knobs.get("level")))
        level = str(knobs.get("level", 0))
        return Realisation("level mask", env={"LEVEL": level}, settings={"level": level})

    def run(self, ctx: TrialContext) -> TrialResult:
        Masked.seen.append((ctx.variant, ctx.realisation, dict(ctx.env)))
        return TrialResult([Measurement("time_s", 1.0)])


class SizedLab(Lab):
    name = "test.sized"
    description = "records the knobs it is given"
    knobs = (Knob("size", "a size", int),)
    entered: ClassVar[list[dict[str, Any]]] = []

    def enter(self, variant: str, knobs: Mapping[str, Any]) -> LabState:
        SizedLab.entered.append(dict(knobs))
        caveats = ("emulated: CPU-bound figures are meaningless",) if variant == "b" else ()
        return LabState(env={"LAB": variant}, caveats=caveats)


EXPERIMENT = """\
name: realised
lab: {kind: test.sized}
variants:
  - {name: a, knobs: {level: 1, size: 10}}
  - {name: b, knobs: {level: 2, size: 20}}
workloads: [{name: test.masked}]
repetitions: 3
warmup: 0
"""


@pytest.fixture(autouse=True)
def fakes(fake_plugins: Callable[..., None]) -> None:
    Masked.seen.clear()
    Masked.realised.clear()
    SizedLab.entered.clear()
    fake_plugins(workloads=(Masked,), labs=(SizedLab,))


def test_realised_once_carried_whole_and_stored(tmp_path: Path) -> None:
    store = Store(str(tmp_path / "s.db"))
    runner = Runner(build_plan(parse_experiment(EXPERIMENT)), RunRecord.new(store, EXPERIMENT),
                    workdir=tmp_path)
    outcome = runner.run()
    assert outcome.status == "complete" and len(Masked.seen) == 6
    # Once per variant in the whole run (its pre-run check included), not once per trial.
    assert sorted(Masked.realised) == ["1", "2"]
    for variant, level in (("a", "1"), ("b", "2")):
        given = [(r, env) for v, r, env in Masked.seen if v == variant]
        assert len({id(r) for r, _env in given}) == 1  # the same object every repetition
        realisation, env = given[0]
        assert realisation.settings == {"level": level}
        assert env == {"LAB": variant, "LEVEL": level}
    # The lab never sees the workload's knob.
    assert {tuple(k) for k in SizedLab.entered} == {("size",)}
    stored = {r["variant"]: r for r in store.realisations(outcome.run_id)}
    assert stored["a"]["mechanism"] == "level mask"
    assert stored["a"]["env"] == {"LAB": "a", "LEVEL": "1"}
    assert stored["b"]["settings"] == {"level": "2"}
    # A lab's caveat is stored with the realisation's limitations (the report lists them).
    assert stored["a"]["limitations"] == []
    assert stored["b"]["limitations"] == ["emulated: CPU-bound figures are meaningless"]


def test_an_experiment_built_in_code_is_knob_checked_too(tmp_path: Path) -> None:
    from virtbench.runner.engine import check_experiment

    exp = parse_experiment(EXPERIMENT)
    exp.variants[1].knobs["levle"] = exp.variants[1].knobs.pop("level")
    problems = check_experiment(exp)
    assert ("variants[1].knobs.levle (variant 'b'): unknown knob 'levle'; did you mean "
            "'level'?") in problems[0]


def test_a_version_2_store_gains_the_realisation_environment(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    Store(str(path)).close()
    with sqlite3.connect(path) as conn:  # what a store made before v3 looks like
        conn.execute("ALTER TABLE realisations DROP COLUMN env_json")
        conn.execute("UPDATE schema_version SET version = 2")
    store = Store(str(path))
    run_id = store.create_run(experiment="x", description="", spec_yaml="", spec_path="",
                              seed=1, host="h", target="local", baseline="a", version="0")
    store.add_variants(run_id, [("a", {})], "a")
    store.add_realisation(run_id, "a", "w", "m", {}, [], {"CRC32C_SW_MODE": "force"})
    assert store.realisations(run_id)[0]["env"] == {"CRC32C_SW_MODE": "force"}


class RefusingLab(SizedLab):
    """Enters variant a, refuses b (a guest that never answers, say), as a lab's enter does."""

    name = "test.refusing"
    switch_cost = "expensive"
    downs: ClassVar[int] = 0

    def enter(self, variant: str, knobs: Mapping[str, Any]) -> LabState:
        if variant == "b":
            from virtbench.model import VirtbenchError

            raise VirtbenchError("lab test.refusing, variant b (param image x): the guest's "
                                 "sshd did not answer within 1 s (param boot_timeout_s)")
        return super().enter(variant, knobs)

    def down(self) -> None:
        RefusingLab.downs += 1


def test_a_variant_the_lab_refuses_keeps_the_samples_before_it(
        tmp_path: Path, fake_plugins: Callable[..., None]) -> None:
    fake_plugins(workloads=(Masked,), labs=(RefusingLab,))
    # three variants: at this seed at least one block runs before b's
    text = EXPERIMENT.replace("test.sized", "test.refusing").replace(
        "  - {name: a, knobs: {level: 1, size: 10}}\n  - {name: b, knobs: {level: 2, size: 20}}",
        "  - {name: a, knobs: {level: 1, size: 10}}\n  - {name: b, knobs: {level: 2, size: 20}}"
        "\n  - {name: c, knobs: {level: 3, size: 30}}") + "order: blocked\n"
    store = Store(str(tmp_path / "s.db"))
    runner = Runner(build_plan(parse_experiment(text)), RunRecord.new(store, text),
                    workdir=tmp_path)
    with pytest.raises(Exception, match="boot_timeout_s"):
        runner.run()
    run = store.runs()[-1]
    assert run.status == "failed" and "param boot_timeout_s" in run.stop_reason
    measured = [v for v, _r, _e in Masked.seen]
    assert measured and "b" not in measured
    trials = store.table_rows("trials", run.id)
    samples = store.table_rows("samples", run.id)
    assert len(trials) == len(measured) == 3 * len(set(measured))  # every trial before b kept
    assert len(samples) >= len(trials)
    assert RefusingLab.downs == 1
