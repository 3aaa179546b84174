"""One list of columns (store/columns.py): the tables are built against it, the reads are
checked against it at import, and the rows written are made in its names."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from sqlalchemy import Column, Integer

from virtbench.model import Measurement
from virtbench.store import Store, TrialRecord, schema
from virtbench.store import store as writing
from virtbench.store.columns import COLUMNS, checked, insert_sql, listed, written


def test_a_new_store_has_exactly_the_listed_columns(tmp_path: Path) -> None:
    Store(str(tmp_path / "s.db")).close()
    with sqlite3.connect(tmp_path / "s.db") as conn:
        tables = {name for (name,) in conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table'")}
        assert tables == set(COLUMNS)
        for table, names in COLUMNS.items():
            found = tuple(row[1] for row in conn.execute(f"PRAGMA table_info({table})"))
            assert found == names, table


def test_a_table_unlike_the_list_is_refused() -> None:
    with pytest.raises(AssertionError, match="table saved_state: columns"):
        schema._table("saved_state", Column("key", Integer), Column("value", Integer))


def test_a_query_is_checked_against_its_tables_columns() -> None:
    sql = ("SELECT run_id, count(*), sum(value * value), json_extract(labels_json, '$.x y') "
           "FROM samples WHERE run_id IN {runs} AND status != 'not ok' AND t IS NULL "
           "AND metric = :metric GROUP BY run_id")
    assert checked(sql) == sql
    with pytest.raises(AssertionError, match="names nope"):
        checked("SELECT nope FROM runs")
    with pytest.raises(AssertionError, match="names run_id"):
        checked("SELECT id FROM runs WHERE run_id = :run")  # a column of another table
    with pytest.raises(AssertionError, match="no table"):
        checked("SELECT 1")
    with pytest.raises(AssertionError, match="runs has no column nope"):
        listed("runs", ["id", "nope"])


def test_inserts_name_every_written_column_once() -> None:
    assert written("trials") == COLUMNS["trials"][1:]
    assert insert_sql("artifacts", "?") == ("INSERT INTO artifacts (run_id, trial_id, name, "
                                            "media_type, content) VALUES (?, ?, ?, ?, ?)")
    assert insert_sql("saved_state", "%s", returning="key").endswith("RETURNING key")
    assert sorted(writing._SAMPLE_INSERT) == sorted(written("samples"))
    assert sorted(writing._TRIAL_INSERT) == sorted(writing.trial_row("r", _TRIAL))


_TRIAL = TrialRecord("a", "w", 2, 5, False, "ok", "", 1.0, 2.0, "host-1", 7, {"k": "v"})


def test_a_sample_row_takes_each_column_from_its_trial_or_measurement() -> None:
    (row,) = writing.sample_rows(11, writing.trial_row("r", _TRIAL),
                               [Measurement("time_s", 0.5, t=3.0, labels={"u": "/"},
                                            status="late")], {"time_s": "s"})
    assert dict(zip(writing._SAMPLE_INSERT, row, strict=True)) == {
        "run_id": "r", "trial_id": 11, "variant": "a", "workload_id": "w", "metric": "time_s",
        "value": 0.5, "unit": "s", "repetition": 2, "t": 3.0, "labels_json": '{"u": "/"}',
        "status": "late", "started_at": 1.0, "ended_at": 2.0, "target": "host-1",
        "facts_id": 7}
