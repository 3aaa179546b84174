"""history: selection by experiment hash and host, run means with CIs, change points, output."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from rich.console import Console
from synthetic import SPEC, add_run, column_cells, facts

from virtbench.decide.history import build_history
from virtbench.model import VirtbenchError
from virtbench.report.decide_text import render_history, sparkline
from virtbench.store import Store


def _history(st: Store, runs: int = 24, step_at: int = 14, step: float = 0.06,
             variants: tuple[str, ...] = ("default",)) -> list[str]:
    rng = np.random.default_rng(0)
    return [add_run(st, {v: rng.normal(1.0 + step * (i >= step_at), 0.01, 5) for v in variants})
            for i in range(runs)]


def test_a_planted_step_is_found_with_its_size_and_neighbours(sqlite_store: Store) -> None:
    ids = _history(sqlite_store)
    history = build_history(sqlite_store)
    series = next(s for s in history.series if s.metric.name == "time_s")
    assert [p.run_id for p in series.points] == ids
    (step,) = series.steps
    assert step.index == 14 and (step.last_before, step.first_after) == (ids[13], ids[14])
    assert (step.runs_before, step.runs_after) == (14, 10)
    assert step.ci_low < 1.06 < step.ci_high and step.ci_low > 1.0
    point = series.points[0]
    assert 0 < point.ci_low < point.mean < point.ci_high


def test_runs_of_another_experiment_file_or_host_are_left_out(sqlite_store: Store) -> None:
    rng = np.random.default_rng(1)
    add_run(sqlite_store, {"default": rng.normal(1, 0.01, 5)}, spec_yaml=SPEC + "# edited\n")
    add_run(sqlite_store, {"default": rng.normal(1, 0.01, 5)},
            run_facts=facts(model="Other CPU"))
    ids = _history(sqlite_store, runs=8, step=0.0)
    history = build_history(sqlite_store, "exp")
    assert history.run_ids == ids
    assert sum(history.excluded.values()) == 2
    assert len(build_history(sqlite_store, "exp", any_spec=True, any_host=True).run_ids) == 10
    assert build_history(sqlite_store, "exp", host="host-a").run_ids == ids
    edited = build_history(sqlite_store, _first(sqlite_store))
    assert len(edited.run_ids) == 1  # a run given by id is the reference: its own file hash


def test_calibration_runs_are_left_out_unless_asked(sqlite_store: Store, cli,  # type: ignore[no-untyped-def]
                                                    tmp_path: Path) -> None:
    """A/A runs of `calibrate` at another level after the normal runs would be a change point
    of the configuration's history: left out (and counted) unless --include-calibration."""
    ids = _history(sqlite_store, runs=8, step=0.0)
    rng = np.random.default_rng(2)
    calibration = [add_run(sqlite_store, {"default": rng.normal(1.3, 0.01, 5)},
                           calibration="cal-0011aabb") for _ in range(4)]
    history = build_history(sqlite_store)  # the latest run is a calibration run
    assert history.run_ids == ids
    assert history.excluded == {"calibration run (--include-calibration includes it)": 4}
    assert all(s.steps == [] for s in history.series)
    included = build_history(sqlite_store, include_calibration=True)
    assert included.run_ids == ids + calibration
    assert any(s.steps for s in included.series)  # what mixing them in would have shown
    store = str(tmp_path / "decide.db")
    code, out, _ = cli("history", "-s", store, "--json")
    assert code == 0 and json.loads(out)["runs"] == ids
    code, out, _ = cli("history", "-s", store, "--json", "--include-calibration")
    assert code == 0 and json.loads(out)["runs"] == ids + calibration
    code, out, _ = cli("history", "-s", store)
    assert code == 0 and "calibration run (--include-calibration includes it)" in " ".join(
        out.split())


def test_an_experiment_with_only_calibration_runs_says_how_to_see_them(
        sqlite_store: Store) -> None:
    add_run(sqlite_store, {"default": [1.0, 1.1, 1.0]}, calibration="cal-1")
    add_run(sqlite_store, {"default": [1.0, 1.2, 1.0]}, calibration="cal-1")
    with pytest.raises(VirtbenchError, match=r"only calibration runs \(2\) here; "
                                             "--include-calibration shows them"):
        build_history(sqlite_store, "exp")
    assert len(build_history(sqlite_store, "exp", include_calibration=True).run_ids) == 2


def _first(st: Store) -> str:
    return st.runs()[0].id


def test_terminal_json_and_html(sqlite_store: Store, cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    names = ("ovs-dpdk-background-100mbit", "linux-bridge-background-900mbit")
    _history(sqlite_store, variants=names)
    store = str(tmp_path / "decide.db")
    code, out, _ = cli("history", "-s", store, "--json", "--metric", "time_s")
    document = json.loads(out)
    assert code == 0 and {s["metric"] for s in document["series"]} == {"time_s"}
    assert all(len(s["change_points"]) == 1 for s in document["series"])
    code, _, _ = cli("history", "-s", store, "-f", "html", "-o", str(tmp_path / "h.html"))
    page = (tmp_path / "h.html").read_text()
    assert code == 0 and page.count("<svg") == 4 and "+6" in page
    code, _, err = cli("history", "nosuch", "-s", store)
    assert code == 2 and "no run matches" in err
    console = Console(width=80, record=True, file=open("/dev/null", "w"))  # noqa: SIM115
    render_history(build_history(sqlite_store), console)
    text = console.export_text()
    assert max(len(line) for line in text.splitlines()) <= 80
    assert column_cells(text, "variant", "runs") == list(names) * 2


def test_sparkline() -> None:
    assert sparkline([1, 2, 3, 4, 5, 6, 7, 8]) == "▁▂▃▄▅▆▇█"
    assert len(sparkline(list(range(100)))) == 12
    assert sparkline([2.0, 2.0]) == "▄▄"


def test_a_metric_without_direction_changes_without_better_or_worse(sqlite_store: Store) -> None:
    from virtbench.model import Better, Metric

    metrics = [Metric("time_s", "s", Better.LOWER, "wall time of one operation", True),
               Metric("probes", "probes", None, "probes sent (1 / time_s here)")]
    rng = np.random.default_rng(0)
    for i in range(24):
        add_run(sqlite_store, {"default": rng.normal(1.0 + 0.06 * (i >= 14), 0.01, 5)},
                metrics=metrics)
    history = build_history(sqlite_store)
    probes = next(s for s in history.series if s.metric.name == "probes")
    assert probes.as_dict()["better"] == "none" and len(probes.steps) == 1
    console = Console(width=300, record=True, file=open("/dev/null", "w"))  # noqa: SIM115
    render_history(history, console)
    changes = [line for line in console.export_text().splitlines() if line.startswith("change:")]
    timed = next(line for line in changes if "time_s" in line)
    counted = next(line for line in changes if "probes" in line)
    assert "(higher, worse;" in timed  # 6 % slower
    assert "(lower; p =" in counted  # fewer probes: neither better nor worse
