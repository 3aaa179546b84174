"""Variant knobs checked against what the experiment's lab and workloads declare.

A knob nobody declares would be ignored and the run would compare identical configurations, so
it is an error before anything starts; so is a value its declaring plugin does not accept.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from virtbench.contract import Knob
from virtbench.spec.models import Experiment, VariantSpec

__all__ = ["Declarer", "Locate", "knob_problems"]

Loc = tuple[int | str, ...]
Locate = Callable[[Loc], str]
"""Where a location of the experiment file is, as a message prefix (``FILE:LINE: `` or '')."""


@dataclass(frozen=True)
class Declarer:
    """A plugin of the experiment and the knobs it declares."""

    label: str
    """How messages name it: ``lab vnf-router``, ``workload cpu.crc32c``."""
    knobs: Sequence[Knob]


@dataclass(frozen=True)
class _Use:
    """One place the experiment sets a knob, and the values it gives there."""

    loc: Loc
    field: str
    variants: str
    name: str
    values: list[tuple[Loc, str, Any]]


def knob_problems(experiment: Experiment, declarers: Sequence[Declarer],
                  locate: Locate) -> list[str]:
    """Every knob the experiment sets that no declarer declares or whose value is refused."""
    declared: dict[str, list[tuple[str, Knob]]] = {}
    for declarer in declarers:
        for knob in declarer.knobs:
            declared.setdefault(knob.name, []).append((declarer.label, knob))
    problems: list[str] = []
    for use in _uses(experiment):
        owners = declared.get(use.name)
        if owners is None:
            problems.append(f"{locate(use.loc)}{use.field} ({use.variants}): unknown knob "
                            f"'{use.name}'{_hint(use.name, declared, declarers)}")
            continue
        # Plugins sharing one declaration (the CPU workloads' cpu_features) are judged once.
        shared: dict[int, tuple[Knob, list[str]]] = {}
        for label, knob in owners:
            shared.setdefault(id(knob), (knob, []))[1].append(label)
        for loc, field, value in use.values:
            for knob, by in shared.values():
                problem = knob.problem(value)
                if problem is not None:
                    problems.append(f"{locate(loc)}{field} ({use.variants}): knob '{use.name}' "
                                    f"= {_short(value)} is refused by {_and(by)} ({knob.accepts}): "
                                    f"{problem}")
    return problems


def _hint(name: str, declared: dict[str, Any], declarers: Sequence[Declarer]) -> str:
    who = _and([d.label for d in declarers])
    if not declared:
        return f"; {who} declare{'s' if len(declarers) == 1 else ''} no knobs"
    close = difflib.get_close_matches(name, declared, n=1)
    guess = f"; did you mean '{close[0]}'?" if close else ""
    return f"{guess} (knobs of {who}: {', '.join(sorted(declared))})"


def _short(value: Any) -> str:
    """A value as written, cut to one readable line (a knob may hold a long list)."""
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _and(items: list[str]) -> str:
    return items[0] if len(items) == 1 else f"{', '.join(items[:-1])} and {items[-1]}"


def _names(variants: Sequence[VariantSpec]) -> str:
    names = [f"'{v.name}'" for v in variants]
    if not names:
        return "no variants"
    if len(names) == 1:
        return f"variant {names[0]}"
    if len(names) > 3:
        names = [*names[:2], f"… {len(names)} in all"]
    return f"variants {', '.join(names)}"


def _uses(exp: Experiment) -> Iterator[_Use]:
    for i, variant in enumerate(exp.variants):
        for name, value in variant.knobs.items():
            loc: Loc = ("variants", i, "knobs", name)
            field = f"variants[{i}].knobs.{name}"
            yield _Use(loc, field, _names([variant]), name, [(loc, field, value)])
    generated = exp.all_variants()[len(exp.variants):]
    if exp.matrix:
        count = 1
        for values in exp.matrix.values():
            count *= len(values)
        grid, generated = generated[:count], generated[count:]
        for name, values in exp.matrix.items():
            yield _Use(("matrix", name), f"matrix.{name}", _names(grid), name,
                       [(("matrix", name, j), f"matrix.{name}[{j}]", value)
                        for j, value in enumerate(values)])
    if exp.factorial:
        f = exp.factorial
        subsets = _names(generated)
        yield _Use(("factorial", "knob"), "factorial.knob", subsets, f.knob,
                   [(("factorial", "factors"), "factorial.factors", [*f.base, *f.factors])])
        for name, value in f.other_knobs.items():
            loc = ("factorial", "other_knobs", name)
            field = f"factorial.other_knobs.{name}"
            yield _Use(loc, field, subsets, name, [(loc, field, value)])
