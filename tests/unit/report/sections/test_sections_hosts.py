"""Hosts side by side: a column per host, and the facts that differ between hosts."""

from __future__ import annotations

from pathlib import Path

from virtbench.analysis import analyse
from virtbench.model import Better, Measurement, Metric
from virtbench.report.sections.hosts import build_hosts

from .synthetic import SyntheticRun, new_store

WALL = Metric("wall_time_s", "s", Better.LOWER, "wall time", primary=True)


def _fleet(tmp_path: Path, kernels: dict[str, str]) -> tuple[object, list[str]]:
    store = new_store(tmp_path)
    ids = []
    for index, (host, kernel) in enumerate(kernels.items()):
        run = SyntheticRun(store, variants=[("a", {}), ("b", {})], baseline="a",
                           workload_id="exec.command", workload="exec.command", metrics=[WALL],
                           host=host, experiment="fleet")
        store.add_facts(run.run_id, "before", {"cpu": {"model": "EPYC"}, "kernel": kernel})
        for rep in range(3):
            run.trial("a", rep, [Measurement("wall_time_s", 1.0 + index + rep * 0.01)])
            run.trial("b", rep, [Measurement("wall_time_s", 2.0 + index + rep * 0.01)])
        ids.append(run.run_id)
    return store, ids


def test_one_column_per_host_and_the_differing_kernel(tmp_path: Path) -> None:
    store, ids = _fleet(tmp_path, {"h1": "6.1", "h2": "6.1", "h3": "6.18"})
    table, facts = build_hosts(analyse(store, ids))  # type: ignore[arg-type]
    assert table.columns == ["workload · metric", "variant", "h1", "h2", "h3"]
    rows = {row[1]: row for row in table.rows}
    assert set(rows) == {"a", "b"}
    assert rows["a"][2].startswith("1.01 s") and rows["a"][4].startswith("3.01 s")
    assert "n=3" in rows["b"][3]
    assert facts.rows == [["h3", "kernel", "6.1", "6.18"]]


def test_agreeing_hosts_say_so_and_one_host_gets_no_section(tmp_path: Path) -> None:
    store, ids = _fleet(tmp_path, {"h1": "6.1", "h2": "6.1"})
    _table, facts = build_hosts(analyse(store, ids))  # type: ignore[arg-type]
    assert facts.rows == [] and "agree" in facts.paragraphs[0]
    assert build_hosts(analyse(store, ids[:1])) == []  # type: ignore[arg-type]
