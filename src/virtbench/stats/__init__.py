"""Pure statistics for virtbench: summaries, outliers, comparisons, factorial effects, stopping
rules and regression. No I/O. Definitions and references: docs/statistics.md."""

from virtbench.stats.adaptive import ci_converged, speedup_converged, speedup_half_width_rel
from virtbench.stats.compare import (
    RatioCI,
    Significance,
    choose_test,
    holm,
    looks_normal,
    mann_whitney_test,
    percent_change_ci,
    ratio_ci_delta,
    ratio_ci_fieller,
    speedup_ci,
    welch_test,
)
from virtbench.stats.factorial import MainEffect, best_configuration, main_effects
from virtbench.stats.outliers import mad_outliers, modified_z_scores
from virtbench.stats.regression import LinearFit, linear_fit
from virtbench.stats.summary import Summary, percentile_ci, summarize

__all__ = [
    "LinearFit",
    "MainEffect",
    "RatioCI",
    "Significance",
    "Summary",
    "best_configuration",
    "choose_test",
    "ci_converged",
    "holm",
    "linear_fit",
    "looks_normal",
    "mad_outliers",
    "main_effects",
    "mann_whitney_test",
    "modified_z_scores",
    "percent_change_ci",
    "percentile_ci",
    "ratio_ci_delta",
    "ratio_ci_fieller",
    "speedup_ci",
    "speedup_converged",
    "speedup_half_width_rel",
    "summarize",
    "welch_test",
]
