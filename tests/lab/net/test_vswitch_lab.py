"""The vswitch lab on real namespaces, switches, iperf3, irtt and dumpcap (short transfers)."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from dpdk import PMD_SLEEP_US
from waits import communicate, kill, readline

from virtbench.labs.lab_contract import Manifest
from virtbench.labs.net.hugepages import sysfs_pool
from virtbench.labs.net.ovs import OvsStartError
from virtbench.labs.net.vswitch import VSwitchLab
from virtbench.model import VirtbenchError
from virtbench.net_qos.grading import emodel, mos_from_r, tiphon_delay, tiphon_index
from virtbench.services import VirtualSwitch
from virtbench.targets.local import LocalTarget, NetnsTarget
from virtbench.workloads.net.qos_probe import QosProbe
from virtbench.workloads.net.qos_transfer import QosTransfer
from virtbench.workloads.workload_contract import TrialContext

pytestmark = [pytest.mark.lab, pytest.mark.timeout(600)]


def _namespaces() -> set[str]:
    out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, timeout=60).stdout
    return {line.split()[0] for line in out.splitlines() if line.strip()}


def _lab_namespaces(lab: VSwitchLab) -> set[str]:
    """This lab's namespaces only: other labs may come and go on a shared machine meanwhile."""
    return {ns for ns in _namespaces() if ns.startswith(f"vbnet-{lab.lab_id}-")}


def _ctx(state: object, workdir: Path) -> TrialContext:
    return TrialContext(target=state.target, variant="v", knobs={}, workdir=workdir,  # type: ignore[attr-defined]
                        repetition=0, seed=1, services=state.services)  # type: ignore[attr-defined]


@pytest.mark.parametrize("switch", ["linux-bridge", "ovs", "ovs-dpdk"])
def test_switch_variant_carries_instrumented_transfer(switch: str, tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    # The capture's spool in a temporary folder of this test's own: the suite's other lines
    # capture at the same time, in /tmp (a leftover of theirs is not one of this test's).
    spools = tmp_path / "spools"
    spools.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(spools))
    lab = VSwitchLab(VSwitchLab.Params(dpdk_pmd_max_sleep_us=PMD_SLEEP_US), tmp_path,
                     LocalTarget())
    try:
        lab.up()
        # A DPDK start-up failure fails here with ovs-vswitchd.log's last lines (OvsStartError).
        state = lab.enter(switch, {"switch": switch, "background_mbps": 20})
        assert len(_lab_namespaces(lab)) == 5
        assert state.services.get(VirtualSwitch).switch == switch
        if switch == "ovs-dpdk":  # OVS took the lab's pmd-maxsleep (tests/dpdk.py)
            [log] = list(Path(lab.rundir).rglob("ovs-vswitchd.log"))
            assert f"PMD max sleep request is {PMD_SLEEP_US} usecs" in log.read_text()
        transfer = QosTransfer(QosTransfer.Params(duration_s=2))
        result = transfer.run(_ctx(state, tmp_path))
        values = {m.metric: m.value for m in result.measurements if m.value is not None}
        declared = {m.name for m in transfer.active_metrics()}
        assert {m.metric for m in result.measurements} == declared
        assert values["throughput_mbps"] > 10
        assert values["capture_packets"] > 100
        assert values["study_delay_ms"] > 0 and values["study_throughput_mbps"] > 10
        # The grades are the grading functions of this trial's own measurements (not merely
        # within the scales' ranges, which the functions guarantee by construction) ...
        assert values["tiphon_index"] == pytest.approx(tiphon_index(
            values["study_delay_ms"], values["study_jitter_ms"], values["study_loss_pct"]))
        model = emodel(values["one_way_delay_down_ms"], values["rfc3550_jitter_down_ms"],
                       values["probe_loss_pct"])
        assert values["emodel_r"] == pytest.approx(model.r_factor)
        assert values["emodel_mos"] == pytest.approx(mos_from_r(values["emodel_r"]))
        # ... and on a switch between namespaces delays are far below TIPHON's 150 ms and the
        # E-model's 177.3 ms knee (a unit slip, ns or µs read as ms, would cross both).
        assert tiphon_delay(values["study_delay_ms"]) == 4
        assert values["one_way_delay_down_ms"] < 177.3 and model.id_delay < 0.024 * 177.3
        if switch == "linux-bridge":  # veth through a bridge loses nothing; capture keeps all
            assert values["study_loss_pct"] < 0.1
        probe = QosProbe(QosProbe.Params(duration_s=1, interval_ms=20))
        pv = {m.metric: m.value for m in probe.run(_ctx(state, tmp_path)).measurements
              if m.value is not None}
        assert pv["rtt_mean_ms"] > 0
        assert not list(tmp_path.glob("*.pcap"))  # captures are deleted unless kept
        assert not list(spools.glob("virtbench-capture-*"))
        lab.leave(switch)
    finally:
        lab.down()
    assert not _lab_namespaces(lab)
    assert not any(p.name.startswith("vbnet-") for p in (tmp_path / "labs").iterdir())


def test_switch_change_and_background_rate(tmp_path: Path) -> None:
    lab = VSwitchLab(VSwitchLab.Params(background_settle_s=0.5), tmp_path, LocalTarget())
    try:
        lab.up()
        lab.enter("a", {"switch": "linux-bridge", "background_mbps": 0})
        # a profile counts the servers the trial talks to, not the background's: the kernel
        # bridge has no daemon; OVS forwards in ovs-vswitchd (ovsdb-server only configures)
        assert set(lab.serving_daemons()) == {"iperf3-server", "irtt-server"}
        state = lab.enter("b", {"switch": "ovs", "background_mbps": 40})
        daemons = lab.serving_daemons()
        assert set(daemons) == {"iperf3-server", "irtt-server", "ovs-vswitchd"}
        assert "ovs-vswitchd" in Path(f"/proc/{daemons['ovs-vswitchd']}/cmdline").read_text()
        # rebuilt switch, new interfaces: the hosts' ARP entries are pinned again, no IPv6
        assert state.target is not None
        neigh = state.target.run(["ip", "neigh", "show", "10.77.0.1"]).stdout
        assert "PERMANENT" in neigh
        assert not state.target.run(["ip", "-6", "addr", "show", "dev", "cli"]).stdout.strip()
        switch = state.services.get(VirtualSwitch)
        bgr = NetnsTarget(switch.background_receiver_ns)
        path = f"/sys/class/net/{switch.background_receiver_iface}/statistics/rx_bytes"
        first = int(bgr.run(["cat", path]).stdout)
        t0 = time.monotonic()
        time.sleep(2)
        second = int(bgr.run(["cat", path]).stdout)
        mbps = (second - first) * 8 / (time.monotonic() - t0) / 1e6
        assert 30 < mbps < 50  # 40 Mbit/s payload + headers; exact figure: benchmarks/
        with pytest.raises(Exception, match="switch"):
            lab.enter("c", {"switch": "vpp"})
    finally:
        lab.down()


def test_clean_removes_what_a_killed_run_left(tmp_path: Path) -> None:
    script = (
        "import sys, time\n"
        "from pathlib import Path\n"
        "from virtbench.labs.net.vswitch import VSwitchLab\n"
        "from virtbench.targets.local import LocalTarget\n"
        "lab = VSwitchLab(None, Path(sys.argv[1]), LocalTarget())\n"
        "lab.up(); lab.enter('v', {'switch': 'ovs', 'background_mbps': 10})\n"
        "print('ready', flush=True); time.sleep(120)\n"
    )
    child = subprocess.Popen([sys.executable, "-c", script, str(tmp_path)],
                             stdout=subprocess.PIPE, text=True)
    try:
        assert readline(child, 300).strip() == "ready"
    finally:
        kill(child)  # a crash: no down()
    manifests = list((tmp_path / "labs").glob("vbnet-*.json"))
    assert len(manifests) == 1
    removed: list[str] | None = None
    try:
        # This lab's namespaces only (named after its manifest): the suite's other lines
        # create vbnet- namespaces of their own meanwhile (the assess probes' counted here once).
        ours = f"{manifests[0].stem}-"
        assert len({ns for ns in _namespaces() if ns.startswith(ours)}) == 5
        removed = VSwitchLab.clean(Manifest(manifests[0], "vswitch"))
        assert any("namespace" in r for r in removed)
        assert any("ovs-vswitchd" in r or "process" in r for r in removed)
        assert {ns for ns in _namespaces() if ns.startswith(ours)} == set()
        leftover = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True,
                                  timeout=60).stdout
        assert str(tmp_path) not in leftover  # no ovsdb-server/ovs-vswitchd of ours survives
    finally:
        if removed is None and manifests[0].exists():
            # A failed assertion before clean() must not leave daemons and namespaces behind.
            VSwitchLab.clean(Manifest(manifests[0], "vswitch"))


def _hugetlbfs_mounts() -> set[str]:
    lines = Path("/proc/mounts").read_text().splitlines()
    return {line.split()[1] for line in lines if line.split()[2] == "hugetlbfs"}


def test_ovs_dpdk_on_hugepages_the_lab_reserves_and_gives_back(tmp_path: Path) -> None:
    pool = sysfs_pool()
    if not pool.exists():
        pytest.skip("no 2 MiB hugepages in this kernel")
    before, mounts = int(pool.read_text()), _hugetlbfs_mounts()
    params = VSwitchLab.Params(dpdk_hugepages="reserve", dpdk_memory_mb=128)
    lab = VSwitchLab(params, tmp_path, LocalTarget())
    try:
        lab.up()
        state = lab.enter("dpdk", {"switch": "ovs-dpdk", "background_mbps": 0})
        assert int(pool.read_text()) == before + (128 + 64) // 2
        assert len(_hugetlbfs_mounts() - mounts) == 1
        # OVS runs DPDK --in-memory (memfd pages, no files): see the pool's use instead.
        info = dict(line.split(":") for line in Path("/proc/meminfo").read_text().splitlines())
        in_use = int(info["HugePages_Total"]) - int(info["HugePages_Free"])
        assert in_use >= 128 // 2  # at least DPDK's -m 128 MiB in 2 MiB pages
        transfer = QosTransfer(QosTransfer.Params(duration_s=2, capture=False, probe=False))
        values = {m.metric: m.value for m in transfer.run(_ctx(state, tmp_path)).measurements
                  if m.value is not None}
        assert values["throughput_mbps"] > 1
        lab.enter("bridge", {"switch": "linux-bridge", "background_mbps": 0})
        assert int(pool.read_text()) == before and _hugetlbfs_mounts() == mounts
    finally:
        lab.down()
    assert int(pool.read_text()) == before and _hugetlbfs_mounts() == mounts



def test_clean_gives_back_hugepages_a_killed_run_reserved(tmp_path: Path) -> None:
    pool = sysfs_pool()
    if not pool.exists():
        pytest.skip("no 2 MiB hugepages in this kernel")
    script = (
        "import sys, time\n"
        "from pathlib import Path\n"
        "from virtbench.labs.net.vswitch import VSwitchLab\n"
        "from virtbench.targets.local import LocalTarget\n"
        "p = VSwitchLab.Params(dpdk_hugepages='reserve', dpdk_memory_mb=128)\n"
        "lab = VSwitchLab(p, Path(sys.argv[1]), LocalTarget())\n"
        "lab.up()\n"
        "try:\n"
        "    lab.enter('v', {'switch': 'ovs-dpdk', 'background_mbps': 0})\n"
        "except Exception as exc:\n"
        "    print('failed', exc, flush=True); lab.down(); raise\n"
        "print('ready', flush=True); time.sleep(120)\n"
    )
    before, mounts = int(pool.read_text()), _hugetlbfs_mounts()
    child = subprocess.Popen([sys.executable, "-c", script, str(tmp_path)],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = readline(child, 300).strip()
        if line != "ready":  # the child's error with OVS's log lines, then its traceback
            out, err = communicate(child, 60)
            pytest.fail(f"{line}\n{out}{err}")
    finally:
        kill(child)  # a crash: no down(); ovs-vswitchd-dpdk still holds the pages
    assert int(pool.read_text()) > before and len(_hugetlbfs_mounts() - mounts) == 1
    manifest = next((tmp_path / "labs").glob("vbnet-*.json"))
    removed = VSwitchLab.clean(Manifest(manifest, "vswitch"))
    assert any("hugepages returned" in r for r in removed)
    assert int(pool.read_text()) == before and _hugetlbfs_mounts() == mounts


def test_physical_port_that_dpdk_cannot_open_is_named_with_the_fix(tmp_path: Path) -> None:
    # No NIC here is bound to a DPDK driver: OVS reports the port's error, the lab explains it.
    params = VSwitchLab.Params(dpdk_physical_ports={"uplink": "0000:ff:1f.7"})
    lab = VSwitchLab(params, tmp_path, LocalTarget())
    try:
        lab.up()
        with pytest.raises(VirtbenchError, match=r"port uplink \(0000:ff:1f.7\).*vfio-pci"):
            lab.enter("dpdk", {"switch": "ovs-dpdk", "background_mbps": 0})
    finally:
        lab.down()


def test_dpdk_start_up_failure_fails_with_ovs_log_lines(tmp_path: Path) -> None:
    # DPDK's EAL refuses a core this machine does not have: ovs-vswitchd-dpdk gives up at
    # start-up, and the lab's error must show why in OVS's own words (its log's last lines).
    missing_cpu = 1 << (os.cpu_count() or 1) + 7
    params = VSwitchLab.Params(dpdk_lcore_mask=hex(missing_cpu))
    lab = VSwitchLab(params, tmp_path, LocalTarget())
    try:
        lab.up()
        with pytest.raises(OvsStartError) as caught:
            lab.enter("dpdk", {"switch": "ovs-dpdk", "background_mbps": 0})
    finally:
        lab.down()
    lines = caught.value.log_lines
    assert any("|dpdk|ERR|EAL:" in line for line in lines), lines
    assert all(line in str(caught.value) for line in lines)
