"""Helpers of the store tests: a real run, an export file, the CLI."""

from __future__ import annotations

import contextlib
import gzip
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from typer.testing import CliRunner, Result

from virtbench.model import Artifact, Better, Measurement, Metric
from virtbench.store import Store, TrialRecord

METRIC = Metric("time_s", "s", Better.LOWER, "time", primary=True)


def make_run(store: Store, name: str = "exp", reps: int = 3) -> str:
    """A small complete run: variants a and b, one workload, a warm-up, ``reps`` repetitions."""
    run_id = store.create_run(experiment=name, description="d", spec_yaml="name: x\n",
                              spec_path="x.yaml", seed=1, host="h", target="local",
                              baseline="a", version="test")
    store.add_variants(run_id, [("a", {"cpu_features": []}), ("b", {"cpu_features": ["aes"]})],
                       "a")
    store.add_workload(run_id, "w", "cpu.test", 0, {"size": 1}, [METRIC])
    facts = store.add_facts(run_id, "before", {"kernel": "6.1"})
    order = 0
    for rep in [-1, *range(reps)]:
        for variant, base in (("a", 1.0), ("b", 0.5)):
            record = TrialRecord(variant, "w", rep, order, rep < 0, "ok", "", 1000.0 + order,
                                 1001.0 + order, "local", facts, {"k": "v"})
            store.record_trial(run_id, record, [Measurement("time_s", base + rep / 100)],
                               {"time_s": "s"}, [Artifact("raw.txt", b"raw")])
            order += 1
    store.set_run_status(run_id, "complete", "done")
    return run_id


def write(document: dict[str, Any], path: Path) -> Path:
    """``document`` as an export file (JSON as Python writes it: NaN/Infinity allowed)."""
    path.write_bytes(gzip.compress(json.dumps(document).encode()))
    return path


def cli(*args: str) -> Result:
    from virtbench.cli.root import app

    return CliRunner().invoke(app, list(args))


@contextlib.contextmanager
def scratch_database(postgres_url: str, name: str) -> Iterator[str]:
    """The URL of a new, empty database ``name`` on the test server, dropped afterwards."""
    from sqlalchemy import create_engine, text
    from sqlalchemy.engine import make_url

    admin = create_engine(postgres_url.replace("postgresql://", "postgresql+psycopg://"),
                          isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
        conn.execute(text(f"CREATE DATABASE {name}"))
    try:
        yield make_url(postgres_url).set(database=name).render_as_string(hide_password=False)
    finally:
        with admin.connect() as conn:
            conn.execute(text(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
        admin.dispose()


def set_back(store: Store, version: int, *undo: str) -> None:
    """Make ``store`` look as a store of schema ``version`` does (run the SQL of ``undo``,
    then record the version), and close it: for a test of the migration that follows."""
    from sqlalchemy import text

    with store.engine.begin() as conn:
        for statement in undo:
            conn.execute(text(statement))
        conn.execute(text(f"UPDATE schema_version SET version = {version}"))
    store.close()


def query_plan(path: Path, sql: str, params: dict[str, Any]) -> str:
    """SQLite's plan of ``sql`` on the store file ``path``, its steps joined by " | "."""
    import sqlite3

    with sqlite3.connect(path) as conn:
        rows = conn.execute(f"EXPLAIN QUERY PLAN {sql}", params).fetchall()
    return " | ".join(str(row[-1]) for row in rows)
