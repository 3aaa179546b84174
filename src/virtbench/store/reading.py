"""Reading the result store, written once in plain SQL for both databases.

The queries are SQL text with ``:name`` parameters, which both SQLite's own driver and
SQLAlchemy's ``text()`` accept: :class:`Store` (store.py) runs them through SQLAlchemy on
SQLite and PostgreSQL, :class:`~virtbench.store.sqlite_reader.SqliteReader` straight through
``sqlite3``. That second way is why this module exists: a command that only reads a SQLite
store (`runs`, `report`, `compare`) does not import SQLAlchemy, whose import is a quarter of
a CPU-second, most of those commands' start-up (benchmarks/cli_startup.py).

Values come back as the driver gives them (SQLite: booleans as 0/1), so every method converts
what it returns: both ways give the same Python values (tests/unit/store/test_reading.py).
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from virtbench.inputs.unicode_text import is_text, text_problem
from virtbench.model import Domain, Metric, RunFailed, VirtbenchError, parse_better
from virtbench.store.columns import checked, listed
from virtbench.store.ids import check_run_ref
from virtbench.store.liveness import OwnerState, owner_state
from virtbench.store.redaction import check_location, scrubbed, shown

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

__all__ = ["NO_STORE", "READABLE_SCHEMAS", "SCHEMA_VERSION", "RunInfo", "SampleRow",
           "StoreFailed", "StoreReader", "store_url"]

# The schema this virtbench reads and writes (store/migrations.py has one step per version).
SCHEMA_VERSION = 9
READABLE_SCHEMAS = (7, 8, SCHEMA_VERSION)
"""The versions read as they are, without migrating: versions 8 and 9 only changed indexes (8
the unmeasured samples', 9 the group reads' covering one), so a version-7 or 8 store answers
every query the same, in the same order, only slower."""

NO_STORE = ("no store at {} (`virtbench run` and `virtbench import` create one; check "
            "--store or VIRTBENCH_STORE)")

def store_url(location: str) -> str:
    """Accept a SQLAlchemy URL, a ``postgresql://`` URL, or a plain SQLite file path (the
    result holds the password a URL gives: it is never shown, store/redaction.py shows it); a
    location that cannot be one (not text, a symlink loop) is a VirtbenchError (exit 2)."""
    if "://" in location and not is_text(location):  # an undecodable byte, NUL: not a URL
        raise VirtbenchError(f"store {shown(location)!r}: not a URL: "
                             f"{text_problem(location)}")
    check_location(location)
    if location.startswith(("postgresql://", "postgres://")):
        return "postgresql+psycopg://" + location.split("://", 1)[1]
    if "://" in location:
        return location
    try:  # a file name may hold any byte but NUL (a surrogate escape is its byte again)
        path = Path(location).expanduser().resolve()
    except (ValueError, UnicodeError, RuntimeError, OSError) as exc:
        reason = "a symlink loop" if isinstance(exc, RuntimeError) else (
            exc.strerror if isinstance(exc, OSError) else text_problem(location) or str(exc))
        raise VirtbenchError(f"store {location!r}: not a usable file name "
                             f"({reason}; check --store or VIRTBENCH_STORE)") from None
    return f"sqlite:///{path}"


# How long a SQLite connection waits for another process's lock before it fails: every
# connection to a store, reading or writing, SQLAlchemy's or sqlite3's.
BUSY_TIMEOUT_MS = 10_000

# Run ids per IN (...) list: well below SQLite's bound-parameter limit.
IN_CHUNK = 500


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


class StoreFailed(RunFailed):
    """The store could not be read or written (locked, disk full, connection lost)."""

    def __init__(self, location: str, reason: str) -> None:
        reason = scrubbed(reason, location)
        hint = next((h for needle, h in _HINTS if needle in reason), "")
        super().__init__(f"result store {shown(location)!r}: {reason}{hint}")
        self.reason = reason


_HINTS = (
    ("database is locked", " (another process holds a write lock on it; wait for it to end)"),
    ("disk is full", " (free space on the disk that holds it; what was stored before is kept)"),
    ("disk I/O error", " (is the disk that holds it full or failing?)"),
    ("no such table", " (a file of another program, or a damaged store: virtbench's tables are "
                      "missing)"),
)


def in_list(name: str, values: Sequence[Any]) -> tuple[str, dict[str, Any]]:
    """``(:name0, :name1, …)`` and its parameters: an IN list both drivers bind."""
    params = {f"{name}{i}": value for i, value in enumerate(values)}
    return "(" + ", ".join(f":{key}" for key in params) + ")", params


# Every query, written once as SQL text and checked at import against the tables' columns
# (store/columns.py, which schema.py's tables are built against): a renamed or dropped column
# fails on import, not when a command first reads it. ``{runs}``: an IN list (:func:`in_list`).
_RUNS = checked(f"SELECT {listed('runs')} FROM runs ORDER BY started_at")
_RUN = checked(f"SELECT {listed('runs')} FROM runs WHERE id = :id")
_RUNS_VERSION = checked("SELECT count(*), max(started_at), count(ended_at), sum(ended_at) "
                        "FROM runs")
_RUNNING_OWNERS = checked("SELECT owner_pid, owner_host, owner_boot_id, imported_from FROM runs "
                          "WHERE status = 'running'")
_VARIANTS = checked("SELECT name, knobs_json, is_baseline FROM variants WHERE run_id = :run "
                    "ORDER BY position")
_WORKLOADS = checked("SELECT workload_id, name, params_json FROM workloads "
                     "WHERE run_id = :run ORDER BY position")
_METRICS = checked("SELECT workload_id, name, unit, better, description, is_primary, domain "
                   "FROM metrics WHERE run_id = :run")
_FACTS = checked("SELECT id, phase, captured_at, data_json FROM facts WHERE run_id = :run "
                 "ORDER BY id")
_FACTS_OF_RUNS = checked("SELECT run_id, data_json FROM facts WHERE run_id IN {runs} "
                         "AND phase = :phase ORDER BY id")
_REALISATIONS = checked("SELECT variant, workload_id, mechanism, settings_json, "
                        "limitations_json, env_json FROM realisations WHERE run_id = :run")
_ARTIFACTS = checked(f"SELECT {listed('artifacts')} FROM artifacts WHERE run_id = :run "
                     "ORDER BY id")
_TRIALS = checked(f"SELECT {listed('trials')} FROM trials WHERE run_id = :run "
                  "ORDER BY order_index, id")
_COMPLETED_TRIALS = checked("SELECT variant, workload_id, repetition FROM trials "
                            "WHERE run_id = :run AND status = 'ok' AND NOT warmup")
_NEXT_ORDER_INDEX = checked("SELECT max(order_index) FROM trials WHERE run_id = :run")
_TRIAL_PROGRESS = checked(
    "SELECT sum(CASE WHEN status = 'ok' THEN 1 ELSE 0 END), count(*), max(ended_at) "
    "FROM trials WHERE run_id = :run AND NOT warmup")
_SAMPLE_COUNT = checked("SELECT count(*) FROM samples WHERE run_id = :run")
_SAMPLE_COUNTS = checked("SELECT run_id, count(*) FROM samples GROUP BY run_id")
_SAMPLE_COUNTS_OF_RUNS = checked("SELECT run_id, count(*) FROM samples WHERE run_id IN {runs} "
                                 "GROUP BY run_id")
_SCALAR_VALUES = checked(
    "SELECT variant, workload_id, metric, value FROM samples WHERE run_id = :run "
    "AND value IS NOT NULL AND t IS NULL ORDER BY workload_id, metric, variant")
# One group's measured per-trial samples: one range of ix_samples_group_values (v9; of
# ix_samples_variant_group before), in its order, by id (the same for every query of this
# filter, so the values come in the same order from each), read from the index alone.
_GROUP = ("FROM samples WHERE run_id = :run AND workload_id = :workload AND metric = :metric "
          "AND variant = :variant AND t IS NULL AND value IS NOT NULL")
_GROUP_VALUES = checked(f"SELECT repetition, value {_GROUP}")
_GROUP_VALUES_ONLY = checked(f"SELECT value {_GROUP}")
# SQLite walks the group's index range from its last sample back (the range is in id order):
# a run's later trials hold its higher repetitions, so where one reaches the bound it is found
# in the first rows. PostgreSQL is not asked for an order: it could then walk the primary key
# back over every newer run's samples instead of the group's range.
_GROUP_REACHES = f"SELECT 1 {_GROUP} AND repetition >= :repetition"
_GROUP_REACHES_SQLITE = checked(f"{_GROUP_REACHES} ORDER BY id DESC LIMIT 1")
_GROUP_REACHES_POSTGRES = checked(f"{_GROUP_REACHES} LIMIT 1")
# The series label extracted by the database (JSON functions of SQLite and PostgreSQL), so a
# million per-request samples are not JSON-decoded in Python.
_SERIES_ROWS = ("SELECT trial_id, variant, workload_id, metric, repetition, t, value, {series} "
                "FROM samples WHERE run_id = :run AND t IS NOT NULL AND value IS NOT NULL "
                "ORDER BY id")
_SERIES_ROWS_SQLITE = checked(_SERIES_ROWS.format(
    series="json_extract(labels_json, '$.series')"))
_SERIES_ROWS_POSTGRES = checked(_SERIES_ROWS.format(
    series="CAST(labels_json AS JSONB) ->> 'series'"))
# The report's series, one (variant, workload, metric) index range at a time: rows come in
# the index's order (its key, then id), so neither the database nor Python sorts a million
# per-request samples. ``maybe_series`` is 1 where the labels may name a series: the key
# "series" written plainly or with an escape (a backslash); only then are labels extracted.
_SERIES_COUNT = checked("SELECT count(*) FROM samples WHERE run_id = :run AND t IS NOT NULL")
_SERIES_RANGES = checked("SELECT DISTINCT workload_id, metric, variant FROM samples "
                         "WHERE run_id = :run AND t IS NOT NULL")
_RANGE_SERIES = ("SELECT {columns} FROM samples WHERE run_id = :run AND workload_id = :workload "
                 "AND metric = :metric AND variant = :variant AND t IS NOT NULL "
                 "AND value IS NOT NULL ORDER BY id")
_RANGE_SERIES_SQLITE = checked(_RANGE_SERIES.format(
    columns="id, trial_id, repetition, t, value, ifnull(instr(labels_json, 'series') > 0 "
            "OR instr(labels_json, char(92)) > 0, 0)"))
_RANGE_SERIES_POSTGRES = checked(_RANGE_SERIES.format(
    columns="id, trial_id, repetition, t, value, CASE WHEN CAST(labels_json AS JSONB) ->> "
            "'series' IS NULL THEN 0 ELSE 1 END"))
_RANGE_LABELS_SQLITE = checked(_RANGE_SERIES.format(
    columns="json_extract(labels_json, '$.series')"))
_RANGE_LABELS_POSTGRES = checked(_RANGE_SERIES.format(
    columns="CAST(labels_json AS JSONB) ->> 'series'"))
_SAMPLE_ROW = ("run_id", "variant", "workload_id", "metric", "value", "unit", "repetition", "t",
               "labels_json", "status", "trial_id")
"""The columns of a :class:`SampleRow`, in its fields' order (labels decoded from JSON)."""
_SAMPLES = f"SELECT {listed('samples', _SAMPLE_ROW)} FROM samples WHERE {{where}} ORDER BY id"
_SAMPLE_FILTERS = ("run_id = :run", "workload_id = :workload", "metric = :metric",
                   "t IS NOT NULL")
"""What :meth:`StoreReader.samples` may ask, in this order (the run's always)."""
checked(_SAMPLES.format(where=" AND ".join(_SAMPLE_FILTERS)))  # each query has some of these
# Read through the partial index ix_samples_unmeasured (status != 'ok', schema 8): only the
# unmeasured samples, not the run's million measured ones (a quarter of a second). A version-7
# store has no such index: grouped by status first, SQLite then reads the per-trial samples
# through ix_samples_series (run_id, t IS NULL), not every sample of the run through the group
# index (a second instead of a hundredth over a million per-request samples).
_STATUS_COUNTS = checked(
    "SELECT variant, workload_id, metric, status, count(*) FROM samples WHERE run_id = :run "
    "AND status != 'ok' AND t IS NULL GROUP BY status, variant, workload_id, metric")
_GROUP_MOMENTS = checked(
    "SELECT run_id, variant, workload_id, metric, count(value), sum(value), sum(value * value) "
    "FROM samples WHERE run_id IN {runs} AND t IS NULL AND value IS NOT NULL "
    "GROUP BY run_id, variant, workload_id, metric")
# A run's rows of each table `export` writes, in the order of the table's key (an export,
# imported and exported again, is the same file); booleans made bool (SQLite gives 0/1).
_KEYS = {"runs": "id", "variants": "name", "workloads": "workload_id",
         "metrics": "workload_id, name", "facts": "id", "realisations": "variant, workload_id",
         "trials": "id", "samples": "id", "artifacts": "id"}
_TABLE_ROWS = {
    table: checked(f"SELECT {listed(table)} FROM {table} "
                   f"WHERE {'id' if table == 'runs' else 'run_id'} = :run ORDER BY {key}")
    for table, key in _KEYS.items()}
_BOOLEANS = {"variants": ("is_baseline",), "metrics": ("is_primary",), "trials": ("warmup",)}
_LOAD_STATE = checked("SELECT value_json FROM saved_state WHERE key = :key")
_STATE_KEYS = checked("SELECT key FROM saved_state WHERE key LIKE :pattern ESCAPE '/' "
                      "ORDER BY key")
_NOISE_PROFILE = checked(
    f"SELECT {listed('noise_profiles')} FROM noise_profiles WHERE fingerprint = :fingerprint "
    "AND experiment_hash = :hash ORDER BY created_at DESC, id DESC LIMIT 1")


class StoreReader:
    """Every read of the store; a subclass says how SQL text is run (:meth:`_rows`)."""

    location: str
    """Where it is, as given (--store): it may hold a password, so messages say :attr:`shown`."""
    url: str
    """The SQLAlchemy URL, password included: for the driver, never for a message."""
    dialect: str
    """"sqlite" or "postgresql": the few queries that differ (JSON) ask it."""

    # ---- how SQL runs (subclasses) -------------------------------------------------------
    def _rows(self, sql: str, params: Mapping[str, Any] | None = None) -> list[tuple[Any, ...]]:
        raise NotImplementedError

    def _mappings(self, sql: str, params: Mapping[str, Any] | None = None
                  ) -> list[dict[str, Any]]:
        raise NotImplementedError

    def _stream(self, sql: str, params: Mapping[str, Any] | None = None
                ) -> Iterator[tuple[Any, ...]]:
        """Rows without holding them all (the report's samples); by default fetched at once."""
        yield from self._rows(sql, params)

    def _float_table(self, sql: str, params: Mapping[str, Any], width: int
                     ) -> npt.NDArray[np.float64]:
        """The rows of a query of ``width`` numeric columns as an (n, width) float array, made
        straight from the rows (a list of a million row tuples, then an array of it, costs
        twice the time)."""
        import numpy as np  # only the analysis reads groups: `runs` and `import` never need it

        flat = itertools.chain.from_iterable(self._stream(sql, params))
        return np.fromiter(flat, np.float64).reshape(-1, width)

    def close(self) -> None:
        raise NotImplementedError

    @property
    def shown(self) -> str:
        """The location as any output may say it: its passwords masked (store/redaction.py)."""
        return shown(self.location)

    # ---- whole rows, for export ------------------------------------------------------------
    def table_rows(self, table: str, run_id: str) -> list[dict[str, Any]]:
        """Every row of ``table`` (one `export` writes) that belongs to the run, by column."""
        rows = self._mappings(_TABLE_ROWS[table], {"run": run_id})
        for column in _BOOLEANS.get(table, ()):
            for row in rows:
                row[column] = bool(row[column])
        return rows

    # ---- runs ----------------------------------------------------------------------------
    def runs(self) -> list[RunInfo]:
        return [_run_info(r) for r in self._mappings(_RUNS)]

    def run_by_id(self, run_id: str) -> RunInfo | None:
        """The run whose id is exactly ``run_id``, or None. No grammar check: an older store
        may hold ids that today's grammar refuses (written before ids were checked)."""
        rows = self._mappings(_RUN, {"id": run_id})
        return _run_info(rows[0]) if rows else None

    def run(self, ref: str = "latest") -> RunInfo:
        """A run by id, unique id prefix, experiment name (its latest run) or 'latest'; a
        reference outside the grammar of run ids and names (store/ids.py) is refused unless
        it is exactly the id of a stored run (an older store's, written before ids were
        checked: it can be read, never resumed)."""
        try:
            check_run_ref(ref)
        except VirtbenchError:
            # (not text: no stored id holds it, and a database refuses it in a query)
            legacy = self.run_by_id(ref) if is_text(ref) else None
            if legacy is None:
                raise
            return legacy
        if ref != "latest":  # an exact id needs one row, not the whole table
            found = self.run_by_id(ref)
            if found is not None:
                return found
        runs = self.runs()
        if not runs:
            raise VirtbenchError(f"the store {self.shown} holds no runs yet")
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

    def runs_version(self) -> tuple[Any, ...]:
        """Changes whenever a run is added, removed, started, resumed or ended, or the process
        of a running one is found gone (abandoned): a reader that keeps the runs table re-reads
        it only then (one aggregate over the runs table, and the owners of running runs)."""
        aggregate = self._rows(_RUNS_VERSION)[0]
        running = self._rows(_RUNNING_OWNERS)
        gone = sum((bool(imported) and pid is None)  # imported, no owner here: abandoned
                   or owner_state(pid, host, boot) == OwnerState.GONE
                   for pid, host, boot, imported in running)
        return (*aggregate, gone)

    # ---- what a run is made of -----------------------------------------------------------
    def variants(self, run_id: str) -> list[tuple[str, dict[str, Any], bool]]:
        rows = self._rows(_VARIANTS, {"run": run_id})
        return [(name, json.loads(knobs), bool(baseline)) for name, knobs, baseline in rows]

    def workloads(self, run_id: str) -> list[tuple[str, str, dict[str, Any]]]:
        rows = self._rows(_WORKLOADS, {"run": run_id})
        return [(workload_id, name, json.loads(params)) for workload_id, name, params in rows]

    def metrics(self, run_id: str) -> dict[tuple[str, str], Metric]:
        rows = self._rows(_METRICS, {"run": run_id})
        return {
            (workload_id, name): Metric(name, unit, parse_better(better, f"stored metric {name!r}"),
                                        description, bool(primary),
                                        Domain(domain) if domain else None)
            for workload_id, name, unit, better, description, primary, domain in rows
        }

    def facts(self, run_id: str) -> list[tuple[int, str, float, dict[str, Any]]]:
        rows = self._rows(_FACTS, {"run": run_id})
        return [(int(key), phase, float(at), json.loads(data)) for key, phase, at, data in rows]

    def facts_of_runs(self, run_ids: Sequence[str], phase: str = "before"
                      ) -> dict[str, dict[str, Any]]:
        """The first facts snapshot of ``phase`` of each given run (run id -> facts)."""
        out: dict[str, dict[str, Any]] = {}
        for start in range(0, len(run_ids), IN_CHUNK):
            runs, params = in_list("run", run_ids[start:start + IN_CHUNK])
            rows = self._rows(_FACTS_OF_RUNS.format(runs=runs), params | {"phase": phase})
            for run_id, data in rows:
                if run_id not in out:
                    out[run_id] = json.loads(data)
        return out

    def realisations(self, run_id: str) -> list[dict[str, Any]]:
        rows = self._rows(_REALISATIONS, {"run": run_id})
        return [
            {"variant": variant, "workload_id": workload_id, "mechanism": mechanism,
             "settings": json.loads(settings), "limitations": json.loads(limitations),
             "env": json.loads(env)}
            for variant, workload_id, mechanism, settings, limitations, env in rows
        ]

    def artifacts(self, run_id: str) -> list[dict[str, Any]]:
        rows = self._mappings(_ARTIFACTS, {"run": run_id})
        # bytes, whatever the driver gives (PostgreSQL's may give a memoryview)
        return [r | {"content": None if r["content"] is None else bytes(r["content"])}
                for r in rows]

    # ---- trials --------------------------------------------------------------------------
    def trials(self, run_id: str) -> list[dict[str, Any]]:
        rows = self._mappings(_TRIALS, {"run": run_id})
        return [r | {"warmup": bool(r["warmup"]), "notes": json.loads(r["notes_json"])}
                for r in rows]

    def completed_trials(self, run_id: str) -> set[tuple[str, str, int]]:
        rows = self._rows(_COMPLETED_TRIALS, {"run": run_id})
        return {(variant, workload_id, int(repetition))
                for variant, workload_id, repetition in rows}

    def next_order_index(self, run_id: str) -> int:
        value = self._rows(_NEXT_ORDER_INDEX, {"run": run_id})[0][0]
        return 0 if value is None else int(value) + 1

    def trial_progress(self, run_id: str) -> tuple[int, int, float | None]:
        """(trials ok, trials failed, end time of the latest trial) of a run, warm-ups excluded."""
        ok, total, latest = self._rows(_TRIAL_PROGRESS, {"run": run_id})[0]
        done, total = int(ok or 0), int(total or 0)
        return done, total - done, None if latest is None else float(latest)

    # ---- samples -------------------------------------------------------------------------
    def sample_count(self, run_id: str) -> int:
        value = self._rows(_SAMPLE_COUNT, {"run": run_id})[0][0]
        return int(value or 0)

    def sample_counts(self, run_ids: Sequence[str] | None = None) -> dict[str, int]:
        """Samples per run (all runs, or those given) in one grouped query."""
        if run_ids is None:
            rows = self._rows(_SAMPLE_COUNTS)
            return {run_id: int(count) for run_id, count in rows}
        out: dict[str, int] = {}
        for start in range(0, len(run_ids), IN_CHUNK):
            runs, params = in_list("run", run_ids[start:start + IN_CHUNK])
            rows = self._rows(_SAMPLE_COUNTS_OF_RUNS.format(runs=runs), params)
            out.update((run_id, int(count)) for run_id, count in rows)
        return out

    def scalar_values(self, run_id: str) -> Iterator[tuple[str, str, str, float]]:
        """(variant, workload_id, metric, value) of every measured per-trial sample (t is None).

        The report's hot path: one ordered query, no labels, streamed.
        """
        yield from self._stream(_SCALAR_VALUES, {"run": run_id})

    def group_values(self, run_id: str, variant: str, workload_id: str, metric: str
                     ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float64]]:
        """Repetitions and values of one group's measured per-trial samples (one index range)."""
        import numpy as np

        table = self._float_table(_GROUP_VALUES, {"run": run_id, "workload": workload_id,
                                                  "metric": metric, "variant": variant}, 2)
        return table[:, 0].astype(np.int64), table[:, 1].copy()

    def group_values_only(self, run_id: str, variant: str, workload_id: str, metric: str
                          ) -> npt.NDArray[np.float64]:
        """The values of :meth:`group_values`, in its order, without their repetitions (a
        fifth less to read over a million samples)."""
        return self._float_table(_GROUP_VALUES_ONLY, {
            "run": run_id, "workload": workload_id, "metric": metric, "variant": variant},
            1)[:, 0]

    def group_reaches(self, run_id: str, variant: str, workload_id: str, metric: str,
                      repetition: int) -> bool:
        """Whether one of the group's measured per-trial samples has a repetition of at least
        ``repetition``."""
        sql = _GROUP_REACHES_POSTGRES if self.dialect == "postgresql" else _GROUP_REACHES_SQLITE
        return bool(self._rows(sql, {
            "run": run_id, "workload": workload_id, "metric": metric, "variant": variant,
            "repetition": repetition}))

    def series_count(self, run_id: str) -> int:
        """How many time-stamped samples the run has (with a value or not)."""
        return int(self._rows(_SERIES_COUNT, {"run": run_id})[0][0])

    def series_ranges(self, run_id: str) -> list[tuple[str, str, str]]:
        """(workload_id, metric, variant) of every time-stamped sample of the run."""
        return [(r[0], r[1], r[2]) for r in self._rows(_SERIES_RANGES, {"run": run_id})]

    def range_series(self, run_id: str, variant: str, workload_id: str, metric: str
                     ) -> tuple[npt.NDArray[np.float64], list[str | None] | None]:
        """The time-stamped samples with a value of one (variant, workload, metric), in
        insertion order: an (n, 5) array of id, trial_id, repetition, t, value, and each
        sample's ``labels['series']`` (None: none of them has one)."""
        params = {"run": run_id, "workload": workload_id, "metric": metric, "variant": variant}
        postgres = self.dialect == "postgresql"
        table = self._float_table(_RANGE_SERIES_POSTGRES if postgres else _RANGE_SERIES_SQLITE,
                                  params, 6)
        if not table[:, 5].any():
            return table[:, :5], None
        labels = self._rows(_RANGE_LABELS_POSTGRES if postgres else _RANGE_LABELS_SQLITE, params)
        return table[:, :5], [None if r[0] is None else str(r[0]) for r in labels]

    def series_rows(self, run_id: str) -> list[tuple[int, str, str, str, int, float, float,
                                                      str | None]]:
        """(trial_id, variant, workload_id, metric, repetition, t, value, labels['series']) of
        every time-stamped sample with a value, in insertion order.

        The series label is extracted by the database (JSON functions of SQLite and
        PostgreSQL), so a million per-request samples are not JSON-decoded in Python.
        """
        sql = _SERIES_ROWS_POSTGRES if self.dialect == "postgresql" else _SERIES_ROWS_SQLITE
        return self._rows(sql, {"run": run_id})

    def samples(self, run_id: str, *, workload_id: str | None = None, metric: str | None = None,
                series_only: bool = False) -> list[SampleRow]:
        params = {"run": run_id, "workload": workload_id, "metric": metric}
        wanted = (True, workload_id is not None, metric is not None, series_only)
        where = [cond for cond, asked in zip(_SAMPLE_FILTERS, wanted, strict=True) if asked]
        params = {key: value for key, value in params.items() if value is not None}
        rows = self._rows(_SAMPLES.format(where=" AND ".join(where)), params)
        return [
            SampleRow(run, variant, workload, name, value, unit, repetition, t,
                      json.loads(labels) if labels else {}, status, trial_id)
            for (run, variant, workload, name, value, unit, repetition, t, labels, status,
                 trial_id) in rows
        ]

    def status_counts(self, run_id: str) -> dict[tuple[str, str, str, str], int]:
        """Counts of non-ok per-trial samples per (variant, workload, metric, status).

        Time-series and per-request samples (t set) are summarised by their workload instead.
        """
        rows = self._rows(_STATUS_COUNTS, {"run": run_id})
        return {(r[0], r[1], r[2], r[3]): int(r[4]) for r in rows}

    def group_moments(self, run_ids: Sequence[str]
                      ) -> list[tuple[str, str, str, str, int, float, float]]:
        """(run_id, variant, workload_id, metric, n, sum, sum of squares) of the measured
        per-trial samples of every group of the given runs: a history of 1,000 runs in one
        aggregate query per chunk instead of a query per group."""
        out: list[tuple[str, str, str, str, int, float, float]] = []
        for start in range(0, len(run_ids), IN_CHUNK):
            runs, params = in_list("run", run_ids[start:start + IN_CHUNK])
            rows = self._rows(_GROUP_MOMENTS.format(runs=runs), params)
            out += [(r[0], r[1], r[2], r[3], int(r[4]), float(r[5]), float(r[6])) for r in rows]
        return out

    # ---- saved state and noise profiles --------------------------------------------------
    def load_state(self, key: str) -> Any | None:
        rows = self._rows(_LOAD_STATE, {"key": key})
        return json.loads(rows[0][0]) if rows else None

    def state_keys(self, prefix: str = "") -> list[str]:
        # LIKE with its wildcards escaped: a prefix is matched as written
        escaped = prefix.replace("/", "//").replace("%", "/%").replace("_", "/_")
        rows = self._rows(_STATE_KEYS, {"pattern": escaped + "%"})
        return [key for (key,) in rows]

    def noise_profile(self, fingerprint: str, experiment_hash: str) -> dict[str, Any] | None:
        """The latest profile of this host fingerprint and experiment file, or None: its
        columns, with ``run_ids`` and ``data`` decoded (stored text: the caller checks it)."""
        rows = self._mappings(_NOISE_PROFILE, {"fingerprint": fingerprint,
                                               "hash": experiment_hash})
        if not rows:
            return None
        found = rows[0]
        try:
            found["run_ids"] = json.loads(found.pop("run_ids_json"))
            found["data"] = json.loads(found.pop("data_json"))
        except ValueError as exc:
            raise VirtbenchError(f"the store's noise profile {found['id']} is damaged "
                                 f"({exc}); run `virtbench calibrate` again") from exc
        return found


def schema_number(value: Any, location: str) -> int:
    """The stored schema version as a number; stored text is not trusted (a file of another
    program may hold anything in a table of that name)."""
    if value is None:
        return 0
    try:
        return int(value)
    except (TypeError, ValueError):
        raise VirtbenchError(f"cannot open result store {shown(location)!r}: its schema version is "
                             f"{str(value)[:40]!r}, not a number (a file of another program, or "
                             "a damaged store)") from None


def check_current(version: int, location: str) -> None:
    """Refuse a store of another schema version where nothing may migrate it."""
    if version not in READABLE_SCHEMAS:
        raise VirtbenchError(
            f"the store {shown(location)!r} has schema version {version}, this virtbench reads "
            f"{' or '.join(map(str, READABLE_SCHEMAS))}; a read-only viewer does not migrate "
            "it (any writing command, e.g. `virtbench runs`, does)")


def _abandoned(r: Mapping[str, Any]) -> str | None:
    """Why a run stored as running is abandoned (its resume command), or None: its owner is
    gone, or it was imported without one (the process that ran it wrote another store)."""
    if r["status"] != "running":
        return None
    if r["imported_from"] and r["owner_pid"] is None:
        why = f"imported from {r['imported_from']} while it ran elsewhere"
    elif owner_state(r["owner_pid"], r["owner_host"], r["owner_boot_id"]) == OwnerState.GONE:
        why = f"process {r['owner_pid']} on {r['owner_host']} is gone"
    else:
        return None
    command = (f"virtbench calibrate {r['spec_path'] or 'FILE'} --resume {r['calibration']}"
               if r["calibration"] else
               f"virtbench run {r['spec_path'] or 'FILE'} --resume {r['id']}")
    return f"abandoned ({why}) — resume with `{command}`"


def _run_info(r: Mapping[str, Any]) -> RunInfo:
    status, stop_reason = r["status"], r["stop_reason"]
    abandoned = _abandoned(r)
    if abandoned is not None:
        status, stop_reason = "abandoned", abandoned
    return RunInfo(
        id=r["id"], experiment=r["experiment"], description=r["description"], status=status,
        stop_reason=stop_reason, started_at=r["started_at"], ended_at=r["ended_at"],
        host=r["host"], target=r["target"], baseline=r["baseline"], seed=r["seed"],
        spec_yaml=r["spec_yaml"], spec_path=r["spec_path"], imported_from=r["imported_from"],
        owner_pid=r["owner_pid"], owner_host=r["owner_host"], owner_boot_id=r["owner_boot_id"],
        recorded_status=r["status"], calibration=r["calibration"],
    )
