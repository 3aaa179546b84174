"""The "after" facts and later runs reuse a tool's version while its binary is the same file,
and the Python packages while the interpreter and its path are the same (real commands, run
by this machine's own target, which probes binaries in-process as an SSH host's agent does)."""

from __future__ import annotations

import json
import shutil
from collections.abc import Sequence
from pathlib import Path

import pytest

from virtbench.facts import collect_facts
from virtbench.facts.collect import TOOL_VERSION_COMMANDS
from virtbench.facts.python_packages import PROBE, parse_probe
from virtbench.facts.version_cache import load_boot, load_versions, save_versions
from virtbench.targets.local import LocalTarget
from virtbench.targets.target_contract import ProcResult, Target


class RecordingLocal(LocalTarget):
    """This machine; remembers every command it ran."""

    def __init__(self) -> None:
        super().__init__()
        self.ran: list[list[str]] = []

    def run_batch(self, argvs: Sequence[Sequence[str]], *,
                  timeout: float | None = None) -> list[ProcResult]:
        self.ran += [list(a) for a in argvs]
        return super().run_batch(argvs, timeout=timeout)


def test_versions_are_asked_again_only_for_changed_binaries(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    irtt = tmp_path / "irtt"  # `irtt version`: a copy of echo prints "version"
    shutil.copy2("/bin/echo", irtt)
    (tmp_path / "iperf3").write_text("#!/bin/sh\necho iperf 3.0-script\n")  # a script (shim)
    (tmp_path / "iperf3").chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}:/usr/bin:/bin")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    host = RecordingLocal()

    def asked(tool: str) -> int:
        return sum(1 for argv in host.ran if argv[0] == tool)

    assert collect_facts(host)["tools"]["irtt"] == "version"
    assert (asked("irtt"), asked("iperf3")) == (1, 1)
    again = collect_facts(host)["tools"]
    assert again["irtt"] == "version" and again["iperf3"] == "iperf 3.0-script"
    assert (asked("irtt"), asked("iperf3")) == (1, 2)  # the same file; a script every time
    irtt.unlink()  # "upgraded": another file (`dirname version` prints ".")
    shutil.copy2(shutil.which("dirname") or "/usr/bin/dirname", irtt)
    assert collect_facts(host)["tools"]["irtt"] == "."
    assert asked("irtt") == 2
    # a later run's target of the same host: the versions it reported, from the cache
    later = RecordingLocal()
    assert collect_facts(later)["tools"] == again | {"irtt": "."}
    assert [argv[0] for argv in later.ran if argv[0] in ("irtt", "iperf3")] == ["iperf3"]


def test_the_cache_is_per_host_and_survives_a_broken_file(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    save_versions("ssh:a", {"irtt": ("/usr/bin/irtt\n1 2 3 4 5", "irtt 0.9")})
    save_versions("ssh:b", {"irtt": ("/usr/bin/irtt\n1 2 3 4 6", "irtt 1.0")})
    assert load_versions("ssh:a") == {"irtt": ("/usr/bin/irtt\n1 2 3 4 5", "irtt 0.9")}
    assert load_versions("ssh:b")["irtt"][1] == "irtt 1.0" and load_versions("ssh:c") == {}
    (tmp_path / "virtbench" / "tool-versions.json").write_text("{not json")
    assert load_versions("ssh:a") == {}  # asked again, never a crash
    save_versions("ssh:a", {})
    assert load_versions("ssh:a") == {}


def test_packages_are_asked_again_only_when_the_python_path_changes(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    extra = tmp_path / "extra"  # a directory on the probe's path, as site-packages is
    extra.mkdir()
    monkeypatch.setenv("PYTHONPATH", str(extra))

    def probes(host: RecordingLocal) -> int:
        return sum(1 for argv in host.ran if PROBE in argv)

    first = RecordingLocal()
    packages = collect_facts(first)["python_packages"]
    assert probes(first) == 1
    later = RecordingLocal()
    assert collect_facts(later)["python_packages"] == packages and probes(later) == 0
    (extra / "vb_module.py").write_text("")  # "pip install": the directory changed
    changed = RecordingLocal()
    assert collect_facts(changed)["python_packages"] == packages
    assert probes(changed) == 1


def test_the_probe_states_identities_as_gather_does() -> None:
    local = LocalTarget()
    result = local.run([*local.python(), "-c", PROBE])
    answer = parse_probe(result.stdout)
    assert answer is not None
    packages, identity = answer
    assert set(packages) <= {"crc32c", "cryptography"} and len(identity) >= 2
    gathered = local.gather([], [], [], paths=list(identity))
    assert gathered.stats == list(identity.values())
    assert parse_probe("") is None and parse_probe("not json") is None


def test_this_machine_gathers_in_process_what_the_commands_would_print(tmp_path: Path) -> None:
    local = LocalTarget()
    files, binaries = ["/etc/os-release", str(tmp_path / "absent")], ["sh", "vb-no-such-tool"]
    paths = [str(tmp_path), str(tmp_path / "absent")]
    assert local.cheap_probes and not local.batches
    in_process = local.gather(files, binaries, [["true"]], paths=paths)
    as_commands = Target.gather(local, files, binaries, [["true"]], paths=paths)
    assert in_process.files == as_commands.files and in_process.files[1] is None
    assert in_process.binaries == as_commands.binaries and in_process.binaries[1] is None
    assert in_process.stats == as_commands.stats and in_process.stats[1] is None
    assert [r.returncode for r in in_process.results] == [0]


def test_the_boots_commands_are_asked_again_only_after_a_reboot(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))

    def asked(host: RecordingLocal) -> list[str]:
        return [argv[0] for argv in host.ran if argv[0] in ("lscpu", "systemd-detect-virt",
                                                            "uname")]

    first = RecordingLocal()
    facts = collect_facts(first)
    assert asked(first) == ["lscpu", "systemd-detect-virt", "uname"] and facts["kernel"]
    later = RecordingLocal()
    again = collect_facts(later)
    assert asked(later) == []
    assert (again["kernel"], again["hypervisor"]) == (facts["kernel"], facts["hypervisor"])
    cache = tmp_path / "virtbench" / "tool-versions.json"  # as if the host had rebooted
    cache.write_text(cache.read_text().replace(load_boot("local")["boot_id"], "another-boot"))
    rebooted = RecordingLocal()
    assert collect_facts(rebooted)["kernel"] == facts["kernel"]
    assert asked(rebooted) == ["lscpu", "systemd-detect-virt", "uname"]
    assert load_boot("local")["boot_id"] != "another-boot"


def test_a_namespace_of_this_machine_shares_its_remembered_facts(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A lab's namespace or cgroup target gets a new name every run: its facts are this
    machine's, remembered once under "local", not once more per name."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))

    class InLab(RecordingLocal):
        def __init__(self, name: str) -> None:
            super().__init__()
            self.name = name

    first, later = InLab("netns:vb-run1"), InLab("netns:vb-run2+cgroup:vb-t0")
    assert collect_facts(first)["target"] == "netns:vb-run1"
    facts = collect_facts(later)
    assert facts["target"] == "netns:vb-run2+cgroup:vb-t0" and facts["tools"]
    asked = [argv[0] for argv in later.ran if argv in TOOL_VERSION_COMMANDS.values()]
    assert set(asked) <= {"python3"}  # (pyenv's python3 is a script: asked every time)
    hosts = json.loads((tmp_path / "virtbench" / "tool-versions.json").read_text())
    assert "netns:vb-run1" not in json.dumps(hosts) and "local" in json.dumps(hosts)
