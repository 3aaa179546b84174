"""Scheduling, adaptive stopping, resume and progress around the workloads.

The runner itself (engine: the store, facts, preflight) is imported on first use (PEP 562, static
imports): `run --check` needs only what builds and checks an experiment (runner.plan)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from virtbench.runner.plan import Plan, build_plan, check_experiment, check_plan

if TYPE_CHECKING:
    from virtbench.runner.engine import ProgressHook, Runner, RunOutcome

__all__ = ["Plan", "ProgressHook", "RunOutcome", "Runner", "build_plan", "check_experiment",
           "check_plan"]


def __getattr__(name: str) -> Any:
    if name in ("ProgressHook", "RunOutcome", "Runner"):
        from virtbench.runner import engine

        value = getattr(engine, name)
        globals()[name] = value  # later look-ups skip this function
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
