"""compare BASE NEW: verdicts, the gate's exit codes, exported files, --strict, 80 columns."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from rich.console import Console
from synthetic import add_run, column_cells, facts

from virtbench.decide.compare import compare_runs
from virtbench.decide.runs import load_run
from virtbench.report.decide_text import render_comparison
from virtbench.store import Store
from virtbench.store.portable import export_run


def _pair(st: Store, new_scale: float, seed: int = 0, n: int = 12, cv: float = 0.01,
          **new_kwargs: object) -> tuple[str, str]:
    rng = np.random.default_rng(seed)
    base = add_run(st, {"default": rng.normal(1.0, cv, n)})
    new = add_run(st, {"default": rng.normal(new_scale, cv * new_scale, n)}, **new_kwargs)  # type: ignore[arg-type]
    return base, new


def test_verdicts_follow_the_metric_direction(sqlite_store: Store) -> None:
    base, new = _pair(sqlite_store, 1.10)
    result = compare_runs(load_run(base, lambda: sqlite_store), load_run(new, lambda: sqlite_store),
                          fail_pct=5.0)
    verdicts = {row.metric.name: row.result.verdict for row in result.rows}
    assert verdicts == {"time_s": "worse", "rate": "worse"}  # 10 % slower: both are worse
    time_row = next(r for r in result.rows if r.metric.name == "time_s")
    assert 1.05 < time_row.result.ci_low < time_row.result.ratio < time_row.result.ci_high
    assert all(row.regression for row in result.rows)


def test_gate_exit_codes(sqlite_store: Store, cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    store = str(tmp_path / "decide.db")
    worse_base, worse_new = _pair(sqlite_store, 1.10, seed=1)
    same_base, same_new = _pair(sqlite_store, 1.0, seed=2, n=20)
    code, out, _ = cli("compare", worse_base, worse_new, "-s", store, "--fail-if-worse", "5")
    assert code == 1 and "regression" in out and "FAIL" in out
    code, out, _ = cli("compare", same_base, same_new, "-s", store, "--fail-if-worse", "5")
    assert code == 0 and "no regression beyond 5 %" in out
    # a 10 % regression does not trip a gate set at 20 %
    code, _, _ = cli("compare", worse_base, worse_new, "-s", store, "--fail-if-worse", "20")
    assert code == 0
    code, _, err = cli("compare", worse_base, "nosuchrun", "-s", store)
    assert code == 2 and "no run matches 'nosuchrun'" in err
    code, _, err = cli("compare", worse_base, worse_new, "-s", store, "--metric", "nope")
    assert code == 2 and "--metric" in err
    code, _, err = cli("compare", worse_base, worse_new, "-s", store, "--equivalence", "0")
    assert code == 2 and "--equivalence" in err


def test_equal_runs_are_equivalent_and_json_lists_every_row(sqlite_store: Store, cli,  # type: ignore[no-untyped-def]
                                                            tmp_path: Path) -> None:
    base, new = _pair(sqlite_store, 1.0, seed=3, n=20)
    code, out, _ = cli("compare", base, new, "-s", str(tmp_path / "decide.db"), "--json",
                       "--metric", "time_s")
    document = json.loads(out)
    assert code == 0
    (row,) = document["rows"]
    assert row["metric"] == "time_s" and row["verdict"] == "equivalent"
    assert row["ci_low"] < 1.0 < row["ci_high"]


def test_inconclusive_says_how_many_more_repetitions(sqlite_store: Store) -> None:
    base, new = _pair(sqlite_store, 1.02, seed=4, n=4, cv=0.03)
    result = compare_runs(load_run(base, lambda: sqlite_store), load_run(new, lambda: sqlite_store))
    row = result.rows[0]
    assert row.result.verdict == "inconclusive"
    assert 1 <= row.result.more_repetitions < 1000


def test_exported_files_compare_without_import(sqlite_store: Store, cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    base, new = _pair(sqlite_store, 1.10, seed=5)
    exported = tmp_path / "new.json.gz"
    export_run(sqlite_store, new, exported)
    count_before = len(sqlite_store.runs())
    code, out, _ = cli("compare", base, str(exported), "-s", str(tmp_path / "decide.db"),
                       "--fail-if-worse", "5")
    assert code == 1 and "new.json.gz" in out
    assert len(sqlite_store.runs()) == count_before  # nothing imported
    export_run(sqlite_store, base, tmp_path / "base.json")
    # two files need no store at all
    code, _, _ = cli("compare", str(tmp_path / "base.json"), str(exported), "-s",
                     str(tmp_path / "absent.db"), "--fail-if-worse", "5")
    assert code == 1 and not (tmp_path / "absent.db").exists()
    (tmp_path / "bad.json").write_text("{}")
    code, _, err = cli("compare", str(tmp_path / "bad.json"), str(exported))
    assert code == 2 and "not a virtbench result file" in err


def test_strict_refuses_other_workload_parameters_or_cpu(sqlite_store: Store, cli,  # type: ignore[no-untyped-def]
                                                          tmp_path: Path) -> None:
    store = str(tmp_path / "decide.db")
    base, new = _pair(sqlite_store, 1.0, seed=6, params={"size_mib": 2})
    code, out, _ = cli("compare", base, new, "-s", store)
    assert code == 0 and "workload w params" in out
    code, _, err = cli("compare", base, new, "-s", store, "--strict")
    assert code == 2 and "size_mib" in err
    base, new = _pair(sqlite_store, 1.0, seed=7, run_facts=facts(model="Other CPU 9000"))
    code, _, err = cli("compare", base, new, "-s", store, "--strict")
    assert code == 2 and "CPU model" in err
    base, new = _pair(sqlite_store, 1.0, seed=8, run_facts=facts(kernel="Linux 6.12"))
    code, out, _ = cli("compare", base, new, "-s", store, "--strict")
    assert code == 0 and "kernel" in out  # reported, not refused


def test_many_runs_compare_still_reports_and_warns(sqlite_store: Store, cli,  # type: ignore[no-untyped-def]
                                                   tmp_path: Path) -> None:
    rng = np.random.default_rng(9)
    runs = [add_run(sqlite_store, {"default": rng.normal(1, 0.01, 5)}, host=f"h{i}",
                    run_facts=facts(kernel=f"Linux 6.{i}")) for i in range(3)]
    code, out, err = cli("compare", *runs, "-s", str(tmp_path / "decide.db"))
    assert code == 0
    assert "h1/default" in out and "h2/default" in out  # the side-by-side report
    assert "not comparable" in err and "kernel" in err
    code, _, err = cli("report", *runs[:2], "-s", str(tmp_path / "decide.db"))
    assert code == 0 and "not comparable" in err and "Linux 6.1" in err
    code, _, err = cli("compare", *runs, "-s", str(tmp_path / "decide.db"), "--strict")
    assert code == 0  # kernels differ, but nothing --strict refuses
    other = add_run(sqlite_store, {"default": rng.normal(1, 0.01, 5)}, host="h9",
                    params={"size_mib": 64})
    code, _, err = cli("compare", *runs, other, "-s", str(tmp_path / "decide.db"), "--strict")
    assert code == 2 and "size_mib" in err


def test_table_identifies_every_variant_at_80_columns(sqlite_store: Store) -> None:
    rng = np.random.default_rng(10)
    names = ["ovs-dpdk-bg-100mbit", "ovs-dpdk-bg-900mbit", "linux-bridge-bg-100mbit",
             "linux-bridge-bg-900mbit"]
    base = add_run(sqlite_store, {n: rng.normal(1, 0.01, 6) for n in names})
    new = add_run(sqlite_store, {n: rng.normal(1.03, 0.01, 6) for n in names})
    result = compare_runs(load_run(base, lambda: sqlite_store), load_run(new, lambda: sqlite_store),
                          fail_pct=5)
    console = Console(width=80, record=True, file=open("/dev/null", "w"))  # noqa: SIM115
    render_comparison(result, console)
    text = console.export_text()
    assert max(len(line) for line in text.splitlines()) <= 80
    # wrapped, perhaps, but every row names its variant in full
    assert column_cells(text, "variant", "NEW/BASE") == names * 2

