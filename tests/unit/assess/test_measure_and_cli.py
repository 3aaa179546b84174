"""The what-if plan, the budget parser, and `virtbench assess --domain` on libvirt's test
driver with no time to measure (findings, exact changes, JSON, ranking)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from virtbench.assess.assessment import _attach, measurement_budget
from virtbench.assess.cli import parse_budget
from virtbench.assess.findings import Finding, Gain
from virtbench.assess.guest_disk import GUEST_WORKLOAD, guest_disk_for
from virtbench.assess.measure import (
    AS_FOUND,
    RECOMMENDED,
    WITHOUT_FLAGS,
    Effect,
    Plan,
    plan_whatif,
)
from virtbench.assess.probes import probe_problems, probes_for
from virtbench.cli.root import app
from virtbench.model import VirtbenchError
from virtbench.spec.loader import parse_experiment


def test_budget_durations() -> None:
    assert parse_budget("90") == 90
    assert parse_budget("90s") == 90
    assert parse_budget("2m") == 120
    assert parse_budget("1.5h") == 5400
    assert parse_budget("0") == 0  # the checks alone, nothing measured (docs/assess.md)
    assert parse_budget("720h") == 30 * 86400
    with pytest.raises(VirtbenchError, match="like 90s, 5m or 1h"):
        parse_budget("soon")
    assert measurement_budget(120) < 120
    assert measurement_budget(5) == 0
    # What the checks spent and the round that may start at the end come off the budget.
    assert measurement_budget(120, spent_s=10, round_s=5) == measurement_budget(120) - 15


def test_machine_whatif_is_qemu64_against_the_unmasked_host() -> None:
    whatif = plan_whatif([], None)
    assert whatif is not None
    assert whatif.without == () and whatif.with_ is None
    names = [w["name"] for w in whatif.workloads]
    assert {"cpu.crc32c", "cpu.aes"} <= set(names)
    experiment = parse_experiment(Plan(whatif).experiment_text(), "<test>")
    # The machine has the flags: as found is the unmasked host; the baseline is it masked.
    assert experiment.baseline == WITHOUT_FLAGS
    assert experiment.lab.kind == "host"  # no probe: no scratch loop device or namespaces
    knobs = {v.name: v.knobs for v in experiment.all_variants()}
    assert knobs == {WITHOUT_FLAGS: {"cpu_features": []}, AS_FOUND: {"cpu_features": "host"}}


def test_domain_whatif_adds_only_the_proposed_flags() -> None:
    whatif = plan_whatif(["sse2", "sse4.2", "ssse3", "sse4.1"], ["aes", "pclmuldq"])
    assert whatif is not None
    assert whatif.without == ("ssse3", "sse4.1", "sse4.2")
    assert whatif.with_ == ("ssse3", "sse4.1", "sse4.2", "aes", "pclmulqdq")
    assert [w["name"] for w in whatif.workloads] == ["cpu.aes"]  # nothing else uses aes
    # The guest as found lacks the flags: it is the baseline, the proposed tune the other.
    assert not whatif.with_is_as_found
    assert Plan(whatif).variant_names() == (AS_FOUND, RECOMMENDED)
    assert plan_whatif(["aes"], ["popcnt"]) is None  # no workload of ours uses popcnt


def test_a_short_budget_leaves_the_slow_x265_out_and_says_so() -> None:
    long = plan_whatif([], None, budget_s=600)
    short = plan_whatif([], None, budget_s=60)
    assert long is not None and short is not None
    if "media.x265" in [w["name"] for w in long.workloads]:  # ffmpeg installed
        assert "media.x265" not in [w["name"] for w in short.workloads]
        assert any("--budget 4m" in s for s in short.skipped)


def test_assess_domain_on_the_test_driver(tmp_path: Path) -> None:
    pytest.importorskip("libvirt")
    if " aes " not in Path("/proc/cpuinfo").read_text():
        pytest.skip("the host has no AES-NI to offer")
    result = CliRunner().invoke(app, ["assess", "--domain", "test", "--connect",
                                      "test:///default", "--budget", "0", "--json",
                                      "--store", str(tmp_path / "a.db")])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["run_id"] is None
    assert any("too small to measure" in n for n in data["notes"])
    rules = [f["rule"] for f in data["findings"]]
    # The test domain: no <cpu> (qemu64), 2 vCPUs unpinned, 2 host NUMA cells, a balloon.
    assert {"cpu-flags", "vcpu-pinning", "numa-placement", "hugepages", "balloon"} <= set(rules)
    assert rules.index("cpu-flags") < rules.index("balloon")  # high before info
    cpu = data["findings"][rules.index("cpu-flags")]
    kinds = {c["kind"]: c["text"] for c in cpu["changes"]}
    assert "+    <feature policy='require' name='aes'/>" in kinds["libvirt-xml"]
    assert "guest.cpu.features=" in kinds["cloudstack"]
    assert "cpu_model_extra_flags" in kinds["openstack"]
    assert cpu["gain"]["basis"] == "cited"
    assert "host-passthrough" in cpu["cost"]


def test_assess_text_output(tmp_path: Path) -> None:
    pytest.importorskip("libvirt")
    result = CliRunner().invoke(app, ["assess", "--domain", "test", "--connect",
                                      "test:///default", "--budget", "0",
                                      "--store", str(tmp_path / "a.db")])
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("assessment of domain test on test:///default")
    assert "assessing domain test within 0 s" in result.stderr
    assert "change (virtbench): virtbench kvm tune test --require" in result.output
    assert "[INFO] memory balloon" in result.output


def _finding(rule: str, measure: str, **extra: str) -> Finding:
    return Finding(rule=rule, title=rule, severity="medium", evidence=[], source="doc",
                   gain=Gain("cited", f"{rule} helps", source="a guide"), measure=measure,
                   extra=dict(extra))


def test_probes_vary_one_knob_each_and_share_the_two_variants() -> None:
    findings = [_finding("disk-cache", "disk-cache", cache="writethrough"),
                _finding("io-scheduler", "disk-scheduler", scheduler="bfq"),
                _finding("io-scheduler", "disk-scheduler", scheduler="bfq"),  # host and guest
                _finding("nic-model", "nic-offloads")]
    probes = probes_for(findings)
    assert [p.id for p in probes] == ["disk.cache.writethrough", "disk.scheduler.bfq",
                                      "net.offloads"]
    plan = Plan(plan_whatif([], None, 60), tuple(probes))
    experiment = parse_experiment(plan.experiment_text(), "<test>")
    assert experiment.lab.kind == "assess-probes"
    assert experiment.lab.params == {"disk": True, "network": True}
    knobs = {v.name: v.knobs for v in experiment.all_variants()}
    # The CPU masked beside the probes as found; the CPU as found beside their changes.
    assert experiment.baseline == WITHOUT_FLAGS
    assert knobs[WITHOUT_FLAGS] == {"cpu_features": [], "disk_cache": "writethrough",
                                    "io_scheduler": "bfq", "nic_offloads": "off"}
    assert knobs[RECOMMENDED] == {"cpu_features": "host", "disk_cache": "none",
                                  "io_scheduler": "none", "nic_offloads": "on"}
    assert Plan(None, tuple(probes)).variant_names() == (AS_FOUND, RECOMMENDED)
    ids = [w.workload_id for w in experiment.workloads]
    assert ids[-3:] == ["disk.cache.writethrough", "disk.scheduler.bfq", "net.offloads"]
    assert plan.min_cost_s() > Plan(plan.cpu).min_cost_s()


def test_a_probe_that_cannot_run_here_names_why() -> None:
    probe = probes_for([_finding("nic-model", "nic-offloads")])[0]
    assert probe_problems(probe, is_root=False)[0].startswith("needs root")


def test_a_measured_probe_replaces_the_cited_gain_and_keeps_what_stays_cited() -> None:
    finding = _finding("disk-cache", "disk-cache", cache="writethrough")
    other = _finding("nic-model", "nic-offloads")
    probe = probes_for([finding])[0]
    effect = Effect(probe.id, "iops", 3.0, 2.5, 3.5, 8, probe.measure,
                    probe.measures + "; device /dev/loop7", probe.not_measured)
    _attach([finding, other], [effect])
    assert finding.gain is not None and finding.gain.basis == "measured"
    assert finding.gain.speedup == 3.0
    sources = {e.source: e.value for e in finding.evidence}
    assert "O_DIRECT" in sources["measured (this run, on a loop device)"]
    assert "/dev/loop7" in sources["measured (this run, on a loop device)"]
    assert "disk-cache helps [a guide]" in sources["cited (not measured)"]
    assert other.gain is not None and other.gain.basis == "cited"  # no effect of its own


def test_the_disk_what_if_in_a_guest_sets_the_disk_as_found_against_none_native() -> None:
    whatif = guest_disk_for([_finding("disk-cache", "disk-cache", cache="writethrough",
                                      io="native"),
                             _finding("disk-io", "disk-io", cache="none", io="threads")])
    assert whatif is not None
    # writethrough cannot take io=native (it needs O_DIRECT): QEMU's thread pool, as found
    assert whatif.as_found == {"cache": "writethrough", "io": "threads"}
    assert whatif.measures == ("disk-cache", "disk-io")
    experiment = parse_experiment(whatif.experiment_text(), "<test>")
    assert experiment.lab is not None and experiment.lab.kind == "guest"
    knobs = {v.name: v.knobs for v in experiment.all_variants()}
    assert knobs == {AS_FOUND: {"cache": "writethrough", "io": "threads"},
                     RECOMMENDED: {"cache": "none", "io": "native"}}
    assert [w.workload_id for w in experiment.workloads] == [GUEST_WORKLOAD]
    only_io = guest_disk_for([_finding("disk-io", "disk-io", cache="directsync", io="threads")])
    assert only_io is not None and only_io.as_found == {"cache": "directsync", "io": "threads"}
    assert guest_disk_for([_finding("nic-model", "nic-offloads")]) is None


def test_a_guest_image_not_built_yet_costs_its_build_too(tmp_path: Path) -> None:
    findings = [_finding("disk-cache", "disk-cache", cache="writethrough")]
    built = guest_disk_for(findings, str(tmp_path))
    missing = guest_disk_for(findings, str(tmp_path / "none"))
    assert built is not None and missing is not None
    assert missing.cost_s() > built.cost_s() > 0


def test_a_what_if_measured_in_a_guest_says_so_and_keeps_what_stays_cited() -> None:
    cache = _finding("disk-cache", "disk-cache", cache="writethrough")
    io = _finding("disk-io", "disk-io", cache="none", io="threads")
    effects = [Effect(GUEST_WORKLOAD, "randwrite_iops", 4.0, 3.0, 5.0, 3, "disk-cache",
                      "fio inside a scratch guest", "the domain's own disk was not touched"),
               Effect(GUEST_WORKLOAD, "randread_iops", 1.2, 1.1, 1.3, 3, "disk-io",
                      "fio inside a scratch guest", "the domain's own disk was not touched")]
    _attach([cache, io], effects)
    assert cache.gain is not None and cache.gain.speedup == 4.0
    assert io.gain is not None and io.gain.speedup == 1.2
    for finding in (cache, io):
        sources = {e.source: e.value for e in finding.evidence}
        assert sources["measured (this run, in a guest)"] == "fio inside a scratch guest"
        assert "[a guide]" in sources["cited (not measured)"]


def test_a_machine_with_the_flags_is_stored_as_found_unmasked(tmp_path: Path) -> None:
    """The run of `assess` on a machine that has the flags: its report must not call the
    masked CPU 'as-found' (it told the reader the machine was 12x too slow as found)."""
    if " sse4_2 " not in Path("/proc/cpuinfo").read_text():
        pytest.skip("this CPU has no SSE4.2 to mask")
    from virtbench.assess.measure import WhatIf, run_plan
    from virtbench.store import Store

    crc: dict[str, object] = {"name": "cpu.crc32c", "params": {"size_mib": 0.25, "loops": 4}}
    plan = Plan(WhatIf((), None, (crc,)))
    store = Store(str(tmp_path / "a.db"))
    try:
        run_id, effects = run_plan(store, plan, budget_s=1.0)
        variants = {name: knobs for name, knobs, _baseline in store.variants(run_id)}
        baseline = [name for name, _k, is_baseline in store.variants(run_id) if is_baseline]
    finally:
        store.close()
    assert variants == {WITHOUT_FLAGS: {"cpu_features": []}, AS_FOUND: {"cpu_features": "host"}}
    assert baseline == [WITHOUT_FLAGS]
    # The speedup is the machine as found over it without the flags (hardware CRC32C wins).
    (effect,) = effects
    assert effect.workload == "cpu.crc32c" and effect.speedup > 1.0
