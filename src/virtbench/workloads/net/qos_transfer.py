"""Study 001's trial: a foreground TCP transfer (iperf3 -J, server → client) with a receiver
capture, a count of sent packets (interface counter or sender capture) and irtt latency probes
alongside; QoS metrics and grading."""

from __future__ import annotations

import json
import threading
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, Field

from virtbench.contract import Params
from virtbench.model import Artifact, Better, Measurement, Metric, VirtbenchError
from virtbench.net_qos.grading import emodel, tiphon_index
from virtbench.net_qos.pcap import read_pcap
from virtbench.net_qos.study import CAPTURE_QOS_METRICS, capture_qos, study_loss_percent
from virtbench.parsers.iperf3 import IPERF3_METRICS, iperf3_measurements, parse_iperf3_json
from virtbench.parsers.irtt import IRTT_METRICS, irtt_measurements, parse_irtt_json
from virtbench.services import ClientServerPath
from virtbench.targets.target_contract import CommandFailed, ProcResult, Target
from virtbench.workloads.net.capture import CAPTURE_PACKAGES, Capture, CaptureTool
from virtbench.workloads.net.counters import tx_packets
from virtbench.workloads.workload_contract import (
    Tool,
    TrialContext,
    TrialResult,
    Workload,
    missing_tools,
)

__all__ = ["WORKLOADS", "QosTransfer"]

STUDY_METRICS = (
    *CAPTURE_QOS_METRICS,  # of the foreground flow's data packets, captured at the receiver
    Metric("study_loss_pct", "%", Better.LOWER,
           "studies' 'packet loss': (packets sent − captured at the receiver) / sent × 100, data "
           "direction of the foreground flow; sent = the server interface's tx packet counter "
           "minus irtt replies (sent_count: counters) or a sender capture (sent_count: capture)"),
    Metric("capture_packets", "packets", None,
           "foreground data packets in the receiver capture (GSO/GRO super-packets count once)"),
    Metric("capture_dropped", "packets", None,
           "packets the receiver capture reported dropped (the study metrics then lack them)"),
    Metric("tcp_retransmit_pct", "%", Better.LOWER,
           "TCP loss estimate: retransmitted segments / (sent bytes / MSS) × 100"),
    Metric("tiphon_index", "index 1-4", Better.HIGHER,
           "mean of the TIPHON categories (4 very good … 1 poor) of study delay, jitter and loss, "
           "as the studies graded (they call the table ITU-T G.1010)"),
    Metric("emodel_r", "R", Better.HIGHER,
           "E-model R = 93.2 − Id − Ie_eff (G.711, Bpl 25.1) with d = one-way delay (irtt, "
           "server → client) + 2 × RFC 3550 jitter; Id = 0.024d + 0.11(d−177.3)H(d−177.3)"),
    Metric("emodel_mos", "MOS", Better.HIGHER,
           "MOS = 1 + 0.035R + 7e-6·R(R−60)(100−R) from emodel_r (G.107 Annex B)"),
)


class QosTransferParams(Params):
    duration_s: int = Field(10, ge=1, le=3600,
                            description="foreground transfer length in s (the study: 20)")
    capture: bool = Field(True, description="capture the flow at the receiver")
    capture_tool: CaptureTool = Field(
        "tcpdump", description="capture program: tcpdump (default, cheapest measured here) or "
        "dumpcap (Wireshark's, as the studies used)")
    sent_count: Literal["counters", "capture", "none"] = Field(
        "counters", description="how study loss counts sent packets: 'counters' = the server "
        "interface's tx counter minus irtt replies (no tap, nearly free); 'capture' = a second "
        "capture at the sender as the studies did (costs throughput); 'none' = no study loss")
    snaplen: int = Field(96, ge=64, le=65535, description="bytes kept per captured packet")
    probe: bool = Field(True, description="run irtt latency probes alongside the transfer")
    probe_interval_ms: float = Field(10.0, ge=0.01, le=60_000,
                                     description="irtt send interval in ms")
    keep_pcaps: bool = Field(False, description="keep capture files in the trial directory")


class QosTransfer(Workload):
    name = "net.qos-transfer"
    description = ("foreground TCP transfer server → client (iperf3 -R -J) with a receiver "
                   "capture, the sender's packet counter and irtt probes: throughput, the "
                   "studies' capture QoS, RTT, one-way delay, IPDV, RFC 3550 jitter, loss, "
                   "TIPHON and E-model grading")
    metrics = (*IPERF3_METRICS[:3], *IPERF3_METRICS[5:], *IRTT_METRICS, *STUDY_METRICS)
    tools = (Tool("iperf3", "iperf3"), Tool("irtt", "irtt"))
    Params: ClassVar[type[BaseModel]] = QosTransferParams
    needs = (ClientServerPath,)

    def check(self, target: Target) -> list[str]:
        tool = self.params.capture_tool
        capture = [Tool(tool, CAPTURE_PACKAGES[tool])] if self.params.capture else []
        return super().check(target) + missing_tools(self.name, target.which, capture,
                                                     f" on {target.describe()}")

    def active_metrics(self) -> list[Metric]:
        p = self.params
        names = {m.name for m in IPERF3_METRICS[:3] + IPERF3_METRICS[5:]} | {"tcp_retransmit_pct"}
        if p.probe:
            names |= {m.name for m in IRTT_METRICS} | {"emodel_r", "emodel_mos"}
        if p.capture:
            names |= {m.name for m in CAPTURE_QOS_METRICS}
            names |= {"capture_packets", "capture_dropped"}
            if p.sent_count != "none":
                names |= {"study_loss_pct", "tiphon_index"}
        return [m for m in self.metrics if m.name in names]

    def run(self, ctx: TrialContext) -> TrialResult:
        p, path = self.params, ctx.services.get(ClientServerPath)
        server_ip, port = path.server_ip, path.iperf3_port
        client: Target = ctx.target
        # The server side: another fleet host (lab cross-host) or a namespace of this one.
        server = path.server_target
        tag = f"r{ctx.repetition}"
        bpf = f"tcp and src host {server_ip} and src port {port}"
        captures: list[Capture] = []
        if p.capture:
            captures.append(Capture(client, path.client_iface,
                                    ctx.workdir / f"{tag}-receiver.pcap", p.snaplen, bpf,
                                    p.capture_tool))
            if p.sent_count == "capture":
                captures.append(Capture(server, path.server_iface,
                                        ctx.workdir / f"{tag}-sender.pcap", p.snaplen, bpf,
                                        p.capture_tool))
        count_tx = p.capture and p.sent_count == "counters"
        # irtt writes its JSON to stdout (-o -), which comes back wherever the client runs (a
        # namespace here or another fleet host), alongside iperf3 in a thread of its own.
        irtt = _Background(client, ["irtt", "client", "-i", f"{p.probe_interval_ms:g}ms",
                                    "-d", f"{p.duration_s}s", "-Q", "-o", "-",
                                    f"{server_ip}:{path.irtt_port}"],
                           p.duration_s + 30) if p.probe else None
        tx_before = tx_after = 0
        try:
            for cap in captures:
                cap.start()
            if count_tx:
                tx_before = tx_packets(server, path.server_iface)
            if irtt is not None:
                irtt.start()
            res = client.run(["iperf3", "-c", server_ip, "-p", str(port), "-R",
                              "-t", str(p.duration_s), "-J"],
                             timeout=p.duration_s + 60, check=False)
            irtt_json = irtt.result() if irtt is not None else None
            if count_tx:
                tx_after = tx_packets(server, path.server_iface)
        except BaseException:
            for cap in captures:
                cap.stop()
                cap.discard()
            raise
        stats = [cap.stop() for cap in captures]
        try:
            sent_tx = tx_after - tx_before if count_tx else None
            return self._results(tag, res.stdout, irtt_json, captures, stats, sent_tx)
        finally:
            for cap in captures:
                if p.keep_pcaps:
                    cap.keep()
                else:
                    cap.discard()

    def _results(self, tag: str, iperf3_json: str, irtt_json: str | None,
                 captures: list[Capture], stats: list[Any], tx_packets_sent: int | None
                 ) -> TrialResult:
        artifacts = [Artifact(f"{tag}-iperf3.json", iperf3_json.encode(), "application/json")]
        transfer = parse_iperf3_json(iperf3_json)
        out = [m for m in iperf3_measurements(transfer) if m.metric != "udp_loss_pct"]
        mss = _mss(iperf3_json)
        if transfer.retransmits is not None and mss:
            segments = transfer.sent_bytes / mss
            out.append(Measurement("tcp_retransmit_pct", 100.0 * transfer.retransmits / segments))
        probe = None
        if irtt_json is not None:
            artifacts.append(Artifact(f"{tag}-irtt.json", irtt_json.encode(),
                                      "application/json"))
            probe = parse_irtt_json(irtt_json)
            out += irtt_measurements(probe)
            if probe.receive_delay_ms is not None and probe.receive_delay_ms < 0:
                # One-way delays take both ends' clocks: below 0 the two clocks disagree (two
                # guests, whose clocks the host sets only roughly), so no E-model from it.
                out += [Measurement("emodel_r", None, status="clocks_disagree"),
                        Measurement("emodel_mos", None, status="clocks_disagree")]
            elif probe.receive_delay_ms is not None:  # None: irtt measured no one-way delay
                model = emodel(probe.receive_delay_ms, probe.jitter_down_ms or 0.0,
                               probe.loss_pct)
                out += [Measurement("emodel_r", model.r_factor),
                        Measurement("emodel_mos", model.mos)]
        if captures:
            sent = None
            if tx_packets_sent is not None:
                # irtt's replies leave the same interface: the server answers each probe it got
                # plus the session's open request.
                replies = 0 if probe is None else (probe.server_packets_received or 0) + 1
                sent = tx_packets_sent - replies
            out += self._capture_metrics(captures, stats, sent)
        return TrialResult(out, artifacts)

    def _capture_metrics(self, captures: list[Capture], stats: list[Any],
                         sent: int | None) -> list[Measurement]:
        received = read_pcap(captures[0].path)
        out = [Measurement("capture_packets", float(received.packets))]
        if stats[0].dropped is not None:
            out.append(Measurement("capture_dropped", float(stats[0].dropped)))
        if received.packets < 3:
            return [*out, Measurement("study_delay_ms", None, status="too_few_packets")]
        qos = capture_qos(received.ts_ns, received.orig_len)
        out += [Measurement(name, value, status=status) for name, value, status in qos.figures()]
        if len(captures) > 1:
            sent = read_pcap(captures[1].path).packets
        if sent is not None and sent > 0:
            loss = study_loss_percent(sent, received.packets)
            out += [Measurement("study_loss_pct", loss),
                    Measurement("tiphon_index", tiphon_index(qos.delay_ms, qos.jitter_ms, loss))]
        return out


class _Background:
    """A command run to completion in a thread of its own; ``result`` is its stdout."""

    def __init__(self, target: Target, argv: list[str], timeout_s: float) -> None:
        self.target, self.argv, self.timeout_s = target, argv, timeout_s
        self._outcome: ProcResult | BaseException | None = None
        self._thread = threading.Thread(target=self._run, daemon=True,
                                        name=f"vb-{argv[0]}")

    def start(self) -> None:
        self._thread.start()

    def _run(self) -> None:
        try:
            self._outcome = self.target.run(self.argv, timeout=self.timeout_s, check=False)
        except BaseException as exc:  # handed to the trial's thread by result()
            self._outcome = exc

    def result(self) -> str:
        self._thread.join(self.timeout_s + 30)
        outcome = self._outcome
        if isinstance(outcome, BaseException):
            raise outcome
        if outcome is None:
            raise VirtbenchError(f"{self.argv[0]} did not end within {self.timeout_s:.0f} s")
        if outcome.returncode != 0:
            raise CommandFailed(outcome)
        return outcome.stdout


def _mss(iperf3_json: str) -> int | None:
    try:
        start = json.loads(iperf3_json)["start"]
        return int(start.get("tcp_mss_default") or start.get("tcp_mss") or 0) or None
    except (ValueError, KeyError, TypeError):
        return None


WORKLOADS = (QosTransfer,)
