"""`virtbench hosts check` and `hosts playbook` against real SSH hosts (and Debian's ansible)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from sshhosts import SshFleet, start_fleet

pytestmark = [pytest.mark.lab, pytest.mark.slow, pytest.mark.timeout(900)]

REPO = Path(__file__).resolve().parents[3]
VIRTBENCH = str(REPO / ".venv" / "bin" / "virtbench")
EXPERIMENT = """\
name: fleet-x265
baseline: default
variants:
  - {name: default, knobs: {}}
workloads:
  - {name: media.x265, params: {clip: quick, duration_s: 1}}
repetitions: 2
"""
# h3 has a shell and Python but no ffmpeg (sshd's SetEnv PATH)
BASICS = ["sh", "env", "timeout", "true", "cat", "uname", "python3", "lscpu", "ls", "mkdir", "rm",
          "chmod", "sleep", "echo", "id"]


@pytest.fixture
def hosts_one_lacking_ffmpeg() -> Iterator[SshFleet]:
    fleet = start_fleet(3, only_binaries={"h3": BASICS})
    try:
        yield fleet
    finally:
        fleet.stop()


def _files(tmp_path: Path, fleet: SshFleet) -> tuple[Path, Path]:
    experiment, inventory = tmp_path / "exp.yaml", tmp_path / "inventory.yaml"
    experiment.write_text(EXPERIMENT)
    # ansible reads its own ssh options; virtbench reads virtbench_known_hosts
    inventory.write_text(fleet.inventory_yaml().replace(
        "  hosts:\n", f"    ansible_ssh_common_args: '-o UserKnownHostsFile={fleet.known_hosts}"
                      " -o StrictHostKeyChecking=yes'\n  hosts:\n", 1))
    return experiment, inventory


def test_hosts_check_reports_missing_tools_with_package_and_differing_facts(
        tmp_path: Path, hosts_one_lacking_ffmpeg: SshFleet) -> None:
    fleet = hosts_one_lacking_ffmpeg
    experiment, inventory = _files(tmp_path, fleet)
    fleet.hosts[1].kill_sshd()  # h2 is down
    result = subprocess.run([VIRTBENCH, "hosts", "check", str(inventory), str(experiment),
                             "--netns", fleet.controller, "--json"],
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 1, result.stderr
    report = json.loads(result.stdout)
    by_host = {h["host"]: h for h in report["hosts"]}
    assert by_host["h1"]["ready"] is True and by_host["h1"]["problems"] == []
    assert by_host["h2"]["reachable"] is False
    assert "unreachable" in by_host["h2"]["problems"][0]
    assert "Connection refused" in by_host["h2"]["problems"][0]
    assert by_host["h3"]["reachable"] is True and by_host["h3"]["ready"] is False
    assert any("'ffmpeg' not found" in p and "apt-get install ffmpeg" in p
               for p in by_host["h3"]["problems"])
    # h1 has ffmpeg, h3 has not: the tool versions differ, so the hosts are not comparable
    assert "tools.ffmpeg" in report["differing_facts"]
    assert report["differing_facts"]["tools.ffmpeg"]["h3"] is None
    assert set(report["differing_facts"]["tools.ffmpeg"]) == {"h1", "h3"}


@pytest.mark.skipif(shutil.which("ansible-playbook") is None,
                    reason="needs Debian's ansible (scripts/install.sh --dev)")
def test_playbook_runs_with_ansible_and_catches_the_host_missing_a_tool(
        tmp_path: Path, hosts_one_lacking_ffmpeg: SshFleet) -> None:
    fleet = hosts_one_lacking_ffmpeg
    experiment, inventory = _files(tmp_path, fleet)
    playbook = tmp_path / "ready.yaml"
    subprocess.run([VIRTBENCH, "hosts", "playbook", str(experiment), "-o", str(playbook)],
                   check=True, timeout=120)
    # ansible-core refuses to start unless the locale's encoding is UTF-8 (CI may run in "C")
    env = {**os.environ, "ANSIBLE_HOME": str(tmp_path / "ansible"),
           "ANSIBLE_LOCAL_TEMP": str(tmp_path / "ansible" / "tmp"), "ANSIBLE_NOCOLOR": "1",
           "LC_ALL": "C.UTF-8"}
    result = subprocess.run(["ip", "netns", "exec", fleet.controller, "ansible-playbook", "-i",
                             str(inventory), str(playbook)], capture_output=True, text=True,
                            timeout=600, env=env)
    assert "PLAY RECAP" in result.stdout, (
        f"ansible-playbook exited {result.returncode} without a recap:\n"
        f"{result.stdout}\n{result.stderr}")
    recap = result.stdout[result.stdout.index("PLAY RECAP"):]
    # h1 and h2 have everything (nothing to install: no change); h3's PATH lacks ffmpeg, so
    # apt-get (not on its PATH either) fails — the playbook notices.
    assert result.returncode != 0
    for host in ("h1", "h2"):
        line = next(ln for ln in recap.splitlines() if ln.startswith(host))
        assert "ok=2" in line and "changed=0" in line and "failed=0" in line, recap
    line = next(ln for ln in recap.splitlines() if ln.startswith("h3"))
    assert "failed=1" in line, recap
