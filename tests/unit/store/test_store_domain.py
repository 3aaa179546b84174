"""A metric's domain survives the store, and stores from before schema 3 gain the column."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from virtbench.model import Better, Domain, Metric
from virtbench.store import Store
from virtbench.store.migrations import MIGRATIONS

METRICS = [Metric("hit", "%", Better.HIGHER, "hit ratio"),
           Metric("cpu", "%", Better.LOWER, "CPU of one core", domain=Domain.POSITIVE),
           Metric("r", "R", Better.HIGHER, "E-model R")]


def _run(store: Store) -> str:
    run = store.create_run(experiment="x", description="", spec_yaml="", spec_path="", seed=1,
                           host="h", target="local", baseline="a", version="t")
    store.add_workload(run, "w", "w", 0, {}, METRICS)
    return run


def test_domain_round_trips(tmp_path: Path) -> None:
    store = Store(str(tmp_path / "s.db"))
    run = _run(store)
    domains = {name: m.domain for (_w, name), m in store.metrics(run).items()}
    assert domains == {"hit": Domain.PROPORTION, "cpu": Domain.POSITIVE, "r": Domain.REAL}


def test_old_store_gains_the_column_and_defaults_from_the_unit(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    run = _run(Store(str(path)))
    with sqlite3.connect(path) as conn:  # back to schema 2: no domain column
        conn.execute("ALTER TABLE metrics DROP COLUMN domain")
        conn.execute("UPDATE schema_version SET version = 2")
    store = Store(str(path))
    domains = {name: m.domain for (_w, name), m in store.metrics(run).items()}
    # the declared POSITIVE of "cpu" was never stored: the unit's default stands in
    assert domains == {"hit": Domain.PROPORTION, "cpu": Domain.PROPORTION, "r": Domain.REAL}
    with sqlite3.connect(path) as conn:
        assert conn.execute("SELECT version FROM schema_version").fetchone()[0] == len(MIGRATIONS)
