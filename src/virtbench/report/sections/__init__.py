"""Study-specific report sections (QoS grading, scalability fits, per-run web tables...).

A module in this package that exports ``SECTIONS`` — a tuple of functions
``(analysis: Analysis) -> list[Section]`` — contributes sections to every report format. A
builder returns [] when its study's workloads are not in the analysis.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from virtbench.analysis import Analysis

__all__ = ["Section", "SectionBuilder", "build_sections"]


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


SectionBuilder = Callable[[Analysis], list[Section]]


def build_sections(analysis: Analysis) -> list[Section]:
    import virtbench.report.sections as package
    from virtbench.discovery import discover

    sections: list[Section] = []
    for builder in discover(package, "SECTIONS"):
        sections.extend(builder(analysis))
    return sections
