"""One build step: from an experiment file to a run, each knob value is judged once, each
workload and the lab are constructed once, each (variant, workload) is realised once — in
`run --check`'s path and in a run's (the CLI's own calls), and for an experiment built in code.
Fake plugins: this is the plan's logic only."""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, ClassVar

import pytest
from pydantic import BaseModel, NonNegativeInt

from virtbench.contract import Knob, Realisation
from virtbench.labs.lab_contract import Lab, LabState
from virtbench.model import Better, Measurement, Metric
from virtbench.runner import Plan, Runner, RunRecord, build_plan, check_experiment
from virtbench.runner.estimate import estimate, human_duration
from virtbench.runner.trial_times import TrialTimes, trial_key
from virtbench.spec import SpecError, load_resolved, parse_experiment
from virtbench.store import Store
from virtbench.targets.target_contract import Target
from virtbench.workloads.workload_contract import TrialContext, TrialResult, Workload

BUILT: Counter[str] = Counter()


class Counted(Workload):
    name = "test.counted"
    description = "counts its constructions and realisations"
    metrics = (Metric("time_s", "s", Better.LOWER, "fake", primary=True),)
    knobs = (Knob("level", "a level", NonNegativeInt),)

    def __init__(self, params: BaseModel | None = None) -> None:
        super().__init__(params)
        BUILT["workload"] += 1

    def realise(self, knobs: Mapping[str, Any]) -> Realisation:
        BUILT[f"realise level={knobs.get('level')}"] += 1
        return Realisation("fake")

    def run(self, ctx: TrialContext) -> TrialResult:
        return TrialResult([Measurement("time_s", 0.5)])


class CountedLab(Lab):
    name = "test.counted-lab"
    description = "counts its constructions"
    knobs = (Knob("size", "a size", int),)
    built_with: ClassVar[list[Path]] = []
    size_limit: ClassVar[int | None] = None

    def __init__(self, params: BaseModel | None, workdir: Path, target: Target) -> None:
        super().__init__(params, workdir, target)
        BUILT["lab"] += 1

    def enter(self, variant: str, knobs: Mapping[str, Any]) -> LabState:
        return LabState()

    def check_variant(self, variant: str, knobs: Mapping[str, Any]) -> list[str]:
        # only the lab's own knobs reach it (not the workload's level)
        assert set(knobs) == {"size"}
        limit = CountedLab.size_limit
        return [f"variant {variant}: size {knobs['size']} too big"] \
            if limit is not None and knobs["size"] > limit else []


EXPERIMENT = """\
name: counted
lab: {kind: test.counted-lab}
variants:
  - {name: a, knobs: {level: 1, size: 10}}
  - {name: b, knobs: {level: 2, size: 20}}
  - {name: c, knobs: {level: 3, size: 30}}
workloads: [{name: test.counted}]
repetitions: 2
warmup: 1
"""


@pytest.fixture(autouse=True)
def fakes(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
          fake_plugins: Callable[..., None]) -> None:
    BUILT.clear()
    fake_plugins(workloads=(Counted,), labs=(CountedLab,))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    judge = Knob.problem

    def counted(self: Knob, value: Any) -> str | None:
        BUILT[f"judge {self.name}={value!r}"] += 1
        return judge(self, value)

    monkeypatch.setattr(Knob, "problem", counted)


def _file(tmp_path: Path) -> Path:
    path = tmp_path / "counted.yaml"
    path.write_text(EXPERIMENT)
    return path


ONCE = {"workload": 1, "lab": 1, **{f"judge level={n}": 1 for n in (1, 2, 3)},
        **{f"judge size={n}": 1 for n in (10, 20, 30)},
        **{f"realise level={n}": 1 for n in (1, 2, 3)}}


def test_a_run_from_a_file_judges_builds_and_realises_everything_once(tmp_path: Path) -> None:
    # What `virtbench run FILE` does: load (resolve), plan, check, run.
    resolved, text = load_resolved(_file(tmp_path))
    runner = Runner(build_plan(resolved), RunRecord.new(Store(str(tmp_path / "s.db")), text),
                    workdir=tmp_path / "work")
    runner.check()
    outcome = runner.run()
    assert outcome.status == "complete" and outcome.trials == 3 * (2 + 1)
    assert dict(BUILT) == ONCE


def test_run_check_from_a_file_judges_builds_and_realises_everything_once(
        tmp_path: Path) -> None:
    # What `virtbench run FILE --check` does; the lab judges each variant's own knobs together
    # with its params (variant c's size here) before anything runs.
    resolved, _ = load_resolved(_file(tmp_path))
    assert check_experiment(build_plan(resolved)) == []
    assert dict(BUILT) == ONCE
    CountedLab.size_limit = 25
    try:
        assert check_experiment(build_plan(resolved)) == ["variant c: size 30 too big"]
    finally:
        CountedLab.size_limit = None


def test_an_experiment_built_in_code_is_planned_once_too(tmp_path: Path) -> None:
    exp = parse_experiment(EXPERIMENT)
    BUILT.clear()  # parsing judged the file's knobs; a code-built experiment starts here
    runner = Runner(build_plan(exp), RunRecord.new(Store(str(tmp_path / "s.db")), EXPERIMENT),
                    workdir=tmp_path / "w")
    runner.run()
    assert dict(BUILT) == ONCE


def test_the_plan_is_immutable() -> None:
    plan = build_plan(parse_experiment(EXPERIMENT))
    with pytest.raises(dataclasses.FrozenInstanceError):
        plan.unrealisable = ()  # type: ignore[misc]
    with pytest.raises(TypeError):
        plan.workloads["x"] = plan.workloads["test.counted"]  # type: ignore[index]
    with pytest.raises(TypeError):
        plan.variants["a"]["level"] = 9  # type: ignore[index]


def test_a_bad_knob_in_code_is_a_listed_problem_and_refuses_the_plan() -> None:
    exp = parse_experiment(EXPERIMENT)
    exp.variants[0].knobs["levle"] = 1
    with pytest.raises(SpecError) as caught:
        build_plan(exp)
    assert any("unknown knob 'levle'" in p for p in caught.value.problems)
    assert any("unknown knob 'levle'" in p for p in check_experiment(exp))


def test_the_estimate_prefers_times_measured_on_this_host(tmp_path: Path) -> None:
    plan: Plan = build_plan(parse_experiment(EXPERIMENT))
    unknown = estimate(plan, TrialTimes({}, tmp_path / "t.json"))
    assert unknown.trials == (9, 9) and unknown.seconds == (0, 0) and not unknown.complete
    key = trial_key("test.counted", {}, {"level": 1, "size": 10})
    times = TrialTimes({key: [2.0, 4.0, 3.0]}, tmp_path / "t.json")
    guess = estimate(plan, times)
    # Variant a measured (median 3 s); b and c have only a's time ("other variants").
    assert guess.seconds == (9 * 3.0, 9 * 3.0) and guess.complete
    assert guess.workloads[0].sources == {"measured on this host",
                                          "measured on this host (other variants)"}


def test_a_run_records_its_trial_times_for_the_next_estimate(tmp_path: Path) -> None:
    resolved, text = load_resolved(_file(tmp_path))
    Runner(build_plan(resolved), RunRecord.new(Store(str(tmp_path / "s.db")), text),
           workdir=tmp_path / "w").run()
    times = TrialTimes.load()
    assert times.path == tmp_path / "cache" / "virtbench" / "trial-times.json"
    for level, size in ((1, 10), (2, 20), (3, 30)):
        measured = times.times[trial_key("test.counted", {}, {"level": level, "size": size})]
        assert len(measured) == 2  # the measured repetitions, not the warm-up
    assert estimate(build_plan(resolved), times).complete


@pytest.mark.parametrize("content", ["", "[]", "{\"k\": \"x\"}", "{\"k\": [1e999, -1, true]}",
                                     "{" * 100_000, "\xff\xfe"])
def test_a_damaged_trial_times_file_is_ignored(tmp_path: Path, content: str) -> None:
    path = tmp_path / "t.json"
    path.write_bytes(content.encode("utf-8", "surrogateescape") if content != "\xff\xfe"
                     else b"\xff\xfe")
    assert TrialTimes.load(path).times == {}


def test_study_000s_video_protocol_is_estimated_at_about_44_hours() -> None:
    examples = Path(__file__).parents[3] / "examples"
    resolved, _ = load_resolved(examples / "study-000-video.yaml")
    guess = estimate(build_plan(resolved), TrialTimes({}, Path("/nonexistent/t.json")))
    assert guess.trials == (1600, 1600)
    low, high = guess.seconds
    assert human_duration((low + high) / 2) == "44 h"


def test_the_plan_says_the_most_repetitions_once_for_both_rules() -> None:
    fixed = build_plan(parse_experiment(EXPERIMENT))
    assert fixed.adaptive is None and fixed.max_repetitions == 2
    assert fixed.trials_per_pair() == (2 + 1, 2 + 1)
    adaptive = build_plan(parse_experiment(EXPERIMENT.replace(
        "repetitions: 2", "repetitions: {min: 3, max: 7, target_rel_ci: 0.05}")))
    assert adaptive.adaptive is not None and adaptive.max_repetitions == 7
    assert adaptive.trials_per_pair() == (3 + 1, 7 + 1)
