"""Every host/guest rule, positive and negative, on fake /proc and /sys trees, and all of them
on this machine's real ones."""

from __future__ import annotations

from pathlib import Path

import pytest

from virtbench.assess.rules import run_rules
from virtbench.assess.system_rules import SYSTEM_RULES, SystemView

GOOD_FLAGS = ("fpu sse sse2 ssse3 sse4_1 sse4_2 popcnt aes pclmulqdq avx avx2 sha_ni vaes "
              "hypervisor")
GOOD = {
    "proc/cpuinfo": f"processor\t: 0\nflags\t\t: {GOOD_FLAGS}\n",
    "sys/block/vda/queue/scheduler": "[none] mq-deadline\n",
    "sys/block/vda/queue/rotational": "0\n",
    "sys/block/loop0/queue/scheduler": "[bfq] none\n",  # loop devices are not judged
    "sys/devices/system/cpu/cpu0/cpufreq/scaling_governor": "performance\n",
    "sys/devices/system/cpu/cpufreq/boost": "1\n",
    "sys/kernel/mm/transparent_hugepage/enabled": "always [madvise] never\n",
    "sys/devices/system/clocksource/clocksource0/current_clocksource": "kvm-clock\n",
    "sys/devices/system/clocksource/clocksource0/available_clocksource":
        "kvm-clock tsc acpi_pm\n",
    "sys/class/net/eth0/device/uevent": "DRIVER=virtio_net\nMODALIAS=virtio:d00000001v00001AF4\n",
}
# rule -> (file, misconfigured content)
CASES = {
    "cpu-flags": ("proc/cpuinfo", "processor\t: 0\nflags\t\t: fpu sse sse2 hypervisor\n"),
    "io-scheduler": ("sys/block/vda/queue/scheduler", "mq-deadline [bfq] none\n"),
    "cpu-governor": ("sys/devices/system/cpu/cpu0/cpufreq/scaling_governor", "powersave\n"),
    "cpu-boost": ("sys/devices/system/cpu/cpufreq/boost", "0\n"),
    "transparent-hugepages": ("sys/kernel/mm/transparent_hugepage/enabled",
                              "always madvise [never]\n"),
    "guest-clocksource": ("sys/devices/system/clocksource/clocksource0/current_clocksource",
                          "acpi_pm\n"),
    "guest-nic-model": ("sys/class/net/eth0/device/uevent",
                        "DRIVER=e1000\nPCI_CLASS=20000\nPCI_ID=8086:100E\n"),
}


def _tree(root: Path, files: dict[str, str]) -> SystemView:
    for relative, text in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return SystemView(root)


def test_the_cases_cover_every_rule() -> None:
    assert set(CASES) == {rule.id for rule in SYSTEM_RULES}


def test_a_well_configured_guest_only_confirms_its_flags(tmp_path: Path) -> None:
    found = run_rules(SYSTEM_RULES, _tree(tmp_path, GOOD))
    assert [(f.rule, f.severity) for f in found] == [("cpu-flags-present", "info")]


@pytest.mark.parametrize("rule", sorted(CASES))
def test_each_misconfiguration_fires_its_rule(tmp_path: Path, rule: str) -> None:
    relative, text = CASES[rule]
    found = run_rules(SYSTEM_RULES, _tree(tmp_path, {**GOOD, relative: text}))
    rules = [f.rule for f in found if f.rule != "cpu-flags-present"]
    assert rules == [rule]
    finding = next(f for f in found if f.rule == rule)
    assert finding.evidence and finding.changes and finding.cost and finding.source
    assert all(not e.source.startswith(str(tmp_path)) for e in finding.evidence)


def test_missing_flags_are_named_and_sse42_aes_make_it_high(tmp_path: Path) -> None:
    found = run_rules(SYSTEM_RULES, _tree(tmp_path, {**GOOD, **dict([CASES["cpu-flags"]])}))
    flags = next(f for f in found if f.rule == "cpu-flags")
    assert flags.severity == "high"
    assert {"aes", "sse4.2", "ssse3"} <= set(flags.extra["missing"])
    assert "virtbench kvm tune DOMAIN --require" in flags.changes[0].text


def test_a_host_clocksource_is_not_judged(tmp_path: Path) -> None:
    host_flags = GOOD["proc/cpuinfo"].replace(" hypervisor", "")
    files = {**GOOD, "proc/cpuinfo": host_flags, CASES["guest-clocksource"][0]: "hpet\n"}
    assert all(f.rule != "guest-clocksource" for f in run_rules(SYSTEM_RULES, _tree(tmp_path,
                                                                                  files)))


def test_an_empty_tree_finds_nothing(tmp_path: Path) -> None:
    assert run_rules(SYSTEM_RULES, SystemView(tmp_path)) == []


def test_this_machine() -> None:
    found = run_rules(SYSTEM_RULES, SystemView(Path("/")))
    cpuinfo = Path("/proc/cpuinfo").read_text()
    flags = {f.rule for f in found}
    if all(f" {flag}" in cpuinfo for flag in ("ssse3", "sse4_2", "aes", "avx2", "sha_ni", "vaes",
                                              "pclmulqdq", "popcnt", "avx ", "sse4_1")):
        assert "cpu-flags-present" in flags
    else:
        assert "cpu-flags" in flags
    for finding in found:
        assert finding.source and finding.changes


def test_a_tree_fetched_through_a_target_judges_like_the_machine_itself(tmp_path: Path) -> None:
    from virtbench.assess.remote_tree import fetch_system_tree
    from virtbench.targets.local import LocalTarget

    fetched = fetch_system_tree(LocalTarget(), tmp_path)
    assert (tmp_path / "proc" / "cpuinfo").exists()
    direct = run_rules(SYSTEM_RULES, SystemView(Path("/")))
    via_target = run_rules(SYSTEM_RULES, fetched)
    assert [(f.rule, f.evidence) for f in via_target] == [(f.rule, f.evidence) for f in direct]


def test_an_e1000_on_a_host_is_real_hardware_not_an_emulated_nic(tmp_path: Path) -> None:
    host_cpu = GOOD["proc/cpuinfo"].replace(" hypervisor", "")
    view = _tree(tmp_path, {**GOOD, "proc/cpuinfo": host_cpu,
                            "sys/class/net/eth0/device/uevent": "DRIVER=e1000\n"})
    assert "guest-nic-model" not in [f.rule for f in run_rules(SYSTEM_RULES, view)]
