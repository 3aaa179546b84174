"""Pure statistics for virtbench: summaries, outliers, comparisons, factorial effects, stopping
rules and regression. No I/O. Definitions and references: docs/statistics.md.

Names are imported on first use (PEP 562): `virtbench compare` needs a few cheap ones and
not SciPy's statistics module, whose import alone costs most of a second."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
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

# name -> module defining it
_WHERE = {
    "LinearFit": "virtbench.stats.regression",
    "MainEffect": "virtbench.stats.factorial",
    "RatioCI": "virtbench.stats.compare",
    "Significance": "virtbench.stats.compare",
    "Summary": "virtbench.stats.summary",
    "best_configuration": "virtbench.stats.factorial",
    "choose_test": "virtbench.stats.compare",
    "ci_converged": "virtbench.stats.adaptive",
    "holm": "virtbench.stats.multiple",
    "linear_fit": "virtbench.stats.regression",
    "looks_normal": "virtbench.stats.compare",
    "mad_outliers": "virtbench.stats.outliers",
    "main_effects": "virtbench.stats.factorial",
    "mann_whitney_test": "virtbench.stats.compare",
    "modified_z_scores": "virtbench.stats.outliers",
    "percent_change_ci": "virtbench.stats.compare",
    "percentile_ci": "virtbench.stats.summary",
    "ratio_ci_delta": "virtbench.stats.compare",
    "ratio_ci_fieller": "virtbench.stats.compare",
    "speedup_ci": "virtbench.stats.compare",
    "speedup_converged": "virtbench.stats.adaptive",
    "speedup_half_width_rel": "virtbench.stats.adaptive",
    "summarize": "virtbench.stats.summary",
    "welch_test": "virtbench.stats.compare",
}

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


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # later look-ups skip this function
    return value
