"""The result store: the only code that writes SQL. SQLite by default, PostgreSQL by URL."""

from __future__ import annotations

import contextlib
import functools
import json
import sqlite3
import time
import uuid
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sqlalchemy import (
    Connection,
    Engine,
    case,
    cast,
    create_engine,
    delete,
    event,
    func,
    insert,
    select,
    update,
)
from sqlalchemy.engine import ExceptionContext
from sqlalchemy.exc import ArgumentError, DatabaseError, DBAPIError, OperationalError

from virtbench.model import Artifact, Measurement, Metric, RunFailed, VirtbenchError
from virtbench.store import schema as s
from virtbench.store.ids import check_run_id, check_run_ref
from virtbench.store.liveness import OwnerState, owner_state, this_owner
from virtbench.store.migrations import MIGRATIONS, current_version, migrate_exclusively

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

__all__ = ["RunInfo", "SampleRow", "Store", "StoreFailed", "TrialRecord", "store_url"]


def store_url(location: str) -> str:
    """Accept a SQLAlchemy URL, a ``postgresql://`` URL, or a plain SQLite file path."""
    if location.startswith(("postgresql://", "postgres://")):
        return "postgresql+psycopg://" + location.split("://", 1)[1]
    if "://" in location:
        return location
    return f"sqlite:///{Path(location).expanduser().resolve()}"


@dataclass(frozen=True)
class RunInfo:
    id: str
    experiment: str
    description: str
    status: str
    stop_reason: str
    started_at: float
    ended_at: float | None
    host: str
    target: str
    baseline: str
    seed: int
    spec_yaml: str
    spec_path: str
    imported_from: str
    # Who runs it (schema 5; None in older runs): see store/liveness.py.
    owner_pid: int | None = None
    owner_host: str | None = None
    owner_boot_id: str | None = None
    recorded_status: str = ""
    """The status as stored; ``status`` says "abandoned" for a "running" run whose process is
    gone (same host, pid gone or machine rebooted since), with the resume command as the stop
    reason."""
    calibration: str | None = None
    """The calibration (`virtbench calibrate`'s id of its K runs) this run is one of; None for
    every other run (schema 7)."""

    @property
    def owner(self) -> str:
        """The owner as a reader can check it: 'process 1234 on host h'."""
        return f"process {self.owner_pid} on host {self.owner_host}"


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


@dataclass(frozen=True)
class SampleRow:
    run_id: str
    variant: str
    workload_id: str
    metric: str
    value: float | None
    unit: str
    repetition: int
    t: float | None
    labels: dict[str, str]
    status: str
    trial_id: int


_NO_STORE = ("no store at {} (`virtbench run` and `virtbench import` create one; check "
             "--store or VIRTBENCH_STORE)")

# A trial keeps trying to store itself this long while the file is locked: fleet hosts write
# large per-request trials into one file, and on a loaded machine one 10 s wait ran out and a
# whole trial was lost. Other commands (import, delete) still fail after 10 s, with the reason.
TRIAL_LOCK_PATIENCE_S = 120.0
BUSY_TIMEOUT_MS = 10_000


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


class StoreFailed(RunFailed):
    """The store could not be read or written (locked, disk full, connection lost)."""

    def __init__(self, location: str, reason: str) -> None:
        hint = next((h for needle, h in _HINTS if needle in reason), "")
        super().__init__(f"result store {location!r}: {reason}{hint}")
        self.reason = reason


_HINTS = (
    ("database is locked", " (another process holds a write lock on it; wait for it to end)"),
    ("disk is full", " (free space on the disk that holds it; what was stored before is kept)"),
    ("disk I/O error", " (is the disk that holds it full or failing?)"),
)


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
    cursor.execute("PRAGMA busy_timeout=10000")
    cursor.close()


class Store:
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
        if read_only and self.url.startswith("sqlite:///"):
            path = Path(self.url.removeprefix("sqlite:///"))
            if not path.is_file():
                raise VirtbenchError(_NO_STORE.format(path))
        if not create and self.url.startswith("sqlite:///"):
            path = Path(self.url.removeprefix("sqlite:///"))
            if not path.is_file() or path.stat().st_size == 0:
                raise VirtbenchError(_NO_STORE.format(location))
        try:
            self.engine: Engine = create_engine(self.url, future=True,
                                                connect_args=connect_args)
        except (ArgumentError, ImportError, ValueError) as exc:  # a malformed or foreign URL
            raise VirtbenchError(
                f"cannot open result store {location!r}: {exc}; give a SQLite file path or "
                "postgresql://user@host[:port]/dbname") from exc
        if self.engine.dialect.name == "sqlite":
            event.listen(self.engine, "connect",
                         _sqlite_read_only if read_only else _sqlite_pragmas)
        event.listen(self.engine, "handle_error", functools.partial(_store_failed, location))
        try:
            with self.engine.begin() as conn:
                if read_only:
                    _check_current(conn, location)
                elif not create and current_version(conn) == 0:  # PostgreSQL: no tables yet
                    raise VirtbenchError(_NO_STORE.format(location))
                else:
                    migrate_exclusively(conn)
        except (StoreFailed, DBAPIError) as exc:
            reason = exc.reason if isinstance(exc, StoreFailed) else exc.orig
            raise VirtbenchError(f"cannot open result store {location!r}: {reason}") from exc

    def close(self) -> None:
        self.engine.dispose()

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
        with self.engine.begin() as conn:
            conn.execute(
                insert(s.runs).values(
                    id=run_id,
                    experiment=experiment,
                    description=description,
                    spec_yaml=spec_yaml,
                    spec_path=spec_path,
                    seed=seed,
                    status="running",
                    stop_reason="",
                    started_at=time.time(),
                    host=host,
                    target=target,
                    baseline=baseline,
                    virtbench_version=version,
                    imported_from="",
                    owner_pid=owner.pid,
                    owner_host=owner.host,
                    owner_boot_id=owner.boot_id,
                    calibration=calibration,
                )
            )
        return run_id

    def add_variants(self, run_id: str, items: Sequence[tuple[str, Mapping[str, Any]]],
                     baseline: str) -> None:
        rows = [
            {"run_id": run_id, "name": name, "position": i,
             "knobs_json": json.dumps(knobs, sort_keys=True), "is_baseline": name == baseline}
            for i, (name, knobs) in enumerate(items)
        ]
        with self.engine.begin() as conn:
            conn.execute(insert(s.variants), rows)

    def add_workload(self, run_id: str, workload_id: str, name: str, position: int,
                     params: Mapping[str, Any], metrics: Iterable[Metric]) -> None:
        with self.engine.begin() as conn:
            conn.execute(insert(s.workloads).values(
                run_id=run_id, workload_id=workload_id, name=name, position=position,
                params_json=json.dumps(params, sort_keys=True, default=str)))
            conn.execute(insert(s.metrics), [
                {"run_id": run_id, "workload_id": workload_id, "name": m.name, "unit": m.unit,
                 "better": m.better.value, "description": m.description, "is_primary": m.primary,
                 "domain": m.value_domain.value}
                for m in metrics
            ])

    def add_facts(self, run_id: str, phase: str, data: Mapping[str, Any]) -> int:
        with self.engine.begin() as conn:
            result = conn.execute(insert(s.facts).values(
                run_id=run_id, phase=phase, captured_at=time.time(),
                data_json=json.dumps(data, sort_keys=True, default=str)))
            key = result.inserted_primary_key
            assert key is not None
            return int(key[0])

    def add_realisation(self, run_id: str, variant: str, workload_id: str, mechanism: str,
                        settings: Mapping[str, Any], limitations: Sequence[str],
                        env: Mapping[str, str | None] | None = None) -> None:
        """How a variant was realised for a workload; ``env`` is what its trials ran with."""
        with self.engine.begin() as conn:
            conn.execute(delete(s.realisations).where(
                s.realisations.c.run_id == run_id, s.realisations.c.variant == variant,
                s.realisations.c.workload_id == workload_id))
            conn.execute(insert(s.realisations).values(
                run_id=run_id, variant=variant, workload_id=workload_id, mechanism=mechanism,
                settings_json=json.dumps(settings, sort_keys=True),
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
        if self.engine.dialect.name == "sqlite" and not artifacts:
            return self._record_trial_sqlite(run_id, trial, measurements, units)
        if self.engine.dialect.name == "postgresql" and len(measurements) >= _COPY_FROM:
            return self._record_trial_postgres(run_id, trial, measurements, units, artifacts)
        with self.engine.begin() as conn:
            # Parameters passed to execute() (not .values()) reuse the compiled statement:
            # this is the per-trial hot path.
            result = conn.execute(_INSERT_TRIAL, _trial_row(run_id, trial))
            key = result.inserted_primary_key
            assert key is not None
            trial_id = int(key[0])
            if measurements and not trial.warmup:
                conn.execute(_INSERT_SAMPLE, [
                    {"run_id": run_id, "trial_id": trial_id, "variant": trial.variant,
                     "workload_id": trial.workload_id, "metric": m.metric, "value": m.value,
                     "unit": units[m.metric], "repetition": trial.repetition, "t": m.t,
                     "labels_json": json.dumps(m.labels, sort_keys=True) if m.labels else None,
                     "status": m.status, "started_at": trial.started_at,
                     "ended_at": trial.ended_at, "target": trial.target,
                     "facts_id": trial.facts_id}
                    for m in measurements
                ])
            _insert_artifacts(conn, run_id, trial_id, artifacts)
            return trial_id

    def _record_trial_postgres(self, run_id: str, trial: TrialRecord,
                               measurements: Sequence[Measurement], units: Mapping[str, str],
                               artifacts: Sequence[Artifact]) -> int:
        """A trial of many samples (per-request ones) on PostgreSQL: the samples go in by
        COPY, in the trial's transaction, at several times the rate of batched INSERTs:
        a fleet controller's host processes store per-request samples (docs/fleet.md)."""
        import psycopg  # the PostgreSQL driver: only a PostgreSQL store needs it

        with self.engine.begin() as conn:
            trial_id = int(conn.execute(_INSERT_TRIAL.returning(s.trials.c.id),
                                         _trial_row(run_id, trial)).scalar_one())
            if not trial.warmup:
                driver: Any = conn.connection.dbapi_connection
                try:
                    with driver.cursor() as cursor, cursor.copy(_POSTGRES_COPY_SAMPLES) as copy:
                        for row in _sample_rows(run_id, trial_id, trial, measurements, units):
                            copy.write_row(row)
                except psycopg.OperationalError as exc:  # said as _store_failed says it
                    raise StoreFailed(self.location, str(exc).strip()) from exc
            _insert_artifacts(conn, run_id, trial_id, artifacts)
            return trial_id

    def _record_trial_sqlite(self, run_id: str, trial: TrialRecord,
                             measurements: Sequence[Measurement],
                             units: Mapping[str, str]) -> int:
        """The per-trial hot path on SQLite: plain DBAPI statements, one transaction.

        SQLAlchemy's statement machinery costs more than the commit itself here; the runner's
        overhead per trial is a measured floor (benchmarks/engine_runner_overhead.py).
        """
        raw = self.engine.raw_connection()
        try:
            cursor = raw.cursor()
            cursor.execute(_SQLITE_INSERT_TRIAL, (
                run_id, trial.variant, trial.workload_id, trial.repetition, trial.order_index,
                trial.warmup, trial.status, trial.error, trial.started_at, trial.ended_at,
                trial.target, trial.facts_id, json.dumps(dict(trial.notes), sort_keys=True)))
            trial_id = int(cursor.lastrowid or 0)
            if measurements and not trial.warmup:
                cursor.executemany(_SQLITE_INSERT_SAMPLE,
                                   _sample_rows(run_id, trial_id, trial, measurements, units))
            raw.commit()
            return trial_id
        except sqlite3.OperationalError as exc:  # locked, disk full: said as _store_failed does
            raw.rollback()
            raise StoreFailed(self.location, str(exc)) from exc
        except BaseException:
            raw.rollback()
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
                    status=status, stop_reason=stop_reason,
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

    def load_state(self, key: str) -> Any | None:
        with self.engine.connect() as conn:
            row = conn.execute(select(s.saved_state.c.value_json)
                               .where(s.saved_state.c.key == key)).first()
        return None if row is None else json.loads(row[0])

    def delete_state(self, key: str) -> None:
        with self.engine.begin() as conn:
            conn.execute(delete(s.saved_state).where(s.saved_state.c.key == key))

    def state_keys(self, prefix: str = "") -> list[str]:
        with self.engine.connect() as conn:
            rows = conn.execute(select(s.saved_state.c.key)
                                .where(s.saved_state.c.key.startswith(prefix, autoescape=True))
                                .order_by(s.saved_state.c.key)).all()
        return [r[0] for r in rows]

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

    def noise_profile(self, fingerprint: str, experiment_hash: str) -> dict[str, Any] | None:
        """The latest profile of this host fingerprint and experiment file, or None: its
        columns, with ``run_ids`` and ``data`` decoded (stored text: the caller checks it)."""
        t = s.noise_profiles
        with self.engine.connect() as conn:
            row = conn.execute(
                select(t).where(t.c.fingerprint == fingerprint,
                                t.c.experiment_hash == experiment_hash)
                .order_by(t.c.created_at.desc(), t.c.id.desc()).limit(1)).mappings().first()
        if row is None:
            return None
        found = dict(row)
        try:
            found["run_ids"] = json.loads(found.pop("run_ids_json"))
            found["data"] = json.loads(found.pop("data_json"))
        except ValueError as exc:
            raise VirtbenchError(f"the store's noise profile {found['id']} is damaged "
                                 f"({exc}); run `virtbench calibrate` again") from exc
        return found

    # ---- reading -------------------------------------------------------------------------
    def runs(self) -> list[RunInfo]:
        with self.engine.connect() as conn:
            rows = conn.execute(select(s.runs).order_by(s.runs.c.started_at)).mappings().all()
        return [_run_info(r) for r in rows]

    def run_by_id(self, run_id: str) -> RunInfo | None:
        """The run whose id is exactly ``run_id``, or None. No grammar check: an older store
        may hold ids that today's grammar refuses (written before ids were checked)."""
        with self.engine.connect() as conn:
            row = conn.execute(select(s.runs).where(s.runs.c.id == run_id)).mappings().first()
        return None if row is None else _run_info(row)

    def run(self, ref: str = "latest") -> RunInfo:
        """A run by id, unique id prefix, experiment name (its latest run) or 'latest'; a
        reference outside the grammar of run ids and names (store/ids.py) is refused unless
        it is exactly the id of a stored run (an older store's, written before ids were
        checked: it can be read, never resumed)."""
        try:
            check_run_ref(ref)
        except VirtbenchError:
            # (NUL: PostgreSQL refuses it in a query, and no URL or argument carries it)
            legacy = None if "\x00" in ref else self.run_by_id(ref)
            if legacy is None:
                raise
            return legacy
        if ref != "latest":  # an exact id needs one row, not the whole table
            found = self.run_by_id(ref)
            if found is not None:
                return found
        runs = self.runs()
        if not runs:
            raise VirtbenchError(f"the store {self.url} holds no runs yet")
        if ref == "latest":
            return runs[-1]
        exact = [r for r in runs if r.id == ref]
        if exact:
            return exact[0]
        by_prefix = [r for r in runs if r.id.startswith(ref)]
        if len(by_prefix) == 1:
            return by_prefix[0]
        by_name = [r for r in runs if r.experiment == ref]
        if by_name:
            return by_name[-1]
        raise VirtbenchError(f"no run matches {ref!r}; `virtbench runs` lists them")

    def variants(self, run_id: str) -> list[tuple[str, dict[str, Any], bool]]:
        with self.engine.connect() as conn:
            rows = conn.execute(select(s.variants).where(s.variants.c.run_id == run_id)
                                .order_by(s.variants.c.position)).mappings().all()
        return [(r["name"], json.loads(r["knobs_json"]), bool(r["is_baseline"])) for r in rows]

    def workloads(self, run_id: str) -> list[tuple[str, str, dict[str, Any]]]:
        with self.engine.connect() as conn:
            rows = conn.execute(select(s.workloads).where(s.workloads.c.run_id == run_id)
                                .order_by(s.workloads.c.position)).mappings().all()
        return [(r["workload_id"], r["name"], json.loads(r["params_json"])) for r in rows]

    def metrics(self, run_id: str) -> dict[tuple[str, str], Metric]:
        from virtbench.model import Better, Domain

        with self.engine.connect() as conn:
            rows = conn.execute(select(s.metrics).where(s.metrics.c.run_id == run_id)
                                ).mappings().all()
        return {
            (r["workload_id"], r["name"]): Metric(
                r["name"], r["unit"], Better(r["better"]), r["description"], bool(r["is_primary"]),
                Domain(r["domain"]) if r["domain"] else None)
            for r in rows
        }

    def facts(self, run_id: str) -> list[tuple[int, str, float, dict[str, Any]]]:
        with self.engine.connect() as conn:
            rows = conn.execute(select(s.facts).where(s.facts.c.run_id == run_id)
                                .order_by(s.facts.c.id)).mappings().all()
        return [(r["id"], r["phase"], r["captured_at"], json.loads(r["data_json"])) for r in rows]

    def realisations(self, run_id: str) -> list[dict[str, Any]]:
        with self.engine.connect() as conn:
            rows = conn.execute(select(s.realisations)
                                .where(s.realisations.c.run_id == run_id)).mappings().all()
        return [
            {"variant": r["variant"], "workload_id": r["workload_id"], "mechanism": r["mechanism"],
             "settings": json.loads(r["settings_json"]),
             "limitations": json.loads(r["limitations_json"]), "env": json.loads(r["env_json"])}
            for r in rows
        ]

    def trials(self, run_id: str) -> list[dict[str, Any]]:
        with self.engine.connect() as conn:
            rows = conn.execute(select(s.trials).where(s.trials.c.run_id == run_id)
                                .order_by(s.trials.c.order_index, s.trials.c.id)).mappings().all()
        return [dict(r) | {"notes": json.loads(r["notes_json"])} for r in rows]

    def completed_trials(self, run_id: str) -> set[tuple[str, str, int]]:
        with self.engine.connect() as conn:
            rows = conn.execute(
                select(s.trials.c.variant, s.trials.c.workload_id, s.trials.c.repetition)
                .where(s.trials.c.run_id == run_id, s.trials.c.status == "ok",
                       s.trials.c.warmup.is_(False))).all()
        return {(r[0], r[1], int(r[2])) for r in rows}

    def next_order_index(self, run_id: str) -> int:
        with self.engine.connect() as conn:
            value = conn.execute(select(func.max(s.trials.c.order_index))
                                 .where(s.trials.c.run_id == run_id)).scalar()
        return 0 if value is None else int(value) + 1

    def sample_count(self, run_id: str) -> int:
        with self.engine.connect() as conn:
            value = conn.execute(select(func.count()).select_from(s.samples)
                                 .where(s.samples.c.run_id == run_id)).scalar()
        return int(value or 0)

    def sample_counts(self, run_ids: Sequence[str] | None = None) -> dict[str, int]:
        """Samples per run (all runs, or those given) in one grouped query."""
        query = select(s.samples.c.run_id, func.count()).group_by(s.samples.c.run_id)
        if run_ids is not None:
            query = query.where(s.samples.c.run_id.in_(list(run_ids)))
        with self.engine.connect() as conn:
            return {r[0]: int(r[1]) for r in conn.execute(query)}

    def runs_version(self) -> tuple[Any, ...]:
        """Changes whenever a run is added, removed, started, resumed or ended, or the process
        of a running one is found gone (abandoned): a reader that keeps the runs table re-reads
        it only then (one aggregate over the runs table, and the owners of running runs)."""
        query = select(func.count(), func.max(s.runs.c.started_at),
                       func.count(s.runs.c.ended_at), func.sum(s.runs.c.ended_at))
        running = select(s.runs.c.owner_pid, s.runs.c.owner_host, s.runs.c.owner_boot_id
                         ).where(s.runs.c.status == "running")
        with self.engine.connect() as conn:
            aggregate = tuple(conn.execute(query).one())
            gone = sum(owner_state(*row) == OwnerState.GONE for row in conn.execute(running))
        return (*aggregate, gone)

    def trial_progress(self, run_id: str) -> tuple[int, int, float | None]:
        """(trials ok, trials failed, end time of the latest trial) of a run, warm-ups excluded."""
        ok = func.sum(case((s.trials.c.status == "ok", 1), else_=0))
        query = (select(ok, func.count(), func.max(s.trials.c.ended_at))
                 .where(s.trials.c.run_id == run_id, s.trials.c.warmup.is_(False)))
        with self.engine.connect() as conn:
            row = conn.execute(query).one()
        done, total = int(row[0] or 0), int(row[1] or 0)
        return done, total - done, None if row[2] is None else float(row[2])

    def scalar_values(self, run_id: str) -> Iterator[tuple[str, str, str, float]]:
        """(variant, workload_id, metric, value) of every measured per-trial sample (t is None).

        The report's hot path: one ordered query, no labels, no ORM objects.
        """
        query = (
            select(s.samples.c.variant, s.samples.c.workload_id, s.samples.c.metric,
                   s.samples.c.value)
            .where(s.samples.c.run_id == run_id, s.samples.c.value.is_not(None),
                   s.samples.c.t.is_(None))
            .order_by(s.samples.c.workload_id, s.samples.c.metric, s.samples.c.variant)
        )
        with self.engine.connect() as conn:
            for row in conn.execution_options(yield_per=50_000).execute(query):
                yield row[0], row[1], row[2], row[3]

    def group_values(self, run_id: str, variant: str, workload_id: str, metric: str
                     ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float64]]:
        """Repetitions and values of one group's measured per-trial samples (one index range;
        rows straight from the DBAPI cursor, skipping SQLAlchemy's per-row processing)."""
        query = (
            select(s.samples.c.repetition, s.samples.c.value)
            .where(s.samples.c.run_id == run_id, s.samples.c.workload_id == workload_id,
                   s.samples.c.metric == metric, s.samples.c.variant == variant,
                   s.samples.c.t.is_(None), s.samples.c.value.is_not(None))
        )
        with self.engine.connect() as conn:
            cursor = conn.execute(query).cursor
            assert cursor is not None
            rows = cursor.fetchall()
        import numpy as np  # only the analysis reads groups: `runs` and `import` never need it

        table = np.array(rows, dtype=np.float64).reshape(-1, 2)
        return table[:, 0].astype(np.int64), table[:, 1]

    def series_rows(self, run_id: str) -> list[tuple[int, str, str, str, int, float, float,
                                                      str | None]]:
        """(trial_id, variant, workload_id, metric, repetition, t, value, labels['series']) of
        every time-stamped sample with a value, in insertion order.

        The series label is extracted by the database (JSON functions of SQLite and
        PostgreSQL), so a million per-request samples are not JSON-decoded in Python.
        """
        labels = s.samples.c.labels_json
        if self.engine.dialect.name == "postgresql":
            # here, not at the top: the PostgreSQL dialect's import is a tenth of the start-up
            # of a command on a SQLite store (`virtbench runs`), which never needs it
            from sqlalchemy.dialects.postgresql import JSONB

            series = cast(labels, JSONB)["series"].astext
        else:
            series = func.json_extract(labels, "$.series")
        query = (
            select(s.samples.c.trial_id, s.samples.c.variant, s.samples.c.workload_id,
                   s.samples.c.metric, s.samples.c.repetition, s.samples.c.t,
                   s.samples.c.value, series)
            .where(s.samples.c.run_id == run_id, s.samples.c.t.is_not(None),
                   s.samples.c.value.is_not(None))
            .order_by(s.samples.c.id)
        )
        with self.engine.connect() as conn:
            cursor = conn.execute(query).cursor
            assert cursor is not None
            return list(cursor.fetchall())

    def samples(self, run_id: str, *, workload_id: str | None = None, metric: str | None = None,
                series_only: bool = False) -> list[SampleRow]:
        query = select(s.samples).where(s.samples.c.run_id == run_id)
        if workload_id is not None:
            query = query.where(s.samples.c.workload_id == workload_id)
        if metric is not None:
            query = query.where(s.samples.c.metric == metric)
        if series_only:
            query = query.where(s.samples.c.t.is_not(None))
        query = query.order_by(s.samples.c.id)
        with self.engine.connect() as conn:
            rows = conn.execute(query).mappings().all()
        return [
            SampleRow(r["run_id"], r["variant"], r["workload_id"], r["metric"], r["value"],
                      r["unit"], r["repetition"], r["t"],
                      json.loads(r["labels_json"]) if r["labels_json"] else {}, r["status"],
                      r["trial_id"])
            for r in rows
        ]

    def status_counts(self, run_id: str) -> dict[tuple[str, str, str, str], int]:
        """Counts of non-ok per-trial samples per (variant, workload, metric, status).

        Time-series and per-request samples (t set) are summarised by their workload instead.
        """
        query = (
            select(s.samples.c.variant, s.samples.c.workload_id, s.samples.c.metric,
                   s.samples.c.status, func.count())
            .where(s.samples.c.run_id == run_id, s.samples.c.status != "ok",
                   s.samples.c.t.is_(None))
            .group_by(s.samples.c.variant, s.samples.c.workload_id, s.samples.c.metric,
                      s.samples.c.status)
        )
        with self.engine.connect() as conn:
            return {(r[0], r[1], r[2], r[3]): int(r[4]) for r in conn.execute(query)}

    def group_moments(self, run_ids: Sequence[str]
                      ) -> list[tuple[str, str, str, str, int, float, float]]:
        """(run_id, variant, workload_id, metric, n, sum, sum of squares) of the measured
        per-trial samples of every group of the given runs: a history of 1,000 runs in one
        aggregate query per chunk instead of a query per group."""
        value = s.samples.c.value
        out: list[tuple[str, str, str, str, int, float, float]] = []
        with self.engine.connect() as conn:
            for start in range(0, len(run_ids), _IN_CHUNK):
                query = (
                    select(s.samples.c.run_id, s.samples.c.variant, s.samples.c.workload_id,
                           s.samples.c.metric, func.count(value), func.sum(value),
                           func.sum(value * value))
                    .where(s.samples.c.run_id.in_(run_ids[start:start + _IN_CHUNK]),
                           s.samples.c.t.is_(None), value.is_not(None))
                    .group_by(s.samples.c.run_id, s.samples.c.variant,
                              s.samples.c.workload_id, s.samples.c.metric))
                out += [(r[0], r[1], r[2], r[3], int(r[4]), float(r[5]), float(r[6]))
                        for r in conn.execute(query)]
        return out

    def facts_of_runs(self, run_ids: Sequence[str], phase: str = "before"
                      ) -> dict[str, dict[str, Any]]:
        """The first facts snapshot of ``phase`` of each given run (run id -> facts)."""
        out: dict[str, dict[str, Any]] = {}
        with self.engine.connect() as conn:
            for start in range(0, len(run_ids), _IN_CHUNK):
                query = (select(s.facts.c.run_id, s.facts.c.data_json)
                         .where(s.facts.c.run_id.in_(run_ids[start:start + _IN_CHUNK]),
                                s.facts.c.phase == phase)
                         .order_by(s.facts.c.id))
                for run_id, data in conn.execute(query):
                    if run_id not in out:
                        out[run_id] = json.loads(data)
        return out

    def artifacts(self, run_id: str) -> list[dict[str, Any]]:
        with self.engine.connect() as conn:
            rows = conn.execute(select(s.artifacts).where(s.artifacts.c.run_id == run_id)
                                .order_by(s.artifacts.c.id)).mappings().all()
        return [dict(r) for r in rows]

    # ---- raw table access for export/import ----------------------------------------------
    def table_rows(self, table_name: str, run_id: str) -> list[dict[str, Any]]:
        table = s.metadata.tables[table_name]
        key = table.c.id if table_name == "runs" else table.c.run_id
        with self.engine.connect() as conn:
            return [dict(r) for r in conn.execute(select(table).where(key == run_id)).mappings()]

    def insert_rows(self, conn: Connection, table_name: str, rows: list[dict[str, Any]]) -> None:
        if rows:
            conn.execute(insert(s.metadata.tables[table_name]), rows)


# Run ids per IN (...) list: well below SQLite's bound-parameter limit.
_IN_CHUNK = 500
_INSERT_TRIAL = insert(s.trials)
_INSERT_SAMPLE = insert(s.samples)
_TRIAL_COLUMNS = ("run_id", "variant", "workload_id", "repetition", "order_index", "warmup",
                  "status", "error", "started_at", "ended_at", "target", "facts_id", "notes_json")
_SAMPLE_COLUMNS = ("run_id", "trial_id", "variant", "workload_id", "metric", "value", "unit",
                   "repetition", "t", "labels_json", "status", "started_at", "ended_at",
                   "target", "facts_id")
# From this many samples a trial's samples go to PostgreSQL by COPY: below it, batched INSERTs
# cost no more and keep the one code path every other store operation shares.
_COPY_FROM = 100
_POSTGRES_COPY_SAMPLES = f"COPY samples ({', '.join(_SAMPLE_COLUMNS)}) FROM STDIN"
_SQLITE_INSERT_TRIAL = (f"INSERT INTO trials ({', '.join(_TRIAL_COLUMNS)}) "
                        f"VALUES ({', '.join('?' * len(_TRIAL_COLUMNS))})")
_SQLITE_INSERT_SAMPLE = (f"INSERT INTO samples ({', '.join(_SAMPLE_COLUMNS)}) "
                         f"VALUES ({', '.join('?' * len(_SAMPLE_COLUMNS))})")


def _trial_row(run_id: str, trial: TrialRecord) -> dict[str, Any]:
    return {"run_id": run_id, "variant": trial.variant, "workload_id": trial.workload_id,
            "repetition": trial.repetition, "order_index": trial.order_index,
            "warmup": trial.warmup, "status": trial.status, "error": trial.error,
            "started_at": trial.started_at, "ended_at": trial.ended_at, "target": trial.target,
            "facts_id": trial.facts_id,
            "notes_json": json.dumps(dict(trial.notes), sort_keys=True)}


def _sample_rows(run_id: str, trial_id: int, trial: TrialRecord,
                 measurements: Sequence[Measurement], units: Mapping[str, str]
                 ) -> list[tuple[Any, ...]]:
    """A trial's samples as rows in :data:`_SAMPLE_COLUMNS` order (SQLite's executemany and
    PostgreSQL's COPY)."""
    return [(run_id, trial_id, trial.variant, trial.workload_id, m.metric, m.value,
             units[m.metric], trial.repetition, m.t,
             json.dumps(m.labels, sort_keys=True) if m.labels else None, m.status,
             trial.started_at, trial.ended_at, trial.target, trial.facts_id)
            for m in measurements]


def _insert_artifacts(conn: Connection, run_id: str, trial_id: int,
                      artifacts: Sequence[Artifact]) -> None:
    if artifacts:
        conn.execute(insert(s.artifacts), [
            {"run_id": run_id, "trial_id": trial_id, "name": a.name,
             "media_type": a.media_type, "content": a.content}
            for a in artifacts])


def _check_current(conn: Connection, location: str) -> None:
    version = current_version(conn)
    if version != len(MIGRATIONS):
        raise VirtbenchError(
            f"the store {location!r} has schema version {version}, this virtbench reads "
            f"{len(MIGRATIONS)}; a read-only viewer does not migrate it (any writing command, "
            "e.g. `virtbench runs`, does)")


def _run_info(r: Any) -> RunInfo:
    status, stop_reason = r["status"], r["stop_reason"]
    if status == "running" and owner_state(r["owner_pid"], r["owner_host"], r["owner_boot_id"]
                                           ) == OwnerState.GONE:
        status = "abandoned"
        command = (f"virtbench calibrate {r['spec_path'] or 'FILE'} --resume {r['calibration']}"
                   if r["calibration"] else
                   f"virtbench run {r['spec_path'] or 'FILE'} --resume {r['id']}")
        stop_reason = (f"abandoned (process {r['owner_pid']} on {r['owner_host']} is gone) — "
                       f"resume with `{command}`")
    return RunInfo(
        id=r["id"], experiment=r["experiment"], description=r["description"], status=status,
        stop_reason=stop_reason, started_at=r["started_at"], ended_at=r["ended_at"],
        host=r["host"], target=r["target"], baseline=r["baseline"], seed=r["seed"],
        spec_yaml=r["spec_yaml"], spec_path=r["spec_path"], imported_from=r["imported_from"],
        owner_pid=r["owner_pid"], owner_host=r["owner_host"], owner_boot_id=r["owner_boot_id"],
        recorded_status=r["status"], calibration=r["calibration"],
    )
