"""The unmeasured samples' partial index (schema 8): the report's count of them reads only
them; an older store gains it by its migration, and a version-7 store is read as it is."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from sqlalchemy import text
from store_helpers import make_run, query_plan, scratch_database, set_back

from virtbench.model import Measurement
from virtbench.store import Store, TrialRecord
from virtbench.store.migrations import MIGRATIONS
from virtbench.store.reading import _STATUS_COUNTS, READABLE_SCHEMAS, SCHEMA_VERSION
from virtbench.store.sqlite_reader import SqliteReader, open_reader

# What a version-7 store has: no partial index, v2's group index (schema 9 replaced it).
_TO_VERSION_7 = ("DROP INDEX ix_samples_unmeasured", "DROP INDEX ix_samples_group_values",
                 "CREATE INDEX ix_samples_variant_group ON samples "
                 "(run_id, workload_id, metric, variant)")


def _with_a_timeout(store: Store) -> str:
    """A small run (store_helpers.make_run) and one timed-out, not measured, sample."""
    run_id = make_run(store)
    record = TrialRecord("b", "w", 3, 99, False, "ok", "", 2000.0, 2001.0, "local", None, {})
    store.record_trial(run_id, record, [Measurement("time_s", None, status="timeout")],
                       {"time_s": "s"})
    return run_id


def _plan(path: Path, run_id: str) -> str:
    return query_plan(path, _STATUS_COUNTS, {"run": run_id})


def test_the_count_of_unmeasured_samples_reads_only_them(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    store = Store(str(path))
    run_id = _with_a_timeout(store)
    assert "USING INDEX ix_samples_unmeasured" in _plan(path, run_id)
    reader = open_reader(str(path))
    assert isinstance(reader, SqliteReader)
    assert reader.status_counts(run_id) == {("b", "w", "time_s", "timeout"): 1}
    with sqlite3.connect(path) as conn:  # the index holds that one sample, not the others
        indexed = conn.execute("SELECT count(*) FROM samples INDEXED BY ix_samples_unmeasured "
                               "WHERE status != 'ok'").fetchone()[0]
    assert indexed == 1 < store.sample_count(run_id)
    reader.close()
    store.close()


def test_a_version_7_store_is_read_as_it_is_and_migrated_by_a_writer(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    old = Store(str(path))
    run_id = _with_a_timeout(old)
    set_back(old, 7, *_TO_VERSION_7)  # what a version-7 store looks like
    assert len(MIGRATIONS) == SCHEMA_VERSION and 7 in READABLE_SCHEMAS
    assert "ix_samples_unmeasured" not in _plan(path, run_id)
    reader = open_reader(str(path))  # read without migrating: the same counts, slower
    assert isinstance(reader, SqliteReader) and reader.schema_version() == 7
    assert reader.status_counts(run_id) == {("b", "w", "time_s", "timeout"): 1}
    reader.close()
    store = Store(str(path))  # a writer migrates it
    assert store.status_counts(run_id) == {("b", "w", "time_s", "timeout"): 1}
    store.close()
    with sqlite3.connect(path) as conn:
        assert conn.execute("SELECT version FROM schema_version").fetchone()[0] == SCHEMA_VERSION
    assert "USING INDEX ix_samples_unmeasured" in _plan(path, run_id)


def test_the_migration_on_postgresql(postgres_url: str) -> None:
    with scratch_database(postgres_url, "vbstore_unmeasured") as url:
        old = Store(url)
        run_id = _with_a_timeout(old)
        set_back(old, 7, *_TO_VERSION_7)  # no partial index
        store = Store(url)
        with store.engine.begin() as conn:
            definition = conn.execute(text(
                "SELECT indexdef FROM pg_indexes WHERE indexname = 'ix_samples_unmeasured'"
            )).scalar()
            version = conn.execute(text("SELECT version FROM schema_version")).scalar()
        assert version == SCHEMA_VERSION and "WHERE" in str(definition) and "ok" in str(definition)
        assert store.status_counts(run_id) == {("b", "w", "time_s", "timeout"): 1}
        store.close()
