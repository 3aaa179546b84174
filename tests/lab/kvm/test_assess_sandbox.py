"""`virtbench kvm sandbox` + `virtbench assess --domain` end to end: the sandbox guest (Debian,
QEMU TCG, custom qemu64, private libvirtd) is found lacking the flags; the `kvm tune` command
the assessment prints, run with --apply, makes the guest see them; rollback restarts it with
the original CPU; the sandbox goes away completely."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import libvirt
import pytest
from kvm_debian_guest import CACHE, sandbox_ssh, wait_answering
from typer.testing import CliRunner

from virtbench.cli.root import app
from virtbench.kvm.domxml import read_cpu
from virtbench.kvm.hostcpu import cpuinfo_flags
from virtbench.kvm.sandbox import Sandbox, SandboxInfo

pytestmark = [pytest.mark.lab, pytest.mark.timeout(1500)]


def _guest_flags(info: SandboxInfo, wait_s: float = 240.0) -> frozenset[str]:
    """The guest's flags, waiting for its sshd (a rollback restarts the guest)."""
    wait_answering(info, wait_s)
    return cpuinfo_flags(sandbox_ssh(info).run(["cat", "/proc/cpuinfo"], timeout=60).stdout)


def test_assess_domain_recommends_flags_and_its_tune_command_works(
        debian_sandbox: tuple[Sandbox, SandboxInfo], tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    # The session's sandbox guest (conftest.py), shared with test_kvm_workloads_in_guest.py.
    box, info = debian_sandbox
    monkeypatch.setenv("VIRTBENCH_STATE_DIR", str(tmp_path / "state"))
    assert box.info() == info and info.virt_type == "qemu"
    assert "aes" not in _guest_flags(info)
    # A guest-side misconfiguration for the in-guest rules to find: the emulated HPET clock.
    clock = "/sys/devices/system/clocksource/clocksource0/current_clocksource"
    sandbox_ssh(info).run(["tee", clock], input="hpet\n", timeout=60)
    cli = CliRunner()
    assessed = cli.invoke(app, ["assess", "--domain", info.domain, "--connect", info.uri,
                                "--budget", "0", "--json", "--store", str(tmp_path / "a.db"),
                                "--ssh", info.ssh, "--known-hosts", info.known_hosts,
                                "--identity", info.identity])
    assert assessed.exit_code == 0, assessed.output
    findings = json.loads(assessed.output)["findings"]
    clock_finding = next(f for f in findings if f["rule"] == "guest-clocksource")
    assert clock_finding["title"] == "guest: guest clocksource hpet"
    finding = next(f for f in findings if f["rule"] == "cpu-flags")
    assert finding["severity"] == "high"
    command = finding["changes"][0]["text"]
    assert command.startswith(f"virtbench kvm tune {info.domain} --require ")
    required = command.split("--require ")[1].split()[0].split(",")
    assert {"aes", "sse4.2"} <= set(required)

    argv = [
        *shlex.split(command)[1:], "--apply", "--ssh", info.ssh, "--known-hosts",
        info.known_hosts, "--identity", info.identity, "--shutdown-timeout", "0",
        "--boot-timeout", "240"]
    applied = cli.invoke(app, argv)
    assert applied.exit_code == 0, applied.output
    assert "verified inside the guest" in applied.output
    assert {"aes", "sse4.2"} <= _guest_flags(info)

    back = cli.invoke(app, ["kvm", "rollback", info.domain, "--connect", info.uri,
                            "--shutdown-timeout", "0"])
    assert back.exit_code == 0, back.output
    # The restarted guest runs the original CPU again. Read from libvirt, not from inside:
    # a third TCG boot to sshd costs 20 s of CPU, and test_kvm_guest_e2e's
    # test_tune_verify_rollback_in_real_guest checks a rolled-back guest's own flags.
    conn = libvirt.open(info.uri)
    try:
        live = conn.lookupByName(info.domain)
        assert live.isActive()
        assert {"aes", "sse4.2"}.isdisjoint(read_cpu(live.XMLDesc(0)).required())
    finally:
        conn.close()


def test_sandbox_down_leaves_nothing(tmp_path: Path) -> None:
    box = Sandbox(tmp_path / "nothing", image_cache=CACHE)
    assert box.info() is None
    assert box.down() is False  # nothing ran: nothing to stop, no error
