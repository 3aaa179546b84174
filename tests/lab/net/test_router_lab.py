"""The VNF router lab: forwarding namespace, throughput with CPU use, cgroup-held neighbours."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from virtbench.labs.net.router_lab import VnfRouterLab
from virtbench.targets.local import LocalTarget
from virtbench.workloads.net.router import RouterThroughput
from virtbench.workloads.workload_contract import TrialContext

pytestmark = [pytest.mark.lab, pytest.mark.timeout(600)]


def test_router_with_neighbours(tmp_path: Path) -> None:
    lab = VnfRouterLab(VnfRouterLab.Params(neighbour_cpu_cores=0.3), tmp_path, LocalTarget())
    try:
        lab.up()
        assert lab.router_group is not None and lab.server is not None
        router_procs = lab.router_group.procs_files()[0]
        # the router's receiver is a sibling of the neighbours in the CPU scheduler
        assert str(lab.server.pid) in router_procs.read_text().split()
        assert router_procs.parent.parent == lab.router_group.dirs["cpu"].parent
        router_dirs = list(lab.router_group.dirs.values())
        # no ARP during a trial: every hop's neighbour is pinned (packet-rate counts frames)
        for ns, address in ((lab.ns["snd"], "10.78.1.1"), (lab.ns["rtr"], "10.78.1.2"),
                            (lab.ns["rtr"], "10.78.2.2"), (lab.ns["rcv"], "10.78.2.1")):
            neigh = subprocess.run(["ip", "-n", ns, "neigh", "show", address],
                                   capture_output=True, text=True, check=True, timeout=60).stdout
            assert "PERMANENT" in neigh, (ns, address, neigh)
        for count in (0, 2, 1):
            state = lab.enter(f"n{count}", {"neighbours": count})
            assert len(lab.neighbours) == count
            for nb in lab.neighbours:
                assert nb.daemon.alive()
                assert nb.cgroup.procs_files()[0].read_text().split()  # stress-ng is inside
                assert nb.cgroup.dirs["cpu"].parent == router_procs.parent.parent
            # the workload's iperf3 client starts in the router's cgroup too
            assert state.target is not None
            own = state.target.run(["cat", "/proc/self/cgroup"]).stdout
            assert lab.router_group.name in own
            ctx = TrialContext(target=state.target, variant="v", knobs={}, workdir=tmp_path,
                               repetition=0, seed=1, services=state.services)
            values = {m.metric: m.value for m in
                      RouterThroughput(RouterThroughput.Params(duration_s=1)).run(ctx).measurements}
            throughput, busy = values["throughput_gbps"], values["cpu_busy_pct"]
            assert throughput is not None and throughput > 0.05
            assert busy is not None and 0 < busy <= 100
        groups = [nb.cgroup for nb in lab.neighbours]
        with pytest.raises(Exception, match="neighbours"):
            lab.enter("bad", {"neighbours": -1})
    finally:
        lab.down()
    for group in groups:
        assert all(not d.exists() for d in group.dirs.values())
    assert all(not d.exists() for d in router_dirs)
    out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, timeout=60).stdout
    assert lab.lab_id not in out
