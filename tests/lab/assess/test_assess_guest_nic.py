"""`virtbench assess`'s NIC what-ifs in ONE scratch guest (lab assess-nic-guest, one private
libvirtd, TCG): a domain's emulated NIC and its one-queue virtio NIC on a multi-vCPU guest
measured as found (e1000e; one queue pair) against as recommended (virtio; N queue pairs)
through the guest's own NICs, each verified in the guest, stored as a normal run, attached to
the findings as "measured (this run, in a guest)", and nothing left behind: guest, taps,
namespace, iperf3 server, manifest. Needs root, mmdebstrap, QEMU, iperf3. Effects are asserted
as finite ratios, never as speeds: under TCG the emulation decides them."""

from __future__ import annotations

import json
import math
import os
import shutil
from pathlib import Path

import pytest
from images import cache_dir

from virtbench.assess.assessment import _attach
from virtbench.assess.findings import Finding, Gain
from virtbench.assess.guest_nic import (
    GUEST_NIC_EXPERIMENT,
    NIC_WORKLOADS,
    guest_nic_for,
    nic_guest_problems,
    run_guest_nic,
)
from virtbench.kvm.guest_host import qemu_process
from virtbench.store import Store
from virtbench.targets.local import LocalTarget

IMAGE = str(cache_dir("virtbench-guest/nic-image"))

pytestmark = [pytest.mark.lab, pytest.mark.timeout(600), pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("mmdebstrap") is None
    or shutil.which("qemu-system-x86_64") is None or shutil.which("iperf3") is None,
    reason="needs root, mmdebstrap, QEMU and iperf3")]


def _finding(rule: str, measure: str, **extra: object) -> Finding:
    return Finding(rule=rule, title=rule, severity="medium", evidence=[], source="doc",
                   gain=Gain("cited", f"{rule} helps", source="a guide"), measure=measure,
                   extra=dict(extra))


def test_the_nic_what_ifs_are_measured_in_one_scratch_guest(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    labs = tmp_path / "labs"
    monkeypatch.setenv("VIRTBENCH_LAB_ROOT", str(labs))
    findings = [_finding("nic-model", "nic-offloads", model="rtl8139"),
                _finding("nic-multiqueue", "nic-multiqueue", vcpus=2)]
    whatif = guest_nic_for(findings, IMAGE, host_cpus=2)
    assert whatif is not None and nic_guest_problems(whatif) == []
    assert whatif.nics() == ["virtio", "e1000e", "virtio:2"]
    store = Store(str(tmp_path / "assess.db"))
    run_id, effects = run_guest_nic(store, whatif)
    run = store.run(run_id)
    assert run.experiment == GUEST_NIC_EXPERIMENT and run.status == "complete"
    by_measure = {e.measure: e for e in effects}
    assert set(by_measure) == {"nic-model", "nic-multiqueue"}
    for measure, effect in by_measure.items():
        assert effect.workload == NIC_WORKLOADS[measure] and effect.n == 3
        assert effect.metric == "throughput_mbps"
        assert math.isfinite(effect.ci_low) and effect.ci_low <= effect.speedup
        assert effect.speedup > 0 and math.isfinite(effect.speedup)
        assert "inside a scratch guest" in effect.what and "TCG" in effect.what
    # Each trial crossed the NIC its one knob picked; the guest's drivers were verified.
    paths = {(t["workload_id"], t["variant"]): t["notes"]["path"]
             for t in store.trials(run_id) if not t.get("warmup")}
    assert "(e1000e, 1 queue pair(s), 1 stream(s))" in paths[("guest.nic.model", "as-found")]
    assert "(virtio, 1 queue pair(s), 1 stream(s))" in paths[("guest.nic.model",
                                                               "recommended")]
    assert "(virtio, 1 queue pair(s), 2 stream(s))" in paths[("guest.nic.queues", "as-found")]
    assert "(virtio, 2 queue pair(s), 2 stream(s))" in paths[("guest.nic.queues",
                                                               "recommended")]
    settings = store.realisations(run_id)[0]["settings"]
    assert json.loads(settings["lab.verified_nic1"])["guest"]["driver"] == "e1000e"
    assert json.loads(settings["lab.verified_nic2"])["guest"] == {"driver": "virtio_net",
                                                                  "combined": 2}
    assert "emulated (TCG)" in settings["lab.emulated"]
    _attach(findings, effects)
    for finding in findings:
        assert finding.gain is not None and finding.gain.basis == "measured"
        sources = [e.source for e in finding.evidence]
        assert "measured (this run, in a guest)" in sources
        assert "cited (not measured)" in sources
    # The guest, its taps, the peer namespace and the manifest are gone.
    assert qemu_process(f"vbnicg-{os.getpid()}") is None
    assert not list(labs.glob("*.json"))
    local = LocalTarget()
    assert "nicpeer" not in local.run(["ip", "netns", "list"]).stdout
    assert " vbn" not in local.run(["ip", "-o", "link", "show"]).stdout


def test_a_tap_name_already_taken_is_refused_and_nothing_is_left(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A device of the tap's name on this host (not the run's to take): a clear error naming
    it, before the guest boots; the private libvirtd, the namespace and the manifest are
    removed (the image is the one the test above built)."""
    from virtbench.labs.assess_nic_guest import NicGuestLab, NicGuestParams
    from virtbench.model import VirtbenchError

    labs = tmp_path / "labs"
    monkeypatch.setenv("VIRTBENCH_LAB_ROOT", str(labs))
    local = LocalTarget()
    lab = NicGuestLab(NicGuestParams(nics=["virtio"], vcpus=1, image_cache=IMAGE),
                      tmp_path / "work", local)
    taken = f"vbn{lab.token}0"
    local.run(["ip", "link", "add", taken, "type", "veth", "peer", "name", f"{taken}p"])
    try:
        with pytest.raises(VirtbenchError, match=f"a network device {taken} already exists"):
            lab.up()
    finally:
        local.run(["ip", "link", "del", taken], check=False)
    assert lab.peer_ns not in local.run(["ip", "netns", "list"]).stdout
    assert not list(labs.glob("*.json"))
    assert lab.session is not None and not lab.session.exists()  # its libvirtd stopped in it


def test_lab_clean_removes_what_a_crashed_nic_guest_run_left(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A manifest as a SIGKILLed run leaves it (this process's own PID counts as gone): `virtbench
    lab clean` removes the
    peer namespace, the session directory (with its private libvirtd, none running here) and
    the manifest."""
    from typer.testing import CliRunner

    from virtbench.cli.root import app
    from virtbench.labs.assess_nic_guest import NicGuestLab, NicGuestParams
    from virtbench.labs.lab_contract import Manifest, lab_root
    from virtbench.labs.net.netops import add_namespace

    labs = tmp_path / "labs"
    monkeypatch.setenv("VIRTBENCH_LAB_ROOT", str(labs))
    local = LocalTarget()
    lab = NicGuestLab(NicGuestParams(), tmp_path / "work", local)
    manifest = Manifest(lab_root() / f"vbnet-nicg-{lab.token}.json", lab.name)
    session = tmp_path / "vbnicg-session"
    (session / "d").mkdir(parents=True)
    manifest.add("guest", {"session": str(session), "domain": lab.domain})
    add_namespace(local, manifest, lab.peer_ns)
    result = CliRunner().invoke(app, ["lab", "clean"])
    assert result.exit_code == 0, result.output
    assert f"namespace {lab.peer_ns}" in result.output and lab.domain in result.output
    assert lab.peer_ns not in local.run(["ip", "netns", "list"]).stdout
    assert not session.exists() and not list(labs.glob("*.json"))
