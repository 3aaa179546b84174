"""A yes/no value is not a number: ``repetitions: true`` used to run once (bool is an int in
Python, and pydantic takes it for one). Every number field of the experiment file, the
plugins' parameters included, refuses true/false with a line naming the field; counts are
strictly whole numbers."""

from __future__ import annotations

import types
from typing import Annotated, Any, Union, get_args, get_origin

import pytest
from pydantic import BaseModel

from virtbench.contract import NumbersNotBooleans
from virtbench.spec import SpecError, parse_experiment
from virtbench.spec.models import Experiment

NOOP = "name: t\nworkloads:\n  - name: exec.noop\n"
CRC = "name: t\nworkloads:\n  - name: cpu.crc32c\n"
SEARCH = ("    search: {load: rate, duration: d, unit: x/s, lower: 1, upper: 10, "
          "pass_if: [{metric: m, max: 1}]")


def refusal(text: str) -> str:
    with pytest.raises(SpecError) as info:
        parse_experiment(text, "exp.yaml")
    return str(info.value)


@pytest.mark.parametrize(("text", "line"), [
    (NOOP + "repetitions: true\n", "exp.yaml:4: repetitions: true is a yes/no value"),
    (NOOP + "repetitions: false\n", "exp.yaml:4: repetitions: false is a yes/no value"),
    (NOOP + "warmup: true\n", "exp.yaml:4: warmup: true is a yes/no value"),
    (NOOP + "seed: true\n", "exp.yaml:4: seed: true is a yes/no value"),
    (NOOP + "repetitions: {min: true, max: 5}\n", "exp.yaml:4: repetitions.min: true is"),
    (NOOP + "repetitions: {min: 2, max: true}\n", "exp.yaml:4: repetitions.max: true is"),
    (NOOP + "repetitions: {target_rel_ci: true}\n", "exp.yaml:4: repetitions.target_rel_ci:"),
    (NOOP + "repetitions: {budget_s: true}\n", "exp.yaml:4: repetitions.budget_s: true is"),
    (NOOP + "    timeout_s: true\n", "exp.yaml:4: workloads[0].timeout_s: true is"),
    (NOOP + "    profile: {trials: true}\n", "exp.yaml:4: workloads[0].profile.trials: true"),
    (NOOP + "    profile: {frequency_hz: true}\n", "workloads[0].profile.frequency_hz: true"),
    (NOOP + SEARCH + ", retries: true}\n", "workloads[0].search.retries: true is a yes/no"),
    (NOOP + SEARCH.replace("lower: 1", "lower: true") + "}\n",
     "workloads[0].search.lower: true is a yes/no"),
    (NOOP + SEARCH + ", durations_s: [1, true]}\n",
     "workloads[0].search.durations_s: a yes/no value (true/false) among numbers"),
    (NOOP + SEARCH.replace("max: 1", "max: true") + "}\n",
     "workloads[0].search.pass_if[0].max: true is a yes/no"),
    # a plugin's parameters (contract.Params)
    (CRC + "    params: {size_mib: true}\n", "exp.yaml:4: workloads[0].params.size_mib: true"),
    (CRC + "    params: {loops: false}\n", "exp.yaml:4: workloads[0].params.loops: false"),
])
def test_a_boolean_is_refused_where_a_number_goes(text: str, line: str) -> None:
    assert line in refusal(text)


@pytest.mark.parametrize("value", ["2.0", "'3'", "1e1"])
def test_counts_are_whole_numbers_strictly(value: str) -> None:
    for field in ("repetitions", "warmup", "seed"):
        assert f"exp.yaml:4: {field}: Input should be a valid integer" in refusal(
            NOOP + f"{field}: {value}\n")


def test_numbers_and_yes_no_fields_still_take_their_values() -> None:
    exp = parse_experiment(NOOP + "    profile: true\n    timeout_s: 5\n"
                           "repetitions: 3\nwarmup: 0\nseed: -4\n", "exp.yaml")
    assert (exp.repetitions, exp.warmup, exp.seed) == (3, 0, -4)
    workload = exp.workloads[0]
    assert workload.profile is not None and workload.timeout_s == 5.0


def _models(annotation: Any) -> list[type[BaseModel]]:
    origin = get_origin(annotation)
    if origin in (Annotated, Union, types.UnionType, list, tuple, dict):
        return [m for arg in get_args(annotation) for m in _models(arg)]
    return [annotation] if isinstance(annotation, type) and issubclass(annotation,
                                                                       BaseModel) else []


def test_every_model_of_the_experiment_file_refuses_booleans_for_numbers() -> None:
    """The tests above name fields; this finds every model the file's fields can hold, so a
    new block cannot forget the rule."""
    seen: set[type[BaseModel]] = set()
    todo: list[type[BaseModel]] = [Experiment]
    while todo:
        model = todo.pop()
        if model in seen:
            continue
        seen.add(model)
        for field_info in model.model_fields.values():
            todo += _models(field_info.annotation)
    assert len(seen) >= 8  # Experiment, target, lab, variant, factorial, workload, ...
    assert [m.__name__ for m in seen if not issubclass(m, NumbersNotBooleans)] == []
