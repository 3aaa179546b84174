"""Per-request records of a load run, their file format, and their summary (pure)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, fields
from pathlib import Path

import numpy as np

__all__ = [
    "RequestRecord",
    "Summary",
    "read_records",
    "summarise",
    "write_records",
]

# The late-start tolerance the floor is stated in.
LATE_S = 0.001


@dataclass(slots=True)
class RequestRecord:
    """One request. Times are seconds since the run's time zero (monotonic clock).

    ``scheduled``: when the model intended to send it (open model: the arrival time; closed
    model: when the user finished thinking). ``start``: when its bytes were written. Response
    time is ``end - scheduled`` so queueing and late sends count (no coordinated omission).
    A value of -1 means the event never happened (no first byte for a refused connection).
    """

    index: int
    worker: int
    url: int
    scheduled: float
    start: float = -1.0
    first_byte: float = -1.0
    end: float = -1.0
    status: int = 0
    """HTTP status, 0 when no response arrived."""
    bytes: int = 0
    """Body bytes received."""
    cache: str = "-"
    """'hit' (X-Varnish holds two ids), 'miss' (one id), '-' (no X-Varnish header)."""
    age_s: int = -1
    """The Age header (s), -1 when absent."""
    error: str = ""
    """'' for a response; timeout, refused, reset, closed, bad_response for failures."""
    new_connection: bool = False

    @property
    def ok(self) -> bool:
        """Success = a complete 2xx/3xx response (JMeter's rule); 4xx, 5xx and errors fail."""
        return not self.error and 200 <= self.status < 400

    @property
    def response_time_s(self) -> float:
        return self.end - self.scheduled if self.end >= 0 else float("nan")

    @property
    def ttfb_s(self) -> float:
        return self.first_byte - self.scheduled if self.first_byte >= 0 else float("nan")

    @property
    def send_lag_s(self) -> float:
        return self.start - self.scheduled if self.start >= 0 else float("nan")


_FIELDS = [f.name for f in fields(RequestRecord)]


def write_records(path: Path, records: Iterable[RequestRecord], meta: dict[str, object]) -> None:
    """JSON lines: a header line with run metadata, then one array per request."""
    with path.open("w") as out:
        out.write(json.dumps({"fields": _FIELDS, "meta": meta}) + "\n")
        for r in records:
            out.write(json.dumps(list(asdict(r).values()), separators=(",", ":")) + "\n")


def read_records(path: Path) -> tuple[list[RequestRecord], dict[str, object]]:
    lines = path.read_text().splitlines()
    if not lines:
        raise ValueError(f"{path}: empty load-generator output")
    header = json.loads(lines[0])
    names = header["fields"]
    records = [RequestRecord(**dict(zip(names, json.loads(line), strict=True)))
               for line in lines[1:] if line]
    return records, dict(header.get("meta", {}))


@dataclass(frozen=True)
class Summary:
    """Figures of one run. Times in ms, rates in requests/s; NaN when nothing succeeded."""

    samples: int
    failures: int
    success_rate_pct: float
    response_time_mean_ms: float
    response_time_median_ms: float
    response_time_p90_ms: float
    response_time_p99_ms: float
    ttfb_mean_ms: float
    offered_rate: float
    achieved_rate: float
    """Completed requests (success or not) per second of the sending period."""
    hit_ratio_client_pct: float
    """Share of successful responses that Varnish marked as a hit."""
    send_lag_p99_ms: float
    late_sends_pct: float
    """Share of sent requests whose send started more than 1 ms after its scheduled time."""
    received_mb_per_s: float
    errors: dict[str, int]


def _pct(values: Sequence[float], q: float) -> float:
    return float(np.percentile(values, q)) * 1000.0 if len(values) else float("nan")


def summarise(records: Sequence[RequestRecord], duration_s: float) -> Summary:
    ok = [r for r in records if r.ok]
    rts = [r.response_time_s for r in ok]
    lags = [r.send_lag_s for r in records if r.start >= 0]
    errors: dict[str, int] = {}
    for r in records:
        if not r.ok:
            key = r.error or f"http_{r.status}"
            errors[key] = errors.get(key, 0) + 1
    completed = [r for r in records if r.end >= 0]
    hits = sum(1 for r in ok if r.cache == "hit")
    n = len(records)
    return Summary(
        samples=n,
        failures=n - len(ok),
        success_rate_pct=100.0 * len(ok) / n if n else float("nan"),
        response_time_mean_ms=float(np.mean(rts)) * 1000.0 if rts else float("nan"),
        response_time_median_ms=_pct(rts, 50),
        response_time_p90_ms=_pct(rts, 90),
        response_time_p99_ms=_pct(rts, 99),
        ttfb_mean_ms=float(np.mean([r.ttfb_s for r in ok])) * 1000.0 if ok else float("nan"),
        offered_rate=n / duration_s,
        achieved_rate=len(completed) / duration_s,
        hit_ratio_client_pct=100.0 * hits / len(ok) if ok else float("nan"),
        send_lag_p99_ms=_pct(lags, 99),
        late_sends_pct=100.0 * sum(1 for x in lags if x > LATE_S) / len(lags) if lags
        else float("nan"),
        received_mb_per_s=sum(r.bytes for r in records) / duration_s / 1e6,
        errors=errors,
    )
