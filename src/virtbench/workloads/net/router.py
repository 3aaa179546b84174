"""Study 002's measurement: an unlimited TCP flow through the virtual router, with CPU use."""

from __future__ import annotations

from typing import ClassVar

from pydantic import BaseModel, Field

from virtbench.contract import Params
from virtbench.model import Artifact, Better, Measurement, Metric
from virtbench.parsers.iperf3 import IPERF3_METRICS, iperf3_measurements, parse_iperf3_json
from virtbench.services import RouterPath
from virtbench.workloads.net.cpu import CPU_BUSY_METRIC, busy_percent, read_cpu_times
from virtbench.workloads.workload_contract import Tool, TrialContext, TrialResult, Workload

__all__ = ["WORKLOADS", "RouterThroughput"]

_FROM_IPERF3 = frozenset({"tcp_retransmits", "cpu_sender_pct", "cpu_receiver_pct"})
"""The metrics iperf3's own report gives, declared by its parser."""


class RouterThroughputParams(Params):
    duration_s: int = Field(10, ge=1, le=3600, description="TCP transfer length in s")
    streams: int = Field(1, ge=1, le=64, description="parallel TCP streams (iperf3 -P)")


class RouterThroughput(Workload):
    name = "net.router-throughput"
    description = ("unlimited iperf3 TCP flow sender → router → receiver; throughput in Gbit/s, "
                   "retransmissions and whole-machine CPU use while it runs")
    metrics = (
        Metric("throughput_gbps", "Gbit/s", Better.HIGHER,
               "iperf3 goodput at the receiver through the router, 10^9 bit/s", primary=True),
        CPU_BUSY_METRIC,  # neighbours included: they run on the same machine
        *(m for m in IPERF3_METRICS if m.name in _FROM_IPERF3),
    )
    tools = (Tool("iperf3", "iperf3"),)
    Params: ClassVar[type[BaseModel]] = RouterThroughputParams
    needs = (RouterPath,)

    def run(self, ctx: TrialContext) -> TrialResult:
        p, path = self.params, ctx.services.get(RouterPath)
        before = read_cpu_times(ctx.target)
        res = ctx.target.run(["iperf3", "-c", path.receiver_ip,
                              "-p", str(path.iperf3_port), "-t", str(p.duration_s),
                              "-P", str(p.streams), "-J"], timeout=p.duration_s + 60,
                             check=False)
        after = read_cpu_times(ctx.target)
        result = parse_iperf3_json(res.stdout)
        out = [Measurement("throughput_gbps", result.receiver_bps / 1e9),
               Measurement("cpu_busy_pct", busy_percent(before, after))]
        out += [m for m in iperf3_measurements(result) if m.metric in _FROM_IPERF3]
        return TrialResult(out, [Artifact(f"r{ctx.repetition}-iperf3.json",
                                          res.stdout.encode(), "application/json")])


WORKLOADS = (RouterThroughput,)
