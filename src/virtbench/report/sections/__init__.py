"""Study-specific report sections (QoS grading, scalability fits, per-run web tables...).

A ``SectionPlugin`` — a name and a function ``(analysis: Analysis) -> list[Section]`` —
contributes sections to every report format; it is registered like every other plugin
(``virtbench.registry``: built-in modules export ``SECTIONS``). A builder returns [] when its
study's workloads are not in the analysis.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from virtbench import registry
from virtbench.analysis import Analysis

__all__ = ["Section", "SectionBuilder", "SectionPlugin", "all_sections", "build_sections"]


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




@dataclass(frozen=True)
class SectionPlugin:
    """A report-section plugin: ``build`` returns its sections ([] when its study is absent)."""

    name: str
    build: SectionBuilder


def all_sections() -> dict[str, SectionPlugin]:
    return registry.instances(SectionPlugin, "SECTIONS", lambda plugin: plugin.name)


def build_sections(analysis: Analysis) -> list[Section]:
    sections: list[Section] = []
    for plugin in all_sections().values():
        sections.extend(plugin.build(analysis))
    return sections
