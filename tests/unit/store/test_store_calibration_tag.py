"""The calibration tag of a run (schema 7): stored by create_run, added to an older store by
its migration, carried by export and import, checked on import (untrusted input)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from sqlalchemy import text
from store_helpers import make_run, scratch_database, set_back

from virtbench.model import VirtbenchError
from virtbench.store import Store
from virtbench.store.migrations import MIGRATIONS
from virtbench.store.portable import export_run, import_run, read_document


def _tag(store: Store, run_id: str, calibration: str) -> None:
    with store.engine.begin() as conn:
        conn.execute(text("UPDATE runs SET calibration = :c WHERE id = :id"),
                     {"c": calibration, "id": run_id})


def test_create_run_stores_the_tag_and_checks_it(store: Store) -> None:
    tagged = store.create_run(experiment="e", description="", spec_yaml="name: e\n",
                              spec_path="", seed=1, host="h", target="local", baseline="a",
                              version="t", run_id="cal-0a1b2c3d-1", calibration="cal-0a1b2c3d")
    plain = make_run(store)
    assert store.run(tagged).calibration == "cal-0a1b2c3d"
    assert store.run(plain).calibration is None
    with pytest.raises(VirtbenchError, match="calibration id"):
        store.create_run(experiment="e", description="", spec_yaml="x", spec_path="", seed=1,
                         host="h", target="local", baseline="a", version="t",
                         calibration="../x")


def test_a_schema_6_store_gains_the_column_and_its_runs_are_untagged(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    old = Store(str(path))
    run_id = make_run(old)
    old.close()
    with sqlite3.connect(path) as conn:  # what a schema-6 store looks like
        conn.execute("ALTER TABLE runs DROP COLUMN calibration")
        conn.execute("UPDATE schema_version SET version = 6")
    store = Store(str(path))
    with sqlite3.connect(path) as conn:
        assert conn.execute("SELECT version FROM schema_version").fetchone()[0] == len(MIGRATIONS)
        columns = {r[1] for r in conn.execute("PRAGMA table_info(runs)")}
    assert len(MIGRATIONS) >= 7 and "calibration" in columns
    assert store.run(run_id).calibration is None and store.run(run_id).status == "complete"
    _tag(store, run_id, "cal-x")  # the migrated column holds a tag like a new one
    assert store.run(run_id).calibration == "cal-x"


def test_the_migration_on_postgresql(postgres_url: str) -> None:
    with scratch_database(postgres_url, "vbstore_caltag") as url:
        old = Store(url)
        run_id = make_run(old)
        set_back(old, 6, "ALTER TABLE runs DROP COLUMN calibration")  # no calibration column
        store = Store(url)
        assert store.run(run_id).calibration is None
        _tag(store, run_id, "cal-pg")
        assert store.run(run_id).calibration == "cal-pg"
        store.close()


def test_export_and_import_carry_the_tag(tmp_path: Path) -> None:
    source = Store(str(tmp_path / "a.db"))
    tagged, plain = make_run(source), make_run(source)
    _tag(source, tagged, "cal-5e6f7a8b")
    target = Store(str(tmp_path / "b.db"))
    for run_id, expected in ((tagged, "cal-5e6f7a8b"), (plain, None)):
        path = tmp_path / f"{run_id}.json.gz"
        export_run(source, run_id, path)
        assert read_document(path)["tables"]["runs"][0]["calibration"] == expected
        assert import_run(target, path) == run_id
        assert target.run(run_id).calibration == expected


def test_an_export_from_before_the_tag_imports_untagged(tmp_path: Path) -> None:
    source = Store(str(tmp_path / "a.db"))
    run_id = make_run(source)
    path = tmp_path / "old.json"
    export_run(source, run_id, path)
    document = json.loads(path.read_text())
    del document["tables"]["runs"][0]["calibration"]  # what schema-6 virtbench wrote
    path.write_text(json.dumps(document))
    target = Store(str(tmp_path / "b.db"))
    assert import_run(target, path) == run_id
    assert target.run(run_id).calibration is None


def test_an_abandoned_calibration_run_says_calibrate_resumes_it(tmp_path: Path) -> None:
    store = Store(str(tmp_path / "s.db"))
    run_id = store.create_run(experiment="e", description="", spec_yaml="name: e\n",
                              spec_path="e.yaml", seed=1, host="h", target="local",
                              baseline="a", version="t", run_id="cal-0a1b2c3d-2",
                              calibration="cal-0a1b2c3d")
    with store.engine.begin() as conn:  # its process was killed (-9): no pid 2^30 runs
        conn.execute(text("UPDATE runs SET owner_pid = :pid"), {"pid": 2**30})
    info = store.run(run_id)
    assert info.status == "abandoned"
    assert info.stop_reason.endswith(
        "resume with `virtbench calibrate e.yaml --resume cal-0a1b2c3d`")
