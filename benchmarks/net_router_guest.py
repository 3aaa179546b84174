"""What does an emulated router cost? TCP throughput through the vnf-guests lab's router guest
(TCG here) as a ratio to the vnf-router lab's forwarding namespace, in the same run,
alternating, no neighbours. Floor (issue 38, study 002): measured and recorded; on a KVM host
the same command gives the study's router-VM figure against the kernel's own forwarding.
Run: `.venv/bin/python benchmarks/net_router_guest.py [ROUNDS]` (root; mmdebstrap, QEMU).
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.net_guest_tcp import _spread  # the same median (min, max) as its sibling
from benchmarks.record import record
from virtbench.labs.lab_contract import Lab, LabState
from virtbench.labs.net.router_guest import VnfGuestsLab, VnfGuestsParams
from virtbench.labs.net.router_lab import VnfRouterLab
from virtbench.targets.local import LocalTarget
from virtbench.workloads.net.router import RouterThroughput
from virtbench.workloads.workload_contract import TrialContext

REPO = Path(__file__).resolve().parent.parent
DURATION_S = 3


def _gbps(state: LabState, workdir: Path) -> float:
    assert state.target is not None
    ctx = TrialContext(target=state.target, variant="n0", knobs={}, workdir=workdir,
                       repetition=0, seed=1, services=state.services)
    result = RouterThroughput(RouterThroughput.Params(duration_s=DURATION_S)).run(ctx)
    [value] = [m.value for m in result.measurements if m.metric == "throughput_gbps"]
    assert value is not None
    return value


def main() -> None:
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    root = Path(tempfile.mkdtemp(prefix="vbvnf-bench-"))
    os.environ["VIRTBENCH_LAB_ROOT"] = str(root / "labs")
    cache = str(REPO / ".cache" / "virtbench-guest" / "net-image")
    labs: list[Lab] = [VnfGuestsLab(VnfGuestsParams(image_cache=cache), root, LocalTarget()),
                       VnfRouterLab(None, root, LocalTarget())]
    guest: list[float] = []
    netns: list[float] = []
    try:
        guest_state, netns_state = (lab.enter("n0", {"neighbours": 0}) for lab in labs)
        for _ in range(rounds):  # alternating
            guest.append(_gbps(guest_state, root))
            netns.append(_gbps(netns_state, root))
    finally:
        for lab in labs:
            lab.down()
        shutil.rmtree(root, ignore_errors=True)
    ratios = [g / n for g, n in zip(guest, netns, strict=True)]
    load = os.getloadavg()[0]
    body = "\n".join([
        f"iperf3 TCP, one stream, {DURATION_S} s per transfer (net.router-throughput), {rounds} "
        "rounds alternating the router guest and the namespace router, no neighbours. Router "
        "guest: lab vnf-guests, the built Debian guest under TCG (1 vCPU, 640 MiB, two "
        "virtio-net taps, QEMU's userspace backend, ip_forward=1), sender and receiver "
        "namespaces on its taps; namespace router: lab vnf-router (veth pairs, the forwarding "
        "namespace, iperf3 in the router's cgroup, no CPU cap). Ratio = guest Gbit/s / "
        "namespace Gbit/s of the same round (lower: the emulation's cost). Load average at "
        f"the end: {load:.1f} (a machine shared with other jobs).", "",
        "| path | Gbit/s, median (min, max) |", "|---|---|",
        f"| router guest (TCG) | {_spread(guest, 3)} |",
        f"| namespace router | {_spread(netns, 3)} |",
        f"| ratio guest / namespace | {_spread(ratios, 4)} |"])
    print(body)
    record("net: router guest TCP under TCG vs the namespace router",
           ".venv/bin/python benchmarks/net_router_guest.py", body)


if __name__ == "__main__":
    main()
