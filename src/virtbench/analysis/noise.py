"""Which trials were measured under noise (from their trial notes) and what preflight found."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from virtbench.preflight.thresholds import DEFAULT_THRESHOLDS, Thresholds, noisy

__all__ = ["NoiseSummary", "summarise_noise"]


@dataclass
class NoiseSummary:
    limits: Thresholds = DEFAULT_THRESHOLDS
    sampled: int = 0
    """Measured trials that carry noise notes (runs before the preflight existed have none)."""
    marked: dict[tuple[str, str], list[tuple[int, str]]] = field(default_factory=dict)
    """(variant, workload_id) -> [(repetition, why)] for trials measured under noise."""
    preflight: list[tuple[str, str, list[dict[str, Any]]]] = field(default_factory=list)
    """(run_id, phase, checks) of every stored preflight."""

    @property
    def marked_count(self) -> int:
        return sum(len(v) for v in self.marked.values())

    def describe(self) -> str:
        """One line for the report's summary (empty when no trial was sampled)."""
        if not self.sampled:
            return ""
        return (f"{self.marked_count} of {self.sampled} trials measured under noise (steal > "
                f"{self.limits.steal_warn:g} % or foreign load > {self.limits.foreign_warn:g} % "
                "of the CPUs)")

    def failing_at_start(self) -> list[str]:
        """'run-id: foreign_load 62 % of 2 CPUs' for every check that failed before a run."""
        return [f"{run_id[:12]}: {c['name']} {c['value']}"
                for run_id, phase, checks in self.preflight if phase == "preflight start"
                for c in checks if c.get("status") == "fail"]


def summarise_noise(trials: Iterable[tuple[str, dict[str, Any]]],
                    facts: Iterable[tuple[str, str, dict[str, Any]]],
                    rename: Callable[[str, str], str],
                    limits: Thresholds = DEFAULT_THRESHOLDS) -> NoiseSummary:
    """``trials``: (run_id, stored trial); ``rename(run_id, variant)`` gives the analysis's
    variant name; ``facts``: (run_id, phase, data)."""
    out = NoiseSummary(limits)
    for run_id, trial in trials:
        if trial["status"] != "ok" or trial["warmup"]:
            continue
        notes = trial["notes"]
        if not any(k.startswith("noise.") for k in notes):
            continue
        out.sampled += 1
        reasons = noisy(notes, limits)
        if reasons:
            key = (rename(run_id, trial["variant"]), trial["workload_id"])
            out.marked.setdefault(key, []).append((int(trial["repetition"]),
                                                   "; ".join(reasons)))
    out.preflight = [(run_id, phase, list(data.get("checks", [])))
                     for run_id, phase, data in facts if phase.startswith("preflight")]
    return out
