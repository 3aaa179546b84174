"""One portable file per result set (gzip JSON), so runs from different hosts meet in one report."""

from __future__ import annotations

import base64
import gzip
import io
import json
from pathlib import Path
from typing import IO, Any

from sqlalchemy.exc import CompileError, DataError, IntegrityError

from virtbench import __version__
from virtbench.compressed import compression_of
from virtbench.model import VirtbenchError
from virtbench.store.reading import StoreReader
from virtbench.store.rows import (
    TABLES,
    ImportInvalid,
    stored_rows,
    valid_document,
    validate_tables,
)
from virtbench.store.store import Store

__all__ = ["FORMAT", "FORMAT_VERSION", "MAX_DOCUMENT_BYTES", "export_bytes", "export_run",
           "import_run", "import_tables", "read_document", "read_tables", "tables_to_import"]

FORMAT = "virtbench-results"
FORMAT_VERSION = 1
MAX_DOCUMENT_BYTES = 2 * 2**30
"""Largest result file, uncompressed (a compressed file is read only up to this size)."""


def export_run(store: StoreReader, run_id: str, path: Path) -> int:
    """Write the run to ``path`` (``.json.gz`` compressed, else plain JSON); return sample count."""
    payload, count = export_bytes(store, run_id, compressed=path.suffix == ".gz")
    path.write_bytes(payload)
    return count


def export_bytes(store: StoreReader, run_id: str, *, compressed: bool) -> tuple[bytes, int]:
    """The export file's content (gzip when ``compressed``) and its sample count, in memory:
    `virtbench serve` streams it, never building a path from a stored run id."""
    document: dict[str, Any] = {"format": FORMAT, "version": FORMAT_VERSION,
                                "virtbench": __version__, "tables": {}}
    for table in TABLES:
        rows = stored_rows(table, store.table_rows(table, run_id))
        if table == "artifacts":
            for row in rows:
                row["content"] = base64.b64encode(row["content"]).decode()
        document["tables"][table] = rows
    payload = json.dumps(document, separators=(",", ":")).encode()
    if compressed:
        payload = gzip.compress(payload, compresslevel=6)
    return payload, len(document["tables"]["samples"])


def read_document(path: Path, raw: bytes | None = None) -> dict[str, Any]:
    """The parsed export file (gzip or plain JSON), checked for format and version."""
    document = _read_document(path, raw)
    if not isinstance(document, dict) or document.get("format") != FORMAT:
        raise VirtbenchError(f"{path}: not a virtbench result file (format field missing)")
    version = document.get("version", 0)
    if not isinstance(version, int):
        raise VirtbenchError(f"{path}: damaged result file (version {version!r})")
    if version > FORMAT_VERSION:
        raise VirtbenchError(f"{path}: result format {document['version']} is newer than "
                             f"this virtbench reads ({FORMAT_VERSION}); upgrade virtbench")
    return document


def read_tables(path: Path) -> dict[str, list[dict[str, Any]]]:
    """The file's tables, every field of every row checked (store/rows.py): a problem is one
    VirtbenchError naming the file, the table, the row and the field."""
    raw = _read_bounded(path)
    document = valid_document(raw)  # the fast path: a good file is parsed and checked at once
    fast = (document is not None and document["format"] == FORMAT
            and document["version"] <= FORMAT_VERSION and len(document["tables"]["runs"]) == 1)
    if not fast:  # read again, the slow way, to name what is wrong
        document = read_document(path, raw)
    assert document is not None
    try:
        return validate_tables(_tables_of(document, path), checked=fast)
    except ImportInvalid as exc:
        raise ImportInvalid(f"{path}: {exc}") from None


def import_run(store: Store, path: Path, *, replace: bool = False) -> str:
    """Add the run of ``path`` to ``store`` in one transaction (all of it or nothing)."""
    return import_tables(store, path, tables_to_import(path), replace=replace)


def tables_to_import(path: Path) -> dict[str, list[dict[str, Any]]]:
    """:func:`read_tables`, its errors saying that nothing was imported (checked before the
    store is opened: a refused file creates no store)."""
    try:
        return read_tables(path)
    except ImportInvalid as exc:
        raise ImportInvalid(f"{exc}; nothing imported") from None


def import_tables(store: Store, path: Path, tables: dict[str, list[dict[str, Any]]], *,
                  replace: bool = False) -> str:
    """Store the checked ``tables`` of ``path`` (from :func:`tables_to_import`)."""
    run = tables["runs"][0]
    run_id = str(run["id"])
    run["imported_from"] = str(path)
    # The process that ran it wrote to another store: whatever its pid and boot id, it is not
    # this store's owner (a live pid of this boot would keep it "running" and refuse --resume).
    # Without an owner, an imported run still marked running reads as abandoned.
    run.update(owner_pid=None, owner_host=None, owner_boot_id=None)
    try:
        _insert_run(store, tables, run, replace=replace)
    except (IntegrityError, CompileError, DataError) as exc:
        # What the checks above let through and the database still refuses (e.g. a seed
        # beyond PostgreSQL's integer column): said, not a traceback.
        reason = str(getattr(exc, "orig", None) or exc).strip().splitlines()[0]
        raise VirtbenchError(f"{path}: the store refused the run, nothing imported ({reason})"
                             ) from exc
    return run_id


def _insert_run(store: Store, tables: dict[str, list[dict[str, Any]]],
                run: dict[str, Any], *, replace: bool) -> None:
    """One transaction: all of the run or nothing (a replaced run is deleted in it too)."""
    # Autoincrement ids are renumbered: map old trial/facts ids to the new ones.
    with store.engine.begin() as conn:
        if store.has_run(run["id"], conn):
            if not replace:
                raise VirtbenchError(f"run {run['id']} is already in the store; use --replace")
            store.delete_run(run["id"], conn)
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


def _read_document(path: Path, raw: bytes | None = None) -> Any:
    if raw is None:
        raw = _read_bounded(path)
    try:
        return json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise VirtbenchError(f"{path}: not a virtbench result file ({exc})") from exc
    except RecursionError:
        raise VirtbenchError(f"{path}: not a virtbench result file (JSON nested too deeply)"
                             ) from None


def _read_bounded(path: Path) -> bytes:
    """The file's bytes, decompressed (gzip, xz or zstd by magic bytes: export writes gzip, a
    recompressed file reads too), never more than :data:`MAX_DOCUMENT_BYTES` (a small
    compressed file can expand without bound)."""
    from virtbench.inputs.files import open_input

    # a directory, device, socket or FIFO without a writer: refused at once (exit 2)
    raw_file = open_input(path, "virtbench result file")
    kind = ""
    with raw_file:
        try:
            kind = compression_of(raw_file.peek(6)[:6])
            data: bytes = _decompressing(raw_file, kind).read(MAX_DOCUMENT_BYTES + 1)
        except Exception as exc:  # zlib, lzma and zstd errors; EOF; gzip's CRC check
            if not kind or not isinstance(exc, EOFError | ValueError | OSError
                                          | _zstd_error(kind)):
                raise
            raise VirtbenchError(f"{path}: truncated or damaged ({kind}: {exc}); export "
                                 "the run again") from exc
    if len(data) > MAX_DOCUMENT_BYTES:
        raise VirtbenchError(f"{path}: larger than {MAX_DOCUMENT_BYTES // 2**20} MiB "
                             "uncompressed, more than one import takes; nothing imported")
    return data


def _zstd_error(kind: str) -> type[Exception]:
    """zstandard's error class, for zstd input only (the library is loaded when it is met)."""
    if kind != "zstd":
        return EOFError
    import zstandard

    error: type[Exception] = zstandard.ZstdError
    return error


def _decompressing(raw_file: IO[bytes], kind: str) -> Any:
    """A file object that reads ``raw_file`` decompressed."""
    if kind == "gzip":
        return gzip.GzipFile(fileobj=raw_file)
    if kind == "xz":
        import lzma

        return lzma.LZMAFile(raw_file)
    if kind == "zstd":
        import zstandard

        reader: Any = zstandard.ZstdDecompressor().stream_reader(raw_file,
                                                                   read_across_frames=True)
        return io.BufferedReader(reader)
    return raw_file


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
