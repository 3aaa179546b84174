"""The result store: the only code that writes SQL (reading.py has the reads, columns.py the
columns both use). SQLite by default, PostgreSQL by URL."""

from __future__ import annotations

import contextlib
import functools
import json
import sqlite3
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlalchemy import (
    Connection,
    Engine,
    create_engine,
    delete,
    event,
    insert,
    select,
    text,
    update,
)
from sqlalchemy.engine import ExceptionContext
from sqlalchemy.exc import ArgumentError, DatabaseError, DBAPIError, OperationalError

from virtbench.model import Artifact, Measurement, Metric, VirtbenchError, better_text
from virtbench.safetext import stored
from virtbench.store import schema as s
from virtbench.store.columns import NAME_MAX, TEXT_LIMITS, insert_sql, listed, written
from virtbench.store.ids import check_run_id
from virtbench.store.liveness import this_owner
from virtbench.store.migrations import current_version, migrate_exclusively
from virtbench.store.reading import (
    BUSY_TIMEOUT_MS,
    NO_STORE,
    RunInfo,
    SampleRow,
    StoreFailed,
    StoreReader,
    check_current,
    store_url,
)
from virtbench.store.redaction import scrubbed, shown
from virtbench.store.sqlite_reader import check_store_file, connect_read_only

__all__ = ["RunInfo", "SampleRow", "Store", "StoreFailed", "TrialRecord", "store_url",
           "stored_spec_yaml"]


@dataclass(frozen=True)
class TrialRecord:
    variant: str
    workload_id: str
    repetition: int
    order_index: int
    warmup: bool
    status: str
    error: str
    started_at: float
    ended_at: float
    target: str
    facts_id: int | None
    notes: Mapping[str, str]


# A trial keeps trying to store itself this long while the file is locked: fleet hosts write
# large per-request trials into one file, and on a loaded machine one 10 s wait ran out and a
# whole trial was lost. Other commands (import, delete) still fail after 10 s, with the reason.
TRIAL_LOCK_PATIENCE_S = 120.0


def _sqlite_pragmas(dbapi_connection: Any, _record: Any) -> None:
    cursor = dbapi_connection.cursor()
    cursor.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
    # WAL lets `virtbench report` read while a run writes; NORMAL sync is durable across crashes
    # of the process (not of the OS), which is the failure that matters for a benchmark run.
    _switch_to_wal(cursor)
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.close()


def _switch_to_wal(cursor: Any) -> None:
    """PRAGMA journal_mode=WAL, waiting while another connection holds the lock it needs: on
    a file that several processes create at once SQLite answers "database is locked" at once
    instead of calling the busy handler, so the wait is here (as long as the busy timeout)."""
    deadline = time.monotonic() + BUSY_TIMEOUT_MS / 1000
    while True:
        try:
            cursor.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() >= deadline:
                raise
            time.sleep(0.01)


def _store_failed(location: str, context: ExceptionContext) -> None:
    """Turn the database's own operational errors into one clear message (not a traceback);
    errors of what we asked (constraint violations, bad SQL) stay as they are."""
    error = context.sqlalchemy_exception
    if isinstance(error, OperationalError) or type(error) is DatabaseError:
        raise StoreFailed(location, str(context.original_exception).strip()) from error


def _sqlite_read_only(dbapi_connection: Any, _record: Any) -> None:
    cursor = dbapi_connection.cursor()
    # query_only: SQLite itself refuses every write; the journal mode is left as the writer set it.
    cursor.execute("PRAGMA query_only=ON")
    cursor.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
    cursor.close()


class Store(StoreReader):
    """Reading (:class:`StoreReader`, through SQLAlchemy) and every write; SQLite or
    PostgreSQL."""

    def __init__(self, location: str, *, read_only: bool = False, create: bool = True) -> None:
        """Open (and migrate) a store; ``read_only`` opens an existing, current store that the
        database itself refuses to write (a web viewer beside a running benchmark); without
        ``create`` a store that does not exist yet is an error (a mistyped --store of a
        reading command must not leave an empty store behind)."""
        self.location = location
        self.url = store_url(location)
        self.read_only = read_only
        connect_args: dict[str, Any] = {}
        if read_only and self.url.startswith("postgresql"):
            connect_args["options"] = "-c default_transaction_read_only=on"
        engine_args: dict[str, Any] = {}
        if self.url.startswith("sqlite:///") and "?" not in self.url:
            path = Path(self.url.removeprefix("sqlite:///"))
            if read_only:
                if not path.is_file():
                    raise VirtbenchError(NO_STORE.format(path))
                # mode=ro (immutable=1 on a read-only filesystem): never a write, not even
                # the journal mode (sqlite_reader.py)
                engine_args["creator"] = functools.partial(connect_read_only, path,
                                                           check_same_thread=False)
            elif not create and (not path.is_file() or path.stat().st_size == 0):
                raise VirtbenchError(NO_STORE.format(shown(location)))
            else:  # before SQLite opens it: a device or another program's database refused
                check_store_file(path, location)
        try:
            self.engine: Engine = create_engine(self.url, future=True,
                                                connect_args=connect_args, **engine_args)
        except (ArgumentError, ImportError, ValueError) as exc:  # a malformed or foreign URL
            raise VirtbenchError(
                f"cannot open result store {shown(location)!r}: {scrubbed(str(exc), location)}; "
                "give a SQLite file path or postgresql://user@host[:port]/dbname") from None
        if self.engine.dialect.name == "sqlite":
            event.listen(self.engine, "connect",
                         _sqlite_read_only if read_only else _sqlite_pragmas)
        event.listen(self.engine, "handle_error", functools.partial(_store_failed, location))
        self.dialect = self.engine.dialect.name
        self._writes = _trial_writes(self.dialect)
        try:
            with self.engine.begin() as conn:
                if read_only:
                    check_current(current_version(conn), location)
                elif not create and current_version(conn) == 0:  # PostgreSQL: no tables yet
                    raise VirtbenchError(NO_STORE.format(shown(location)))
                else:
                    migrate_exclusively(conn)
        except (StoreFailed, DBAPIError) as exc:
            # StoreFailed's reason is scrubbed already; the driver's own words may not be
            reason = exc.reason if isinstance(exc, StoreFailed) else scrubbed(str(exc.orig),
                                                                               location)
            raise VirtbenchError(f"cannot open result store {shown(location)!r}: {reason}") from exc

    def close(self) -> None:
        self.engine.dispose()

    # ---- how the reads run (reading.py) --------------------------------------------------
    def _rows(self, sql: str, params: Mapping[str, Any] | None = None) -> list[tuple[Any, ...]]:
        with self.engine.connect() as conn:
            return [tuple(row) for row in conn.execute(text(sql), dict(params or {}))]

    def _mappings(self, sql: str, params: Mapping[str, Any] | None = None
                  ) -> list[dict[str, Any]]:
        with self.engine.connect() as conn:
            return [dict(row) for row in conn.execute(text(sql), dict(params or {})).mappings()]

    def _stream(self, sql: str, params: Mapping[str, Any] | None = None
                ) -> Iterator[tuple[Any, ...]]:
        with self.engine.connect() as conn:
            result = conn.execution_options(yield_per=50_000).execute(text(sql),
                                                                      dict(params or {}))
            for row in result:
                yield tuple(row)

    # ---- writing -------------------------------------------------------------------------
    def create_run(
        self,
        *,
        experiment: str,
        description: str,
        spec_yaml: str,
        spec_path: str,
        seed: int,
        host: str,
        target: str,
        baseline: str,
        version: str,
        run_id: str | None = None,
        calibration: str | None = None,
    ) -> str:
        run_id = check_run_id(run_id) if run_id is not None else uuid.uuid4().hex[:12]
        if calibration is not None:
            check_run_id(calibration, "calibration id")
        owner = this_owner()
        row = _stored_text("runs", {
            "description": description, "spec_yaml": stored_spec_yaml(spec_yaml),
            "spec_path": spec_path,
            "host": host, "target": target, "baseline": baseline, "virtbench_version": version,
            "owner_host": owner.host})
        with self.engine.begin() as conn:
            conn.execute(
                insert(s.runs).values(
                    id=run_id,
                    experiment=experiment,
                    seed=seed,
                    status="running",
                    stop_reason="",
                    started_at=time.time(),
                    imported_from="",
                    owner_pid=owner.pid,
                    owner_boot_id=owner.boot_id,
                    calibration=calibration,
                    **row,
                )
            )
        return run_id

    def add_variants(self, run_id: str, items: Sequence[tuple[str, Mapping[str, Any]]],
                     baseline: str) -> None:
        rows = [
            {"run_id": run_id, "name": _stored_text("variants", {"name": name})["name"],
             "position": i, "knobs_json": json.dumps(knobs, sort_keys=True),
             "is_baseline": name == baseline}
            for i, (name, knobs) in enumerate(items)
        ]
        with self.engine.begin() as conn:
            conn.execute(insert(s.variants), rows)

    def add_workload(self, run_id: str, workload_id: str, name: str, position: int,
                     params: Mapping[str, Any], metrics: Iterable[Metric]) -> None:
        with self.engine.begin() as conn:
            conn.execute(insert(s.workloads).values(
                run_id=run_id, position=position,
                params_json=json.dumps(params, sort_keys=True, default=str),
                **_stored_text("workloads", {"workload_id": workload_id, "name": name})))
            conn.execute(insert(s.metrics), [
                {"run_id": run_id, "better": better_text(m.better), "is_primary": m.primary,
                 "domain": m.value_domain.value,
                 **_stored_text("metrics", {"workload_id": workload_id, "name": m.name,
                                            "unit": m.unit, "description": m.description})}
                for m in metrics
            ])

    def add_facts(self, run_id: str, phase: str, data: Mapping[str, Any]) -> int:
        with self.engine.begin() as conn:
            result = conn.execute(insert(s.facts).values(
                run_id=run_id, phase=_stored_text("facts", {"phase": phase})["phase"],
                captured_at=time.time(),
                data_json=json.dumps(data, sort_keys=True, default=str)))
            key = result.inserted_primary_key
            assert key is not None
            return int(key[0])

    def add_realisation(self, run_id: str, variant: str, workload_id: str, mechanism: str,
                        settings: Mapping[str, Any], limitations: Sequence[str],
                        env: Mapping[str, str | None] | None = None) -> None:
        """How a variant was realised for a workload; ``env`` is what its trials ran with."""
        with self.engine.begin() as conn:
            text_row = _stored_text("realisations", {
                "variant": variant, "workload_id": workload_id, "mechanism": mechanism})
            conn.execute(delete(s.realisations).where(
                s.realisations.c.run_id == run_id,
                s.realisations.c.variant == text_row["variant"],
                s.realisations.c.workload_id == text_row["workload_id"]))
            conn.execute(insert(s.realisations).values(
                run_id=run_id, **text_row, settings_json=json.dumps(settings, sort_keys=True),
                limitations_json=json.dumps(list(limitations)),
                env_json=json.dumps(dict(env or {}), sort_keys=True)))

    def record_trial(self, run_id: str, trial: TrialRecord, measurements: Sequence[Measurement],
                     units: Mapping[str, str], artifacts: Sequence[Artifact] = ()) -> int:
        """Store one trial and all its samples in one transaction: all or nothing. While the
        SQLite file is locked by another writer, try again for :data:`TRIAL_LOCK_PATIENCE_S`."""
        deadline = time.monotonic() + TRIAL_LOCK_PATIENCE_S
        while True:
            try:
                return self._record_trial_once(run_id, trial, measurements, units, artifacts)
            except StoreFailed as exc:
                if "database is locked" not in exc.reason or time.monotonic() >= deadline:
                    raise

    def _record_trial_once(self, run_id: str, trial: TrialRecord,
                           measurements: Sequence[Measurement], units: Mapping[str, str],
                           artifacts: Sequence[Artifact]) -> int:
        """The one way a trial is written, on SQLite and PostgreSQL: the trial's row, its
        samples' rows (:func:`trial_row`, :func:`sample_rows`) and its artifacts, by the
        driver's own statements in one transaction. SQLAlchemy's statement machinery costs more
        than the commit itself here: the runner's overhead per trial is a measured floor
        (benchmarks/engine_runner_overhead.py), as is a fleet's rate of per-request samples
        (benchmarks/fleet_ingest.py)."""
        writes = self._writes
        raw = self.engine.raw_connection()
        try:
            cursor: Any = raw.cursor()
            row = trial_row(run_id, trial)
            cursor.execute(writes.insert_trial, tuple(row[name] for name in _TRIAL_INSERT))
            ((trial_id,),) = cursor.fetchall()  # all: the statement is done (SQLite)
            if measurements and not trial.warmup:
                writes.add_samples(cursor, sample_rows(trial_id, row, measurements, units))
            if artifacts:
                cursor.executemany(writes.insert_artifact, [
                    tuple(artifact_row(run_id, trial_id, a)[name] for name in _ARTIFACT_INSERT)
                    for a in artifacts])
            raw.commit()
            return int(trial_id)
        except BaseException as exc:
            raw.rollback()
            database, operational = writes.errors
            if isinstance(exc, operational) or type(exc) is database:
                # said as _store_failed says it
                raise StoreFailed(self.location, str(exc).strip()) from exc
            raise
        finally:
            raw.close()

    def claim_run(self, seen: RunInfo) -> bool:
        """Make this process the owner of a run to resume it, if nobody else did since ``seen``
        was read: one conditional UPDATE (the status and owner must still be those seen), so
        of two processes resuming one run at once exactly one gets it. False: another did."""
        owner = this_owner()
        runs = s.runs.c
        with self.engine.begin() as conn:
            result = conn.execute(update(s.runs).where(
                runs.id == seen.id, runs.status == seen.recorded_status,
                runs.owner_pid.is_not_distinct_from(seen.owner_pid),
                runs.owner_host.is_not_distinct_from(seen.owner_host),
                runs.owner_boot_id.is_not_distinct_from(seen.owner_boot_id),
            ).values(status="running", stop_reason="", ended_at=None, owner_pid=owner.pid,
                     owner_host=owner.host, owner_boot_id=owner.boot_id))
            return result.rowcount == 1

    def set_run_status(self, run_id: str, status: str, stop_reason: str = "") -> None:
        """Store the run's status; on a full SQLite disk, after reclaiming the log's space once
        (a run's last write comes after the write that found the disk full)."""
        def write() -> None:
            with self.engine.begin() as conn:
                conn.execute(update(s.runs).where(s.runs.c.id == run_id).values(
                    status=status, stop_reason=stored(stop_reason),
                    ended_at=None if status == "running" else time.time()))

        try:
            write()
        except StoreFailed as exc:
            if self.engine.dialect.name != "sqlite" or "disk is full" not in exc.reason:
                raise
            self._reclaim_log()
            write()

    def _reclaim_log(self) -> None:
        """Copy the write-ahead log into the database and truncate it: the log keeps every
        version of the pages a run rewrote (each trial rewrites the same few), the database
        one, so this frees most of the log's space. Best effort: a checkpoint that finds no
        room either leaves things as they were."""
        with contextlib.suppress(StoreFailed), self.engine.connect() as conn:
            conn.exec_driver_sql("PRAGMA wal_checkpoint(TRUNCATE)")

    def delete_run(self, run_id: str, conn: Connection | None = None) -> None:
        """Delete the run and its rows (in ``conn``'s transaction when given)."""
        if conn is None:
            with self.engine.begin() as own:
                self.delete_run(run_id, own)
            return
        for table in (s.samples, s.artifacts, s.trials, s.realisations, s.facts, s.metrics,
                      s.workloads, s.variants):
            conn.execute(delete(table).where(table.c.run_id == run_id))
        conn.execute(delete(s.runs).where(s.runs.c.id == run_id))

    def has_run(self, run_id: str, conn: Connection | None = None) -> bool:
        query = select(s.runs.c.id).where(s.runs.c.id == run_id)
        if conn is not None:
            return conn.execute(query).first() is not None
        with self.engine.connect() as own:
            return own.execute(query).first() is not None

    # ---- saved state (e.g. original libvirt XML for rollback) -----------------------------
    def save_state(self, key: str, value: Any) -> None:
        with self.engine.begin() as conn:
            conn.execute(delete(s.saved_state).where(s.saved_state.c.key == key))
            conn.execute(insert(s.saved_state).values(
                key=key, value_json=json.dumps(value), saved_at=time.time()))

    def delete_state(self, key: str) -> None:
        with self.engine.begin() as conn:
            conn.execute(delete(s.saved_state).where(s.saved_state.c.key == key))

    # ---- noise profiles (`virtbench calibrate`, decide/calibration.py) -------------------
    def add_noise_profile(self, *, fingerprint: str, experiment_hash: str, experiment: str,
                          host: str, variant: str, run_ids: Sequence[str],
                          data: Mapping[str, Any], version: str = "") -> int:
        """Store a profile (an older one of the same key stays; the latest is read)."""
        with self.engine.begin() as conn:
            result = conn.execute(insert(s.noise_profiles).values(
                fingerprint=fingerprint, experiment_hash=experiment_hash,
                experiment=experiment, host=host, variant=variant,
                run_ids_json=json.dumps(list(run_ids)), created_at=time.time(),
                virtbench_version=version, data_json=json.dumps(data, allow_nan=True)))
            key = result.inserted_primary_key
            assert key is not None
            return int(key[0])

    # ---- import (portable.py) -------------------------------------------------------------
    def insert_rows(self, conn: Connection, table_name: str, rows: list[dict[str, Any]]) -> None:
        if rows:
            conn.execute(insert(s.metadata.tables[table_name]), rows)


def trial_row(run_id: str, trial: TrialRecord) -> dict[str, Any]:
    """The row of ``trial`` in the trials table, by column (all but the id it is given)."""
    return {"run_id": run_id, "repetition": trial.repetition, "order_index": trial.order_index,
            "warmup": trial.warmup, "status": trial.status, "started_at": trial.started_at,
            "ended_at": trial.ended_at, "facts_id": trial.facts_id,
            "notes_json": json.dumps(dict(trial.notes), sort_keys=True),
            **_stored_text("trials", {"variant": trial.variant,
                                      "workload_id": trial.workload_id, "error": trial.error,
                                      "target": trial.target})}


def stored_spec_yaml(spec_yaml: str) -> str:
    """An experiment file as the store keeps it: its line breaks as YAML reads them (CR LF and
    CR as LF), then :func:`_stored_text`'s rule, so that the stored text still reads as the
    same experiment (the report's capacity section and `compare` read it back)."""
    text = spec_yaml.replace("\r\n", "\n").replace("\r", "\n")
    return stored(text, TEXT_LIMITS["runs"]["spec_yaml"])


def _stored_text(table: str, values: Mapping[str, str]) -> dict[str, str]:
    """``values`` (columns of ``table``) as the store keeps text (safetext.stored, the one rule
    for stored text; store/columns.py's limits): ESC, NUL, bidi overrides and surrogates as
    escapes, on SQLite and PostgreSQL alike."""
    limits = TEXT_LIMITS[table]
    return {name: stored(value, limits[name], line=limits[name] <= NAME_MAX)
            for name, value in values.items()}


# A sample row: the columns a sample takes from its measurement, in this order, after those it
# takes from its trial's row (the rest, in the table's order): the sample INSERT's columns.
_FROM_MEASUREMENT = ("metric", "value", "unit", "t", "labels_json", "status")
listed("samples", _FROM_MEASUREMENT)  # every one a column of samples, or no import
_FROM_TRIAL = tuple(name for name in written("samples") if name not in _FROM_MEASUREMENT)
_SAMPLE_INSERT = _FROM_TRIAL + _FROM_MEASUREMENT
_TRIAL_INSERT = written("trials")
_ARTIFACT_INSERT = written("artifacts")


def sample_rows(trial_id: int, trial: Mapping[str, Any], measurements: Sequence[Measurement],
                units: Mapping[str, str]) -> list[tuple[Any, ...]]:
    """The samples of a trial (its :func:`trial_row` and id) as rows of
    :data:`_SAMPLE_INSERT`'s columns."""
    context = {**trial, "trial_id": trial_id}
    fixed = tuple(context[name] for name in _FROM_TRIAL)
    return [(*fixed, m.metric, m.value, units[m.metric], m.t,
             json.dumps(m.labels, sort_keys=True) if m.labels else None, m.status)
            for m in measurements]


def artifact_row(run_id: str, trial_id: int, artifact: Artifact) -> dict[str, Any]:
    """The row of a trial's artifact in the artifacts table, by column (all but its id)."""
    return {"run_id": run_id, "trial_id": trial_id,
            "name": _stored_text("artifacts", {"name": artifact.name})["name"],
            "media_type": artifact.media_type, "content": artifact.content}


@dataclass(frozen=True)
class _TrialWrites:
    """A trial's statements in one driver's own terms, and the driver's errors."""

    insert_trial: str
    insert_artifact: str
    add_samples: Callable[[Any, list[tuple[Any, ...]]], None]
    """Send a trial's sample rows on the driver's cursor."""
    errors: tuple[type[BaseException], type[BaseException]]
    """The driver's DatabaseError and OperationalError: an error of exactly the first type,
    or of the second, is the database's own (locked, disk full, connection lost)."""


def _trial_writes(dialect: str) -> _TrialWrites:
    """sqlite3's statements (``?``, executemany) or psycopg's (``%s``, samples by COPY, at
    several times the rate of INSERTs: a fleet's hosts store per-request samples)."""
    if dialect != "postgresql":
        insert_sample = insert_sql("samples", "?", names=_SAMPLE_INSERT)
        return _TrialWrites(
            insert_trial=insert_sql("trials", "?", names=_TRIAL_INSERT, returning="id"),
            insert_artifact=insert_sql("artifacts", "?", names=_ARTIFACT_INSERT),
            add_samples=lambda cursor, rows: cursor.executemany(insert_sample, rows),
            errors=(sqlite3.DatabaseError, sqlite3.OperationalError))
    import psycopg  # the PostgreSQL driver: only a PostgreSQL store needs it

    copy_samples = f"COPY samples ({listed('samples', _SAMPLE_INSERT)}) FROM STDIN"

    def add_samples(cursor: Any, rows: list[tuple[Any, ...]]) -> None:
        with cursor.copy(copy_samples) as copy:
            for row in rows:
                copy.write_row(row)

    return _TrialWrites(
        insert_trial=insert_sql("trials", "%s", names=_TRIAL_INSERT, returning="id"),
        insert_artifact=insert_sql("artifacts", "%s", names=_ARTIFACT_INSERT),
        add_samples=add_samples, errors=(psycopg.DatabaseError, psycopg.OperationalError))
