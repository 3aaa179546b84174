"""OpenMetrics text exposition (the format Prometheus scrapes, a pushgateway accepts and GitLab
reads as a metrics report): gauge families with a unit and a help text, and the spec's escapes.

Names and label values often come from stored runs: a metric name is reduced to
``[a-zA-Z_:][a-zA-Z0-9_:]*``, a label value and a help text are :func:`safetext.visible` and then
escaped as the spec says (backslash, double quote in label values, line break), so that no
stored text can end a sample, add a label or a line."""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from virtbench import safetext

__all__ = ["Family", "help_text", "label_value", "metric_name", "render", "unit_token"]

_NOT_NAME = re.compile(r"[^a-zA-Z0-9_:]+")


def metric_name(*parts: str) -> str:
    """The parts joined by '_' as a valid metric name: every run of other characters is one
    '_', and a leading digit gets a '_' before it."""
    name = "_".join(p for p in (_NOT_NAME.sub("_", part).strip("_") for part in parts) if p)
    return name if name and not name[0].isdigit() else f"_{name}"


def unit_token(unit: str) -> str:
    """A unit as OpenMetrics spells it (it must end the family's name): 'B/s' -> 'B_per_s',
    '%' -> 'percent'; '' stays ''."""
    spelled = unit.replace("/", "_per_").replace("%", "percent")
    return _NOT_NAME.sub("_", spelled).strip("_")


def label_value(value: object) -> str:
    """A label value between double quotes: backslash, double quote and line break escaped."""
    return (safetext.visible(value).replace("\\", "\\\\").replace('"', '\\"')
            .replace("\n", "\\n"))


def help_text(value: object) -> str:
    """A '# HELP' text: backslash and line break escaped."""
    return safetext.visible(value).replace("\\", "\\\\").replace("\n", "\\n")


@dataclass
class Family:
    """One gauge family: samples are (labels, value); non-finite values are left out (Prometheus
    would store NaN as a value)."""

    name: str
    help: str
    unit: str = ""
    samples: list[tuple[dict[str, str], float]] = field(default_factory=list)

    def add(self, labels: Mapping[str, str], value: float) -> None:
        if math.isfinite(value):
            self.samples.append((dict(labels), float(value)))


def _sample(name: str, labels: Mapping[str, str], value: float) -> str:
    body = ",".join(f'{key}="{label_value(text)}"' for key, text in labels.items())
    return f"{name}{{{body}}} {value!r}" if body else f"{name} {value!r}"


def render(families: Iterable[Family]) -> str:
    """The exposition: per family TYPE, UNIT (when it has one), HELP and its samples; ends with
    '# EOF'. A family without samples is left out."""
    lines: list[str] = []
    for family in families:
        if not family.samples:
            continue
        lines.append(f"# TYPE {family.name} gauge")
        if family.unit:
            lines.append(f"# UNIT {family.name} {family.unit}")
        lines.append(f"# HELP {family.name} {help_text(family.help)}")
        lines += [_sample(family.name, labels, value) for labels, value in family.samples]
    lines.append("# EOF")
    return "\n".join(lines) + "\n"
