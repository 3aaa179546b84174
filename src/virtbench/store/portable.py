"""One portable file per result set (gzip JSON), so runs from different hosts meet in one report."""

from __future__ import annotations

import base64
import binascii
import gzip
import json
from pathlib import Path
from typing import Any

from sqlalchemy.exc import CompileError, IntegrityError

from virtbench import __version__
from virtbench.compressed import DecompressionError, decompress
from virtbench.model import VirtbenchError
from virtbench.store.store import Store

__all__ = ["FORMAT", "FORMAT_VERSION", "export_bytes", "export_run", "import_run", "read_document"]

FORMAT = "virtbench-results"
FORMAT_VERSION = 1
# Order matters on import: parents before children (foreign keys).
TABLES = ("runs", "variants", "workloads", "metrics", "facts", "realisations", "trials",
          "samples", "artifacts")


def export_run(store: Store, run_id: str, path: Path) -> int:
    """Write the run to ``path`` (``.json.gz`` compressed, else plain JSON); return sample count."""
    payload, count = export_bytes(store, run_id, compressed=path.suffix == ".gz")
    path.write_bytes(payload)
    return count


def export_bytes(store: Store, run_id: str, *, compressed: bool) -> tuple[bytes, int]:
    """The export file's content (gzip when ``compressed``) and its sample count, in memory:
    `virtbench serve` streams it, never building a path from a stored run id."""
    document: dict[str, Any] = {"format": FORMAT, "version": FORMAT_VERSION,
                                "virtbench": __version__, "tables": {}}
    for table in TABLES:
        rows = store.table_rows(table, run_id)
        if table == "artifacts":
            for row in rows:
                row["content"] = base64.b64encode(row["content"]).decode()
        document["tables"][table] = rows
    payload = json.dumps(document, separators=(",", ":")).encode()
    if compressed:
        payload = gzip.compress(payload, compresslevel=6)
    return payload, len(document["tables"]["samples"])


def read_document(path: Path) -> dict[str, Any]:
    """The parsed export file (gzip or plain JSON), checked for format and version."""
    document = _read_document(path)
    if not isinstance(document, dict) or document.get("format") != FORMAT:
        raise VirtbenchError(f"{path}: not a virtbench result file (format field missing)")
    version = document.get("version", 0)
    if not isinstance(version, int):
        raise VirtbenchError(f"{path}: damaged result file (version {version!r})")
    if version > FORMAT_VERSION:
        raise VirtbenchError(f"{path}: result format {document['version']} is newer than "
                             f"this virtbench reads ({FORMAT_VERSION}); upgrade virtbench")
    return document


def import_run(store: Store, path: Path, *, replace: bool = False) -> str:
    document = read_document(path)
    tables = _tables_of(document, path)
    (run,) = tables["runs"]
    run_id = str(run["id"])
    if any(r.id == run_id for r in store.runs()):
        if not replace:
            raise VirtbenchError(f"run {run_id} is already in the store; use --replace")
        store.delete_run(run_id)
    run["imported_from"] = str(path)
    try:
        _insert_run(store, tables, run)
    except (KeyError, TypeError, ValueError, binascii.Error, IntegrityError, CompileError) as exc:
        # A row without a column it needs, or with one the schema does not have.
        reason = getattr(exc, "orig", None) or f"{type(exc).__name__}: {exc}"
        raise VirtbenchError(f"{path}: damaged result file, nothing imported ({reason})"
                             ) from exc
    return run_id


def _insert_run(store: Store, tables: dict[str, list[dict[str, Any]]],
                run: dict[str, Any]) -> None:
    """One transaction: all of the run or nothing."""
    # Autoincrement ids are renumbered: map old trial/facts ids to the new ones.
    with store.engine.begin() as conn:
        store.insert_rows(conn, "runs", [run])
        for table in ("variants", "workloads", "metrics", "realisations"):
            store.insert_rows(conn, table, tables[table])
        facts_map = _insert_renumbered(store, conn, "facts", tables["facts"], {})
        trials = [dict(t) | {"facts_id": facts_map.get(t["facts_id"])} for t in tables["trials"]]
        trial_map = _insert_renumbered(store, conn, "trials", trials, {})
        samples = [
            {k: v for k, v in r.items() if k != "id"}
            | {"trial_id": trial_map[r["trial_id"]], "facts_id": facts_map.get(r["facts_id"])}
            for r in tables["samples"]
        ]
        store.insert_rows(conn, "samples", samples)
        artifacts = [
            {k: v for k, v in r.items() if k != "id"}
            | {"trial_id": trial_map.get(r["trial_id"]),
               "content": base64.b64decode(r["content"])}
            for r in tables["artifacts"]
        ]
        store.insert_rows(conn, "artifacts", artifacts)


def _read_document(path: Path) -> Any:
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise VirtbenchError(f"cannot read {path}: {exc.strerror}") from exc
    try:  # export writes gzip; a file recompressed as xz or zstd reads too
        raw, _compression = decompress(raw)
    except DecompressionError as exc:
        raise VirtbenchError(f"{path}: truncated or damaged ({exc.kind}: {exc.reason}); export "
                             "the run again") from exc
    try:
        return json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise VirtbenchError(f"{path}: not a virtbench result file ({exc})") from exc


def _tables_of(document: dict[str, Any], path: Path) -> dict[str, list[dict[str, Any]]]:
    """The document's tables, each a list of rows, with exactly one run: else an error."""
    tables = document.get("tables")
    if not isinstance(tables, dict):
        raise VirtbenchError(f"{path}: not a virtbench result file (no tables)")
    for table in TABLES:
        rows = tables.get(table)
        if not isinstance(rows, list) or not all(isinstance(r, dict) for r in rows):
            raise VirtbenchError(f"{path}: damaged result file: table '{table}' is missing or "
                                 "not a list of rows")
    if len(tables["runs"]) != 1:
        raise VirtbenchError(f"{path}: damaged result file: it holds {len(tables['runs'])} runs "
                             "instead of one")
    return tables


def _insert_renumbered(store: Store, conn: Any, table: str, rows: list[dict[str, Any]],
                       mapping: dict[Any, int]) -> dict[Any, int]:
    from sqlalchemy import insert

    from virtbench.store import schema

    tbl = schema.metadata.tables[table]
    for row in rows:
        values = {k: v for k, v in row.items() if k != "id"}
        result = conn.execute(insert(tbl).values(**values))
        mapping[row["id"]] = int(result.inserted_primary_key[0])
    return mapping
