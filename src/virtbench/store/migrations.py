"""Schema migrations: an ordered list of steps, each run once, recorded in schema_version."""

from __future__ import annotations

from collections.abc import Callable

from sqlalchemy import Connection, insert, inspect, select, text, update

from virtbench.model import VirtbenchError
from virtbench.store import schema as s

__all__ = ["MIGRATIONS", "migrate"]


def _v1_initial(conn: Connection) -> None:
    s.metadata.create_all(conn)


def _v2_report_indexes(conn: Connection) -> None:
    existing = {ix["name"] for ix in inspect(conn).get_indexes("samples")}
    for index in (s.ix_samples_series, s.ix_samples_variant_group):
        if index.name not in existing:
            index.create(conn)


def _v3_realisation_env(conn: Connection) -> None:
    columns = {c["name"] for c in inspect(conn).get_columns("realisations")}
    if "env_json" not in columns:  # a store made by v1 create_all before the column existed
        conn.execute(text("ALTER TABLE realisations ADD COLUMN env_json TEXT NOT NULL "
                          "DEFAULT '{}'"))


def _v4_metric_domain(conn: Connection) -> None:
    columns = {c["name"] for c in inspect(conn).get_columns("metrics")}
    if "domain" not in columns:  # a store created at version 4 already has it
        conn.execute(text("ALTER TABLE metrics ADD COLUMN domain VARCHAR(20)"))


def _v5_run_owner(conn: Connection) -> None:
    columns = {c["name"] for c in inspect(conn).get_columns("runs")}
    for name, kind in (("owner_pid", "INTEGER"), ("owner_host", "VARCHAR(200)"),
                       ("owner_boot_id", "VARCHAR(64)")):
        if name not in columns:  # a store created at version 5 already has them
            conn.execute(text(f"ALTER TABLE runs ADD COLUMN {name} {kind}"))


# Append new steps; never edit a released one. Index i migrates version i to i+1.
MIGRATIONS: list[Callable[[Connection], None]] = [_v1_initial, _v2_report_indexes,
                                                  _v3_realisation_env, _v4_metric_domain,
                                                  _v5_run_owner]


def current_version(conn: Connection) -> int:
    if not inspect(conn).has_table("schema_version"):
        return 0
    value = conn.execute(select(s.schema_version.c.version)).scalar()
    return int(value or 0)


def migrate(conn: Connection) -> int:
    version = current_version(conn)
    if version > len(MIGRATIONS):
        raise VirtbenchError(
            f"the store has schema version {version}, newer than this virtbench supports "
            f"({len(MIGRATIONS)}); upgrade virtbench"
        )
    for step in MIGRATIONS[version:]:
        step(conn)
    if version == 0:
        conn.execute(insert(s.schema_version).values(version=len(MIGRATIONS)))
    elif version < len(MIGRATIONS):
        conn.execute(update(s.schema_version).values(version=len(MIGRATIONS)))
    return len(MIGRATIONS)
