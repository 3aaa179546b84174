"""`virtbench assess`'s disk and network probes on the real tools (fio, iperf3, ethtool,
losetup, namespaces): measured through the runner, stored, and always rolled back — at the end
and on Ctrl-C. Effects are asserted as ratios above 1, never as absolute speeds."""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner
from waits import communicate, kill

from virtbench.cli.root import app
from virtbench.store import Store

libvirt = pytest.importorskip("libvirt")

pytestmark = [pytest.mark.lab, pytest.mark.slow, pytest.mark.timeout(600)]

if os.geteuid() != 0:
    pytest.skip("needs root (loop devices, network namespaces)", allow_module_level=True)

# A domain in libvirt's test driver configured well but for its disk cache mode and NIC model.
DOMAIN = """<domain type='test'>
  <name>probe-me</name>
  <memory unit='MiB'>1024</memory>
  <memoryBacking><hugepages/></memoryBacking>
  <vcpu placement='static'>1</vcpu>
  <cputune><vcpupin vcpu='0' cpuset='0'/></cputune>
  <numatune><memory mode='strict' nodeset='0'/></numatune>
  <os><type arch='x86_64'>hvm</type></os>
  <cpu mode='host-passthrough'/>
  <devices>
    <disk type='file' device='disk'>
      <driver name='qemu' type='raw' cache='writethrough'/>
      <source file='/guest/disk.img'/>
      <target dev='vda' bus='virtio'/>
    </disk>
    <interface type='network'>
      <mac address='52:54:00:00:00:01'/>
      <source network='default'/>
      <model type='rtl8139'/>
    </interface>
    <memballoon model='none'/>
  </devices>
</domain>
"""

PROBE_EXPERIMENT = """
name: probe-scheduler
baseline: as-found
lab: {kind: assess-probes, params: {disk: true, network: true, image_size_mib: 64}}
variants:
  - {name: as-found, knobs: {io_scheduler: mq-deadline, nic_offloads: "off"}}
  - {name: recommended, knobs: {io_scheduler: none, nic_offloads: "on"}}
workloads:
  - {name: probe.fio, id: sched, params: {vary: io_scheduler, runtime_s: 0.5}}
  - {name: probe.iperf3, params: {runtime_s: 1}}
repetitions: REPS
"""


@pytest.fixture
def lab_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "labs"
    monkeypatch.setenv("VIRTBENCH_LAB_ROOT", str(root))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    return root


def _ours() -> list[str]:
    """Loop devices on a probe image and probe namespaces that exist now."""
    loops = subprocess.run(["losetup", "-a"], capture_output=True, text=True, timeout=60).stdout
    spaces = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True,
                            timeout=60).stdout
    return ([line for line in loops.splitlines() if "vbnet-probe-" in line]
            + [line.split()[0] for line in spaces.splitlines()
               if line.startswith("vbnet-") and line.split()[0].endswith(("-ps", "-pc"))])


@pytest.fixture
def nothing_left(lab_root: Path) -> Iterator[None]:
    before = set(_ours())
    yield
    assert set(_ours()) - before == set(), "the probes left objects behind"
    assert not list(lab_root.glob("*.json")), "a lab manifest was left behind"


@pytest.fixture
def domain() -> Iterator[None]:
    conn = libvirt.open("test:///default")
    dom = conn.defineXML(DOMAIN)
    yield
    dom.undefine()
    conn.close()


def test_assess_domain_measures_the_disk_cache_and_nic_findings(
        tmp_path: Path, lab_root: Path, nothing_left: None, domain: None) -> None:
    store = tmp_path / "assess.db"
    result = CliRunner().invoke(app, ["assess", "--domain", "probe-me", "--connect",
                                      "test:///default", "--budget", "2m", "--json",
                                      "--store", str(store)])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output[: result.output.rindex("}") + 1])
    effects = {e["workload"]: e for e in data["effects"]}
    assert set(effects) == {"disk.cache.writethrough", "net.offloads"}, data["notes"]
    for effect in effects.values():
        assert math.isfinite(effect["ci_low"]) and math.isfinite(effect["ci_high"])
        assert effect["ci_low"] <= effect["speedup"] <= effect["ci_high"]
        assert effect["n"] >= 8
    # O_DIRECT writes need no flush per write; offloads send 64 KiB segments instead of MTUs.
    assert effects["disk.cache.writethrough"]["speedup"] > 1
    assert effects["net.offloads"]["ci_low"] > 1.5
    assert "/dev/loop" in effects["disk.cache.writethrough"]["measured"]
    assert "veth" in effects["net.offloads"]["measured"]
    findings = {f["rule"]: f for f in data["findings"]}
    for rule, workload, where in (
            ("disk-cache", "disk.cache.writethrough", "measured (this run, on a loop device)"),
            ("nic-model", "net.offloads", "measured (this run)")):
        finding = findings[rule]
        assert finding["gain"]["basis"] == "measured"
        assert finding["gain"]["speedup"] == effects[workload]["speedup"]
        sources = [e["source"] for e in finding["evidence"]]
        assert where in sources and "cited (not measured)" in sources
    # 2 minutes leave no room for a scratch guest: the assessment says so, and which was used
    assert any(n.startswith("disk what-if not measured in a guest") and
               n.endswith("the cache mode is measured on a loop device instead")
               for n in data["notes"]), data["notes"]
    assert data["guest_run_id"] is None
    # nor for the NIC's scratch guest: the veth probe measures the emulated NIC's offloads
    assert any(n.startswith("NIC what-if not measured in a guest") and
               n.endswith("the emulated NIC's offloads are measured on a veth pair instead")
               for n in data["notes"]), data["notes"]
    assert data["guest_nic_run_id"] is None
    st = Store(str(store))
    run = st.run(data["run_id"])
    assert run.experiment == "assess" and run.status == "complete"


def _experiment(tmp_path: Path, repetitions: int) -> Path:
    path = tmp_path / "probe.yaml"
    path.write_text(PROBE_EXPERIMENT.replace("REPS", str(repetitions)))
    return path


def test_the_scheduler_probe_sets_the_scheduler_of_its_own_loop_device_per_trial(
        tmp_path: Path, lab_root: Path, nothing_left: None) -> None:
    store = tmp_path / "p.db"
    result = CliRunner().invoke(app, ["run", str(_experiment(tmp_path, 2)), "--store",
                                      str(store)])
    assert result.exit_code == 0, result.output
    st = Store(str(store))
    trials = [t for t in st.trials(st.run("latest").id) if t["workload_id"] == "sched"]
    by_variant = {t["variant"]: t["notes"] for t in trials if not t.get("warmup")}
    assert by_variant["as-found"]["scheduler"] == "mq-deadline"
    assert by_variant["recommended"]["scheduler"] == "none"
    assert by_variant["recommended"]["device"].startswith("/dev/loop")


def _start_probe_run(tmp_path: Path, lab_root: Path) -> subprocess.Popen[bytes]:
    """A long probe run in a child, returned once its loop device and namespaces exist."""
    # The child gets Python's own Ctrl-C handler back (a background shell may have ignored it).
    code = ("import signal, sys; signal.signal(signal.SIGINT, signal.default_int_handler); "
            "from virtbench.cli.root import main; sys.argv[0] = 'virtbench'; main()")
    child = subprocess.Popen([sys.executable, "-c", code, "run",
                              str(_experiment(tmp_path, 50)), "--store", str(tmp_path / "p.db")],
                             env=os.environ | {"VIRTBENCH_LAB_ROOT": str(lab_root)},
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                             start_new_session=True)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and len(_ours()) < 3:  # loop device, two namespaces
        time.sleep(0.2)
    if len(_ours()) < 3:
        kill(child)
        pytest.fail("the lab never came up")
    time.sleep(3)  # well inside the trials
    return child


def test_ctrl_c_removes_the_loop_device_and_the_namespaces(
        tmp_path: Path, lab_root: Path, nothing_left: None) -> None:
    child = _start_probe_run(tmp_path, lab_root)
    try:
        child.send_signal(signal.SIGINT)
        _, err = communicate(child, 60)
    finally:
        kill(child)
    assert child.returncode != 0
    assert b"Traceback" not in err, err.decode()[-2000:]


def test_lab_clean_removes_what_a_killed_run_left(
        tmp_path: Path, lab_root: Path, nothing_left: None) -> None:
    child = _start_probe_run(tmp_path, lab_root)
    kill(child)  # its process group: no cleanup at all, a crash
    assert list(lab_root.glob("*.json")), "the killed run's manifest should be there"
    assert _ours()
    result = CliRunner().invoke(app, ["lab", "clean"])
    assert result.exit_code == 0, result.output
    assert "loop device" in result.output and "namespace" in result.output
