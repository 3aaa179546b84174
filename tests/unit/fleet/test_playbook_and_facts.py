"""The playbook lists the experiment's packages; the facts diff names what differs by host."""

from __future__ import annotations

from ruamel.yaml import YAML

from virtbench.fleet.hostcheck import comparability_diff
from virtbench.fleet.playbook import needed_tools, playbook_yaml
from virtbench.spec.loader import parse_experiment

EXPERIMENT = """\
name: pb
lab: {kind: vswitch}
baseline: a
variants: [{name: a, knobs: {switch: linux-bridge}}]
workloads: [{name: net.qos-transfer}, {name: media.x265}]
repetitions: 2
"""


def test_playbook_installs_every_package_and_checks_every_tool() -> None:
    exp = parse_experiment(EXPERIMENT, "pb.yaml")
    (play,) = YAML(typ="safe").load(playbook_yaml(exp))
    install, *checks = play["tasks"]
    argv = install["ansible.builtin.command"]["argv"]
    assert argv[:4] == ["apt-get", "-o", "DPkg::Lock::Timeout=300", "install"]
    assert {"iperf3", "irtt", "ffmpeg", "openvswitch-switch", "iproute2"} <= set(argv)
    binaries = [c["ansible.builtin.command"]["argv"][-1] for c in checks]
    assert binaries == [t.binary for t in needed_tools(exp)]
    assert len(binaries) == len(set(binaries)) and "ovs-vsctl" in binaries
    assert play["hosts"] == "all" and play["become"] is True


def test_comparability_diff_lists_only_differing_facts() -> None:
    base = {"cpu": {"model": "EPYC", "count": 2}, "kernel": "6.1", "tools": {"iperf3": "3.12"}}
    other = {"cpu": {"model": "Xeon", "count": 2}, "kernel": "6.1", "tools": {}}
    diff = comparability_diff({"h1": base, "h2": other})
    assert diff == {"cpu.model": {"h1": "EPYC", "h2": "Xeon"},
                    "tools.iperf3": {"h1": "3.12", "h2": None}}
    assert comparability_diff({"h1": base, "h2": base}) == {}
