"""Every domain rule, positive and negative, on domains defined in libvirt's test driver.

GOOD is a domain configured the way the rules recommend; each case swaps one piece of it for
a misconfiguration. The rule must fire on that domain and on no other rule's case, and no rule
may fire on GOOD.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

libvirt = pytest.importorskip("libvirt")

from virtbench.assess.domain_rules import DOMAIN_RULES  # noqa: E402
from virtbench.assess.domain_view import read_domain_view  # noqa: E402
from virtbench.assess.rules import run_rules  # noqa: E402

URI = "test:///default"

GOOD = """<domain type='test'>
  <name>NAME</name>
  <memory unit='MiB'>1024</memory>
  <memoryBacking><hugepages/></memoryBacking>
  <vcpu placement='static'>2</vcpu>
  <cputune><vcpupin vcpu='0' cpuset='0'/><vcpupin vcpu='1' cpuset='1'/></cputune>
  <numatune><memory mode='strict' nodeset='0'/></numatune>
  <os><type arch='x86_64'>hvm</type></os>
  <cpu mode='host-passthrough'/>
  <clock offset='utc'>
    <timer name='kvmclock' present='yes'/><timer name='hpet' present='no'/>
  </clock>
  <devices>
    <disk type='file' device='disk'>
      <driver name='qemu' type='raw' cache='none' io='native'/>
      <source file='/guest/disk.img'/>
      <target dev='vda' bus='virtio'/>
    </disk>
    <interface type='network'>
      <mac address='52:54:00:00:00:01'/>
      <source network='default'/>
      <model type='virtio'/>
      <driver name='vhost' queues='2'/>
    </interface>
    <memballoon model='none'/>
  </devices>
</domain>
"""

# rule -> (text in GOOD, its misconfigured replacement)
CASES: dict[str, tuple[str, str]] = {
    "cpu-flags": ("<cpu mode='host-passthrough'/>",
                  "<cpu mode='custom' match='exact'><model fallback='allow'>qemu64</model></cpu>"),
    "disk-bus": ("<target dev='vda' bus='virtio'/>", "<target dev='hda' bus='ide'/>"),
    "disk-cache": ("cache='none' io='native'", "cache='writethrough' io='threads'"),
    "disk-io": ("cache='none' io='native'", "cache='none' io='threads'"),
    "nic-model": ("<model type='virtio'/>\n      <driver name='vhost' queues='2'/>",
                  "<model type='rtl8139'/>"),
    "nic-multiqueue": ("<driver name='vhost' queues='2'/>", "<driver name='vhost'/>"),
    "vcpu-pinning": ("<cputune><vcpupin vcpu='0' cpuset='0'/><vcpupin vcpu='1' cpuset='1'/>"
                     "</cputune>", ""),
    "numa-placement": ("<numatune><memory mode='strict' nodeset='0'/></numatune>", ""),
    "hugepages": ("<memoryBacking><hugepages/></memoryBacking>", ""),
    "balloon": ("<memballoon model='none'/>", "<memballoon model='virtio'/>"),
    "clock": ("<timer name='kvmclock' present='yes'/><timer name='hpet' present='no'/>",
              "<timer name='kvmclock' present='no'/><timer name='hpet' present='yes'/>"),
}


@pytest.fixture(scope="module")
def conn() -> Iterator[Any]:
    connection = libvirt.open(URI)
    yield connection
    connection.close()


def _define(conn: Any, name: str, xml: str) -> None:
    conn.defineXML(xml.replace("NAME", name))


def test_the_cases_cover_every_rule() -> None:
    assert set(CASES) == {rule.id for rule in DOMAIN_RULES}


def test_no_rule_fires_on_the_good_domain(conn: Any) -> None:
    _define(conn, "good", GOOD)
    view = read_domain_view(conn, "good")[0]
    assert run_rules(DOMAIN_RULES, view) == []


@pytest.mark.parametrize("rule", sorted(CASES))
def test_each_misconfiguration_fires_its_rule_only(conn: Any, rule: str) -> None:
    if rule == "cpu-flags" and "aes" not in Path("/proc/cpuinfo").read_text():
        pytest.skip("the host has no AES-NI to offer")
    old, new = CASES[rule]
    assert old in GOOD
    _define(conn, f"bad-{rule}", GOOD.replace(old, new))
    found = run_rules(DOMAIN_RULES, read_domain_view(conn, f"bad-{rule}")[0])
    assert [f.rule for f in found] == [rule]
    finding = found[0]
    assert finding.evidence and finding.changes and finding.cost and finding.source


def test_io_threads_with_an_iothread_or_a_cached_disk_is_not_a_disk_io_finding(
        conn: Any) -> None:
    threads = GOOD.replace("cache='none' io='native'", "cache='none' io='threads'")
    with_iothread = threads.replace("<vcpu placement", "<iothreads>1</iothreads>\n  <vcpu "
                                    "placement")
    _define(conn, "io-iothread", with_iothread)
    assert run_rules(DOMAIN_RULES, read_domain_view(conn, "io-iothread")[0]) == []
    # writeback cannot take io='native': nothing to recommend on the I/O mode
    _define(conn, "io-writeback", threads.replace("cache='none'", "cache='writeback'"))
    assert run_rules(DOMAIN_RULES, read_domain_view(conn, "io-writeback")[0]) == []


def test_cpu_flags_finding_names_the_missing_flags_and_the_tune_command(conn: Any) -> None:
    if " aes " not in Path("/proc/cpuinfo").read_text():
        pytest.skip("the host has no AES-NI to offer")
    old, new = CASES["cpu-flags"]
    _define(conn, "bad-cpu", GOOD.replace(old, new))
    finding = run_rules(DOMAIN_RULES, read_domain_view(conn, "bad-cpu")[0])[0]
    assert finding.severity == "high"
    assert {"aes", "sse4.2"} <= set(finding.extra["require"])
    assert "sse2" not in finding.extra["require"]  # qemu64 has it
    command = finding.changes[0].text
    assert command.startswith("virtbench kvm tune bad-cpu --require ")
    assert "--connect 'test:///default'" in command


def test_one_vcpu_needs_no_multiqueue(conn: Any) -> None:
    xml = GOOD.replace(*CASES["nic-multiqueue"]).replace(
        "<vcpu placement='static'>2</vcpu>", "<vcpu placement='static'>1</vcpu>").replace(
        "<vcpupin vcpu='1' cpuset='1'/>", "")
    _define(conn, "one-vcpu", xml)
    assert run_rules(DOMAIN_RULES, read_domain_view(conn, "one-vcpu")[0]) == []
