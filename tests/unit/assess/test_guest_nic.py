"""The NIC what-ifs in a scratch guest: which findings ask for which NICs, the experiment's
variants and workloads (one knob each), the cost, and a guest-measured effect attached to its
findings (the lab test runs it in a real guest: tests/lab/assess/test_assess_guest_nic.py;
the lab's refusals: tests/unit/labs/test_assess_nic_guest.py; the probe's command:
test_probe_workloads.py)."""

from __future__ import annotations

import time
from pathlib import Path

from virtbench.assess.assessment import _attach
from virtbench.assess.findings import Finding, Gain
from virtbench.assess.guest_nic import (
    NIC_WORKLOADS,
    GuestNicWhatIf,
    guest_nic_for,
    nic_measure,
)
from virtbench.assess.measure import AS_FOUND, RECOMMENDED, Effect
from virtbench.spec.loader import parse_experiment


def _finding(rule: str, measure: str | None, **extra: object) -> Finding:
    return Finding(rule=rule, title=rule, severity="medium", evidence=[], source="doc",
                   gain=Gain("cited", f"{rule} helps", source="a guide"), measure=measure,
                   extra=dict(extra))


MODEL = _finding("nic-model", "nic-offloads", model="rtl8139")
QUEUES = _finding("nic-multiqueue", "nic-multiqueue", vcpus=8)


def test_each_nic_finding_asks_for_its_nics_and_nothing_else_does() -> None:
    assert nic_measure(MODEL) == "nic-model"
    assert nic_measure(_finding("guest-nic-model", "nic-offloads")) == "nic-model"
    assert nic_measure(QUEUES) == "nic-multiqueue"
    assert guest_nic_for([_finding("disk-cache", "disk-cache", cache="writethrough")]) is None
    both = guest_nic_for([MODEL, QUEUES], host_cpus=2)
    assert both is not None and both.measures == ("nic-model", "nic-multiqueue")
    # the domain's 8 vCPUs, at most this host's 2 (TCG: a host thread per vCPU)
    assert both.queues == 2 and both.nics() == ["virtio", "e1000e", "virtio:2"]
    model_only = guest_nic_for([MODEL], host_cpus=2)
    assert model_only is not None and model_only.nics() == ["virtio", "e1000e"]
    assert model_only.lab_params()["vcpus"] == 1
    # one host CPU: no second queue to spread over, so no multiqueue what-if at all
    assert guest_nic_for([QUEUES], host_cpus=1) is None
    capped = guest_nic_for([QUEUES], host_cpus=64)
    assert capped is not None and capped.queues == 4


def test_the_experiment_varies_one_knob_per_workload_in_one_lab() -> None:
    whatif = GuestNicWhatIf("rtl8139", 2)
    experiment = parse_experiment(whatif.experiment_text(), "<test>")
    assert experiment.lab is not None and experiment.lab.kind == "assess-nic-guest"
    assert experiment.lab.params["nics"] == ["virtio", "e1000e", "virtio:2"]
    knobs = {v.name: v.knobs for v in experiment.all_variants()}
    assert knobs == {AS_FOUND: {"nic_model": "e1000e", "nic_queues": 1},
                     RECOMMENDED: {"nic_model": "virtio", "nic_queues": 2}}
    assert [w.workload_id for w in experiment.workloads] == list(NIC_WORKLOADS.values())
    assert [w.params["vary"] for w in experiment.workloads] == ["nic_model", "nic_queues"]
    # what the evidence says: the stand-in for the model found, the emulation
    assert "e1000e standing in for the rtl8139 found" in whatif.what("nic-model")
    assert "TCG" in whatif.what("nic-model")
    assert "ethtool -L combined 2" in whatif.what("nic-multiqueue")
    assert "standing in" not in GuestNicWhatIf("e1000e", 0).what("nic-model")


def test_an_image_not_built_yet_and_each_what_if_cost_time(tmp_path: Path) -> None:
    built = GuestNicWhatIf("e1000e", 0, str(tmp_path))
    missing = GuestNicWhatIf("e1000e", 0, str(tmp_path / "none"))
    both = GuestNicWhatIf("e1000e", 2, str(tmp_path))
    assert missing.cost_s() > built.cost_s() > 0
    assert both.cost_s() > built.cost_s()


def test_a_nic_what_if_measured_in_a_guest_says_so_and_keeps_what_stays_cited() -> None:
    model, queues = (_finding("nic-model", "nic-offloads", model="e1000e"),
                     _finding("nic-multiqueue", "nic-multiqueue", vcpus=2))
    guest_model = _finding("guest-nic-model", "nic-offloads", model="e1000e")
    effects = [Effect(NIC_WORKLOADS["nic-model"], "throughput_mbps", 1.8, 1.5, 2.1, 3,
                      "nic-model", "iperf3 inside a scratch guest", "the NIC was not touched"),
               Effect(NIC_WORKLOADS["nic-multiqueue"], "throughput_mbps", 1.05, 0.9, 1.2, 3,
                      "nic-multiqueue", "iperf3 inside a scratch guest (2 streams)",
                      "the NIC was not touched")]
    _attach([model, queues, guest_model], effects)
    assert model.gain is not None and model.gain.speedup == 1.8
    assert guest_model.gain is not None and guest_model.gain.speedup == 1.8
    assert queues.gain is not None and queues.gain.speedup == 1.05
    for finding in (model, queues, guest_model):
        assert finding.gain is not None and finding.gain.basis == "measured"
        sources = {e.source: e.value for e in finding.evidence}
        assert sources["measured (this run, in a guest)"].startswith("iperf3 inside a scratch")
        assert "[a guide]" in sources["cited (not measured)"]
    # the veth offload probe's effect does not stand in for the guest's NIC what-if
    other = _finding("nic-multiqueue", "nic-multiqueue", vcpus=2)
    _attach([other], [Effect("net.offloads", "throughput_mbps", 9.0, 8.0, 10.0, 8,
                             "nic-offloads", "veth", "")])
    assert other.gain is not None and other.gain.basis == "cited"


def test_a_guest_what_if_that_cannot_run_says_why_and_what_is_used_instead() -> None:
    from virtbench.assess.assessment import Assessment, _guest_run
    from virtbench.model import VirtbenchError

    def never() -> tuple[str, list[Effect]]:
        raise AssertionError("no run may start")

    def failing() -> tuple[str, list[Effect]]:
        raise VirtbenchError("lab assess-nic-guest: the guest's sshd did not answer")

    effect = Effect(NIC_WORKLOADS["nic-model"], "throughput_mbps", 2.0, 1.5, 2.5, 3,
                    "nic-model", "iperf3", "")
    started = time.monotonic()
    assessment = Assessment("domain d", budget_s=300)
    assert _guest_run(assessment, "NIC", "the veth probe instead", ["needs root"], 10.0,
                      started, never) == (None, [])
    assert _guest_run(assessment, "NIC", "the veth probe instead", [], 1e6, started,
                      never) == (None, [])
    assert _guest_run(assessment, "NIC", "the veth probe instead", [], 10.0, started,
                      failing) == (None, [])
    assert _guest_run(assessment, "NIC", "cited", [], 10.0, started,
                      lambda: ("run1", [])) == ("run1", [])
    assert _guest_run(assessment, "NIC", "cited", [], 10.0, started,
                      lambda: ("run2", [effect])) == ("run2", [effect])
    first, second, third, fourth, fifth = assessment.notes
    assert first == "NIC what-if not measured in a guest (needs root): the veth probe instead"
    assert second.startswith("NIC what-if not measured in a guest: a scratch guest needs "
                             "about 1000000 s") and "give a longer --budget" in second
    assert "sshd did not answer" in third and third.endswith("the veth probe instead")
    assert "measured nothing (run run1" in fourth
    assert fifth.startswith("NIC what-if measured in a scratch guest: run run2")
    assert assessment.effects == [effect]
