"""Noise profiles: how much one experiment's results drift from run to run on one host.

`virtbench calibrate` runs the experiment's baseline variant as K separate runs (A/A) and
estimates, per workload · metric, the within-run and between-run variance components
(virtbench.stats.between_runs); the profile is stored keyed by the host fingerprint and the
experiment file's hash, and `compare` adds its between-run variance to each side of the gate's
test when NEW was measured on that host from that file. Definitions: docs/statistics.md.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from virtbench.decide.runs import RunData
from virtbench.model import (
    NOT_JUDGED,
    Metric,
    VirtbenchError,
    better_text,
    parse_better,
)
from virtbench.stats.between_runs import (
    VarianceComponents,
    between_sd_interval,
    detectable_effect,
    effect_log,
    effect_pct,
    repetitions_needed,
    runs_needed,
    variance_components,
)
from virtbench.stats.verdict import ALPHA, POWER

__all__ = ["MetricNoise", "NoiseProfile", "build_profile", "find_profile", "plan_document",
           "plan_rows"]

RUNS_PER_SIDE = (1, 2, 4)
"""The R of the detectable-effect columns calibrate shows"""


@dataclass(frozen=True)
class MetricNoise:
    """One workload · metric of a profile: its variance components, or why there are none."""

    workload_id: str
    metric: Metric
    components: VarianceComponents | None
    between_sd_ci: tuple[float, float] = (math.nan, math.nan)
    """95 % interval of σ_b (same scale as the components)"""
    problem: str = ""
    """why no components could be estimated ('' when they could)"""

    @property
    def values_per_run(self) -> float:
        c = self.components
        return c.values / c.runs if c is not None else math.nan

    def as_dict(self) -> dict[str, Any]:
        c = self.components
        return {"workload_id": self.workload_id, "metric": self.metric.name,
                "unit": self.metric.unit, "better": better_text(self.metric.better),
                "description": self.metric.description,
                "components": asdict(c) if c is not None else None,
                "between_sd_ci": list(self.between_sd_ci) if c is not None else None,
                "problem": self.problem or None}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> MetricNoise:
        metric = Metric(str(data["metric"]), str(data["unit"]),
                        parse_better(data["better"], f"noise profile metric {data['metric']!r}"),
                        str(data.get("description") or ""))
        raw = data.get("components")
        components = None
        if raw is not None:
            components = VarianceComponents(
                scale="log" if raw["scale"] == "log" else "relative", runs=int(raw["runs"]),
                values=int(raw["values"]), mean=float(raw["mean"]),
                within_var=float(raw["within_var"]), between_var=float(raw["between_var"]),
                between_var_raw=float(raw["between_var_raw"]),
                ms_between=float(raw["ms_between"]), ms_within=float(raw["ms_within"]),
                n0=float(raw["n0"]), between_df=float(raw["between_df"]))
            c = components
            if not (c.runs >= 2 and c.values > c.runs and c.within_var >= 0
                    and c.between_var >= 0 and c.n0 > 0 and c.between_df >= 1
                    and all(map(math.isfinite, (c.mean, c.within_var, c.between_var,
                                                c.between_var_raw, c.n0, c.between_df)))):
                raise ValueError("impossible variance components")
        ci = data.get("between_sd_ci") or [math.nan, math.nan]
        return cls(str(data["workload_id"]), metric, components,
                   (float(ci[0]), float(ci[1])), str(data.get("problem") or ""))


@dataclass
class NoiseProfile:
    """The noise of one experiment file on one host, from calibration runs of one variant."""

    fingerprint: str
    """host fingerprint (virtbench.decide.runs.host_fingerprint)"""
    experiment_hash: str
    experiment: str
    host: str
    variant: str
    """the variant the calibration ran (the experiment's baseline)"""
    run_ids: list[str]
    metrics: dict[tuple[str, str], MetricNoise]
    created_at: float = field(default_factory=time.time)
    id: int | None = None
    """the store's id of the profile (None before it is stored)"""

    @property
    def runs(self) -> int:
        return len(self.run_ids)

    def for_metric(self, workload_id: str, metric: str) -> VarianceComponents | None:
        entry = self.metrics.get((workload_id, metric))
        return entry.components if entry is not None else None

    def data(self) -> dict[str, Any]:
        """What the store keeps besides the key columns (JSON)."""
        return {"metrics": [m.as_dict() for m in self.metrics.values()]}

    def as_dict(self) -> dict[str, Any]:
        return {"id": self.id, "fingerprint": self.fingerprint,
                "experiment_hash": self.experiment_hash, "experiment": self.experiment,
                "host": self.host, "variant": self.variant, "run_ids": list(self.run_ids),
                "created_at": self.created_at, **self.data()}

    @classmethod
    def from_stored(cls, row: dict[str, Any]) -> NoiseProfile:
        """From Store.noise_profile's row; a damaged row is an error that says so."""
        try:
            entries = [MetricNoise.from_dict(m) for m in row["data"]["metrics"]]
            return cls(str(row["fingerprint"]), str(row["experiment_hash"]),
                       str(row["experiment"]), str(row["host"]), str(row["variant"]),
                       [str(r) for r in row["run_ids"]],
                       {(e.workload_id, e.metric.name): e for e in entries},
                       float(row["created_at"]), int(row["id"]))
        except (KeyError, TypeError, ValueError) as exc:
            raise VirtbenchError(f"the store's noise profile {row.get('id')} is damaged "
                                 f"({exc!r}); run `virtbench calibrate` again") from exc


def build_profile(runs: Sequence[RunData], variant: str | None = None) -> NoiseProfile:
    """The profile of ``runs`` (A/A runs of one experiment file on one host) for ``variant``
    (default: the first run's baseline)."""
    if len(runs) < 2:
        raise VirtbenchError(f"a noise profile needs at least 2 runs, got {len(runs)}")
    first = runs[0]
    if len({r.fingerprint for r in runs}) > 1:
        raise VirtbenchError("the calibration runs were measured on different hosts or CPUs "
                             "(host fingerprints differ); a profile describes one host")
    if len({r.digest for r in runs}) > 1:
        raise VirtbenchError("the calibration runs come from different experiment files; a "
                             "profile describes one file")
    name = variant or first.baseline or next(iter(first.variants))
    metrics: dict[tuple[str, str], MetricNoise] = {}
    for (wid, mname), metric in first.metrics.items():
        groups = [r.values[(name, wid, mname)] for r in runs if (name, wid, mname) in r.values]
        try:
            components = variance_components(groups)
        except ValueError as exc:
            metrics[(wid, mname)] = MetricNoise(wid, metric, None, problem=str(exc))
            continue
        metrics[(wid, mname)] = MetricNoise(wid, metric, components,
                                            between_sd_interval(components))
    return NoiseProfile(first.fingerprint, first.digest, first.experiment, first.host, name,
                        [r.id for r in runs], metrics)


def find_profile(store: Any, run: RunData) -> NoiseProfile | None:
    """The latest stored profile for ``run``'s host fingerprint and experiment file."""
    row = store.noise_profile(run.fingerprint, run.digest)
    return None if row is None else NoiseProfile.from_stored(row)


def plan_rows(profile: NoiseProfile, n: int, detect_pct: float | None = None,
              runs_per_side: Sequence[int] = RUNS_PER_SIDE) -> list[dict[str, Any]]:
    """Per metric: the components as percentages and, at α = 5 % one-sided and 80 % power,
    the minimum detectable effect with n values per run and R runs per side; with
    ``detect_pct``, the n needed with one run per side and the R needed at n."""
    rows: list[dict[str, Any]] = []
    for entry in profile.metrics.values():
        c, metric = entry.components, entry.metric
        row: dict[str, Any] = {
            "workload_id": entry.workload_id, "metric": metric.name, "unit": metric.unit,
            "better": better_text(metric.better), "description": metric.description,
            "problem": entry.problem or None}
        if metric.better is None:  # never judged, so nothing to detect
            row["problem"] = NOT_JUDGED
        if c is None or metric.better is None:
            rows.append(row)
            continue
        row |= {"scale": c.scale, "runs": c.runs, "values": c.values, "mean": c.mean,
                "values_per_run": entry.values_per_run,
                "within_sd_pct": 100 * c.within_sd, "between_sd_pct": 100 * c.between_sd,
                "between_sd_ci_pct": [100 * entry.between_sd_ci[0],
                                      100 * entry.between_sd_ci[1]],
                "between_df": c.between_df,
                "detectable_pct": [
                    {"n": n, "runs_per_side": r,
                     "pct": effect_pct(detectable_effect(c.between_var, c.within_var, n, r),
                                       metric.better)}
                    for r in runs_per_side]}
        if detect_pct is not None:
            effect = effect_log(detect_pct, metric.better)
            reps = repetitions_needed(c.between_var, c.within_var, effect)
            row["detect"] = {
                "pct": detect_pct,
                "n_with_one_run_per_side": None if math.isinf(reps) else int(reps),
                "runs_per_side_at_n": runs_needed(c.between_var, c.within_var, effect, n),
                "n": n}
        rows.append(row)
    return rows


def plan_document(profile: NoiseProfile, n: int, detect_pct: float | None,
                  stopped: str = "") -> dict[str, Any]:
    """`calibrate --json`: the profile, the plan per metric, and the definitions."""
    return {"profile": profile.as_dict(), "alpha": ALPHA, "power": POWER,
            "test": "one-sided", "values_per_run": n,
            "scale": "within_sd_pct and between_sd_pct are 100 × the SD of the natural log of "
                     "the values (≈ % of the mean; scale 'log'), or of the values divided by "
                     "their grand mean (scale 'relative', for metrics with values ≤ 0)",
            "detectable": "minimum detectable worsening in % of BASE, one-sided test at alpha "
                          "with the given power: (z_(1-alpha) + z_power) * sqrt(2 * "
                          "(sigma_b^2 + sigma_w^2 / n) / R) on the log scale",
            "stopped": stopped or None,
            "rows": plan_rows(profile, n, detect_pct)}
