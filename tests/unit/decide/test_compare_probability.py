"""`compare --probability PCT`: each row's posterior P(NEW at least PCT % worse), stated prior."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from synthetic import add_run

from virtbench.store import Store

FAST = [1.00, 1.01, 0.99, 1.00, 1.02, 0.98]
SLOW = [1.20, 1.21, 1.19, 1.20, 1.22, 1.18]  # 20 % slower (time_s: lower is better)


def test_a_clear_slowdown_is_probably_worse_and_no_change_is_not(sqlite_store: Store, cli,  # type: ignore[no-untyped-def]
                                                                 tmp_path: Path) -> None:
    base = add_run(sqlite_store, {"a": FAST})
    slower = add_run(sqlite_store, {"a": SLOW})
    same = add_run(sqlite_store, {"a": [v * 1.001 for v in FAST]})
    store = str(tmp_path / "decide.db")
    code, out, _ = cli("compare", base, slower, "-s", store, "--probability", "5", "--json")
    document = json.loads(out)
    assert code == 0  # a read-out, not a gate: no --fail-if-worse
    assert document["probability"]["worse_by_pct"] == 5
    assert "[1/2, 2]" in document["probability"]["prior"]
    by_metric = {row["metric"]: row["probability_worse"] for row in document["rows"]}
    assert by_metric["time_s"] > 0.99  # lower is better: 20 % more time is worse
    assert by_metric["rate"] > 0.99  # higher is better: 1/time fell by 17 %
    code, out, _ = cli("compare", base, same, "-s", store, "--probability", "5", "--json")
    assert all(row["probability_worse"] < 0.01 for row in json.loads(out)["rows"])
    # Beside the gate, in the terminal: a column and the prior stated under the table.
    code, out, _ = cli("compare", base, slower, "-s", store, "--probability", "5",
                       "--fail-if-worse", "5", "--prior-ratio", "4")
    assert code == 1
    said = " ".join(out.split())
    assert ">99.9%" in out and "P(≥5 % worse): posterior probability" in said
    assert "[1/4, 4]" in said


def test_without_the_option_rows_carry_no_probability(sqlite_store: Store, cli,  # type: ignore[no-untyped-def]
                                                      tmp_path: Path) -> None:
    base, new = add_run(sqlite_store, {"a": FAST}), add_run(sqlite_store, {"a": SLOW})
    _code, out, _ = cli("compare", base, new, "-s", str(tmp_path / "decide.db"), "--json")
    document = json.loads(out)
    assert document["probability"] is None
    assert all(row["probability_worse"] is None for row in document["rows"])  # NaN → null


@pytest.mark.parametrize("args", [("--probability", "nan"), ("--probability", "-1"),
                                  ("--probability", "5", "--prior-ratio", "1"),
                                  ("--probability", "5", "--prior-ratio", "inf")])
def test_bad_values_are_refused(sqlite_store: Store, cli, tmp_path: Path,  # type: ignore[no-untyped-def]
                                args: tuple[str, ...]) -> None:
    base, new = add_run(sqlite_store, {"a": FAST}), add_run(sqlite_store, {"a": SLOW})
    code, _out, err = cli("compare", base, new, "-s", str(tmp_path / "decide.db"), *args)
    assert code == 2 and "Traceback" not in err, err
