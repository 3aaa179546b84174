"""The what-if plan, the budget parser, and `virtbench assess --domain` on libvirt's test
driver with no time to measure (findings, exact changes, JSON, ranking)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from virtbench.assess.cli import parse_budget
from virtbench.assess.engine import measurement_budget
from virtbench.assess.measure import WITH, WITHOUT, plan_whatif
from virtbench.cli import app
from virtbench.model import VirtbenchError
from virtbench.spec.loader import parse_experiment


def test_budget_durations() -> None:
    assert parse_budget("90") == 90
    assert parse_budget("90s") == 90
    assert parse_budget("2m") == 120
    assert parse_budget("1.5h") == 5400
    with pytest.raises(VirtbenchError, match="like 90s, 5m or 1h"):
        parse_budget("soon")
    assert measurement_budget(120) < 120
    assert measurement_budget(5) == 0


def test_machine_whatif_is_qemu64_against_the_unmasked_host() -> None:
    whatif = plan_whatif([], None)
    assert whatif is not None
    assert whatif.without == () and whatif.with_ is None
    names = [w["name"] for w in whatif.workloads]
    assert {"cpu.crc32c", "cpu.aes"} <= set(names)
    experiment = parse_experiment(whatif.experiment_text(42), "<test>")
    assert experiment.baseline == WITHOUT
    knobs = {v.name: v.knobs for v in experiment.all_variants()}
    assert knobs == {WITHOUT: {"cpu_features": []}, WITH: {"cpu_features": "host"}}


def test_domain_whatif_adds_only_the_proposed_flags() -> None:
    whatif = plan_whatif(["sse2", "sse4.2", "ssse3", "sse4.1"], ["aes", "pclmuldq"])
    assert whatif is not None
    assert whatif.without == ("ssse3", "sse4.1", "sse4.2")
    assert whatif.with_ == ("ssse3", "sse4.1", "sse4.2", "aes", "pclmulqdq")
    assert [w["name"] for w in whatif.workloads] == ["cpu.aes"]  # nothing else uses aes
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
