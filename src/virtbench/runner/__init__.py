"""Runs experiments: a plan (runner.plan) run by the runner (runner.engine) in three parts —
the run record (runner.record), the schedule (runner.schedule) and the trial (runner.trial).

The runner and the record (the store, facts, preflight) are imported on first use (PEP 562,
static imports): `run --check` needs only what builds and checks an experiment (runner.plan)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from virtbench.runner.plan import Plan, build_plan, check_experiment, check_plan

if TYPE_CHECKING:
    from virtbench.runner.engine import Runner
    from virtbench.runner.outcome import ProgressHook, RunOutcome
    from virtbench.runner.record import RunRecord

__all__ = ["Plan", "ProgressHook", "RunOutcome", "RunRecord", "Runner", "build_plan",
           "check_experiment", "check_plan"]

def __getattr__(name: str) -> Any:
    value: Any
    if name in ("ProgressHook", "RunOutcome"):
        from virtbench.runner import outcome

        value = getattr(outcome, name)
    elif name == "RunRecord":
        from virtbench.runner.record import RunRecord as value
    elif name == "Runner":
        from virtbench.runner.engine import Runner as value
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value  # later look-ups skip this function
    return value
