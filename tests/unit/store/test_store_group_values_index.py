"""The group reads' covering index (schema 9): a group's values are read from the index alone,
in insertion (id) order; an older store gains it by its migration, which drops v2's index it
replaces, and a version-8 store is read as it is, with the same values in the same order."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from sqlalchemy import text
from store_helpers import METRIC, query_plan, scratch_database, set_back

from virtbench.model import Measurement
from virtbench.store import Store, StoreReader, TrialRecord
from virtbench.store.migrations import MIGRATIONS
from virtbench.store.reading import _GROUP_VALUES_ONLY, READABLE_SCHEMAS, SCHEMA_VERSION
from virtbench.store.sqlite_reader import SqliteReader, open_reader

# What a version-8 store has in place of ix_samples_group_values.
_TO_VERSION_8 = ("DROP INDEX ix_samples_group_values",
                 "CREATE INDEX ix_samples_variant_group ON samples "
                 "(run_id, workload_id, metric, variant)")
# Each trial's values, falling then rising: an index ordered by value would give them sorted.
_VALUES = {0: [3.0, 1.0, 2.0], 1: [0.5, 9.0, 4.0], 2: [7.0, 6.0, 8.0]}


def _run(store: Store) -> str:
    """Two variants' trials, interleaved, each with samples whose values are not in order, a
    time-stamped sample and one without a value between them."""
    run_id = store.create_run(experiment="e", description="", spec_yaml="", spec_path="",
                              seed=1, host="h", target="local", baseline="a", version="t")
    store.add_variants(run_id, [("a", {}), ("b", {})], "a")
    store.add_workload(run_id, "w", "cpu.test", 0, {}, [METRIC])
    order = 0
    for rep, values in _VALUES.items():
        for variant, scale in (("a", 1.0), ("b", -1.0)):
            measured = [Measurement("time_s", scale * v) for v in values]
            measured.insert(1, Measurement("time_s", 5.0, t=0.25))
            measured.insert(2, Measurement("time_s", None, status="timeout"))
            store.record_trial(run_id, TrialRecord(variant, "w", rep, order, False, "ok", "",
                                                   1.0, 2.0, "local", None, {}),
                               measured, {"time_s": "s"})
            order += 1
    return run_id


def _reads(reader: StoreReader, run_id: str) -> list[object]:
    """Every group read, as plain lists (their order included)."""
    out: list[object] = []
    for variant in ("a", "b"):
        reps, values = reader.group_values(run_id, variant, "w", "time_s")
        out += [reps.tolist(), values.tolist(),
                reader.group_values_only(run_id, variant, "w", "time_s").tolist(),
                reader.group_reaches(run_id, variant, "w", "time_s", 2),
                reader.group_reaches(run_id, variant, "w", "time_s", 3)]
    return out


_EXPECTED = [[0, 0, 0, 1, 1, 1, 2, 2, 2], [3.0, 1.0, 2.0, 0.5, 9.0, 4.0, 7.0, 6.0, 8.0],
             [3.0, 1.0, 2.0, 0.5, 9.0, 4.0, 7.0, 6.0, 8.0], True, False,
             [0, 0, 0, 1, 1, 1, 2, 2, 2], [-3.0, -1.0, -2.0, -0.5, -9.0, -4.0, -7.0, -6.0, -8.0],
             [-3.0, -1.0, -2.0, -0.5, -9.0, -4.0, -7.0, -6.0, -8.0], True, False]


def _indexes(path: Path) -> set[str]:
    with sqlite3.connect(path) as conn:
        return {row[0] for row in conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'samples'")}


def _plan(path: Path, run_id: str) -> str:
    return query_plan(path, _GROUP_VALUES_ONLY, {"run": run_id, "workload": "w",
                                                 "metric": "time_s", "variant": "a"})


def test_a_group_is_read_from_the_index_alone_in_insertion_order(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    store = Store(str(path))
    run_id = _run(store)
    assert "USING COVERING INDEX ix_samples_group_values" in _plan(path, run_id)
    assert "ix_samples_variant_group" not in _indexes(path)  # replaced, not kept beside it
    assert _reads(store, run_id) == _EXPECTED
    store.close()
    reader = open_reader(str(path))
    assert isinstance(reader, SqliteReader) and reader.schema_version() == SCHEMA_VERSION
    assert _reads(reader, run_id) == _EXPECTED
    reader.close()


def test_a_version_8_store_is_read_as_it_is_and_migrated_by_a_writer(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    old = Store(str(path))
    run_id = _run(old)
    set_back(old, 8, *_TO_VERSION_8)
    assert SCHEMA_VERSION == len(MIGRATIONS) == 9 and 8 in READABLE_SCHEMAS
    assert "ix_samples_group_values" not in _plan(path, run_id)
    reader = open_reader(str(path))  # read without migrating: the same values, slower
    assert isinstance(reader, SqliteReader) and reader.schema_version() == 8
    assert _reads(reader, run_id) == _EXPECTED
    reader.close()
    assert "ix_samples_group_values" not in _indexes(path)  # the reader changed nothing
    store = Store(str(path))  # a writer migrates it
    assert _reads(store, run_id) == _EXPECTED
    store.close()
    with sqlite3.connect(path) as conn:
        assert conn.execute("SELECT version FROM schema_version").fetchone()[0] == 9
    indexes = _indexes(path)
    assert "ix_samples_group_values" in indexes and "ix_samples_variant_group" not in indexes
    assert "USING COVERING INDEX ix_samples_group_values" in _plan(path, run_id)


def test_the_migration_on_postgresql(postgres_url: str) -> None:
    with scratch_database(postgres_url, "vbstore_group_values") as url:
        old = Store(url)
        run_id = _run(old)
        set_back(old, 8, *_TO_VERSION_8)
        store = Store(url)
        with store.engine.begin() as conn:
            names = set(conn.execute(text(
                "SELECT indexname FROM pg_indexes WHERE tablename = 'samples'")).scalars())
            version = conn.execute(text("SELECT version FROM schema_version")).scalar()
        assert version == 9
        assert "ix_samples_group_values" in names and "ix_samples_variant_group" not in names
        assert _reads(store, run_id) == _EXPECTED
        store.close()
