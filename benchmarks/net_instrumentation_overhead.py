"""Cost of the QoS instrumentation (receiver capture, tx counters, irtt probes) on TCP throughput.

Through the vswitch lab's Linux bridge, alternate iperf3 alone and the fully instrumented
net.qos-transfer trial (same iperf3 flow), several pairs, and compare mean throughput.
Run as root: `.venv/bin/python benchmarks/net_instrumentation_overhead.py`.
"""

from __future__ import annotations

import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks._common import linux_bridge_lab
from benchmarks.record import record
from virtbench.stats import percent_change_ci
from virtbench.workloads.net.qos_transfer import QosTransfer
from virtbench.workloads.workload_contract import TrialContext

PAIRS = int(sys.argv[1]) if len(sys.argv) > 1 else 24
DURATION_S = 5


def main() -> None:
    bare = QosTransfer(QosTransfer.Params(duration_s=DURATION_S, capture=False, probe=False))
    full = QosTransfer(QosTransfer.Params(duration_s=DURATION_S))
    alone: list[float] = []
    instrumented: list[float] = []
    with tempfile.TemporaryDirectory(prefix="vbnet-bench-") as tmp, \
            linux_bridge_lab(Path(tmp)) as state:
        for i in range(PAIRS):
            order = (bare, full) if i % 2 == 0 else (full, bare)
            for wl in order:
                ctx = TrialContext(target=state.target, variant="bench", knobs={},
                                   workdir=Path(tmp), repetition=i, seed=1,
                                   services=state.services)
                value = next(m.value for m in wl.run(ctx).measurements
                             if m.metric == "throughput_mbps")
                assert value is not None
                (alone if wl is bare else instrumented).append(value)
    m_alone, m_inst = statistics.mean(alone), statistics.mean(instrumented)
    overhead = 100.0 * (m_alone - m_inst) / m_alone
    ratios = [100.0 * (a - b) / a for a, b in zip(alone, instrumented, strict=True)]
    change = percent_change_ci(alone, instrumented, seed=1)  # % change of mean throughput
    ci_text = f"95 % CI of the overhead [{-change.ci_high:+.1f}, {-change.ci_low:+.1f}] %"
    verdict = "PASS" if overhead <= 10.0 else "FAIL"
    body = (
        f"Linux bridge, {DURATION_S} s TCP transfers, {PAIRS} alternating pairs. Instrumented = "
        "net.qos-transfer's defaults: tcpdump at the receiver (snap length 96, BPF on the flow), "
        "the sender's tx counter for 'sent', irtt every 10 ms.\n\n"
        "| configuration | mean Mbit/s | sd |\n|---|---|---|\n"
        f"| iperf3 alone | {m_alone:,.0f} | {statistics.stdev(alone):,.0f} |\n"
        f"| instrumented | {m_inst:,.0f} | {statistics.stdev(instrumented):,.0f} |\n\n"
        f"Overhead of means: {overhead:+.1f} %, {ci_text} (per pair: "
        f"{', '.join(f'{r:+.1f}' for r in ratios)} %). Floor ≤ 10 %: **{verdict}**\n"
    )
    print(body)
    record("net: instrumentation overhead",
           ".venv/bin/python benchmarks/net_instrumentation_overhead.py", body)


if __name__ == "__main__":
    main()
