"""Which part of the QoS instrumentation costs TCP throughput through the Linux bridge.

Rotates iperf3 alone, + receiver capture, + receiver and sender capture, + irtt probes only,
in the vswitch lab (same flow, same path), and records the mean throughput of each.
Run as root: `.venv/bin/python benchmarks/net_instrumentation_breakdown.py [ROUNDS]`.
"""

from __future__ import annotations

import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.record import record
from virtbench.labs.net.vswitch import VSwitchLab
from virtbench.targets.local import LocalTarget
from virtbench.workloads.base import TrialContext
from virtbench.workloads.net.qos_transfer import QosTransfer

ROUNDS = int(sys.argv[1]) if len(sys.argv) > 1 else 5
DURATION_S = 4


def main() -> None:
    params = QosTransfer.Params
    configs = {
        "iperf3 alone": params(duration_s=DURATION_S, capture=False, probe=False),
        "+ receiver capture": params(duration_s=DURATION_S, capture=True, sender_capture=False,
                                     probe=False),
        "+ receiver and sender capture": params(duration_s=DURATION_S, capture=True,
                                                sender_capture=True, probe=False),
        "+ irtt probes only (10 ms)": params(duration_s=DURATION_S, capture=False, probe=True),
    }
    results: dict[str, list[float]] = {name: [] for name in configs}
    with tempfile.TemporaryDirectory(prefix="vbnet-cost-") as tmp:
        lab = VSwitchLab(None, Path(tmp), LocalTarget())
        try:
            lab.up()
            state = lab.enter("bench", {"switch": "linux-bridge", "background_mbps": 0})
            for i in range(ROUNDS):
                for name, p in configs.items():
                    ctx = TrialContext(target=state.target, variant="bench", knobs={},
                                       workdir=Path(tmp), repetition=i, seed=1,
                                       services=state.services)
                    value = next(m.value for m in QosTransfer(p).run(ctx).measurements
                                 if m.metric == "throughput_mbps")
                    assert value is not None
                    results[name].append(value)
        finally:
            lab.down()
    base = statistics.mean(results["iperf3 alone"])
    rows = [f"| {name} | {statistics.mean(v):,.0f} | {100 * (base - statistics.mean(v)) / base:+.1f} % |"
            for name, v in results.items()]
    body = (f"Linux bridge, {DURATION_S} s TCP transfers, {ROUNDS} rounds of the four "
            "configurations in turn; 2 cores, both saturated by iperf3.\n\n"
            "| configuration | mean Mbit/s | cost vs alone |\n|---|---|---|\n" + "\n".join(rows) + "\n")
    print(body)
    record("net: instrumentation cost by component",
           ".venv/bin/python benchmarks/net_instrumentation_breakdown.py", body)


if __name__ == "__main__":
    main()
