"""From stored samples to what reports show. Reads the store; never writes it."""

from virtbench.analysis.build import analyse
from virtbench.analysis.report_model import Analysis, MetricRow, Series, VariantInfo

__all__ = ["Analysis", "MetricRow", "Series", "VariantInfo", "analyse"]
