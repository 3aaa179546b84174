"""The runs page's filters and search: pure functions over the store's run records."""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from starlette.datastructures import QueryParams

from virtbench.serve.query import QueryError, once
from virtbench.store import RunInfo

__all__ = ["PAGE_SIZE", "STATUSES", "RunFilter", "filter_runs"]

PAGE_SIZE = 100
"""Runs per page: a store of 10,000 runs renders in a few milliseconds a page."""
STATUSES = ("abandoned", "complete", "failed", "interrupted", "running")
"""What a run's status can be (the stored four, and abandoned: running, its process gone)."""


@dataclass(frozen=True)
class RunFilter:
    experiment: str = ""
    host: str = ""
    status: str = ""
    since: dt.date | None = None
    until: dt.date | None = None
    text: str = ""

    @classmethod
    def from_query(cls, query: QueryParams) -> RunFilter:
        """From the page's query string; a repeated parameter, a malformed date, dates the
        wrong way round or a status that is none of STATUSES names its field."""
        once(query, "experiment", "host", "status", "since", "until", "q")
        status = query.get("status", "")
        if status and status not in STATUSES:
            raise QueryError(f"status: {status[:40]!r} is not a run status "
                             f"({', '.join(STATUSES)})")
        since, until = _date(query, "since"), _date(query, "until")
        if since and until and since > until:
            raise QueryError(f"since: {since} is after until ({until}): no day is in between")
        return cls(experiment=query.get("experiment", ""), host=query.get("host", ""),
                   status=status, since=since, until=until, text=query.get("q", "").strip())

    def matches(self, run: RunInfo) -> bool:
        if self.experiment and run.experiment != self.experiment:
            return False
        if self.host and run.host != self.host:
            return False
        if self.status and run.status != self.status:
            return False
        day = dt.datetime.fromtimestamp(run.started_at, dt.UTC).date()
        if self.since and day < self.since:
            return False
        if self.until and day > self.until:
            return False
        if self.text:
            needle = self.text.casefold()
            haystack = " ".join((run.id, run.experiment, run.description, run.host, run.target,
                                 run.status, run.stop_reason)).casefold()
            return needle in haystack
        return True

    def query(self) -> dict[str, str]:
        """The filter as query parameters (for download links and pages)."""
        items = {"experiment": self.experiment, "host": self.host, "status": self.status,
                 "since": self.since.isoformat() if self.since else "",
                 "until": self.until.isoformat() if self.until else "", "q": self.text}
        return {k: v for k, v in items.items() if v}


def _date(query: Mapping[str, str], field: str) -> dt.date | None:
    value = query.get(field, "").strip()
    if not value:
        return None
    try:
        return dt.date.fromisoformat(value)
    except ValueError as exc:
        raise QueryError(f"{field}: {value[:40]!r} is not a date (YYYY-MM-DD)") from exc


def filter_runs(runs: Sequence[RunInfo], chosen: RunFilter) -> list[RunInfo]:
    """Matching runs, newest first."""
    return sorted((r for r in runs if chosen.matches(r)), key=lambda r: r.started_at,
                  reverse=True)
