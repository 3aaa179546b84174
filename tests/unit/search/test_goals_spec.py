"""The ``goals:`` of a search block: RFC 9971 names, the RFC's constraints, the legacy mapping."""

from __future__ import annotations

import re

import pytest

from virtbench.search.goals import Goal
from virtbench.search.spec import SearchSpec
from virtbench.spec import SpecError, parse_experiment

HEAD = ("name: x\nworkloads:\n  - name: net.router-throughput\n    search:\n"
        "      load: streams\n      lower: 1\n      upper: 64\n      goals:\n"
        "        - {name: ndr, loss_ratio: 0}\n")


@pytest.mark.parametrize(("goal", "words"), [
    ("{name: pdr, loss_ratio: 1}", ["goal 'pdr'", "loss_ratio", "[0, 1)"]),
    ("{name: pdr, loss_ratio: -0.1}", ["goal 'pdr'", "loss_ratio"]),
    ("{name: pdr, exceed_ratio: 1}", ["goal 'pdr'", "exceed_ratio", "[0, 1)"]),
    ("{name: pdr, final_trial_duration: 60, duration_sum: 30}",
     ["goal 'pdr'", "duration_sum", "shorter than final_trial_duration"]),
    ("{name: pdr, loss_ratio: 0.01, width: 0.005}", ["goal 'pdr'", "width", "below"]),
    ("{name: pdr, initial_trial_duration: 5, final_trial_duration: 2, duration_sum: 4}",
     ["goal 'pdr'", "initial_trial_duration", "longer"]),
    ("{name: pdr, width: 0}", ["goal 'pdr'", "width"]),
    ("{name: ndr}", ["two goals have one name"]),
])
def test_goals_breaking_the_rfc_are_refused_naming_goal_field_and_line(
        goal: str, words: list[str]) -> None:
    with pytest.raises(SpecError) as info:
        parse_experiment(HEAD + f"        - {goal}\n", "g.yaml")
    message = str(info.value)
    for word in words:
        assert word in message
    assert re.search(r"g\.yaml:\d+: workloads\[0\]\.search", message)
    assert "Traceback" not in message


def test_goals_exclude_the_bisection_fields() -> None:
    with pytest.raises(SpecError, match="precision: not with goals"):
        parse_experiment(HEAD + "      precision: 0.01\n", "g.yaml")


def test_a_valid_multi_goal_block_parses() -> None:
    spec = parse_experiment(HEAD + "        - {name: pdr, loss_ratio: 0.005}\n", "g.yaml")
    search = spec.workloads[0].search
    assert search is not None
    assert [g.name for g in search.search_goals()] == ["ndr", "pdr"]
    assert search.search_goals()[1].loss_ratio == 0.005


def test_legacy_pass_if_maps_onto_one_goal() -> None:
    spec = SearchSpec.model_validate({"load": "rate", "lower": 1, "upper": 10,
                                      "precision": 0.01, "durations_s": [1, 4],
                                      "pass_if": [{"metric": "loss_ratio", "max": 0}]})
    assert spec.search_goals() == (Goal("pass", 0.0, 0.0, 4.0, 4.0, 0.01 / 1.01, 1.0),)


def test_rfc_equivalences_are_named() -> None:
    assert "RFC 2544" in (Goal("a", 0, 0, 60, 60, 0.005, 1).equivalence() or "")
    assert "TST009" in (Goal("a", 0, 0.5, 60, 120, 0.005, 1).equivalence() or "")
    assert Goal("a", 0.005, 0.5, 60, 120, 0.005, 1).equivalence() is None
