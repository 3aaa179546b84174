"""exec.command: wall time of any command, like hyperfine, with virtbench's statistics."""

from __future__ import annotations

from pydantic import Field

from virtbench.contract import MAX_SECONDS, Params
from virtbench.model import Better, Measurement, Metric
from virtbench.workloads.workload_contract import TrialContext, TrialResult, Workload

__all__ = ["WORKLOADS", "CommandWorkload", "InProcessNoopWorkload"]


class CommandParams(Params):
    argv: list[str] = Field(min_length=1, description="the command as an argument list")
    timeout_s: float = Field(3600, ge=0.001, le=MAX_SECONDS,
                             description="kill the command after this many seconds "
                                                     "(the trial then fails)")


class CommandWorkload(Workload):
    name = "exec.command"
    description = "runs an argument list (no shell) on the target; fails the trial on non-zero exit"
    metrics = (
        Metric("wall_time_s", "s", Better.LOWER,
               "wall time from just before the spawn to the exit, as hyperfine -N measures "
               "(monotonic clock; stdout discarded)", primary=True),
    )
    Params = CommandParams

    def run(self, ctx: TrialContext) -> TrialResult:
        result = ctx.target.run_timed(self.params.argv, env=ctx.env,
                                      timeout=self.params.timeout_s)
        return TrialResult([Measurement("wall_time_s", result.duration_s)])


class InProcessNoopWorkload(Workload):
    """Measures nothing but itself: used to measure the runner's own per-trial overhead."""

    name = "exec.noop"
    description = "an in-process no-op (measures the runner's own overhead per trial)"
    metrics = (Metric("elapsed_s", "s", Better.LOWER, "time spent in run() (≈ 0)", primary=True),)

    def run(self, ctx: TrialContext) -> TrialResult:
        return TrialResult([Measurement("elapsed_s", 0.0)])


WORKLOADS = (CommandWorkload, InProcessNoopWorkload)
