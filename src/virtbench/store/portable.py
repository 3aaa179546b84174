"""One portable file per result set (gzip JSON), so runs from different hosts meet in one report."""

from __future__ import annotations

import base64
import gzip
import json
from pathlib import Path
from typing import Any

from virtbench import __version__
from virtbench.model import VirtbenchError
from virtbench.store.store import Store

__all__ = ["FORMAT", "FORMAT_VERSION", "export_run", "import_run", "read_document"]

FORMAT = "virtbench-results"
FORMAT_VERSION = 1
# Order matters on import: parents before children (foreign keys).
TABLES = ("runs", "variants", "workloads", "metrics", "facts", "realisations", "trials",
          "samples", "artifacts")


def export_run(store: Store, run_id: str, path: Path) -> int:
    """Write the run to ``path`` (``.json.gz`` compressed, else plain JSON); return sample count."""
    document: dict[str, Any] = {"format": FORMAT, "version": FORMAT_VERSION,
                                "virtbench": __version__, "tables": {}}
    for table in TABLES:
        rows = store.table_rows(table, run_id)
        if table == "artifacts":
            for row in rows:
                row["content"] = base64.b64encode(row["content"]).decode()
        document["tables"][table] = rows
    payload = json.dumps(document, separators=(",", ":")).encode()
    if path.suffix == ".gz":
        payload = gzip.compress(payload, compresslevel=6)
    path.write_bytes(payload)
    return len(document["tables"]["samples"])


def read_document(path: Path) -> dict[str, Any]:
    """The parsed export file (gzip or plain JSON), checked for format and version."""
    raw = path.read_bytes()
    try:
        if raw[:2] == b"\x1f\x8b":
            raw = gzip.decompress(raw)
        document = json.loads(raw)
    except (OSError, EOFError, ValueError) as exc:
        raise VirtbenchError(f"{path}: not a virtbench result file ({exc})") from exc
    if not isinstance(document, dict) or document.get("format") != FORMAT:
        raise VirtbenchError(f"{path}: not a virtbench result file (format field missing)")
    if document.get("version", 0) > FORMAT_VERSION:
        raise VirtbenchError(f"{path}: result format {document['version']} is newer than "
                             f"this virtbench reads ({FORMAT_VERSION}); upgrade virtbench")
    return document


def import_run(store: Store, path: Path, *, replace: bool = False) -> str:
    document = read_document(path)
    tables: dict[str, list[dict[str, Any]]] = document["tables"]
    (run,) = tables["runs"]
    run_id = str(run["id"])
    if any(r.id == run_id for r in store.runs()):
        if not replace:
            raise VirtbenchError(f"run {run_id} is already in the store; use --replace")
        store.delete_run(run_id)
    run["imported_from"] = str(path)
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
    return run_id


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
