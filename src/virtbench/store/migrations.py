"""Schema migrations: an ordered list of steps, each run once, recorded in schema_version."""

from __future__ import annotations

from collections.abc import Callable

from sqlalchemy import Connection, insert, inspect, select, text, update

from virtbench.model import VirtbenchError
from virtbench.store import schema as s
from virtbench.store.reading import schema_number

__all__ = ["MIGRATIONS", "UNMEASURED_INDEX", "current_version", "migrate", "migrate_exclusively"]

# pg_advisory_xact_lock key of schema changes ("vbschema" in ASCII): any number, the same in
# every virtbench process.
_POSTGRES_SCHEMA_LOCK = 0x7662736368656D61


def _v1_initial(conn: Connection) -> None:
    s.metadata.create_all(conn)


_V2_VARIANT_GROUP_INDEX = ("CREATE INDEX ix_samples_variant_group ON samples "
                           "(run_id, workload_id, metric, variant)")
"""v2's index of a (variant, workload, metric) group (what SQLAlchemy wrote from schema.py's
Index before v9 replaced it by ix_samples_group_values)."""


def _v2_report_indexes(conn: Connection) -> None:
    existing = {ix["name"] for ix in inspect(conn).get_indexes("samples")}
    if s.ix_samples_series.name not in existing:
        s.ix_samples_series.create(conn)
    if "ix_samples_variant_group" not in existing:
        conn.execute(text(_V2_VARIANT_GROUP_INDEX))


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


def _v6_noise_profiles(conn: Connection) -> None:
    if not inspect(conn).has_table("noise_profiles"):  # a store created at version 6 has it
        s.noise_profiles.create(conn)  # with its index


def _v7_calibration_tag(conn: Connection) -> None:
    columns = {c["name"] for c in inspect(conn).get_columns("runs")}
    if "calibration" not in columns:  # a store created at version 7 already has it
        conn.execute(text("ALTER TABLE runs ADD COLUMN calibration VARCHAR(32)"))


UNMEASURED_INDEX = ("CREATE INDEX IF NOT EXISTS ix_samples_unmeasured ON samples (run_id, t) "
                    "WHERE status != 'ok'")
"""The samples not measured are a few of millions: a partial index holds only them, so the
report counts them (reading.status_counts) without visiting every sample of the run (a
quarter of a second over 10^6 samples before). The same text on SQLite and PostgreSQL."""


def _v8_unmeasured_index(conn: Connection) -> None:
    conn.execute(text(UNMEASURED_INDEX))


def _v9_group_values_index(conn: Connection) -> None:
    """The group reads' covering index (schema.ix_samples_group_values) in place of v2's
    ix_samples_variant_group, whose key it begins with: every query that used that one gets
    the same range in the same (id) order from this one."""
    existing = {ix["name"] for ix in inspect(conn).get_indexes("samples")}
    if s.ix_samples_group_values.name not in existing:  # a store created at version 9 has it
        s.ix_samples_group_values.create(conn)
    conn.execute(text("DROP INDEX IF EXISTS ix_samples_variant_group"))


# Append new steps; never edit a released one. Index i migrates version i to i+1.
MIGRATIONS: list[Callable[[Connection], None]] = [_v1_initial, _v2_report_indexes,
                                                  _v3_realisation_env, _v4_metric_domain,
                                                  _v5_run_owner, _v6_noise_profiles,
                                                  _v7_calibration_tag, _v8_unmeasured_index,
                                                  _v9_group_values_index]


def current_version(conn: Connection) -> int:
    if not inspect(conn).has_table("schema_version"):
        return 0
    value = conn.execute(select(s.schema_version.c.version)).scalar()
    return schema_number(value, conn.engine.url.render_as_string(hide_password=True))


def migrate_exclusively(conn: Connection) -> int:
    """:func:`migrate`, safe when several processes open a new or old store at once: the
    first takes the database's write lock (SQLite: BEGIN IMMEDIATE; PostgreSQL: an advisory
    lock held to the end of the transaction), the others wait for it and then find the schema
    current. A current store is only read, so opening it never waits for a writer."""
    if current_version(conn) == len(MIGRATIONS):
        return len(MIGRATIONS)
    if conn.dialect.name == "sqlite":
        # pysqlite opens no transaction for DDL: without this, two processes creating one
        # file both ran CREATE TABLE (one failed: "table schema_version already exists").
        conn.exec_driver_sql("BEGIN IMMEDIATE")
    elif conn.dialect.name == "postgresql":
        conn.execute(text("SELECT pg_advisory_xact_lock(:key)"),
                     {"key": _POSTGRES_SCHEMA_LOCK})
    return migrate(conn)


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
