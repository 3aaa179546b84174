"""Tables of the result store. Denormalised samples keep report queries join-free and fast.

Each table's columns are those of store/columns.py, by name and in order (checked here, at
import): the reads (reading.py) and the rows written (store.py) are made from that list."""

from __future__ import annotations

from typing import Any

from sqlalchemy import (
    Boolean,
    Column,
    Float,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    String,
    Table,
    Text,
)

from virtbench.store.columns import COLUMNS
from virtbench.store.reading import SCHEMA_VERSION

__all__ = [
    "SCHEMA_VERSION",
    "artifacts",
    "facts",
    "metadata",
    "metrics",
    "noise_profiles",
    "realisations",
    "runs",
    "samples",
    "saved_state",
    "schema_version",
    "trials",
    "variants",
    "workloads",
]

metadata = MetaData()


def _table(name: str, *columns: Column[Any]) -> Table:
    """The table ``name`` of these columns, which must be store/columns.py's for it."""
    names = tuple(column.name for column in columns)
    if names != COLUMNS[name]:
        raise AssertionError(f"table {name}: columns {names} are not store/columns.py's "
                             f"{COLUMNS[name]}")
    return Table(name, metadata, *columns)


schema_version = _table("schema_version", Column("version", Integer, nullable=False))
_RUN_ID_LENGTH = 32


def _run_id(*, primary_key: bool = False) -> Column[str]:
    """The run a row belongs to: deleting the run deletes its rows."""
    return Column("run_id", String(_RUN_ID_LENGTH), ForeignKey("runs.id", ondelete="CASCADE"),
                  primary_key=primary_key, nullable=False)


runs = _table(
    "runs",
    Column("id", String(_RUN_ID_LENGTH), primary_key=True),
    Column("experiment", String(200), nullable=False),
    Column("description", Text, nullable=False, default=""),
    Column("spec_yaml", Text, nullable=False),
    Column("spec_path", Text, nullable=False, default=""),
    Column("seed", Integer, nullable=False),
    Column("status", String(20), nullable=False),
    Column("stop_reason", Text, nullable=False, default=""),
    Column("started_at", Float, nullable=False),
    Column("ended_at", Float),
    Column("host", String(200), nullable=False, default=""),
    Column("target", String(200), nullable=False, default=""),
    Column("baseline", String(200), nullable=False, default=""),
    Column("virtbench_version", String(40), nullable=False, default=""),
    Column("imported_from", Text, nullable=False, default=""),
    # v5: the process that runs it (pid, host name, kernel boot id): a run still "running"
    # whose process is gone shows as abandoned, and --resume refuses a run whose owner lives.
    Column("owner_pid", Integer),
    Column("owner_host", String(200)),
    Column("owner_boot_id", String(64)),
    # v7: the calibration a run is one of (`virtbench calibrate`'s id of its K A/A runs), NULL
    # for every other run: history leaves calibration runs out of a configuration's series.
    Column("calibration", String(_RUN_ID_LENGTH)),
)

variants = _table(
    "variants",
    _run_id(primary_key=True),
    Column("name", String(200), primary_key=True),
    Column("position", Integer, nullable=False),
    Column("knobs_json", Text, nullable=False),
    Column("is_baseline", Boolean, nullable=False, default=False),
)

workloads = _table(
    "workloads",
    _run_id(primary_key=True),
    Column("workload_id", String(200), primary_key=True),
    Column("name", String(200), nullable=False),
    Column("position", Integer, nullable=False),
    Column("params_json", Text, nullable=False),
)

metrics = _table(
    "metrics",
    _run_id(primary_key=True),
    Column("workload_id", String(200), primary_key=True),
    Column("name", String(200), primary_key=True),
    Column("unit", String(40), nullable=False),
    Column("better", String(10), nullable=False),
    Column("description", Text, nullable=False),
    Column("is_primary", Boolean, nullable=False),
    # proportion | positive | real; NULL in stores older than schema 3: taken from the unit
    Column("domain", String(20), nullable=True),
)

facts = _table(
    "facts",
    Column("id", Integer, primary_key=True, autoincrement=True),
    _run_id(),
    Column("phase", String(200), nullable=False),
    Column("captured_at", Float, nullable=False),
    Column("data_json", Text, nullable=False),
)

realisations = _table(
    "realisations",
    _run_id(primary_key=True),
    Column("variant", String(200), primary_key=True),
    Column("workload_id", String(200), primary_key=True),
    Column("mechanism", Text, nullable=False),
    Column("settings_json", Text, nullable=False),
    Column("limitations_json", Text, nullable=False),
    # v3: the environment the trial processes got (lab and workload mechanism), e.g.
    # CRC32C_SW_MODE, so the stored realisation is the whole of it.
    Column("env_json", Text, nullable=False, default="{}", server_default="{}"),
)

trials = _table(
    "trials",
    Column("id", Integer, primary_key=True, autoincrement=True),
    _run_id(),
    Column("variant", String(200), nullable=False),
    Column("workload_id", String(200), nullable=False),
    Column("repetition", Integer, nullable=False),
    Column("order_index", Integer, nullable=False),
    Column("warmup", Boolean, nullable=False),
    Column("status", String(20), nullable=False),
    Column("error", Text, nullable=False, default=""),
    Column("started_at", Float, nullable=False),
    Column("ended_at", Float, nullable=False),
    Column("target", String(200), nullable=False),
    Column("facts_id", Integer),
    Column("notes_json", Text, nullable=False, default="{}"),
)
Index("ix_trials_run", trials.c.run_id, trials.c.variant, trials.c.workload_id)

samples = _table(
    "samples",
    Column("id", Integer, primary_key=True, autoincrement=True),
    _run_id(),
    Column("trial_id", Integer, ForeignKey("trials.id", ondelete="CASCADE"), nullable=False),
    Column("variant", String(200), nullable=False),
    Column("workload_id", String(200), nullable=False),
    Column("metric", String(200), nullable=False),
    Column("value", Float),
    Column("unit", String(40), nullable=False),
    Column("repetition", Integer, nullable=False),
    Column("t", Float),
    Column("labels_json", Text),
    Column("status", String(20), nullable=False),
    Column("started_at", Float, nullable=False),
    Column("ended_at", Float, nullable=False),
    Column("target", String(200), nullable=False),
    Column("facts_id", Integer),
)
Index("ix_samples_group", samples.c.run_id, samples.c.workload_id, samples.c.metric)
# v2: time-series samples are a small part of a run, found without scanning the rest.
ix_samples_series = Index("ix_samples_series", samples.c.run_id, samples.c.t)
# v9: one (variant, workload, metric) group is one index range in id order (id, the rowid,
# before the rest), which holds every column the group reads ask for: SQLite reads a 10^6-sample
# report's values from the index alone, never the table's rows (a third of the read's CPU
# time). It replaces v2's ix_samples_variant_group, the same key without the columns read.
ix_samples_group_values = Index("ix_samples_group_values", samples.c.run_id,
                                samples.c.workload_id, samples.c.metric, samples.c.variant,
                                samples.c.id, samples.c.t, samples.c.value,
                                samples.c.repetition)
# v8: ix_samples_unmeasured, a partial index of the samples not measured (status other than
# "ok"), is made by its migration (store/migrations.py) as SQL text: a dialect's keyword here
# (postgresql_where) would import the PostgreSQL dialect into every SQLite store.

artifacts = _table(
    "artifacts",
    Column("id", Integer, primary_key=True, autoincrement=True),
    _run_id(),
    Column("trial_id", Integer, ForeignKey("trials.id", ondelete="CASCADE")),
    Column("name", String(200), nullable=False),
    Column("media_type", String(100), nullable=False),
    Column("content", LargeBinary, nullable=False),
)

saved_state = _table(
    "saved_state",
    Column("key", String(300), primary_key=True),
    Column("value_json", Text, nullable=False),
    Column("saved_at", Float, nullable=False),
)

# v6: noise profiles of `virtbench calibrate` (decide/calibration.py): the within- and
# between-run variance of one experiment file on one host, from A/A runs of its baseline. Not
# tied to the runs by a foreign key: deleting a calibration run leaves the profile it made.
noise_profiles = _table(
    "noise_profiles",
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("fingerprint", String(64), nullable=False),
    Column("experiment_hash", String(64), nullable=False),
    Column("experiment", String(200), nullable=False),
    Column("host", String(200), nullable=False),
    Column("variant", String(200), nullable=False),
    Column("run_ids_json", Text, nullable=False),
    Column("created_at", Float, nullable=False),
    Column("virtbench_version", String(40), nullable=False, default=""),
    Column("data_json", Text, nullable=False),
)
Index("ix_noise_profiles_key", noise_profiles.c.fingerprint, noise_profiles.c.experiment_hash)
if set(metadata.tables) != set(COLUMNS):
    raise AssertionError(f"tables {sorted(metadata.tables)} are not store/columns.py's "
                         f"{sorted(COLUMNS)}")
