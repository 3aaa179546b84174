"""`virtbench import` checks every field of every row at the door: a bad file is one line naming
the file, table, row and field, exit 2, and nothing of it is stored."""

from __future__ import annotations

import gzip
import json
import math
from pathlib import Path
from typing import Any

import pytest
from store_helpers import cli, make_run, write

from virtbench.model import VirtbenchError
from virtbench.store import Store, portable, rows
from virtbench.store.portable import export_run, import_run


def _import(tmp_path: Path, document: dict[str, Any]) -> tuple[int, str, Store | None]:
    """Exit code, output, and the target store (None: the import created none)."""
    path = write(document, tmp_path / "in.json.gz")
    db = tmp_path / "target.db"
    result = cli("import", str(path), "--store", str(db))
    return result.exit_code, result.output, Store(str(db)) if db.exists() else None


def _sample(document: dict[str, Any], index: int = 2) -> dict[str, Any]:
    row: dict[str, Any] = document["tables"]["samples"][index]
    return row


@pytest.mark.parametrize(("table", "index", "field", "value", "message"), [
    ("samples", 2, "value", math.inf, "samples[2].value: must be a finite number"),
    ("samples", 2, "value", -math.inf, "samples[2].value: must be a finite number"),
    ("samples", 2, "value", "abc", "samples[2].value: must be a number"),
    ("samples", 2, "value", 1e300, "samples[2].value: magnitude must be at most 1e+150"),
    ("samples", 1, "repetition", -5, "samples[1].repetition: must be >= 0"),
    ("trials", 3, "repetition", -5, "trials[3].repetition: must be >= 0"),
    ("trials", 3, "status", "weird", "trials[3].status: must be 'ok' or 'failed'"),
    ("trials", 3, "started_at", math.nan, "trials[3].started_at: must be a finite number"),
    ("trials", 3, "ended_at", 1.0, "trials[3]: ended_at is before started_at"),
    ("samples", 0, "t", -1.0, "samples[0].t: must be >= 0"),
    ("samples", 0, "status", "OK; DROP", "samples[0].status: must be a status word"),
    ("runs", 0, "id", "../../../../x", "runs[0].id: must be a run id"),
    ("runs", 0, "id", "abc\r\nSet-Cookie: x=1", "runs[0].id: must be a run id"),
    ("runs", 0, "experiment", "exp\x1b]0;pwned\x07", "runs[0].experiment: must be a name"),
    ("runs", 0, "status", "done", "runs[0].status: must be"),
    ("runs", 0, "seed", True, "runs[0].seed: must be an integer"),
    ("runs", 0, "started_at", 1e20, "runs[0].started_at: must be <= "),
    ("runs", 0, "calibration", "cal-1\x1b[2J", "runs[0].calibration: must be a run id"),
    ("runs", 0, "calibration", "", "runs[0].calibration: must be a run id"),
    ("runs", 0, "calibration", 7, "runs[0].calibration: must be a string"),
    ("variants", 1, "name", "b\x1b[2J", "variants[1].name: must be 1-200 characters as the "
                                        "store keeps them (no control characters)"),
    ("variants", 1, "knobs_json", "{\"a\": NaN}", "variants[1].knobs_json: must be an object"),
    ("variants", 1, "knobs_json", "[1]", "variants[1].knobs_json: must be an object in JSON"),
    ("metrics", 0, "better", "sideways",
         "metrics[0].better: must be 'lower', 'higher' or 'none'"),
    ("facts", 0, "data_json", "[" * 100_000, "facts[0].data_json: must be an object"),
    ("artifacts", 0, "content", "not base64!", "artifacts[0].content: must be base64"),
    ("trials", 0, "order_index", -1, "trials[0].order_index: must be >= 0"),
])
def test_a_bad_field_is_named_and_nothing_is_imported(
        tmp_path: Path, document: dict[str, Any], table: str, index: int, field: str,
        value: Any, message: str) -> None:
    document["tables"][table][index][field] = value
    code, output, _ = _import(tmp_path, document)
    assert code == 2, output
    assert "Traceback" not in output and message in output, output
    assert "in.json.gz: " in output and "nothing imported" in output
    assert len(output.strip().splitlines()) == 1, output
    assert not (tmp_path / "target.db").exists()  # a refused file creates no store


def test_a_row_of_another_table_shape_is_named(tmp_path: Path,
                                               document: dict[str, Any]) -> None:
    document["tables"]["samples"][4]["extra"] = 1
    code, output, _ = _import(tmp_path, document)
    assert code == 2 and "samples[4].extra: is not a field of this table" in output
    del document["tables"]["samples"][4]["extra"]
    del document["tables"]["samples"][4]["metric"]
    code, output, _ = _import(tmp_path, document)
    assert code == 2 and "samples[4].metric: missing" in output


@pytest.mark.parametrize(("table", "field", "value", "message"), [
    ("samples", "trial_id", 999, "samples[2].trial_id: refers to nothing in this file"),
    ("samples", "metric", "other", "samples[2].metric: refers to nothing in this file"),
    ("samples", "variant", "zzz", "samples[2].variant: differs from its trial's"),
    ("samples", "unit", "ms", "samples[2].unit: 'ms' differs from the metric's unit 's'"),
    ("samples", "run_id", "other", "samples[2].run_id: must be the run's id"),
    ("trials", "variant", "zzz", "trials[2].variant: refers to nothing in this file"),
    ("trials", "facts_id", 77, "trials[2].facts_id: refers to nothing in this file"),
])
def test_rows_must_refer_to_each_other(tmp_path: Path, document: dict[str, Any], table: str,
                                       field: str, value: Any, message: str) -> None:
    document["tables"][table][2][field] = value
    code, output, store = _import(tmp_path, document)
    assert (code, store) == (2, None), output
    assert message in output, output


def test_all_nan_values_are_refused_unless_their_status_says_not_measured(
        tmp_path: Path, document: dict[str, Any]) -> None:
    """Once all-NaN values imported as "6 measured" and the report showed no table."""
    for sample in document["tables"]["samples"]:
        sample["value"] = math.nan
    code, output, store = _import(tmp_path, document)
    assert code == 2 and "samples[0].value: must be a finite number" in output, output
    assert store is None
    for sample in document["tables"]["samples"]:
        sample["status"] = "timeout"
    code, output, store = _import(tmp_path, document)
    assert code == 0 and store is not None, output
    run_id = document["tables"]["runs"][0]["id"]
    assert list(store.scalar_values(run_id)) == []  # NaN became "not measured" (null)
    assert store.status_counts(run_id) == {("a", "w", "time_s", "timeout"): 3,
                                           ("b", "w", "time_s", "timeout"): 3}


def test_imported_values_serve_report_compare_and_history(tmp_path: Path,
                                                           document: dict[str, Any]) -> None:
    """What passes the door is what the readers can read: a good file imports and reports."""
    code, output, _ = _import(tmp_path, document)
    assert code == 0, output
    db = str(tmp_path / "target.db")
    run_id = document["tables"]["runs"][0]["id"]
    for args in (["report", run_id, "-f", "json"], ["history", "exp", "--json"]):
        result = cli(*args, "--store", db)
        assert result.exit_code == 0, (args, result.output)
        json.loads(result.stdout)


def test_a_replaced_run_survives_a_bad_replacement(tmp_path: Path,
                                                   document: dict[str, Any]) -> None:
    good = write(document, tmp_path / "good.json.gz")
    db = str(tmp_path / "target.db")
    assert cli("import", str(good), "--store", db).exit_code == 0
    document["tables"]["samples"][-1]["value"] = math.inf
    bad = write(document, tmp_path / "bad.json.gz")
    result = cli("import", str(bad), "--store", db, "--replace")
    assert result.exit_code == 2, result.output
    run_id = document["tables"]["runs"][0]["id"]
    assert len(Store(db).samples(run_id)) == 6  # the old run, untouched


def test_the_store_refusing_a_row_rolls_the_whole_import_back(
        tmp_path: Path, document: dict[str, Any]) -> None:
    """A replacement the database refuses half-way (here: its run id is taken by a row the
    checks cannot see) leaves the old run and imports nothing."""
    db = tmp_path / "target.db"
    store = Store(str(db))
    run_id = make_run(store)
    exported = tmp_path / "mine.json"
    export_run(store, run_id, exported)
    mine = json.loads(exported.read_text())
    mine["tables"]["samples"].append(dict(mine["tables"]["samples"][0]))
    mine["tables"]["samples"][-1]["id"] = mine["tables"]["samples"][0]["id"]
    with store.engine.begin() as conn:  # a trigger makes the last sample insert fail
        conn.exec_driver_sql("CREATE TRIGGER vb_refuse BEFORE INSERT ON samples "
                             "WHEN (SELECT count(*) FROM samples WHERE run_id = NEW.run_id) "
                             ">= 6 BEGIN SELECT RAISE(ABORT, 'refused'); END")
    result = cli("import", str(write(mine, tmp_path / "m.json.gz")), "--store", str(db),
                 "--replace")
    assert result.exit_code == 2 and "nothing imported (refused)" in result.output, result.output
    assert len(store.samples(run_id)) == 6 and len(store.trials(run_id)) == 8


def test_sizes_are_bounded(tmp_path: Path, document: dict[str, Any],
                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(rows, "MAX_ROWS", 10)
    code, output, _ = _import(tmp_path, document)
    assert code == 2 and "holds 28 rows, more than the 10 one import takes" in output, output
    monkeypatch.setattr(portable, "MAX_DOCUMENT_BYTES", 4096)
    bomb = tmp_path / "bomb.json.gz"  # 10 kB of gzip, 10 MB of JSON
    bomb.write_bytes(gzip.compress(b'{"format": "virtbench-results", "x": "' + b"a" * 10**7
                                   + b'"}'))
    result = cli("import", str(bomb), "--store", str(tmp_path / "t.db"))
    assert result.exit_code == 2 and "larger than 0 MiB uncompressed" in result.output


def test_deep_nesting_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "deep.json"
    path.write_text("[" * 200_000 + "]" * 200_000)
    with pytest.raises(VirtbenchError, match="nested too deeply"):
        import_run(Store(str(tmp_path / "s.db")), path)


def test_compare_reads_an_exported_file_through_the_same_checks(
        tmp_path: Path, document: dict[str, Any]) -> None:
    good = write(document, tmp_path / "base.json.gz")
    document["tables"]["samples"][2]["value"] = math.inf
    bad = write(document, tmp_path / "new.json.gz")
    result = cli("compare", str(good), str(bad), "--store", str(tmp_path / "none.db"))
    assert result.exit_code == 2, result.output
    assert "new.json.gz: samples[2].value: must be a finite number" in result.output
    assert not (tmp_path / "none.db").exists()
