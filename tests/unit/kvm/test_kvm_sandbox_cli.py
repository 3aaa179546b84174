"""`virtbench kvm sandbox` without a running sandbox: status says so (exit 1), down is a no-op,
and the domain XML it boots is what the assess rules call a qemu64 guest."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from virtbench.kvm.cli import app
from virtbench.kvm.domxml import read_cpu
from virtbench.kvm.sandbox import domain_xml
from virtbench.kvm.sandbox_image import GuestInstance


def test_status_and_down_without_a_sandbox(tmp_path: Path) -> None:
    runner = CliRunner()
    status = runner.invoke(app, ["sandbox", "status", "--dir", str(tmp_path)])
    assert status.exit_code == 1 and "no sandbox running" in status.output
    down = runner.invoke(app, ["sandbox", "down", "--dir", str(tmp_path)])
    assert down.exit_code == 0 and "no sandbox was running" in down.output


def test_the_sandbox_domain_is_custom_qemu64_on_loopback(tmp_path: Path) -> None:
    guest = GuestInstance(tmp_path / "k", tmp_path / "i", 2522, tmp_path / "kh", tmp_path / "id",
                          tmp_path)
    xml = domain_xml("box", guest, tmp_path / "console.log", virt_type="qemu")
    cpu = read_cpu(xml)
    assert (cpu.mode, cpu.model) == ("custom", "qemu64")
    assert "hostfwd=tcp:127.0.0.1:2522-:22" in xml and "restrict=on" in xml
    assert "<domain type='qemu'" in xml
