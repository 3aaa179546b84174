"""Trial durations measured on this host, kept between runs for ``run --check``'s estimate.

A small JSON file in the user's cache folder (not the store: `run --check` opens no store).
Keyed by workload name, a digest of its parameters and a digest of the variant's knobs; each
key keeps its last ``KEEP`` durations. The file is this user's own, but it is still read as
untrusted input: anything malformed is ignored (the estimate then falls back to the
workloads' own word), never an error that stops a run."""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import os
import statistics
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

__all__ = ["KEEP", "TrialTimes", "configuration_key", "trial_key"]

KEEP = 20
MAX_KEYS = 5000  # an old cache stops growing: the least recently written keys go first
MAX_FILE_BYTES = 4 * 1024 * 1024


def _digest(value: Any) -> str:
    text = json.dumps(value, sort_keys=True, default=str, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def configuration_key(workload: str, params: Mapping[str, Any]) -> str:
    """The part of ``trial_key`` every variant of one workload configuration shares."""
    return f"{workload}|{_digest(dict(params))}|"


def trial_key(workload: str, params: Mapping[str, Any], knobs: Mapping[str, Any]) -> str:
    return configuration_key(workload, params) + _digest(dict(knobs))


def default_path() -> Path:
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return cache / "virtbench" / "trial-times.json"


class TrialTimes:
    """Measured trial durations by ``trial_key``; ``load`` never fails."""

    def __init__(self, times: dict[str, list[float]] | None = None,
                 path: Path | None = None) -> None:
        self.times = times or {}
        self.path = path or default_path()

    @classmethod
    def load(cls, path: Path | None = None) -> TrialTimes:
        path = path or default_path()
        try:
            if path.stat().st_size > MAX_FILE_BYTES:
                return cls({}, path)
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError, RecursionError):
            return cls({}, path)
        times: dict[str, list[float]] = {}
        if isinstance(data, dict):
            for key, values in data.items():
                if isinstance(key, str) and isinstance(values, list):
                    kept = [float(v) for v in values[-KEEP:] if isinstance(v, int | float)
                            and not isinstance(v, bool) and math.isfinite(v) and v >= 0]
                    if kept:
                        times[key] = kept
        return cls(times, path)

    def median(self, key: str) -> float | None:
        values = self.times.get(key)
        return statistics.median(values) if values else None

    def median_any_variant(self, prefix: str) -> float | None:
        """The median over every variant of one workload configuration (``configuration_key``)."""
        values = [v for key, vs in self.times.items() if key.startswith(prefix) for v in vs]
        return statistics.median(values) if values else None

    def add(self, measured: Mapping[str, list[float]]) -> None:
        """Merge new durations and write the file (atomically; a failure only loses them)."""
        if not measured:
            return
        merged = {**self.load(self.path).times}
        for key, values in measured.items():
            merged[key] = (merged.pop(key, []) + list(values))[-KEEP:]  # re-inserted: newest
        if len(merged) > MAX_KEYS:
            merged = dict(list(merged.items())[-MAX_KEYS:])
        with contextlib.suppress(OSError):
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=".trial-times-")
            try:
                with os.fdopen(fd, "w", encoding="utf-8") as out:
                    json.dump(merged, out)
                os.replace(tmp, self.path)
            finally:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(tmp)
        self.times = merged
