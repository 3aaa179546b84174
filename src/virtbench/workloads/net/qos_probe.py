"""Latency probes alone (irtt): RTT, one-way delays, IPDV, RFC 3550 jitter, probe loss."""

from __future__ import annotations

from typing import ClassVar

from pydantic import BaseModel, Field

from virtbench.contract import Params
from virtbench.model import Artifact
from virtbench.parsers.irtt import IRTT_METRICS, irtt_measurements, parse_irtt_json
from virtbench.services import ClientServerPath
from virtbench.workloads.workload_contract import Tool, TrialContext, TrialResult, Workload

__all__ = ["WORKLOADS", "QosProbe"]


class QosProbeParams(Params):
    duration_s: float = Field(5.0, ge=0.1, le=3600, description="probe duration in s")
    interval_ms: float = Field(10.0, ge=0.01, le=60_000, description="irtt send interval in ms")
    length_bytes: int = Field(0, ge=0, le=65_507,
                              description="probe packet length (0: irtt's minimum)")


class QosProbe(Workload):
    name = "net.qos-probe"
    description = "irtt probes client → server: RTT, one-way delay, IPDV, RFC 3550 jitter, loss"
    metrics = IRTT_METRICS
    tools = (Tool("irtt", "irtt"),)
    Params: ClassVar[type[BaseModel]] = QosProbeParams
    needs = (ClientServerPath,)

    def run(self, ctx: TrialContext) -> TrialResult:
        p, path = self.params, ctx.services.get(ClientServerPath)
        out = ctx.workdir / f"r{ctx.repetition}-irtt.json"
        argv = ["irtt", "client", "-i", f"{p.interval_ms:g}ms", "-d", f"{p.duration_s:g}s",
                "-Q", "-o", str(out)]
        if p.length_bytes:
            argv += ["-l", str(p.length_bytes)]
        argv.append(f"{path.server_ip}:{path.irtt_port}")
        ctx.target.run(argv, timeout=p.duration_s + 30)
        text = out.read_text()
        out.unlink(missing_ok=True)
        return TrialResult(irtt_measurements(parse_irtt_json(text)),
                           [Artifact(out.name, text.encode(), "application/json")])


WORKLOADS = (QosProbe,)
