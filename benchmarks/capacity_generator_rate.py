"""How fast is the packet generator? trafgen at 64 B into a veth pair, counted by the kernel.

Full speed (trafgen's PACKET_MMAP ring with the qdisc bypassed, no pacing), alternating three
set-ups: one CPU; every CPU (one trafgen process each); every CPU at high priority (trafgen -H,
nice -20) with the receiving veth in NAPI mode (GRO on: frames are queued and received in
batches instead of inside each send). Rate = the receiver's rx packets (kernel counter) /
trafgen's longest per-CPU sending time; beside it trafgen's CPU use (GNU time) and its rate per
core-second, which does not depend on how much of the machine other processes left it. Then the
paced rates the net.packet-rate workload can verify (offered within its rate tolerance, 2 %),
with its two pacings: the tbf shaper (its default) and trafgen's own gap.
Run as root:
`sudo .venv/bin/python benchmarks/capacity_generator_rate.py`.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.record import record
from virtbench.packetgen import frame_mix, parse_gnu_time, parse_trafgen, trafgen_config
from virtbench.targets.local import LocalTarget
from virtbench.workloads.net.packet_rate import PacketRate, PacketRateParams
from virtbench.workloads.workload_contract import TrialContext

ROUNDS = 5
FRAMES = 3_000_000
PACED = {"shaper": (10_000, 40_000, 100_000, 200_000, 300_000, 400_000, 600_000),
         "gap": (10_000, 40_000, 100_000)}
CPUS = os.cpu_count() or 1
TOLERANCE = PacketRateParams().rate_tolerance
"""An offered rate this close to the asked one is what a search accepts as offered."""


@dataclass(frozen=True)
class SetUp:
    name: str
    cpus: int
    high_priority: bool
    receiver_gro: bool


SETUPS = (
    SetUp("1 CPU", 1, False, False),
    SetUp(f"{CPUS} CPUs", CPUS, False, False),
    SetUp(f"{CPUS} CPUs, -H, receiver GRO (NAPI)", CPUS, True, True),
)


@dataclass(frozen=True)
class Run:
    received_pps: float
    cpu_pct: float
    """trafgen's user + system time over its wall time, % of one core."""

    @property
    def per_core_pps(self) -> float:
        return self.received_pps / max(self.cpu_pct / 100, 1e-6)


def rx_packets(ns: str, iface: str) -> int:
    out = subprocess.run(["ip", "netns", "exec", ns, "cat",
                          f"/sys/class/net/{iface}/statistics/rx_packets"],
                         check=True, capture_output=True, text=True).stdout
    return int(out)


def full_speed(gen: str, sink: str, config: Path, setup: SetUp) -> Run:
    """One full-speed trafgen run; frames/s counted by the receiver's kernel."""
    subprocess.run(["ip", "netns", "exec", sink, "ethtool", "-K", "s0", "gro",
                    "on" if setup.receiver_gro else "off"], check=True, capture_output=True)
    timing = config.with_suffix(".time")
    before = rx_packets(sink, "s0")
    out = subprocess.run(["ip", "netns", "exec", gen, "time", "-f", "%e %U %S", "-o",
                          str(timing), "trafgen", "--dev", "g0", "--conf", str(config),
                          "--num", str(FRAMES), "--cpus", str(setup.cpus), "--no-sock-mem",
                          "--notouch-irq", *(["--prio-high"] if setup.high_priority else [])],
                         check=True, capture_output=True, text=True)
    report = parse_trafgen(out.stdout + out.stderr)
    received = rx_packets(sink, "s0") - before
    elapsed, user, system = parse_gnu_time(timing.read_text())
    return Run(received / report.sending_s, 100 * (user + system) / max(elapsed, 1e-6))


def main() -> None:
    tag = f"vbcapg{os.getpid() % 100000}"
    gen, sink = f"{tag}gen", f"{tag}sink"
    workdir = Path(tempfile.mkdtemp(prefix="vb-bench-"))
    try:
        for ns in (gen, sink):
            subprocess.run(["ip", "netns", "add", ns], check=True)
        subprocess.run(["ip", "link", "add", "g0", "netns", gen, "type", "veth", "peer",
                        "name", "s0", "netns", sink], check=True)
        for ns, iface in ((gen, "g0"), (sink, "s0")):
            subprocess.run(["ip", "-n", ns, "link", "set", iface, "up"], check=True)
        config = workdir / "64.cfg"
        config.write_text(trafgen_config(frame_mix(64), "02:00:00:00:00:01",
                                         "02:00:00:00:00:02", "198.18.0.1", "198.19.0.2"))
        runs: dict[str, list[Run]] = {setup.name: [] for setup in SETUPS}
        for _round in range(ROUNDS):
            for setup in SETUPS:  # alternating, so a change in the machine's load hits all
                runs[setup.name].append(full_speed(gen, sink, config, setup))
        subprocess.run(["ip", "netns", "exec", sink, "ethtool", "-K", "s0", "gro", "off"],
                       check=True)
        paced = []
        for pacing, asked_rates in PACED.items():
            for asked in asked_rates:
                workload = PacketRate(PacketRateParams(
                    rate_pps=asked, duration_s=2, frame_size=64, sender_ns=gen,
                    sender_iface="g0", receiver_ns=sink, receiver_iface="s0", attempts=3,
                    pacing=pacing))
                ctx = TrialContext(LocalTarget(), "bench", {}, workdir, 0, 1)
                values = {m.metric: m.value or 0.0 for m in workload.run(ctx).measurements}
                paced.append((pacing, asked, values["offered_pps"], values["received_pps"],
                              values["generator_cpu_pct"], values["cpu_busy_pct"]))
    finally:
        for ns in (gen, sink):
            subprocess.run(["ip", "netns", "del", ns], check=False)
    load = os.getloadavg()
    first = statistics.median(r.received_pps for r in runs[SETUPS[0].name])
    rows = []
    for name, done in runs.items():
        rates = [r.received_pps for r in done]
        rows.append(
            f"| {name} | {statistics.median(rates) / 1e6:.3f} Mpps | "
            f"{min(rates) / 1e6:.3f}–{max(rates) / 1e6:.3f} | "
            f"{statistics.median(rates) / first:.2f} | "
            f"{statistics.median(r.cpu_pct for r in done):.0f} % | "
            f"{statistics.median(r.per_core_pps for r in done) / 1e6:.3f} Mpps |")
    best = max(statistics.median(r.received_pps for r in done) for done in runs.values())
    per_core = statistics.median(r.per_core_pps for done in runs.values() for r in done)
    paced_rows = "\n".join(
        f"| {pacing} | {asked:,} | {offered:,.0f} | {offered / asked - 1:+.1%} | "
        f"{received:,.0f} | {cpu:.0f} % | {busy:.0f} % | "
        f"{'yes' if abs(offered / asked - 1) <= TOLERANCE else 'no'} |"
        for pacing, asked, offered, received, cpu, busy in paced)
    verified = {pacing: max((a for p, a, o, *_rest in paced
                             if p == pacing and abs(o / a - 1) <= TOLERANCE), default=0)
                for pacing in PACED}
    table = "\n".join(rows)
    body = f"""
trafgen 64 B frames into a veth pair between two namespaces (qdisc bypassed, trafgen's
default); rate = the receiver's rx packets (kernel counter) / trafgen's longest per-CPU sending
time; {FRAMES:,} frames per run, {ROUNDS} rounds alternating the set-ups. The generator's CPU
use is GNU time's user + system over wall time (% of one core; the receiver's softirq work runs
inside trafgen's sends unless GRO puts the receiver in NAPI mode). Machine load average at the
end: {load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f} (1 / 5 / 15 min; other sessions share the
{CPUS} cores, so the rate is what the generator got of them: the rate per core-second is the
figure that does not depend on them).

| generator | median | range | ratio to 1 CPU | generator CPU | per core-second |
|---|---:|---:|---:|---:|---:|
{table}

Floor ≥ 1 Mpps at 64 B: {"meets" if best >= 1e6 else "NOT met on this run"} (best median
{best / 1e6:.3f} Mpps; at {per_core / 1e6:.3f} Mpps per core-second the floor needs
{1e6 / per_core:.1f} cores of the {CPUS} for the generator).

Paced (net.packet-rate, 64 B, up to 3 attempts of 2 s, a fresh workload per rate so nothing
is learnt from the rate before). shaper: trafgen (SCHED_FIFO) unpaced through the qdisc path into a tbf on
its own interface, offered rate = the interface's tx counter between 20 % and 90 % of the run;
gap: trafgen's gap with the fitted correction, SCHED_FIFO at every gap, offered = tx frames /
trafgen's sending time. Highest rate offered within the workload's rate tolerance
({TOLERANCE:.0%}): shaper {verified["shaper"]:,} frames/s, gap {verified["gap"]:,} frames/s.
Generator CPU: trafgen's user + system time over its wall time, % of one core (it includes the
softirq work of frames sent and received while trafgen was the running task); machine busy:
all cores, % of the machine, during the trial.

| pacing | asked (frames/s) | offered | error | received | generator CPU | machine busy | within {TOLERANCE:.0%} |
|---|---:|---:|---:|---:|---:|---:|---|
{paced_rows}
"""
    record("capacity: packet generator rate", "sudo .venv/bin/python "
           "benchmarks/capacity_generator_rate.py", body)
    print(body)


if __name__ == "__main__":
    main()
