"""Scheduling, adaptive stopping, resume and progress around the workloads."""

from virtbench.runner.engine import ProgressHook, Runner, RunOutcome, check_experiment

__all__ = ["ProgressHook", "RunOutcome", "Runner", "check_experiment"]
