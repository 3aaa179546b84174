"""Every row of a portable result file, checked field by field before anything is stored.

One pydantic model per table (strict types, unknown fields refused): ids and names by the
grammar of :mod:`virtbench.store.ids`, enums for statuses and directions, finite numbers, non-
negative counts and repetitions, sane times, JSON columns that parse to what the store reads
back. Then the tables are checked against each other (every row belongs to the run, every
trial's variant and workload exist, every sample's trial and metric exist). The first problem
is reported as ``table[row].field: what is wrong`` (exit 2), and nothing is imported.
"""

from __future__ import annotations

import binascii
import functools
import json
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any, Literal, NotRequired

from pydantic import AfterValidator, ConfigDict, Field, TypeAdapter, ValidationError, with_config
from typing_extensions import TypedDict  # pydantic needs this one before Python 3.12

from virtbench.model import Domain, VirtbenchError, default_domain
from virtbench.safetext import stored, unshown, visible
from virtbench.store.columns import COLUMNS, NAME_MAX, TEXT_LIMITS
from virtbench.store.ids import NAME_PATTERN, RUN_ID_PATTERN

__all__ = ["MAX_ROWS", "TABLES", "ImportInvalid", "stored_rows", "valid_document",
           "validate_tables"]

# Order matters on import: parents before children (foreign keys).
TABLES = ("runs", "variants", "workloads", "metrics", "facts", "realisations", "trials",
          "samples", "artifacts")
MAX_ROWS = 20_000_000
"""Rows in one result file, all tables together (a run of 10^7 per-request samples fits)."""
MAX_TIME = 32_503_680_000.0
"""Timestamps are seconds since 1970 up to the year 3000: later is a damaged clock or file."""
MAX_MAGNITUDE = 1e150
"""Largest |value| of a sample: the statistics sum squares, which must stay finite."""
INT64 = 2**63 - 1


class ImportInvalid(VirtbenchError):
    """A result file whose content breaks a rule; the message names the row and field."""


def _json_of(kind: type[dict[str, Any]] | type[list[Any]], what: str,
             item: Callable[[Any], bool] | None = None) -> Callable[[str], str]:
    def check(value: str) -> str:
        try:
            parsed: Any = json.loads(value, parse_constant=_reject_constant)
        except (ValueError, RecursionError) as exc:
            raise ValueError(f"must be {what} in JSON ({type(exc).__name__})") from None
        if not isinstance(parsed, kind):
            raise ValueError(f"must be {what} in JSON")
        if item is not None and not all(item(x) for x in (
                parsed.items() if isinstance(parsed, dict) else parsed)):
            raise ValueError(f"must be {what} in JSON")
        return value
    return check


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _str_pair(pair: Any) -> bool:
    return isinstance(pair[1], str)


def _env_pair(pair: Any) -> bool:
    return pair[1] is None or isinstance(pair[1], str)


def _base64(value: str) -> str:
    try:
        binascii.a2b_base64(value, strict_mode=True)
    except (binascii.Error, ValueError):
        raise ValueError("must be base64") from None
    return value


# Every check a row's own fields can make runs inside pydantic-core (Rust): patterns rather than
# Python validators, TypedDicts rather than model instances. A 100,000-sample file is checked in
# a fraction of the time its JSON takes to parse (`compare` reads exported files too).
_NO_CONTROL = "[^\\x00-\\x1f\\x7f-\\x9f]"
_TEXT_CHAR = "[^\\x00-\\x08\\x0b\\x0c\\x0e-\\x1f\\x7f-\\x9f]"
_NAME_PATTERN = f"^{_NO_CONTROL}{{1,200}}$"
_SHORT_PATTERN = f"^{_NO_CONTROL}{{0,200}}$"
_UNIT_PATTERN = f"^{_NO_CONTROL}{{0,40}}$"
_TEXT_PATTERN = f"^{_TEXT_CHAR}*$"
_TOKEN_PATTERN = r"^[a-z][a-z0-9_]{0,19}$"
_MEDIA_PATTERN = r"^[A-Za-z0-9!#$&^_.+-]{1,50}/[A-Za-z0-9!#$&^_.+-]{1,49}$"
_BOOT_ID_PATTERN = r"^[0-9a-f-]{1,64}$"

RunId = Annotated[str, Field(pattern=RUN_ID_PATTERN)]
ExperimentName = Annotated[str, Field(pattern=NAME_PATTERN)]
Name = Annotated[str, Field(pattern=_NAME_PATTERN)]
ShortName = Annotated[str, Field(pattern=_SHORT_PATTERN)]
Unit = Annotated[str, Field(pattern=_UNIT_PATTERN)]
Text = Annotated[str, Field(max_length=10_000_000, pattern=_TEXT_PATTERN)]
Token = Annotated[str, Field(pattern=_TOKEN_PATTERN)]
Count = Annotated[int, Field(ge=0, le=INT64)]
RowId = Annotated[int, Field(ge=1, le=INT64)]
Time = Annotated[float, Field(ge=0, le=MAX_TIME, allow_inf_nan=False)]
"""Seconds since 1970 (or since a trial started, for a sample's t)."""
JsonObject = Annotated[str, AfterValidator(_json_of(dict, "an object"))]
JsonStrings = Annotated[str, AfterValidator(_json_of(dict, "an object of strings", _str_pair))]
JsonEnv = Annotated[str, AfterValidator(_json_of(dict, "an object of strings or nulls",
                                                 _env_pair))]
JsonList = Annotated[str, AfterValidator(_json_of(list, "a list of strings",
                                                  lambda x: isinstance(x, str)))]
_ROWS = ConfigDict(strict=True, extra="forbid")


@with_config(_ROWS)
class RunRow(TypedDict):
    id: RunId
    experiment: ExperimentName
    description: NotRequired[Text]
    spec_yaml: Text
    spec_path: NotRequired[Text]
    seed: Annotated[int, Field(ge=-INT64 - 1, le=INT64)]
    status: Literal["running", "complete", "failed", "interrupted"]
    stop_reason: NotRequired[Text]
    started_at: Time
    ended_at: NotRequired[Time | None]
    host: NotRequired[ShortName]
    target: NotRequired[ShortName]
    baseline: NotRequired[ShortName]
    virtbench_version: NotRequired[Annotated[str, Field(pattern=_UNIT_PATTERN)]]
    imported_from: NotRequired[Text]
    owner_pid: NotRequired[Annotated[int, Field(ge=1, le=2**31 - 1)] | None]
    owner_host: NotRequired[ShortName | None]
    owner_boot_id: NotRequired[Annotated[str, Field(pattern=_BOOT_ID_PATTERN)] | None]
    # schema 7: the calibration the run is one of (null: not a calibration run); an id by the
    # run-id grammar, since `calibrate --resume` takes it and `runs` prints it
    calibration: NotRequired[RunId | None]


@with_config(_ROWS)
class VariantRow(TypedDict):
    run_id: RunId
    name: Name
    position: Count
    knobs_json: JsonObject
    is_baseline: bool


@with_config(_ROWS)
class WorkloadRow(TypedDict):
    run_id: RunId
    workload_id: Name
    name: Name
    position: Count
    params_json: JsonObject


@with_config(_ROWS)
class MetricRow(TypedDict):
    run_id: RunId
    workload_id: Name
    name: Name
    unit: Unit
    better: Literal["lower", "higher", "none"]
    description: Text
    is_primary: bool
    domain: NotRequired[Literal["proportion", "positive", "real"] | None]


@with_config(_ROWS)
class FactsRow(TypedDict):
    id: RowId
    run_id: RunId
    phase: Name
    captured_at: Time
    data_json: JsonObject


@with_config(_ROWS)
class RealisationRow(TypedDict):
    run_id: RunId
    variant: Name
    workload_id: Name
    mechanism: Text
    settings_json: JsonObject
    limitations_json: JsonList
    env_json: NotRequired[JsonEnv]


@with_config(_ROWS)
class TrialRow(TypedDict):
    id: RowId
    run_id: RunId
    variant: Name
    workload_id: Name
    # A warm-up trial's repetition is negative (-1, -2, ...); a measured one's is >= 0
    # (checked with the warm-up flag in _check_rows).
    repetition: Annotated[int, Field(ge=-1000, le=INT64)]
    order_index: Count
    warmup: bool
    status: Literal["ok", "failed"]
    error: NotRequired[Text]
    started_at: Time
    ended_at: Time
    target: ShortName
    facts_id: NotRequired[RowId | None]
    notes_json: NotRequired[JsonStrings]


@with_config(_ROWS)
class SampleRow(TypedDict):
    id: NotRequired[RowId | None]
    run_id: RunId
    trial_id: RowId
    variant: Name
    workload_id: Name
    metric: Name
    # null: not measured (the status says why). NaN is read as "not measured" only when the
    # status is not "ok"; Infinity and magnitudes beyond MAX_MAGNITUDE never (_check_rows).
    value: float | None
    unit: Unit
    repetition: Count
    t: NotRequired[Time | None]
    labels_json: NotRequired[JsonStrings | None]
    status: Token
    started_at: Time
    ended_at: Time
    target: ShortName
    facts_id: NotRequired[RowId | None]


@with_config(_ROWS)
class ArtifactRow(TypedDict):
    id: NotRequired[RowId | None]
    run_id: RunId
    trial_id: RowId | None
    name: Name
    media_type: Annotated[str, Field(pattern=_MEDIA_PATTERN)]
    content: Annotated[str, AfterValidator(_base64)]


_ROW_TYPES: dict[str, Any] = {
    "runs": RunRow, "variants": VariantRow, "workloads": WorkloadRow, "metrics": MetricRow,
    "facts": FactsRow, "realisations": RealisationRow, "trials": TrialRow,
    "samples": SampleRow, "artifacts": ArtifactRow}
for _table, _row_type in _ROW_TYPES.items():  # a row has its table's columns (columns.py)
    if set(_row_type.__annotations__) != set(COLUMNS[_table]):
        raise AssertionError(f"{_row_type.__name__}: fields are not store/columns.py's "
                             f"{COLUMNS[_table]}")


@functools.cache
def _adapter(table: str) -> TypeAdapter[Any]:
    """One table's checker, built when a file fails the fast path (building costs time)."""
    row_type: Any = _ROW_TYPES[table]
    return TypeAdapter(list[row_type])


# Columns a file may leave out (older exports): what the store would have written.
_DEFAULTS: dict[str, dict[str, Any]] = {
    "runs": {"description": "", "spec_path": "", "stop_reason": "", "ended_at": None,
             "host": "", "target": "", "baseline": "", "virtbench_version": "",
             "imported_from": "", "owner_pid": None, "owner_host": None,
             "owner_boot_id": None, "calibration": None},
    "metrics": {"domain": None},
    "realisations": {"env_json": "{}"},
    "trials": {"error": "", "facts_id": None, "notes_json": "{}"},
    "samples": {"t": None, "labels_json": None, "facts_id": None},
}


@with_config(ConfigDict(strict=True, extra="forbid"))
class _Tables(TypedDict):
    runs: list[RunRow]
    variants: list[VariantRow]
    workloads: list[WorkloadRow]
    metrics: list[MetricRow]
    facts: list[FactsRow]
    realisations: list[RealisationRow]
    trials: list[TrialRow]
    samples: list[SampleRow]
    artifacts: list[ArtifactRow]


@with_config(ConfigDict(strict=True))
class _Document(TypedDict):
    format: str
    version: int
    tables: _Tables


_DOCUMENT = TypeAdapter(_Document)


def valid_document(raw: bytes) -> dict[str, Any] | None:
    """The export file's JSON parsed and every row's fields checked in one pass of
    pydantic-core (faster than ``json.loads`` alone); None when anything is wrong: the caller
    then reads the file the slow way, which names the problem."""
    try:
        document: dict[str, Any] = dict(_DOCUMENT.validate_json(raw))
    except ValidationError:
        return None
    return document


def validate_tables(tables: dict[str, list[Any]], *, checked: bool = False
                    ) -> dict[str, list[dict[str, Any]]]:
    """The tables, every row checked (and normalised: NaN of an unmeasured value → null);
    raises :class:`ImportInvalid` naming the first bad ``table[row].field``. ``checked``:
    each row's own fields were checked already (:func:`valid_document`)."""
    total = sum(len(tables[t]) for t in TABLES)
    if total > MAX_ROWS:
        raise ImportInvalid(f"holds {total:,} rows, more than the {MAX_ROWS:,} one import "
                            "takes")
    out: dict[str, list[dict[str, Any]]] = {}
    for table in TABLES:
        rows: list[dict[str, Any]] = tables[table]
        if not checked:
            try:
                rows = _adapter(table).validate_python(rows)
            except ValidationError as exc:
                raise ImportInvalid(f"{table}{_first_error(exc)}") from None
        defaults = _DEFAULTS.get(table)
        if defaults:  # only rows of an older export lack columns (extra ones are refused)
            width = len(_ROW_TYPES[table].__annotations__)
            rows = [row if len(row) == width else defaults | row for row in rows]
        out[table] = rows
    _check_rows(out)
    _check_text(out)
    _check_references(out)
    _check_domains(out)
    return out


def _check_domains(tables: dict[str, list[dict[str, Any]]]) -> None:
    """Every measured value lies in its metric's domain (the metric's declared ``domain``, as
    the report reads it; by its unit when the file has none): a negative time, rate or count,
    or a proportion over 100 %, is refused as a parser refuses it (Domain.refusal)."""
    # Values in [0, 100] are sound in every domain: only the others are looked at.
    doubtful = [i for i, r in enumerate(tables["samples"])
                if r["status"] == "ok" and r["value"] is not None
                and not 0.0 <= r["value"] <= 100.0]
    if not doubtful:
        return
    domains = {(m["workload_id"], m["name"]): Domain(m["domain"]) if m["domain"]
               else default_domain(m["unit"]) for m in tables["metrics"]}
    run_id = tables["runs"][0]["id"]
    for index in doubtful:
        sample = tables["samples"][index]
        domain = domains[(sample["workload_id"], sample["metric"])]
        reason = domain.refusal(sample["value"])
        if reason is not None:
            raise ImportInvalid(
                f"samples[{index}].value: {sample['value']!r} is {reason}: run {run_id}'s "
                f"metric {sample['workload_id']}/{sample['metric']} has domain {domain}")


# ---- stored text: one rule (safetext.stored) for what the store, export and import hold ----

_JSON_COLUMNS = {table: tuple(c for c in COLUMNS[table] if c.endswith("_json"))
                 for table in TABLES}


def stored_rows(table: str, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Rows read from the store, their text as the store keeps it now (safetext.stored): a
    run stored by an older virtbench (ESC, NUL or U+202E in a failed trial's stderr) exports
    as one stored today would, so that `import` takes it. A JSON column holding such a
    character raw is written again as ``json.dumps`` writes JSON (ASCII)."""
    limits = TEXT_LIMITS[table]
    for column in (*limits, *_JSON_COLUMNS[table]):
        # each distinct value once (samples repeat a few names millions of times), and the
        # rows rewritten only when one changes (a current store's never do)
        changed = {}
        for value in {row[column] for row in rows}:
            if not isinstance(value, str) or (value.isprintable()
                                              and len(value) <= limits.get(column, len(value))):
                continue
            if column in limits:
                limit = limits[column]
                now = stored(value, limit, line=limit <= NAME_MAX)
            else:
                now = value if unshown(value) is None else _ascii_json(value)
            if now != value:
                changed[value] = now
        if changed:
            for row in rows:
                row[column] = changed.get(row[column], row[column])
    return rows


def _ascii_json(value: str) -> str:
    try:
        return json.dumps(json.loads(value), sort_keys=True)
    except (ValueError, RecursionError):  # not JSON: import says so, naming the row
        return value


def _check_text(tables: dict[str, list[dict[str, Any]]]) -> None:
    """Every text and JSON column holds text as the store keeps it (safetext.stored): what
    this virtbench's store and export write passes; a character they would have escaped is
    refused, naming it. A sample's names are its trial's and metric's (_check_samples)."""
    for table in TABLES:
        rows = tables[table]
        columns = (*TEXT_LIMITS[table], *_JSON_COLUMNS[table])
        if table == "samples":  # millions of rows: each distinct value once
            columns = ("target", "labels_json")
        for column in columns:
            for value in {row[column] for row in rows}:
                if isinstance(value, str) and (at := unshown(value)) is not None:
                    index = next(i for i, row in enumerate(rows) if row[column] == value)
                    raise ImportInvalid(
                        f"{table}[{index}].{column}: must be text as the store keeps it (holds "
                        f"U+{ord(value[at]):04X} at character {at + 1}, kept as the text "
                        f"{visible(value[at])}); export the run again with this virtbench")


def _check_rows(tables: dict[str, list[dict[str, Any]]]) -> None:
    """What one row's fields say together: times in order, repetitions, values."""
    run = tables["runs"][0]
    if run["ended_at"] is not None and run["ended_at"] < run["started_at"]:
        raise ImportInvalid("runs[0]: ended_at is before started_at")
    for index, trial in enumerate(tables["trials"]):
        if trial["ended_at"] < trial["started_at"]:
            raise ImportInvalid(f"trials[{index}]: ended_at is before started_at")
        if not trial["warmup"] and trial["repetition"] < 0:
            raise ImportInvalid(f"trials[{index}].repetition: must be >= 0 (only a warm-up "
                                f"trial's is negative) (got {trial['repetition']})")
    for index, sample in enumerate(tables["samples"]):
        value = sample["value"]
        if value is None or -MAX_MAGNITUDE <= value <= MAX_MAGNITUDE:  # NaN fails both
            continue
        if math.isnan(value) and sample["status"] != "ok":
            sample["value"] = None
        elif not math.isfinite(value):
            raise ImportInvalid(f"samples[{index}].value: must be a finite number (null when "
                                f"not measured) (got {value})")
        else:
            raise ImportInvalid(f"samples[{index}].value: magnitude must be at most "
                                f"{MAX_MAGNITUDE:g} (got {value:g})")


def _first_error(exc: ValidationError) -> str:
    error = exc.errors(include_url=False)[0]
    loc = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in error["loc"])
    kind, ctx = error["type"], error.get("ctx", {})
    messages = {
        "missing": "missing",
        "extra_forbidden": "is not a field of this table",
        "greater_than_equal": f"must be >= {ctx.get('ge')}",
        "less_than_equal": f"must be <= {ctx.get('le')}",
        "int_type": "must be an integer",
        "float_type": "must be a number",
        "finite_number": "must be a finite number",
        "string_type": "must be a string",
        "bool_type": "must be true or false",
        "string_too_long": f"must be at most {ctx.get('max_length')} characters",
        "string_too_short": "must not be empty",
        "string_pattern_mismatch": "must be " + _PATTERNS.get(str(ctx.get("pattern")),
                                                              f"like {ctx.get('pattern')}"),
        "literal_error": f"must be {ctx.get('expected')}",
        "enum": f"must be {ctx.get('expected')}",
    }
    message = messages.get(kind) or str(error["msg"]).removeprefix("Value error, ")
    if kind not in ("missing", "extra_forbidden") and "input" in error and not isinstance(
            error["input"], dict | list):
        shown = repr(error["input"])
        message += f" (got {shown if len(shown) <= 40 else shown[:37] + '...'})"
    return f"{loc}: {message}"


_PATTERNS = {
    RUN_ID_PATTERN: "a run id (1-32 letters, digits, '.', '_' or '-', starting with a letter "
                    "or digit)",
    NAME_PATTERN: "a name of letters, digits, '.', '_' or '-' (at most 200)",
    _TOKEN_PATTERN: "a status word (lower-case letters, digits and '_', at most 20)",
    _NAME_PATTERN: "1-200 characters as the store keeps them (no control characters)",
    _SHORT_PATTERN: "at most 200 characters as the store keeps them (no control characters)",
    _UNIT_PATTERN: "at most 40 characters as the store keeps them (no control characters)",
    _TEXT_PATTERN: "text as the store keeps it (no control characters but tab and newline)",
    _MEDIA_PATTERN: "a media type (type/subtype)",
    _BOOT_ID_PATTERN: "a boot id (hex digits and '-')",
}


def _check_references(tables: dict[str, list[dict[str, Any]]]) -> None:
    """Every row belongs to the one run; every name a row refers to exists in the file."""
    _check_run_ids(tables)
    names = _Names.of(tables)
    _check_catalogue(tables, names)
    _check_samples(tables, names)
    _check_artifacts(tables, names.trials)


def _check_run_ids(tables: dict[str, list[dict[str, Any]]]) -> None:
    run_id = tables["runs"][0]["id"]
    for table in TABLES[1:]:
        if {row["run_id"] for row in tables[table]} <= {run_id}:
            continue
        for index, row in enumerate(tables[table]):
            if row["run_id"] != run_id:
                raise ImportInvalid(f"{table}[{index}].run_id: must be the run's id {run_id!r}")


@dataclass(frozen=True)
class _Names:
    """What rows of a portable file may refer to, each checked to be unique."""

    variants: set[Any]
    workloads: set[Any]
    metrics: set[Any]
    units: dict[tuple[Any, Any], Any]
    facts: set[Any]
    trials: dict[Any, dict[str, Any]]

    @classmethod
    def of(cls, tables: dict[str, list[dict[str, Any]]]) -> _Names:
        variants = _unique(tables, "variants", lambda r: r["name"])
        workloads = _unique(tables, "workloads", lambda r: r["workload_id"])
        metrics = _unique(tables, "metrics", lambda r: (r["workload_id"], r["name"]))
        facts = _unique(tables, "facts", lambda r: r["id"])
        _unique(tables, "realisations", lambda r: (r["variant"], r["workload_id"]))
        _unique(tables, "trials", lambda r: r["id"])
        return cls(variants, workloads, metrics,
                   {(r["workload_id"], r["name"]): r["unit"] for r in tables["metrics"]},
                   facts, {r["id"]: r for r in tables["trials"]})


def _check_catalogue(tables: dict[str, list[dict[str, Any]]], names: _Names) -> None:
    run = tables["runs"][0]
    # Every reading of a run (report, compare, history) starts from its baseline: a run with
    # variants and no baseline among them could be imported but never read.
    if names.variants and run["baseline"] not in names.variants:
        raise ImportInvalid(f"runs[0].baseline: {run['baseline']!r} is not a variant of the run "
                            f"(variants: {', '.join(sorted(names.variants)[:5])})")
    for index, row in enumerate(tables["metrics"]):
        _refers(row["workload_id"] in names.workloads, "metrics", index, "workload_id")
    for index, row in enumerate(tables["realisations"]):
        _refers(row["variant"] in names.variants, "realisations", index, "variant")
        _refers(row["workload_id"] in names.workloads, "realisations", index, "workload_id")
    for index, row in enumerate(tables["trials"]):
        _refers(row["variant"] in names.variants, "trials", index, "variant")
        _refers(row["workload_id"] in names.workloads, "trials", index, "workload_id")
        _refers(row["facts_id"] is None or row["facts_id"] in names.facts, "trials", index,
                "facts_id")


def _check_samples(tables: dict[str, list[dict[str, Any]]], names: _Names) -> None:
    samples, trials, units = tables["samples"], names.trials, names.units
    # Distinct combinations first (one per trial and metric, not per sample): a row-by-row
    # search only when one of them is wrong, to name the first such row.
    by_trial = {(r["trial_id"], r["variant"], r["workload_id"]) for r in samples}
    by_metric = {(r["workload_id"], r["metric"], r["unit"]) for r in samples}
    facts_ids = {r["facts_id"] for r in samples}
    if (all(t in trials and (trials[t]["variant"], trials[t]["workload_id"]) == (v, w)
            for t, v, w in by_trial)
            and all(units.get((w, m)) == u for w, m, u in by_metric)
            and facts_ids <= names.facts | {None}):
        return
    for index, row in enumerate(samples):
        trial = trials.get(row["trial_id"])
        _refers(trial is not None, "samples", index, "trial_id")
        assert trial is not None
        for field in ("variant", "workload_id"):
            if row[field] != trial[field]:
                raise ImportInvalid(f"samples[{index}].{field}: differs from its trial's "
                                    f"({trial[field]!r})")
        key = (row["workload_id"], row["metric"])
        _refers(key in names.metrics, "samples", index, "metric")
        if row["unit"] != units[key]:
            raise ImportInvalid(f"samples[{index}].unit: {row['unit']!r} differs from the "
                                f"metric's unit {units[key]!r}")
        _refers(row["facts_id"] is None or row["facts_id"] in names.facts, "samples", index,
                "facts_id")


def _check_artifacts(tables: dict[str, list[dict[str, Any]]],
                     trials: dict[Any, dict[str, Any]]) -> None:
    for index, row in enumerate(tables["artifacts"]):
        _refers(row["trial_id"] is None or row["trial_id"] in trials, "artifacts", index,
                "trial_id")


def _unique(tables: dict[str, list[dict[str, Any]]], table: str,
            key: Callable[[dict[str, Any]], Any]) -> set[Any]:
    seen: set[Any] = set()
    for index, row in enumerate(tables[table]):
        k = key(row)
        if k in seen:
            raise ImportInvalid(f"{table}[{index}]: repeats {k!r}")
        seen.add(k)
    return seen


def _refers(ok: bool, table: str, index: int, field: str) -> None:
    if not ok:
        raise ImportInvalid(f"{table}[{index}].{field}: refers to nothing in this file")
