"""Flag names, validation against the host, and cloud equivalents."""

from __future__ import annotations

import pytest
from test_kvm_domxml import DOMAIN

from virtbench.kvm.cloud import cloudstack_properties, nova_conf
from virtbench.kvm.domxml import CpuChange, CpuConfig
from virtbench.kvm.flag_inventory import migration_note, missing_flags
from virtbench.kvm.flags import canonical, linux_name, parse_flag_list
from virtbench.kvm.hostcpu import HostCpu, cpuinfo_flags
from virtbench.kvm.tuning_plan import make_plan, normalise_change
from virtbench.model import VirtbenchError
from virtbench.targets.ssh import remote_argv


def test_spellings() -> None:
    assert canonical("sse4_2") == "sse4.2"
    assert canonical("PCLMULQDQ") == "pclmuldq"
    assert canonical("sha_ni") == "sha-ni"
    assert linux_name("sse4.1") == "sse4_1"
    assert linux_name("pclmuldq") == "pclmulqdq"
    assert linux_name("tsc-deadline") == "tsc_deadline_timer"
    assert parse_flag_list("aes, sse4_2 aes") == ["aes", "sse4.2"]
    assert parse_flag_list(["ssse3", "sse4-1"]) == ["ssse3", "sse4.1"]


def test_cpuinfo_flags_are_libvirt_names() -> None:
    text = "processor\t: 0\nflags\t\t: fpu sse4_1 sse4_2 pclmulqdq aes tsc_deadline_timer\n"
    assert cpuinfo_flags(text) >= {"sse4.1", "sse4.2", "pclmuldq", "aes", "tsc-deadline"}


HOST = HostCpu(uri="test:///x", arch="x86_64", model="EPYC",
               caps_flags=frozenset({"sse2", "ssse3", "sse4.1", "sse4.2", "aes", "avx2"}))


def test_flags_the_host_lacks_are_refused_by_name() -> None:
    with pytest.raises(VirtbenchError, match=r"lacks required flag\(s\): avx512f, sha-ni"):
        make_plan("vm1", DOMAIN, CpuChange(require=("aes", "avx512f", "sha_ni")), HOST, None)


def test_unknown_flag_gets_a_suggestion() -> None:
    with pytest.raises(VirtbenchError, match=r"unknown CPU flag\(s\): sse42x"):
        normalise_change(CpuChange(require=("sse42x",)))


def test_required_and_disabled_at_once() -> None:
    with pytest.raises(VirtbenchError, match="both required and disabled: aes"):
        normalise_change(CpuChange(require=("aes",), disable=("aes",)))


def test_passthrough_refused_when_hypervisor_cannot() -> None:
    host = HostCpu(uri="t", model="x", caps_flags=HOST.caps_flags, virttype="qemu",
                   passthrough_supported=False)
    with pytest.raises(VirtbenchError, match="host-passthrough is not supported"):
        make_plan("vm1", DOMAIN, CpuChange(mode="host-passthrough"), host, None)


def test_plan_and_cloud_equivalents() -> None:
    plan = make_plan("vm1", DOMAIN, CpuChange(require=("aes", "sse4_2"), disable=("avx2",)),
                     HOST, None)
    assert "+    <feature policy='require' name='sse4.2'/>" in plan.diff
    assert plan.cloudstack().splitlines() == [
        "guest.cpu.mode=custom",
        "guest.cpu.model=qemu64",
        "guest.cpu.features=x2apic hypervisor aes sse4.2 -avx2",
    ]
    assert "cpu_model_extra_flags = x2apic, hypervisor, aes, sse4.2, -avx2" in plan.nova()
    assert "cpu_models = qemu64" in plan.nova()


def test_cloud_equivalents_host_passthrough() -> None:
    cpu = CpuConfig(mode="host-passthrough")
    assert cloudstack_properties(cpu) == "guest.cpu.mode=host-passthrough"
    assert nova_conf(cpu) == "[libvirt]\ncpu_mode = host-passthrough"


def test_missing_flags_annotated_first() -> None:
    missing = missing_flags(frozenset({"aes", "zzz", "sse4.2"}), frozenset({"sse2"}))
    assert [m.flag for m in missing] == ["aes", "sse4.2", "zzz"]
    assert "AES" in missing[0].use and missing[1].linux == "sse4_2" and missing[2].use == ""


def test_migration_note_mentions_required_flags() -> None:
    note = migration_note(CpuConfig(mode="custom", model="qemu64", features={"aes": "require"}))
    assert "aes" in note and "refuse" in note


def test_remote_argv_wraps_env_cwd_timeout() -> None:
    assert remote_argv(["python3", "-"], env={"A": "1", "B": None}, cwd="/tmp", timeout=5) == [
        "timeout", "--kill-after=5", "5", "env", "-C", "/tmp", "-u", "B", "--", "A=1",
        "python3", "-",
    ]
    assert remote_argv(["true"]) == ["true"]
