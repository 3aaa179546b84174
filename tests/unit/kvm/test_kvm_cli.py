"""`virtbench kvm ...` commands against libvirt's test driver."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("libvirt")

from typer.testing import CliRunner

from virtbench.kvm.cli import app

runner = CliRunner()
URI = "test:///default"


@pytest.fixture(autouse=True)
def state_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VIRTBENCH_STATE_DIR", str(tmp_path))


def test_inventory_resolves_guest_and_lists_missing_flags() -> None:
    result = runner.invoke(app, ["inventory", "-c", URI, "--domain", "test"])
    assert result.exit_code == 0, result.output
    assert "guest test: mode=default" in result.output
    assert "QEMU's default qemu64" in result.output
    assert "migration:" in result.output


def test_inventory_json() -> None:
    import json

    result = runner.invoke(app, ["inventory", "-c", URI, "--domain", "test", "--json"])
    data = json.loads(result.output)
    assert "sse2" in data["guest"]["flags"]
    assert all(m["flag"] not in data["guest"]["flags"] for m in data["guest"]["missing"])


def test_tune_dry_run_prints_diff_and_cloud_settings() -> None:
    cpuinfo = Path("/proc/cpuinfo").read_text()
    if " sse2 " not in cpuinfo:
        pytest.skip("no x86 host")
    result = runner.invoke(app, ["tune", "test", "-c", URI, "--require", "sse2"])
    assert result.exit_code == 0, result.output
    assert "+    <feature policy='require' name='sse2'/>" in result.output
    assert "guest.cpu.features=sse2" in result.output
    assert "cpu_model_extra_flags = sse2" in result.output
    assert "dry run: nothing changed" in result.output


def test_tune_refuses_unknown_flag_and_missing_access() -> None:
    bad = runner.invoke(app, ["tune", "test", "-c", URI, "--require", "sse42x"])
    assert bad.exit_code == 2 and "unknown CPU flag(s): sse42x" in bad.output
    no_access = runner.invoke(app, ["tune", "test", "-c", URI, "--require", "sse2", "--apply"])
    assert no_access.exit_code == 2 and "cannot verify inside the guest" in no_access.output


def test_tune_apply_then_rollback() -> None:
    import libvirt

    applied = runner.invoke(app, ["tune", "test", "-c", URI, "--require", "sse2", "--apply",
                                  "--no-verify", "--shutdown-timeout", "0"])
    assert applied.exit_code == 0, applied.output
    assert "virtbench kvm rollback test" in applied.output
    listed = runner.invoke(app, ["rollback", "--list"])
    assert "test  test:///default" in listed.output
    back = runner.invoke(app, ["rollback", "test", "-c", URI, "--shutdown-timeout", "0"])
    assert back.exit_code == 0, back.output
    assert "back to its original" in back.output
    xml = libvirt.open(URI).lookupByName("test").XMLDesc(0)
    assert "<cpu" not in xml
    again = runner.invoke(app, ["rollback", "test", "-c", URI])
    assert again.exit_code == 2 and "no saved original" in again.output
