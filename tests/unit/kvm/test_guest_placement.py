"""vCPU/emulator pinning and huge pages, pure: cpusets, refusals, the XML, the verifiers."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest

from virtbench.kvm.guest_placement import (
    HostPlacement,
    cputune_xml,
    format_cpuset,
    hugepage_backed_mib,
    parse_cpuset,
    parse_meminfo_hugepages,
    placement_problems,
    read_live_placement,
    vcpu_pins,
    verify_threads,
)

HOST = HostPlacement(cpus=frozenset({0, 1}), hugepage_kib=2048, hugepages_total=400,
                     hugepages_free=400, hugepage_sizes=(2048, 1048576))


@pytest.mark.parametrize(("text", "cpus"), [
    ("0", {0}), ("0-3", {0, 1, 2, 3}), ("0-3,^2", {0, 1, 3}), (" 1 , 5 ", {1, 5}),
    ("0-7,^2-5", {0, 1, 6, 7})])
def test_cpusets_parse_and_format(text: str, cpus: set[int]) -> None:
    assert parse_cpuset(text) == cpus
    assert parse_cpuset(format_cpuset(cpus)) == cpus
    assert format_cpuset({0, 1, 2, 5}) == "0-2,5"


@pytest.mark.parametrize("text", ["", "a", "1-", "3-1", "^1", "0,,1", "1.5"])
def test_bad_cpusets_refused(text: str) -> None:
    with pytest.raises(ValueError):
        parse_cpuset(text)


def test_vcpu_pins_one_for_all_or_one_each() -> None:
    assert vcpu_pins("", 2) == []
    assert vcpu_pins("0-1", 2) == [frozenset({0, 1})] * 2
    assert vcpu_pins("0/1", 2) == [frozenset({0}), frozenset({1})]
    with pytest.raises(ValueError, match="3 cpusets for 2"):
        vcpu_pins("0/1/0", 2)


def _problems(**knobs: object) -> list[str]:
    base: dict[str, object] = {"vcpus": 2, "memory_mib": 768, "vcpupin": "",
                               "emulatorpin": "", "hugepages": False, "host": HOST}
    return placement_problems(**{**base, **knobs})  # type: ignore[arg-type]


@pytest.mark.parametrize(("knobs", "knob", "why"), [
    ({"vcpupin": "0-2"}, "vcpupin", "CPU 2 is not an online host CPU (online: 0-1)"),
    ({"vcpupin": "x"}, "vcpupin", "not a cpuset"),
    ({"vcpupin": "0/1/1"}, "vcpupin", "3 cpusets for 2"),
    ({"emulatorpin": "4"}, "emulatorpin", "CPU 4 is not an online host CPU"),
    ({"emulatorpin": "0/1"}, "emulatorpin", "not a cpuset"),
    ({"hugepages": True, "host": HostPlacement(cpus=frozenset({0}), hugepage_kib=2048,
                                                hugepage_sizes=(2048,))},
     "hugepages", "HugePages_Total 0"),
    ({"hugepages": True, "host": HostPlacement(cpus=frozenset({0}))}, "hugepages",
     "no huge pages"),
    ({"hugepages": True, "memory_mib": 1024}, "hugepages", "needs 512 free 2048 kB pages"),
    ({"hugepages": True, "host": HostPlacement(
        cpus=frozenset({0}), hugepage_kib=2048, hugepages_total=400, hugepages_free=400,
        hugepage_sizes=(2048,), hugetlbfs=False)}, "hugepages", "no hugetlbfs"),
])
def test_placement_refusals_name_the_knob(knobs: dict[str, object], knob: str,
                                          why: str) -> None:
    problems = _problems(**knobs)
    assert any(p.startswith(f"knob {knob}:") and why in p for p in problems), problems


def test_placement_accepted() -> None:
    assert _problems(vcpupin="0/1", emulatorpin="1", hugepages=True) == []


def test_meminfo_hugepages() -> None:
    text = "MemTotal: 100 kB\nHugePages_Total:     384\nHugePages_Free:      380\n" \
           "HugePages_Rsvd:       57\nHugepagesize:       2048 kB\n"
    assert parse_meminfo_hugepages(text) == (2048, 384, 323)
    assert parse_meminfo_hugepages("MemTotal: 1 kB\n") == (0, 0, 0)


def test_cputune_realised_and_read_back() -> None:
    xml = cputune_xml([frozenset({0}), frozenset({1})], "0-1")
    root = ET.fromstring(f"<domain>{xml}<memoryBacking><hugepages/></memoryBacking></domain>")
    assert read_live_placement(root) == {"vcpupin": "0/1", "emulatorpin": "0-1",
                                         "hugepages": "True"}
    assert cputune_xml([], "") == ""
    assert read_live_placement(ET.fromstring("<domain/>")) == {
        "vcpupin": "", "emulatorpin": "", "hugepages": "False"}


def test_threads_verified() -> None:
    threads = {"main": frozenset({1}), "CPU 0/TCG": frozenset({0}),
               "CPU 1/TCG": frozenset({0, 1}), "worker": frozenset({1})}
    pins = [frozenset({0}), frozenset({1})]
    wrong = verify_threads(threads, pins, "1")
    assert wrong == ["vcpupin: vCPU 1 asked on CPU 1, its thread 'CPU 1/TCG' may run on 0-1"]
    assert verify_threads({**threads, "CPU 1/TCG": frozenset({1})}, pins, "1") == []
    assert any(w.startswith("emulatorpin:") for w in verify_threads(threads, [], "0"))
    assert any("no thread named 'CPU 1/" in w for w in verify_threads(
        {"main": frozenset({0}), "CPU 0/TCG": frozenset({0})}, pins, ""))


SMAPS = """7f0000000000-7f0030000000 rw-s 00000000 00:2f 123 /run/vbhugepages/libvirt/qemu/x
Size:             786432 kB
KernelPageSize:     2048 kB
7f1000000000-7f1000001000 rw-p 00000000 00:00 0
Size:                  4 kB
KernelPageSize:        4 kB
"""


def test_hugepage_backed_memory() -> None:
    assert hugepage_backed_mib(SMAPS, 2048) == 768
    assert hugepage_backed_mib(SMAPS, 1048576) == 0
