"""Editing <cpu> in domain XML: only CPU lines change, libvirt's conventions are kept."""

from __future__ import annotations

import pytest

from virtbench.kvm.domxml import CpuChange, edit_cpu, read_cpu, unified_diff
from virtbench.model import VirtbenchError

DOMAIN = """<domain type='kvm'>
  <name>vm1</name>
  <memory unit='KiB'>4194304</memory>
  <vcpu placement='static'>4</vcpu>
  <cputune>
    <vcpupin vcpu='0' cpuset='1'/>
  </cputune>
  <os>
    <type arch='x86_64' machine='pc-q35-7.2'>hvm</type>
  </os>
  <cpu mode='custom' match='exact' check='full'>
    <model fallback='forbid'>qemu64</model>
    <topology sockets='1' dies='1' cores='4' threads='1'/>
    <feature policy='require' name='x2apic'/>
    <feature policy='require' name='hypervisor'/>
  </cpu>
  <clock offset='utc'/>
  <devices>
    <emulator>/usr/bin/qemu-system-x86_64</emulator>
  </devices>
</domain>
"""


def changed_lines(before: str, after: str) -> list[str]:
    diff = unified_diff(before, after, "vm1").splitlines()
    return [line for line in diff[2:] if line[:1] in "+-"]


def test_require_adds_features_and_touches_nothing_else() -> None:
    after = edit_cpu(DOMAIN, CpuChange(require=("aes", "sse4.2")))
    assert changed_lines(DOMAIN, after) == [
        "+    <feature policy='require' name='aes'/>",
        "+    <feature policy='require' name='sse4.2'/>",
    ]
    cpu = read_cpu(after)
    assert cpu.required() == ["x2apic", "hypervisor", "aes", "sse4.2"]
    assert cpu.check == "full" and cpu.model == "qemu64" and cpu.fallback == "forbid"


def test_disable_overrides_an_existing_require() -> None:
    after = edit_cpu(DOMAIN, CpuChange(disable=("x2apic",)))
    assert changed_lines(DOMAIN, after) == [
        "-    <feature policy='require' name='x2apic'/>",
        "+    <feature policy='disable' name='x2apic'/>",
    ]


def test_mode_change_drops_model_and_old_features_keeps_topology() -> None:
    after = edit_cpu(DOMAIN, CpuChange(mode="host-passthrough"))
    cpu = read_cpu(after)
    assert cpu.mode == "host-passthrough" and cpu.model is None and cpu.features == {}
    assert "<topology sockets='1' dies='1' cores='4' threads='1'/>" in after
    assert "<cputune>" in after and "<vcpupin vcpu='0' cpuset='1'/>" in after


def test_model_change() -> None:
    after = edit_cpu(DOMAIN, CpuChange(model="Nehalem", require=("aes",)))
    assert read_cpu(after).model == "Nehalem"
    assert "-    <model fallback='forbid'>qemu64</model>" in changed_lines(DOMAIN, after)


def test_domain_without_cpu_gets_qemu64_custom() -> None:
    bare = DOMAIN[: DOMAIN.index("  <cpu ")] + DOMAIN[DOMAIN.index("  <clock"):]
    assert read_cpu(bare).mode == "default"
    after = edit_cpu(bare, CpuChange(require=("aes",)))
    cpu = read_cpu(after)
    assert (cpu.mode, cpu.model, cpu.required()) == ("custom", "qemu64", ["aes"])
    # Inserted before <clock>, at the same indentation.
    assert "  </cpu>\n  <clock offset='utc'/>" in after


def test_cputune_is_not_mistaken_for_cpu() -> None:
    after = edit_cpu(DOMAIN, CpuChange(require=("aes",)))
    assert after.count("<cputune>") == 1 and after.count("<cpu ") == 1


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (CpuChange(mode="turbo"), "cpu mode 'turbo'"),
        (CpuChange(mode="host-model", model="Nehalem"), "needs mode 'custom'"),
    ],
)
def test_bad_changes_are_named(change: CpuChange, message: str) -> None:
    with pytest.raises(VirtbenchError, match=message):
        edit_cpu(DOMAIN, change)


def test_not_a_domain() -> None:
    with pytest.raises(VirtbenchError, match="expected a <domain>"):
        edit_cpu("<network/>", CpuChange(require=("aes",)))
