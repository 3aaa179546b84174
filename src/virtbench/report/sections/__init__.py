"""Study-specific report sections (QoS grading, scalability fits, per-run web tables...).

A ``SectionPlugin`` — a name and a function ``(analysis: Analysis) -> list[Section]`` —
contributes sections to every report format; it is registered like every other plugin
(built-in modules export ``SECTIONS``, listed in ``virtbench.plugins``, which builds the sections
the renderers are given: ``virtbench.plugins.build_sections``). A builder returns [] when its
study's workloads are not in the analysis.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from virtbench.analysis import Analysis

__all__ = ["Section", "SectionBuilder", "SectionPlugin"]


@dataclass
class Section:
    key: str
    """Stable identifier (anchors, JSON keys)."""
    title: str
    paragraphs: list[str] = field(default_factory=list)
    """Plain-text paragraphs: what is shown, definitions, formulas."""
    columns: list[str] = field(default_factory=list)
    rows: list[list[str]] = field(default_factory=list)
    """Cells already formatted with their units."""
    warnings: list[str] = field(default_factory=list)
    metrics: list[tuple[str, str]] = field(default_factory=list)
    """(workload id, metric name) of the metrics this study section reports: its study
    metrics, which Key results shows beside the primary ones (report/key_results.py)."""


SectionBuilder = Callable[[Analysis], list[Section]]




@dataclass(frozen=True)
class SectionPlugin:
    """A report-section plugin: ``build`` returns its sections ([] when its study is absent)."""

    name: str
    build: SectionBuilder
