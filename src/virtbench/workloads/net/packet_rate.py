"""Frames at a set rate through a path (trafgen), loss from both ends' interface counters.

The load knob of switch and router capacity searches (RFC 2544 throughput): ``rate_pps`` frames
per second of ``frame_size`` bytes for ``duration_s``. The path is the lab's sender → receiver
(the vswitch lab's client → server, the router lab's sender → router → receiver) or the
namespaces and interfaces given as params.
"""

from __future__ import annotations

import json
import math
import statistics
import subprocess
import time
from dataclasses import dataclass, replace
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, Field

from virtbench.contract import Params
from virtbench.model import Artifact, Better, Measurement, Metric, VirtbenchError
from virtbench.packetgen import (
    FrameMix,
    GeneratorReport,
    frame_mix,
    parse_gnu_time,
    parse_trafgen,
    shaper_qdisc,
    trafgen_config,
)
from virtbench.parsers.irtt import IRTT_METRICS, irtt_measurements, parse_irtt_json
from virtbench.services import PacketPath, Service, Services
from virtbench.targets.process import Process
from virtbench.targets.target_contract import Target
from virtbench.workloads.net.cpu import CPU_BUSY_METRIC, busy_percent, read_cpu_times
from virtbench.workloads.net.tx_sampler import (
    SAMPLER,
    parse_samples,
    sampler_args,
    until_last_rise,
    window_rate,
)
from virtbench.workloads.workload_contract import Tool, TrialContext, TrialResult, Workload

__all__ = ["WORKLOADS", "PacketRate"]

PROBE_PORTS = 20
"""Ports tried, from probe_port up, for this workload's irtt server."""
TIMED_OUT = 124
"""timeout(1)'s exit status when it stopped the generator."""
REALTIME_REFUSED = "failed to set pid 0's policy"
"""What chrt prints when the kernel refuses SCHED_FIFO (e.g. no real-time budget in a cgroup)."""
PACING_MEMORY = 40
"""trafgen runs the gap correction remembers, per frame mix."""
PACING_NEIGHBOURS = 6
"""Runs with the nearest gaps that the correction fits."""
SHAPER_HANDLE = "7662:"
"""The shaper's qdisc handle: a root qdisc with it was left by this workload, not the lab."""
DEFAULT_QDISCS = frozenset({"noqueue", "pfifo_fast", "fq_codel", "mq", "fq", "pfifo"})
"""Root qdiscs a sender interface has by default: the shaper may replace them, not a lab's."""
WINDOW = (0.2, 0.9)
"""Where in the sending time the shaped rate is counted: after trafgen's start, before its end
(the frames its socket still holds drain after it exits)."""
WINDOW_READS = 15
"""Counter reads in the window: the rate is their fitted slope, so one read delayed by a busy
machine moves it little."""


PACING_NOTES = {"gap": "gap {gap_us:.1f} µs", "average": "trafgen -b (bursts once a second)",
                "shaper": "unpaced into a tbf shaper ({burst_ms:g} ms bucket), offered rate "
                          "counted in the middle of the run"}


class PacketRateParams(Params):
    rate_pps: float = Field(10_000, ge=1, le=100_000_000,
                            description="offered frames per second (trafgen -b)")
    duration_s: float = Field(5, ge=0.1, le=3600, description="sending time in s")
    frame_size: int | Literal["imix"] = Field(
        64, description="Ethernet frame size in bytes with FCS (64..1518), or imix "
                        "(7 × 64, 4 × 594, 1 × 1518)")
    cpus: int = Field(1, ge=1, le=64, description="trafgen processes (trafgen -P)")
    rate_tolerance: float = Field(0.02, gt=0, lt=1, description="an attempt whose offered "
                                  "rate is further than this (relative) from the asked one is "
                                  "repeated with a corrected gap (pacing gap)")
    attempts: int = Field(2, ge=1, le=10, description="trafgen runs per trial at most, to "
                                                     "offer the asked rate within tolerance")
    realtime: bool = Field(True, description="run trafgen under SCHED_FIFO (chrt -f 1): "
                           "shaped, it keeps up to a higher rate on a busy machine (at a rate "
                           "beyond it, it holds one core); gap-paced (when its gap is at least "
                           "realtime_min_gap_us), steady gaps where a normal process is woken "
                           "late and then sends faster to catch up")
    realtime_min_gap_us: float = Field(
        0, ge=0, le=1e6, description="below this gap trafgen runs as a normal process. A normal "
        "process sleeps at least its 50 µs timer slack per "
        "frame, which caps it near 20 k frames/s; under SCHED_FIFO the slack is 0 (here ~97 k "
        "frames/s at a 2 µs gap), but a small gap then keeps trafgen's CPU busy for the trial")
    latency_probe: bool = Field(False, description="irtt probes beside the frames (needs "
                                "IPv4 addresses on both ends): RTT, one-way delay, IPDV")
    probe_interval_ms: float = Field(10.0, ge=0.01, le=60_000,
                                     description="irtt send interval in ms")
    probe_port: int = Field(2113, ge=1024, le=65000, description="UDP port of the irtt server "
                            "this workload starts (the next free one of 20 from here)")
    pacing: Literal["shaper", "gap", "average"] = Field(
        "shaper", description="shaper: trafgen sends unpaced through the qdisc path into a "
        "tc tbf on the sender's interface at the asked rate (exact while trafgen's sendto path "
        "keeps up; the offered rate is the interface's tx counter in the middle of the run); "
        "gap: one frame every cpus/rate s (trafgen -t, corrected for trafgen's own per-frame "
        "time measured in earlier trials; exact to a few 10 k frames/s); average: trafgen -b, "
        "exact on average but sent in bursts once a second (deep buffers only)")
    shaper_burst_s: float = Field(1e-3, gt=0, le=0.1, description="the shaper's token bucket, "
                                  "in seconds of frames: how far it catches up at once after "
                                  "a late timer (at least two of the largest frames)")
    settle_s: float = Field(0.3, ge=0, le=10, description="wait before reading the "
                                                          "receiver's counters, s")
    sender_ns: str = Field("", description="sender namespace (default: the lab's)")
    sender_iface: str = Field("", description="sender interface (default: the lab's)")
    receiver_ns: str = Field("", description="receiver namespace (default: the lab's)")
    receiver_iface: str = Field("", description="receiver interface (default: the lab's)")
    receiver_ip: str = Field("", description="destination IPv4 (default: the lab's receiver, "
                                             "else 198.19.0.2)")
    next_hop_mac: str = Field("", description="destination MAC of the frames (default: the "
                                              "router's ingress (a router guest's left NIC), "
                                              "else the receiver's)")


def lab_path(params: PacketRateParams, services: Services) -> PacketPath:
    """The sender and receiver: explicit params first, then the lab's (vswitch, vnf-router)."""
    lab = services.find(PacketPath) or PacketPath("", "", "", "", "198.19.0.2", "", "")
    path = PacketPath(params.sender_ns or lab.sender_ns, params.sender_iface or lab.sender_iface,
                      params.receiver_ns or lab.receiver_ns,
                      params.receiver_iface or lab.receiver_iface,
                      params.receiver_ip or lab.receiver_ip, lab.next_hop_ns or params.receiver_ns,
                      lab.next_hop_iface or params.receiver_iface, lab.generator_target,
                      lab.next_hop_mac)
    missing = [name for name in ("sender_ns", "sender_iface", "receiver_ns", "receiver_iface")
               if not getattr(path, name)]
    if missing:
        raise VirtbenchError(f"net.packet-rate: no {', '.join(missing)}: give them as params "
                             "or use the vswitch or vnf-router lab")
    return path


def _link(target: Target, ns: str, iface: str) -> dict[str, Any]:
    res = target.run(["ip", "-n", ns, "-s", "-j", "addr", "show", "dev", iface], check=False)
    if res.returncode != 0:
        raise VirtbenchError(f"interface {iface} in namespace {ns}: {res.stderr.strip()}")
    try:
        link: dict[str, Any] = json.loads(res.stdout)[0]
    except (ValueError, LookupError) as exc:
        raise VirtbenchError(f"interface {iface} in namespace {ns}: unreadable 'ip -j' "
                             f"output ({exc})") from exc
    return link


def _ipv4(link: dict[str, Any], default: str) -> str:
    for addr in link.get("addr_info", []):
        if addr.get("family") == "inet":
            return str(addr["local"])
    return default


def _counters(target: Target, ns: str, iface: str) -> dict[str, int]:
    stats = _link(target, ns, iface).get("stats64") or {}
    try:
        return {"tx": int(stats["tx"]["packets"]), "tx_dropped": int(stats["tx"]["dropped"]),
                "rx": int(stats["rx"]["packets"])}
    except (KeyError, TypeError, ValueError) as exc:
        raise VirtbenchError(f"interface {iface} in namespace {ns}: no stats64 counters "
                             f"({exc})") from exc


class PacketRate(Workload):
    name = "net.packet-rate"
    description = ("trafgen sends UDP frames of one size (or IMIX) at a set rate through the "
                   "lab's path; loss from the sender's and receiver's interface counters, "
                   "with the generator's CPU use and whether it kept up")
    metrics = (
        Metric("received_pps", "frames/s", Better.HIGHER,
               "frames the receiver's interface counted per second of sending", primary=True),
        Metric("offered_pps", "frames/s", None,
               "frames the sender's interface took (tx packets + tx dropped) per second of "
               "trafgen's sending time"),
        Metric("loss_ratio", "ratio", Better.LOWER,
               "(offered - received) / offered frames, from the interface counters"),
        Metric("lost_frames", "frames", Better.LOWER, "offered - received frames"),
        Metric("received_mbps", "Mbit/s", Better.HIGHER,
               "received Ethernet frame bits (with FCS) per second, 10^6 bit/s"),
        Metric("generator_shortfall", "ratio", None,
               "1 - offered / asked rate (0 when trafgen kept up; above 0.01 the generator, "
               "not the path, limited the trial)"),
        Metric("generator_excess", "ratio", None,
               "offered / asked rate - 1 (0 when trafgen did not overshoot; its gap is "
               "corrected from earlier trials, so a changing machine load can overshoot)"),
        Metric("generator_cpu_pct", "%", None,
               "trafgen's CPU time (user + system) over its run time, % of one core"),
        CPU_BUSY_METRIC,
        *(replace(m, primary=False) for m in IRTT_METRICS),
    )
    tools = (Tool("trafgen", "netsniff-ng"), Tool("time", "time", "GNU time: trafgen's CPU use"),
             Tool("ip", "iproute2"), Tool("tc", "iproute2", "the shaper (pacing: shaper)"),
             Tool("chrt", "util-linux", "a real-time sender"),
             Tool("irtt", "irtt", "latency probes (latency_probe)"),
             Tool("timeout", "coreutils", "stops a generator that cannot keep up"))
    Params: ClassVar[type[BaseModel]] = PacketRateParams
    needs = (PacketPath,)

    def __init__(self, params: BaseModel | None = None) -> None:
        super().__init__(params)
        self._pacing: dict[str, list[tuple[float, float]]] = {}
        """(gap, measured interval per frame) of recent trafgen runs, per frame mix."""
        self._server: Process | None = None
        """The irtt server this workload started for latency_probe."""
        self._port = self.params.probe_port
        self._realtime_refused = False
        """chrt was refused SCHED_FIFO here once: trafgen runs as a normal process."""

    def _gap_s(self, mix: str) -> float:
        """The gap to ask trafgen for so that frames leave every cpus/rate seconds.

        trafgen's interval is longer than its gap (the send call, the sleep's slack), by an
        amount that grows with the gap: fit interval = a * gap + b on the runs with the
        nearest gaps and invert it.
        """
        p: PacketRateParams = self.params
        nominal = p.cpus / p.rate_pps
        runs = sorted(self._pacing.get(mix, []),
                      key=lambda run: abs(math.log(run[0] / nominal)))[:PACING_NEIGHBOURS]
        if not runs:
            return nominal
        gaps = [gap for gap, _interval in runs]
        if len(set(gaps)) >= 2:
            slope, intercept = statistics.linear_regression(
                gaps, [interval for _gap, interval in runs])
            gap = (nominal - intercept) / slope if slope > 0 else nominal
        else:
            gap = nominal * gaps[0] / runs[0][1]
        # Never below half the nominal gap: a bad fit must not send at full speed.
        return min(nominal, max(nominal / 2, gap))

    def _learn_pacing(self, mix: str, gap_s: float, interval_s: float) -> None:
        p: PacketRateParams = self.params
        # A stall of the whole machine (the generator descheduled) says nothing about how
        # trafgen paces; keep what is plausible.
        if gap_s <= interval_s <= 2 * p.cpus / p.rate_pps:
            runs = self._pacing.setdefault(mix, [])
            runs.append((gap_s, interval_s))
            del runs[:-PACING_MEMORY]

    def needed_services(self) -> tuple[type[Service], ...]:
        """No lab path when the params name the whole path (sender and receiver)."""
        p: PacketRateParams = self.params
        if all((p.sender_ns, p.sender_iface, p.receiver_ns, p.receiver_iface)):
            return ()
        return self.needs

    def active_metrics(self) -> list[Metric]:
        probed = {m.name for m in IRTT_METRICS}
        return [m for m in self.metrics if self.params.latency_probe or m.name not in probed]

    def setup(self, ctx: TrialContext) -> None:
        if not self.params.latency_probe:
            return
        path = lab_path(self.params, ctx.services)
        # Another searched workload of the experiment may hold the port: take the next one.
        for port in range(self.params.probe_port, self.params.probe_port + PROBE_PORTS):
            self._port = port
            address = self._probe_address(ctx.target, path)
            self._server = ctx.target.spawn(["ip", "netns", "exec", path.receiver_ns, "irtt",
                                             "server", "-b", address])
            time.sleep(0.3)  # irtt binds at once; an exit by then means the port was taken
            if self._server.poll() is None:
                return
        raise VirtbenchError(f"no irtt server could bind ports {self.params.probe_port}.."
                             f"{self.params.probe_port + PROBE_PORTS - 1} in {path.receiver_ns}")

    def teardown(self, ctx: TrialContext) -> None:
        if self._server is not None and self._server.poll() is None:
            # SIGTERM; not left running: killed with its group after 10 s.
            self._server.stop(10, group=False)
        self._server = None

    def _probe_address(self, target: Target, path: PacketPath) -> str:
        ip = _ipv4(_link(target, path.receiver_ns, path.receiver_iface), "")
        if not ip:
            raise VirtbenchError(f"net.packet-rate: latency_probe needs an IPv4 address on "
                                 f"{path.receiver_iface} in {path.receiver_ns}")
        return f"{ip}:{self._port}"

    def run(self, ctx: TrialContext) -> TrialResult:
        p: PacketRateParams = self.params
        target = ctx.target
        path = lab_path(p, ctx.services)
        # A lab may run the generator apart from the path's own processes (the router lab:
        # outside its CPU cgroup, which has no real-time budget and shares the quota).
        generator = path.generator_target or target
        mix = frame_mix(p.frame_size)
        sender = _link(target, path.sender_ns, path.sender_iface)
        next_hop = p.next_hop_mac or path.next_hop_mac or str(
            _link(target, path.next_hop_ns, path.next_hop_iface)["address"])
        config = ctx.workdir / f"trafgen-{mix.name}-{ctx.variant}.cfg".replace("/", "_")
        config.write_text(trafgen_config(mix, str(sender["address"]), next_hop,
                                         _ipv4(sender, "198.18.0.1"), path.receiver_ip))
        outputs: list[str] = []
        for _attempt in range(p.attempts):
            sent = self._send(target, path, mix, config, generator)
            outputs.append(sent.output)
            # A trial offers the asked rate or is repeated with the gap corrected: a search
            # must judge the load it asked for, not whatever the generator managed.
            error = abs(sent.offered_pps / p.rate_pps - 1.0)
            if p.pacing == "average" or error <= p.rate_tolerance:
                break
        measurements = [
            Measurement("received_pps", sent.received / sent.sending_s),
            Measurement("offered_pps", sent.offered_pps),
            Measurement("loss_ratio", (sent.offered - sent.received) / sent.offered
                        if sent.offered else 1.0),
            Measurement("lost_frames", float(sent.offered - sent.received)),
            Measurement("received_mbps",
                        mix.bits_per_second(sent.received / sent.sending_s) / 1e6),
            Measurement("generator_shortfall", max(0.0, 1.0 - sent.offered_pps / p.rate_pps)),
            Measurement("generator_excess", max(0.0, sent.offered_pps / p.rate_pps - 1.0)),
            Measurement("generator_cpu_pct", sent.generator_cpu_pct),
            Measurement("cpu_busy_pct", sent.cpu_busy_pct),
            *sent.probe,
        ]
        notes = {"generator": f"trafgen {sent.report.packets} frames of {mix.name} B on "
                              f"{sent.report.cpus} CPU(s) in {sent.report.sending_s:.3f} s, "
                              + PACING_NOTES[p.pacing].format(gap_us=sent.gap_s * 1e6,
                                                              burst_ms=p.shaper_burst_s * 1e3)
                              + f", attempt {len(outputs)} of {p.attempts}"
                              + (", normal process (SCHED_FIFO refused)"
                                 if self._realtime_refused and p.realtime else "")}
        if sent.report.packets != sent.offered:
            notes["counters"] = (f"trafgen sent {sent.report.packets} frames, the sender's "
                                 f"interface counted {sent.offered}")
        return TrialResult(measurements, [Artifact(f"r{ctx.repetition}-trafgen.txt",
                                                   "\n".join(outputs).encode())], notes)

    def _send(self, target: Target, path: PacketPath, mix: FrameMix, config: Any,
              generator: Target) -> Sent:
        """One trafgen run at the asked rate, with both ends' counters around it."""
        p: PacketRateParams = self.params
        shaped = p.pacing == "shaper"
        if shaped:
            self._shape(target, path, mix)
        try:
            return self._counted_send(target, path, mix.name, config, generator)
        finally:
            if shaped:
                target.run(["tc", "-n", path.sender_ns, "qdisc", "del", "dev",
                            path.sender_iface, "root"], check=False)

    def _shape(self, target: Target, path: PacketPath, mix: FrameMix) -> None:
        """The tbf that paces trafgen, in place of the interface's default root qdisc."""
        p: PacketRateParams = self.params
        res = target.run(["tc", "-n", path.sender_ns, "-j", "qdisc", "show", "dev",
                          path.sender_iface], check=False)
        try:
            roots = [q for q in json.loads(res.stdout or "[]") if q.get("root")]
        except ValueError:
            roots = []
        for qdisc in roots:
            if qdisc.get("kind") not in DEFAULT_QDISCS and qdisc.get("handle") != SHAPER_HANDLE:
                raise VirtbenchError(
                    f"net.packet-rate: {path.sender_iface} in {path.sender_ns} already has a "
                    f"root qdisc {qdisc.get('kind')} (not this workload's): pacing 'shaper' "
                    "would replace it; use pacing: gap")
        target.run(["tc", "-n", path.sender_ns, "qdisc", "replace", "dev", path.sender_iface,
                    "root", "handle", SHAPER_HANDLE,
                    *shaper_qdisc(mix, p.rate_pps, p.shaper_burst_s)])

    def _counted_send(self, target: Target, path: PacketPath, mix: str, config: Any,
                      generator: Target) -> Sent:
        p: PacketRateParams = self.params
        timing = config.with_suffix(".time")
        frames = max(1, math.ceil(p.rate_pps * p.duration_s))
        gap_s = self._gap_s(mix)
        pace = {"gap": ["--gap", f"{round(gap_s * 1e9)}ns"],
                "average": ["--rate", f"{round(p.rate_pps)}pps"],
                # Blocking sendto(2) into the shaper: trafgen sleeps while the tbf holds its
                # frames, and no gap of its own shapes the rate.
                "shaper": ["--qdisc-path", "--gap", "0"]}[p.pacing]
        before_tx = _counters(target, path.sender_ns, path.sender_iface)
        before_rx = _counters(target, path.receiver_ns, path.receiver_iface)
        cpu_before = read_cpu_times(target)
        probe = self._start_probe(target, path, timing.with_suffix(".irtt.json"))
        # A real-time sender sleeps between frames without the 50 µs timer slack.
        # Shaped, it sleeps on its full socket buffer and, real-time, takes the CPU back
        # from other processes at once: on a busy machine it keeps up to a higher rate.
        realtime = (p.realtime and p.pacing != "average" and not self._realtime_refused
                    and (p.pacing == "shaper" or gap_s >= p.realtime_min_gap_us * 1e-6))
        priority = ["chrt", "-f", "1"] if realtime else []
        argv = ["ip", "netns", "exec", path.sender_ns, *priority,
                "time", "-f", "%e %U %S", "-o", str(timing),
                # A generator that cannot keep up is stopped (SIGINT: it still prints its
                # summary) instead of running on: the shortfall shows.
                "timeout", "-s", "INT", f"{p.duration_s * 1.5 + 1:g}",
                "trafgen", "--dev", path.sender_iface, "--conf", str(config), *pace,
                "--num", str(frames), "--no-sock-mem", "--notouch-irq", "--cpus", str(p.cpus)]
        window: float | None = None
        if p.pacing == "shaper":
            returncode, output, window = self._shaped_run(target, generator, path, argv)
        else:
            res = generator.run(argv, timeout=p.duration_s * 20 + 60, check=False)
            returncode, output = res.returncode, res.stdout + res.stderr
        cpu_after = read_cpu_times(target)
        probed = self._finish_probe(probe, timing.with_suffix(".irtt.json"))
        time.sleep(p.settle_s)  # frames still queued in the path are not lost
        after_tx = _counters(target, path.sender_ns, path.sender_iface)
        after_rx = _counters(target, path.receiver_ns, path.receiver_iface)
        if realtime and returncode != 0 and REALTIME_REFUSED in output:
            # A cpu cgroup without a real-time budget refuses SCHED_FIFO before trafgen
            # starts: nothing was sent, so send again as a normal process.
            self._realtime_refused = True
            return self._counted_send(target, path, mix, config, generator)
        if returncode not in (0, TIMED_OUT):
            raise VirtbenchError(f"trafgen exited {returncode}: {output.strip()[-300:]}")
        report = parse_trafgen(output)
        if p.pacing == "gap" and report.packets > p.cpus:
            self._learn_pacing(mix, gap_s, report.sending_s * p.cpus / report.packets)
        elapsed, user, system = parse_gnu_time(timing.read_text())
        offered = (after_tx["tx"] - before_tx["tx"]) + (after_tx["tx_dropped"]
                                                        - before_tx["tx_dropped"])
        # Shaped: the sending time is the one at which the path saw the frames (the rate in
        # the middle of the run), not trafgen's, which ends while its socket still holds some.
        sending_s = (offered / window if window else report.sending_s)
        return Sent(report, output, gap_s, offered, after_rx["rx"] - before_rx["rx"],
                    max(sending_s, 1e-6), 100.0 * (user + system) / max(elapsed, 1e-6),
                    busy_percent(cpu_before, cpu_after), probed)

    def _shaped_run(self, target: Target, generator: Target, path: PacketPath, argv: list[str]
                    ) -> tuple[int, str, float | None]:
        """trafgen's exit status and output, and the sender's tx rate from counter reads inside
        the run while the counter rises (None when it rose before the second read only)."""
        p: PacketRateParams = self.params
        first, last = WINDOW
        period = (last - first) * p.duration_s / (WINDOW_READS - 1)
        sampler = target.spawn(["ip", "netns", "exec", path.sender_ns, *target.python(), "-c",
                                SAMPLER, *sampler_args(path.sender_iface, first * p.duration_s,
                                                       period, WINDOW_READS)],
                               stdout=subprocess.PIPE)
        proc = generator.spawn(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        try:
            generated = proc.wait(p.duration_s * 20 + 60)
            sampled = sampler.wait(p.duration_s + 30).stdout or b""
        except subprocess.TimeoutExpired:
            for stuck in (proc, sampler):
                stuck.kill_group()  # bounded, unlike reading the pipes to their end
            raise VirtbenchError("trafgen or its tx counter sampler did not finish") from None
        samples = until_last_rise(parse_samples(sampled.decode(errors="replace")))
        return (generated.returncode, (generated.stdout or b"").decode(errors="replace"),
                window_rate(samples))

    def _start_probe(self, target: Target, path: PacketPath, out: Any
                     ) -> Process | None:
        p: PacketRateParams = self.params
        if not p.latency_probe:
            return None
        return target.spawn(["ip", "netns", "exec", path.sender_ns, "irtt", "client", "-i",
                             f"{p.probe_interval_ms:g}ms", "-d", f"{p.duration_s:g}s", "-Q",
                             "-o", str(out), self._probe_address(target, path)])

    def _finish_probe(self, probe: Process | None,
                      out: Any) -> list[Measurement]:
        if probe is None:
            return []
        try:
            probe.wait(self.params.duration_s + 30)
        except subprocess.TimeoutExpired:
            probe.kill_group()
            raise VirtbenchError("irtt client did not finish") from None
        text = out.read_text()
        out.unlink(missing_ok=True)
        return irtt_measurements(parse_irtt_json(text))


@dataclass(frozen=True)
class Sent:
    """One trafgen run: its report, the counted frames and the CPU use."""

    report: GeneratorReport
    output: str
    gap_s: float
    offered: int
    received: int
    sending_s: float
    generator_cpu_pct: float
    cpu_busy_pct: float
    probe: list[Measurement]

    @property
    def offered_pps(self) -> float:
        return self.offered / self.sending_s


WORKLOADS = (PacketRate,)
