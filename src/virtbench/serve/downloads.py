"""Downloads of every view: the portable export file, the report as CSV, JSON or HTML, and the
runs table as CSV or JSON."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from starlette.exceptions import HTTPException
from starlette.responses import Response

from virtbench import safetext
from virtbench.analysis import Analysis
from virtbench.decide.explain import WorkloadExplanation
from virtbench.plugins import build_sections
from virtbench.report import text
from virtbench.report.html import render_html
from virtbench.serve.attachment import content_disposition
from virtbench.store import Store
from virtbench.store.portable import export_bytes

__all__ = ["REPORT_FORMATS", "document", "export", "report", "table"]

REPORT_FORMATS = {"csv": "text/csv; charset=utf-8", "json": "application/json",
                  "html": "text/html; charset=utf-8"}


def _attachment(body: bytes | str, media_type: str, name: str, extension: str) -> Response:
    """A download built in memory; ``name`` (stored text) only ever becomes a safe file name."""
    return Response(body, media_type=media_type,
                    headers={"Content-Disposition": content_disposition(name, extension),
                             "Cache-Control": "no-store"})


def export(store: Store, run_id: str) -> Response:
    """The run as `virtbench export` writes it (gzip JSON), for `virtbench import` elsewhere;
    built in memory: no file is written, no path is made from the run id."""
    payload, _samples = export_bytes(store, run_id, compressed=True)
    return _attachment(payload, "application/gzip", run_id, "json.gz")


def report(analysis: Analysis, fmt: str, name: str,
           explain: Sequence[WorkloadExplanation] = ()) -> Response:
    """The analysis as `virtbench report -f csv|json|html` prints it (``explain``: the run's
    profiles, for the HTML report's Explain section)."""
    if fmt not in REPORT_FORMATS:
        raise HTTPException(404, f"no download format {fmt!r}: one of "
                                 f"export, {', '.join(REPORT_FORMATS)}")
    if fmt == "csv":
        body = text.render_csv(analysis)
    else:
        if fmt == "json":
            body = text.render_json(analysis, sections=build_sections(analysis))
        else:
            body = render_html(analysis, sections=build_sections(analysis), explain=explain)
    return _attachment(body, REPORT_FORMATS[fmt], name, fmt)


def document(data: Any, name: str) -> Response:
    """Any JSON document, NaN and infinities as null (as the CLI's --json writes them)."""
    body = safetext.dumps(data, indent=1)
    return _attachment(body, "application/json", name, "json")


def table(rows: list[dict[str, Any]], fmt: str, name: str) -> Response:
    """Rows of dicts as CSV (columns of the first row) or a JSON array."""
    if fmt == "json":
        return document(rows, name)
    if fmt != "csv":
        raise HTTPException(404, f"no download format {fmt!r}: csv or json")
    # Stored text opened in a spreadsheet: formula-like cells neutralised (safetext).
    body = safetext.csv_document(list(rows[0]), rows) if rows else ""
    return _attachment(body, "text/csv; charset=utf-8", name, "csv")


