"""storage.fio-rate: fio at a set IOPS (the load of a storage capacity search), or fio's own
search for the deepest queue whose completion-latency percentile stays under a target."""

from __future__ import annotations

import json

from pydantic import Field

from virtbench.contract import MAX_SECONDS
from virtbench.model import Better, Measurement, Metric, VirtbenchError
from virtbench.workloads.storage.fio import FioParams, FioWorkload
from virtbench.workloads.workload_contract import TrialContext, TrialResult

__all__ = ["WORKLOADS", "FioRate", "FioRateParams"]


class FioRateParams(FioParams):
    rate_iops: int = Field(0, ge=0, description="I/Os per second per job (fio rate_iops); 0: "
                                                "as fast as the queue depth allows")
    latency_target_ms: float | None = Field(
        None, ge=0.001, le=3_600_000,
            description="fio's own search (latency_target): the deepest queue, up to "
        "iodepth, whose completion-latency percentile stays under this, ms")
    latency_window_s: float = Field(2.0, ge=0.001, le=MAX_SECONDS,
                                    description="fio latency_window, s")
    latency_percentile: float = Field(99.0, gt=0, le=100, description="fio latency_percentile")


class FioRate(FioWorkload):
    name = "storage.fio-rate"
    description = ("fio at a set rate (rate_iops), or fio's latency_target search: IOPS and "
                   "completion-latency percentiles per pattern")
    metrics = (*FioWorkload.metrics,
               Metric("latency_target_depth", "I/Os", Better.HIGHER,
                      "fio latency_target: the queue depth fio settled at, the deepest whose "
                      "latency percentile met the target (only with latency_target_ms)"))
    Params = FioRateParams

    def active_metrics(self) -> list[Metric]:
        extra = [self.metric("latency_target_depth")] if self.params.latency_target_ms else []
        return [*super().active_metrics(), *extra]

    def argv(self, ctx: TrialContext) -> list[str]:
        p: FioRateParams = self.params
        argv = super().argv(ctx)
        extra = [f"--rate_iops={p.rate_iops}"] if p.rate_iops else []
        if p.latency_target_ms is not None:
            extra += [f"--latency_target={p.latency_target_ms * 1000:g}us",
                      f"--latency_window={p.latency_window_s * 1e6:g}us",
                      f"--latency_percentile={p.latency_percentile:g}"]
        first_job = next(i for i, arg in enumerate(argv) if arg.startswith("--name="))
        return [*argv[:first_job], *extra, *argv[first_job:]]  # global: every job gets them

    def run(self, ctx: TrialContext) -> TrialResult:
        result = super().run(ctx)
        if self.params.latency_target_ms is None:
            return result
        raw = next(a for a in result.artifacts if a.name == "fio.json").content
        try:
            depths = [int(job["latency_depth"]) for job in json.loads(raw)["jobs"]]
        except (ValueError, KeyError, TypeError) as exc:
            raise VirtbenchError(f"storage.fio-rate: fio reported no latency_depth ({exc})") \
                from exc
        result.measurements.append(Measurement("latency_target_depth", float(min(depths))))
        return result


WORKLOADS = (FioRate,)
