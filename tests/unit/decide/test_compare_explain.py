"""`compare BASE NEW --explain`: functions and counters that changed, flame graph files, and
the `profile.` counters kept out of compare's verdict rows and its gate."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

from decide_cli import CliRun
from profiled import HARDWARE, HARDWARE_TRIALS, SOFTWARE, SOFTWARE_TRIALS, add_profiled_run
from synthetic import add_run

from virtbench.store import Store


def _db(store: Store) -> str:
    return str(store.engine.url.database)


def test_explain_names_the_software_and_the_hardware_crc(sqlite_store: Store, cli: CliRun,
                                                         tmp_path: Path) -> None:
    base = add_profiled_run(sqlite_store, {"masked": SOFTWARE_TRIALS})
    new = add_profiled_run(sqlite_store, {"granted": HARDWARE_TRIALS})
    out_dir = tmp_path / "graphs"
    code, out, err = cli("compare", base, new, "--store", _db(sqlite_store), "--explain",
                         "--explain-dir", str(out_dir))
    assert code == 0, err
    assert "profile." not in out.split("explain crc32c")[0]  # not among the verdict rows
    explained = "".join(out.split("explain crc32c")[1].split())  # cells wrap at 80 columns
    assert SOFTWARE[:16] in explained and HARDWARE in explained  # a long name wraps
    assert "profile.task_clock_ms" in explained  # 6x less CPU time: a changed counter
    assert "unresolvedframes:[unknown]" in explained
    names = sorted(p.name for p in out_dir.iterdir())
    assert names == ["explain-1-base.svg", "explain-1-diff.svg", "explain-1-new.svg"]
    for path in out_dir.iterdir():
        ET.parse(path)  # well-formed standalone SVG
    assert SOFTWARE in (out_dir / "explain-1-base.svg").read_text()
    assert "wrote" in err

    code, out, _ = cli("compare", base, new, "--store", _db(sqlite_store), "--explain",
                       "--json")
    document = json.loads(out)
    (item,) = document["explain"]["explanations"]
    top = {f["function"]: f for f in item["functions"][:2]}
    assert set(top) == {SOFTWARE, HARDWARE}
    assert top[SOFTWARE]["self_base_pct"]["value"] > 80
    assert top[HARDWARE]["self_new_pct"]["value"] > 80
    assert [c["metric"] for c in item["counters"]] == ["profile.task_clock_ms"]
    assert all(not row["metric"].startswith("profile.") for row in document["rows"])


def test_counters_never_reach_the_gate(sqlite_store: Store, cli: CliRun) -> None:
    """Context switches 10 → 1000 per trial: a counter the gate would call a regression if it
    saw it; the workload's own metric is unchanged, so the gate passes."""
    base = add_profiled_run(sqlite_store, {"v": SOFTWARE_TRIALS}, switches={"v": 10})
    new = add_profiled_run(sqlite_store, {"v": SOFTWARE_TRIALS}, switches={"v": 1000})
    db = _db(sqlite_store)
    code, out, err = cli("compare", base, new, "--store", db, "--fail-if-worse", "5", "--json")
    assert code == 0, err
    rows = json.loads(out)["rows"]
    assert [r["metric"] for r in rows] == ["time_per_checksum_s"]
    code, out, _ = cli("compare", base, new, "--store", db, "--fail-if-worse", "5",
                       "--format", "junit")
    assert code == 0 and "profile." not in out
    code, out, _ = cli("compare", base, new, "--store", db, "--fail-if-worse", "5",
                       "--explain")
    assert code == 0  # the counter is explained, not gated
    assert "profile.context_switches" in "".join(out.split())
    assert "worse" in out.split("explain")[1]
    for name in ("profile.context_switches", "crc32c.profile.context_switches"):
        code, _, err = cli("compare", base, new, "--store", db, "--metric", name)
        assert code == 2 and "--explain" in err


def test_runs_without_profiles_say_so_and_keep_the_exit_code(sqlite_store: Store,
                                                              cli: CliRun) -> None:
    base = add_run(sqlite_store, {"a": [1.0, 1.1, 0.9]})
    new = add_run(sqlite_store, {"a": [2.0, 2.1, 1.9]})
    db = _db(sqlite_store)
    plain, _, _ = cli("compare", base, new, "--store", db, "--fail-if-worse", "5")
    code, out, err = cli("compare", base, new, "--store", db, "--fail-if-worse", "5",
                         "--explain")
    assert code == plain == 1
    assert "no profiles" in err and "explain" not in out
    for refused in (("--format", "junit"), ("--baseline", "a")):
        code, _, err = cli("compare", base, new, "--store", db, "--explain", *refused)
        assert code == 2 and "--explain" in err
    code, _, err = cli("compare", base, base, "--", new, new, "--store", db, "--explain")
    assert code == 2 and "--explain compares exactly two runs" in err


def test_hostile_frame_names_are_shown_as_text(sqlite_store: Store, cli: CliRun) -> None:
    hostile = b"p;[bold red]x[/];<script>alert(1)</script> 90\np;main 10\n"
    base = add_profiled_run(sqlite_store, {"v": [b"p;main 100\n"] * 3}, meta=False)
    new = add_profiled_run(sqlite_store, {"v": [hostile] * 3}, meta=False)
    code, out, err = cli("compare", base, new, "--store", _db(sqlite_store), "--explain")
    assert code == 0, err
    assert "[bold red]x[/]" in out  # shown as written, not read as rich markup
    assert "<script>alert(1)" in out
    code, out, err = cli("compare", base, new, "--store", _db(sqlite_store), "--explain",
                         "--json")
    names = [f["function"] for f in json.loads(out)["explain"]["explanations"][0]["functions"]]
    assert "[bold red]x[/]" in names and "<script>alert(1)</script>" in names


def test_exported_files_explain_as_the_store_does(sqlite_store: Store, cli: CliRun,
                                                  tmp_path: Path) -> None:
    base = add_profiled_run(sqlite_store, {"masked": SOFTWARE_TRIALS})
    new = add_profiled_run(sqlite_store, {"granted": HARDWARE_TRIALS})
    db = _db(sqlite_store)
    files = []
    for run in (base, new):
        path = tmp_path / f"{run}.json.gz"
        code, _, err = cli("export", run, "--store", db, "-o", str(path))
        assert code == 0, err
        files.append(str(path))
    _, stored, _ = cli("compare", base, new, "--store", db, "--explain", "--json")
    code, exported, err = cli("compare", *files, "--explain", "--json")
    assert code == 0, err
    functions = [[f["function"] for f in json.loads(text)["explain"]["explanations"][0]
                  ["functions"]] for text in (stored, exported)]
    assert functions[0] == functions[1] and set(functions[0][:2]) == {SOFTWARE, HARDWARE}
