"""Study 002's measurement: an unlimited TCP flow through the virtual router, with CPU use."""

from __future__ import annotations

from typing import ClassVar

from pydantic import BaseModel, ConfigDict, Field

from virtbench.model import Artifact, Better, Domain, Measurement, Metric
from virtbench.parsers.iperf3 import iperf3_measurements, parse_iperf3_json
from virtbench.workloads.base import Tool, TrialContext, TrialResult, Workload
from virtbench.workloads.net.cpu import busy_percent, read_cpu_times
from virtbench.workloads.net.qos_transfer import service

__all__ = ["WORKLOADS", "RouterThroughput"]


class RouterThroughputParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    duration_s: int = Field(10, ge=1, le=3600, description="TCP transfer length in s")
    streams: int = Field(1, ge=1, le=64, description="parallel TCP streams (iperf3 -P)")


class RouterThroughput(Workload):
    name = "net.router-throughput"
    description = ("unlimited iperf3 TCP flow sender → router → receiver; throughput in Gbit/s, "
                   "retransmissions and whole-machine CPU use while it runs")
    metrics = (
        Metric("throughput_gbps", "Gbit/s", Better.HIGHER,
               "iperf3 goodput at the receiver through the router, 10^9 bit/s", primary=True),
        Metric("tcp_retransmits", "segments", Better.LOWER,
               "TCP segments retransmitted by the sender during the test"),
        Metric("cpu_busy_pct", "%", Better.LOWER,
               "whole-machine CPU busy share during the transfer (all cores, /proc/stat: "
               "user+nice+system+irq+softirq+steal over total), neighbours included"),
        Metric("cpu_sender_pct", "%", Better.LOWER,
               "iperf3 sender process CPU use (% of one core)", domain=Domain.POSITIVE),
        Metric("cpu_receiver_pct", "%", Better.LOWER,
               "iperf3 receiver process CPU use (% of one core)", domain=Domain.POSITIVE),
    )
    tools = (Tool("iperf3", "iperf3"),)
    Params: ClassVar[type[BaseModel]] = RouterThroughputParams

    def run(self, ctx: TrialContext) -> TrialResult:
        p = self.params
        before = read_cpu_times(ctx.target)
        res = ctx.target.run(["iperf3", "-c", str(service(ctx, "receiver_ip")),
                              "-p", str(service(ctx, "iperf3_port")), "-t", str(p.duration_s),
                              "-P", str(p.streams), "-J"], timeout=p.duration_s + 60,
                             check=False)
        after = read_cpu_times(ctx.target)
        result = parse_iperf3_json(res.stdout)
        out = [Measurement("throughput_gbps", result.receiver_bps / 1e9),
               Measurement("cpu_busy_pct", busy_percent(before, after))]
        keep = {"tcp_retransmits", "cpu_sender_pct", "cpu_receiver_pct"}
        out += [m for m in iperf3_measurements(result) if m.metric in keep]
        return TrialResult(out, [Artifact(f"r{ctx.repetition}-iperf3.json",
                                          res.stdout.encode(), "application/json")])


WORKLOADS = (RouterThroughput,)
