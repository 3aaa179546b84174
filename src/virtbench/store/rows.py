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
import json
import math
from collections.abc import Callable
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    model_validator,
)

from virtbench.model import Better, Domain, VirtbenchError
from virtbench.store.ids import NAME_PATTERN, RUN_ID_PATTERN, has_control

__all__ = ["MAX_ROWS", "TABLES", "ImportInvalid", "validate_tables"]

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


def _no_control(value: str) -> str:
    if has_control(value):
        raise ValueError("must not contain control characters")
    return value


def _text_ok(value: str) -> str:
    if has_control(value, allow_whitespace=True):
        raise ValueError("must not contain control characters other than tab and newline")
    return value


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


RunId = Annotated[str, Field(pattern=RUN_ID_PATTERN)]
ExperimentName = Annotated[str, Field(pattern=NAME_PATTERN)]
Name = Annotated[str, Field(min_length=1, max_length=200), AfterValidator(_no_control)]
ShortName = Annotated[str, Field(max_length=200), AfterValidator(_no_control)]
Unit = Annotated[str, Field(max_length=40), AfterValidator(_no_control)]
Text = Annotated[str, Field(max_length=10_000_000), AfterValidator(_text_ok)]
_TOKEN_PATTERN = r"^[a-z][a-z0-9_]{0,19}$"
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


class _Row(BaseModel):
    model_config = ConfigDict(strict=True, extra="forbid")


class RunRow(_Row):
    id: RunId
    experiment: ExperimentName
    description: Text = ""
    spec_yaml: Text
    spec_path: Text = ""
    seed: Annotated[int, Field(ge=-INT64 - 1, le=INT64)]
    status: Literal["running", "complete", "failed", "interrupted"]
    stop_reason: Text = ""
    started_at: Time
    ended_at: Time | None = None
    host: ShortName = ""
    target: ShortName = ""
    baseline: ShortName = ""
    virtbench_version: Annotated[str, Field(max_length=40), AfterValidator(_no_control)] = ""
    imported_from: Text = ""
    owner_pid: Annotated[int, Field(ge=1, le=2**31 - 1)] | None = None
    owner_host: ShortName | None = None
    owner_boot_id: Annotated[str, Field(pattern=r"^[0-9a-f-]{1,64}$")] | None = None

    @model_validator(mode="after")
    def _ended_after_start(self) -> RunRow:
        if self.ended_at is not None and self.ended_at < self.started_at:
            raise ValueError("ended_at is before started_at")
        return self


class VariantRow(_Row):
    run_id: RunId
    name: Name
    position: Count
    knobs_json: JsonObject
    is_baseline: bool


class WorkloadRow(_Row):
    run_id: RunId
    workload_id: Name
    name: Name
    position: Count
    params_json: JsonObject


class MetricRow(_Row):
    run_id: RunId
    workload_id: Name
    name: Name
    unit: Unit
    better: Annotated[Better, Field(strict=False)]
    description: Text
    is_primary: bool
    domain: Annotated[Domain, Field(strict=False)] | None = None


class FactsRow(_Row):
    id: RowId
    run_id: RunId
    phase: Name
    captured_at: Time
    data_json: JsonObject


class RealisationRow(_Row):
    run_id: RunId
    variant: Name
    workload_id: Name
    mechanism: Text
    settings_json: JsonObject
    limitations_json: JsonList
    env_json: JsonEnv = "{}"


class TrialRow(_Row):
    id: RowId
    run_id: RunId
    variant: Name
    workload_id: Name
    # A warm-up trial's repetition is negative (-1, -2, ...); a measured one's is >= 0.
    repetition: Annotated[int, Field(ge=-1000, le=INT64)]
    order_index: Count
    warmup: bool
    status: Literal["ok", "failed"]
    error: Text = ""
    started_at: Time
    ended_at: Time
    target: ShortName
    facts_id: RowId | None = None
    notes_json: JsonStrings = "{}"

    @model_validator(mode="after")
    def _consistent(self) -> TrialRow:
        if self.ended_at < self.started_at:
            raise ValueError("ended_at is before started_at")
        if not self.warmup and self.repetition < 0:
            raise ValueError("repetition: must be >= 0 (only a warm-up trial's is negative)")
        return self


class SampleRow(_Row):
    id: RowId | None = None
    run_id: RunId
    trial_id: RowId
    variant: Name
    workload_id: Name
    metric: Name
    # null: not measured (the status says why). NaN is read as "not measured" only when the
    # status is not "ok"; Infinity and magnitudes beyond MAX_MAGNITUDE never.
    value: float | None
    unit: Unit
    repetition: Count
    t: Time | None = None
    labels_json: JsonStrings | None = None
    status: Token
    started_at: Time
    ended_at: Time
    target: ShortName
    facts_id: RowId | None = None

    @model_validator(mode="after")
    def _value(self) -> SampleRow:
        value = self.value
        if value is None:
            return self
        if math.isnan(value) and self.status != "ok":
            self.value = None
        elif not math.isfinite(value):
            raise ValueError("value: must be a finite number (null when not measured)")
        elif abs(value) > MAX_MAGNITUDE:
            raise ValueError(f"value: magnitude must be at most {MAX_MAGNITUDE:g}")
        return self


class ArtifactRow(_Row):
    id: RowId | None = None
    run_id: RunId
    trial_id: RowId | None
    name: Name
    media_type: Annotated[str, Field(pattern=r"^[A-Za-z0-9!#$&^_.+-]{1,50}/"
                                             r"[A-Za-z0-9!#$&^_.+-]{1,49}$")]
    content: Annotated[str, AfterValidator(_base64)]


_MODELS: dict[str, type[_Row]] = {
    "runs": RunRow, "variants": VariantRow, "workloads": WorkloadRow, "metrics": MetricRow,
    "facts": FactsRow, "realisations": RealisationRow, "trials": TrialRow,
    "samples": SampleRow, "artifacts": ArtifactRow}


def validate_tables(tables: dict[str, list[Any]]) -> dict[str, list[dict[str, Any]]]:
    """The tables, every row checked (and normalised: NaN of an unmeasured value → null);
    raises :class:`ImportInvalid` naming the first bad ``table[row].field``."""
    total = sum(len(tables[t]) for t in TABLES)
    if total > MAX_ROWS:
        raise ImportInvalid(f"holds {total:,} rows, more than the {MAX_ROWS:,} one import "
                            "takes")
    checked: dict[str, list[dict[str, Any]]] = {}
    for table in TABLES:
        model = _MODELS[table]
        rows: list[dict[str, Any]] = []
        for index, row in enumerate(tables[table]):
            try:
                rows.append(model.model_validate(row).model_dump())
            except ValidationError as exc:
                raise ImportInvalid(f"{table}[{index}]{_first_error(exc)}") from None
        checked[table] = rows
    _check_references(checked)
    return checked


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
    if kind == "value_error" and ": " in message and not loc:  # a model check names its field
        field, _, message = message.partition(": ")
        loc = f".{field}"
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
}


def _check_references(tables: dict[str, list[dict[str, Any]]]) -> None:
    """Every row belongs to the one run; every name a row refers to exists in the file."""
    run = tables["runs"][0]
    run_id = run["id"]
    for table in TABLES[1:]:
        for index, row in enumerate(tables[table]):
            if row["run_id"] != run_id:
                raise ImportInvalid(f"{table}[{index}].run_id: must be the run's id {run_id!r}")
    variants = _unique(tables, "variants", lambda r: r["name"])
    workloads = _unique(tables, "workloads", lambda r: r["workload_id"])
    metrics = _unique(tables, "metrics", lambda r: (r["workload_id"], r["name"]))
    units = {(r["workload_id"], r["name"]): r["unit"] for r in tables["metrics"]}
    facts = _unique(tables, "facts", lambda r: r["id"])
    _unique(tables, "realisations", lambda r: (r["variant"], r["workload_id"]))
    trials = {r["id"]: r for r in tables["trials"]}
    _unique(tables, "trials", lambda r: r["id"])
    if run["baseline"] and variants and run["baseline"] not in variants:
        raise ImportInvalid(f"runs[0].baseline: {run['baseline']!r} is not a variant")
    for index, row in enumerate(tables["metrics"]):
        _refers(row["workload_id"] in workloads, "metrics", index, "workload_id")
    for index, row in enumerate(tables["realisations"]):
        _refers(row["variant"] in variants, "realisations", index, "variant")
        _refers(row["workload_id"] in workloads, "realisations", index, "workload_id")
    for index, row in enumerate(tables["trials"]):
        _refers(row["variant"] in variants, "trials", index, "variant")
        _refers(row["workload_id"] in workloads, "trials", index, "workload_id")
        _refers(row["facts_id"] is None or row["facts_id"] in facts, "trials", index, "facts_id")
    for index, row in enumerate(tables["samples"]):
        trial = trials.get(row["trial_id"])
        _refers(trial is not None, "samples", index, "trial_id")
        assert trial is not None
        for field in ("variant", "workload_id"):
            if row[field] != trial[field]:
                raise ImportInvalid(f"samples[{index}].{field}: differs from its trial's "
                                    f"({trial[field]!r})")
        key = (row["workload_id"], row["metric"])
        _refers(key in metrics, "samples", index, "metric")
        if row["unit"] != units[key]:
            raise ImportInvalid(f"samples[{index}].unit: {row['unit']!r} differs from the "
                                f"metric's unit {units[key]!r}")
        _refers(row["facts_id"] is None or row["facts_id"] in facts, "samples", index,
                "facts_id")
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
