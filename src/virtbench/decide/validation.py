"""Seeded simulations of decide's error rates: the tests assert them, benchmarks/
decide_validation.py records them in docs/statistics.md. Vectorised: each scenario draws all its
comparisons as one matrix and runs the array code `compare` runs for one pair."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from virtbench.model import Better
from virtbench.stats.between_runs import variance_components
from virtbench.stats.changepoints import change_points
from virtbench.stats.verdict import (
    ALPHA,
    LogRatioMoments,
    equivalence_p,
    log_ratio_moments,
    worse_p,
)

__all__ = ["Rate", "changepoint_rates", "draw", "drift_gate_rates", "drifting_runs", "gate_rate",
           "null_gate_rate", "tost_rate"]

SIMULATIONS = 4000
NULL_SIZES = (5, 10, 20, 30)
NULL_CVS = (0.01, 0.05, 0.2)


@dataclass(frozen=True)
class Rate:
    hits: int
    trials: int

    @property
    def rate(self) -> float:
        return self.hits / self.trials

    @property
    def mc_error(self) -> float:
        """Monte-Carlo standard error of the rate."""
        return math.sqrt(max(self.rate * (1 - self.rate), 1e-12) / self.trials)


def draw(rng: np.random.Generator, dist: str, cv: float, n: int, mean: float = 1.0,
         count: int = SIMULATIONS) -> np.ndarray:
    """``count`` samples of size n, normal or log-normal with the given mean and CV."""
    if dist == "normal":
        return rng.normal(mean, cv * mean, (count, n))
    sigma = math.sqrt(math.log1p(cv * cv))
    return mean * rng.lognormal(-sigma * sigma / 2, sigma, (count, n))


def _moments(base: np.ndarray, new: np.ndarray) -> LogRatioMoments:
    n_b = np.full(base.shape[0], base.shape[1])
    n_n = np.full(new.shape[0], new.shape[1])
    return log_ratio_moments(base.mean(1), base.var(1, ddof=1), n_b, new.mean(1),
                             new.var(1, ddof=1), n_n)


def null_gate_rate(dist: str, seed: int, sizes: tuple[int, ...] = NULL_SIZES,
                   cvs: tuple[float, ...] = NULL_CVS) -> Rate:
    """`--fail-if-worse 0` on equal distributions over n = 5..30, CV 1–20 % (or the ``sizes``
    and ``cvs`` given), both directions."""
    rng = np.random.default_rng(seed)
    hits = trials = 0
    for n in sizes:
        for cv in cvs:
            for better in (Better.LOWER, Better.HIGHER):
                m = _moments(draw(rng, dist, cv, n), draw(rng, dist, cv, n))
                hits += int(np.count_nonzero(worse_p(m, better, 0.0) < ALPHA))
                trials += SIMULATIONS
    return Rate(hits, trials)


def gate_rate(planted_pct: float, fail_pct: float, n: int, cv: float, seed: int,
              better: Better = Better.LOWER) -> Rate:
    """How often the gate at ``fail_pct`` fires on a planted regression of ``planted_pct``."""
    rng = np.random.default_rng(seed)
    factor = 1 + planted_pct / 100 if better is Better.LOWER else 1 - planted_pct / 100
    m = _moments(draw(rng, "normal", cv, n), draw(rng, "normal", cv, n, factor))
    return Rate(int(np.count_nonzero(worse_p(m, better, fail_pct) < ALPHA)), SIMULATIONS)


def tost_rate(margin_pct: float, n: int, cv: float, seed: int) -> Rate:
    """How often TOST says equivalent when the true difference is 0."""
    rng = np.random.default_rng(seed)
    m = _moments(draw(rng, "normal", cv, n), draw(rng, "normal", cv, n))
    return Rate(int(np.count_nonzero(equivalence_p(m, margin_pct) < ALPHA)), SIMULATIONS)


def changepoint_rates(step: float, seed: int, histories: int = 200, runs: int = 30,
                      at: int = 15, cv: float = 0.01, within: int = 2) -> Rate:
    """With ``step`` ≠ 0: histories where a change point lies within ±``within`` runs of the
    planted one; with step 0: histories where any change point is reported."""
    rng = np.random.default_rng(seed)
    series = rng.normal(1.0, cv, (histories, runs))
    series[:, at:] *= 1.0 + step
    if step == 0:
        hits = sum(bool(change_points(h)) for h in series)
    else:
        hits = sum(any(abs(cp.index - at) <= within for cp in change_points(h)) for h in series)
    return Rate(hits, histories)


def drifting_runs(rng: np.random.Generator, between_sd: float, within_cv: float, n: int,
                  runs: int, count: int = SIMULATIONS, factor: float = 1.0) -> np.ndarray:
    """``count`` sets of ``runs`` runs, n log-normal values each (shape count × runs × n): each
    run's level is exp(b), b ~ N(0, between_sd²) (drift), each value log-normal with CV
    ``within_cv`` around it (mean 1 × ``factor`` before drift)."""
    sigma = math.sqrt(math.log1p(within_cv * within_cv))
    effects = rng.normal(0.0, between_sd, (count, runs, 1))
    return factor * np.exp(effects + rng.normal(-sigma * sigma / 2, sigma, (count, runs, n)))


def drift_gate_rates(between_sd: float = 0.03, within_cv: float = 0.02, n: int = 10,
                     fail_pct: float = 2.0, calibration_runs: int = 5, seed: int = 0,
                     planted_pct: float = 0.0, better: Better = Better.LOWER,
                     count: int = SIMULATIONS) -> tuple[Rate, Rate]:
    """How often `compare BASE NEW --fail-if-worse fail_pct` fires on two runs whose levels
    drift from run to run, NEW worse by ``planted_pct`` (0: the same configuration): with the
    runs taken as independent (no profile) and with a noise profile, estimated for each
    comparison from ``calibration_runs`` A/A runs of n values as `calibrate` estimates it."""
    rng = np.random.default_rng(seed)
    p = planted_pct / 100
    factor = 1 + p if better is Better.LOWER else 1 - p
    base = drifting_runs(rng, between_sd, within_cv, n, 1, count)[:, 0]
    new = drifting_runs(rng, between_sd, within_cv, n, 1, count, factor)[:, 0]
    calibrations = drifting_runs(rng, between_sd, within_cv, n, calibration_runs, count)
    profiles = [variance_components(list(runs)) for runs in calibrations]
    between_var = np.array([c.between_var for c in profiles])
    between_df = np.array([c.between_df for c in profiles])
    independent = _moments(base, new)
    n_b, n_n = np.full(count, n), np.full(count, n)
    with_profile = log_ratio_moments(base.mean(1), base.var(1, ddof=1), n_b, new.mean(1),
                                     new.var(1, ddof=1), n_n, between_var=between_var,
                                     between_df=between_df)
    return (Rate(int(np.count_nonzero(worse_p(independent, better, fail_pct) < ALPHA)), count),
            Rate(int(np.count_nonzero(worse_p(with_profile, better, fail_pct) < ALPHA)), count))
