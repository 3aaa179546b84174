"""How much the HTML report's charts draw: apart from report/charts.py so that what names the
limits (the report's captions, the chart workers' caller) need not import matplotlib."""

from __future__ import annotations

__all__ = ["MAX_BARS", "MAX_LINE_POINTS"]

MAX_LINE_POINTS = 2000
"""Most points drawn per line of a time series."""
MAX_BARS = 64
"""Most configurations drawn in one bar chart (the table still lists all)."""
