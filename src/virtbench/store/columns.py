"""The columns of every table of the result store, by name and in order: the one list that
the tables (schema.py, SQLAlchemy), the rows the store writes (store.py) and the SQL it reads
(reading.py) are all made from or checked against.

Plain Python, so a command that only reads a SQLite store (`runs`, `report`, `compare`,
`history`) gets its SQL without importing SQLAlchemy (sqlite_reader.py). schema.py builds each
table with a check that refuses, at import, a table whose columns differ from these;
:func:`checked` refuses, at import, a query that names a column its table lacks.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from virtbench.safetext import STORED_MAX_CHARS

__all__ = ["COLUMNS", "NAME_MAX", "TEXT_LIMITS", "UNIT_MAX", "checked", "insert_sql", "listed",
           "written"]

COLUMNS: dict[str, tuple[str, ...]] = {
    "schema_version": ("version",),
    "runs": ("id", "experiment", "description", "spec_yaml", "spec_path", "seed", "status",
             "stop_reason", "started_at", "ended_at", "host", "target", "baseline",
             "virtbench_version", "imported_from", "owner_pid", "owner_host", "owner_boot_id",
             "calibration"),
    "variants": ("run_id", "name", "position", "knobs_json", "is_baseline"),
    "workloads": ("run_id", "workload_id", "name", "position", "params_json"),
    "metrics": ("run_id", "workload_id", "name", "unit", "better", "description", "is_primary",
                "domain"),
    "facts": ("id", "run_id", "phase", "captured_at", "data_json"),
    "realisations": ("run_id", "variant", "workload_id", "mechanism", "settings_json",
                     "limitations_json", "env_json"),
    "trials": ("id", "run_id", "variant", "workload_id", "repetition", "order_index", "warmup",
               "status", "error", "started_at", "ended_at", "target", "facts_id",
               "notes_json"),
    "samples": ("id", "run_id", "trial_id", "variant", "workload_id", "metric", "value", "unit",
                "repetition", "t", "labels_json", "status", "started_at", "ended_at", "target",
                "facts_id"),
    "artifacts": ("id", "run_id", "trial_id", "name", "media_type", "content"),
    "saved_state": ("key", "value_json", "saved_at"),
    "noise_profiles": ("id", "fingerprint", "experiment_hash", "experiment", "host", "variant",
                       "run_ids_json", "created_at", "virtbench_version", "data_json"),
}

NAME_MAX = 200
"""Longest name (variant, workload, metric, artifact, facts phase) and host or target."""
UNIT_MAX = 40
"""Longest unit (and virtbench version)."""
_TEXT = STORED_MAX_CHARS
_RUN_NAMES = ("variant", "workload_id")

TEXT_LIMITS: dict[str, dict[str, int]] = {
    "runs": {"description": _TEXT, "spec_yaml": _TEXT, "spec_path": _TEXT,
             "stop_reason": _TEXT, "host": NAME_MAX, "target": NAME_MAX, "baseline": NAME_MAX,
             "virtbench_version": UNIT_MAX, "imported_from": _TEXT, "owner_host": NAME_MAX},
    "variants": {"name": NAME_MAX},
    "workloads": {"workload_id": NAME_MAX, "name": NAME_MAX},
    "metrics": {"workload_id": NAME_MAX, "name": NAME_MAX, "unit": UNIT_MAX,
                "description": _TEXT},
    "facts": {"phase": NAME_MAX},
    "realisations": {**dict.fromkeys(_RUN_NAMES, NAME_MAX), "mechanism": _TEXT},
    "trials": {**dict.fromkeys(_RUN_NAMES, NAME_MAX), "error": _TEXT, "target": NAME_MAX},
    "samples": {**dict.fromkeys(_RUN_NAMES, NAME_MAX), "metric": NAME_MAX, "unit": UNIT_MAX,
                "target": NAME_MAX},
    "artifacts": {"name": NAME_MAX},
}
"""The free-text columns of each exported table and the most characters each keeps: the
store writes them through ``safetext.stored``, export applies it again and import accepts
what it yields. Ids, statuses and media types have grammars of their own (store/rows.py); the
``*_json`` columns hold JSON as ``json.dumps`` writes it (ASCII: every other character as a
``\\u`` escape), whose strings are shown through safetext when read."""


def written(table: str) -> tuple[str, ...]:
    """The columns a new row of ``table`` gives: all but the id the database assigns."""
    return tuple(name for name in COLUMNS[table] if name != "id")


def listed(table: str, names: Sequence[str] | None = None) -> str:
    """``a, b, c``: the given columns of ``table`` (all of them, in order, when None)."""
    chosen = COLUMNS[table] if names is None else tuple(names)
    unknown = [name for name in chosen if name not in COLUMNS[table]]
    if unknown:
        raise AssertionError(f"{table} has no column {', '.join(unknown)}")
    return ", ".join(chosen)


def insert_sql(table: str, placeholder: str, *, names: Sequence[str] | None = None,
               returning: str = "") -> str:
    """``INSERT INTO table (names) VALUES (…)`` with the driver's positional placeholder
    (``?`` sqlite3, ``%s`` psycopg); by default every :func:`written` column, in order."""
    chosen = written(table) if names is None else tuple(names)
    sql = (f"INSERT INTO {table} ({listed(table, chosen)}) "
           f"VALUES ({', '.join([placeholder] * len(chosen))})")
    return f"{sql} RETURNING {listed(table, [returning])}" if returning else sql


# In the SQL text of reading.py: keywords and types upper case, functions lower case and
# followed by "(", parameters after ":", literals quoted, ``{fields}`` filled in later (an IN
# list of parameters); every other lower-case word is a column of the tables the query reads
# (named after FROM).
_QUOTED = re.compile(r"'[^']*'|\{\w*\}")
_WORD = re.compile(r"(?<![:\w])([a-z_][a-z0-9_]*)\b(?!\s*\()")
_TABLE = re.compile(r"\bFROM\s+([a-z_]+)")


def checked(sql: str) -> str:
    """``sql`` itself, once every lower-case name in it is found to be a column of the table it
    reads: a query naming a column no table has fails at import, not when it first runs."""
    tables = _TABLE.findall(sql)
    known = {name for table in tables for name in COLUMNS[table]} | set(tables)
    unknown = sorted(set(_WORD.findall(_QUOTED.sub("''", sql))) - known)
    if not tables or unknown:
        raise AssertionError(f"{sql!r} names {', '.join(unknown) or 'no table'}: not columns "
                             "of its table (store/columns.py)")
    return sql
