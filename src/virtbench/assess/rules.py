"""A rule: one check, its source, and a function from what was observed to a finding (or None
when the thing checked is configured well)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

from virtbench.assess.findings import Finding

__all__ = ["Rule", "run_rules"]

View = TypeVar("View")


@dataclass(frozen=True)
class Rule(Generic[View]):
    id: str
    title: str
    source: str
    """The document the rule rests on (shown with every finding)."""
    check: Callable[[View], Finding | None]


def run_rules(rules: Sequence[Rule[View]], view: View) -> list[Finding]:
    found = []
    for rule in rules:
        finding = rule.check(view)
        if finding is not None:
            found.append(finding)
    return found
