"""`run --check`'s account of the plan: variants × workloads × planned trials, and about how
long the run will take (runner.estimate), before anything starts; then the problems found.

For a terminal the lines go through the console (``problem:`` in red); for a pipe or a file they
are plain lines, unwrapped, and rich is not imported (about 0.03 s of CPU, a tenth of the
check's start-up), as `parse` writes its notes (virtbench.cli.parsing)."""

from __future__ import annotations

import os
import sys

from virtbench import safetext
from virtbench.runner.estimate import Estimate, estimate, human_duration
from virtbench.runner.plan import Plan
from virtbench.runner.trial_times import TrialTimes
from virtbench.spec.models import Adaptive

__all__ = ["plan_lines", "print_plan"]


def plan_lines(plan: Plan, guess: Estimate) -> list[str]:
    exp = plan.experiment
    low, high = guess.trials
    trials = f"{low}" if low == high else f"{low}–{high} (adaptive)"
    rule = exp.repetitions
    repetitions = (f"adaptive {rule.min}–{rule.max} (until ±{rule.target_rel_ci:.1%})"
                   if isinstance(rule, Adaptive) else f"{rule}")
    lines = [f"{exp.name}: {len(plan.variants)} variants × {len(plan.workloads)} workloads; "
             f"baseline {plan.baseline}; repetitions {repetitions}, warm-up {exp.warmup}; "
             f"{trials} trials planned"]
    for item in guess.workloads:
        named = (item.name if item.workload_id == item.name
                 else f"{item.workload_id} ({item.name})")
        what = f"  {named}: "
        if item.searched:
            lines.append(what + "a capacity search per variant; its trial count is found as "
                                "it runs (not in the estimate)")
            lines += [f"    {line}" for line in item.goals]
            continue
        count = (f"{item.trials_low}" if item.trials_low == item.trials_high
                 else f"{item.trials_low}–{item.trials_high}")
        if item.unknown_pairs == len(plan.variants):
            lines.append(what + f"{count} trials, each of unknown length (nothing measured on "
                                "this host yet, and the workload does not say)")
            continue
        spent = _span(item.low_s, item.high_s)
        sources = "; ".join(sorted(item.sources))
        unknown = (f"; {item.unknown_pairs} variant(s) of unknown length"
                   if item.unknown_pairs else "")
        lines.append(what + f"{count} trials, about {spent} ({sources}){unknown}")
    lab = plan.resolved.lab_class
    own = {name: lab.own_knobs(knobs) for name, knobs in plan.variants.items()}
    lines += [f"lab {lab.name}: {note}" for note in lab.plan_notes(plan.resolved.lab_params, own)]
    low_s, high_s = guess.seconds
    if low_s or high_s:
        bound = "" if guess.complete else " at least (some trial times are unknown)"
        lines.append(f"estimated duration: about {_span(low_s, high_s)}{bound}")
    else:
        lines.append("estimated duration: unknown (no trial time measured on this host yet)")
    return lines


def _span(low_s: float, high_s: float) -> str:
    if abs(high_s - low_s) <= 0.1 * max(low_s, 1e-9):
        return human_duration((low_s + high_s) / 2)
    return (f"{human_duration((low_s + high_s) / 2)} ({human_duration(low_s)}–"
            f"{human_duration(high_s)})")


def print_plan(plan: Plan, problems: list[str]) -> None:
    """The plan's lines, then one ``problem:`` line per problem, on standard output."""
    lines = plan_lines(plan, estimate(plan, TrialTimes.load()))
    if _plain_output():  # names from the experiment file: shown literally (safetext.visible)
        sys.stdout.write("".join(f"{safetext.visible(line)}\n" for line in lines)
                         + "".join(f"problem: {safetext.visible(p)}\n" for p in problems))
        return
    from virtbench.cli import consoles

    for line in lines:
        consoles.console.print(safetext.text(line))
    for problem in problems:
        consoles.console.print(f"[red]problem:[/] {safetext.markup(problem)}")


def _plain_output() -> bool:
    """Standard output is not a terminal, and rich is not told to take it for one (its
    TTY_COMPATIBLE and FORCE_COLOR): the console would write no colour there."""
    return (not sys.stdout.isatty()
            and "TTY_COMPATIBLE" not in os.environ and "FORCE_COLOR" not in os.environ)
